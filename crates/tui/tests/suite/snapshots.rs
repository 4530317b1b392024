//! One snapshot per screen state the TUI issue lists.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use serde_json::json;
use tokio::sync::oneshot;
use zot_core::event::AgentEvent;
use zot_core::message::Block;
use zot_protocol::ui::{CommandOutcome, CommandReply, HostEvent, ReloadSummary};
use zot_protocol::zot::{NotifyLevel, PanelContent};
use zot_tui::app::AppMsg;
use zot_tui::transcript::Entry;
use zot_tui::worker::{ConfirmRequest, WorkerEvent};

use super::support::{app, render};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn agent(app: &mut zot_tui::app::App, event: AgentEvent) {
    app.on_worker(WorkerEvent::Agent(event));
}

#[tokio::test]
async fn empty_chat() {
    let (mut app, _, _) = app();
    assert_snapshot!(render(&mut app, 80, 12));
}

#[tokio::test]
async fn streaming_text() {
    let (mut app, _, _) = app();
    app.on_key(key(KeyCode::Char('h')));
    app.on_key(key(KeyCode::Char('i')));
    app.on_key(key(KeyCode::Enter));
    app.set_busy(true);
    agent(&mut app, AgentEvent::AssistantStart);
    for delta in ["Hello! ", "I am streaming ", "this answer word by word"] {
        agent(
            &mut app,
            AgentEvent::TextDelta {
                delta: delta.into(),
            },
        );
    }
    assert_snapshot!(render(&mut app, 80, 12));
}

#[tokio::test]
async fn markdown() {
    let (mut app, _, _) = app();
    let text = "# Plan\n\nSome **bold** and `inline code`.\n\n- first item\n- second item\n\n1. one\n2. two\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n> a quote";
    agent(&mut app, AgentEvent::AssistantStart);
    agent(
        &mut app,
        AgentEvent::AssistantMessage {
            content: vec![Block::Text { text: text.into() }],
            time: None,
        },
    );
    assert_snapshot!(render(&mut app, 60, 24));
}

