//! `ExtensionHost`, the public face of this crate: starts every discovered
//! extension concurrently, keeps the live set and its registrations,
//! supervises each connection, reports what happened, reloads and shuts
//! down. Dispatch lives in `dispatch.rs`; protocols live in `adapter/`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use futures_util::future::join_all;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zot_protocol::ui::{CommandInfo, HostEvent, ReloadSummary};
use zot_protocol::zot::NotifyLevel;

use crate::adapter::{self, HandshakeError, LaunchSpec, Link};
use crate::config::HostConfig;
use crate::context::HostContext;
use crate::discovery::{Found, FoundStatus, Scope, discover};
use crate::ext_log::ExtLog;
use crate::extension::{Extension, Readiness};
use crate::hooks::CommandHooks;
use crate::limits::Limits;
use crate::manifest::{Dialect, Manifest};
use crate::model::{Effect, Hook, Mode, Registration, ToolInfo};
use crate::permissions::{self, Permissions};
use crate::reaper;
use crate::registry::{Conflict, Live, NameKind, Owner};
use crate::remote::{self, Wire};
use crate::transport::{
    Connection, Endpoint, FrameReader, Peer, ReadError, describe, http, preview, stdio, ws,
};

/// Why an extension could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub extension: String,
    pub dir: PathBuf,
    pub kind: LoadErrorKind,
    /// How the process ended (`exit status: 3`, `signal: 9 (SIGKILL)`), when it ran.
    pub status: Option<String>,
    pub log: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadErrorKind {
    #[error("cannot open log: {0}")]
    Log(String),
    /// Its permission scope cannot be enforced or set up (the message says why).
    #[error("permissions: {0}")]
    Sandbox(String),
    #[error("cannot create its data directory: {0}")]
    DataDir(String),
    #[error("spawn {program}: {error}")]
    Spawn { program: String, error: String },
    /// The remote settings cannot work as written (a missing variable,
    /// plain text to another machine); not retried.
    #[error("{0}")]
    Remote(String),
    /// The server could not be reached; zot keeps trying in the background.
    #[error("cannot connect to {url}: {error}")]
    Connect { url: String, error: String },
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "extension {}: {}", self.extension, self.kind)?;
        match &self.status {
            // A remote extension's status already says it is a connection.
            Some(status) if status.starts_with("connection") => write!(f, " ({status})")?,
            Some(status) => write!(f, " (process: {status})")?,
            None => {}
        }
        write!(f, "; log: {}", self.log.display())
    }
}

impl std::error::Error for LoadError {}

/// One discovered extension directory and what became of it.
#[derive(Debug, Clone)]
pub struct ExtensionReport {
    pub scope: Scope,
    pub dir: PathBuf,
    /// The manifest name, when the manifest is valid.
    pub name: Option<String>,
    pub version: Option<String>,
    pub log: Option<PathBuf>,
    pub status: ReportStatus,
    /// The protocol its manifest names.
    pub dialect: Dialect,
    /// A remote extension's `url` as written (headers are never reported).
    pub url: Option<String>,
    /// A remote extension's connection, once the host has tried it.
    pub connection: Option<Connectivity>,
}

/// Where a remote extension's connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connectivity {
    Connected,
    /// Lost (or never made): attempt `attempt` comes in `next_in`.
    Reconnecting {
        attempt: u32,
        next_in: Duration,
    },
    /// Cannot work as written (a missing variable, plain text to another
    /// machine): not tried again until a reload; the load error says why.
    Failed,
}

impl std::fmt::Display for Connectivity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connected => f.write_str("connected"),
            Self::Reconnecting { attempt, next_in } => write!(
                f,
                "reconnecting (attempt {attempt}, next in {:.1} s)",
                next_in.as_secs_f64()
            ),
            Self::Failed => f.write_str("failed"),
        }
    }
}

#[derive(Debug, Clone)]
pub enum ReportStatus {
    /// Being spawned or in its handshake right now (a reload is under way,
    /// or an MCP server starts in the background).
    Starting,
    /// Turned off by the user for this session (`/mcp off`).
    Off,
    Loaded(LoadedInfo),
    Failed(LoadError),
    Disabled,
    /// A project extension in an untrusted project, never spawned.
    Untrusted,
    /// Theme- or skill-only bundle, never spawned.
    Bundle,
    Shadowed {
        by: PathBuf,
    },
    InvalidManifest(crate::manifest::ManifestError),
}

/// A loaded extension as it is now.
#[derive(Debug, Clone)]
pub struct LoadedInfo {
    /// The process id; `None` for a remote extension.
    pub pid: Option<i32>,
    pub readiness: Readiness,
    pub running: bool,
    /// How it ended, once it has.
    pub exit: Option<String>,
    pub commands: Vec<CommandInfo>,
    pub tools: Vec<ToolInfo>,
    pub events: Vec<String>,
    pub intercepts: Vec<String>,
    /// The protocol version negotiated in the handshake (MCP).
    pub protocol_version: Option<String>,
    /// Resources it offers (MCP resource URIs, as listed at start).
    pub resources: Vec<String>,
}

/// What `reload` did.
#[derive(Debug, Clone, Default)]
pub struct ReloadStats {
    pub stopped: usize,
    pub loaded: usize,
    /// Loaded extensions that sent `ready` or went quiet (auto-ready).
    pub ready: usize,
    pub errors: Vec<LoadError>,
}

impl ReloadStats {
    /// The figures as the front ends report them.
    pub fn summary(&self) -> ReloadSummary {
        ReloadSummary {
            stopped: self.stopped,
            loaded: self.loaded,
            ready: self.ready,
            errors: self.errors.iter().map(ToString::to_string).collect(),
        }
    }
}

