//! What has the keyboard: the editor (with the command popup's row), an
//! extension's panel, or a dialog (question, tool confirmation, sessions,
//! trust), as one [`Modal`]; panels and dialogs turn keys into steps.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::oneshot;
use zot_protocol::ui::QuestionReply;
use zot_protocol::zot::Key;

use crate::worker::{ConfirmRequest, Decision};

/// Exactly one of these has the keyboard.
pub enum Modal {
    /// Nothing modal: the editor has the keys. While it holds `/name` the
    /// command popup takes the arrows, Tab and Enter; `popup` is its selected row.
    Editor { popup: usize },
    /// An extension's panel (one at a time), and the editor's popup row
    /// for when it closes.
    Panel { panel: Panel, popup: usize },
    /// A dialog (one at a time) over what it `covers`, which gets the keys
    /// back when it closes. A dialog covers a panel rather than closing it:
    /// closing would tell the extension, and a tool confirmation cannot wait.
    /// `covers` is never another dialog: a new dialog replaces the old one.
    Dialog { dialog: Dialog, covers: Box<Modal> },
}

impl Default for Modal {
    fn default() -> Self {
        Self::Editor { popup: 0 }
    }
}

impl Modal {
    pub fn dialog(&self) -> Option<&Dialog> {
        match self {
            Self::Dialog { dialog, .. } => Some(dialog),
            _ => None,
        }
    }

    /// The open panel, whether or not a dialog covers it.
    pub fn panel(&self) -> Option<&Panel> {
        match self {
            Self::Panel { panel, .. } => Some(panel),
            Self::Dialog { covers, .. } => covers.panel(),
            Self::Editor { .. } => None,
        }
    }

    pub(crate) fn panel_mut(&mut self) -> Option<&mut Panel> {
        match self {
            Self::Panel { panel, .. } => Some(panel),
            Self::Dialog { covers, .. } => covers.panel_mut(),
            Self::Editor { .. } => None,
        }
    }

    /// The command popup's selected row (kept while something covers the editor).
    pub fn popup_selected(&self) -> usize {
        match self {
            Self::Editor { popup } | Self::Panel { popup, .. } => *popup,
            Self::Dialog { covers, .. } => covers.popup_selected(),
        }
    }

    /// Selects a popup row; only the editor's popup has one.
    pub(crate) fn select_popup(&mut self, row: usize) {
        if let Self::Editor { popup } = self {
            *popup = row;
        }
    }

    /// Opens `dialog` over what has the keyboard. A dialog already open is
    /// replaced: dropped unanswered, its asker hears "dismissed" or "no".
    pub(crate) fn open_dialog(&mut self, dialog: Dialog) {
        let covers = match std::mem::take(self) {
            Self::Dialog { covers, .. } => covers,
            other => Box::new(other),
        };
        *self = Self::Dialog { dialog, covers };
    }

    /// Closes the dialog; what it covered gets the keyboard back.
    pub(crate) fn close_dialog(&mut self) {
        if let Self::Dialog { covers, .. } = self {
            let covered = std::mem::take(covers.as_mut());
            *self = covered;
        }
    }

    /// Opens `panel` in place of the open one (see [`Modal::take_panel`]),
    /// under the dialog if one is open.
    pub(crate) fn put_panel(&mut self, panel: Panel) {
        match self {
            Self::Dialog { covers, .. } => covers.put_panel(panel),
            _ => {
                let popup = self.popup_selected();
                *self = Self::Panel { panel, popup };
            }
        }
    }

