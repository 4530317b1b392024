//! The run loop: `hello`, `hello_ack`, `on_hello` hooks, registrations, `ready`, then every host
//! frame until EOF or `shutdown`. Requests go to a worker pool (answers may come out of order),
//! events and panel input to one ordered lane; handler panics become answers, never a crash.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use zot_protocol::zot::{
    CommandInvoked, Event, EventIntercept, ExtFrame, Hello, HostFrame, Intercept,
    InterceptResponse, PanelKey, RegisterCommand, RegisterTool, Subscribe, ToolCall,
};

use crate::error::Error;
use crate::extension::{CommandFn, EventFn, Extension, Interceptors, PanelHandlers, ToolFn};
use crate::host::{Host, HostInfo};
use crate::intercept::{BeforeAgentStart, PendingToolCall, ToolCallDecision, allow};
use crate::response::Response;
use crate::tool::{ToolResult, schema_problem};

/// Largest host frame read; a longer line is skipped. zot caps frames from
/// extensions at 4 MiB (spec, "System prompt replacement"); its own frames
/// carry at most a system prompt or tool arguments, so four times that is ample.
pub const MAX_HOST_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Handlers of commands, tools and intercepts running at once; more requests
/// wait in a queue. The SDK's own choice: enough for any real host, and a
/// bound on threads if one misbehaves.
pub const MAX_CONCURRENT_HANDLERS: usize = 32;

/// How long handlers may go on finishing what arrived before `shutdown` or
/// EOF. Half of zot's 2 s shutdown grace (spec, "Lifecycle"), so
/// `shutdown_ack` still arrives in time.
pub const SHUTDOWN_DRAIN: Duration = Duration::from_secs(1);

/// How much of a malformed frame is quoted in the log.
const LOG_SNIPPET_CHARS: usize = 200;

/// Announced in `hello`. zot does not act on them; they say what the SDK can do.
const CAPABILITIES: [&str; 4] = ["commands", "tools", "events", "panels"];

/// Where host frames come from: LF-terminated lines on stdin, or one
/// WebSocket text message each. Everything after reading is shared.
pub(crate) trait FrameSource {
    /// The next well-formed frame; `None` once the host is gone.
    fn next_frame(&mut self, host: &Host) -> Result<Option<HostFrame>, Error>;
}

/// Running lives here rather than beside the builder so the builder stays a
/// plain collector that knows nothing of the wire.
impl Extension {
    /// Speaks the protocol over stdin/stdout until zot closes stdin or
    /// sends `shutdown`. Never print to stdout yourself: it is the protocol;
    /// use [`Host::log`] or stderr.
    pub fn run(self) -> Result<(), Error> {
        let stdin = BufReader::new(io::stdin());
        self.run_with(stdin, io::stdout())
    }

    /// [`run`](Extension::run) over any reader and writer, e.g. to test an
    /// extension in-process.
    pub fn run_with<R, W>(self, input: R, output: W) -> Result<(), Error>
    where
        R: BufRead,
        W: Write + Send + 'static,
    {
        run(self, Lines::new(input), Box::new(output))
    }
}

