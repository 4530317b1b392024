//! What the TUI needs from the extension host, as a trait the binary
//! implements (the TUI does not depend on the host crate), and the host
//! updates it renders.

use std::sync::{Arc, Mutex};

use zot_core::tool::BoxFuture;
use zot_protocol::zot::{Key, NotifyLevel, PanelContent, PanelRender};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandEntry {
    pub name: String,
    pub description: Option<String>,
    pub extension: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CommandOutcome {
    Prompt(String),
    Insert(String),
    Display(String),
    OpenPanel(PanelContent),
    Noop,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CommandReply {
    pub extension: String,
    pub command: String,
    pub outcome: CommandOutcome,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadSummary {
    pub stopped: usize,
    pub loaded: usize,
    pub ready: usize,
    /// Each load error, with the extension, the reason and the log path.
    pub errors: Vec<String>,
}

pub trait Extensions: Send + Sync {
    /// Extension commands (winners only).
    fn commands(&self) -> Vec<CommandEntry>;
    fn invoke<'a>(
        &'a self,
        name: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<CommandReply, String>>;
    fn panel_key(&self, extension: &str, panel_id: &str, key: Key, text: Option<String>);
    fn panel_close(&self, extension: &str, panel_id: &str);
    fn reload(&self) -> BoxFuture<'_, ReloadSummary>;
    /// Saves trust for the project (the caller reloads afterwards).
    fn trust_project(&self) -> Result<(), String>;
}

/// Something an extension did that the TUI shows.
#[derive(Debug, Clone, PartialEq)]
pub enum HostUpdate {
    Notify {
        extension: String,
        level: NotifyLevel,
        message: String,
    },
    ClearNotes {
        extension: String,
    },
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
    Warning {
        extension: String,
        message: String,
    },
    /// The set of extension commands changed (late registration, exit).
    CommandsChanged,
    /// Footer text keyed `<extension>:<key>`; empty text removes it.
    Status {
        key: String,
        text: String,
    },
    /// Lines above the footer keyed `<extension>:<key>`; no lines removes it.
    Widget {
        key: String,
        lines: Vec<String>,
    },
    /// A multiple-choice question from an extension.
    Question {
        extension: String,
        prompt: String,
        options: Vec<String>,
        answer: Answer,
    },
}

/// Where a question's answer goes: `Some(option)`, or `None` when dismissed.
#[derive(Clone)]
pub struct Answer(Arc<Mutex<Option<Respond>>>);

/// Delivers an answer once.
type Respond = Box<dyn FnOnce(Option<String>) + Send>;

impl Answer {
    pub fn new(f: impl FnOnce(Option<String>) + Send + 'static) -> Self {
        Self(Arc::new(Mutex::new(Some(Box::new(f)))))
    }

    /// Answers once; later calls do nothing.
    pub fn send(&self, answer: Option<String>) {
        let f = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(f) = f {
            f(answer);
        }
    }
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Answer")
    }
}

impl PartialEq for Answer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// No extensions at all (tests, `--no-ext` with nothing to load).
pub struct NoExtensions;

impl Extensions for NoExtensions {
    fn commands(&self) -> Vec<CommandEntry> {
        Vec::new()
    }
    fn invoke<'a>(
        &'a self,
        name: &'a str,
        _args: &'a str,
    ) -> BoxFuture<'a, Result<CommandReply, String>> {
        Box::pin(async move { Err(format!("unknown command /{name}")) })
    }
    fn panel_key(&self, _: &str, _: &str, _: Key, _: Option<String>) {}
    fn panel_close(&self, _: &str, _: &str) {}
    fn reload(&self) -> BoxFuture<'_, ReloadSummary> {
        Box::pin(async { ReloadSummary::default() })
    }
    fn trust_project(&self) -> Result<(), String> {
        Ok(())
    }
}
