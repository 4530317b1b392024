//! Print (`-p`) and JSON (`--json`) modes: one prompt, run to the end.
//! Print shows the final answer on stdout and everything else on stderr;
//! JSON writes every agent and extension event as one JSON object per line.

use std::io::{Read, Write};
use std::process::ExitCode;

use tokio::sync::mpsc;
use zot_core::CancellationToken;
use zot_core::event::AgentEvent;
use zot_core::message::{Block, text_of};
use zot_core::provider::StopReason;
use zot_extensions::zot_protocol::events::{Event, EventLine};
use zot_extensions::{HostEvent, LoadError};

use crate::args::{AgentArgs, Mode};
use crate::commands::Commands;
use crate::context::Context;
use crate::run::{self, Running};
use crate::slash::{self, Resolved};

/// The stream line for a load error.
pub fn load_error_event(error: &LoadError) -> Event {
    Event::ExtWarning {
        extension: Some(error.extension.clone()),
        message: error.to_string(),
    }
}

/// The stream line for an invalid manifest (no extension name is known).
pub fn manifest_error_event(error: &str) -> Event {
    Event::ExtWarning {
        extension: None,
        message: error.to_owned(),
    }
}

/// Writes one `error` stream line to stdout, before any stream writer runs.
pub fn json_error(message: &str) {
    let line = EventLine::from(Event::Error {
        message: message.to_owned(),
    });
    if let Ok(line) = serde_json::to_string(&line) {
        crate::term::write(true, format_args!("{line}"), true);
    }
}

/// Writes stream lines to stdout, one JSON object per line, flushed each.
pub fn spawn_writer() -> (
    mpsc::UnboundedSender<EventLine>,
    tokio::task::JoinHandle<()>,
) {
    let (lines, mut rx) = mpsc::unbounded_channel::<EventLine>();
    let writer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            let Ok(line) = serde_json::to_string(&event) else {
                continue;
            };
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
    });
    (lines, writer)
}

/// Where output goes: stdout lines for JSON, stderr notes for print.
#[derive(Clone)]
struct Out {
    mode: Mode,
    lines: mpsc::UnboundedSender<EventLine>,
}

impl Out {
    fn json(&self, line: impl Into<EventLine>) {
        let _ = self.lines.send(line.into());
    }

    fn host_event(&self, event: HostEvent) {
        if self.mode == Mode::Json {
            if let Some(line) = Event::from_host(&event) {
                self.json(line);
            }
            return;
        }
        // On a terminal, extension text never drives it (clear screen, title, clipboard).
        match event.without_controls() {
            HostEvent::Notify {
                extension,
                level,
                message,
            } => {
                let level = serde_json::to_value(level)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned));
                errln!("[{extension}] {}: {message}", level.unwrap_or_default());
            }
            // An exit is reported by the warning that comes with it.
            HostEvent::Warning { extension, message }
            | HostEvent::LoadFailed {
                extension,
                error: message,
            } => {
                errln!("zot: warning: extension {extension}: {message}");
            }
            HostEvent::TrustChanged { changes } => {
                errln!(
                    "zot: warning: {}",
                    HostEvent::trust_changed_message(&changes)
                );
            }
            _ => {}
        }
    }

    fn load_error(&self, error: &LoadError) {
        match self.mode {
            Mode::Json => self.json(load_error_event(error)),
            _ => errln!("zot: warning: {error}"),
        }
    }
}

pub fn run(
    args: &AgentArgs,
    prompt_words: &[String],
    ctx: &Context,
    mode: Mode,
) -> anyhow::Result<ExitCode> {
    // Images first: a bad one is refused before stdin is waited on.
    let images = zot_core::image::load_all(&args.images)?;
    let mut prompt = prompt_words.join(" ");
    if prompt.trim().is_empty() {
        std::io::stdin()
            .read_to_string(&mut prompt)
            .map_err(|e| anyhow::anyhow!("cannot read the prompt from stdin: {e}"))?;
    }
    if prompt.trim().is_empty() && images.is_empty() {
        anyhow::bail!("no prompt: pass one as arguments or on stdin");
    }
    let runtime = crate::prompt_runtime()?;
    runtime.block_on(async {
        let running = run::start(args, ctx, mode).await?;
        let (lines, writer) = spawn_writer();
        let prompt = Prompt {
            text: &prompt,
            images,
        };
        let code = run_prompt_mode(running, prompt, mode, lines).await;
        let _ = writer.await;
        code
    })
}

