//! `ExtensionHost`, the public face of this crate: starts every discovered
//! extension concurrently, keeps the live set and its registrations,
//! supervises each connection, reports what happened, reloads and shuts
//! down. Dispatch lives in `dispatch.rs`; protocols live in `adapter/`.

mod background;
mod load;
mod reconnect;
mod register;
mod report;
mod state;
mod supervise;

use report::report_entry;
pub use report::{
    Connectivity, ExtensionReport, LoadError, LoadErrorKind, LoadedInfo, ReloadStats, ReportStatus,
};
use state::Warned;
pub(crate) use state::{Bound, HostState, Inner};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::join_all;
use serde_json::Value;
use tokio::sync::mpsc;
use zot_protocol::ui::{CommandInfo, HostEvent};

use crate::adapter::select::for_manifest;
use crate::config::HostConfig;
use crate::context::HostContext;
use crate::discovery::{Found, FoundStatus, discover};
use crate::extension::Extension;
use crate::manifest::Manifest;
use crate::model::{Hook, ToolInfo};
use crate::participant::{Joining, Participant, Warn};
use crate::reaper;
use crate::registry::{Conflict, Owner};
use crate::scope::Scope;
use crate::trust_gate::TrustGate;

/// The extension host. Cheap to clone; every clone drives the same set.
/// Dropping the last clone kills every extension process group.
#[derive(Clone)]
pub struct ExtensionHost {
    pub(crate) inner: Arc<Inner>,
}

impl ExtensionHost {
    /// Discovers and starts every extension concurrently and waits until
    /// each has ended its registration window (or failed). Never fails as a
    /// whole: per-extension errors are in [`ExtensionHost::report`].
    pub async fn start(config: HostConfig) -> (Self, mpsc::UnboundedReceiver<HostEvent>) {
        let found = discover(&config);
        Self::start_with(config, found).await
    }

    /// [`start`](Self::start) with what discovery already found for this
    /// configuration (so a caller that looked first does not look twice).
    pub async fn start_with(
        config: HostConfig,
        found: Vec<Found>,
    ) -> (Self, mpsc::UnboundedReceiver<HostEvent>) {
        let (events, rx) = mpsc::unbounded_channel();
        let trusted = config.project_trusted;
        reaper::become_subreaper();
        let warned = Warned::default();
        let gate = Arc::new(TrustGate::new(
            &config.zot_home,
            &config.cwd,
            config.trusted_pins.clone(),
            events.clone(),
        ));
        let participants = Mutex::new(load_participants(&config, &events, &warned, &gate));
        let inner = Arc::new(Inner {
            cx: Arc::new(HostContext::new(config)),
            events,
            state: Mutex::new(HostState::default()),
            lifecycle: tokio::sync::Mutex::new(()),
            project_trusted: AtomicBool::new(trusted),
            plan: AtomicBool::new(false),
            entries: Mutex::new(Vec::new()),
            reaper: reaper::spawn_reaper(),
            participants,
            gate,
            starting_count: tokio::sync::watch::Sender::new(0),
            warned,
        });
        {
            let _guard = inner.lifecycle.lock().await;
            inner.load_found(found).await;
        }
        (Self { inner }, rx)
    }

    pub fn config(&self) -> &HostConfig {
        &self.inner.cx.config
    }

    /// Whether a load-time warning from `source` (such as a Markdown
    /// command file skipped) is new in this run, noting it: the front ends
    /// say each once, not again at every reload.
    pub fn first_warning(&self, source: &str, message: &str) -> bool {
        self.inner.warned.first(source, message)
    }

    /// Every discovered extension directory, in load order, with its state.
    pub fn report(&self) -> Vec<ExtensionReport> {
        let state = self.inner.state();
        state
            .found
            .iter()
            .enumerate()
            .map(|(order, (found, outcome))| {
                let reconnecting = state.reconnecting.get(&order).map(|r| r.connectivity());
                let mut entry =
                    report_entry(&self.inner.cx.config, found, outcome.as_ref(), reconnecting);
                if outcome.is_none()
                    && matches!(found.status, FoundStatus::Load(_))
                    && entry.name.as_ref().is_some_and(|n| state.off.contains(n))
                {
                    entry.status = ReportStatus::Off;
                }
                entry
            })
            .collect()
    }

