//! Trust during a session: a trusted project's pins are checked again right
//! before each start of one of its hooks or extensions (configured servers
//! too), so a
//! pinned file changed while zot runs (by a sandboxed command, say) stops
//! them until the user trusts the project again. A quick re-check only
//! stats what the last full check saw ([`Watched`]); anything that moved
//! gets a full check (hashes through the stat cache, git).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;
use zot_protocol::ui::HostEvent;

use crate::pins::Pins;
use crate::trust::{FileChange, TrustStore, Watched, diff};

pub struct TrustGate {
    zot_home: PathBuf,
    project: PathBuf,
    events: mpsc::UnboundedSender<HostEvent>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// What the project was trusted with; `None`: the trust store's entry.
    baseline: Option<Pins>,
    /// What the last full check that held saw.
    watched: Option<Watched>,
    /// The changes that stopped the project's hooks and servers, until the
    /// user trusts it again.
    stopped: Option<Vec<FileChange>>,
}

impl TrustGate {
    /// The gate of `project`; `baseline` is what it was trusted with for
    /// this run when that is not the trust store's entry (`--trust`).
    pub fn new(
        zot_home: &Path,
        project: &Path,
        baseline: Option<Pins>,
        events: mpsc::UnboundedSender<HostEvent>,
    ) -> Self {
        Self {
            zot_home: zot_home.to_path_buf(),
            project: project.to_path_buf(),
            events,
            state: Mutex::new(State {
                baseline,
                ..State::default()
            }),
        }
    }

    /// The user trusted the project (again): its trust store entry is what
    /// counts from now on.
    pub fn trusted_again(&self) {
        *self.state() = State::default();
    }

    /// Whether the trusted project's hooks and servers may start now;
    /// `Err` says why not. The first check that finds a change tells the
    /// front end ([`HostEvent::TrustChanged`]); later ones only refuse.
    pub async fn check(self: &Arc<Self>) -> Result<(), String> {
        let gate = Arc::clone(self);
        tokio::task::spawn_blocking(move || gate.check_now())
            .await
            .unwrap_or_else(|e| Err(format!("trust check failed: {e}")))
    }

    /// [`check`](Self::check), on this thread.
    pub fn check_now(&self) -> Result<(), String> {
        let mut state = self.state();
        if let Some(changes) = &state.stopped {
            // Trusted again since (in the TUI, or by `zot trust` elsewhere)?
            let store = self.store()?;
            match store.pinned(&self.project) {
                Some(pins) if state.baseline.as_deref() != Some(pins) => {
                    *state = State {
                        baseline: Some(Arc::new(pins.clone())),
                        ..State::default()
                    };
                }
                _ => return Err(stopped_reason(changes)),
            }
        }
        if state.watched.as_ref().is_some_and(Watched::unchanged) {
            return Ok(());
        }
        let store = self.store()?;
        let (files, watched) = store.current_watched(&self.project);
        let baseline = match &state.baseline {
            Some(pins) => Arc::clone(pins),
            None => {
                // Trusted for this run without an entry: as it is now.
                let pins = Arc::new(store.pinned(&self.project).unwrap_or(&files).clone());
                state.baseline = Some(Arc::clone(&pins));
                pins
            }
        };
        let changes = diff(&baseline, &files);
        if changes.is_empty() {
            state.watched = Some(watched);
            return Ok(());
        }
        let reason = stopped_reason(&changes);
        tracing::warn!(%reason, "trust");
        let _ = self.events.send(HostEvent::TrustChanged {
            changes: changes.iter().map(ToString::to_string).collect(),
        });
        state.stopped = Some(changes);
        state.watched = None;
        Err(reason)
    }

    fn store(&self) -> Result<TrustStore, String> {
        TrustStore::load(&self.zot_home).map_err(|e| e.to_string())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Why a trusted project's hooks and servers do not start, in one line.
fn stopped_reason(changes: &[FileChange]) -> String {
    let mut shown: Vec<String> = changes.iter().take(3).map(ToString::to_string).collect();
    if changes.len() > shown.len() {
        shown.push(format!("and {} more", changes.len() - shown.len()));
    }
    HostEvent::trust_changed_message(&shown)
}

impl crate::participant::Gate for Arc<TrustGate> {
    fn check(&self) -> futures_util::future::BoxFuture<'_, Result<(), String>> {
        Box::pin(TrustGate::check(self))
    }
}
