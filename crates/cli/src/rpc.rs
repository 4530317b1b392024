//! `zot rpc`: the agent over newline-delimited JSON on stdin/stdout.
//! Requests `{"id"?, "type": command, …}` get `{"type":"response", "command",
//! "success", "id"?, "data"?|"error"?}`; agent and extension events stream
//! on the same stdout as they happen. Malformed lines get an error response
//! and the server keeps serving; it exits at stdin EOF once work is done.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufRead, BufReader};
use tokio::sync::{Mutex, OwnedMutexGuard, mpsc};
use zot_core::CancellationToken;
use zot_core::agent::Agent;
use zot_core::message::Block;
use zot_core::models;
use zot_core::provider::Provider;
use zot_core::session::{Session, index};
use zot_extensions::ExtensionHost;
use zot_extensions::zot_protocol::events::{
    CommandEntry, CommandSource, Data, Event, EventLine, ModelInfo, ModelPrice, Response,
};
use zot_extensions::zot_protocol::rpc::{Envelope, Image, Request};
use zot_extensions::zot_protocol::ui::{BUILTIN_COMMANDS, CommandOrigin};

use crate::args::{AgentArgs, Mode};
use crate::commands::Commands;
use crate::context::Context;
use crate::lines::{Line, LineReader};
use crate::oneshot::{load_error_event, manifest_error_event, spawn_writer};
use crate::run as setup;
use crate::slash::{self, Resolved};

/// The env var that, when set, makes every frame before a matching `hello` fail.
pub const TOKEN_ENV: &str = "ZOTCORE_RPC_TOKEN";

/// Longest request line accepted (research zot.md §1.2: 16 MiB).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Most prompts waiting behind the running one (unbounded, 100,000 queued
/// prompts of 10 KB took 1.72 GB). Further prompts are refused, each with an
/// error, until the queue drains; no client has a reason to queue more.
pub const MAX_QUEUED_PROMPTS: usize = 1000;

/// The error of a tree request in a run without a session file.
const NO_SESSION: &str =
    "this run keeps no session file (start zot rpc with -c, --resume=ID or --session PATH)";

struct Server {
    agent: Arc<Mutex<Agent>>,
    host: ExtensionHost,
    commands: Commands,
    out: mpsc::UnboundedSender<EventLine>,
    /// Prompts and compactions in the order they came, the one running (or
    /// about to) first; each leaves when done. `abort` cancels the first,
    /// `abort {"queue": true}` also takes the others out.
    line: std::sync::Mutex<std::collections::VecDeque<Waiting>>,
    /// The number the next piece of work gets in `line`.
    next_work: std::sync::atomic::AtomicU64,
    busy: Arc<std::sync::atomic::AtomicUsize>,
    cwd: String,
    /// Releases the work a request just spawned, once its response is written,
    /// so the response always comes before the work's events.
    gate: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// The agent's work, run one job at a time in the order it came:
    /// prompts, compactions, and the requests that need the agent while
    /// work holds it. `None` once stdin has ended.
    jobs: std::sync::Mutex<Option<mpsc::UnboundedSender<Job>>>,
    /// Jobs sent and not yet done (at most twice [`MAX_QUEUED_PROMPTS`]:
    /// the prompts, and as many requests waiting for the agent).
    pending: Arc<std::sync::atomic::AtomicUsize>,
    /// The agent's state as of its last change, for `get_state` while
    /// running work holds the agent.
    last: std::sync::Mutex<Snapshot>,
    /// No key: what a request that would call the model answers (until
    /// `set_model` switches to a provider that has one).
    missing_credentials: std::sync::Mutex<Option<String>>,
    /// Where `set_model` with `save` writes (`None` in tests that save nothing).
    zot_home: Option<std::path::PathBuf>,
    /// The provider the session started with, as the flags set it up, and
    /// what a prompt to it answers when it had no key.
    start: (zot_core::provider::ProviderConfig, Option<String>),
}

/// One piece of the agent's work (see [`Server::jobs`]).
type Job = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A prompt or compaction waiting its turn (or running, first in line).
struct Waiting {
    id: u64,
    /// A prompt's text, which `abort {"queue": true}` gives back.
    prompt: Option<String>,
    cancel: CancellationToken,
}

/// What `get_state` reports about the agent.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    provider: String,
    model: String,
    message_count: usize,
    usage: zot_core::event::UsageReport,
}