    /// Load errors of the current generation.
    pub fn errors(&self) -> Vec<LoadError> {
        let state = self.inner.state();
        state
            .found
            .iter()
            .filter_map(|(_, outcome)| match outcome {
                Some(Err(e)) => Some(e.clone()),
                _ => None,
            })
            .collect()
    }

    /// Every name conflict seen since the last (re)load.
    pub fn conflicts(&self) -> Vec<Conflict> {
        self.inner.state().conflicts.clone()
    }

    /// Winning extension commands of live extensions.
    pub fn commands(&self) -> Vec<CommandInfo> {
        let state = self.inner.state();
        self.inner.live(&state).commands()
    }

    /// Tools the model may see now: winners of live extensions, deferred ones once activated.
    pub fn tools(&self) -> Vec<ToolInfo> {
        let state = self.inner.state();
        self.inner
            .live(&state)
            .active_tools(&state.activated)
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }

    /// The session id extensions get from now on (in handshakes and payloads).
    pub fn set_session_id(&self, session_id: &str) {
        self.inner.cx.facts().session_id = session_id.to_owned();
    }

    /// The file the conversation is written to from now on (`None`: none).
    pub fn set_session_file(&self, path: Option<&std::path::Path>) {
        self.inner.cx.facts().transcript = path.map(std::path::Path::to_path_buf);
    }

    /// Whether tool calls are confirmed by the user (`--no-yolo`) rather
    /// than run without asking.
    pub fn set_confirms(&self, confirms: bool) {
        self.inner.cx.facts().confirms = confirms;
    }

    /// Whether the project is trusted now (it may have been trusted since
    /// the host started).
    pub fn project_trusted(&self) -> bool {
        self.inner.project_trusted.load(Ordering::SeqCst)
    }

    /// Plan mode on or off: extensions whose protocol is quiet in plan mode
    /// get no hooks while it is on.
    pub fn set_plan(&self, plan: bool) {
        self.inner.plan.store(plan, Ordering::SeqCst);
    }

