//! `ExtensionHost`, the public face of this crate: starts every discovered
//! extension concurrently, keeps the live set and its registrations, reports
//! what happened, reloads and shuts down. Dispatch lives in `dispatch.rs`.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::future::join_all;
use tokio::sync::mpsc;
use tokio::time::Instant;
use zot_protocol::PROTOCOL_VERSION;
use zot_protocol::zot::{HelloAck, HostFrame, NotifyLevel, PanelRender};

use crate::config::HostConfig;
use crate::connection::{Connection, FrameReader};
use crate::dialect::nimlet;
use crate::dialect::zot::{HandshakeError, handshake};
use crate::discovery::{Found, FoundStatus, Scope, discover};
use crate::ext_log::ExtLog;
use crate::extension::{Extension, Readiness, run_reader};
use crate::manifest::Dialect;
use crate::manifest::{Launch, Manifest};
use crate::registry::{CommandInfo, Conflict, Live, NameKind, Owner, ToolInfo};
use crate::supervisor::{Process, describe, resolve_exec, resolve_nimlet};
use zot_protocol::nimlet::HostFrame as NimletFrame;

/// Something the front ends should know about, attributed to an extension.
#[derive(Debug, Clone, PartialEq)]
pub enum HostEvent {
    Notify {
        extension: String,
        level: NotifyLevel,
        message: String,
    },
    ClearNotes {
        extension: String,
    },
    /// Text to submit as a user prompt (empty text never gets here).
    Submit {
        extension: String,
        text: String,
    },
    PanelRender {
        extension: String,
        panel: PanelRender,
    },
    PanelClose {
        extension: String,
        panel_id: String,
    },
    /// The set of model-visible tools changed (late registration, activation, exit, reload).
    ToolsChanged,
    /// The set of extension commands changed.
    CommandsChanged,
    /// Something went wrong that the user should see (intercept timeouts, bad replies…).
    Warning {
        extension: String,
        message: String,
    },
    /// An extension's process went away on its own.
    Exited {
        extension: String,
        reason: String,
    },
    /// Footer text (nimlet `status`), keyed `<extension>:<key>`; empty text removes it.
    Status {
        extension: String,
        key: String,
        text: String,
    },
    /// Lines above the footer (nimlet `widget`), keyed `<extension>:<key>`; no lines removes it.
    Widget {
        extension: String,
        key: String,
        lines: Vec<String>,
    },
    /// Durable session data (nimlet `entry`): stored in the session, never sent to the model.
    Entry {
        extension: String,
        data: serde_json::Value,
    },
    /// A multiple-choice question (nimlet `ui_request`). Answer through
    /// `reply`; dropping every copy unanswered means "cancelled".
    Question {
        extension: String,
        prompt: String,
        options: Vec<String>,
        reply: QuestionReply,
    },
}

/// The way back for a question's answer.
#[derive(Clone)]
pub struct QuestionReply(Arc<Mutex<Option<tokio::sync::oneshot::Sender<Option<String>>>>>);

impl QuestionReply {
    pub(crate) fn new() -> (Self, tokio::sync::oneshot::Receiver<Option<String>>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (Self(Arc::new(Mutex::new(Some(tx)))), rx)
    }

    /// Answers with one of the options.
    pub fn answer(&self, answer: impl Into<String>) {
        self.send(Some(answer.into()));
    }

    /// Dismisses the question (no front end to ask, or the user declined).
    pub fn cancel(&self) {
        self.send(None);
    }

    fn send(&self, answer: Option<String>) {
        if let Some(tx) = self.0.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = tx.send(answer);
        }
    }
}

impl std::fmt::Debug for QuestionReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuestionReply")
    }
}

