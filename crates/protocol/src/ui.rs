//! Types shared by the extension host and the front ends (TUI, print, JSON,
//! RPC): what extensions make the user see, the built-in command list, and
//! command and reload outcomes. Protocol-neutral: every adapter produces
//! these, and no front end needs to know which protocol an extension speaks.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::zot::{NotifyLevel, PanelContent, PanelRender};

/// Slash commands built into the front ends, with what they do. An extension
/// command of the same name (case-insensitively) is shadowed.
pub const BUILTIN_COMMANDS: &[(&str, &str)] = &[
    ("help", "show commands and keys"),
    ("model", "show or switch the model: /model <id>"),
    ("clear", "start a fresh conversation"),
    ("compact", "summarise older messages to free context"),
    ("sessions", "resume an earlier session of this directory"),
    ("skills", "list the skills the agent can load"),
    ("reload-ext", "restart every extension"),
    ("yolo", "stop asking before tool calls"),
    ("plan", "plan mode: only read-only tools"),
    ("act", "act mode: every tool"),
    ("exit", "quit zot"),
];

/// Whether `name` (without `/`) is a built-in command, case-insensitively.
pub fn is_builtin_command(name: &str) -> bool {
    BUILTIN_COMMANDS
        .iter()
        .any(|(b, _)| b.eq_ignore_ascii_case(name))
}

/// Something an extension did that the user should see, or a change in
/// what the host offers. Attributed to the extension where there is one.
#[derive(Debug, Clone, PartialEq)]
pub enum HostEvent {
    Notify {
        extension: String,
        level: NotifyLevel,
        message: String,
    },
    ClearNotes {
        extension: String,
    },
    /// Text to submit as a user prompt (empty text never gets here).
    Submit {
        extension: String,
        text: String,
    },
    PanelRender {
        extension: String,
        panel: PanelRender,
    },
    PanelClose {
        extension: String,
        panel_id: String,
    },
    /// The set of model-visible tools changed (late registration, activation, exit, reload).
    ToolsChanged,
    /// The set of extension commands changed.
    CommandsChanged,
    /// Something went wrong that the user should see (intercept timeouts, bad replies…).
    Warning {
        extension: String,
        message: String,
    },
    /// An extension went away on its own.
    Exited {
        extension: String,
        reason: String,
    },
    /// Footer text, keyed `<extension>:<key>`; empty text removes it.
    Status {
        extension: String,
        key: String,
        text: String,
    },
    /// Lines above the footer, keyed `<extension>:<key>`; no lines removes it.
    Widget {
        extension: String,
        key: String,
        lines: Vec<String>,
    },
    /// Durable session data: stored in the session, never sent to the model.
    Entry {
        extension: String,
        data: Value,
    },
    /// A multiple-choice question. Answer through `reply`; dropping every
    /// copy unanswered means "cancelled".
    Question {
        extension: String,
        prompt: String,
        options: Vec<String>,
        reply: QuestionReply,
    },
}

/// Delivers an answer once.
type Respond = Box<dyn FnOnce(Option<String>) + Send>;

/// Holds the answer's way back; dropped unanswered, it answers `None`.
struct Responder(Option<Respond>);

impl Drop for Responder {
    fn drop(&mut self) {
        if let Some(respond) = self.0.take() {
            respond(None);
        }
    }
}

/// The way back for a question's answer: `Some(option)`, or `None` when
/// dismissed. Answering twice, or from a second copy, does nothing; when
/// every copy is dropped unanswered, the question counts as dismissed.
#[derive(Clone)]
pub struct QuestionReply(Arc<Mutex<Responder>>);

impl QuestionReply {
    pub fn new(respond: impl FnOnce(Option<String>) + Send + 'static) -> Self {
        Self(Arc::new(Mutex::new(Responder(Some(Box::new(respond))))))
    }

    /// Answers with one of the options.
    pub fn answer(&self, answer: impl Into<String>) {
        self.send(Some(answer.into()));
    }

    /// Dismisses the question (no front end to ask, or the user declined).
    pub fn cancel(&self) {
        self.send(None);
    }

    pub fn send(&self, answer: Option<String>) {
        let respond = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .take();
        if let Some(respond) = respond {
            respond(answer);
        }
    }
}

impl std::fmt::Debug for QuestionReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuestionReply")
    }
}

impl PartialEq for QuestionReply {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// An extension slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// The spelling the extension registered.
    pub name: String,
    pub description: Option<String>,
    pub extension: String,
}

/// What an extension command asks the front end to do.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandOutcome {
    /// Submit as a user prompt (queued if a turn is running).
    Prompt(String),
    /// Insert into the editor at the cursor.
    Insert(String),
    /// A one-shot note: not in the transcript, never sent to the model.
    Display(String),
    OpenPanel(PanelContent),
    Noop,
}

/// An extension's answer to a slash command.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandReply {
    pub extension: String,
    /// The command's registered spelling.
    pub command: String,
    pub outcome: CommandOutcome,
    /// When set, shown as an error line whatever the outcome.
    pub error: Option<String>,
}

/// What a reload did, as the front ends report it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadSummary {
    pub stopped: usize,
    pub loaded: usize,
    /// Loaded extensions that sent `ready` or went quiet (auto-ready).
    pub ready: usize,
    /// Each load error, with the extension, the reason and the log path.
    pub errors: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_answered_once() {
        let (tx, rx) = std::sync::mpsc::channel();
        let reply = QuestionReply::new(move |a| tx.send(a).unwrap());
        let copy = reply.clone();
        reply.answer("yes");
        copy.cancel();
        assert_eq!(rx.recv().unwrap(), Some("yes".to_owned()));
        assert!(rx.try_recv().is_err());
        assert_eq!(reply, copy);
    }

    #[test]
    fn a_question_dropped_unanswered_is_dismissed() {
        let (tx, rx) = std::sync::mpsc::channel();
        let reply = QuestionReply::new(move |a| tx.send(a).unwrap());
        let copy = reply.clone();
        drop(reply);
        assert!(rx.try_recv().is_err(), "a copy is still alive");
        drop(copy);
        assert_eq!(rx.recv().unwrap(), None);
    }

    #[test]
    fn builtins_match_case_insensitively() {
        assert!(is_builtin_command("Reload-Ext"));
        assert!(!is_builtin_command("greet"));
    }
}