    /// Takes the open panel out, wherever it is; the editor gets its place.
    pub(crate) fn take_panel(&mut self) -> Option<Panel> {
        match self {
            Self::Dialog { covers, .. } => covers.take_panel(),
            Self::Panel { popup, .. } => {
                let editor = Self::Editor { popup: *popup };
                match std::mem::replace(self, editor) {
                    Self::Panel { panel, .. } => Some(panel),
                    _ => None,
                }
            }
            Self::Editor { .. } => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub extension: String,
    pub id: String,
    pub title: String,
    pub lines: Vec<String>,
    pub footer: String,
    pub scroll: usize,
}

/// What a key did in a panel.
pub(crate) enum PanelStep {
    Stay,
    Close,
    /// The key belongs to the extension.
    Send(Key, Option<String>),
}

impl Panel {
    pub(crate) fn key(&mut self, key: KeyEvent) -> PanelStep {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let (name, text) = match key.code {
            KeyCode::Esc => return PanelStep::Close,
            KeyCode::Char('c') if ctrl => return PanelStep::Close,
            // Shift+arrows scroll a long panel locally.
            KeyCode::Up if shift => {
                self.scroll = self.scroll.saturating_sub(1);
                return PanelStep::Stay;
            }
            KeyCode::Down if shift => {
                self.scroll += 1;
                return PanelStep::Stay;
            }
            KeyCode::Up => (Key::Up, None),
            KeyCode::Down => (Key::Down, None),
            KeyCode::Left => (Key::Left, None),
            KeyCode::Right => (Key::Right, None),
            KeyCode::Enter => (Key::Enter, None),
            KeyCode::Tab => (Key::Tab, None),
            KeyCode::PageUp => (Key::PageUp, None),
            KeyCode::PageDown => (Key::PageDown, None),
            KeyCode::Home => (Key::Home, None),
            KeyCode::End => (Key::End, None),
            KeyCode::Backspace => (Key::Backspace, None),
            KeyCode::Delete => (Key::Delete, None),
            KeyCode::Char(c) if !ctrl => (Key::Rune, Some(c.to_string())),
            _ => return PanelStep::Stay,
        };
        PanelStep::Send(name, text)
    }
}

pub enum Dialog {
    /// An extension asks the user to pick one of its options.
    Question(Question),
    /// May this tool call run? (`--no-yolo`)
    Confirm(Confirmation),
    /// `/sessions`: an earlier session of this directory to resume.
    Sessions(SessionPicker),
    /// The project ships `extensions` extensions that wait for the user's trust.
    /// `extensions` untrusted project extensions, `unrestricted` of them without a permission scope.
    Trust {
        extensions: usize,
        unrestricted: usize,
    },
}

/// What a key did to a dialog.
pub(crate) enum Step {
    Stay,
    /// Closed, having answered whoever asked.
    Close,
    /// Closed on a session to resume.
    Resume(PathBuf),
    /// Closed on whether the user trusts the project.
    Trust(bool),
}

impl Dialog {
    pub(crate) fn key(&mut self, key: KeyEvent) -> Step {
        match self {
            Self::Question(question) => question.key(key),
            Self::Confirm(confirmation) => confirmation.key(key),
            Self::Sessions(picker) => picker.key(key),
            Self::Trust { .. } => match key.code {
                KeyCode::Char('y' | 'Y') => Step::Trust(true),
                KeyCode::Char('n' | 'N') | KeyCode::Esc => Step::Trust(false),
                _ => Step::Stay,
            },
        }
    }
}

fn ctrl_c(key: KeyEvent) -> bool {
    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
}

pub struct Question {
    pub(crate) extension: String,
    pub(crate) prompt: String,
    pub(crate) options: Vec<String>,
    pub(crate) selected: usize,
    reply: QuestionReply,
}

impl Question {
    pub(crate) fn new(
        extension: String,
        prompt: String,
        options: Vec<String>,
        reply: QuestionReply,
    ) -> Self {
        Self {
            extension,
            prompt,
            options,
            selected: 0,
            reply,
        }
    }

    fn key(&mut self, key: KeyEvent) -> Step {
        let answer = match key.code {
            KeyCode::Up | KeyCode::Left => {
                self.selected = self.selected.saturating_sub(1);
                return Step::Stay;
            }
            KeyCode::Down | KeyCode::Right | KeyCode::Tab => {
                self.selected = (self.selected + 1).min(self.options.len().saturating_sub(1));
                return Step::Stay;
            }
            KeyCode::Enter => self.options.get(self.selected).cloned(),
            KeyCode::Esc => None,
            _ if ctrl_c(key) => None,
            // Digits pick by number ('0' as '1'); one without an option does nothing.
            KeyCode::Char(c) if c.is_ascii_digit() => {
                let index = c.to_digit(10).map_or(0, |d| d as usize).saturating_sub(1);
                match self.options.get(index) {
                    Some(option) => Some(option.clone()),
                    None => return Step::Stay,
                }
            }
            _ => return Step::Stay,
        };
        self.reply.send(answer);
        Step::Close
    }
}

/// One answer to a tool confirmation.
pub(crate) struct Choice {
    pub(crate) decision: Decision,
    /// The key that picks it.
    pub(crate) key: char,
    pub(crate) label: &'static str,
}

/// The confirmation's answers in the order shown: the one list both the
/// keys and the drawing use.
pub(crate) const CHOICES: [Choice; 4] = [
    Choice {
        decision: Decision::Yes,
        key: 'y',
        label: "yes",
    },
    Choice {
        decision: Decision::AlwaysThisTool,
        key: 'a',
        label: "always this tool",
    },
    Choice {
        decision: Decision::Always,
        key: 'A',
        label: "always",
    },
    Choice {
        decision: Decision::No,
        key: 'n',
        label: "no",
    },
];

pub struct Confirmation {
    pub(crate) tool: String,
    pub(crate) preview: String,
    /// An index into [`CHOICES`].
    pub(crate) selected: usize,
    /// Taken by the answer; dropped unanswered, the agent hears "no".
    reply: Option<oneshot::Sender<Decision>>,
}

impl Confirmation {
    pub(crate) fn new(request: ConfirmRequest) -> Self {
        Self {
            tool: request.name,
            preview: request.preview,
            selected: 0,
            reply: Some(request.reply),
        }
    }

    fn key(&mut self, key: KeyEvent) -> Step {
        let decision = match key.code {
            _ if ctrl_c(key) => Decision::No,
            KeyCode::Char(c) => match CHOICES.iter().find(|choice| choice.key == c) {
                Some(choice) => choice.decision,
                None => return Step::Stay,
            },
            KeyCode::Esc => Decision::No,
            KeyCode::Left | KeyCode::Up => {
                self.selected = self.selected.checked_sub(1).unwrap_or(CHOICES.len() - 1);
                return Step::Stay;
            }
            KeyCode::Right | KeyCode::Down | KeyCode::Tab => {
                self.selected = (self.selected + 1) % CHOICES.len();
                return Step::Stay;
            }
            KeyCode::Enter => CHOICES[self.selected.min(CHOICES.len() - 1)].decision,
            _ => return Step::Stay,
        };
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(decision);
        }
        Step::Close
    }
}

pub struct SessionPicker {
    /// Session files, newest first.
    pub(crate) items: Vec<PathBuf>,
    pub(crate) selected: usize,
}

impl SessionPicker {
    pub(crate) fn new(items: Vec<PathBuf>) -> Self {
        Self { items, selected: 0 }
    }

