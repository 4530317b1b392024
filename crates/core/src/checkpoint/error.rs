//! How a checkpoint operation fails. Below every file of the checkpoint
//! store, which all report through it.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{0}")]
    Git(String),
    #[error("refused to restore {0}: it is outside the project")]
    Unsafe(String),
    #[error("no prompt {0} on the current branch")]
    UnknownPrompt(String),
    #[error("this run keeps no checkpoints (no session file)")]
    Off,
    #[error(
        "changed since zot's last checkpoint (edited by you?): {}; rewind again with force to overwrite",
        .0.join(", ")
    )]
    Edited(Vec<String>),
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
}

impl CheckpointError {
    pub(super) fn io(path: &Path, error: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}
