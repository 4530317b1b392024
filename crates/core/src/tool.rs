//! What a tool is to the agent: a spec the model sees and an async call.
//! Tool failures are values (`is_error`) the model sees, never errors that
//! end the turn.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::message::Block;

/// How long a bash command runs when the call names no timeout: a command
/// that never ends (a server, a prompt waiting for input that never comes)
/// must not hold the turn forever. The user changes it with the
/// `bash_timeout` setting. Here with the context that carries it, below the
/// tools.
pub const BASH_DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10 * 60);

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Each tool's name, description and schema as a request offered them,
/// for telling whether a later request offers the same (its prompt prefix,
/// its tools' JSON). The schemas are the tools' own, shared, so an
/// unchanged one compares by its pointer.
#[derive(Debug, Default)]
pub(crate) struct ToolsSeen(Vec<(String, String, Arc<Value>)>);

impl ToolsSeen {
    pub(crate) fn of(tools: &[ToolSpec]) -> Self {
        Self(
            tools
                .iter()
                .map(|t| (t.name.clone(), t.description.clone(), Arc::clone(&t.schema)))
                .collect(),
        )
    }

    /// Whether `tools` would be written as the same JSON text.
    pub(crate) fn matches(&self, tools: &[ToolSpec]) -> bool {
        self.0.len() == tools.len()
            && self
                .0
                .iter()
                .zip(tools)
                .all(|((name, description, schema), tool)| {
                    *name == tool.name
                        && *description == tool.description
                        && (Arc::ptr_eq(schema, &tool.schema) || same_json(schema, &tool.schema))
                })
    }
}

/// Whether two values are the same JSON text: equal with their objects'
/// keys in the same order (`Value`'s own `==` ignores the order, which a
/// request's bytes do not).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_json(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b))
        }
        _ => a == b,
    }
}

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub schema: Arc<Value>,
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
    pub progress: Option<Progress>,
    /// Where full outputs too long for the model are saved (this session's
    /// folder under `$ZOT_HOME/tool-output`); `None` saves none.
    pub output_dir: Option<PathBuf>,
    /// How the bash tool confines its commands.
    pub sandbox: zot_sandbox::BashSandbox,
    /// How long a bash command runs when its call names no timeout.
    pub bash_timeout: std::time::Duration,
    /// The agent's event stream, for a tool whose result is also state the
    /// front ends show (`todo_write`'s plan); `None` outside an agent.
    pub events: Option<tokio::sync::mpsc::UnboundedSender<crate::event::AgentEvent>>,
}

impl ToolContext {
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            cancel: CancellationToken::new(),
            progress: None,
            output_dir: None,
            sandbox: zot_sandbox::BashSandbox::default(),
            bash_timeout: BASH_DEFAULT_TIMEOUT,
            events: None,
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

    /// Sends `event` to the front ends (when there is an agent to carry it).
    pub fn emit(&self, event: crate::event::AgentEvent) {
        if let Some(events) = &self.events {
            let _ = events.send(event);
        }
    }

    pub fn report(&self, text: &str) {
        if let Some(progress) = &self.progress {
            progress.send(text);
        }
    }
}

/// Most progress text waiting for its reader. When the reader falls behind
/// (a front end printing slower than a command writes), newer text pushes
/// out older and the reader is told how many bytes it missed.
pub const PROGRESS_BUFFER_BYTES: usize = 64 * 1024;

/// A bounded, coalescing channel for a tool's progress text: the sending
/// side never waits and never holds more than about two
/// [`PROGRESS_BUFFER_BYTES`]; the reader gets all text sent since its last
/// read (its newest [`PROGRESS_BUFFER_BYTES`]) in one [`ProgressChunk`].
pub fn progress_channel() -> (Progress, ProgressReader) {
    let shared = Arc::new(ProgressShared {
        pending: Mutex::new(Pending::default()),
        senders: AtomicUsize::new(1),
        notify: Notify::new(),
    });
    (
        Progress {
            shared: Arc::clone(&shared),
        },
        ProgressReader { shared },
    )
}

/// The sending side of [`progress_channel`]; clones send to the same reader.
#[derive(Debug)]
pub struct Progress {
    shared: Arc<ProgressShared>,
}

/// The reading side of [`progress_channel`].
#[derive(Debug)]
pub struct ProgressReader {
    shared: Arc<ProgressShared>,
}

/// Text read from a [`ProgressReader`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProgressChunk {
    pub text: String,
    /// Bytes sent before `text` (since the previous read) that were dropped
    /// because the reader was behind.
    pub dropped_bytes: u64,
}

#[derive(Debug)]
struct ProgressShared {
    pending: Mutex<Pending>,
    /// Live senders; the reader ends when none is left.
    senders: AtomicUsize,
    notify: Notify,
}

