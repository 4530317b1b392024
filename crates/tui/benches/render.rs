//! TUI benchmarks (figures go into BENCHMARKS.md):
//! time to first frame (fresh, and resumed with a 10,000-message session),
//! frame times while streaming 5,000 tokens/s into that chat and while
//! paging up through it, its peak memory, and the `@` file
//! picker over a 50,000-path project (the walk, and each keystroke's filter).
//!
//! Run: `cargo bench -p zot-tui --bench render --profile release` (the
//! shipped profile; without `--profile`, the bench profile's opt-level 3)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;
use zot_core::event::AgentEvent;
use zot_core::message::{Block, Message, Role};
use zot_tui::app::{App, AppConfig};
use zot_tui::bridge::NoExtensions;
use zot_tui::editor::Editor;
use zot_tui::file_picker::FilePicker;
use zot_tui::markdown;
use zot_tui::view;
use zot_tui::worker::WorkerEvent;

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;
/// Tokens per second streamed, and the frame rate they arrive at.
const TOKENS_PER_SECOND: usize = 5_000;
const FPS: usize = 60;
/// 1,200 frames, so p99.9 is not simply the slowest frame.
const STREAM_SECONDS: usize = 20;
/// Tokens of each streamed answer before its tool call.
const TURN_TOKENS: usize = 2_000;
/// The resumed session the chat is streamed into and scrolled through.
const CHAT_MESSAGES: usize = 10_000;
/// PageUp presses (10 rows each) up through the history, and back down.
const PAGES: usize = 1_000;
/// The picker's project: directories of files, 50,500 paths in all.
const PICKER_DIRS: usize = 500;
const PICKER_FILES_PER_DIR: usize = 100;

fn app() -> App {
    let (msgs, _rx) = mpsc::unbounded_channel();
    let config = AppConfig {
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        cwd: "/project".into(),
        context_window: 200_000,
        ..AppConfig::default()
    };
    App::new(config, None, Arc::new(NoExtensions), msgs)
}

/// A realistic assistant message: prose, a list and a code block.
fn markdown(n: usize) -> String {
    format!(
        "## Step {n}\n\nI looked at `src/lib.rs` and the **tests**; here is what changes:\n\n\
         - rename the helper\n- add a test for the edge case\n\n```rust\nfn main() {{\n    println!(\"{n}\");\n}}\n```\n"
    )
}

fn text(text: String) -> Block {
    Block::Text { text }
}

fn message(role: Role, content: Vec<Block>) -> Message {
    Message {
        role,
        content,
        time: None,
    }
}

/// A chat of `count` messages in turns of four: the user's prompt; the
/// model's thinking, a markdown answer with a code fence and a `read` call;
/// the tool's output; the model's closing answer.
fn transcript(count: usize) -> Vec<Message> {
    (0..count)
        .map(|i| match i % 4 {
            0 => message(
                Role::User,
                vec![text(format!(
                    "question {i}: why does the parser drop the last token?"
                ))],
            ),
            1 => message(
                Role::Assistant,
                vec![
                    Block::Thinking {
                        thinking: format!("The user asks about turn {i}; read the parser first."),
                        signature: None,
                    },
                    text(markdown(i)),
                    Block::ToolCall {
                        id: format!("call_{i}"),
                        name: "read".into(),
                        args: serde_json::json!({ "path": format!("src/parser_{i}.rs") }),
                    },
                ],
            ),
            2 => message(
                Role::Tool,
                vec![Block::ToolResult {
                    call_id: format!("call_{}", i - 1),
                    is_error: false,
                    content: vec![text(
                        (0..12)
                            .map(|l| format!("{l:>4}  let token_{l} = lexer.next()?; // line {l}"))
                            .collect::<Vec<_>>()
                            .join("\n"),
                    )],
                }],
            ),
            _ => message(Role::Assistant, vec![text(markdown(i))]),
        })
        .collect()
}

