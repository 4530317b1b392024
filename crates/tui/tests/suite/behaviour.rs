//! App behaviour: queueing, cancelling, notes, panels, commands, exits.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use zot_protocol::ui::{CommandOutcome, CommandReply, HostEvent, QuestionReply};
use zot_protocol::zot::{Key, NotifyLevel, PanelContent, PanelRender};
use zot_tui::app::{AppMsg, Group, StatusKind};
use zot_tui::modal::Dialog;
use zot_tui::transcript::Entry;

use super::support::{app, app_with, config, render};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn type_text(app: &mut zot_tui::app::App, text: &str) {
    for c in text.chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
}

fn reply(outcome: CommandOutcome, error: Option<&str>) -> AppMsg {
    AppMsg::Command {
        name: "todo".into(),
        result: Ok(CommandReply {
            extension: "todo".into(),
            command: "todo".into(),
            outcome,
            error: error.map(str::to_owned),
        }),
    }
}

fn panel(id: &str) -> CommandOutcome {
    CommandOutcome::OpenPanel(PanelContent {
        id: id.into(),
        title: Some("T".into()),
        lines: vec!["a".into()],
        footer: None,
    })
}

#[tokio::test]
async fn enter_while_busy_queues_and_esc_unqueues_but_keeps_notes_in_place() {
    let (mut app, _, _) = app();
    type_text(&mut app, "first");
    app.on_key(key(KeyCode::Enter));
    assert!(app.is_busy());
    type_text(&mut app, "second");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(*app.queue(), ["second"]);
    app.on_host(HostEvent::Notify {
        extension: "x".into(),
        level: NotifyLevel::Info,
        message: "hi".into(),
    });
    app.on_key(key(KeyCode::Esc));
    assert!(app.queue().is_empty());
    assert_eq!(app.editor().text(), "second");
    // A note is part of what happened: it stays where it came.
    assert_eq!(app.notes().len(), 1);
    assert!(matches!(app.entries().last(), Some(Entry::Note(n)) if n.text == "hi"));
}

#[tokio::test]
async fn a_long_note_wraps_to_the_screen_instead_of_being_cut() {
    let (mut app, _, _) = app();
    let message = "lost the connection to wss://tools.example.com/guard; reconnecting in 4 s \
                   (attempt 3), the tools of guard are unavailable until then";
    app.on_host(HostEvent::Notify {
        extension: "guard".into(),
        level: NotifyLevel::Warn,
        message: message.into(),
    });
    let screen = render(&mut app, 40, 20);
    // Every word of it is on the screen, over several rows (`render` quotes
    // each row).
    let shown: String = screen
        .lines()
        .flat_map(|row| row.trim_matches('"').split_whitespace())
        .collect::<Vec<_>>()
        .join(" ");
    let note = format!("[guard] {message}");
    assert!(shown.contains(&note), "{note:?} not whole in\n{screen}");
}

