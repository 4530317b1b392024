//! Long chats through the app's real rendering: the chat keeps each entry's
//! rendering per width and lays out only what shows, so these check that a
//! kept rendering never shows stale: paging, resizing, entries that change,
//! and a streamed message once it is finished.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use zot_core::event::AgentEvent;
use zot_core::message::{Block, Message, Role};
use zot_tui::app::App;
use zot_tui::worker::WorkerEvent;

use super::support::{app, render};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn text(role: Role, text: String) -> Message {
    Message {
        role,
        content: vec![Block::Text { text }],
        time: None,
    }
}

/// `count` one-line messages: "question i" from the user, "answer i" from
/// the model. Each shows as one row and the blank row after it.
fn questions_and_answers(count: usize) -> Vec<Message> {
    (0..count)
        .map(|i| match i % 2 {
            0 => text(Role::User, format!("question {i}")),
            _ => text(Role::Assistant, format!("answer {i}")),
        })
        .collect()
}

fn resumed(messages: Vec<Message>) -> App {
    let (mut app, _, _) = app();
    app.on_worker(WorkerEvent::Transcript(messages));
    app
}

/// The chat's rows of a screen: the lines above the editor's box, trimmed.
fn chat_rows(screen: &str) -> Vec<String> {
    screen
        .lines()
        .map(|l| l.trim_matches('"').trim_end().to_owned())
        .take_while(|l| !l.starts_with('╭') && !l.starts_with('┌'))
        .collect()
}

/// What rows `start..end` of [`questions_and_answers`]'s chat show.
fn expected_rows(start: usize, end: usize) -> Vec<String> {
    (start..end)
        .map(|row| match (row % 2, row / 2) {
            (1, _) => String::new(),
            (_, i) if i % 2 == 0 => format!("› question {i}"),
            (_, i) => format!("answer {i}"),
        })
        .collect()
}

#[tokio::test]
async fn paging_through_a_long_resumed_chat_shows_the_right_rows() {
    let messages = 3_000;
    let total = 2 * messages;
    let mut app = resumed(questions_and_answers(messages));
    let screen = render(&mut app, 80, 24);
    let height = chat_rows(&screen).len();
    assert_eq!(
        chat_rows(&screen),
        expected_rows(total - height, total),
        "{screen}"
    );

    // Ten rows a page, drawn after each press as the terminal does.
    for pages in 1..=120 {
        app.on_key(key(KeyCode::PageUp));
        let screen = render(&mut app, 80, 24);
        let end = total - 10 * pages;
        assert_eq!(
            chat_rows(&screen),
            expected_rows(end - height, end),
            "after {pages} pages up:\n{screen}"
        );
    }
    // Past the top, the first rows stay on screen.
    for _ in 0..600 {
        app.on_key(key(KeyCode::PageUp));
    }
    let screen = render(&mut app, 80, 24);
    assert_eq!(chat_rows(&screen), expected_rows(0, height), "{screen}");
    app.on_key(key(KeyCode::PageDown));
    let screen = render(&mut app, 80, 24);
    assert_eq!(
        chat_rows(&screen),
        expected_rows(10, 10 + height),
        "{screen}"
    );
    for _ in 0..700 {
        app.on_key(key(KeyCode::PageDown));
    }
    let screen = render(&mut app, 80, 24);
    assert_eq!(
        chat_rows(&screen),
        expected_rows(total - height, total),
        "{screen}"
    );
}