impl PartialEq for QuestionReply {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Questions in flight: while any is pending, nimlet reply timeouts are
/// suspended, and each answer restarts their window (research nimlet.md E14).
#[derive(Debug)]
pub(crate) struct QuestionClock {
    pending: std::sync::atomic::AtomicUsize,
    last_answer: Mutex<Instant>,
}

impl QuestionClock {
    fn new() -> Self {
        Self {
            pending: std::sync::atomic::AtomicUsize::new(0),
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
    pub(crate) fn deadline(&self, start: Instant, timeout: std::time::Duration) -> Option<Instant> {
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
    #[error("spawn {program}: {error}")]
    Spawn { program: String, error: String },
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "extension {}: {}", self.extension, self.kind)?;
        if let Some(status) = &self.status {
            write!(f, " (process: {status})")?;
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
    /// zot or nimlet.
    pub dialect: Dialect,
}

#[derive(Debug, Clone)]
pub enum ReportStatus {
    /// Being spawned or in its handshake right now (a reload is under way).
    Starting,
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
    pub pid: i32,
    pub readiness: Readiness,
    pub running: bool,
    /// How it ended, once it has.
    pub exit: Option<String>,
    pub commands: Vec<CommandInfo>,
    pub tools: Vec<ToolInfo>,
    pub events: Vec<String>,
    pub intercepts: Vec<String>,
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

/// The extension host. Cheap to clone; every clone drives the same set.
/// Dropping the last clone kills every extension process group.
#[derive(Clone)]
pub struct ExtensionHost {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: HostConfig,
    events: mpsc::UnboundedSender<HostEvent>,
    state: Mutex<HostState>,
    /// Serialises start, reload and shutdown.
    lifecycle: tokio::sync::Mutex<()>,
    next_id: AtomicU64,
    /// Starts as `config.project_trusted`; the user may trust the project later.
    project_trusted: std::sync::atomic::AtomicBool,
    pub(crate) questions: QuestionClock,
    /// Plan mode: nimlet lifecycle events are not dispatched (research nimlet.md E33).
    pub(crate) plan: std::sync::atomic::AtomicBool,
    /// nimlet `entry` data not yet taken by the agent for its session file.
    entries: Mutex<Vec<(String, serde_json::Value)>>,
}

type LoadOutcome = Result<Arc<Extension>, LoadError>;

/// How often a nimlet request re-checks its deadline while a question is pending.
const QUESTION_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// What an extension said first: zot's `hello` or nimlet's `register`.
enum Opening {
    Hello(zot_protocol::zot::Hello),
    Register(nimlet::Registration),
}

#[derive(Default)]
pub(crate) struct HostState {
    /// Discovery results of the current generation, in load order.
    found: Vec<(Found, Option<LoadOutcome>)>,
    /// Handshaken extensions of the current generation, in load order.
    pub(crate) extensions: Vec<Arc<Extension>>,
    pub(crate) conflicts: Vec<Conflict>,
    /// Deferred tools that a tool result activated.
    pub(crate) activated: HashSet<String>,
    pub(crate) provider: String,
    pub(crate) model: String,
    /// Sent to nimlet extensions in `initialize` and event payloads.
    pub(crate) session_id: String,
}

impl ExtensionHost {
    /// Discovers and starts every extension concurrently and waits until
    /// each has ended its registration window (or failed). Never fails as a
    /// whole: per-extension errors are in [`ExtensionHost::report`].
    pub async fn start(config: HostConfig) -> (Self, mpsc::UnboundedReceiver<HostEvent>) {
        let (events, rx) = mpsc::unbounded_channel();
        let trusted = config.project_trusted;
        let state = HostState {
            provider: config.provider.clone(),
            model: config.model.clone(),
            session_id: config.session_id.clone(),
            ..HostState::default()
        };
        let inner = Arc::new(Inner {
            config,
            events,
            state: Mutex::new(state),
            lifecycle: tokio::sync::Mutex::new(()),
            next_id: AtomicU64::new(1),
            project_trusted: std::sync::atomic::AtomicBool::new(trusted),
            questions: QuestionClock::new(),
            plan: std::sync::atomic::AtomicBool::new(false),
            entries: Mutex::new(Vec::new()),
        });
        {
            let _guard = inner.lifecycle.lock().await;
            inner.load().await;
        }
        (Self { inner }, rx)
    }

    pub fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    /// Every discovered extension directory, in load order, with its state.
    pub fn report(&self) -> Vec<ExtensionReport> {
        let state = self.inner.state();
        state
            .found
            .iter()
            .map(|(found, outcome)| report_entry(&self.inner.config, found, outcome.as_ref()))
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

    /// The session id nimlet extensions get from now on (in `initialize` after a
    /// reload, and in event payloads).
    pub fn set_session_id(&self, session_id: &str) {
        self.inner.state().session_id = session_id.to_owned();
    }

    /// Plan mode on or off: in plan mode nimlet extensions get no lifecycle events.
    pub fn set_plan(&self, plan: bool) {
        self.inner.plan.store(plan, Ordering::SeqCst);
    }

    /// nimlet `entry` data recorded since the last call, for the session file.
    pub fn take_entries(&self) -> Vec<(String, serde_json::Value)> {
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

    /// Tells extensions loaded from now on (and prompt preparation) about a model change.
    pub fn set_model(&self, provider: &str, model: &str) {
        let mut state = self.inner.state();
        state.provider = provider.to_owned();
        state.model = model.to_owned();
    }

    /// Stops every extension, re-reads the manifests (same `--ext` paths,
    /// same `--no-ext`), and starts them again.
    pub async fn reload(&self) -> ReloadStats {
        let _guard = self.inner.lifecycle.lock().await;
        let stopped = self.inner.stop(&self.inner.extensions()).await;
        {
            let mut state = self.inner.state();
            state.found.clear();
            state.extensions.clear();
            state.conflicts.clear();
            state.activated.clear();
        }
        let mut stats = self.inner.load().await;
        stats.stopped = stopped;
        self.inner.emit(HostEvent::ToolsChanged);
        self.inner.emit(HostEvent::CommandsChanged);
        stats
    }

    /// Restarts the running extensions of one protocol from the same
    /// manifests, leaving the others running: a session switch restarts
    /// nimlet extensions with a fresh `initialize` (nimlet spec) while zot
    /// extensions keep their state.
    pub async fn restart(&self, dialect: Dialect) -> ReloadStats {
        let _guard = self.inner.lifecycle.lock().await;
        let running: Vec<Arc<Extension>> = self
            .inner
            .extensions()
            .into_iter()
            .filter(|e| e.dialect == dialect)
            .collect();
        let stopped = self.inner.stop(&running).await;
        let manifests: Vec<(usize, Manifest)> = {
            let mut state = self.inner.state();
            let names: Vec<String> = running.iter().map(|e| e.name.clone()).collect();
            state.extensions.retain(|e| e.dialect != dialect);
            state.conflicts.retain(|c| {
                !names.contains(&c.loser)
                    && !matches!(&c.winner, Owner::Extension(w) if names.contains(w))
            });
            state
                .found
                .iter()
                .enumerate()
                .filter_map(|(order, (found, _))| match &found.status {
                    FoundStatus::Load(m) if m.dialect() == Some(dialect) => {
                        Some((order, m.clone()))
                    }
                    _ => None,
                })
                .collect()
        };
        let loads = manifests
            .iter()
            .map(|(order, manifest)| self.inner.load_one(*order, manifest));
        let outcomes = join_all(loads).await;
        let mut stats = self.inner.record_outcomes(outcomes);
        stats.stopped = stopped;
        self.inner.emit(HostEvent::ToolsChanged);
        self.inner.emit(HostEvent::CommandsChanged);
        stats
    }

    /// Stops every extension: queued frames are written, then `shutdown`,
    /// then stdin is closed; all share one grace period, then SIGTERM and
    /// SIGKILL go to each holdout's process group. Returns how many were running.
    pub async fn shutdown(&self) -> usize {
        let _guard = self.inner.lifecycle.lock().await;
        self.inner.stop(&self.inner.extensions()).await
    }
}

impl Inner {
    pub(crate) fn state(&self) -> MutexGuard<'_, HostState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn live<'a>(&'a self, state: &'a HostState) -> Live<'a> {
        Live {
            extensions: &state.extensions,
            builtin_commands: &self.config.builtin_commands,
            builtin_tools: &self.config.builtin_tools,
        }
    }

    pub(crate) fn emit(&self, event: HostEvent) {
        let _ = self.events.send(event);
    }

    /// A request id unique across every extension of this host.
    pub(crate) fn next_id(&self) -> String {
        self.next_id.fetch_add(1, Ordering::Relaxed).to_string()
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

    /// A nimlet request: the extension's own timeout (none when `null`),
    /// suspended while a question is pending and restarted by each answer.
    pub(crate) async fn nimlet_request(
        &self,
        ext: &Extension,
        id: &str,
        frame: &NimletFrame,
    ) -> Result<zot_protocol::nimlet::Response, crate::connection::RequestError> {
        use crate::connection::{Reply, RequestError};
        let start = Instant::now();
        let request = ext.conn.request(id, frame, None);
        tokio::pin!(request);
        loop {
            let wake = ext.timeout.map(|t| {
                self.questions
                    .deadline(start, t)
                    .unwrap_or(Instant::now() + QUESTION_POLL)
            });
            let outcome = match wake {
                None => request.as_mut().await,
                Some(at) => tokio::select! {
                    outcome = request.as_mut() => outcome,
                    () = tokio::time::sleep_until(at) => {
                        let timeout = ext.timeout.unwrap_or_default();
                        if self.questions.deadline(start, timeout).is_some_and(|d| Instant::now() >= d) {
                            return Err(RequestError::Timeout(timeout));
                        }
                        continue;
                    }
                },
            };
            return match outcome? {
                Reply::Nimlet(response) => Ok(*response),
                Reply::Zot(frame) => Err(RequestError::Malformed(format!(
                    "unexpected {} reply",
                    frame.type_name()
                ))),
            };
        }
    }

    /// Queues nimlet `entry` data for the session and tells the front ends.
    pub(crate) fn record_entry(&self, extension: &str, data: serde_json::Value) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((extension.to_owned(), data.clone()));
        self.emit(HostEvent::Entry {
            extension: extension.to_owned(),
            data,
        });
    }

    /// Logs to the extension's file and tells the front ends.
    pub(crate) fn warn(&self, ext: &Extension, message: String) {
        ext.log.line(&message);
        self.emit(HostEvent::Warning {
            extension: ext.name.clone(),
            message,
        });
    }

    async fn load(self: &Arc<Self>) -> ReloadStats {
        let mut config = self.config.clone();
        config.project_trusted = self.project_trusted.load(Ordering::SeqCst);
        let found = discover(&config);
        self.state().found = found.iter().map(|f| (f.clone(), None)).collect();
        let loads = found
            .iter()
            .enumerate()
            .filter_map(|(order, f)| match &f.status {
                FoundStatus::Load(manifest) => Some(self.load_one(order, manifest)),
                _ => None,
            });
        let outcomes = join_all(loads).await;
        self.record_outcomes(outcomes)
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
                slot.1 = Some(outcome);
            }
        }
        stats
    }

    /// Spawns, handshakes and waits out the registration window of one extension.
    async fn load_one(self: &Arc<Self>, order: usize, manifest: &Manifest) -> (usize, LoadOutcome) {
        (order, self.try_load(order, manifest).await)
    }

    async fn try_load(
        self: &Arc<Self>,
        order: usize,
        manifest: &Manifest,
    ) -> Result<Arc<Extension>, LoadError> {
        let name = manifest.name.clone();
        let log_path = self.config.log_path(&name);
        let dir = std::path::absolute(&manifest.dir).unwrap_or_else(|_| manifest.dir.clone());
        let error = |kind: LoadErrorKind, status: Option<String>| LoadError {
            extension: name.clone(),
            dir: dir.clone(),
            kind,
            status,
            log: log_path.clone(),
        };
        let (program, args, cwd, dialect, timeout) = match &manifest.launch {
            Launch::Process { exec, args } => (
                resolve_exec(&dir, exec),
                args.clone(),
                dir.clone(),
                Dialect::Zot,
                None,
            ),
            // nimlet: argv verbatim after command[0]; the cwd is the workspace (research E3, E4).
            Launch::Nimlet { command, timeout } => match command.split_first() {
                Some((first, rest)) => (
                    resolve_nimlet(&dir, first),
                    rest.to_vec(),
                    self.cwd(),
                    Dialect::Nimlet,
                    *timeout,
                ),
                None => {
                    let kind = LoadErrorKind::Spawn {
                        program: String::new(),
                        error: "empty command".into(),
                    };
                    return Err(error(kind, None));
                }
            },
            _ => {
                let kind = LoadErrorKind::Spawn {
                    program: String::new(),
                    error: "manifest has no exec".into(),
                };
                return Err(error(kind, None));
            }
        };
        let log = ExtLog::open(&log_path, &name, manifest.version.as_deref())
            .map(Arc::new)
            .map_err(|e| error(LoadErrorKind::Log(e.to_string()), None))?;
        for warning in &manifest.warnings {
            log.line(warning);
            self.emit(HostEvent::Warning {
                extension: name.clone(),
                message: warning.clone(),
            });
        }
        let spawned = log
            .stderr_handle()
            .and_then(|stderr| Process::spawn(&program, &args, &cwd, stderr))
            .map_err(|e| {
                let kind = LoadErrorKind::Spawn {
                    program: program.display().to_string(),
                    error: e.to_string(),
                };
                log.line(&kind);
                error(kind, None)
            })?;
        let process = spawned.process;
        let limits = self.config.limits;
        let mut reader = FrameReader::new(spawned.stdout, limits.max_frame_bytes);
        let conn = Connection::new(spawned.stdin, Arc::clone(&log));

        let handshake = match dialect {
            Dialect::Zot => handshake(&mut reader, &name, limits.hello_timeout)
                .await
                .map(Opening::Hello),
            Dialect::Nimlet => {
                let session_id = self.state().session_id.clone();
                conn.send(&NimletFrame::Initialize {
                    version: zot_protocol::nimlet::VERSION,
                    workspace: self.cwd().display().to_string(),
                    session_id,
                });
                // Never longer than the host's hello deadline, even with a null timeout.
                let wait = timeout.map_or(limits.hello_timeout, |t| t.min(limits.hello_timeout));
                nimlet::register(&mut reader, &name, wait)
                    .await
                    .map(Opening::Register)
            }
        };
        let opening = match handshake {
            Ok(opening) => opening,
            Err(e) => {
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
                let err = error(e.into(), Some(describe(status)));
                log.line(format_args!("failed to load: {}", err.kind));
                log.line(format_args!("process: {}", describe(status)));
                return Err(err);
            }
        };

        let ext = Arc::new(Extension::new(
            name, order, log, conn, process, dialect, timeout,
        ));
        {
            let mut state = self.state();
            let at = state.extensions.partition_point(|e| e.order < order);
            state.extensions.insert(at, Arc::clone(&ext));
        }
        match opening {
            Opening::Hello(hello) => {
                match &hello.version {
                    Some(version) => ext
                        .log
                        .line(format_args!("hello from {}/{version}", hello.name)),
                    None => ext.log.line(format_args!("hello from {}", hello.name)),
                }
                let ack = {
                    let state = self.state();
                    HostFrame::HelloAck(HelloAck {
                        protocol_version: PROTOCOL_VERSION,
                        zot_version: self.config.zot_version.clone(),
                        provider: state.provider.clone(),
                        model: state.model.clone(),
                        cwd: self.cwd().display().to_string(),
                        extension_dir: dir.display().to_string(),
                        data_dir: dir.display().to_string(),
                    })
                };
                ext.conn.send(&ack);
            }
            Opening::Register(registration) => {
                ext.log.line("registered (nimlet protocol)");
                ext.registrations().events.extend(registration.events);
                for command in registration.commands {
                    self.add_command(&ext, command);
                }
                for tool in registration.tools {
                    self.add_tool(&ext, tool);
                }
                ext.set_readiness(Readiness::Ready);
            }
        }
        tokio::spawn(run_reader(
            Arc::clone(&ext),
            Arc::downgrade(self),
            reader,
            limits,
        ));
        ext.wait_ready().await;
        Ok(ext)
    }

    pub(crate) fn cwd(&self) -> PathBuf {
        std::path::absolute(&self.config.cwd).unwrap_or_else(|_| self.config.cwd.clone())
    }

    /// Stops `running` together under one grace period; returns how many.
    async fn stop(&self, running: &[Arc<Extension>]) -> usize {
        let deadline = Instant::now() + self.config.limits.shutdown_grace;
        join_all(
            running
                .iter()
                .map(|ext| ext.stop(deadline, &self.config.limits)),
        )
        .await;
        running.len()
    }

    /// Records a command; logs and records any shadowing it causes.
    pub(crate) fn add_command(&self, ext: &Extension, cmd: CommandInfo) {
        let name = cmd.name.clone();
        let added = push_new(&mut ext.registrations().commands, cmd, |c| {
            c.name.eq_ignore_ascii_case(&name)
        });
        self.registered(ext, NameKind::Command, &name, added, true);
    }

    /// Records a tool; logs and records any shadowing it causes.
    pub(crate) fn add_tool(&self, ext: &Extension, tool: ToolInfo) {
        let (name, visible) = (tool.name.clone(), !tool.deferred);
        let added = push_new(&mut ext.registrations().tools, tool, |t| t.name == name);
        self.registered(ext, NameKind::Tool, &name, added, visible);
    }

    /// After a registration: conflicts, and a change event once the
    /// extension is past its registration window.
    fn registered(&self, ext: &Extension, kind: NameKind, name: &str, added: bool, visible: bool) {
        if !added {
            ext.log.line(format_args!(
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
            loser.log.line(format_args!(
                "{what} is shadowed by {winner}; it will not be used"
            ));
            // nimlet warns about a tool named like a built-in (its spec); zot stays silent.
            if loser.dialect == Dialect::Nimlet
                && kind == NameKind::Tool
                && conflict.winner == Owner::Builtin
            {
                self.emit(HostEvent::Warning {
                    extension: loser.name.clone(),
                    message: format!(
                        "extension tool '{}' collides with a built-in tool; skipped",
                        conflict.name
                    ),
                });
            }
            if !state.conflicts.contains(&conflict) {
                state.conflicts.push(conflict);
            }
        }
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
    /// now. (Reader tasks still hold the records, so `Process::drop` alone
    /// would come too late.)
    fn drop(&mut self) {
        for ext in self.state().extensions.drain(..) {
            ext.process.kill_now();
        }
    }
}

/// `command /x` or `tool "x"`, for log lines.
fn describe_name(kind: NameKind, name: &str) -> String {
    match kind {
        NameKind::Command => format!("command /{name}"),
        NameKind::Tool => format!("tool \"{name}\""),
    }
}

/// Appends `item` unless `same` matches an existing one; returns whether it was added.
fn push_new<T>(items: &mut Vec<T>, item: T, same: impl Fn(&T) -> bool) -> bool {
    let new = !items.iter().any(same);
    if new {
        items.push(item);
    }
    new
}

fn report_entry(
    config: &HostConfig,
    found: &Found,
    outcome: Option<&LoadOutcome>,
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
            ReportStatus::Loaded(LoadedInfo {
                pid: ext.process.pid(),
                readiness: ext.readiness(),
                running: ext.is_alive(),
                exit: ext.process.status().map(|s| s.to_string()),
                commands: regs.commands.clone(),
                tools: regs.tools.clone(),
                events: regs.events.iter().cloned().collect(),
                intercepts: regs.intercepts.iter().cloned().collect(),
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
        status,
        dialect: found.dialect,
    }
}