    /// Session entries recorded since the last call, for the session file.
    pub fn take_entries(&self) -> Vec<(String, Value)> {
        std::mem::take(
            &mut *self
                .inner
                .entries
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Lets project extensions run from the next reload on (the user trusted the project).
    pub fn set_project_trusted(&self, trusted: bool) {
        self.inner.project_trusted.store(trusted, Ordering::SeqCst);
        if trusted {
            self.inner.gate.trusted_again();
        }
    }

    /// Lets extensions (servers configured for sampling) have model
    /// calls run by `sampler`, after the user agrees to each.
    pub fn set_sampler(&self, sampler: Arc<dyn crate::sampling::Sampler>) {
        *self
            .inner
            .cx
            .sampler
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(sampler);
    }

    /// Tells extensions loaded from now on (and prompt preparation) about a model change.
    pub fn set_model(&self, provider: &str, model: &str) {
        let mut facts = self.inner.cx.facts();
        facts.provider = provider.to_owned();
        facts.model = model.to_owned();
    }

    /// Stops every extension, re-reads the manifests (same `--ext` paths,
    /// same `--no-ext`), and starts them again.
    pub async fn reload(&self) -> ReloadStats {
        let _guard = self.inner.lifecycle.lock().await;
        self.inner.stop_starting().await;
        self.inner.stop_reconnecting(|_| true);
        let stopped = self.inner.stop(&self.inner.extensions()).await;
        {
            let mut state = self.inner.state();
            state.found.clear();
            state.extensions.clear();
            state.conflicts.clear();
            state.activated.clear();
        }
        let mut config = self.inner.cx.config.clone();
        config.project_trusted = self.inner.project_trusted.load(Ordering::SeqCst);
        {
            let participants = load_participants(
                &config,
                &self.inner.events,
                &self.inner.warned,
                &self.inner.gate,
            );
            *self
                .inner
                .participants
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = participants;
        }
        let mut stats = self.inner.load_found(discover(&config)).await;
        stats.stopped = stopped;
        self.inner.emit(HostEvent::ToolsChanged);
        self.inner.emit(HostEvent::CommandsChanged);
        stats
    }

    /// The agent moved to another session: the session ends for every
    /// observer, the new id is taken, and extensions whose protocol ties
    /// them to a session restart with a fresh handshake; the others keep
    /// running with their state.
    pub async fn switch_session(&self, session_id: &str) -> ReloadStats {
        self.session_ended_because("clear").await;
        self.set_session_id(session_id);
        let _guard = self.inner.lifecycle.lock().await;
        let cx = &self.inner.cx;
        let restarts = |m: &Manifest| {
            let dir = std::path::absolute(&m.dir).unwrap_or_else(|_| m.dir.clone());
            for_manifest(m, &dir, &dir, cx)
                .is_ok_and(|(a, _)| a.semantics().restart_on_session_switch)
        };
        let (running, manifests) = {
            let state = self.inner.state();
            let manifests: Vec<(usize, Scope, Manifest)> = state
                .found
                .iter()
                .enumerate()
                .filter_map(|(order, (found, _))| match &found.status {
                    FoundStatus::Load(m) if restarts(m) => Some((order, found.scope, m.clone())),
                    _ => None,
                })
                .collect();
            let running: Vec<Arc<Extension>> = state
                .extensions
                .iter()
                .filter(|e| e.is_alive() && manifests.iter().any(|(o, ..)| *o == e.order))
                .cloned()
                .collect();
            (running, manifests)
        };
        self.inner
            .stop_reconnecting(|order| manifests.iter().any(|(o, ..)| *o == order));
        let stopped = self.inner.stop(&running).await;
        {
            let mut state = self.inner.state();
            let names: Vec<&str> = running.iter().map(|e| e.name()).collect();
            state
                .extensions
                .retain(|e| !manifests.iter().any(|(o, ..)| *o == e.order));
            state.conflicts.retain(|c| {
                !names.contains(&c.loser.as_str())
                    && !matches!(&c.winner, Owner::Extension(w) if names.contains(&w.as_str()))
            });
        }
        let loads = manifests
            .iter()
            .map(|(order, scope, manifest)| self.inner.load_one(*order, *scope, manifest));
        let outcomes = join_all(loads).await;
        let mut stats = self.inner.record_outcomes(outcomes);
        stats.stopped = stopped;
        self.inner.emit(HostEvent::ToolsChanged);
        self.inner.emit(HostEvent::CommandsChanged);
        stats
    }

    /// The session ends (exit, or a switch): observers are told, in load
    /// order, then the participants, with reason `other`.
    pub async fn session_ended(&self) {
        self.session_ended_because("other").await;
    }

    /// [`session_ended`](Self::session_ended) with the reason (`clear`,
    /// `prompt_input_exit`, `other`).
    pub async fn session_ended_because(&self, reason: &str) {
        self.observe(&Hook::SessionEnd {
            reason: reason.to_owned(),
        })
        .await;
    }

    /// Stops every extension: queued frames are written, then the
    /// protocol's shutdown, then the connection is closed; all share one
    /// grace period, then SIGTERM and SIGKILL go to each holdout's process
    /// group. Returns how many were running.
    pub async fn shutdown(&self) -> usize {
        let _guard = self.inner.lifecycle.lock().await;
        self.inner.stop_starting().await;
        self.inner.stop_reconnecting(|_| true);
        let stopped = self.inner.stop(&self.inner.extensions()).await;
        // What left its process group (a daemon that called setsid) was
        // adopted by zot (a subreaper on Linux): kill and reap it too.
        let _ = tokio::task::spawn_blocking(reaper::sweep).await;
        stopped
    }

    /// Extensions still starting in the background (an installed
    /// ecosystem's, with `adapted_in_background`), by name, in load order.
    pub fn starting(&self) -> Vec<String> {
        let state = self.inner.state();
        let mut starting: Vec<(usize, String)> = state
            .starting
            .iter()
            .map(|s| (s.order, s.name.clone()))
            .collect();
        starting.sort();
        starting.into_iter().map(|(_, name)| name).collect()
    }

    /// Waits until no extension is starting in the background, or until
    /// the last of their start-up deadlines has passed.
    pub async fn wait_started(&self) {
        let deadline = self.inner.state().starting.iter().map(|s| s.deadline).max();
        let Some(deadline) = deadline else {
            return;
        };
        let mut count = self.inner.starting_count.subscribe();
        let _ = tokio::time::timeout_at(deadline, count.wait_for(|n| *n == 0)).await;
    }

    /// Turns the extension `name` off or on for this session: off stops it
    /// (its tools and commands leave) and keeps it out of reloads; on starts
    /// it again. `Ok` says what happened.
    pub async fn set_enabled(&self, name: &str, on: bool) -> Result<String, String> {
        let _guard = self.inner.lifecycle.lock().await;
        let slot = {
            let state = self.inner.state();
            state
                .found
                .iter()
                .enumerate()
                .find_map(|(order, (found, _))| match &found.status {
                    FoundStatus::Load(m) if m.name == name => Some((order, found.scope, m.clone())),
                    _ => None,
                })
        };
        let Some((order, scope, manifest)) = slot else {
            return Err(format!("{name} is not an extension zot would run here"));
        };
        if !on {
            if !self.inner.state().off.insert(name.to_owned()) {
                return Ok(format!("{name} is already off"));
            }
            self.inner.stop_starting_where(|s| s.order == order).await;
            // A remote server being reconnected stays down too.
            self.inner.stop_reconnecting(|o| o == order);
            let running: Vec<Arc<Extension>> = self
                .inner
                .extensions()
                .into_iter()
                .filter(|e| e.order == order)
                .collect();
            self.inner.stop(&running).await;
            {
                let mut state = self.inner.state();
                state.extensions.retain(|e| e.order != order);
                state
                    .conflicts
                    .retain(|c| c.loser != name && c.winner != Owner::Extension(name.to_owned()));
                if let Some(slot) = state.found.get_mut(order) {
                    slot.1 = None;
                }
            }
            self.inner.emit(HostEvent::ToolsChanged);
            self.inner.emit(HostEvent::CommandsChanged);
            return Ok(format!("{name} is off for this session"));
        }
        if !self.inner.state().off.remove(name) {
            let running = self.inner.extensions().iter().any(|e| e.order == order);
            let starting = self.inner.state().starting.iter().any(|s| s.order == order);
            if running || starting {
                return Ok(format!("{name} is already on"));
            }
        }
        let outcome = self.inner.load_one(order, scope, &manifest).await;
        let stats = self.inner.record_outcomes(vec![outcome]);
        self.inner.emit(HostEvent::ToolsChanged);
        self.inner.emit(HostEvent::CommandsChanged);
        match stats.errors.first() {
            Some(e) => Err(e.to_string()),
            None => Ok(format!("{name} is on")),
        }
    }
}

/// What takes part at the hook points beside the extensions, from every
/// installed ecosystem; their warnings go out as host events, those about
/// their files once per run.
fn load_participants(
    config: &HostConfig,
    events: &mpsc::UnboundedSender<HostEvent>,
    warned: &Warned,
    gate: &Arc<TrustGate>,
) -> Vec<Arc<dyn Participant>> {
    let sink = events.clone();
    let warn: Warn = Arc::new(move |extension: String, message: String| {
        tracing::warn!(%extension, %message, "participant");
        let _ = sink.send(HostEvent::Warning { extension, message });
    });
    let first = |source: &str, message: &str| warned.first(source, message);
    let joining = Joining {
        config,
        gate: Arc::new(Arc::clone(gate)),
        warn,
        first: &first,
    };
    crate::ecosystem::installed()
        .into_iter()
        .flat_map(|ecosystem| ecosystem.participants(&joining))
        .collect()
}
