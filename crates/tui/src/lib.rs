//! zot's interactive terminal front end: renders the agent's event stream
//! and the extensions' notes and panels, and drives both. The state lives in
//! [`app::App`] (testable without a terminal), drawing in [`view`].

pub mod app;
pub mod background;
pub mod bridge;
pub mod command;
pub mod editor;
mod entry;
pub mod file_picker;
mod history;
pub mod markdown;
pub mod modal;
mod model_picker;
pub mod picker;
pub mod rewind;
mod spinner;
mod step;
mod subagent;
pub mod theme;
pub mod transcript;
pub mod view;
pub mod worker;
mod wrap;

use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste, Event, EventStream};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use zot_core::agent::Agent;

use crate::app::{App, AppConfig};
use zot_protocol::ui::HostEvent;

use crate::bridge::Extensions;

/// How often the spinner turns and status lines expire.
pub const TICK: Duration = Duration::from_millis(100);
/// Events handled between two frames at most, so a fast stream cannot starve drawing.
pub const EVENTS_PER_FRAME: usize = 256;
/// A resumed session's older messages made into entries at once between
/// frames, which a key typed meanwhile waits: the bench's 10,000 took
/// 6.5-10.4 ms of CPU in five steps at the release profile, about 2 ms a
/// step (BENCHMARKS.md, issue 37).
pub const HISTORY_STEP: usize = 2_048;

pub struct Tui {
    pub config: AppConfig,
    /// `None` without credentials: commands still work, prompts explain how to set a key.
    pub agent: Option<Agent>,
    /// `--no-yolo`.
    pub ask_before_tools: bool,
    pub extensions: Arc<dyn Extensions>,
    pub host_updates: mpsc::UnboundedReceiver<HostEvent>,
}

/// Runs the TUI until the user exits. The terminal is restored on every
/// exit path, panics included.
pub async fn run(tui: Tui) -> std::io::Result<()> {
    let Tui {
        config,
        agent,
        ask_before_tools,
        extensions,
        mut host_updates,
    } = tui;
    markdown::defer_highlighting();
    let missing = config.missing_credentials.clone().unwrap_or_default();
    // A continued session (-c, --session) shows its conversation from the start.
    let history = agent
        .as_ref()
        .map(|a| a.messages().to_vec())
        .unwrap_or_default();
    let plan = agent.as_ref().map(|a| a.plan()).unwrap_or_default();
    let (worker, mut worker_events) = worker::spawn(agent, missing, ask_before_tools);
    let (msgs, mut app_msgs) = mpsc::unbounded_channel();
    let mut app = App::new(config, Some(worker.clone()), extensions, msgs);
    if !history.is_empty() {
        app.on_worker(worker::WorkerEvent::Transcript(history));
    }
    if !plan.is_empty() {
        let todo = zot_core::event::AgentEvent::Todo { items: plan };
        app.on_worker(worker::WorkerEvent::Agent(todo));
    }
    app.start_up_prompt();

    // ratatui::init installs a panic hook that restores the terminal first.
    let mut terminal = ratatui::init();
    crossterm::execute!(std::io::stdout(), EnableBracketedPaste)?;
    let mut input = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    let result = loop {
        if let Err(e) = terminal.draw(|frame| view::draw(frame, &mut app)) {
            break Err(e);
        }
        if app.should_quit() {
            break Ok(());
        }
        if !markdown::highlighting_ready() && !app.has_history() {
            // The first frame is on screen and the history's messages are
            // made into entries and freed, so the highlighting can reuse
            // their memory; code is coloured from the next frame.
            markdown::load_highlighting();
            continue;
        }
        if let Some(text) = app.take_clipboard() {
            // OSC 52: the terminal (also over ssh, and tmux) sets its clipboard.
            use base64::Engine as _;
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            let mut out = std::io::stdout();
            let _ =
                std::io::Write::write_all(&mut out, format!("\x1b]52;c;{encoded}\x07").as_bytes());
            let _ = std::io::Write::flush(&mut out);
        }
        tokio::select! {
            event = input.next() => match event {
                Some(Ok(Event::Key(key))) => app.on_key(key),
                Some(Ok(Event::Paste(text))) => app.on_paste(&text),
                Some(Ok(_)) => {}
                Some(Err(e)) => break Err(e),
                None => break Ok(()),
            },
            Some(event) = worker_events.recv() => {
                app.on_worker(event);
                for _ in 0..EVENTS_PER_FRAME {
                    match worker_events.try_recv() {
                        Ok(event) => app.on_worker(event),
                        Err(_) => break,
                    }
                }
            }
            Some(update) = host_updates.recv() => app.on_host(update),
            Some(msg) = app_msgs.recv() => app.on_app(msg),
            _ = tick.tick() => app.tick(),
            // Between frames, when nothing else is ready, a step of the
            // history (a resumed session's messages the chat has not reached).
            () = std::future::ready(()), if app.has_history() => {
                app.make_history(HISTORY_STEP);
            }
        }
    };
    worker.abort();
    let _ = crossterm::execute!(std::io::stdout(), DisableBracketedPaste);
    ratatui::restore();
    result
}
