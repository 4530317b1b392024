//! The app's side of a conversation shown whole (a resumed session, a
//! rewind, a compaction): the transcript shows it through its history, and
//! tool results find their calls.

use super::App;
use crate::history::{History, result_text};
use crate::transcript::Entry;
use zot_core::message::{Block, Message};

impl App {
    /// Shows `messages` as the transcript. The messages are the caller's
    /// copy, so their text is moved into the entries rather than copied, and
    /// only the newest are made into entries before the next frame: a
    /// resumed session's first frame waits for this over thousands of them.
    pub(super) fn load_transcript(&mut self, messages: Vec<Message>) {
        self.transcript.restart(Entry::is_ext_failure);
        self.transcript.show_history(History::new(messages));
    }

    /// Tool call `id`'s result: its text blocks, images named, joined.
    pub(super) fn tool_result(&mut self, id: &str, is_error: bool, content: Vec<Block>) {
        let text = result_text(content);
        self.transcript.update_last(
            |e| e.is_tool_call(id),
            |e| {
                if let Entry::Tool { result, .. } = e {
                    *result = Some((is_error, text));
                }
            },
        );
    }
}