#[tokio::test]
async fn tool_call_and_result() {
    let (mut app, _, _) = app();
    agent(
        &mut app,
        AgentEvent::ToolCall {
            id: "t1".into(),
            name: "bash".into(),
            args: json!({"command": "cargo test"}),
        },
    );
    let output =
        "$ cargo test\n\nrunning 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... ok\n\n[exit 0]";
    agent(
        &mut app,
        AgentEvent::ToolResult {
            id: "t1".into(),
            is_error: false,
            content: vec![Block::Text {
                text: output.into(),
            }],
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolCall {
            id: "t2".into(),
            name: "read".into(),
            args: json!({"path": "missing.rs"}),
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolResult {
            id: "t2".into(),
            is_error: true,
            content: vec![Block::Text {
                text: "no such file: missing.rs".into(),
            }],
        },
    );
    assert_snapshot!("tool_collapsed", render(&mut app, 70, 14));
    app.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    assert_eq!(
        app.entries()
            .iter()
            .filter(|e| matches!(e, Entry::Tool { expanded: true, .. }))
            .count(),
        1
    );
}

#[tokio::test]
async fn queued_messages() {
    let (mut app, _, _) = app();
    app.set_busy(true);
    for text in ["first follow-up", "second follow-up"] {
        app.submit(text);
    }
    assert_eq!(app.queue().len(), 2);
    assert_snapshot!(render(&mut app, 70, 12));
}

#[tokio::test]
async fn every_note_level() {
    let (mut app, _, _) = app();
    for (level, text) in [
        (NotifyLevel::Info, "cache refreshed"),
        (NotifyLevel::Success, "deployed"),
        (NotifyLevel::Warn, "disk almost full"),
        (NotifyLevel::Error, "build failed"),
    ] {
        app.on_host(HostEvent::Notify {
            extension: "ops".into(),
            level,
            message: text.into(),
        });
    }
    assert_snapshot!(render(&mut app, 60, 14));
}

#[tokio::test]
async fn popup_with_extension_commands() {
    let (mut app, _, _) = app();
    app.on_key(key(KeyCode::Char('/')));
    assert_snapshot!("popup_all", render(&mut app, 80, 24));
    // The rows past the popup's 16 are reached by moving the selection:
    // Up from the first row wraps to the last, scrolling the list.
    app.on_key(key(KeyCode::Up));
    assert_snapshot!("popup_scrolled", render(&mut app, 80, 24));
    app.on_key(key(KeyCode::Down));
    app.on_key(key(KeyCode::Char('D')));
    assert_snapshot!("popup_filtered", render(&mut app, 80, 12));
}

/// The popup shows 16 rows at a time; the Markdown commands' group, past
/// them, is reached by typing.
#[tokio::test]
async fn popup_with_markdown_commands() {
    let (mut app, _, _) = app();
    for c in "/git".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    assert_snapshot!(render(&mut app, 80, 8));
}

#[tokio::test]
async fn open_panel() {
    let (mut app, _, _) = app();
    app.on_app(AppMsg::Command {
        name: "todo".into(),
        result: Ok(CommandReply {
            extension: "todo".into(),
            command: "todo".into(),
            outcome: CommandOutcome::OpenPanel(PanelContent {
                id: "todos-main".into(),
                title: Some("Todos".into()),
                lines: vec!["□ ship panel api".into(), "✓ persist state".into()],
                footer: Some("↑/↓ navigate · a add · x complete · esc close".into()),
            }),
            error: None,
        }),
    });
    assert_snapshot!(render(&mut app, 70, 16));
}

#[tokio::test]
async fn confirmation_dialog() {
    let (mut app, _, _) = app();
    let (reply, _answer) = oneshot::channel();
    app.on_worker(WorkerEvent::Confirm(ConfirmRequest {
        id: "t1".into(),
        name: "bash".into(),
        preview: "rm -rf target".into(),
        reply,
    }));
    assert_snapshot!(render(&mut app, 80, 14));
}

#[tokio::test]
async fn reload_status_with_an_error() {
    let (mut app, _, _) = app();
    app.on_app(AppMsg::Reloaded(ReloadSummary {
        stopped: 2,
        loaded: 1,
        ready: 1,
        errors: vec!["extension broken: exited before hello (process: exit status: 3); log: /home/pat/.local/state/zot/logs/ext-broken.log".into()],
    }));
    assert_snapshot!(render(&mut app, 80, 12));
}

#[tokio::test]
async fn narrow_and_wide_terminals() {
    let (mut app, _, _) = app();
    app.submit("explain the borrow checker");
    agent(&mut app, AgentEvent::AssistantStart);
    agent(&mut app, AgentEvent::TextDelta { delta: "The borrow checker makes sure references never outlive the data they point to, and that mutation is exclusive.".into() });
    app.on_host(HostEvent::Notify {
        extension: "ops".into(),
        level: NotifyLevel::Info,
        message: "note".into(),
    });
    assert_snapshot!("narrow_40", render(&mut app, 40, 16));
    assert_snapshot!("wide_160", render(&mut app, 160, 10));
    // Tiny sizes never panic.
    for (w, h) in [(1, 1), (3, 3), (10, 4), (20, 5), (200, 2)] {
        render(&mut app, w, h);
    }
}

/// The incremental renderer used while streaming draws exactly what the
/// full renderer draws once the message is complete.
#[tokio::test]
async fn streaming_renders_like_the_finished_message() {
    let (mut app, _, _) = app();
    app.set_busy(true);
    agent(&mut app, AgentEvent::AssistantStart);
    let text = "First paragraph with `code`.\n\n```sh\necho one\n\necho two\n```\n\n- a list\n- of items\n\nLast words here.";
    let mut screens = Vec::new();
    for piece in text.split_inclusive(' ') {
        agent(
            &mut app,
            AgentEvent::TextDelta {
                delta: piece.into(),
            },
        );
        screens.push(render(&mut app, 50, 20));
    }
    let streamed = screens.pop().unwrap();
    app.set_busy(false);
    let finished = render(&mut app, 50, 20);
    let strip = |s: &str| s.lines().take(15).collect::<Vec<_>>().join("\n");
    assert_eq!(strip(&streamed), strip(&finished));
}

/// An MCP elicitation as a form: defaults filled in, the focused field's
/// description under it, the buttons below.
#[tokio::test]
async fn form_dialog() {
    use zot_protocol::ui::{FieldKind, Form, FormField, FormReply};
    let (mut app, _, _) = app();
    let field = |name: &str, kind: FieldKind, default: Option<serde_json::Value>| FormField {
        name: name.into(),
        title: name.into(),
        description: Some(format!("the {name}")),
        kind,
        required: name == "name",
        default,
    };
    let form = Form {
        schema: serde_json::Value::Null,
        message: "Who are you?".into(),
        fields: vec![
            field("name", FieldKind::Text, None),
            field("age", FieldKind::Integer, Some(42.into())),
            field("subscribe", FieldKind::Boolean, Some(true.into())),
            field(
                "colour",
                FieldKind::Choice {
                    values: vec!["r".into(), "g".into()],
                    labels: vec!["Red".into(), "Green".into()],
                },
                Some("g".into()),
            ),
            field(
                "tags",
                FieldKind::MultiChoice {
                    values: vec!["a".into(), "b".into()],
                    labels: vec!["Alpha".into(), "Beta".into()],
                },
                Some(serde_json::json!(["b"])),
            ),
        ],
    };
    app.on_host(HostEvent::Form {
        extension: "mcp:people".into(),
        form,
        reply: FormReply::new(|_| {}),
    });
    assert_snapshot!(render(&mut app, 80, 20));
}

/// `@` opens the file picker over the project: what follows filters it.
#[tokio::test]
async fn file_picker() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join("src")).unwrap();
    for file in ["src/main.rs", "src/map.rs", "README.md", "Cargo.toml"] {
        std::fs::write(project.path().join(file), "").unwrap();
    }
    let config = zot_tui::app::AppConfig {
        cwd: project.path().display().to_string(),
        ..super::support::config()
    };
    let (mut app, _, _) = super::support::app_with(config);
    for c in "see @ma".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    // The list is walked on a thread of its own; the tick takes it in.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while app.file_picker().is_some_and(|p| p.shown().count() < 2) {
        assert!(std::time::Instant::now() < deadline, "no paths listed");
        std::thread::sleep(std::time::Duration::from_millis(10));
        app.tick();
    }
    // Without the status bar, which names the temporary directory.
    let screen = render(&mut app, 60, 10);
    let lines: Vec<&str> = screen.lines().take(9).collect();
    assert_snapshot!(lines.join("\n"));
}