/// The extension host. Cheap to clone; every clone drives the same set.
/// Dropping the last clone kills every extension process group.
#[derive(Clone)]
pub struct ExtensionHost {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) cx: Arc<HostContext>,
    events: mpsc::UnboundedSender<HostEvent>,
    state: Mutex<HostState>,
    /// Serialises start, reload and shutdown.
    lifecycle: tokio::sync::Mutex<()>,
    /// Starts as `config.project_trusted`; the user may trust the project later.
    project_trusted: AtomicBool,
    /// Plan mode: extensions whose protocol is quiet in plan mode get no hooks.
    plan: AtomicBool,
    /// Session entries (a UI effect) not yet taken by the agent for its session file.
    entries: Mutex<Vec<(String, Value)>>,
    /// The task that reaps adopted orphans as they exit (see `reaper.rs`).
    reaper: Option<tokio::task::AbortHandle>,
    /// Command hooks of this generation (read again on reload).
    command_hooks: Mutex<Arc<CommandHooks>>,
    /// How many extensions are starting in the background (waiters watch it).
    starting_count: tokio::sync::watch::Sender<usize>,
    /// Load-time warnings already given, so a reload does not repeat them.
    warned: Warned,
}

/// The load-time warnings (a manifest's, a hooks file's, a name clash)
/// given so far in this run: each distinct one is said once, however often
/// the extensions are reloaded. Warnings about what happens while zot runs
/// (an extension exits, a hook times out) are not kept here: each is news.
#[derive(Clone, Default)]
struct Warned(Arc<Mutex<HashSet<(String, String)>>>);

impl Warned {
    /// Whether (`source`, `message`) is new, noting it.
    fn first(&self, source: &str, message: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((source.to_owned(), message.to_owned()))
    }
}

pub(crate) type LoadOutcome = Result<Arc<Extension>, LoadError>;

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
    reconnecting: HashMap<usize, Arc<Reconnect>>,
    /// MCP servers starting in the background (`mcp_in_background`).
    starting: Vec<Starting>,
    /// Extensions the user turned off for this session (`/mcp off`), by
    /// name: stopped, and not started again by a reload.
    off: HashSet<String>,
}

