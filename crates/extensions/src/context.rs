//! What adapters may read from the host while they work: its configuration,
//! the session facts handshakes and payloads carry (session id, provider,
//! model, session file, whether tools are confirmed), request ids unique
//! across all extensions, the question clock, and the state an ecosystem's
//! adapters share, one typed slot per kind of state.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::config::HostConfig;

pub struct HostContext {
    pub config: HostConfig,
    facts: Mutex<Facts>,
    next_id: AtomicU64,
    pub questions: QuestionClock,
    /// What the adapters of an ecosystem share in this generation (see
    /// [`slot`](Self::slot)), by type.
    slots: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    /// Runs model calls for extensions (sampling); only the TUI sets one.
    pub sampler: Mutex<Option<std::sync::Arc<dyn crate::sampling::Sampler>>>,
}

/// Session facts that change while the host runs.
#[derive(Debug, Clone)]
pub struct Facts {
    pub session_id: String,
    pub provider: String,
    pub model: String,
    /// The file the conversation is written to, if any.
    pub transcript: Option<PathBuf>,
    /// Tool calls are confirmed by the user rather than run without asking.
    pub confirms: bool,
}

impl HostContext {
    pub fn new(config: HostConfig) -> Self {
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
            slots: Mutex::new(HashMap::new()),
            sampler: Mutex::new(None),
        }
    }

    pub fn facts(&self) -> MutexGuard<'_, Facts> {
        self.facts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The sampler the binary set, if any.
    pub fn sampler(&self) -> Option<std::sync::Arc<dyn crate::sampling::Sampler>> {
        self.sampler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The `T` every adapter of this host's generation shares (made on first
    /// use): how an ecosystem's extensions see each other.
    pub fn slot<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let held = slots
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()));
        match Arc::clone(held).downcast::<T>() {
            Ok(slot) => slot,
            // Keyed by its own type id, so never another type.
            Err(_) => {
                let slot = Arc::new(T::default());
                *held = Arc::clone(&slot) as Arc<dyn Any + Send + Sync>;
                slot
            }
        }
    }

    /// A request id unique across every extension of this host.
    pub fn next_id(&self) -> String {
        self.next_id.fetch_add(1, Ordering::Relaxed).to_string()
    }

    /// The user's project directory, absolute.
    pub fn cwd(&self) -> PathBuf {
        std::path::absolute(&self.config.cwd).unwrap_or_else(|_| self.config.cwd.clone())
    }
}

/// Questions in flight: while any is pending, reply timeouts that exclude
/// the user's thinking time are suspended, and each answer restarts their
/// window (for protocols whose timeouts exclude the user's thinking time).
#[derive(Debug)]
pub struct QuestionClock {
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

    pub fn begin(&self) {
        self.pending.fetch_add(1, Ordering::SeqCst);
    }

    pub fn end(&self) {
        *self
            .last_answer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }

    /// When a request that started at `start` with `timeout` expires; `None` while a question is pending.
    pub fn deadline(&self, start: Instant, timeout: Duration) -> Option<Instant> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Seen(Mutex<Vec<&'static str>>);

    #[test]
    fn a_slot_is_one_value_per_type_for_the_whole_generation() {
        let cx = HostContext::new(HostConfig::new("/home", "/project"));
        cx.slot::<Seen>()
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push("first");
        let again = cx.slot::<Seen>();
        assert_eq!(*again.0.lock().unwrap(), ["first"]);
        assert!(Arc::ptr_eq(&again, &cx.slot::<Seen>()));
        // Another generation (a reload's new context) starts empty.
        let next = HostContext::new(HostConfig::new("/home", "/project"));
        assert!(next.slot::<Seen>().0.lock().unwrap().is_empty());
        // Another type is another slot.
        assert_eq!(*cx.slot::<u32>(), 0);
    }
}