pub(crate) fn run(
    mut ext: Extension,
    mut lines: impl FrameSource,
    output: Box<dyn Write + Send>,
) -> Result<(), Error> {
    validate(&ext)?;
    let host = ext.host.clone();
    let hello = ExtFrame::Hello(Hello {
        name: ext.name.clone(),
        version: Some(ext.version.clone()).filter(|v| !v.is_empty()),
        capabilities: CAPABILITIES.iter().map(|c| (*c).to_owned()).collect(),
    });
    host.attach(output, &hello).map_err(Error::Write)?;

    let info = loop {
        match lines.next_frame(&host)? {
            Some(HostFrame::HelloAck(ack)) => break HostInfo::from(ack),
            Some(HostFrame::Shutdown) => {
                return host
                    .detach(Some(&ExtFrame::ShutdownAck))
                    .map_err(Error::Write);
            }
            Some(other) => host.log(format_args!(
                "ignored {} before hello_ack",
                frame_kind(&other)
            )),
            None => return Err(Error::NoHelloAck),
        }
    };
    host.set_info(info.clone());
    while !ext.hello_hooks.is_empty() {
        for hook in std::mem::take(&mut ext.hello_hooks) {
            ext = hook(ext, &info);
        }
    }
    validate(&ext)?;

    let (dispatch, lane) = register(ext, &host)?;
    host.try_send(&ExtFrame::Ready).map_err(Error::Write)?;
    let dispatch = Arc::new(dispatch);
    let lane = Lane::start(lane, host.clone());
    let pool = Pool::new(MAX_CONCURRENT_HANDLERS, host.clone());

    let end = loop {
        let frame = match lines.next_frame(&host) {
            Ok(Some(frame)) => frame,
            Ok(None) => break Ok(false),
            Err(e) => break Err(e),
        };
        match frame {
            HostFrame::Shutdown => break Ok(true),
            HostFrame::HelloAck(_) => host.log("ignored a second hello_ack"),
            HostFrame::CommandInvoked(call) => {
                let dispatch = Arc::clone(&dispatch);
                pool.submit(Box::new(move || dispatch.command(call)));
            }
            HostFrame::ToolCall(call) => {
                let dispatch = Arc::clone(&dispatch);
                pool.submit(Box::new(move || dispatch.tool(call)));
            }
            HostFrame::EventIntercept(request) => {
                let dispatch = Arc::clone(&dispatch);
                pool.submit(Box::new(move || dispatch.intercept(request)));
            }
            HostFrame::Event(event) => lane.push(Ordered::Event(event)),
            HostFrame::PanelKey(key) => lane.push(Ordered::PanelKey(key)),
            HostFrame::PanelClose(close) => lane.push(Ordered::PanelClose(close.panel_id)),
        }
    };
    let deadline = Instant::now() + SHUTDOWN_DRAIN;
    let answered = pool.finish(deadline);
    let handled = lane.finish(deadline);
    if !(answered && handled) {
        host.log(format_args!(
            "handlers still busy {SHUTDOWN_DRAIN:?} after the end of input; not waiting"
        ));
    }
    let shutdown = match end {
        Ok(shutdown) => shutdown,
        Err(e) => {
            let _ = host.detach(None);
            return Err(e);
        }
    };
    let last = shutdown.then_some(&ExtFrame::ShutdownAck);
    match host.detach(last) {
        Err(e) if shutdown => Err(Error::Write(e)),
        _ => Ok(()),
    }
}

/// Refuses registrations zot would reject or never deliver, before anything
/// is announced, so the mistake shows in the log instead of as silence.
fn validate(ext: &Extension) -> Result<(), Error> {
    for (event, _) in &ext.events {
        if !Event::NAMES.contains(&event.as_str()) {
            return Err(Error::UnknownEvent {
                name: event.clone(),
            });
        }
    }
    for tool in &ext.tools {
        if let Some(problem) = schema_problem(&tool.schema) {
            return Err(Error::ToolSchema {
                name: tool.name.clone(),
                problem,
            });
        }
    }
    Ok(())
}

