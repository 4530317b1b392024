//! Items 10 and 12: lifecycle events to extensions, one-way frames from them.

use serde_json::json;
use zot_extensions::zot_protocol::zot::{NotifyLevel, PanelRender};
use zot_extensions::{Hook, HostEvent};

use super::support::{Env, SECS5, event_matching, received_of, registers};

/// 300 events emitted back to back, then shutdown at once: every one arrives,
/// in order, before `shutdown`; unsubscribed events are not sent.
#[tokio::test]
async fn events_arrive_in_order_and_none_is_lost_before_shutdown() {
    let env = Env::new();
    let dir = env.ext(
        "observer",
        &registers(r#"[{"type":"subscribe","events":["turn_start","tool_call","session_start"]}]"#),
    );
    let other = env.ext(
        "bystander",
        &registers(r#"[{"type":"subscribe","events":["turn_end"]}]"#),
    );
    let (host, _rx) = env.start(&[&dir, &other]).await;
    host.observe(&Hook::SessionStart).await;
    for step in 1..=300 {
        host.observe(&Hook::TurnStart { step }).await;
        if step == 150 {
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
        stop: "end".into(),
        error: None,
    })
    .await;
    host.shutdown().await;

    let frames: Vec<_> = super::support::received(&dir)
        .into_iter()
        .filter(|f| f["type"] != "hello_ack")
        .collect();
    assert_eq!(frames.len(), 303, "lost events");
    assert_eq!(frames[0], json!({"type":"event","event":"session_start"}));
    let steps: Vec<u64> = frames.iter().filter_map(|f| f["step"].as_u64()).collect();
    assert_eq!(steps, (1..=300).collect::<Vec<_>>());
    assert_eq!(
        frames[151],
        json!({"type":"event","event":"tool_call","tool_id":"t1","tool_name":"read","tool_args":{"path":"foo.go"}})
    );
    assert_eq!(frames[302], json!({"type":"shutdown"}));
    assert_eq!(
        received_of(&other, "event"),
        [json!({"type":"event","event":"turn_end","stop":"end"})]
    );
}

/// Frames several times the pipe's buffer, sent among small ones to an
/// extension that has not started reading: what does not fit waits in the
/// writer task, the small frames behind it wait too, and the extension
/// gets every frame whole and in order (the host writes a frame itself only
/// when nothing waits before it).
#[tokio::test]
async fn frames_larger_than_the_pipe_keep_their_order_among_small_ones() {
    let env = Env::new();
    let dir = env.ext(
        "slow_reader",
        r#"
handshake(NAME)
emit({"type": "subscribe", "events": ["turn_start", "tool_call"]})
emit({"type": "ready"})
time.sleep(0.5)
for msg in frames():
    if msg["type"] == "shutdown":
        emit({"type": "shutdown_ack"})
        break
"#,
    );
    let (host, _rx) = env.start(&[&dir]).await;
    let big = "x".repeat(200 * 1024);
    for step in 1..=40 {
        host.observe(&Hook::TurnStart { step }).await;
        if step % 10 == 0 {
            host.observe(&Hook::ToolCall {
                id: format!("t{step}"),
                name: "write".into(),
                args: json!({"content": big}),
                parent_tool_call_id: None,
            })
            .await;
        }
    }
    host.shutdown().await;

    let events = received_of(&dir, "event");
    assert_eq!(events.len(), 44, "lost frames");
    let mut step = 0;
    for event in &events {
        if event["event"] == "turn_start" {
            step += 1;
            assert_eq!(event["step"], step);
        } else {
            assert_eq!(event["tool_id"], format!("t{step}"), "out of order");
            assert_eq!(
                event["tool_args"]["content"].as_str().map(str::len),
                Some(big.len())
            );
        }
    }
    assert_eq!(step, 40);
}

#[tokio::test]
async fn one_way_frames_become_attributed_host_events() {
    let env = Env::new();
    let body = r#"
handshake(NAME)
emit({"type":"register_command","name":"go"})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "command_invoked":
        emit({"type":"notify","level":"warn","message":"careful"})
        emit({"type":"clear_notes"})
        emit({"type":"submit","text":"   "})
        emit({"type":"submit","text":"summarize"})
        emit({"type":"panel_render","panel_id":"p1","title":"T","lines":["x"]})
        emit({"type":"panel_close","panel_id":"p1"})
        emit({"type":"command_response","id":msg["id"],"action":"noop"})
"#;
    let dir = env.ext("talker", body);
    let (host, mut rx) = env.start(&[&dir]).await;
    host.invoke_command("go", "").await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let ev = event_matching(&mut rx, SECS5, |_| true)
            .await
            .expect("host event");
        seen.push(ev);
    }
    let ext = || "talker".to_owned();
    assert_eq!(
        seen,
        [
            HostEvent::Notify {
                extension: ext(),
                level: NotifyLevel::Warn,
                message: "careful".into()
            },
            HostEvent::ClearNotes { extension: ext() },
            HostEvent::Submit {
                extension: ext(),
                text: "summarize".into()
            },
            HostEvent::PanelRender {
                extension: ext(),
                panel: PanelRender {
                    panel_id: "p1".into(),
                    title: Some("T".into()),
                    lines: vec!["x".into()],
                    footer: None
                }
            },
            HostEvent::PanelClose {
                extension: ext(),
                panel_id: "p1".into()
            },
        ]
    );
    host.shutdown().await;
}

#[tokio::test]
async fn panel_keys_and_closes_reach_the_owner_only() {
    use zot_extensions::zot_protocol::zot::Key;
    let env = Env::new();
    let owner = env.ext("owner", &registers("[]"));
    let other = env.ext("other", &registers("[]"));
    let (host, _rx) = env.start(&[&owner, &other]).await;
    assert!(host.panel_key("owner", "p1", Key::Down, None));
    assert!(host.panel_key("owner", "p1", Key::Rune, Some("x".into())));
    assert!(host.panel_close("owner", "p1"));
    assert!(!host.panel_key("nobody", "p1", Key::Up, None));
    host.shutdown().await;
    let keys = received_of(&owner, "panel_key");
    assert_eq!(
        keys[0],
        json!({"type":"panel_key","panel_id":"p1","key":"down"})
    );
    assert_eq!(
        keys[1],
        json!({"type":"panel_key","panel_id":"p1","key":"rune","text":"x"})
    );
    assert_eq!(
        received_of(&owner, "panel_close"),
        [json!({"type":"panel_close","panel_id":"p1"})]
    );
    assert!(received_of(&other, "panel_key").is_empty());
}