/// One prompt: its text (slash commands expand) and the images attached.
pub struct Prompt<'a> {
    pub text: &'a str,
    pub images: Vec<Block>,
}

/// Runs one prompt in print or JSON `mode`; JSON lines go to `lines`.
pub async fn run_prompt_mode(
    running: Running,
    prompt: Prompt<'_>,
    mode: Mode,
    lines: mpsc::UnboundedSender<EventLine>,
) -> anyhow::Result<ExitCode> {
    drive(running, prompt, &Out { mode, lines }).await
}

async fn drive(running: Running, prompt: Prompt<'_>, out: &Out) -> anyhow::Result<ExitCode> {
    let Running {
        mut agent,
        host,
        commands,
        mut host_events,
        load_errors,
        manifest_errors,
        missing_credentials,
    } = running;
    for error in &load_errors {
        out.load_error(error);
    }
    for error in &manifest_errors {
        match out.mode {
            Mode::Json => out.json(manifest_error_event(error)),
            _ => errln!("zot: warning: {error}"),
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
            host_out.host_event(event);
        }
    });

    let result = run_prompt(
        &mut agent,
        &commands,
        prompt,
        out,
        &cancel,
        missing_credentials.as_deref(),
    )
    .await;
    ctrl_c.abort();
    host.session_ended().await;
    host.shutdown().await;
    drop(agent);
    drop(commands);
    drop(host);
    let _ = host_task.await;
    result
}

