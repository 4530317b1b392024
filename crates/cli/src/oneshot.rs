//! Print (`-p`) and JSON (`--json`) modes: one prompt, run to the end.
//! Print shows the final answer on stdout and everything else on stderr;
//! JSON writes every agent and extension event as one JSON object per line.

use std::io::{Read, Write};
use std::process::ExitCode;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use zot_core::CancellationToken;
use zot_core::event::AgentEvent;
use zot_core::message::Block;
use zot_core::provider::StopReason;
use zot_extensions::{ExtensionHost, HostEvent, LoadError};

use crate::args::{AgentArgs, Mode};
use crate::context::Context;
use crate::run::{self, Running};
use crate::slash::{self, Resolved};

/// Serialises host events for JSON and RPC output; `None` for ones those modes ignore.
pub fn host_event_json(event: &HostEvent) -> Option<Value> {
    Some(match event {
        HostEvent::Notify {
            extension,
            level,
            message,
        } => {
            json!({"type": "ext_notify", "extension": extension, "level": level, "message": message})
        }
        HostEvent::ClearNotes { extension } => {
            json!({"type": "ext_clear_notes", "extension": extension})
        }
        HostEvent::Warning { extension, message } => {
            json!({"type": "ext_warning", "extension": extension, "message": message})
        }
        HostEvent::Exited { extension, reason } => {
            json!({"type": "ext_warning", "extension": extension, "message": reason})
        }
        HostEvent::Status {
            extension,
            key,
            text,
        } => {
            json!({"type": "ext_status", "extension": extension, "key": key, "text": text})
        }
        HostEvent::Widget {
            extension,
            key,
            lines,
        } => {
            json!({"type": "ext_widget", "extension": extension, "key": key, "lines": lines})
        }
        HostEvent::Entry { extension, data } => {
            json!({"type": "ext_entry", "extension": extension, "data": data})
        }
        // No one to ask outside the TUI: the answer is "" with cancelled (nimlet spec, ui_request).
        HostEvent::Question { reply, .. } => {
            reply.cancel();
            return None;
        }
        // `submit` is for the interactive editor only (spec, "submit"); panels are TUI-only.
        HostEvent::Submit { .. }
        | HostEvent::PanelRender { .. }
        | HostEvent::PanelClose { .. }
        | HostEvent::ToolsChanged
        | HostEvent::CommandsChanged => return None,
    })
}

/// An agent event for the JSON and RPC streams: image blocks carry their
/// size in `bytes` instead of the base64 data (research zot.md §1.2), so a
/// screenshot does not flood the stream.
pub fn event_json(event: &AgentEvent) -> serde_json::Result<Value> {
    let mut value = serde_json::to_value(event)?;
    shrink_images(&mut value);
    Ok(value)
}

fn shrink_images(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("image")
                && let Some(Value::String(data)) = map.remove("data")
            {
                let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
                map.insert(
                    "bytes".into(),
                    Value::from((data.len() / 4 * 3).saturating_sub(padding.min(2))),
                );
            }
            map.values_mut().for_each(shrink_images);
        }
        Value::Array(items) => items.iter_mut().for_each(shrink_images),
        _ => {}
    }
}

pub fn load_error_json(error: &LoadError) -> Value {
    json!({"type": "ext_warning", "extension": error.extension, "message": error.to_string()})
}

/// Where output goes: stdout lines for JSON, stderr notes for print.
#[derive(Clone)]
struct Out {
    mode: Mode,
    lines: mpsc::UnboundedSender<Value>,
}

impl Out {
    fn json(&self, value: Value) {
        let _ = self.lines.send(value);
    }

    fn host_event(&self, event: &HostEvent) {
        if self.mode == Mode::Json {
            if let Some(value) = host_event_json(event) {
                self.json(value);
            }
            return;
        }
        match event {
            HostEvent::Notify {
                extension,
                level,
                message,
            } => {
                let level = serde_json::to_value(level)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned));
                eprintln!("[{extension}] {}: {message}", level.unwrap_or_default());
            }
            HostEvent::Warning { extension, message }
            | HostEvent::Exited {
                extension,
                reason: message,
            } => {
                eprintln!("zot: warning: extension {extension}: {message}");
            }
            _ => {}
        }
    }

    fn load_error(&self, error: &LoadError) {
        match self.mode {
            Mode::Json => self.json(load_error_json(error)),
            _ => eprintln!("zot: warning: {error}"),
        }
    }
}

