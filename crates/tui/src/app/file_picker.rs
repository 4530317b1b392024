//! The app's side of the `@` file picker: its keys go first while it is
//! open, and a picked path replaces the `@word` in the editor.

use crossterm::event::{KeyCode, KeyEvent};

use super::App;
use crate::file_picker::{FilePicker, FileStep};
use crate::modal::Modal;

impl App {
    /// The picker's keys: true when the key was the picker's alone.
    pub(super) fn file_key(&mut self, key: KeyEvent) -> bool {
        match self.files.key(key) {
            FileStep::NotMine => false,
            FileStep::Used => true,
            FileStep::Insert { at, text } => {
                self.editor.replace_before_cursor(at, &text);
                self.files.sync(&self.editor);
                true
            }
        }
    }

    /// After the editor took `key`: the picker opens or closes with the
    /// `@word` at the cursor, except that a history entry brought back by
    /// Up or Down does not open it (the arrows would stop browsing).
    pub(super) fn follow_editor(&mut self, key: KeyEvent) {
        let browsing = matches!(key.code, KeyCode::Up | KeyCode::Down);
        if !browsing || self.files.is_open() {
            self.files.sync(&self.editor);
        }
    }

    /// The file picker, while it is open over the editor.
    pub fn file_picker(&self) -> Option<&FilePicker> {
        let editing = matches!(self.modal, Modal::Editor { .. });
        (editing && self.files.is_open()).then_some(&self.files)
    }
}