    pub fn items(&self) -> &[PathBuf] {
        &self.items
    }

    fn key(&mut self, key: KeyEvent) -> Step {
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.items.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                return self
                    .items
                    .get(self.selected)
                    .cloned()
                    .map_or(Step::Close, Step::Resume);
            }
            KeyCode::Esc => return Step::Close,
            _ => {}
        }
        Step::Stay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(id: &str) -> Panel {
        Panel {
            extension: "x".into(),
            id: id.into(),
            title: String::new(),
            lines: Vec::new(),
            footer: String::new(),
            scroll: 0,
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn a_dialog_covers_a_panel_and_gives_it_back() {
        let mut modal = Modal::default();
        modal.select_popup(2);
        modal.put_panel(panel("p1"));
        assert_eq!(modal.popup_selected(), 2);
        modal.open_dialog(Dialog::Trust {
            extensions: 1,
            unrestricted: 1,
        });
        modal.open_dialog(Dialog::Sessions(SessionPicker::new(Vec::new())));
        assert!(matches!(modal.dialog(), Some(Dialog::Sessions(_))));
        assert_eq!(modal.panel().map(|p| p.id.as_str()), Some("p1"));

        // A panel replaced under the dialog stays under it.
        assert_eq!(modal.take_panel().map(|p| p.id), Some("p1".to_owned()));
        modal.put_panel(panel("p2"));
        assert!(modal.dialog().is_some());

        modal.close_dialog();
        assert!(matches!(&modal, Modal::Panel { panel, .. } if panel.id == "p2"));
        modal.take_panel();
        assert!(matches!(modal, Modal::Editor { popup: 2 }));
    }

    #[test]
    fn questions_move_their_selection_in_place_and_answer_once() {
        let answers = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = answers.clone();
        let reply = QuestionReply::new(move |a| {
            sink.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(a)
        });
        let options = vec!["a".to_owned(), "b".to_owned()];
        let mut question = Question::new("x".into(), "?".into(), options, reply);
        assert!(matches!(question.key(key(KeyCode::Down)), Step::Stay));
        assert!(matches!(question.key(key(KeyCode::Down)), Step::Stay));
        assert_eq!(question.selected, 1, "stops at the last option");
        assert!(matches!(question.key(key(KeyCode::Char('7'))), Step::Stay));
        assert!(matches!(question.key(key(KeyCode::Enter)), Step::Close));
        let answers = answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        assert_eq!(*answers, [Some("b".to_owned())]);
    }
}
