//! What the chat shows, one entry at a time: a prompt, an answer, a tool
//! call with its result, a note. A leaf: the transcript keeps them and the
//! conversation's history makes them.

use zot_protocol::zot::NotifyLevel;

/// An extension's note and who sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub extension: String,
    pub level: NotifyLevel,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    User(String),
    Assistant(String),
    Tool {
        id: String,
        name: String,
        preview: String,
        result: Option<(bool, String)>,
        expanded: bool,
        /// Output so far while the tool runs (bash), last lines only; a
        /// task's subagent steps.
        live: String,
        /// The spinner's frame while a task's subagent runs.
        frame: usize,
    },
    Error(String),
    Info(String),
    /// An extension's note (`notify`, a command's display), where it happened.
    Note(Note),
    /// Older messages replaced by this summary: one line until expanded.
    Compaction {
        summary: String,
        automatic: bool,
        expanded: bool,
    },
    /// An extension that failed to load: stays until a clean reload or /clear.
    ExtFailure(String),
}

impl Entry {
    /// A tool call that has not finished yet.
    pub fn tool(id: String, name: String, preview: String) -> Self {
        Self::Tool {
            id,
            name,
            preview,
            result: None,
            expanded: false,
            live: String::new(),
            frame: 0,
        }
    }

    pub fn is_assistant(&self) -> bool {
        matches!(self, Self::Assistant(_))
    }

    /// The call `id` of a tool (ids are unique within a conversation).
    pub fn is_tool_call(&self, id: &str) -> bool {
        matches!(self, Self::Tool { id: tid, .. } if tid == id)
    }

    pub fn is_ext_failure(&self) -> bool {
        matches!(self, Self::ExtFailure(_))
    }

    /// A tool call or compaction: Ctrl+O shows it whole.
    pub fn is_expandable(&self) -> bool {
        matches!(self, Self::Tool { .. } | Self::Compaction { .. })
    }

    /// Shows the entry whole, or folded again.
    pub(crate) fn toggle_expanded(&mut self) {
        if let Self::Tool { expanded, .. } | Self::Compaction { expanded, .. } = self {
            *expanded = !*expanded;
        }
    }
}
