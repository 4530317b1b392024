//! `zot rpc`: the agent over newline-delimited JSON on stdin/stdout.
//! Requests `{"id"?, "type": command, …}` get `{"type":"response", "command",
//! "success", "id"?, "data"?|"error"?}`; agent and extension events stream
//! on the same stdout as they happen. Malformed lines get an error response
//! and the server keeps serving; it exits at stdin EOF once work is done.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{Mutex, mpsc};
use zot_core::CancellationToken;
use zot_core::agent::Agent;
use zot_core::message::Block;
use zot_core::models;
use zot_core::provider::Provider;
use zot_extensions::ExtensionHost;
use zot_extensions::zot_protocol::ui::BUILTIN_COMMANDS;

use crate::args::{AgentArgs, Mode};
use crate::context::Context;
use crate::oneshot::{event_json, host_event_json, load_error_json};
use crate::run as setup;
use crate::slash::{self, Resolved};

/// The env var that, when set, makes every frame before a matching `hello` fail.
pub const TOKEN_ENV: &str = "ZOTCORE_RPC_TOKEN";

/// Longest request line accepted (research zot.md §1.2: 16 MiB).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

struct Server {
    agent: Arc<Mutex<Agent>>,
    host: ExtensionHost,
    out: mpsc::UnboundedSender<Value>,
    /// Cancels whatever prompt or compaction runs now.
    current: std::sync::Mutex<CancellationToken>,
    busy: Arc<std::sync::atomic::AtomicUsize>,
    provider_name: String,
    cwd: String,
    /// Releases the work a request just spawned, once its response is written,
    /// so the response always comes before the work's events.
    gate: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// Tasks still running (prompts, compactions), awaited before exit.
    tasks: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

pub fn run(args: &AgentArgs, ctx: &Context) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let running = setup::start(args, ctx, Mode::Rpc).await?;
        let (out, mut rx) = mpsc::unbounded_channel::<Value>();
        let writer = tokio::spawn(async move {
            use std::io::Write;
            while let Some(value) = rx.recv().await {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{value}");
                let _ = stdout.flush();
            }
        });
        for error in &running.load_errors {
            let _ = out.send(load_error_json(error));
        }
        for error in &running.manifest_errors {
            let _ = out
                .send(json!({"type": "ext_warning", "extension": Value::Null, "message": error}));
        }
        let mut host_events = running.host_events;
        let host_out = out.clone();
        let host_task = tokio::spawn(async move {
            while let Some(event) = host_events.recv().await {
                if let Some(value) = host_event_json(&event) {
                    let _ = host_out.send(value);
                }
            }
        });
        let provider_name = running.agent.provider().kind().name().to_owned();
        let server = Arc::new(Server {
            agent: Arc::new(Mutex::new(running.agent)),
            host: running.host,
            out: out.clone(),
            current: std::sync::Mutex::new(CancellationToken::new()),
            busy: Arc::default(),
            provider_name,
            cwd: ctx.project.display().to_string(),
            tasks: std::sync::Mutex::new(Vec::new()),
            gate: std::sync::Mutex::new(None),
        });
        let code = serve(&server).await;
        let tasks = std::mem::take(
            &mut *server
                .tasks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for task in tasks {
            let _ = task.await;
        }
        server.host.session_ended().await;
        server.host.shutdown().await;
        drop(server);
        drop(out);
        host_task.abort();
        let _ = writer.await;
        Ok(code)
    })
}

