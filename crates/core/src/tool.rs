//! What a tool is to the agent: a spec the model sees and an async call.
//! Tool failures are values (`is_error`) the model sees, never errors that
//! end the turn.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::message::Block;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub schema: Value,
    /// Only reads (or talks to the user): offered in plan mode too.
    pub read_only: bool,
}

/// The outcome of one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Text and image blocks.
    pub content: Vec<Block>,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Block::Text { text: text.into() }],
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![Block::Text { text: text.into() }],
            is_error: true,
        }
    }
}

/// What a running tool may use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The project directory: relative paths resolve against it.
    pub cwd: PathBuf,
    /// Cancelled when the user aborts the turn.
    pub cancel: CancellationToken,
    /// Progress text (bash output chunks) for the front ends.
    pub progress: Option<mpsc::UnboundedSender<String>>,
}

impl ToolContext {
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            cancel: CancellationToken::new(),
            progress: None,
        }
    }

    /// `path` resolved against the cwd.
    pub fn resolve(&self, path: &str) -> PathBuf {
        let path = std::path::Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        }
    }

    pub fn report(&self, text: impl Into<String>) {
        if let Some(progress) = &self.progress {
            let _ = progress.send(text.into());
        }
    }
}

/// A tool the agent can run.
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput>;
}