/// Announces every registration (first of a name wins, as in zot) and
/// splits the handlers into the concurrent table and the ordered lane.
fn register(ext: Extension, host: &Host) -> Result<(Dispatch, LaneHandlers), Error> {
    let send = |frame: ExtFrame| host.try_send(&frame).map_err(Error::Write);
    let mut commands: HashMap<String, Arc<CommandFn>> = HashMap::new();
    for cmd in ext.commands {
        let key = cmd.name.to_lowercase();
        if commands.contains_key(&key) {
            host.log(format_args!(
                "command /{} registered twice; the first stays",
                cmd.name
            ));
            continue;
        }
        commands.insert(key, cmd.handler);
        send(ExtFrame::RegisterCommand(RegisterCommand {
            name: cmd.name,
            description: Some(cmd.description).filter(|d| !d.is_empty()),
        }))?;
    }
    let mut tools: HashMap<String, Arc<ToolFn>> = HashMap::new();
    for tool in ext.tools {
        if tools.contains_key(&tool.name) {
            host.log(format_args!(
                "tool \"{}\" registered twice; the first stays",
                tool.name
            ));
            continue;
        }
        tools.insert(tool.name.clone(), tool.handler);
        send(ExtFrame::RegisterTool(RegisterTool {
            name: tool.name,
            description: Some(tool.description).filter(|d| !d.is_empty()),
            schema: tool.schema,
            deferred: tool.deferred,
            read_only: tool.read_only,
        }))?;
    }
    let mut events: Vec<(String, Vec<Box<EventFn>>)> = Vec::new();
    for (name, handler) in ext.events {
        match events.iter_mut().find(|(n, _)| *n == name) {
            Some((_, handlers)) => handlers.push(handler),
            None => events.push((name, vec![handler])),
        }
    }
    let subscribe = Subscribe {
        events: events.iter().map(|(name, _)| name.clone()).collect(),
        intercept: ext.intercepts.kinds(),
    };
    if !subscribe.events.is_empty() || !subscribe.intercept.is_empty() {
        send(ExtFrame::Subscribe(subscribe))?;
    }
    let mut panels: HashMap<String, PanelHandlers> = HashMap::new();
    for (id, handlers) in ext.panels {
        if panels.contains_key(&id) {
            host.log(format_args!(
                "panel \"{id}\" has handlers twice; the first stay"
            ));
            continue;
        }
        panels.insert(id, handlers);
    }
    let dispatch = Dispatch {
        host: host.clone(),
        commands,
        tools,
        intercepts: ext.intercepts,
    };
    Ok((dispatch, LaneHandlers { events, panels }))
}

/// Handlers that may run concurrently.
struct Dispatch {
    host: Host,
    /// Keyed by the lowercased name: zot matches commands case-insensitively.
    commands: HashMap<String, Arc<CommandFn>>,
    tools: HashMap<String, Arc<ToolFn>>,
    intercepts: Interceptors,
}

impl Dispatch {
    fn command(&self, call: CommandInvoked) {
        let response = match self.commands.get(&call.name.to_lowercase()) {
            Some(handler) => guarded(|| handler(&call.args, &self.host)).unwrap_or_else(|panic| {
                self.host
                    .log(format_args!("command /{} panicked: {panic}", call.name));
                Response::error(format!("/{} failed: {panic}", call.name))
            }),
            None => Response::error(format!("no handler for /{}", call.name)),
        };
        self.host
            .send(&ExtFrame::CommandResponse(response.into_frame(call.id)));
    }

    fn tool(&self, call: ToolCall) {
        let result = match self.tools.get(&call.name) {
            Some(handler) => guarded(|| handler(call.args, &self.host)).unwrap_or_else(|panic| {
                self.host
                    .log(format_args!("tool \"{}\" panicked: {panic}", call.name));
                ToolResult::error(format!("tool \"{}\" failed: {panic}", call.name))
            }),
            None => ToolResult::error(format!("no handler for tool \"{}\"", call.name)),
        };
        self.host
            .send(&ExtFrame::ToolResult(result.into_frame(call.id)));
    }

    /// Answers an intercept. A panicking interceptor allows, as a missing
    /// answer would (zot's fail-open rule), instead of blocking the user.
    fn intercept(&self, request: EventIntercept) {
        let EventIntercept { id, payload } = request;
        let kind = payload.name();
        let host = &self.host;
        let answer = guarded(|| self.decide(id.clone(), payload)).unwrap_or_else(|panic| {
            host.log(format_args!(
                "{kind} interceptor panicked: {panic}; allowing"
            ));
            allow(id)
        });
        host.send(&ExtFrame::EventInterceptResponse(answer));
    }