/// The chat of a long conversation with long lines, resized while scrolled
/// up: each width shows what an app that never drew at another width shows.
#[tokio::test]
async fn a_resize_wraps_every_entry_again() {
    let long = |i: usize| {
        (0..30)
            .map(|w| format!("w{i}_{w}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let messages: Vec<Message> = (0..400)
        .map(|i| match i % 2 {
            0 => text(Role::User, long(i)),
            _ => text(
                Role::Assistant,
                format!("{}\n\n```rust\nlet x = {i};\n```", long(i)),
            ),
        })
        .collect();
    let mut app = resumed(messages.clone());
    for _ in 0..5 {
        app.on_key(key(KeyCode::PageUp));
    }
    for width in [100, 40, 100, 61] {
        let screen = render(&mut app, width, 24);
        let mut fresh = resumed(messages.clone());
        for _ in 0..5 {
            fresh.on_key(key(KeyCode::PageUp));
        }
        assert_eq!(screen, render(&mut fresh, width, 24), "at {width} columns");
    }
    // At 40 columns a 30-word line takes several rows, wrapped at spaces.
    let screen = render(&mut app, 40, 24);
    assert!(
        chat_rows(&screen)
            .iter()
            .filter(|row| row.starts_with("w"))
            .all(|row| row.chars().count() <= 40 && !row.ends_with(' ')),
        "{screen}"
    );
}

/// Entries that change after they were drawn (a tool's result arriving, a
/// tool expanded with Ctrl+O) are measured again, and the rows above them
/// move by what they grew.
#[tokio::test]
async fn entries_that_change_are_measured_again() {
    let mut messages = questions_and_answers(200);
    messages.push(text(Role::User, "read it".into()));
    let mut app = resumed(messages.clone());
    app.set_busy(true);
    let output: String = (0..12).map(|l| format!("output line {l}\n")).collect();
    let call = AgentEvent::ToolCall {
        id: "call_1".into(),
        name: "bash".into(),
        args: json!({ "command": "make test" }),
    };
    app.on_worker(WorkerEvent::Agent(call));
    for _ in 0..2 {
        app.on_key(key(KeyCode::PageUp));
    }
    let before = render(&mut app, 80, 24);
    let result = AgentEvent::ToolResult {
        id: "call_1".into(),
        is_error: false,
        content: vec![Block::Text {
            text: output.clone(),
        }],
    };
    app.on_worker(WorkerEvent::Agent(result));
    let after = render(&mut app, 80, 24);
    assert_ne!(before, after);

    // The same conversation loaded whole, never drawn before.
    messages.push(Message {
        role: Role::Assistant,
        content: vec![Block::ToolCall {
            id: "call_1".into(),
            name: "bash".into(),
            args: json!({ "command": "make test" }),
        }],
        time: None,
    });
    messages.push(Message {
        role: Role::Tool,
        content: vec![Block::ToolResult {
            call_id: "call_1".into(),
            is_error: false,
            content: vec![Block::Text { text: output }],
        }],
        time: None,
    });
    let mut fresh = resumed(messages);
    fresh.set_busy(true);
    for _ in 0..2 {
        fresh.on_key(key(KeyCode::PageUp));
    }
    assert_eq!(after, render(&mut fresh, 80, 24));

    // Expanded, the tool shows all its output; the bottom of the chat is its last line.
    app.set_busy(false);
    app.on_key(key(KeyCode::PageDown));
    app.on_key(key(KeyCode::PageDown));
    app.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let expanded = render(&mut app, 80, 24);
    let rows = chat_rows(&expanded);
    let last = rows.iter().rposition(|r| !r.is_empty()).unwrap();
    assert!(rows[last].contains("output line 11"), "{expanded}");
    assert!(
        rows.iter().any(|r| r.contains("output line 5")),
        "{expanded}"
    );
}

/// A message streamed a few words a frame, with a code fence and
/// paragraphs, then finished: the chat shows what it shows for the same
/// message loaded whole, at the bottom and scrolled up.
#[tokio::test]
async fn a_finished_streamed_message_shows_as_if_loaded_whole() {
    let answer: String = (0..30)
        .map(|p| match p % 6 {
            3 => format!("```rust\nfn step_{p}() {{\n    run({p});\n}}\n```\n\n"),
            _ => format!("Paragraph {p} says **something** about `step_{p}`.\n\n"),
        })
        .chain(["The last paragraph, still open when the stream ends.".to_owned()])
        .collect();
    let mut messages = questions_and_answers(40);
    messages.push(text(Role::User, "explain".into()));
    let mut app = resumed(messages.clone());
    app.set_busy(true);
    app.on_worker(WorkerEvent::Agent(AgentEvent::AssistantStart));
    for piece in answer.split_inclusive(' ') {
        let delta = AgentEvent::TextDelta {
            delta: piece.into(),
        };
        app.on_worker(WorkerEvent::Agent(delta));
        render(&mut app, 60, 20);
    }
    let finished = AgentEvent::AssistantMessage {
        content: vec![Block::Text {
            text: answer.clone(),
        }],
        time: None,
    };
    app.on_worker(WorkerEvent::Agent(finished));
    app.set_busy(false);

    messages.push(text(Role::Assistant, answer));
    let mut fresh = resumed(messages);
    for page in 0..12 {
        assert_eq!(
            render(&mut app, 60, 20),
            render(&mut fresh, 60, 20),
            "{page} pages up"
        );
        app.on_key(key(KeyCode::PageUp));
        fresh.on_key(key(KeyCode::PageUp));
    }
}

/// Turns of a prompt, an answer with thinking and a `read` call, the
/// call's result and a closing answer, `turns` times.
fn turns_with_tools(turns: usize) -> Vec<Message> {
    let message = |role, content| Message {
        role,
        content,
        time: None,
    };
    (0..turns)
        .flat_map(|i| {
            let id = format!("call_{i}");
            [
                text(Role::User, format!("question {i}")),
                message(
                    Role::Assistant,
                    vec![
                        Block::Thinking {
                            thinking: format!("turn {i}"),
                            signature: None,
                        },
                        Block::Text {
                            text: format!("answer {i}\n\n```rust\nlet x = {i};\n```"),
                        },
                        Block::ToolCall {
                            id: id.clone(),
                            name: "read".into(),
                            args: json!({ "path": format!("src/file_{i}.rs") }),
                        },
                    ],
                ),
                message(
                    Role::Tool,
                    vec![Block::ToolResult {
                        call_id: id,
                        is_error: false,
                        content: vec![Block::Text {
                            text: format!("contents of file {i}"),
                        }],
                    }],
                ),
                text(Role::Assistant, format!("done with {i}")),
            ]
        })
        .collect()
}

/// A resumed chat makes its older entries only as paging reaches them; every
/// page up to the first message shows what the same chat made whole at once
/// shows.
#[tokio::test]
async fn a_chat_made_as_it_pages_shows_what_it_shows_made_whole() {
    let messages = turns_with_tools(500);
    let mut lazy = resumed(messages.clone());
    let mut whole = resumed(messages);
    assert_eq!(whole.entries().len(), 2_000, "made whole");
    let mut pages = 0;
    loop {
        let screen = render(&mut lazy, 80, 24);
        assert_eq!(screen, render(&mut whole, 80, 24), "{pages} pages up");
        if screen.contains("› question 0") {
            break;
        }
        assert!(pages < 2_000, "never reached the first message:\n{screen}");
        lazy.on_key(key(KeyCode::PageUp));
        whole.on_key(key(KeyCode::PageUp));
        pages += 1;
    }
    let screen = render(&mut lazy, 80, 24);
    for text in ["answer 0", "read src/file_0.rs", "contents of file 0"] {
        assert!(screen.contains(text), "{text}:\n{screen}");
    }
    assert!(pages > 100, "{pages} pages");
}

/// `/copy` and Ctrl+O find the last answer and the last tool call even when
/// the chat has not made them into entries yet.
#[tokio::test]
async fn copy_and_ctrl_o_reach_messages_not_yet_shown() {
    let mut messages = turns_with_tools(1);
    messages.extend((0..1_000).map(|i| text(Role::User, format!("later question {i}"))));
    let mut app = resumed(messages);
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("later question 999"), "{screen}");
    app.submit("/copy");
    assert_eq!(app.take_clipboard().as_deref(), Some("done with 0"));
    app.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let expanded: Vec<&zot_tui::transcript::Entry> = app
        .entries()
        .iter()
        .filter(|e| matches!(e, zot_tui::transcript::Entry::Tool { expanded: true, .. }))
        .collect();
    assert_eq!(expanded.len(), 1, "{expanded:?}");
}
