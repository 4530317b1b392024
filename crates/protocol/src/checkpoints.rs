//! Checkpoints as the front ends see them: the files a prompt changed, one
//! entry per prompt for RPC `get_checkpoints`, and what a rewind did.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a prompt (or a rewind) changed one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Created,
    Modified,
    Deleted,
}

/// One file and how it changed; `path` is relative to the project, with `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChange {
    pub path: String,
    pub change: Change,
}

/// A prompt of the current branch and the files it changed (none when it
/// changed nothing, or before checkpoints were kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptCheckpoint {
    /// The prompt's entry, as `get_tree` names it.
    pub entry_id: String,
    pub text: String,
    pub files: Vec<FileChange>,
    /// Files it changed that were over the size limit: named, not kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrestorable: Vec<String>,
}