async fn serve(server: &Arc<Server>) -> ExitCode {
    let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
    let mut authed = token.is_none();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => return ExitCode::SUCCESS,
            Err(e) => {
                server.respond("", None, Err(format!("cannot read stdin: {e}")));
                return ExitCode::FAILURE;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > MAX_LINE_BYTES {
            server.respond(
                "",
                None,
                Err(format!("line longer than {MAX_LINE_BYTES} bytes")),
            );
            continue;
        }
        let request: Value = match serde_json::from_str(&line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                server.respond(
                    "",
                    None,
                    Err("malformed json: a request is an object".into()),
                );
                continue;
            }
            Err(e) => {
                server.respond("", None, Err(format!("malformed json: {e}")));
                continue;
            }
        };
        let id = request.get("id").cloned().filter(|v| !v.is_null());
        let command = request
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if command == "hello" {
            let given = request.get("token").and_then(Value::as_str);
            if token.as_deref().is_some_and(|t| Some(t) != given) {
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
        let result = Arc::clone(server).handle(&command, &request).await;
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
    fn respond(&self, command: &str, id: Option<Value>, result: Result<Value, String>) {
        let mut response = json!({"type": "response", "command": command});
        match result {
            Ok(data) => {
                response["success"] = json!(true);
                if !data.is_null() {
                    response["data"] = data;
                }
            }
            Err(error) => {
                response["success"] = json!(false);
                response["error"] = json!(error);
            }
        }
        if let Some(id) = id {
            response["id"] = id;
        }
        let _ = self.out.send(response);
    }

    fn event(&self, value: Value) {
        let _ = self.out.send(value);
    }

    fn is_busy(&self) -> bool {
        self.busy.load(std::sync::atomic::Ordering::SeqCst) > 0
    }

    /// Runs `work` in the background with a fresh cancellation token;
    /// work items run one after another (the agent lock queues them).
    /// `finish` (e.g. `done`) is written once the work has let go of the
    /// agent and is no longer counted as busy, so a client that reacts to it
    /// with `get_state` sees an idle agent.
    fn spawn<F>(
        self: &Arc<Self>,
        finish: Option<Value>,
        work: impl FnOnce(Arc<Self>, CancellationToken) -> F,
    ) where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let cancel = CancellationToken::new();
        *self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = cancel.clone();
        self.busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let busy = Arc::clone(&self.busy);
        let out = self.out.clone();
        let future = work(Arc::clone(self), cancel);
        let (go, ready) = tokio::sync::oneshot::channel();
        *self
            .gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(go);
        let handle = tokio::spawn(async move {
            let _ = ready.await;
            future.await;
            busy.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            if let Some(finish) = finish {
                let _ = out.send(finish);
            }
        });
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(handle);
    }

    async fn handle(self: Arc<Self>, command: &str, request: &Value) -> Result<Value, String> {
        match command {
            "hello" => {
                let agent = self.agent.lock().await;
                Ok(json!({
                    "protocol_version": 1,
                    "version": env!("CARGO_PKG_VERSION"),
                    "provider": self.provider_name,
                    "model": agent.config().model,
                }))
            }
            "ping" => Ok(json!({"pong": true})),
            "prompt" => {
                let content = prompt_content(request)?;
                self.spawn(Some(json!({"type": "done"})), |server, cancel| async move {
                    server.prompt(content, cancel).await
                });
                Ok(json!({"started": true}))
            }
            "abort" => {
                self.current
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .cancel();
                Ok(Value::Null)
            }
            "compact" => {
                self.spawn(None, |server, cancel| async move {
                    let mut agent = server.agent.lock().await;
                    let (events, mut rx) = mpsc::unbounded_channel();
                    let result = agent.compact_now(&events, &cancel).await;
                    drop(events);
                    while let Some(event) = rx.recv().await {
                        if let Ok(value) = event_json(&event) {
                            server.event(value);
                        }
                    }
                    if let Err(e) = result {
                        server.event(json!({"type": "error", "message": e.to_string()}));
                    }
                });
                Ok(json!({"started": true}))
            }
            "get_state" => {
                let busy = self.is_busy();
                let agent = self.agent.try_lock();
                let (model, count, usage) = match &agent {
                    Ok(agent) => (
                        agent.config().model.clone(),
                        agent.messages().len(),
                        agent.usage(),
                    ),
                    Err(_) => (String::new(), 0, Default::default()),
                };
                Ok(json!({
                    "provider": self.provider_name, "model": model, "cwd": self.cwd,
                    "message_count": count, "busy": busy || agent.is_err(), "usage": usage,
                }))
            }
            "get_messages" => {
                let agent = self.agent.lock().await;
                Ok(json!({"messages": agent.messages()}))
            }
            "clear" => {
                self.agent.lock().await.clear();
                Ok(Value::Null)
            }
            "set_model" => {
                let Some(model) = request.get("model").and_then(Value::as_str) else {
                    return Err("set_model needs \"model\"".into());
                };
                let mut agent = self.agent.lock().await;
                let kind = agent.provider().kind();
                let known = models::models(kind);
                if !known.is_empty() && !known.iter().any(|m| m.id == model) {
                    return Err(format!("unknown model \"{model}\" for {}", kind.name()));
                }
                let provider = Provider::new(agent.provider().config().clone());
                agent.set_model(provider, model.to_owned());
                self.host.set_model(kind.name(), model);
                Ok(Value::Null)
            }
            "get_models" => {
                let agent = self.agent.lock().await;
                let kind = agent.provider().kind();
                let list: Vec<Value> = models::models(kind)
                    .iter()
                    .map(|m| {
                        json!({
                            "id": m.id, "provider": kind.name(), "context_window": m.context_window,
                            "max_output": m.max_output, "reasoning": m.reasoning,
                        })
                    })
                    .collect();
                Ok(json!({"models": list}))
            }
            "get_commands" => {
                let mut list: Vec<Value> = BUILTIN_COMMANDS
                    .iter()
                    .map(|(name, _)| json!({"name": name, "source": "builtin"}))
                    .collect();
                list.extend(self.host.commands().into_iter().map(|c| {
                    json!({"name": c.name, "description": c.description, "source": "extension", "extension": c.extension})
                }));
                Ok(json!({"commands": list}))
            }
            "reload_extensions" => {
                let stats = self.host.reload().await;
                self.agent.lock().await.reset_system_prompt();
                for error in &stats.errors {
                    self.event(load_error_json(error));
                }
                Ok(json!({
                    "stopped": stats.stopped, "loaded": stats.loaded, "ready": stats.ready,
                    "errors": stats.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
                }))
            }
            "" => Err("malformed request: no \"type\"".into()),
            _ => Err("unknown command".into()),
        }
    }

    /// One prompt: an extension command when it names one, else a turn.
    async fn prompt(self: Arc<Self>, content: Vec<Block>, cancel: CancellationToken) {
        let mut agent = self.agent.lock().await;
        let mut content = content;
        match slash::resolve(&self.host, &first_text(&content)).await {
            Err(e) => return self.finish_with_error(e),
            Ok(Resolved::Unchanged) => {}
            Ok(Resolved::Prompt(p)) => content = vec![Block::Text { text: p }],
            Ok(Resolved::Done) => return,
            Ok(Resolved::Display {
                extension,
                command,
                text,
            }) => {
                return self.event(json!({
                    "type": "ext_display", "extension": extension, "command": command, "text": text,
                }));
            }
        }
        let (events, mut rx) = mpsc::unbounded_channel();
        let out = self.out.clone();
        let forward = tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                // `done` is written by `spawn` once the agent is free again.
                if matches!(event, zot_core::AgentEvent::Done) {
                    continue;
                }
                if let Ok(value) = event_json(&event) {
                    let _ = out.send(value);
                }
            }
        });
        // A failed prompt has emitted turn_end and error; `spawn` still ends it with done.
        let _ = agent.prompt(content, &events, &cancel).await;
        drop(events);
        let _ = forward.await;
    }

    fn finish_with_error(&self, message: String) {
        self.event(json!({"type": "error", "message": message}));
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

fn prompt_content(request: &Value) -> Result<Vec<Block>, String> {
    let message = request
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut content = Vec::new();
    if !message.trim().is_empty() {
        content.push(Block::Text {
            text: message.to_owned(),
        });
    }
    for image in request
        .get("images")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(mime_type), Some(data)) = (
            image.get("mime_type").and_then(Value::as_str),
            image.get("data").and_then(Value::as_str),
        ) else {
            return Err("each image needs \"mime_type\" and \"data\" (base64)".into());
        };
        content.push(Block::Image {
            mime_type: mime_type.to_owned(),
            data: data.to_owned(),
        });
    }
    if content.is_empty() {
        return Err("prompt needs a non-empty \"message\" or images".into());
    }
    Ok(content)
}