    fn decide(&self, id: String, payload: Intercept) -> InterceptResponse {
        let host = &self.host;
        let hooks = &self.intercepts;
        match payload {
            Intercept::ToolCall {
                tool_id,
                tool_name,
                tool_args,
                parent_tool_call_id,
            } => {
                let Some(hook) = &hooks.tool_call else {
                    return allow(id);
                };
                let call = PendingToolCall {
                    id: tool_id,
                    name: tool_name,
                    args: tool_args,
                    parent_tool_call_id,
                };
                match hook(&call, host) {
                    ToolCallDecision::Rewrite(args) if !args.is_object() => {
                        host.log(format_args!(
                            "tool_call interceptor rewrote {} args to a non-object ({args}); allowing unchanged",
                            call.name
                        ));
                        allow(id)
                    }
                    decision => decision.into_frame(id),
                }
            }
            Intercept::TurnStart { step } => match &hooks.turn_start {
                Some(hook) => hook(step, host).into_frame(id),
                None => allow(id),
            },
            Intercept::AssistantMessage { text } => match &hooks.assistant_message {
                Some(hook) => hook(&text, host).into_frame(id),
                None => allow(id),
            },
            Intercept::BeforeAgentStart {
                session_id,
                agent_run_id,
                cwd,
                provider,
                model,
                system_prompt,
            } => {
                let Some(hook) = &hooks.before_agent_start else {
                    return allow(id);
                };
                let start = BeforeAgentStart {
                    session_id,
                    agent_run_id,
                    cwd,
                    provider,
                    model,
                    system_prompt,
                };
                InterceptResponse {
                    system_prompt: hook(&start, host),
                    ..allow(id)
                }
            }
        }
    }
}

/// Runs `f`, turning a panic into its message. The panic itself is already
/// on stderr (the default hook), i.e. in the extension's log.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panic_message(payload.as_ref()))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panic: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panic: {s}")
    } else {
        "panic".to_owned()
    }
}

// ---------------------------------------------------------------- ordered lane

/// Input whose handlers must see it in arrival order.
enum Ordered {
    Event(Event),
    PanelKey(PanelKey),
    PanelClose(String),
}

struct LaneHandlers {
    /// Per event name, every handler in registration order.
    events: Vec<(String, Vec<Box<EventFn>>)>,
    panels: HashMap<String, PanelHandlers>,
}

impl LaneHandlers {
    fn handle(&mut self, input: Ordered, host: &Host) {
        match input {
            Ordered::Event(event) => {
                let name = event.name();
                let Some((_, handlers)) = self.events.iter_mut().find(|(n, _)| n == name) else {
                    return;
                };
                for handler in handlers {
                    if let Err(panic) = guarded(|| handler(&event, host)) {
                        host.log(format_args!("{name} event handler panicked: {panic}"));
                    }
                }
            }
            Ordered::PanelKey(key) => match self.panels.get_mut(&key.panel_id) {
                Some(panel) => {
                    if let Err(panic) = guarded(|| (panel.on_key)(&key, host)) {
                        host.log(format_args!(
                            "panel \"{}\" key handler panicked: {panic}",
                            key.panel_id
                        ));
                    }
                }
                None => host.log(format_args!(
                    "key for panel \"{}\" without handlers; ignored",
                    key.panel_id
                )),
            },
            Ordered::PanelClose(id) => match self.panels.get_mut(&id) {
                Some(panel) => {
                    if let Err(panic) = guarded(|| (panel.on_close)(host)) {
                        host.log(format_args!(
                            "panel \"{id}\" close handler panicked: {panic}"
                        ));
                    }
                }
                None => host.log(format_args!(
                    "close of panel \"{id}\" without handlers; ignored"
                )),
            },
        }
    }
}

/// One thread that runs event and panel handlers, one input at a time.
struct Lane {
    /// `None` once finished, or when the thread could not be started.
    tx: Option<mpsc::Sender<Ordered>>,
    /// Disconnects when the lane thread ends.
    done: mpsc::Receiver<()>,
}