impl Snapshot {
    fn of(agent: &Agent) -> Self {
        Self {
            provider: agent.provider().name().to_owned(),
            model: agent.config().model.clone(),
            message_count: agent.messages().len(),
            usage: agent.usage(),
        }
    }
}

pub fn run(args: &AgentArgs, ctx: &Context) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let running = setup::start(args, ctx, Mode::Rpc).await?;
        let (out, writer) = spawn_writer();
        let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
        let input = BufReader::new(tokio::io::stdin());
        let code = serve(
            running,
            &ctx.project,
            Some(&ctx.zot_home),
            token,
            input,
            out,
        )
        .await;
        let _ = writer.await;
        Ok(code)
    })
}

/// Serves requests from `input` until it ends (then waits for running
/// work), writing every response and event to `out`. With `token`, every
/// request before a `hello` carrying it fails.
pub async fn serve(
    running: setup::Running,
    project: &std::path::Path,
    zot_home: Option<&std::path::Path>,
    token: Option<String>,
    input: impl AsyncBufRead + Unpin,
    out: mpsc::UnboundedSender<EventLine>,
) -> ExitCode {
    for error in &running.load_errors {
        let _ = out.send(load_error_event(error).into());
    }
    for error in &running.manifest_errors {
        let _ = out.send(manifest_error_event(error).into());
    }
    let mut host_events = running.host_events;
    let host_out = out.clone();
    let host_task = tokio::spawn(async move {
        while let Some(event) = host_events.recv().await {
            if let Some(line) = Event::from_host(&event) {
                let _ = host_out.send(line.into());
            }
        }
    });
    let last = std::sync::Mutex::new(Snapshot::of(&running.agent));
    let start = (
        running.agent.provider().config().clone(),
        running.missing_credentials.clone(),
    );
    let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
    let pending: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
    let done = Arc::clone(&pending);
    let worker = tokio::spawn(async move {
        while let Some(job) = queue.recv().await {
            // A task of its own: a job that panics ends alone, and the
            // jobs behind it still run.
            let _ = tokio::spawn(job).await;
            done.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let server = Arc::new(Server {
        last,
        missing_credentials: std::sync::Mutex::new(running.missing_credentials),
        zot_home: zot_home.map(std::path::Path::to_path_buf),
        start,
        agent: Arc::new(Mutex::new(running.agent)),
        host: running.host,
        commands: running.commands,
        out,
        line: std::sync::Mutex::default(),
        next_work: std::sync::atomic::AtomicU64::new(0),
        busy: Arc::default(),
        cwd: project.display().to_string(),
        jobs: std::sync::Mutex::new(Some(jobs)),
        pending,
        gate: std::sync::Mutex::new(None),
    });
    let code = serve_lines(&server, token, input).await;
    // Stdin ended: the work sent so far still runs, then the worker ends.
    server
        .jobs
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let _ = worker.await;
    server.host.session_ended().await;
    server.host.shutdown().await;
    drop(server);
    host_task.abort();
    code
}

async fn serve_lines(
    server: &Arc<Server>,
    token: Option<String>,
    input: impl AsyncBufRead + Unpin,
) -> ExitCode {
    let mut authed = token.is_none();
    let mut lines = LineReader::new(input, MAX_LINE_BYTES);
    loop {
        let line = match lines.next().await {
            Ok(Some(Line::Text(line))) => line,
            Ok(Some(Line::TooLong(_))) => {
                server.respond(
                    "",
                    None,
                    Err(format!("line longer than {MAX_LINE_BYTES} bytes")),
                );
                continue;
            }
            Ok(None) => return ExitCode::SUCCESS,
            Err(e) => {
                server.respond("", None, Err(format!("cannot read stdin: {e}")));
                return ExitCode::FAILURE;
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let envelope = match Envelope::parse(&line) {
            Ok(envelope) => envelope,
            Err(problem) => {
                server.respond("", None, Err(problem));
                continue;
            }
        };
        let Envelope {
            id,
            command,
            request,
        } = envelope;
        if let Ok(Request::Hello { token: given }) = &request {
            if token
                .as_deref()
                .is_some_and(|t| Some(t) != given.as_deref())
            {
                server.respond(&command, id, Err("invalid token".into()));
                return ExitCode::FAILURE;
            }
            authed = true;
        } else if !authed {
            server.respond(
                &command,
                id,
                Err("auth required: send hello with token first".into()),
            );
            continue;
        }
        let result = match request {
            // Work holds the agent, or waits for it: this request's turn
            // comes after that work, and the reading goes on meanwhile (an
            // `abort` must get through).
            Ok(request) if needs_agent(&request) && server.jobs() > 0 => {
                if server.jobs() > MAX_QUEUED_PROMPTS * 2 {
                    let busy = format!(
                        "{} requests are waiting for the agent; send more once some are answered (or abort)",
                        server.jobs()
                    );
                    server.respond(&command, id, Err(busy));
                    continue;
                }
                let for_job = Arc::clone(server);
                server.queue(Box::pin(async move {
                    let result = Arc::clone(&for_job).handle(request).await;
                    for_job.respond(&command, id, result);
                }));
                continue;
            }
            Ok(request) => Arc::clone(server).handle(request).await,
            Err(problem) => Err(problem),
        };
        server.respond(&command, id, result);
        if let Some(go) = server
            .gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            let _ = go.send(());
        }
    }
}

impl Server {
    fn respond(&self, command: &str, id: Option<Value>, result: Result<Option<Data>, String>) {
        let (data, error) = match result {
            Ok(data) => (data, None),
            Err(error) => (None, Some(error)),
        };
        let _ = self.out.send(EventLine::from(Event::Response(Response {
            command: command.to_owned(),
            success: error.is_none(),
            data,
            error,
            id,
        })));
    }

    fn event(&self, event: impl Into<EventLine>) {
        let _ = self.out.send(event.into());
    }

    fn remember(&self, agent: &Agent) {
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Snapshot::of(agent);
    }

    /// `set_model`: the model, and with `provider` the provider too (its
    /// own base URL and key; the transcript is kept, its thinking is not sent
    /// to another provider).
    async fn set_model(
        &self,
        model: String,
        provider: Option<String>,
        save: bool,
    ) -> Result<Data, String> {
        if model.trim().is_empty() {
            return Err("set_model needs a model id, not an empty \"model\"".into());
        }
        let mut agent = self.agent.lock().await;
        let current = agent.provider().config().clone();
        let (config, missing) = match &provider {
            Some(name) if *name == self.start.0.name && *name != current.name => self.start.clone(),
            Some(name) if *name != current.name => {
                let Some(zot_home) = &self.zot_home else {
                    return Err("cannot switch provider: no $ZOT_HOME".into());
                };
                crate::run::switch_provider(zot_home, name, &self.start.0)
                    .map_err(|e| format!("{e:#}"))?
            }
            _ => (current, self.missing()),
        };
        // A model outside the table (a newer one, a proxy's or a local
        // server's) is taken: the provider answers whether it exists. The
        // note says what zot cannot know about it.
        let known = models::of(&config, &model).known();
        let note = (!known).then(|| {
            format!(
                "\"{model}\" is not in zot's {} model table: it is sent as it is \
                 (the provider says whether it exists), with a {} token context window \
                 and {} token output limit assumed, and its calls are not priced",
                config.name,
                models::UNKNOWN_CONTEXT_WINDOW,
                models::UNKNOWN_MAX_OUTPUT
            )
        });
        let name = config.name.clone();
        agent.set_model(Provider::new(config), model.clone());
        *self
            .missing_credentials
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = missing;
        self.remember(&agent);
        self.host.set_model(&name, &model);
        // Only on request: an IDE switching models per session must not
        // rewrite the user's file.
        if save {
            let Some(zot_home) = &self.zot_home else {
                return Err("cannot save: no $ZOT_HOME".into());
            };
            crate::config::save_model(
                zot_home,
                provider.is_some().then_some(name.as_str()),
                &model,
            )
            .map_err(|e| format!("model switched but not saved: {e:#}"))?;
        }
        Ok(Data::ModelSet {
            model,
            provider: name,
            known,
            note,
        })
    }

    fn missing(&self) -> Option<String> {
        self.missing_credentials
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn snapshot(&self) -> Snapshot {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn is_busy(&self) -> bool {
        self.busy.load(std::sync::atomic::Ordering::SeqCst) > 0
    }

    fn line(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<Waiting>> {
        self.line
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `work` in the background with a fresh cancellation token, once
    /// it holds the agent; work items run one after another in the order
    /// they came (see [`Server::jobs`], [`Server::line`]). `prompt` is a prompt's text.
    /// `finish` (e.g. `done`) is written once the work has let go of the
    /// agent and is no longer counted as busy, so a client that reacts to it
    /// with `get_state` sees an idle agent.
    fn spawn<F>(
        self: &Arc<Self>,
        finish: Option<Event>,
        prompt: Option<String>,
        work: impl FnOnce(Arc<Self>, OwnedMutexGuard<Agent>, CancellationToken) -> F + Send + 'static,
    ) where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let cancel = CancellationToken::new();
        let id = self
            .next_work
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.line().push_back(Waiting {
            id,
            prompt,
            cancel: cancel.clone(),
        });
        self.busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let server = Arc::clone(self);
        let (go, ready) = tokio::sync::oneshot::channel();
        *self
            .gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(go);
        self.queue(Box::pin(async move {
            let _ = ready.await;
            let agent = Arc::clone(&server.agent).lock_owned().await;
            // Taken out of the line by `abort {"queue": true}`: it never runs.
            let dropped = !server.line().iter().any(|w| w.id == id);
            if !dropped {
                work(Arc::clone(&server), agent, cancel).await;
                server.line().retain(|w| w.id != id);
            }
            server
                .busy
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            if let Some(finish) = finish.filter(|_| !dropped) {
                let _ = server.out.send(finish.into());
            }
        }));
    }

    /// Sends `job` to the worker, behind every job sent before it.
    fn queue(&self, job: Job) {
        self.pending
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Some(jobs) = &*self
            .jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            let _ = jobs.send(job);
        }
    }

    /// How many jobs the worker has (running or waiting).
    fn jobs(&self) -> usize {
        self.pending.load(std::sync::atomic::Ordering::SeqCst)
    }

    async fn handle(self: Arc<Self>, request: Request) -> Result<Option<Data>, String> {
        let data = match request {
            Request::Hello { .. } => {
                let agent = self.agent.lock().await;
                Data::Hello {
                    protocol_version: 1,
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    provider: agent.provider().name().to_owned(),
                    model: agent.config().model.clone(),
                }
            }
            Request::Ping => Data::Pong { pong: true },
            Request::Prompt { message, images } => {
                // Work counted as busy: the running item and those waiting.
                let waiting = self
                    .busy
                    .load(std::sync::atomic::Ordering::SeqCst)
                    .saturating_sub(1);
                if waiting >= MAX_QUEUED_PROMPTS {
                    return Err(format!(
                        "{MAX_QUEUED_PROMPTS} prompts are already waiting; send more once some have run (or abort)"
                    ));
                }
                let text = message.clone();
                let content = prompt_content(message, images)?;
                self.spawn(Some(Event::Done), Some(text), |server, agent, cancel| {
                    server.prompt(agent, content, cancel)
                });
                Data::Started { started: true }
            }
            Request::Abort { queue } => {
                let mut line = self.line();
                if let Some(running) = line.front() {
                    running.cancel.cancel();
                }
                if !queue {
                    return Ok(None);
                }
                let behind = line.len().min(1)..;
                let dropped = line.drain(behind).filter_map(|w| w.prompt).collect();
                Data::Aborted { dropped }
            }
            Request::Compact => {
                if let Some(missing) = self.missing() {
                    return Err(missing);
                }
                self.spawn(None, None, |server, mut agent, cancel| async move {
                    let (events, mut rx) = mpsc::unbounded_channel();
                    let result = agent.compact_now(&events, &cancel).await;
                    server.remember(&agent);
                    drop(events);
                    while let Some(event) = rx.recv().await {
                        server.event(event.to_line());
                    }
                    if let Err(e) = result {
                        server.event(Event::Error {
                            message: e.to_string(),
                        });
                    }
                });
                Data::Started { started: true }
            }
            Request::GetState => {
                let busy = self.is_busy();
                // Running work holds the agent: report it as of its last change.
                let agent = self.agent.try_lock();
                if let Ok(agent) = &agent {
                    self.remember(agent);
                }
                let last = self.snapshot();
                Data::State {
                    provider: last.provider,
                    model: last.model,
                    cwd: self.cwd.clone(),
                    message_count: last.message_count,
                    busy: busy || agent.is_err(),
                    usage: last.usage.into(),
                }
            }
            Request::GetMessages => {
                let agent = self.agent.lock().await;
                let messages = agent
                    .messages()
                    .iter()
                    .filter_map(|m| serde_json::to_value(m).ok())
                    .collect();
                Data::Messages { messages }
            }
            Request::Clear => {
                let mut agent = self.agent.lock().await;
                let cleared = agent.clear().await;
                self.remember(&agent);
                cleared.map_err(|e| format!("cannot start a new session: {e}"))?;
                return Ok(None);
            }
            Request::ListSessions { all } => {
                let zot_home = self.zot_home.as_deref().ok_or("no $ZOT_HOME")?;
                let cwd = (!all).then(|| std::path::Path::new(&self.cwd));
                let sessions = index::list(zot_home, cwd).map_err(|e| e.to_string())?;
                Data::Sessions { sessions }
            }
            Request::SwitchSession { session_id } => {
                let zot_home = self.zot_home.as_deref().ok_or("no $ZOT_HOME")?;
                let found = index::find(zot_home, &session_id).map_err(|e| e.to_string())?;
                let session =
                    Session::open(std::path::Path::new(&found.path)).map_err(|e| e.to_string())?;
                for warning in session.warnings() {
                    self.event(Event::Error {
                        message: warning.clone(),
                    });
                }
                let mut agent = self.agent.lock().await;
                agent.switch_session(session).await;
                self.remember(&agent);
                Data::Switched {
                    session_id: found.id,
                    message_count: agent.messages().len(),
                }
            }
            Request::GetTree => {
                let agent = self.agent.lock().await;
                let session = agent.session().ok_or(NO_SESSION)?;
                Data::Tree {
                    session_id: session.id().to_owned(),
                    leaf_id: session.leaf_id().map(str::to_owned),
                    entries: session.entries(),
                }
            }
            Request::Fork { entry_id } => {
                let mut agent = self.agent.lock().await;
                let text = agent.fork_before(&entry_id).map_err(|e| e.to_string())?;
                self.remember(&agent);
                Data::Forked {
                    leaf_id: agent.session().and_then(|s| s.leaf_id()).map(str::to_owned),
                    text,
                }
            }
            Request::GetCheckpoints => {
                let agent = self.agent.lock().await;
                let session = agent.session().ok_or(NO_SESSION)?;
                Data::Checkpoints {
                    checkpoints: zot_core::checkpoint::prompts(session),
                }
            }
            Request::Rewind {
                entry_id,
                code,
                conversation,
                force,
            } => {
                let mut agent = self.agent.lock().await;
                let rewound =
                    zot_core::checkpoint::rewind(&mut agent, &entry_id, code, conversation, force)
                        .await
                        .map_err(|e| e.to_string())?;
                self.remember(&agent);
                Data::Rewound {
                    restored: rewound.restored,
                    conversation: rewound.conversation,
                    leaf_id: rewound.leaf_id,
                    text: rewound.text,
                }
            }
            Request::SetTitle { title } => {
                let mut agent = self.agent.lock().await;
                agent.set_title(&title).map_err(|e| e.to_string())?;
                Data::Titled {
                    title: agent.session().map(Session::title).unwrap_or_default(),
                }
            }
            Request::SetModel {
                model,
                provider,
                save,
            } => self.set_model(model, provider, save).await?,
            Request::GetModels => {
                let agent = self.agent.lock().await;
                let current = agent.provider().config().clone();
                drop(agent);
                let models =
                    crate::models_cmd::offered(self.zot_home.as_deref(), &current, &self.start.0)
                        .into_iter()
                        .map(|m| ModelInfo {
                            id: m.id,
                            provider: m.provider,
                            context_window: m.info.context_window,
                            max_output: m.info.max_output,
                            reasoning: m.info.reasoning(),
                            price: m.info.price.as_ref().map(|p| ModelPrice {
                                input: p.base.input,
                                output: p.base.output,
                                cache_write: p.base.cache_write_5m,
                                cache_read: p.base.cache_read,
                            }),
                        })
                        .collect();
                Data::Models { models }
            }
            Request::GetCommands => {
                let builtins = BUILTIN_COMMANDS
                    .iter()
                    .map(|(name, description)| CommandEntry {
                        name: (*name).to_owned(),
                        description: Some((*description).to_owned()),
                        source: CommandSource::Builtin,
                        extension: None,
                        argument_hint: None,
                        scope: None,
                        path: None,
                    });
                let others = self.commands.list().into_iter().map(|c| {
                    let (source, extension, scope, path) = match c.origin {
                        CommandOrigin::Extension => {
                            (CommandSource::Extension, Some(c.extension), None, None)
                        }
                        CommandOrigin::Markdown { path } => (
                            CommandSource::Markdown,
                            None,
                            Some(c.extension),
                            Some(path.display().to_string()),
                        ),
                    };
                    CommandEntry {
                        name: c.name,
                        description: c.description,
                        source,
                        extension,
                        argument_hint: c.argument_hint,
                        scope,
                        path,
                    }
                });
                Data::Commands {
                    commands: builtins.chain(others).collect(),
                }
            }
            Request::ReloadExtensions => {
                let stats = self.host.reload().await;
                for skipped in self.commands.reload_markdown() {
                    self.event(Event::ExtWarning {
                        extension: None,
                        message: format!("Markdown command {skipped}"),
                    });
                }
                self.agent.lock().await.reset_system_prompt();
                for error in &stats.errors {
                    self.event(load_error_event(error));
                }
                let summary = stats.summary();
                Data::Reloaded {
                    stopped: summary.stopped,
                    loaded: summary.loaded,
                    ready: summary.ready,
                    errors: summary.errors,
                }
            }
        };
        Ok(Some(data))
    }

    /// One prompt: an extension command when it names one, else a turn.
    async fn prompt(
        self: Arc<Self>,
        mut agent: OwnedMutexGuard<Agent>,
        content: Vec<Block>,
        cancel: CancellationToken,
    ) {
        let mut content = content;
        // Expanding a Markdown command may run shell commands: `abort` stops them.
        let typed = first_text(&content);
        let resolved = tokio::select! {
            resolved = slash::resolve(&self.commands, &typed) => resolved,
            () = cancel.cancelled() => Err("aborted".to_owned()),
        };
        match resolved {
            Err(e) => return self.finish_with_error(e),
            Ok(Resolved::Unchanged) => {}
            Ok(Resolved::Prompt(p)) => content = vec![Block::Text { text: p }],
            Ok(Resolved::Done) => return,
            Ok(Resolved::Display {
                extension,
                command,
                text,
            }) => {
                return self.event(Event::ExtDisplay {
                    extension,
                    command,
                    text,
                });
            }
        }
        // Credentials are checked here, when the model is about to be called.
        if let Some(missing) = self.missing() {
            return self.finish_with_error(missing);
        }
        let (events, mut rx) = mpsc::unbounded_channel();
        let out = self.out.clone();
        let forward = tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                // `done` is written by `spawn` once the agent is free again.
                if matches!(event, zot_core::AgentEvent::Done) {
                    continue;
                }
                let _ = out.send(event.to_line());
            }
        });
        // A failed prompt has emitted turn_end and error; `spawn` still ends it with done.
        let _ = agent.prompt(content, &events, &cancel).await;
        self.remember(&agent);
        drop(events);
        let _ = forward.await;
    }

    fn finish_with_error(&self, message: String) {
        self.event(Event::Error { message });
    }
}

fn first_text(content: &[Block]) -> String {
    content
        .iter()
        .find_map(|b| match b {
            Block::Text { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn prompt_content(message: String, images: Vec<Image>) -> Result<Vec<Block>, String> {
    let mut content = Vec::new();
    if !message.trim().is_empty() {
        content.push(Block::Text { text: message });
    }
    for (i, image) in images.into_iter().enumerate() {
        let block = zot_core::image::from_base64(&image.data)
            .map_err(|why| format!("images[{i}] ({}): {why}", image.mime_type))?;
        content.push(block);
    }
    if content.is_empty() {
        return Err("prompt needs a non-empty \"message\" or images".into());
    }
    Ok(content)
}

/// Whether `request` reads or changes the agent, so waits its turn behind
/// the agent's work; the others are answered at once, whatever runs.
fn needs_agent(request: &Request) -> bool {
    !matches!(
        request,
        Request::Ping
            | Request::Prompt { .. }
            | Request::Abort { .. }
            | Request::Compact
            | Request::GetState
            | Request::ListSessions { .. }
            | Request::GetCommands
    )
}

#[cfg(test)]
mod tests {
    use std::process::ExitCode;

    use tokio::sync::mpsc;
    use zot_extensions::zot_protocol::events::{Data, Event, Response, StopReason};
    use zot_testkit::{MockModel, anthropic};

    use crate::args::Mode;
    use crate::testing::{drain, setup};

    /// Serves `input` (one request per line) to the end; every line written.
    async fn session(
        model: &MockModel,
        token: Option<&str>,
        input: &str,
    ) -> (ExitCode, Vec<Event>) {
        let s = setup(model, Mode::Rpc).await;
        let (out, rx) = mpsc::unbounded_channel();
        let code = super::serve(
            s.running,
            &s.ctx.project,
            Some(&s.ctx.zot_home),
            token.map(str::to_owned),
            input.as_bytes(),
            out,
        )
        .await;
        (code, drain(rx).await.into_iter().map(|l| l.event).collect())
    }

    fn responses(events: &[Event]) -> Vec<&Response> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Response(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn requests_errors_and_event_order() {
        let model = MockModel::start([anthropic::text("hello there")]).await;
        let input = [
            r#"{"id":1,"type":"ping"}"#,
            "{not json",
            r#"{"id":"x","type":"teleport"}"#,
            r#"{"type":"set_model"}"#,
            r#"{"id":2,"type":"prompt","message":"hi"}"#,
        ]
        .join("\n");
        let (code, events) = session(&model, None, &input).await;
        assert_eq!(code, ExitCode::SUCCESS);
        let answers: Vec<(String, bool, Option<String>)> = responses(&events)
            .into_iter()
            .map(|r| (r.command.clone(), r.success, r.error.clone()))
            .collect();
        assert_eq!(answers[0], ("ping".into(), true, None));
        assert!(!answers[1].1 && answers[1].2.as_ref().unwrap().starts_with("malformed json"));
        assert_eq!(
            answers[2],
            ("teleport".into(), false, Some("unknown command".into()))
        );
        assert_eq!(
            answers[3],
            (
                "set_model".into(),
                false,
                Some("set_model needs \"model\" (a string), and takes \"provider\" (a string) and \"save\" (true or false): missing field `model`".into())
            )
        );
        assert_eq!(answers[4].0, "prompt");
        let Event::Response(pong) = &events[0] else {
            panic!("{:?}", events[0]);
        };
        assert_eq!(pong.data, Some(Data::Pong { pong: true }));
        assert_eq!(pong.id, Some(1.into()));

        // The prompt's response comes first, then its events in order, then done.
        let start = events
            .iter()
            .position(|e| matches!(e, Event::Response(r) if r.command == "prompt"))
            .unwrap();
        let kinds: Vec<&str> = events[start + 1..]
            .iter()
            .map(|e| match e {
                Event::UserMessage { .. } => "user_message",
                Event::TurnStart { .. } => "turn_start",
                Event::AssistantStart => "assistant_start",
                Event::TextDelta { .. } => "text_delta",
                Event::Usage { .. } => "usage",
                Event::AssistantMessage { .. } => "assistant_message",
                Event::TurnEnd {
                    stop: StopReason::EndTurn,
                    ..
                } => "turn_end",
                Event::Done => "done",
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        let mut deduped = kinds.clone();
        deduped.dedup();
        assert_eq!(
            deduped,
            [
                "user_message",
                "turn_start",
                "assistant_start",
                "text_delta",
                "usage",
                "assistant_message",
                "turn_end",
                "done"
            ]
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_token_gates_every_request_until_hello() {
        let model = MockModel::start([]).await;
        let input = [
            r#"{"type":"get_state"}"#,
            r#"{"type":"hello","token":"s3cret"}"#,
            r#"{"type":"get_state"}"#,
            r#"{"type":"hello","token":"wrong"}"#,
            r#"{"type":"ping"}"#,
        ]
        .join("\n");
        let (code, events) = session(&model, Some("s3cret"), &input).await;
        assert_eq!(code, ExitCode::FAILURE, "a wrong token ends the server");
        let answers: Vec<(&str, bool)> = responses(&events)
            .into_iter()
            .map(|r| (r.command.as_str(), r.success))
            .collect();
        assert_eq!(
            answers,
            [
                ("get_state", false),
                ("hello", true),
                ("get_state", true),
                ("hello", false)
            ],
            "nothing is served after the wrong token"
        );
        assert!(matches!(
            responses(&events)[2].data,
            Some(Data::State {
                busy: false,
                message_count: 0,
                ..
            })
        ));
    }
}