#[derive(Debug, Default)]
struct Pending {
    text: String,
    dropped: u64,
}

impl Pending {
    /// Drops the oldest text so at most `keep` bytes are left (cut at a
    /// char boundary, so a little less may be).
    fn keep_last(&mut self, keep: usize) {
        if self.text.len() <= keep {
            return;
        }
        let mut cut = self.text.len() - keep;
        while !self.text.is_char_boundary(cut) {
            cut += 1;
        }
        self.text.drain(..cut);
        self.dropped += cut as u64;
    }
}

impl Progress {
    /// Queues `text` for the reader; never waits.
    pub fn send(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        {
            let mut pending = self
                .shared
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            pending.text.push_str(text);
            // Trimming only at twice the bound keeps the copying amortised.
            if pending.text.len() > 2 * PROGRESS_BUFFER_BYTES {
                pending.keep_last(PROGRESS_BUFFER_BYTES);
            }
        }
        self.shared.notify.notify_one();
    }
}

impl Clone for Progress {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::SeqCst);
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.shared.senders.fetch_sub(1, Ordering::SeqCst);
        self.shared.notify.notify_one();
    }
}

impl ProgressReader {
    /// Everything sent since the last read (its newest
    /// [`PROGRESS_BUFFER_BYTES`]), waiting until there is some; `None` once
    /// every sender is gone and nothing is left.
    pub async fn recv(&mut self) -> Option<ProgressChunk> {
        loop {
            if let Some(chunk) = self.try_recv() {
                return Some(chunk);
            }
            if self.shared.senders.load(Ordering::SeqCst) == 0 {
                // A send just before the last drop is still there.
                return self.try_recv();
            }
            self.shared.notify.notified().await;
        }
    }

    /// What is there now, without waiting.
    pub fn try_recv(&mut self) -> Option<ProgressChunk> {
        let mut pending = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if pending.text.is_empty() {
            return None;
        }
        pending.keep_last(PROGRESS_BUFFER_BYTES);
        let chunk = ProgressChunk {
            text: std::mem::take(&mut pending.text),
            dropped_bytes: std::mem::take(&mut pending.dropped),
        };
        Some(chunk)
    }

    /// Resolves once every sender is gone (text may still be waiting).
    pub async fn closed(&self) {
        while self.shared.senders.load(Ordering::SeqCst) > 0 {
            self.shared.notify.notified().await;
        }
    }
}

/// A tool the agent can run.
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput>;

    /// Whether [`Tool::call`] checks every rule of [`Tool::spec`]'s schema
    /// itself, answering a clear error for arguments the schema refuses. The
    /// agent then skips the JSON Schema validator for this tool: the first
    /// validator compiled builds jsonschema's draft 2020-12 meta-schema
    /// (about 3.4 MiB kept for the life of the process, the performance
    /// issue), which a run of built-in tools alone never needs. By default
    /// the arguments are checked against the schema before the call.
    fn checks_own_arguments(&self) -> bool {
        false
    }

    /// Whether a call reaches the network (`web_fetch`). A built-in tool
    /// that is read-only and local is never asked for under `--no-yolo`;
    /// one that reaches the network is, and is refused where nobody can be
    /// asked.
    fn reaches_network(&self) -> bool {
        false
    }

    /// What the user reads when asked to approve a call (`--no-yolo`): the
    /// change it would make, as a unified diff, or all of what it would
    /// run. `None` shows the arguments' one-line preview. It may read files
    /// (the agent runs it off the async threads) and never changes any.
    fn approval_preview(&self, _args: &Value, _cwd: &std::path::Path) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(description: &str, schema: Arc<Value>) -> ToolSpec {
        ToolSpec {
            name: "read".into(),
            description: description.into(),
            schema,
            read_only: true,
        }
    }

    /// What the prompt prefix and the tools' JSON both rely on: the same
    /// tools match whether their schema is shared or an equal copy, and a
    /// schema whose keys come in another order does not (its text differs).
    #[test]
    fn tools_match_by_their_text_not_by_value_equality() {
        let schema: Arc<Value> = json!({"type": "object", "properties": {"path": {}}}).into();
        let seen = ToolsSeen::of(&[spec("Read.", Arc::clone(&schema))]);
        assert!(seen.matches(&[spec("Read.", Arc::clone(&schema))]));
        assert!(seen.matches(&[spec("Read.", Arc::new((*schema).clone()))]));
        let reordered: Arc<Value> = json!({"properties": {"path": {}}, "type": "object"}).into();
        assert_eq!(reordered, schema);
        assert!(!seen.matches(&[spec("Read.", reordered)]));
        assert!(!seen.matches(&[spec("Read a file.", Arc::clone(&schema))]));
        assert!(!seen.matches(&[]));
    }
}