impl Lane {
    fn start(mut handlers: LaneHandlers, host: Host) -> Self {
        let (tx, rx) = mpsc::channel::<Ordered>();
        let (done_tx, done) = mpsc::channel::<()>();
        let worker_host = host.clone();
        let body = move || {
            let _done = done_tx;
            for input in rx {
                handlers.handle(input, &worker_host);
            }
        };
        // Handlers move into the thread; if it cannot start they are gone
        // with the closure, so a failure here leaves nothing to call.
        match std::thread::Builder::new()
            .name("zot-ext-events".to_owned())
            .spawn(body)
        {
            Ok(_) => Self { tx: Some(tx), done },
            Err(e) => {
                host.log(format_args!(
                    "cannot start the event thread ({e}); events and panel input are dropped"
                ));
                Self { tx: None, done }
            }
        }
    }

    fn push(&self, input: Ordered) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(input);
        }
    }

    /// Stops taking input and waits until `deadline` for queued input to be
    /// handled. Returns whether the lane finished.
    fn finish(mut self, deadline: Instant) -> bool {
        self.tx = None;
        let limit = deadline.saturating_duration_since(Instant::now());
        !matches!(
            self.done.recv_timeout(limit),
            Err(mpsc::RecvTimeoutError::Timeout)
        )
    }
}

// ---------------------------------------------------------------- worker pool

type Job = Box<dyn FnOnce() + Send>;

/// Runs request handlers on up to `max` threads, started as needed.
struct Pool {
    shared: Arc<PoolShared>,
}

struct PoolShared {
    max: usize,
    host: Host,
    state: Mutex<PoolState>,
    /// Signalled when a job is queued or the pool closes.
    wake: Condvar,
    /// Signalled when the last worker ends.
    ended: Condvar,
}

#[derive(Default)]
struct PoolState {
    queue: VecDeque<Job>,
    threads: usize,
    idle: usize,
    closed: bool,
}

impl Pool {
    fn new(max: usize, host: Host) -> Self {
        Self {
            shared: Arc::new(PoolShared {
                max,
                host,
                state: Mutex::new(PoolState::default()),
                wake: Condvar::new(),
                ended: Condvar::new(),
            }),
        }
    }

    fn submit(&self, job: Job) {
        let mut state = self.shared.lock();
        state.queue.push_back(job);
        // Idle workers have not claimed anything yet, so each queued job
        // beyond their number needs a new worker to run concurrently.
        if state.queue.len() <= state.idle || state.threads >= self.shared.max {
            drop(state);
            self.shared.wake.notify_one();
            return;
        }
        state.threads += 1;
        drop(state);
        let shared = Arc::clone(&self.shared);
        let started = std::thread::Builder::new()
            .name("zot-ext-worker".to_owned())
            .spawn(move || shared.work());
        if let Err(e) = started {
            // With no worker left the queue would never drain: run it here.
            let mut state = self.shared.lock();
            state.threads -= 1;
            let stranded: Vec<Job> = if state.threads == 0 {
                state.queue.drain(..).collect()
            } else {
                Vec::new()
            };
            drop(state);
            self.shared
                .host
                .log(format_args!("cannot start a worker thread ({e})"));
            for job in stranded {
                job();
            }
        }
    }

    /// Lets workers end once the queue is empty, and waits until `deadline`
    /// for that. Returns whether every request was answered.
    fn finish(&self, deadline: Instant) -> bool {
        let mut state = self.shared.lock();
        state.closed = true;
        self.shared.wake.notify_all();
        while state.threads > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = match self.shared.ended.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }
}

