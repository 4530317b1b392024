//! Sessions as front ends see them: a summary per session file (`zot
//! sessions list`, RPC `list_sessions`) and a session's tree of entries
//! (RPC `get_tree`, the TUI's `/tree`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One session file, as the index under `$ZOT_HOME/sessions/` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionSummary {
    pub id: String,
    /// The session file.
    pub path: String,
    /// The directory the session ran in.
    pub cwd: String,
    /// The name the user gave it (`/name`), else its first prompt.
    pub title: String,
    /// RFC 3339.
    pub started: String,
    /// The file's last change, RFC 3339.
    pub updated: String,
    pub provider: String,
    pub model: String,
    /// Messages on the current branch.
    pub message_count: usize,
    /// Every call's cost in USD at list prices (0 when unknown).
    pub cost_usd: f64,
}

/// What an entry of the tree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TreeEntryKind {
    /// A message the user wrote: where a fork can start.
    Prompt,
    /// Any other message (assistant, tool results, a hook's instruction).
    Message,
    Compaction,
    ModelChange,
    /// Extension bookkeeping, never sent to the model.
    Extension,
}

/// One entry of a session's tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TreeEntry {
    pub id: String,
    /// `null` for a root.
    pub parent_id: Option<String>,
    pub kind: TreeEntryKind,
    /// A message's role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The start of its text (a message's, a summary's), the model
    /// (`provider/model`) or the extension's name.
    pub text: String,
}
