//! TUI benchmarks (figures go into BENCHMARKS.md):
//! time to first frame, frame time while streaming 5,000 tokens/s into a
//! long chat, peak memory with a 10,000-message session, and the `@` file
//! picker over a 50,000-path project (the walk, and each keystroke's filter).
//!
//! Run: `cargo bench -p zot-tui --bench render`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;
use zot_core::event::AgentEvent;
use zot_core::message::{Block, Message, Role};
use zot_tui::app::{App, AppConfig};
use zot_tui::bridge::NoExtensions;
use zot_tui::editor::Editor;
use zot_tui::file_picker::FilePicker;
use zot_tui::view;
use zot_tui::worker::WorkerEvent;

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;
/// Tokens per second streamed, and the frame rate they arrive at.
const TOKENS_PER_SECOND: usize = 5_000;
const FPS: usize = 60;
const STREAM_SECONDS: usize = 10;
const LONG_CHAT_MESSAGES: usize = 2_000;
const SESSION_MESSAGES: usize = 10_000;
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

fn transcript(count: usize) -> Vec<Message> {
    (0..count)
        .map(|i| {
            let (role, text) = if i % 2 == 0 {
                (Role::User, format!("question {i}"))
            } else {
                (Role::Assistant, markdown(i))
            };
            Message {
                role,
                content: vec![Block::Text { text }],
                time: None,
            }
        })
        .collect()
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

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();

    // 1. Time to first frame: a fresh app drawn once.
    let started = Instant::now();
    let mut first = app();
    terminal.draw(|f| view::draw(f, &mut first)).unwrap();
    let first_frame = started.elapsed();

    // 2. Streaming into a long chat.
    let mut chat = app();
    chat.on_worker(WorkerEvent::Transcript(transcript(LONG_CHAT_MESSAGES)));
    terminal.draw(|f| view::draw(f, &mut chat)).unwrap();
    chat.on_worker(WorkerEvent::Agent(AgentEvent::AssistantStart));
    let per_frame = TOKENS_PER_SECOND / FPS;
    let words: Vec<String> = (0..per_frame * FPS * STREAM_SECONDS)
        .map(|i| {
            if i % 40 == 39 {
                "word\n\n".to_owned()
            } else {
                format!("w{} ", i % 97)
            }
        })
        .collect();
    let mut frames: Vec<Duration> = Vec::new();
    for chunk in words.chunks(per_frame) {
        let started = Instant::now();
        for word in chunk {
            chat.on_worker(WorkerEvent::Agent(AgentEvent::TextDelta {
                delta: word.clone(),
            }));
        }
        terminal.draw(|f| view::draw(f, &mut chat)).unwrap();
        frames.push(started.elapsed());
    }
    frames.sort();
    let pct = |q: f64| frames[((frames.len() - 1) as f64 * q) as usize];

    // 3. Peak memory with a 10,000-message session loaded and drawn.
    let before = peak_rss_kib();
    let mut big = app();
    big.on_worker(WorkerEvent::Transcript(transcript(SESSION_MESSAGES)));
    terminal.draw(|f| view::draw(f, &mut big)).unwrap();
    let after = peak_rss_kib();

    let (walk, keys) = file_picker();

    println!("## TUI ({WIDTH}x{HEIGHT})");
    println!(
        "time to first frame: {:.2} ms",
        first_frame.as_secs_f64() * 1e3
    );
    println!(
        "streaming {TOKENS_PER_SECOND} tokens/s at {FPS} fps for {STREAM_SECONDS} s into a {LONG_CHAT_MESSAGES}-message chat ({} frames): median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        frames.len(),
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        frames.last().unwrap().as_secs_f64() * 1e3
    );
    println!(
        "peak RSS: {:.1} MiB before, {:.1} MiB after loading and drawing a {SESSION_MESSAGES}-message session",
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
    println!(
        "@ picker over {} paths: walk {:.1} ms (its own thread), filter per keystroke median {:.2} ms, max {:.2} ms",
        PICKER_DIRS * (PICKER_FILES_PER_DIR + 1),
        walk.as_secs_f64() * 1e3,
        keys[keys.len() / 2].as_secs_f64() * 1e3,
        keys.last().unwrap().as_secs_f64() * 1e3
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