/// One extension loading in the background, as the host sees it.
struct Starting {
    order: usize,
    name: String,
    /// When its start-up must be over (its `startup_timeout_sec`, and
    /// [`STARTING_GRACE`]).
    deadline: Instant,
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// Beyond an MCP server's `startup_timeout_sec` (which bounds its
/// handshake), what a background start may take for the spawn before it
/// and the registration after it: local work, well under a second.
const STARTING_GRACE: Duration = Duration::from_secs(2);

/// One remote extension's reconnect loop, as the host sees it.
struct Reconnect {
    cancel: CancellationToken,
    /// The attempt coming next, and when.
    next: Mutex<(u32, Instant)>,
}

impl Reconnect {
    fn connectivity(&self) -> Connectivity {
        let (attempt, at) = *self.next.lock().unwrap_or_else(PoisonError::into_inner);
        Connectivity::Reconnecting {
            attempt,
            next_in: at.saturating_duration_since(Instant::now()),
        }
    }
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
        let command_hooks = Mutex::new(Arc::new(load_hooks(&config, trusted, &events, &warned)));
        let inner = Arc::new(Inner {
            cx: Arc::new(HostContext::new(config)),
            events,
            state: Mutex::new(HostState::default()),
            lifecycle: tokio::sync::Mutex::new(()),
            project_trusted: AtomicBool::new(trusted),
            plan: AtomicBool::new(false),
            entries: Mutex::new(Vec::new()),
            reaper: reaper::spawn_reaper(),
            command_hooks,
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
        self.command_hooks().set_session_id(session_id);
    }

    /// Every configured hook as the files say now, with the project's
    /// current trust (for listings).
    pub fn hooks_listed(&self) -> Vec<crate::hooks::Listed> {
        let trusted = self.inner.project_trusted.load(Ordering::SeqCst);
        crate::hooks::settings::load(&self.inner.cx.config.hook_sources(trusted)).listed()
    }

    /// The command hooks of the current generation.
    pub fn command_hooks(&self) -> Arc<CommandHooks> {
        Arc::clone(
            &self
                .inner
                .command_hooks
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
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
    }

    /// Lets extensions (MCP servers with `"sampling": true`) have model
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
            let old = self.command_hooks();
            let hooks = load_hooks(
                &config,
                config.project_trusted,
                &self.inner.events,
                &self.inner.warned,
            );
            hooks.inherit(&old);
            *self
                .inner
                .command_hooks
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Arc::new(hooks);
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
            adapter::for_manifest(m, &dir, &dir, cx)
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
    /// order, and `SessionEnd` hooks run with reason `other`.
    pub async fn session_ended(&self) {
        self.session_ended_because("other").await;
    }

    /// [`session_ended`](Self::session_ended) with the reason `SessionEnd`
    /// hooks get (`clear`, `prompt_input_exit`, `other`).
    pub async fn session_ended_because(&self, reason: &str) {
        self.observe(&Hook::SessionEnd).await;
        self.command_hooks().session_end(reason).await;
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

    /// Extensions still starting in the background (MCP servers with
    /// `mcp_in_background`), by name, in load order.
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

/// The command hooks `config` asks for (none with `hooks: false`); their
/// warnings go out as host events, those about the files once per run.
fn load_hooks(
    config: &HostConfig,
    trusted: bool,
    events: &mpsc::UnboundedSender<HostEvent>,
    warned: &Warned,
) -> CommandHooks {
    let sink = events.clone();
    let warn: crate::hooks::Warn = Arc::new(move |extension: String, message: String| {
        tracing::warn!(%extension, %message, "hook");
        let _ = sink.send(HostEvent::Warning { extension, message });
    });
    let project = std::path::absolute(&config.cwd).unwrap_or_else(|_| config.cwd.clone());
    if !config.hooks {
        return CommandHooks::none(&project, warn);
    }
    let loaded = crate::hooks::settings::load(&config.hook_sources(trusted));
    for (source, message) in crate::hooks::load_warnings(&loaded) {
        if warned.first(&source, &message) {
            warn(source, message);
        }
    }
    // As for extensions, a policy that cannot be read runs nothing it would confine.
    let policy = zot_sandbox::Policy::load(&config.zot_home).map_err(|e| e.to_string());
    CommandHooks::new(&loaded, &project, &config.session_id, warn).with_scope(
        crate::hooks::ProjectScope {
            config: config.clone(),
            policy,
        },
    )
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
    inner: Weak<Inner>,
    ext: Weak<Extension>,
}

impl Attached {
    /// Runs `f` with a link to the host, while both the host and this
    /// extension (still live) exist.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&dyn Link) -> R) -> Option<R> {
        let inner = self.inner.upgrade()?;
        let ext = self.ext.upgrade().filter(|e| e.is_alive())?;
        let link = Bound {
            inner: &inner,
            ext: &ext,
        };
        Some(f(&link))
    }
}

/// The link during a handshake, before the extension joins the live set:
/// registrations wait for the host to apply them, the rest goes out at once.
struct Handshaking<'a> {
    inner: &'a Inner,
    peer: &'a Peer,
    registrations: Mutex<Vec<Registration>>,
}

impl Link for Handshaking<'_> {
    fn register(&self, registration: Registration) {
        self.registrations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(registration);
    }

    fn effect(&self, effect: Effect) {
        self.inner.effect(&self.peer.name, effect);
    }

    fn warn(&self, message: String) {
        self.peer.log.line(&message);
        self.inner.emit(HostEvent::Warning {
            extension: self.peer.name.clone(),
            message,
        });
    }
}

impl Inner {
    pub(crate) fn state(&self) -> MutexGuard<'_, HostState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
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
    fn warn_once(&self, extension: &str, message: String) {
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
    fn effect(&self, extension: &str, effect: Effect) {
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

    /// Records one registration.
    fn apply(&self, ext: &Extension, registration: Registration) {
        match registration {
            Registration::Command(cmd) => self.add_command(ext, cmd),
            Registration::Tool(tool) => {
                if let Some(tool) = self.valid_schema(ext, tool) {
                    self.add_tool(ext, tool);
                }
            }
            Registration::Subscribe(point, mode) => {
                ext.registrations().hooks.insert((point, mode));
            }
            Registration::Ready => ext.set_readiness(Readiness::Ready),
            Registration::ReplaceTools(tools) => {
                let tools: Vec<ToolInfo> = tools
                    .into_iter()
                    .filter_map(|tool| self.valid_schema(ext, tool))
                    .collect();
                let max = self.cx.config.limits.max_tools;
                let outcomes = {
                    let mut regs = ext.registrations();
                    let regs = &mut *regs;
                    replace_capped(
                        &mut regs.tools,
                        &mut regs.refused_tools,
                        max,
                        tools,
                        |t| (t.name.clone(), !t.deferred),
                        |t, name| t.name == name,
                    )
                };
                self.forget_conflicts(ext, NameKind::Tool);
                for (name, visible, added) in outcomes {
                    self.settle(ext, NameKind::Tool, &name, max, visible, added);
                }
                if ext.is_ready() {
                    self.emit(HostEvent::ToolsChanged);
                }
            }
            Registration::ReplaceCommands(commands) => {
                let max = self.cx.config.limits.max_commands;
                let outcomes = {
                    let mut regs = ext.registrations();
                    let regs = &mut *regs;
                    replace_capped(
                        &mut regs.commands,
                        &mut regs.refused_commands,
                        max,
                        commands,
                        |c| (c.name.clone(), true),
                        |c, name| c.name.eq_ignore_ascii_case(name),
                    )
                };
                self.forget_conflicts(ext, NameKind::Command);
                for (name, visible, added) in outcomes {
                    self.settle(ext, NameKind::Command, &name, max, visible, added);
                }
                if ext.is_ready() {
                    self.emit(HostEvent::CommandsChanged);
                }
            }
        }
    }

    async fn load_found(self: &Arc<Self>, found: Vec<Found>) -> ReloadStats {
        let off = {
            let mut state = self.state();
            state.found = found.iter().map(|f| (f.clone(), None)).collect();
            state.off.clone()
        };
        let background = self.cx.config.mcp_in_background;
        let mut loads = Vec::new();
        for (order, f) in found.iter().enumerate() {
            let FoundStatus::Load(manifest) = &f.status else {
                continue;
            };
            if off.contains(&manifest.name) {
                continue;
            }
            match manifest.mcp() {
                Some(server) if background => {
                    self.start_in_background(order, f.scope, manifest, server.startup_timeout);
                }
                _ => loads.push(self.load_one(order, f.scope, manifest)),
            }
        }
        let outcomes = join_all(loads).await;
        self.record_outcomes(outcomes)
    }

    /// Loads one extension in a task of its own; when it is done, its
    /// tools and commands join and a failure is reported
    /// (`HostEvent::LoadFailed`).
    fn start_in_background(
        self: &Arc<Self>,
        order: usize,
        scope: Scope,
        manifest: &Manifest,
        startup_timeout: Duration,
    ) {
        let cancel = CancellationToken::new();
        {
            let mut state = self.state();
            state.starting.push(Starting {
                order,
                name: manifest.name.clone(),
                deadline: Instant::now() + startup_timeout + STARTING_GRACE,
                cancel: cancel.clone(),
                task: None,
            });
            self.starting_count.send_replace(state.starting.len());
        }
        let inner = Arc::clone(self);
        let manifest = manifest.clone();
        let task = tokio::spawn(async move {
            let outcome = tokio::select! {
                () = cancel.cancelled() => return,
                (_, outcome) = inner.load_one(order, scope, &manifest) => outcome,
            };
            let failed = outcome.as_ref().err().map(ToString::to_string);
            inner.record_outcomes(vec![(order, outcome)]);
            {
                let mut state = inner.state();
                state.starting.retain(|s| s.order != order);
                inner.starting_count.send_replace(state.starting.len());
            }
            if let Some(error) = failed {
                inner.emit(HostEvent::LoadFailed {
                    extension: manifest.name.clone(),
                    error,
                });
            }
            inner.emit(HostEvent::ToolsChanged);
            inner.emit(HostEvent::CommandsChanged);
        });
        if let Some(entry) = self.state().starting.iter_mut().find(|s| s.order == order) {
            entry.task = Some(task);
        }
    }

    /// Ends every background start (a reload or shutdown is next).
    async fn stop_starting(&self) {
        self.stop_starting_where(|_| true).await;
    }

    /// Ends the background starts `which` picks and waits for their tasks,
    /// so that none of them joins the live set afterwards. A start cut
    /// short kills what it spawned (dropping a process record kills it).
    async fn stop_starting_where(&self, which: impl Fn(&Starting) -> bool) {
        let stopped: Vec<Starting> = {
            let mut state = self.state();
            let (stopped, kept) = std::mem::take(&mut state.starting)
                .into_iter()
                .partition(|s| which(s));
            state.starting = kept;
            self.starting_count.send_replace(state.starting.len());
            stopped
        };
        for entry in &stopped {
            entry.cancel.cancel();
        }
        for task in stopped.into_iter().filter_map(|s| s.task) {
            let _ = task.await;
        }
    }

    /// Stores load outcomes in their discovery slots and counts them.
    fn record_outcomes(&self, outcomes: Vec<(usize, LoadOutcome)>) -> ReloadStats {
        let mut stats = ReloadStats::default();
        let mut state = self.state();
        for (order, outcome) in outcomes {
            match &outcome {
                Ok(ext) => {
                    stats.loaded += 1;
                    if matches!(ext.readiness(), Readiness::Ready | Readiness::AutoReady) {
                        stats.ready += 1;
                    }
                }
                Err(e) => stats.errors.push(e.clone()),
            }
            if let Some(slot) = state.found.get_mut(order) {
                // A remote extension may already have been reconnected in
                // the background while others were still loading.
                if !(outcome.is_err() && matches!(slot.1, Some(Ok(_)))) {
                    slot.1 = Some(outcome);
                }
            }
        }
        stats
    }

    /// Spawns, handshakes and waits out the registration window of one extension.
    async fn load_one(
        self: &Arc<Self>,
        order: usize,
        scope: Scope,
        manifest: &Manifest,
    ) -> (usize, LoadOutcome) {
        (order, self.try_load(order, scope, manifest).await)
    }

    /// Loads one extension; a remote one that could not be reached (or
    /// failed its handshake) is tried again in the background.
    async fn try_load(
        self: &Arc<Self>,
        order: usize,
        scope: Scope,
        manifest: &Manifest,
    ) -> Result<Arc<Extension>, LoadError> {
        let outcome = self.load_attempt(order, scope, manifest).await;
        if let Err(e) = &outcome
            && manifest.network_url().is_some()
            && retried(&e.kind)
        {
            self.reconnect_later(order, scope, manifest.clone());
        }
        outcome
    }

    /// Spawns (or connects), handshakes and waits out the registration
    /// window; the extension then joins the live set in its load-order place.
    async fn load_attempt(
        self: &Arc<Self>,
        order: usize,
        scope: Scope,
        manifest: &Manifest,
    ) -> Result<Arc<Extension>, LoadError> {
        let name = manifest.name.clone();
        let log_path = self.cx.config.log_path(&name);
        let dir = std::path::absolute(&manifest.dir).unwrap_or_else(|_| manifest.dir.clone());
        let error = |kind: LoadErrorKind, status: Option<String>| LoadError {
            extension: name.clone(),
            dir: dir.clone(),
            kind,
            status,
            log: log_path.clone(),
        };
        let policy = zot_sandbox::Policy::load(&self.cx.config.zot_home)
            .map_err(|e| error(LoadErrorKind::Sandbox(e.to_string()), None))?;
        let permissions = Permissions::of(&self.cx.config, &policy, manifest, scope);
        // A project extension keeps its state outside the project, so that
        // what it writes neither changes the trust fingerprint nor lands in
        // the repository; a scoped one may not write its own directory, and a
        // remote one has no directory of its own on this machine, so their
        // state goes under $ZOT_HOME/data too; the others keep it in their
        // own directory.
        let data_dir =
            if permissions.unrestricted() && scope != Scope::Project && manifest.remote().is_none()
            {
                dir.clone()
            } else {
                let data_dir = permissions::scoped_data_dir(&self.cx.config, &name, scope);
                private_dir(&data_dir).map_err(|e| {
                    error(
                        LoadErrorKind::DataDir(format!("{}: {e}", data_dir.display())),
                        None,
                    )
                })?;
                data_dir
            };
        let (adapter, launch) = adapter::for_manifest(manifest, &dir, &data_dir, &self.cx)
            .map_err(|e| {
                let kind = LoadErrorKind::Spawn {
                    program: String::new(),
                    error: e,
                };
                error(kind, None)
            })?;
        let limits = self.cx.config.limits;
        let log = ExtLog::open(
            &log_path,
            &name,
            manifest.version.as_deref(),
            limits.max_log_bytes,
        )
        .map(Arc::new)
        .map_err(|e| error(LoadErrorKind::Log(e.to_string()), None))?;
        for warning in &manifest.warnings {
            log.line(warning);
            self.warn_once(&name, warning.clone());
        }
        let (process, conn, mut reader): (Box<dyn Endpoint>, Connection, FrameReader) = match launch
        {
            LaunchSpec::Process(launch) => {
                let mut confinement = permissions::confine(
                    &self.cx.config,
                    policy.enforce,
                    &permissions.effective,
                    &name,
                    scope,
                    &launch.program,
                    &dir,
                )
                .map_err(|e| {
                    let kind = LoadErrorKind::Sandbox(e);
                    log.line(&kind);
                    error(kind, None)
                })?;
                if let Some(sandbox) = &confinement.sandbox
                    && !sandbox.unenforced().is_empty()
                {
                    let message = format!(
                        "runs with its permission scope partly enforced (best-effort); not enforced: {}",
                        sandbox.unenforced().join(", ")
                    );
                    log.line(&message);
                    self.warn_once(&name, message);
                }
                // The launch's own variables (an MCP server's `env`) first,
                // so the sandbox's (a private TMPDIR) win a clash.
                let sandbox_env = std::mem::replace(&mut confinement.env, launch.env.clone());
                confinement.env.extend(sandbox_env);
                let spawned = stdio::spawn(
                    &name,
                    &launch.program,
                    &launch.args,
                    &launch.cwd,
                    &log,
                    limits.max_frame_bytes,
                    confinement,
                )
                .map_err(|e| {
                    let kind = LoadErrorKind::Spawn {
                        program: launch.program.display().to_string(),
                        error: e.to_string(),
                    };
                    log.line(&kind);
                    error(kind, None)
                })?;
                (Box::new(spawned.process), spawned.conn, spawned.reader)
            }
            // The adapter opens the session itself during its handshake.
            LaunchSpec::Remote(session) => (
                Box::new(session.endpoint),
                Connection::new().0,
                session.reader,
            ),
            LaunchSpec::Connect(settings) => {
                let target = remote::resolve(&settings).map_err(|e| {
                    let kind = LoadErrorKind::Remote(e);
                    log.line(&kind);
                    error(kind, None)
                })?;
                let connected = match target.wire {
                    Wire::WebSocket => ws::connect(&name, &target, &log, &limits).await,
                    Wire::Http => http::connect(&name, &target, &log, limits.max_frame_bytes).await,
                }
                .map_err(|e| {
                    let kind = LoadErrorKind::Connect {
                        url: settings.url.clone(),
                        error: e,
                    };
                    log.line(&kind);
                    error(kind, None)
                })?;
                log.line(format_args!("connected to {}", settings.url));
                (Box::new(connected.link), connected.conn, connected.reader)
            }
        };
        let peer = Peer {
            name: name.clone(),
            log: Arc::clone(&log),
            conn,
        };
        let early = Handshaking {
            inner: self,
            peer: &peer,
            registrations: Mutex::new(Vec::new()),
        };
        let handshake = adapter.handshake(&peer, &early, &mut reader).await;
        let mut registrations = early
            .registrations
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let registrations = match handshake {
            Ok(more) => {
                registrations.extend(more);
                registrations
            }
            Err(e) => {
                adapter.disconnected();
                let status = match e {
                    HandshakeError::ExitedBeforeHello => {
                        match process
                            .wait_until(Instant::now() + limits.exit_reap_grace)
                            .await
                        {
                            Some(status) => Some(status),
                            None => process.kill().await,
                        }
                    }
                    _ => process.kill().await,
                };
                let err = error(e.into(), Some(describe(status.as_deref())));
                tracing::warn!(extension = %name, error = %err, "extension failed to load");
                log.line(format_args!("failed to load: {}", err.kind));
                let what = if manifest.network_url().is_some() {
                    "connection"
                } else {
                    "process"
                };
                log.line(format_args!("{what}: {}", describe(status.as_deref())));
                return Err(err);
            }
        };
        let mut ext = Extension::new(peer, order, adapter, process).with_manifest(manifest);
        if manifest.network_url().is_some() {
            ext.origin = Some((scope, manifest.clone()));
        }
        let ext = Arc::new(ext);
        {
            let mut state = self.state();
            // A reconnected extension takes the place of its lost record.
            state.extensions.retain(|e| e.order != order);
            let at = state.extensions.partition_point(|e| e.order < order);
            state.extensions.insert(at, Arc::clone(&ext));
        }
        for registration in registrations {
            self.apply(&ext, registration);
        }
        ext.adapter.attach(Attached {
            inner: Arc::downgrade(self),
            ext: Arc::downgrade(&ext),
        });
        tokio::spawn(drive(
            Arc::clone(&ext),
            Arc::downgrade(self),
            reader,
            limits,
        ));
        ext.wait_ready().await;
        Ok(ext)
    }

    /// Tries a remote extension again and again (backing off) until it is
    /// connected, the host reloads or shuts down, or it fails for good.
    fn reconnect_later(self: &Arc<Self>, order: usize, scope: Scope, manifest: Manifest) {
        let entry = Arc::new(Reconnect {
            cancel: CancellationToken::new(),
            next: Mutex::new((1, Instant::now())),
        });
        if let Some(old) = self.state().reconnecting.insert(order, Arc::clone(&entry)) {
            old.cancel.cancel();
        }
        let host = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut attempt = 1;
            loop {
                let delay = remote::backoff(attempt);
                *entry.next.lock().unwrap_or_else(PoisonError::into_inner) =
                    (attempt, Instant::now() + delay);
                tokio::select! {
                    () = entry.cancel.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
                let Some(inner) = host.upgrade() else { return };
                let outcome = tokio::select! {
                    () = entry.cancel.cancelled() => return,
                    outcome = inner.load_attempt(order, scope, &manifest) => outcome,
                };
                let done = match &outcome {
                    Ok(_) => true,
                    Err(e) => !retried(&e.kind),
                };
                if !done {
                    attempt += 1;
                    continue;
                }
                let mut state = inner.state();
                if entry.cancel.is_cancelled() {
                    return;
                }
                if state
                    .reconnecting
                    .get(&order)
                    .is_some_and(|e| Arc::ptr_eq(e, &entry))
                {
                    state.reconnecting.remove(&order);
                }
                let reconnected = outcome.is_ok();
                if let Some(slot) = state.found.get_mut(order) {
                    slot.1 = Some(outcome);
                }
                drop(state);
                if reconnected {
                    tracing::info!(extension = %manifest.name, attempt, "extension reconnected");
                    // The loss was one warning; its end is one note, so the
                    // user knows the commands and tools are back.
                    if let Some(url) = manifest.network_url() {
                        inner.emit(HostEvent::Notify {
                            extension: manifest.name.clone(),
                            level: NotifyLevel::Info,
                            message: format!("reconnected to {url}"),
                        });
                    }
                    inner.emit(HostEvent::ToolsChanged);
                    inner.emit(HostEvent::CommandsChanged);
                }
                return;
            }
        });
    }

    /// Ends the reconnect loops of the load orders `which` picks.
    fn stop_reconnecting(&self, which: impl Fn(usize) -> bool) {
        self.state().reconnecting.retain(|order, entry| {
            let stop = which(*order);
            if stop {
                entry.cancel.cancel();
            }
            !stop
        });
    }

    /// Stops `running` together under one grace period; returns how many.
    async fn stop(&self, running: &[Arc<Extension>]) -> usize {
        let deadline = Instant::now() + self.cx.config.limits.shutdown_grace;
        join_all(
            running
                .iter()
                .map(|ext| ext.stop(deadline, &self.cx.config.limits)),
        )
        .await;
        running.len()
    }

    /// Records a command; logs and records any shadowing it causes.
    fn add_command(&self, ext: &Extension, cmd: CommandInfo) {
        let name = cmd.name.clone();
        let max = self.cx.config.limits.max_commands;
        let added = {
            let mut regs = ext.registrations();
            let regs = &mut *regs;
            capped(
                &mut regs.commands,
                &mut regs.refused_commands,
                max,
                cmd,
                |c| c.name.eq_ignore_ascii_case(&name),
            )
        };
        self.settle(ext, NameKind::Command, &name, max, true, added);
    }

    /// Records a tool; logs and records any shadowing it causes.
    /// `tool`, unless its input schema is not valid JSON Schema: then it is
    /// left out with a warning (a provider would refuse every request that
    /// offered it) and the extension's other tools stay.
    fn valid_schema(&self, ext: &Extension, tool: ToolInfo) -> Option<ToolInfo> {
        match crate::tool_schema::check(&tool.schema) {
            Ok(()) => Some(tool),
            Err(why) => {
                self.warn(
                    ext,
                    format!(
                        "tool \"{}\" rejected: invalid input schema: {why}",
                        tool.name
                    ),
                );
                None
            }
        }
    }

    fn add_tool(&self, ext: &Extension, tool: ToolInfo) {
        let (name, visible) = (tool.name.clone(), !tool.deferred);
        let max = self.cx.config.limits.max_tools;
        let added = {
            let mut regs = ext.registrations();
            let regs = &mut *regs;
            capped(&mut regs.tools, &mut regs.refused_tools, max, tool, |t| {
                t.name == name
            })
        };
        self.settle(ext, NameKind::Tool, &name, max, visible, added);
    }

    /// What follows a registration's outcome: a warning past the cap, or
    /// conflicts and a change event.
    fn settle(
        &self,
        ext: &Extension,
        kind: NameKind,
        name: &str,
        max: usize,
        visible: bool,
        added: Added,
    ) {
        match added {
            Added::OverCap { first } => self.over_cap(ext, kind, name, max, first),
            Added::Yes => self.registered(ext, kind, name, true, visible),
            Added::Twice => self.registered(ext, kind, name, false, visible),
        }
    }

    /// A registration past the per-extension cap: one warning for the
    /// first, a log line for each.
    fn over_cap(&self, ext: &Extension, kind: NameKind, name: &str, max: usize, first: bool) {
        let what = match kind {
            NameKind::Command => "commands",
            NameKind::Tool => "tools",
        };
        if first {
            self.warn(
                ext,
                format!(
                    "registered more than {max} {what}, the most one extension may have; {} and every later one are refused",
                    describe_name(kind, name)
                ),
            );
        } else {
            ext.peer.log.line(format_args!(
                "{} refused: over the limit of {max} {what}",
                describe_name(kind, name)
            ));
        }
    }

    /// After a registration: conflicts, and a change event once the
    /// extension is past its registration window.
    fn registered(&self, ext: &Extension, kind: NameKind, name: &str, added: bool, visible: bool) {
        if !added {
            ext.peer.log.line(format_args!(
                "{} registered twice; the first stays",
                describe_name(kind, name)
            ));
            return;
        }
        self.record_conflicts(ext, kind, name);
        if ext.is_ready() && visible {
            self.emit(match kind {
                NameKind::Command => HostEvent::CommandsChanged,
                NameKind::Tool => HostEvent::ToolsChanged,
            });
        }
    }

    fn record_conflicts(&self, ext: &Extension, kind: NameKind, name: &str) {
        let mut state = self.state();
        let found = self.live(&state).conflicts_of(ext, kind, name);
        for (conflict, loser) in found {
            let what = describe_name(kind, &conflict.name);
            let winner = match &conflict.winner {
                Owner::Builtin => "a built-in".to_owned(),
                Owner::Extension(name) => format!("extension {name} (earlier in load order)"),
            };
            loser.peer.log.line(format_args!(
                "{what} is shadowed by {winner}; it will not be used"
            ));
            if loser.adapter.semantics().warn_builtin_tool_clash
                && kind == NameKind::Tool
                && conflict.winner == Owner::Builtin
            {
                self.warn_once(
                    loser.name(),
                    format!(
                        "extension tool '{}' collides with a built-in tool; skipped",
                        conflict.name
                    ),
                );
            }
            if let Owner::Extension(winner) = &conflict.winner
                && loser.adapter.semantics().warn_tool_clash
                && kind == NameKind::Tool
                && !state.conflicts.contains(&conflict)
                && !crate::mcp::adapter::is_shared_tool(&conflict.name)
            {
                self.warn_once(
                    loser.name(),
                    format!(
                        "tool '{}' of {} collides with the same name from {winner}; {}'s is dropped",
                        conflict.name,
                        loser.name(),
                        loser.name()
                    ),
                );
            }
            if !state.conflicts.contains(&conflict) {
                state.conflicts.push(conflict);
            }
        }
    }

    /// Forgets the recorded conflicts of `ext`'s names of `kind` (it is
    /// registering them anew).
    fn forget_conflicts(&self, ext: &Extension, kind: NameKind) {
        let name = ext.name();
        self.state().conflicts.retain(|c| {
            c.kind != kind
                || (c.loser != name && !matches!(&c.winner, Owner::Extension(w) if w == name))
        });
    }

    /// Activates registered deferred tools by name; unknown names are ignored.
    /// Returns the names that became visible.
    pub(crate) fn activate(&self, names: &[String]) -> Vec<String> {
        let mut state = self.state();
        let deferred: HashSet<String> = self
            .live(&state)
            .all_tools()
            .into_iter()
            .filter(|(_, t)| t.deferred)
            .map(|(_, t)| t.name)
            .collect();
        let newly: Vec<String> = names
            .iter()
            .filter(|n| deferred.contains(*n))
            .filter(|n| state.activated.insert((*n).clone()))
            .cloned()
            .collect();
        drop(state);
        if !newly.is_empty() {
            self.emit(HostEvent::ToolsChanged);
        }
        newly
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

/// Drives one extension after its handshake: the registration window
/// (ready / auto-ready after silence / ready deadline), then every frame
/// until its connection closes, then the clean-up of a gone extension.
async fn drive(ext: Arc<Extension>, host: Weak<Inner>, mut reader: FrameReader, limits: Limits) {
    let window_end = Instant::now() + limits.ready_timeout;
    let mut last_frame = Instant::now();
    let end = loop {
        let next = if ext.is_ready() {
            reader.next().await
        } else {
            let idle_at = (last_frame + limits.auto_ready_idle).min(window_end);
            tokio::select! {
                next = reader.next() => next,
                () = tokio::time::sleep_until(idle_at) => {
                    if Instant::now() >= window_end {
                        ext.peer.log.line("timed out waiting for ready frame; proceeding");
                        ext.set_readiness(Readiness::TimedOut);
                    } else {
                        ext.peer.log.line("no ready frame; auto-readying after idle (legacy SDK?)");
                        ext.set_readiness(Readiness::AutoReady);
                    }
                    continue;
                }
            }
        };
        last_frame = Instant::now();
        match next {
            Some(Ok(line)) => match host.upgrade() {
                Some(inner) => {
                    tracing::debug!(extension = %ext.name(), frame = %preview(&line), "frame in");
                    let link = Bound {
                        inner: &inner,
                        ext: &ext,
                    };
                    ext.adapter.on_frame(&ext.peer, &link, &line);
                }
                None => break Gone::HostDropped,
            },
            Some(Err(ReadError::TooLong)) => break Gone::FrameTooLong,
            Some(Err(ReadError::Io(e))) => break Gone::ReadError(e.to_string()),
            None => break Gone::Eof,
        }
    };
    let host = host.upgrade();
    disconnected(&ext, host.as_deref(), end, &limits).await;
    // A lost remote extension is connected again, unless the host stopped it.
    if let (Some(host), Some((scope, manifest))) = (host, &ext.origin)
        && !ext.is_stopping()
    {
        host.reconnect_later(ext.order, *scope, manifest.clone());
    }
}

enum Gone {
    Eof,
    FrameTooLong,
    ReadError(String),
    HostDropped,
}

async fn disconnected(ext: &Extension, host: Option<&Inner>, why: Gone, limits: &Limits) {
    let stopping = ext.is_stopping();
    ext.mark_gone();
    let name = ext.name();
    let status = match why {
        Gone::FrameTooLong => {
            ext.peer.log.line(format_args!(
                "frame exceeds the {} byte limit; disconnecting and killing the extension",
                limits.max_frame_bytes
            ));
            ext.endpoint.kill().await
        }
        _ => match ext
            .endpoint
            .wait_until(Instant::now() + limits.exit_reap_grace)
            .await
        {
            Some(status) => Some(status),
            None => ext.endpoint.kill().await,
        },
    };
    let status = describe(status.as_deref());
    let reason = match (&why, ext.is_remote()) {
        (Gone::FrameTooLong, false) => format!(
            "{name} sent a frame over the {} byte limit and was killed ({status})",
            limits.max_frame_bytes,
        ),
        (Gone::FrameTooLong, true) => format!(
            "{name} sent a message over the {} byte limit and was disconnected ({status})",
            limits.max_frame_bytes,
        ),
        (Gone::ReadError(e), false) => format!("{name}: reading stdout failed: {e} ({status})"),
        (Gone::ReadError(e), true) => format!("{name}: reading failed: {e} ({status})"),
        (Gone::Eof | Gone::HostDropped, false) => format!("{name} exited ({status})"),
        (Gone::Eof | Gone::HostDropped, true) => format!("{name} disconnected ({status})"),
    };
    ext.peer.conn.fail_all(&reason);
    ext.adapter.disconnected();
    ext.set_readiness(Readiness::Exited);
    if stopping {
        return;
    }
    ext.peer.log.line(&reason);
    tracing::warn!(extension = %name, %reason, "extension gone");
    if let Some(host) = host {
        let (had_commands, had_tools) = {
            let regs = ext.registrations();
            (!regs.commands.is_empty(), !regs.tools.is_empty())
        };
        host.emit(HostEvent::Exited {
            extension: name.to_owned(),
            reason: reason.clone(),
        });
        let gone = if ext.is_remote() {
            "its commands and tools are gone until zot reconnects"
        } else {
            "its commands and tools are gone"
        };
        host.emit(HostEvent::Warning {
            extension: name.to_owned(),
            message: format!("{reason}; {gone} (log: {})", ext.peer.log.path().display()),
        });
        if had_commands {
            host.emit(HostEvent::CommandsChanged);
        }
        if had_tools {
            host.emit(HostEvent::ToolsChanged);
        }
    }
}

/// Whether a remote extension's failed load is tried again: everything but
/// settings that cannot work as written and local trouble (log, data dir).
fn retried(kind: &LoadErrorKind) -> bool {
    matches!(
        kind,
        LoadErrorKind::Connect { .. } | LoadErrorKind::Handshake(_)
    ) && !matches!(
        kind,
        // Trying again cannot sign in: that takes `zot mcp login`.
        LoadErrorKind::Handshake(HandshakeError::LoginNeeded(_))
    )
}

/// `command /x` or `tool "x"`, for log lines.
fn describe_name(kind: NameKind, name: &str) -> String {
    match kind {
        NameKind::Command => format!("command /{name}"),
        NameKind::Tool => format!("tool \"{name}\""),
    }
}

/// What became of a registration.
enum Added {
    Yes,
    /// The same name again: the first stays.
    Twice,
    /// Refused: the extension already has `max` of these (`first` refusal or not).
    OverCap {
        first: bool,
    },
}

/// Appends `item` unless `same` matches an existing one or there are
/// already `max` items (then `refused` counts it).
fn capped<T>(
    items: &mut Vec<T>,
    refused: &mut usize,
    max: usize,
    item: T,
    same: impl Fn(&T) -> bool,
) -> Added {
    if items.iter().any(same) {
        return Added::Twice;
    }
    if items.len() >= max {
        *refused += 1;
        return Added::OverCap {
            first: *refused == 1,
        };
    }
    items.push(item);
    Added::Yes
}

/// Replaces `items` with `new`, each added as [`capped`] adds one, in one
/// step under the caller's lock; returns each item's name, whether it is
/// visible, and what became of it.
fn replace_capped<T>(
    items: &mut Vec<T>,
    refused: &mut usize,
    max: usize,
    new: Vec<T>,
    key: impl Fn(&T) -> (String, bool),
    same: impl Fn(&T, &str) -> bool,
) -> Vec<(String, bool, Added)> {
    items.clear();
    *refused = 0;
    new.into_iter()
        .map(|item| {
            let (name, visible) = key(&item);
            let added = capped(items, refused, max, item, |t| same(t, &name));
            (name, visible, added)
        })
        .collect()
}

/// Creates `dir` (and missing parents) readable by the user alone.
fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

fn report_entry(
    config: &HostConfig,
    found: &Found,
    outcome: Option<&LoadOutcome>,
    reconnecting: Option<Connectivity>,
) -> ExtensionReport {
    let manifest = found.manifest();
    let status = match (&found.status, outcome) {
        (FoundStatus::Invalid(e), _) => ReportStatus::InvalidManifest(e.clone()),
        (FoundStatus::Disabled(_), _) => ReportStatus::Disabled,
        (FoundStatus::Untrusted(_), _) => ReportStatus::Untrusted,
        (FoundStatus::Bundle(_), _) => ReportStatus::Bundle,
        (FoundStatus::Shadowed { by, .. }, _) => ReportStatus::Shadowed { by: by.clone() },
        (FoundStatus::Load(_), Some(Err(e))) => ReportStatus::Failed(e.clone()),
        (FoundStatus::Load(_), Some(Ok(ext))) => {
            let regs = ext.registrations();
            let listed = |wanted: Mode| {
                let names: BTreeSet<&str> = regs
                    .hooks
                    .iter()
                    .map(|(point, mode)| ext.adapter.listed_as(*point, *mode))
                    .filter(|(list, _)| *list == wanted)
                    .map(|(_, name)| name)
                    .collect();
                names.into_iter().map(str::to_owned).collect()
            };
            ReportStatus::Loaded(LoadedInfo {
                pid: ext.endpoint.pid(),
                readiness: ext.readiness(),
                running: ext.is_alive(),
                exit: ext.endpoint.exit(),
                commands: regs.commands.clone(),
                tools: regs.tools.clone(),
                events: listed(Mode::Observe),
                intercepts: listed(Mode::Intercept),
                protocol_version: ext.adapter.protocol_version(),
                resources: ext.adapter.resources(),
            })
        }
        (FoundStatus::Load(_), None) => ReportStatus::Starting,
    };
    ExtensionReport {
        scope: found.scope,
        dir: found.dir.clone(),
        name: manifest.map(|m| m.name.clone()),
        version: manifest.and_then(|m| m.version.clone()),
        log: manifest
            .filter(|m| m.is_process())
            .map(|m| config.log_path(&m.name)),
        url: manifest.and_then(|m| m.remote()).map(|r| r.url.clone()),
        connection: match (
            manifest.and_then(|m| m.network_url()),
            reconnecting,
            outcome,
        ) {
            (None, ..) => None,
            (Some(_), Some(reconnecting), _) => Some(reconnecting),
            (Some(_), None, Some(Ok(ext))) if ext.is_alive() => Some(Connectivity::Connected),
            (Some(_), None, Some(Err(e))) if !retried(&e.kind) => Some(Connectivity::Failed),
            (Some(_), None, _) => None,
        },
        status,
        dialect: found.dialect,
    }
}
