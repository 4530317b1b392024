//! What adapters may read from the host while they work: its configuration,
//! the session facts handshakes and payloads carry (session id, provider,
//! model, session file, whether tools are confirmed), request ids unique across all extensions, and the question clock.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::config::HostConfig;

pub(crate) struct HostContext {
    pub(crate) config: HostConfig,
    facts: Mutex<Facts>,
    next_id: AtomicU64,
    pub(crate) questions: QuestionClock,
    /// MCP servers with resources, for the shared resource tools.
    pub(crate) mcp: crate::mcp::directory::Directory,
    /// Runs model calls for extensions (MCP sampling); only the TUI sets one.
    pub(crate) sampler: Mutex<Option<std::sync::Arc<dyn crate::sampling::Sampler>>>,
}

/// Session facts that change while the host runs.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    pub(crate) session_id: String,
    pub(crate) provider: String,
    pub(crate) model: String,
    /// The file the conversation is written to, if any.
    pub(crate) transcript: Option<PathBuf>,
    /// Tool calls are confirmed by the user rather than run without asking.
    pub(crate) confirms: bool,
}

impl HostContext {
    pub(crate) fn new(config: HostConfig) -> Self {
        let facts = Facts {
            session_id: config.session_id.clone(),
            provider: config.provider.clone(),
            model: config.model.clone(),
            transcript: None,
            confirms: true,
        };
        Self {
            config,
            facts: Mutex::new(facts),
            next_id: AtomicU64::new(1),
            questions: QuestionClock::new(),
            mcp: crate::mcp::directory::Directory::default(),
            sampler: Mutex::new(None),
        }
    }

    pub(crate) fn facts(&self) -> MutexGuard<'_, Facts> {
        self.facts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The sampler the binary set, if any.
    pub(crate) fn sampler(&self) -> Option<std::sync::Arc<dyn crate::sampling::Sampler>> {
        self.sampler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A request id unique across every extension of this host.
    pub(crate) fn next_id(&self) -> String {
        self.next_id.fetch_add(1, Ordering::Relaxed).to_string()
    }

    /// The user's project directory, absolute.
    pub(crate) fn cwd(&self) -> PathBuf {
        std::path::absolute(&self.config.cwd).unwrap_or_else(|_| self.config.cwd.clone())
    }
}

/// Questions in flight: while any is pending, reply timeouts that exclude
/// the user's thinking time are suspended, and each answer restarts their
/// window (for protocols whose timeouts exclude the user's thinking time).
#[derive(Debug)]
pub(crate) struct QuestionClock {
    pending: AtomicUsize,
    last_answer: Mutex<Instant>,
}

impl QuestionClock {
    fn new() -> Self {
        Self {
            pending: AtomicUsize::new(0),
            last_answer: Mutex::new(Instant::now()),
        }
    }

    pub(crate) fn begin(&self) {
        self.pending.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn end(&self) {
        *self
            .last_answer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }

    /// When a request that started at `start` with `timeout` expires; `None` while a question is pending.
    pub(crate) fn deadline(&self, start: Instant, timeout: Duration) -> Option<Instant> {
        if self.pending.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let last = *self
            .last_answer
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Some(start.max(last) + timeout)
    }
}