#[tokio::test]
async fn mcp_completes_off_for_running_servers_and_on_for_stopped_ones() {
    let (mut app, host, _) = app();
    let rows = |app: &zot_tui::app::App| -> Vec<String> {
        app.popup()
            .unwrap_or_default()
            .into_iter()
            .map(|(name, ..)| name)
            .collect()
    };
    // Nothing typed after `/mcp `: no completion, so Enter lists the servers.
    type_text(&mut app, "/mcp ");
    assert!(app.popup().is_none());
    type_text(&mut app, "o");
    assert_eq!(rows(&app), ["mcp off github", "mcp on slack"]);
    type_text(&mut app, "n");
    assert_eq!(rows(&app), ["mcp on slack"]);
    type_text(&mut app, " x");
    assert!(app.popup().is_none());
    for _ in 0..2 {
        app.on_key(key(KeyCode::Backspace));
    }
    app.on_key(key(KeyCode::Enter));
    tokio::time::timeout(Duration::from_secs(5), async {
        while host.mcp_calls.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("/mcp ran");
    assert_eq!(*host.mcp_calls.lock().unwrap(), ["on slack"]);
}

#[tokio::test]
async fn queued_prompts_are_delivered_in_order_when_idle() {
    let (mut app, _, _) = app();
    app.submit("one");
    app.submit("two");
    app.submit("three");
    app.on_worker(zot_tui::worker::WorkerEvent::Idle);
    app.on_worker(zot_tui::worker::WorkerEvent::Idle);
    let users: Vec<&Entry> = app
        .entries()
        .iter()
        .filter(|e| matches!(e, Entry::User(_)))
        .collect();
    assert_eq!(
        users,
        [
            &Entry::User("one".into()),
            &Entry::User("two".into()),
            &Entry::User("three".into())
        ]
    );
}

#[tokio::test]
async fn clear_notes_removes_only_that_extensions_notes_and_notes_stay_in_order() {
    let (mut app, _, _) = app();
    for ext in ["a", "b", "a"] {
        app.on_host(HostEvent::Notify {
            extension: ext.into(),
            level: NotifyLevel::Warn,
            message: "m".into(),
        });
    }
    app.on_host(HostEvent::ClearNotes {
        extension: "a".into(),
    });
    assert_eq!(app.notes().len(), 1);
    assert_eq!(app.notes()[0].extension, "b");
    app.submit("go");
    // Earlier notes stay above the prompt that followed them.
    assert_eq!(app.notes().len(), 1);
    let entries = app.entries();
    assert!(matches!(&entries[entries.len() - 2], Entry::Note(n) if n.extension == "b"));
    assert_eq!(entries[entries.len() - 1], Entry::User("go".into()));
}

#[tokio::test]
async fn unknown_commands_and_path_like_text() {
    let (mut app, _, _) = app();
    app.submit("/nonsense arg");
    let status = app.status().cloned().unwrap();
    assert_eq!(status.kind, StatusKind::Error);
    assert!(status.text.contains("unknown command /nonsense"));
    assert!(app.entries().is_empty(), "nothing was sent");
    app.submit("/usr/bin/env is where?");
    assert_eq!(
        app.entries(),
        [Entry::User("/usr/bin/env is where?".into())]
    );
}

#[tokio::test]
async fn extension_commands_run_case_insensitively_and_replies_act() {
    let (mut app, _, mut msgs) = app();
    app.submit("/DEPLOY now");
    let msg = tokio::time::timeout(Duration::from_secs(5), msgs.recv())
        .await
        .unwrap()
        .unwrap();
    match &msg {
        AppMsg::Command { name, result } => {
            assert_eq!(name, "Deploy");
            assert_eq!(
                result.as_ref().unwrap().outcome,
                CommandOutcome::Display("ran Deploy now".into())
            );
        }
        other => panic!("{other:?}"),
    }
    app.on_app(msg);
    assert_eq!(app.notes().len(), 1);
    assert_eq!(app.notes()[0].text, "ran Deploy now");

    app.on_app(reply(CommandOutcome::Insert("inserted".into()), None));
    assert_eq!(app.editor().text(), "inserted");
    app.on_app(reply(CommandOutcome::Noop, Some("went wrong")));
    let status = app.status().cloned().unwrap();
    assert_eq!(status.kind, StatusKind::Error);
    assert_eq!(status.text, "extension /todo: went wrong");
    app.on_app(reply(CommandOutcome::Prompt("do it".into()), None));
    assert!(app.entries().contains(&Entry::User("do it".into())));
    app.on_app(AppMsg::Command {
        name: "slow".into(),
        result: Err("timeout waiting for x/slow".into()),
    });
    assert!(app.status().cloned().unwrap().text.contains("timeout"));
}

#[tokio::test]
async fn popup_filters_case_insensitively_with_builtins_first() {
    let (mut app, _, _) = app();
    type_text(&mut app, "/");
    let rows = app.popup().unwrap();
    assert_eq!(rows[0].0, "help");
    let ext: Vec<&str> = rows
        .iter()
        .filter(|r| r.2 != Group::Builtin)
        .map(|r| r.0.as_str())
        .collect();
    assert_eq!(ext, ["Deploy", "todo", "weather", "git:commit"]);
    type_text(&mut app, "WE");
    let rows = app.popup().unwrap();
    assert_eq!(
        rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["weather"]
    );
    app.on_key(key(KeyCode::Tab));
    assert_eq!(app.editor().text(), "/weather ");
    assert!(app.popup().is_none());
}

#[tokio::test]
async fn panels_take_the_keyboard_and_close_cleanly() {
    let (mut app, host, _) = app();
    app.on_app(reply(panel("p1"), None));
    app.on_key(key(KeyCode::Down));
    app.on_key(key(KeyCode::Char('x')));
    app.on_key(key(KeyCode::PageDown));
    {
        let keys = host.keys.lock().unwrap();
        assert_eq!(keys[0], ("todo".into(), "p1".into(), Key::Down, None));
        assert_eq!(
            keys[1],
            ("todo".into(), "p1".into(), Key::Rune, Some("x".into()))
        );
        assert_eq!(keys[2].2, Key::PageDown);
    }
    assert!(
        app.editor().is_empty(),
        "keys went to the panel, not the editor"
    );

    // Renders for another panel id or extension are ignored.
    let render = |id: &str| PanelRender {
        panel_id: id.into(),
        title: None,
        lines: vec!["new".into()],
        footer: None,
    };
    app.on_host(HostEvent::PanelRender {
        extension: "other".into(),
        panel: render("p1"),
    });
    app.on_host(HostEvent::PanelRender {
        extension: "todo".into(),
        panel: render("p2"),
    });
    assert_eq!(app.panel().unwrap().lines, ["a"]);
    app.on_host(HostEvent::PanelRender {
        extension: "todo".into(),
        panel: render("p1"),
    });
    assert_eq!(app.panel().unwrap().lines, ["new"]);
    assert_eq!(
        app.panel().unwrap().title,
        "T",
        "an empty title keeps the old one"
    );

    // A second panel closes the first and tells its owner.
    app.on_app(reply(panel("p2"), None));
    assert_eq!(
        host.closed.lock().unwrap().as_slice(),
        [("todo".to_owned(), "p1".to_owned())]
    );
    // Esc closes it and tells the owner; Ctrl+C too.
    app.on_key(key(KeyCode::Esc));
    assert!(app.panel().is_none());
    assert_eq!(host.closed.lock().unwrap().len(), 2);
    app.on_app(reply(panel("p3"), None));
    app.on_key(ctrl('c'));
    assert!(app.panel().is_none());
    assert!(!app.should_quit());
    // The extension closing its own panel sends nothing back.
    app.on_app(reply(panel("p4"), None));
    app.on_host(HostEvent::PanelClose {
        extension: "todo".into(),
        panel_id: "p4".into(),
    });
    assert!(app.panel().is_none());
    assert_eq!(host.closed.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn ctrl_c_twice_exits() {
    let (mut app, _, _) = app();
    type_text(&mut app, "draft");
    app.on_key(ctrl('c'));
    assert!(!app.should_quit());
    assert!(app.editor().is_empty());
    app.on_key(ctrl('c'));
    assert!(app.should_quit());
}

#[tokio::test]
async fn without_credentials_commands_work_and_prompts_explain() {
    let mut cfg = config();
    cfg.missing_credentials =
        Some("no API key: set ANTHROPIC_API_KEY or use --provider ollama".into());
    let (mut app, _, _) = app_with(cfg);
    assert!(matches!(&app.entries()[0], Entry::Info(text) if text.contains("--provider ollama")));
    app.submit("hello");
    // The prompt stays in the transcript, followed by the whole reason.
    let [.., Entry::User(typed), Entry::Error(why)] = app.entries() else {
        panic!("{:?}", app.entries())
    };
    assert_eq!(typed, "hello");
    assert!(why.contains("ANTHROPIC_API_KEY"), "{why}");
    assert!(!app.is_busy());
    app.submit("/help");
    assert!(
        matches!(app.entries().last(), Some(Entry::Info(text)) if text.contains("/reload-ext"))
    );
}

#[tokio::test]
async fn editor_keys_and_paste() {
    let (mut app, _, _) = app();
    app.on_paste("line one\r\nline two");
    assert_eq!(app.editor().text(), "line one\nline two");
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
    type_text(&mut app, "three");
    assert_eq!(app.editor().lines().len(), 3);
    app.on_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(app.editor().cursor(), (2, 0));
}

#[tokio::test]
async fn untrusted_project_asks_once_and_trusting_reloads() {
    let mut cfg = config();
    let inputs = vec![
        "2 extensions in .zot/extensions".to_owned(),
        "1 hook in .zot/hooks.json".to_owned(),
    ];
    cfg.untrusted_inputs = inputs.clone();
    let (mut app, host, mut msgs) = app_with(cfg.clone());
    assert!(matches!(
        app.dialog(),
        Some(Dialog::Trust { inputs: shown }) if *shown == inputs
    ));
    app.on_key(key(KeyCode::Char('y')));
    assert!(*host.trusted.lock().unwrap());
    let msg = tokio::time::timeout(Duration::from_secs(5), msgs.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(msg, AppMsg::Reloaded(_)), "{msg:?}");

    let (mut app, host, _) = app_with(cfg);
    app.on_key(key(KeyCode::Char('n')));
    assert!(app.dialog().is_none());
    assert!(!*host.trusted.lock().unwrap());
    assert!(app.status().cloned().unwrap().text.contains("zot trust"));
}

#[tokio::test]
async fn confirmation_keys_answer_the_agent() {
    use zot_tui::worker::{ConfirmRequest, Decision, WorkerEvent};
    for (code, want) in [
        (KeyCode::Char('y'), Decision::Yes),
        (KeyCode::Char('a'), Decision::AlwaysThisTool),
        (KeyCode::Char('A'), Decision::Always),
        (KeyCode::Char('n'), Decision::No),
        (KeyCode::Esc, Decision::No),
    ] {
        let (mut app, _, _) = app();
        let (reply, answer) = tokio::sync::oneshot::channel();
        app.on_worker(WorkerEvent::Confirm(ConfirmRequest {
            id: "t".into(),
            name: "bash".into(),
            preview: "ls".into(),
            reply,
        }));
        app.on_key(key(KeyCode::Char('z')));
        app.on_key(key(code));
        assert_eq!(answer.await.unwrap(), want);
        assert!(app.dialog().is_none());
    }
    // Arrows and Enter pick too.
    let (mut app, _, _) = app();
    let (reply, answer) = tokio::sync::oneshot::channel();
    app.on_worker(WorkerEvent::Confirm(ConfirmRequest {
        id: "t".into(),
        name: "bash".into(),
        preview: "ls".into(),
        reply,
    }));
    app.on_key(key(KeyCode::Right));
    app.on_key(key(KeyCode::Right));
    app.on_key(key(KeyCode::Enter));
    assert_eq!(answer.await.unwrap(), Decision::Always);
}

#[tokio::test]
async fn built_in_commands() {
    let dir = std::env::temp_dir().join(format!("zot-tui-sessions-{}", std::process::id()));
    let mut cfg = config();
    for prompt in ["first session", "second session"] {
        let mut session = zot_core::session::Session::create(
            &dir,
            std::path::Path::new(&cfg.cwd),
            "anthropic",
            "m",
        )
        .unwrap();
        session.append(&zot_core::message::Message::user(prompt));
    }
    cfg.zot_home = Some(dir.clone());
    cfg.skills = vec![("deploy".into(), "how to ship".into())];
    let (mut app, _, _) = app_with(cfg);

    app.submit("/skills");
    assert!(
        matches!(app.entries().last(), Some(Entry::Info(t)) if t.contains("deploy: how to ship"))
    );
    app.submit("/model");
    assert!(matches!(app.dialog(), Some(Dialog::Models(_))));
    assert!(render(&mut app, 100, 30).contains("anthropic:claude-haiku-4-5"));
    app.on_key(key(KeyCode::Esc));
    app.submit("/model claude-haiku-4-5");
    assert_eq!(app.config().model, "claude-haiku-4-5");
    app.submit("/yolo");
    assert!(app.status().cloned().unwrap().text.contains("yolo"));
    app.submit("/sandbox");
    assert!(
        matches!(app.entries().last(), Some(Entry::Info(t)) if t.starts_with("bash sandbox: off"))
    );
    app.submit("/sandbox workspace");
    assert_eq!(
        app.status().cloned().unwrap().text,
        "bash sandbox: workspace, no network"
    );
    app.submit("/sandbox read-only net");
    assert_eq!(app.config().sandbox.describe(), "read-only + network");
    app.submit("/sandbox everything");
    assert!(app.status().cloned().unwrap().text.contains("unknown mode"));
    assert_eq!(app.config().sandbox.describe(), "read-only + network");
    app.submit("/sessions");
    match app.dialog() {
        Some(Dialog::Sessions(picker)) => assert_eq!(picker.shown().count(), 2),
        _ => panic!("no session picker"),
    }
    app.on_key(key(KeyCode::Esc));
    app.submit("/compact");
    assert!(app.is_busy());
    app.submit("/clear");
    assert!(app.entries().is_empty());
    app.submit("/exit");
    assert!(app.should_quit());
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn extension_status_widgets_and_questions() {
    let (mut app, _, _) = app();
    app.on_host(HostEvent::Status {
        extension: "notes".into(),
        key: "notes:job".into(),
        text: "researching".into(),
    });
    app.on_host(HostEvent::Status {
        extension: "other".into(),
        key: "other:x".into(),
        text: "busy".into(),
    });
    app.on_host(HostEvent::Status {
        extension: "notes".into(),
        key: "notes:job".into(),
        text: "testing".into(),
    });
    assert_eq!(
        app.statuses(),
        [
            ("notes:job".to_owned(), "testing".to_owned()),
            ("other:x".to_owned(), "busy".to_owned())
        ]
    );
    app.on_host(HostEvent::Status {
        extension: "other".into(),
        key: "other:x".into(),
        text: String::new(),
    });
    assert_eq!(app.statuses().len(), 1);
    app.on_host(HostEvent::Widget {
        extension: "notes".into(),
        key: "notes:w".into(),
        lines: vec!["✓ research".into(), "… tests".into()],
    });
    let screen = super::support::render(&mut app, 80, 12);
    assert!(
        screen.contains("testing") && screen.contains("✓ research"),
        "{screen}"
    );
    app.on_host(HostEvent::Widget {
        extension: "notes".into(),
        key: "notes:w".into(),
        lines: vec![],
    });
    assert!(app.widgets().is_empty());

    let (tx, rx) = std::sync::mpsc::channel();
    let answer = QuestionReply::new(move |a| tx.send(a).unwrap());
    app.on_host(HostEvent::Question {
        extension: "deploy".into(),
        prompt: "Which environment?".into(),
        options: vec!["staging".into(), "production".into()],
        reply: answer,
    });
    let screen = super::support::render(&mut app, 80, 16);
    assert!(
        screen.contains("deploy asks") && screen.contains("2. production"),
        "{screen}"
    );
    app.on_key(key(KeyCode::Down));
    app.on_key(key(KeyCode::Enter));
    assert_eq!(rx.recv().unwrap(), Some("production".to_owned()));

    let (tx, rx) = std::sync::mpsc::channel();
    let answer = QuestionReply::new(move |a| tx.send(a).unwrap());
    app.on_host(HostEvent::Question {
        extension: "d".into(),
        prompt: "?".into(),
        options: vec!["a".into()],
        reply: answer,
    });
    app.on_key(key(KeyCode::Esc));
    assert_eq!(rx.recv().unwrap(), None, "dismissed");
}

#[tokio::test]
async fn a_running_tool_shows_its_latest_output() {
    use zot_core::event::AgentEvent;
    use zot_tui::worker::WorkerEvent;
    let (mut app, _, _) = app();
    app.on_worker(WorkerEvent::Agent(AgentEvent::ToolCall {
        id: "b1".into(),
        name: "bash".into(),
        args: serde_json::json!({"command": "cargo build"}),
    }));
    for chunk in [
        "Compiling a\n",
        "Compiling b\n",
        "Compiling c\n",
        "Compiling d\n",
    ] {
        app.on_worker(WorkerEvent::Agent(AgentEvent::ToolProgress {
            id: "b1".into(),
            text: chunk.into(),
            dropped_bytes: 0,
        }));
    }
    let screen = super::support::render(&mut app, 60, 12);
    assert!(
        screen.contains("Compiling d") && screen.contains("Compiling b"),
        "{screen}"
    );
    assert!(
        !screen.contains("Compiling a"),
        "only the last lines: {screen}"
    );
    app.on_worker(WorkerEvent::Agent(AgentEvent::ToolResult {
        id: "b1".into(),
        is_error: false,
        content: vec![zot_core::message::Block::Text {
            text: "[exit 0]".into(),
        }],
    }));
    let screen = super::support::render(&mut app, 60, 12);
    assert!(
        screen.contains("✓ [exit 0]") && !screen.contains("Compiling d"),
        "{screen}"
    );
}

#[tokio::test]
async fn extension_text_is_shown_without_terminal_controls() {
    let (mut app, _, _) = app();
    app.on_host(HostEvent::Notify {
        extension: "x".into(),
        level: NotifyLevel::Info,
        message: "\u{1b}]52;c;ZXZpbA==\u{7}copy \u{1b}[2Jclear".into(),
    });
    app.on_host(HostEvent::Status {
        extension: "x".into(),
        key: "x:s".into(),
        text: "\u{1b}]0;title\u{7}busy".into(),
    });
    assert_eq!(app.notes()[0].text, "copy clear");
    assert_eq!(app.statuses()[0].1, "busy");
    let screen = super::support::render(&mut app, 80, 12);
    assert!(!screen.contains('\u{1b}'), "{screen}");
}

/// A prompt ending in an `@word` brought back from the history leaves the
/// file picker closed, so Up goes on browsing; typing opens it, and Esc
/// closes it keeping the text.
#[tokio::test]
async fn history_does_not_open_the_file_picker_and_esc_keeps_the_text() {
    let (mut app, _, _) = app();
    type_text(&mut app, "older");
    app.on_key(key(KeyCode::Enter));
    type_text(&mut app, "look at @README");
    assert!(app.file_picker().is_some());
    app.on_key(key(KeyCode::Esc));
    assert!(app.file_picker().is_none());
    assert_eq!(app.editor().text(), "look at @README");
    app.on_key(key(KeyCode::Enter));
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.editor().text(), "look at @README");
    assert!(app.file_picker().is_none());
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.editor().text(), "older");
    app.on_key(key(KeyCode::Down));
    type_text(&mut app, "2");
    assert!(app.file_picker().is_some());
}