pub fn run(
    args: &AgentArgs,
    prompt_words: &[String],
    ctx: &Context,
    mode: Mode,
) -> anyhow::Result<ExitCode> {
    let mut prompt = prompt_words.join(" ");
    if prompt.trim().is_empty() {
        std::io::stdin().read_to_string(&mut prompt)?;
    }
    if prompt.trim().is_empty() {
        anyhow::bail!("no prompt: pass one as arguments or on stdin");
    }
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let running = run::start(args, ctx, mode).await?;
        let (lines, mut rx) = mpsc::unbounded_channel::<Value>();
        let writer = tokio::spawn(async move {
            while let Some(value) = rx.recv().await {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{value}");
                let _ = stdout.flush();
            }
        });
        let out = Out { mode, lines };
        let code = drive(running, &prompt, &out).await;
        drop(out);
        let _ = writer.await;
        code
    })
}

async fn drive(running: Running, prompt: &str, out: &Out) -> anyhow::Result<ExitCode> {
    let Running {
        mut agent,
        host,
        mut host_events,
        load_errors,
        manifest_errors,
    } = running;
    for error in &load_errors {
        out.load_error(error);
    }
    for error in &manifest_errors {
        match out.mode {
            Mode::Json => {
                out.json(json!({"type": "ext_warning", "extension": Value::Null, "message": error}))
            }
            _ => eprintln!("zot: warning: {error}"),
        }
    }
    let cancel = CancellationToken::new();
    let ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let host_out = out.clone();
    let host_task = tokio::spawn(async move {
        while let Some(event) = host_events.recv().await {
            host_out.host_event(&event);
        }
    });

    let result = run_prompt(&mut agent, &host, prompt, out, &cancel).await;
    ctrl_c.abort();
    host.session_ended().await;
    host.shutdown().await;
    drop(agent);
    drop(host);
    let _ = host_task.await;
    result
}

async fn run_prompt(
    agent: &mut zot_core::Agent,
    host: &ExtensionHost,
    prompt: &str,
    out: &Out,
    cancel: &CancellationToken,
) -> anyhow::Result<ExitCode> {
    let text = match slash::resolve(host, prompt).await {
        Err(e) => return fail(out, &e),
        Ok(Resolved::Unchanged) => prompt.to_owned(),
        Ok(Resolved::Prompt(p)) => p,
        Ok(Resolved::Done) => return Ok(ExitCode::SUCCESS),
        Ok(Resolved::Display {
            extension,
            command,
            text,
        }) => {
            match out.mode {
                Mode::Json => out.json(json!({
                    "type": "ext_display", "extension": extension, "command": command, "text": text,
                })),
                _ => println!("{text}"),
            }
            return Ok(ExitCode::SUCCESS);
        }
    };

    let (events, mut rx) = mpsc::unbounded_channel();
    let mode = out.mode;
    let json_out = out.clone();
    let collector = tokio::spawn(async move {
        let mut answer = None;
        let mut failure = None;
        while let Some(event) = rx.recv().await {
            if mode == Mode::Json {
                if let Ok(value) = event_json(&event) {
                    json_out.json(value);
                }
                continue;
            }
            match event {
                AgentEvent::AssistantMessage { content, .. } => {
                    let text = join_text(&content);
                    if !text.is_empty() {
                        answer = Some(text);
                    }
                }
                AgentEvent::AssistantBlocked { extension, reason } => {
                    eprintln!("zot: extension {extension} hid the answer: {reason}");
                }
                AgentEvent::TurnEnd {
                    stop: StopReason::Error,
                    error: Some(e),
                } => failure = Some(e),
                AgentEvent::TurnEnd {
                    stop: StopReason::Aborted,
                    ..
                } => eprintln!("zot: aborted"),
                _ => {}
            }
        }
        (answer, failure)
    });
    let result = agent
        .prompt(vec![Block::Text { text }], &events, cancel)
        .await;
    drop(events);
    let (answer, failure) = collector.await.unwrap_or((None, None));
    if let Some(session) = agent.session().and_then(|s| s.failure()) {
        eprintln!("zot: warning: session not saved: {session}");
    }
    match result {
        Ok(()) => {
            if let Some(answer) = answer {
                println!("{answer}");
            }
            if let Some(failure) = failure {
                eprintln!("zot: {failure}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if mode == Mode::Json => {
            let _ = e;
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(e.into()),
    }
}

fn join_text(content: &[Block]) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

fn fail(out: &Out, message: &str) -> anyhow::Result<ExitCode> {
    match out.mode {
        Mode::Json => {
            out.json(json!({"type": "error", "message": message}));
            Ok(ExitCode::FAILURE)
        }
        _ => anyhow::bail!("{message}"),
    }
}
