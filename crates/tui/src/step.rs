//! What a key did to a dialog ([`Step`]) and what picking a prompt does
//! ([`PromptAction`]): plain values that the dialogs return and the app acts
//! on, apart from both so that neither reaches into the other.

use std::path::PathBuf;

use zot_protocol::sessions::SessionSummary;

use crate::bridge::ModelChoice;

/// What picking a prompt does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptAction {
    /// `/tree`: go on from that prompt's answer.
    Tree,
    /// `/fork`: a new branch before that prompt, its text in the editor.
    Fork,
    /// `/jump`: scroll the transcript to it.
    Jump,
    /// `/rewind`: its files and conversation back to before it.
    Rewind,
}

/// What a key did to a dialog.
pub(crate) enum Step {
    Stay,
    /// Closed, having answered whoever asked.
    Close,
    /// Closed on a session to resume.
    Resume(PathBuf),
    /// Closed on a session to delete (confirmed), the picker's scope with it.
    DeleteSession(SessionSummary, bool),
    /// Closed to list the sessions again: every directory's (`true`) or this one's.
    WidenSessions(bool),
    /// Closed on a prompt: what to do, its entry id, its place on the path.
    Prompt(PromptAction, String, usize),
    /// Closed on whether the user trusts the project.
    Trust(bool),
    /// Closed on going back to before a prompt: its code, conversation or both.
    Rewind {
        entry_id: String,
        code: bool,
        conversation: bool,
    },
    /// Closed on a model to switch to (and whether to run the failed turn again).
    PickModel(ModelChoice, bool),
}