#[tokio::test]
async fn a_task_with_its_subagent_running_then_folded() {
    let (mut app, _, _) = app();
    app.set_busy(true);
    agent(
        &mut app,
        AgentEvent::ToolCall {
            id: "t1".into(),
            name: "task".into(),
            args: json!({"description": "find the needle", "prompt": "Find it."}),
        },
    );
    let child = |event| AgentEvent::Subagent {
        parent_tool_call_id: "t1".into(),
        event: Box::new(event),
    };
    agent(
        &mut app,
        child(AgentEvent::ToolCall {
            id: "c1".into(),
            name: "grep".into(),
            args: json!({"pattern": "needle"}),
        }),
    );
    agent(
        &mut app,
        child(AgentEvent::ToolCall {
            id: "c2".into(),
            name: "read".into(),
            args: json!({"path": "src/a.rs"}),
        }),
    );
    app.tick();
    app.tick();
    assert_snapshot!("task_running", render(&mut app, 60, 8));
    agent(
        &mut app,
        AgentEvent::ToolResult {
            id: "t1".into(),
            is_error: false,
            content: vec![Block::Text {
                text: "the needle is in src/a.rs".into(),
            }],
        },
    );
    app.set_busy(false);
    assert_snapshot!("task_folded", render(&mut app, 60, 8));
    app.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    assert_snapshot!("task_expanded", render(&mut app, 60, 9));
}
