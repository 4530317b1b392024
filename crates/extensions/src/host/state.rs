//! The host's shared state (`Inner`, `HostState`) and how adapters reach
//! it (`Bound`, `Attached`); the jobs on it live in the sibling modules.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zot_protocol::ui::HostEvent;

use crate::adapter::{Attachment, Link};
use crate::context::HostContext;
use crate::discovery::Found;
use crate::extension::Extension;
use crate::model::{Effect, Registration};
use crate::participant::Participant;
use crate::registry::{Conflict, Live};

use super::report::{Connectivity, LoadOutcome};

pub(crate) struct Inner {
    pub(crate) cx: Arc<HostContext>,
    pub(super) events: mpsc::UnboundedSender<HostEvent>,
    pub(super) state: Mutex<HostState>,
    /// Serialises start, reload and shutdown.
    pub(super) lifecycle: tokio::sync::Mutex<()>,
    /// Starts as `config.project_trusted`; the user may trust the project later.
    pub(super) project_trusted: AtomicBool,
    /// Plan mode: extensions whose protocol is quiet in plan mode get no hooks.
    pub(super) plan: AtomicBool,
    /// Session entries (a UI effect) not yet taken by the agent for its session file.
    pub(super) entries: Mutex<Vec<(String, Value)>>,
    /// The task that reaps adopted orphans as they exit (see `reaper.rs`).
    pub(super) reaper: Option<tokio::task::AbortHandle>,
    /// What takes part at hook points beside the extensions (command
    /// hooks), of this generation (made again on reload).
    pub(super) participants: Mutex<Vec<Arc<dyn Participant>>>,
    /// Checks a trusted project's pins before each start of its hooks,
    /// extensions and servers.
    pub(super) gate: Arc<crate::trust_gate::TrustGate>,
    /// How many extensions are starting in the background (waiters watch it).
    pub(super) starting_count: tokio::sync::watch::Sender<usize>,
    /// Load-time warnings already given, so a reload does not repeat them.
    pub(super) warned: Warned,
}

/// The load-time warnings (a manifest's, a hooks file's, a name clash)
/// given so far in this run: each distinct one is said once, however often
/// the extensions are reloaded. Warnings about what happens while zot runs
/// (an extension exits, a hook times out) are not kept here: each is news.
#[derive(Clone, Default)]
pub(super) struct Warned(Arc<Mutex<HashSet<(String, String)>>>);

impl Warned {
    /// Whether (`source`, `message`) is new, noting it.
    pub(super) fn first(&self, source: &str, message: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((source.to_owned(), message.to_owned()))
    }
}

#[derive(Default)]
pub(crate) struct HostState {
    /// Discovery results of the current generation, in load order.
    pub(crate) found: Vec<(Found, Option<LoadOutcome>)>,
    /// Handshaken extensions of the current generation, in load order.
    pub(crate) extensions: Vec<Arc<Extension>>,
    pub(crate) conflicts: Vec<Conflict>,
    /// Deferred tools that a tool result activated.
    pub(crate) activated: HashSet<String>,
    /// Remote extensions being reconnected, by load order.
    pub(super) reconnecting: HashMap<usize, Arc<Reconnect>>,
    /// Extensions starting in the background (`adapted_in_background`).
    pub(super) starting: Vec<Starting>,
    /// Extensions the user turned off for this session (`set_enabled`), by
    /// name: stopped, and not started again by a reload.
    pub(super) off: HashSet<String>,
}

/// One extension loading in the background, as the host sees it.
pub(super) struct Starting {
    pub(super) order: usize,
    pub(super) name: String,
    /// When its start-up must be over (its `startup_timeout_sec`, and
    /// [`STARTING_GRACE`]).
    pub(super) deadline: Instant,
    pub(super) cancel: CancellationToken,
    pub(super) task: Option<tokio::task::JoinHandle<()>>,
}

/// Beyond an entry's `Adapted::startup_timeout` (which bounds its
/// handshake), what a background start may take for the spawn before it
/// and the registration after it: local work, well under a second.
pub(super) const STARTING_GRACE: Duration = Duration::from_secs(2);

/// One remote extension's reconnect loop, as the host sees it.
pub(super) struct Reconnect {
    pub(super) cancel: CancellationToken,
    /// The attempt coming next, and when.
    pub(super) next: Mutex<(u32, Instant)>,
}

impl Reconnect {
    pub(super) fn connectivity(&self) -> Connectivity {
        let (attempt, at) = *self.next.lock().unwrap_or_else(PoisonError::into_inner);
        Connectivity::Reconnecting {
            attempt,
            next_in: at.saturating_duration_since(Instant::now()),
        }
    }
}