impl PoolShared {
    fn work(&self) {
        loop {
            let job = {
                let mut state = self.lock();
                loop {
                    if let Some(job) = state.queue.pop_front() {
                        break job;
                    }
                    if state.closed {
                        state.threads -= 1;
                        if state.threads == 0 {
                            self.ended.notify_all();
                        }
                        return;
                    }
                    state.idle += 1;
                    state = self
                        .wake
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                    state.idle -= 1;
                }
            };
            // Jobs catch their handlers' panics themselves.
            job();
        }
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

// ---------------------------------------------------------------- reading

/// Reads LF-terminated host frames, skipping blank, oversized and malformed
/// lines (logged to stderr, never stdout).
pub(crate) struct Lines<R> {
    input: R,
    buf: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    pub(crate) fn new(input: R) -> Self {
        Self {
            input,
            buf: Vec::new(),
        }
    }

    fn skip_rest_of_line(&mut self) -> Result<(), Error> {
        loop {
            let chunk = self.input.fill_buf().map_err(Error::Read)?;
            if chunk.is_empty() {
                return Ok(());
            }
            match chunk.iter().position(|b| *b == b'\n') {
                Some(at) => {
                    self.input.consume(at + 1);
                    return Ok(());
                }
                None => {
                    let len = chunk.len();
                    self.input.consume(len);
                }
            }
        }
    }
}

impl<R: BufRead> FrameSource for Lines<R> {
    fn next_frame(&mut self, host: &Host) -> Result<Option<HostFrame>, Error> {
        loop {
            self.buf.clear();
            let limit = MAX_HOST_FRAME_BYTES as u64 + 1;
            let n = (&mut self.input)
                .take(limit)
                .read_until(b'\n', &mut self.buf)
                .map_err(Error::Read)?;
            if n == 0 {
                return Ok(None);
            }
            if self.buf.len() > MAX_HOST_FRAME_BYTES {
                self.skip_rest_of_line()?;
                host.log(format_args!(
                    "skipped a frame from zot over {MAX_HOST_FRAME_BYTES} bytes"
                ));
                continue;
            }
            if let Some(frame) = parse_frame(&self.buf, host) {
                return Ok(Some(frame));
            }
        }
    }
}

/// One host frame from its bytes; blank input is skipped silently, a
/// malformed frame with a log line.
pub(crate) fn parse_frame(bytes: &[u8], host: &Host) -> Option<HostFrame> {
    let line = bytes.trim_ascii();
    if line.is_empty() {
        return None;
    }
    match serde_json::from_slice::<HostFrame>(line) {
        Ok(frame) => Some(frame),
        Err(e) => {
            let text = String::from_utf8_lossy(line);
            let snippet: String = text.chars().take(LOG_SNIPPET_CHARS).collect();
            host.log(format_args!(
                "skipped a malformed frame from zot ({e}): {snippet}"
            ));
            None
        }
    }
}

fn frame_kind(frame: &HostFrame) -> &'static str {
    match frame {
        HostFrame::HelloAck(_) => "hello_ack",
        HostFrame::CommandInvoked(_) => "command_invoked",
        HostFrame::ToolCall(_) => "tool_call",
        HostFrame::Event(_) => "event",
        HostFrame::EventIntercept(_) => "event_intercept",
        HostFrame::PanelKey(_) => "panel_key",
        HostFrame::PanelClose(_) => "panel_close",
        HostFrame::Shutdown => "shutdown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two requests queued back to back while one worker sits idle must not
    /// share that worker: the first here waits for the second to run.
    #[test]
    fn pool_runs_requests_concurrently_next_to_an_idle_worker() {
        let pool = Pool::new(4, Host::new("test".into()));
        let (warm_tx, warm_rx) = mpsc::channel();
        pool.submit(Box::new(move || warm_tx.send(()).unwrap()));
        warm_rx.recv().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while pool.shared.lock().idle != 1 {
            assert!(Instant::now() < deadline, "worker never went idle");
            std::thread::yield_now();
        }

        let (second_ran, wait_for_second) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        pool.submit(Box::new(move || {
            let ran = wait_for_second.recv_timeout(Duration::from_secs(5)).is_ok();
            done_tx.send(ran).unwrap();
        }));
        pool.submit(Box::new(move || second_ran.send(()).unwrap()));
        assert!(
            done.recv().unwrap(),
            "the second request waited behind the first"
        );
        assert!(pool.finish(Instant::now() + Duration::from_secs(5)));
    }

    #[test]
    fn pool_finish_gives_up_at_the_deadline() {
        let pool = Pool::new(1, Host::new("test".into()));
        let (release, wait) = mpsc::channel::<()>();
        pool.submit(Box::new(move || {
            let _ = wait.recv();
        }));
        assert!(!pool.finish(Instant::now() + Duration::from_millis(50)));
        release.send(()).unwrap();
        assert!(pool.finish(Instant::now() + Duration::from_secs(5)));
    }
}