/// What the model streams, a frame's worth at a time: turns of
/// [`TURN_TOKENS`] tokens of prose paragraphs with a code fence in each,
/// each turn closed by its message, a `read` call and its result.
fn stream_frames() -> Vec<Vec<AgentEvent>> {
    let per_frame = TOKENS_PER_SECOND / FPS;
    let tokens: Vec<String> = (0..per_frame * FPS * STREAM_SECONDS)
        .map(|i| match i % TURN_TOKENS {
            t if t % 400 == 200 => {
                "\n\n```rust\nfn parse(input: &str) -> Vec<Token> {\n".to_owned()
            }
            t if t % 400 > 200 && t % 400 < 212 => {
                format!("    let t{t} = lexer.next(); // token {t}\n")
            }
            t if t % 400 == 212 => "}\n```\n\n".to_owned(),
            t if t % 40 == 39 => "word\n\n".to_owned(),
            t => format!("w{} ", t % 97),
        })
        .collect();
    let mut reply = String::new();
    let mut frames = Vec::new();
    for (f, chunk) in tokens.chunks(per_frame).enumerate() {
        let mut events = Vec::new();
        for (j, token) in chunk.iter().enumerate() {
            if (f * per_frame + j).is_multiple_of(TURN_TOKENS) {
                if !reply.is_empty() {
                    let id = format!("stream_{f}_{j}");
                    events.push(AgentEvent::AssistantMessage {
                        content: vec![text(std::mem::take(&mut reply))],
                        time: None,
                    });
                    events.push(AgentEvent::ToolCall {
                        id: id.clone(),
                        name: "read".into(),
                        args: serde_json::json!({ "path": "src/lib.rs" }),
                    });
                    events.push(AgentEvent::ToolResult {
                        id,
                        is_error: false,
                        content: vec![text("fn main() {}\n".repeat(20))],
                    });
                }
                events.push(AgentEvent::AssistantStart);
            }
            reply.push_str(token);
            events.push(AgentEvent::TextDelta {
                delta: token.clone(),
            });
        }
        frames.push(events);
    }
    frames
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(str::to_owned)
        })
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Time this thread has run on a CPU, so frame times can be told apart
/// from waits for a CPU on a loaded machine.
fn on_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
    if !ok {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A frame's wall time and the part of it this thread ran.
struct Frames {
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
}

impl Frames {
    fn new() -> Self {
        Self {
            wall: Vec::new(),
            cpu: Vec::new(),
        }
    }

    fn time(&mut self, frame: impl FnOnce()) {
        let (started, cpu) = (Instant::now(), on_cpu());
        frame();
        self.cpu.push(on_cpu().saturating_sub(cpu));
        self.wall.push(started.elapsed());
    }

    fn report(self) -> String {
        format!(
            "{} frames: {}\n    on CPU: {}",
            self.wall.len(),
            spread(self.wall),
            spread(self.cpu)
        )
    }
}

/// Median, p99, p99.9 and max of frame times.
fn spread(mut frames: Vec<Duration>) -> String {
    frames.sort();
    let pct = |q: f64| ms(frames[((frames.len() - 1) as f64 * q).round() as usize]);
    format!(
        "median {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
        pct(0.5),
        pct(0.99),
        pct(0.999),
        ms(*frames.last().unwrap())
    )
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();

    // 1. Time to first frame: an app resumed with a 10,000-message session
    // (highlighting deferred as `zot_tui::run` does, the app built, the
    // session loaded, the frame drawn), then the rest of the session made
    // into entries and the highlighting loaded, as `run` does after that
    // frame (it makes the rest in steps between looks at input), then a
    // fresh app drawn once.
    let history = transcript(CHAT_MESSAGES);
    let before = peak_rss_kib();
    let (started, cpu) = (Instant::now(), on_cpu());
    markdown::defer_highlighting();
    let mut chat = app();
    chat.on_worker(WorkerEvent::Transcript(history));
    terminal.draw(|f| view::draw(f, &mut chat)).unwrap();
    let resumed_frame = started.elapsed();
    let resumed_cpu = on_cpu().saturating_sub(cpu);
    let rest = {
        let cpu = on_cpu();
        while chat.make_history(zot_tui::HISTORY_STEP) {}
        on_cpu().saturating_sub(cpu)
    };
    let highlighting = {
        let started = Instant::now();
        markdown::load_highlighting();
        started.elapsed()
    };
    // The frame that draws the code in colour once it can.
    let coloured_frame = {
        let started = Instant::now();
        terminal.draw(|f| view::draw(f, &mut chat)).unwrap();
        started.elapsed()
    };
    let after = peak_rss_kib();
    let started = Instant::now();
    let mut first = app();
    terminal.draw(|f| view::draw(f, &mut first)).unwrap();
    let first_frame = started.elapsed();

    // 2. Streaming into the long chat, a frame's tokens then a draw.
    chat.set_busy(true);
    let mut streamed = Frames::new();
    for events in stream_frames() {
        streamed.time(|| {
            for event in events {
                chat.on_worker(WorkerEvent::Agent(event));
            }
            terminal.draw(|f| view::draw(f, &mut chat)).unwrap();
        });
    }
    chat.set_busy(false);

    // 3. Scrolling up through the history a page at a time, then back down.
    let page = |code| KeyEvent::new(code, KeyModifiers::NONE);
    let mut scrolled = Frames::new();
    for code in std::iter::repeat_n(KeyCode::PageUp, PAGES)
        .chain(std::iter::repeat_n(KeyCode::PageDown, PAGES))
    {
        scrolled.time(|| {
            chat.on_key(page(code));
            terminal.draw(|f| view::draw(f, &mut chat)).unwrap();
        });
    }

    let (walk, keys) = file_picker();

    println!("## TUI ({WIDTH}x{HEIGHT})");
    println!("time to first frame: {:.2} ms", ms(first_frame));
    println!(
        "first frame of a resumed {CHAT_MESSAGES}-message session (app built, session loaded, frame drawn): {:.2} ms ({:.2} ms on CPU); the rest of its entries made after it in {:.2} ms on CPU; highlighting loaded after that in {:.1} ms, the frame that colours the code {:.2} ms",
        ms(resumed_frame),
        ms(resumed_cpu),
        ms(rest),
        ms(highlighting),
        ms(coloured_frame)
    );
    println!(
        "streaming {TOKENS_PER_SECOND} tokens/s at {FPS} fps for {STREAM_SECONDS} s into the {CHAT_MESSAGES}-message chat, {}",
        streamed.report()
    );
    println!(
        "PageUp {PAGES} times through the history, then PageDown back, {}",
        scrolled.report()
    );
    println!(
        "peak RSS: {:.1} MiB before, {:.1} MiB after loading and drawing the {CHAT_MESSAGES}-message session",
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
    println!(
        "@ picker over {} paths: walk {:.1} ms (its own thread), filter per keystroke median {:.2} ms, max {:.2} ms",
        PICKER_DIRS * (PICKER_FILES_PER_DIR + 1),
        ms(walk),
        ms(keys[keys.len() / 2]),
        ms(*keys.last().unwrap())
    );
}

/// The `@` picker over a big project: how long the walk takes to arrive,
/// and each keystroke of a query (the editor's key and the picker's
/// refilter, what the UI thread does), sorted.
fn file_picker() -> (Duration, Vec<Duration>) {
    let project = tempfile::tempdir().unwrap();
    for d in 0..PICKER_DIRS {
        let dir = project.path().join(format!("module_{d}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..PICKER_FILES_PER_DIR {
            std::fs::write(dir.join(format!("source_file_{f}.rs")), "").unwrap();
        }
    }
    let mut picker = FilePicker::new(project.path());
    let mut editor = Editor::new();
    editor.insert_char('@');
    let started = Instant::now();
    picker.sync(&editor);
    while picker.shown().next().is_none() {
        std::thread::sleep(Duration::from_millis(1));
        picker.poll();
    }
    let walk = started.elapsed();
    let mut keys: Vec<Duration> = "module_42/source_file_7"
        .chars()
        .map(|c| {
            let started = Instant::now();
            editor.insert_char(c);
            picker.sync(&editor);
            started.elapsed()
        })
        .collect();
    assert!(picker.shown().any(|p| p == "module_42/source_file_7.rs"));
    keys.sort();
    (walk, keys)
}