/// How an adapter reaches the host about one extension.
pub(crate) struct Bound<'a> {
    pub(crate) inner: &'a Inner,
    pub(crate) ext: &'a Extension,
}

impl Link for Bound<'_> {
    fn register(&self, registration: Registration) {
        self.inner.apply(self.ext, registration);
    }

    fn effect(&self, effect: Effect) {
        self.inner.effect(self.ext.name(), effect);
    }

    fn warn(&self, message: String) {
        self.inner.warn(self.ext, message);
    }

    fn fails_closed(&self) -> bool {
        self.ext.on_failure == crate::manifest::OnFailure::Block
    }
}

/// How an adapter reaches the host after its handshake, on its own
/// initiative (not while answering a call): weak, so it keeps neither the
/// host nor the extension alive.
pub(crate) struct Attached {
    pub(super) inner: Weak<Inner>,
    pub(super) ext: Weak<Extension>,
}

impl Attachment for Attached {
    fn with_link(&self, f: &mut dyn FnMut(&dyn Link)) -> bool {
        let Some(inner) = self.inner.upgrade() else {
            return false;
        };
        let Some(ext) = self.ext.upgrade().filter(|e| e.is_alive()) else {
            return false;
        };
        f(&Bound {
            inner: &inner,
            ext: &ext,
        });
        true
    }
}

impl Inner {
    pub(crate) fn state(&self) -> MutexGuard<'_, HostState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The participants of this generation, in order.
    pub(crate) fn participants(&self) -> Vec<Arc<dyn Participant>> {
        self.participants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn live<'a>(&'a self, state: &'a HostState) -> Live<'a> {
        Live {
            extensions: &state.extensions,
            builtin_tools: &self.cx.config.builtin_tools,
        }
    }

    pub(crate) fn emit(&self, event: HostEvent) {
        let _ = self.events.send(event);
    }

    pub(crate) fn in_plan(&self) -> bool {
        self.plan.load(Ordering::SeqCst)
    }

    /// Live extensions, in load order.
    pub(crate) fn extensions(&self) -> Vec<Arc<Extension>> {
        self.state()
            .extensions
            .iter()
            .filter(|e| e.is_alive())
            .cloned()
            .collect()
    }

    /// Tells the front ends of a load-time warning, unless it was said
    /// before in this run (see [`Warned`]).
    pub(super) fn warn_once(&self, extension: &str, message: String) {
        if self.warned.first(extension, &message) {
            self.emit(HostEvent::Warning {
                extension: extension.to_owned(),
                message,
            });
        }
    }

    /// Logs to the extension's file and tells the front ends.
    pub(crate) fn warn(&self, ext: &Extension, message: String) {
        ext.peer.log.line(&message);
        self.emit(HostEvent::Warning {
            extension: ext.name().to_owned(),
            message,
        });
    }

    /// Attributes a UI effect to its extension and passes it on.
    pub(super) fn effect(&self, extension: &str, effect: Effect) {
        let extension = extension.to_owned();
        let event = match effect {
            Effect::Notify { level, message } => HostEvent::Notify {
                extension,
                level,
                message,
            },
            Effect::ClearNotes => HostEvent::ClearNotes { extension },
            Effect::Submit(text) => HostEvent::Submit { extension, text },
            Effect::PanelRender(panel) => HostEvent::PanelRender { extension, panel },
            Effect::PanelClose(panel_id) => HostEvent::PanelClose {
                extension,
                panel_id,
            },
            // Keys are scoped per extension, so two cannot overwrite each other.
            Effect::Status { key, text } => HostEvent::Status {
                key: format!("{extension}:{key}"),
                extension,
                text,
            },
            Effect::Widget { key, lines } => HostEvent::Widget {
                key: format!("{extension}:{key}"),
                extension,
                lines,
            },
            Effect::Entry(data) => {
                self.entries
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((extension.clone(), data.clone()));
                HostEvent::Entry { extension, data }
            }
            Effect::Question {
                prompt,
                options,
                reply,
            } => HostEvent::Question {
                extension,
                prompt,
                options,
                reply,
            },
            Effect::Form { form, reply } => HostEvent::Form {
                extension,
                form,
                reply,
            },
        };
        self.emit(event);
    }
}

impl Drop for Inner {
    /// The last handle is gone without `shutdown`: kill every process group
    /// now. (Reader tasks still hold the records, so dropping them alone
    /// would come too late.)
    fn drop(&mut self) {
        if let Some(reaper) = &self.reaper {
            reaper.abort();
        }
        self.stop_reconnecting(|_| true);
        for ext in self.state().extensions.drain(..) {
            ext.endpoint.kill_now();
        }
    }
}