async fn run_prompt(
    agent: &mut zot_core::Agent,
    commands: &Commands,
    prompt: Prompt<'_>,
    out: &Out,
    cancel: &CancellationToken,
    missing_credentials: Option<&str>,
) -> anyhow::Result<ExitCode> {
    // Expanding a Markdown command may run shell commands: Ctrl+C stops them.
    let resolved = tokio::select! {
        resolved = slash::resolve(commands, prompt.text) => resolved,
        () = cancel.cancelled() => Err("aborted".to_owned()),
    };
    let text = match resolved {
        // Said as any failure is, with the status of an interrupted run.
        Err(e) if cancel.is_cancelled() => {
            if let Err(said) = fail(out, &e) {
                errln!("zot: {said}");
            }
            return Ok(interrupted());
        }
        Err(e) => return fail(out, &e),
        Ok(Resolved::Unchanged) => prompt.text.to_owned(),
        Ok(Resolved::Prompt(p)) => p,
        Ok(Resolved::Done) => return Ok(ExitCode::SUCCESS),
        Ok(Resolved::Display {
            extension,
            command,
            text,
        }) => {
            match out.mode {
                Mode::Json => out.json(Event::ExtDisplay {
                    extension,
                    command,
                    text,
                }),
                _ => outln!("{text}"),
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    // Credentials are checked here, when the model is about to be called.
    if let Some(missing) = missing_credentials {
        return fail(out, missing);
    }

    let (events, mut rx) = mpsc::unbounded_channel::<AgentEvent>();
    let mode = out.mode;
    let json_out = out.clone();
    let collector = tokio::spawn(async move {
        let mut answer = None;
        let mut failure = None;
        let mut blocked = None;
        while let Some(event) = rx.recv().await {
            if let AgentEvent::PromptBlocked { source, reason } = &event {
                blocked = Some(format!("{source} blocked the prompt: {reason}"));
            }
            // A refusal fails the prompt in every mode (JSON has the line).
            if let AgentEvent::TurnEnd {
                stop: StopReason::Refusal,
                error,
            } = &event
            {
                let why = error.as_deref().unwrap_or("no reason given");
                blocked = Some(format!("the model refused: {why}"));
            }
            if mode == Mode::Json {
                json_out.json(event.to_line());
                continue;
            }
            match event {
                AgentEvent::AssistantMessage { content, .. } => {
                    let text = text_of(&content);
                    if !text.is_empty() {
                        answer = Some(text);
                    }
                }
                AgentEvent::AssistantBlocked { extension, reason } => {
                    errln!("zot: extension {extension} hid the answer: {reason}");
                }
                AgentEvent::TurnEnd {
                    stop: StopReason::Error,
                    error: Some(e),
                } => failure = Some(e),
                AgentEvent::TurnEnd {
                    stop: StopReason::Aborted,
                    ..
                } => errln!("zot: aborted"),
                AgentEvent::TurnEnd {
                    stop: StopReason::Length,
                    error: Some(note),
                } => errln!("zot: note: {note}"),
                _ => {}
            }
        }
        (answer, failure, blocked)
    });
    // An image alone is a prompt: no empty text block beside it.
    let content = (!text.trim().is_empty())
        .then_some(Block::Text { text })
        .into_iter()
        .chain(prompt.images)
        .collect();
    let result = agent.prompt(content, &events, cancel).await;
    drop(events);
    let (answer, failure, blocked) = collector.await.unwrap_or((None, None, None));
    if let Some(session) = agent.session().and_then(|s| s.failure()) {
        errln!("zot: warning: session not saved: {session}");
    }
    match result {
        // The prompt never ran: a failure in every mode (JSON has the line).
        Ok(()) if blocked.is_some() => {
            if mode != Mode::Json {
                // Whatever the model said before it stopped.
                if let Some(answer) = answer {
                    outln!("{answer}");
                }
                let why = blocked.unwrap_or_default();
                errln!("zot: {why}");
            }
            Ok(ExitCode::FAILURE)
        }
        Ok(()) => {
            if let Some(answer) = answer {
                outln!("{answer}");
            }
            if let Some(failure) = failure {
                errln!("zot: {failure}");
            }
            Ok(if cancel.is_cancelled() {
                interrupted()
            } else {
                ExitCode::SUCCESS
            })
        }
        Err(e) if mode == Mode::Json => {
            let _ = e;
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(e.into()),
    }
}

/// The status of a run Ctrl+C stopped, as shells give it (128 + SIGINT):
/// `zot -p … && git commit` must not go on.
fn interrupted() -> ExitCode {
    ExitCode::from(130)
}

fn fail(out: &Out, message: &str) -> anyhow::Result<ExitCode> {
    match out.mode {
        Mode::Json => {
            out.json(Event::Error {
                message: message.to_owned(),
            });
            Ok(ExitCode::FAILURE)
        }
        _ => anyhow::bail!("{message}"),
    }
}

#[cfg(test)]
mod tests {
    use std::process::ExitCode;

    use tokio::sync::mpsc;
    use zot_extensions::zot_protocol::events::{Block, Event, StopReason};
    use zot_testkit::{MockModel, anthropic};

    use crate::args::Mode;
    use crate::testing::{drain, setup};

    async fn json_run(model: &MockModel, prompt: &str) -> (ExitCode, Vec<Event>) {
        let s = setup(model, Mode::Json).await;
        let (lines, rx) = mpsc::unbounded_channel();
        let code = super::run_prompt_mode(
            s.running,
            super::Prompt {
                text: prompt,
                images: Vec::new(),
            },
            Mode::Json,
            lines,
        )
        .await
        .unwrap();
        (code, drain(rx).await.into_iter().map(|l| l.event).collect())
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn json_mode_streams_a_tool_turn_in_order() {
        let model = MockModel::start([
            anthropic::tool_call("t1", "bash", r#"{"command":"echo hi"}"#),
            anthropic::text("done"),
        ])
        .await;
        let (code, events) = json_run(&model, "run it").await;
        assert_eq!(code, ExitCode::SUCCESS);
        let result = events
            .iter()
            .find_map(|e| match e {
                Event::ToolResult { id, content, .. } => Some((id.clone(), content.clone())),
                _ => None,
            })
            .unwrap();
        assert_eq!(result.0, "t1");
        assert!(matches!(&result.1[0], Block::Text { text } if text.contains("hi")));
        let stops: Vec<StopReason> = events
            .iter()
            .filter_map(|e| match e {
                Event::TurnEnd { stop, .. } => Some(*stop),
                _ => None,
            })
            .collect();
        assert_eq!(stops, [StopReason::ToolUse, StopReason::EndTurn]);
        assert!(matches!(events.last(), Some(Event::Done)));
        let call = events
            .iter()
            .position(|e| matches!(e, Event::ToolCall { .. }));
        let outcome = events
            .iter()
            .position(|e| matches!(e, Event::ToolResult { .. }));
        assert!(call < outcome, "the call comes before its result");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn an_unknown_command_is_an_error_line_and_a_failure() {
        let model = MockModel::start([]).await;
        let (code, events) = json_run(&model, "/nope please").await;
        assert_eq!(code, ExitCode::FAILURE);
        assert_eq!(
            events,
            [Event::Error {
                message: "unknown command /nope".into()
            }]
        );
        assert!(model.requests().is_empty(), "the model is never called");
    }
}
