//! Lifecycle events (in order, only the subscribed ones), panels, and the
//! one-way frames reaching the host as `HostEvent`s.

use serde_json::{Value, json};
use zot_extensions::zot_protocol::zot::{Key, NotifyLevel, PanelRender};
use zot_extensions::{CommandOutcome, Hook, HostEvent};

use super::support::{Env, SECS5, assert_frames_valid, event_matching, eventually};

/// Events the probe recorded in `<data_dir>/events.jsonl`.
fn recorded(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn events_are_handled_in_order_and_only_when_subscribed() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    host.observe(&Hook::SessionStart).await;
    for step in 1..=100 {
        host.observe(&Hook::TurnStart { step }).await;
        host.observe(&Hook::AssistantMessage {
            text: "not subscribed".into(),
        })
        .await;
        if step == 50 {
            host.observe(&Hook::ToolCall {
                id: "t1".into(),
                name: "read".into(),
                args: json!({"path": "foo.go"}),
                parent_tool_call_id: None,
            })
            .await;
        }
    }
    host.observe(&Hook::TurnEnd {
        stop: "end_turn".into(),
        error: None,
    })
    .await;
    assert!(eventually(SECS5, || recorded(&dir).len() >= 103).await);
    let events = recorded(&dir);
    assert_eq!(events.len(), 103);
    assert_eq!(events[0], json!({"event": "session_start"}));
    let steps: Vec<u64> = events.iter().filter_map(|e| e["step"].as_u64()).collect();
    assert_eq!(steps, (1..=100).collect::<Vec<_>>());
    assert_eq!(
        events[51],
        json!({"event": "tool_call", "tool_id": "t1", "tool_name": "read", "tool_args": {"path": "foo.go"}})
    );
    assert_eq!(
        events[102],
        json!({"event": "turn_end", "stop": "end_turn"})
    );
    host.shutdown().await;
}

fn render(lines: &[&str]) -> HostEvent {
    HostEvent::PanelRender {
        extension: "probe".into(),
        panel: PanelRender {
            panel_id: "probe-panel".into(),
            title: Some("Probe".into()),
            lines: lines.iter().map(|l| (*l).to_owned()).collect(),
            footer: Some("x closes".into()),
        },
    }
}

#[tokio::test]
async fn panel_keys_redraw_in_order_and_closing_works_both_ways() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, mut rx) = env.start(&[&dir]).await;
    let opened = host.invoke_command("panel", "").await.unwrap();
    assert!(matches!(opened.outcome, CommandOutcome::OpenPanel(_)));

    let keys = [
        (Key::Down, None),
        (Key::Rune, Some("a")),
        (Key::Enter, None),
        (Key::Rune, Some("b")),
    ];
    for (key, text) in keys {
        assert!(host.panel_key("probe", "probe-panel", key, text.map(String::from)));
    }
    for want in ["Down", "Rune a", "Enter", "Rune b"] {
        let got = event_matching(&mut rx, SECS5, |e| {
            matches!(e, HostEvent::PanelRender { .. })
        })
        .await
        .unwrap();
        assert_eq!(got, render(&["one", "two", want]));
    }

    host.panel_key("probe", "probe-panel", Key::Rune, Some("x".into()));
    let closed = event_matching(&mut rx, SECS5, |e| {
        matches!(e, HostEvent::PanelClose { .. })
    })
    .await
    .unwrap();
    assert_eq!(
        closed,
        HostEvent::PanelClose {
            extension: "probe".into(),
            panel_id: "probe-panel".into()
        }
    );

    assert!(host.panel_close("probe", "probe-panel"));
    let note = event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Notify { .. }))
        .await
        .unwrap();
    assert_eq!(
        note,
        HostEvent::Notify {
            extension: "probe".into(),
            level: NotifyLevel::Info,
            message: "panel closed by the user".into()
        }
    );
    host.shutdown().await;
    assert_frames_valid(&dir);
}

#[tokio::test]
async fn notify_clear_notes_and_submit_reach_the_host() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, mut rx) = env.start(&[&dir]).await;
    let reply = host.invoke_command("notes", "n1").await.unwrap();
    assert_eq!(reply.outcome, CommandOutcome::Noop);
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = event_matching(&mut rx, SECS5, |e| {
            matches!(
                e,
                HostEvent::Notify { .. } | HostEvent::ClearNotes { .. } | HostEvent::Submit { .. }
            )
        })
        .await
        .expect("one-way frames");
        seen.push(event);
    }
    assert_eq!(
        seen,
        [
            HostEvent::Notify {
                extension: "probe".into(),
                level: NotifyLevel::Warn,
                message: "note n1".into()
            },
            HostEvent::ClearNotes {
                extension: "probe".into()
            },
            HostEvent::Submit {
                extension: "probe".into(),
                text: "submitted n1".into()
            },
        ]
    );
    host.shutdown().await;
    assert_frames_valid(&dir);
}
