//! A checkpoint as the session file keeps it. A leaf, so the session store
//! can hold records without importing the checkpoint store that makes them.

use serde::{Deserialize, Serialize};
use zot_protocol::checkpoints::FileChange;

/// A checkpoint as the session file keeps it: the snapshots (commits of
/// zot's repository) before and after a prompt, or around a rewind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The prompt's entry (for a rewind: the prompt rewound to).
    pub entry_id: String,
    pub before: String,
    pub after: String,
    pub files: Vec<FileChange>,
    /// Files that changed but were over the size limit: named, not kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrestorable: Vec<String>,
    /// The sha256 of each of those still present after the prompt: what
    /// the checkpoint knows of their content.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub hashes: std::collections::BTreeMap<String, String>,
    /// Written by a rewind, not by a prompt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rewind: bool,
}
