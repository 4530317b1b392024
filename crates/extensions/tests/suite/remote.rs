//! Remote extensions: the zot protocol over WebSocket and over HTTP, served
//! by real loopback servers (zot-testkit's `remote`), with disconnects,
//! reconnects, `on_failure`, limits and the manifest's `${VAR}` expansion.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use zot_extensions::zot_protocol::zot::{ContentBlock, Key};
use zot_extensions::{
    CommandOutcome, Connectivity, DispatchError, ExtensionHost, HandshakeError, HostEvent,
    LoadErrorKind, Outcome, ReportStatus, RequestError,
};
use zot_testkit::remote::{Conn, HttpServer, WsServer, guard, handler};

use super::support::{Env, Root, SECS5, event_matching, eventually};

/// Long enough for a reconnect (0.5 s backoff, with jitter) on a busy machine.
const RECONNECT: Duration = Duration::from_secs(15);

fn assert_disconnected(err: &DispatchError) {
    assert!(
        matches!(
            err,
            DispatchError::Request {
                source: RequestError::Disconnected(_),
                ..
            }
        ),
        "{err}"
    );
}

async fn first_warning(rx: &mut tokio::sync::mpsc::UnboundedReceiver<HostEvent>) -> String {
    match event_matching(rx, SECS5, |e| matches!(e, HostEvent::Warning { .. })).await {
        Some(HostEvent::Warning { message, .. }) => message,
        other => panic!("no warning: {other:?}"),
    }
}

fn remote_manifest(env: &Env, name: &str, extra: Value) -> PathBuf {
    let mut manifest = json!({"name": name, "version": "1.0.0"});
    for (key, value) in extra.as_object().unwrap() {
        manifest[key] = value.clone();
    }
    env.manifest(Root::Scratch, name, &manifest.to_string())
}

fn text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// Tool, command, intercept, panel and unsolicited frames through one host.
async fn round_trip(
    env: &Env,
    dir: &std::path::Path,
    host: &ExtensionHost,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<HostEvent>,
) {
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    let dirs = event_matching(
        rx,
        SECS5,
        |e| matches!(e, HostEvent::Notify { message, .. } if message.starts_with("dirs ")),
    )
    .await
    .expect("the hello_ack dirs note");
    let HostEvent::Notify { message, .. } = dirs else {
        unreachable!()
    };
    let data_dir = env.home.join("data").join("user").join("remote");
    assert_eq!(
        message,
        format!("dirs {} {}", dir.display(), data_dir.display())
    );
    assert!(data_dir.is_dir());

    assert_eq!(
        host.tools()
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["echo"]
    );
    let reply = host.call_tool("echo", json!({"n": 1})).await.unwrap();
    assert_eq!(text(&reply.content), r#"echo {"n":1}"#);
    assert_eq!(reply.extension, "remote");

    let answer = host.invoke_command("hi", "there").await.unwrap();
    assert_eq!(answer.outcome, CommandOutcome::Display("hi there".into()));
    let panel = event_matching(rx, SECS5, |e| matches!(e, HostEvent::PanelRender { .. }))
        .await
        .expect("the panel");
    let HostEvent::PanelRender { extension, panel } = panel else {
        unreachable!()
    };
    assert_eq!(
        (extension.as_str(), panel.lines),
        ("remote", vec!["remote panel".to_owned()])
    );
    assert!(host.panel_key("remote", "p1", Key::Down, None));
    event_matching(
        rx,
        SECS5,
        |e| matches!(e, HostEvent::Notify { message, .. } if message == "key down"),
    )
    .await
    .expect("the key reached the server");

    assert_eq!(
        host.intercept_tool_call("t1", "bash", &json!({"command": "rm -rf /"}))
            .await,
        Outcome::Block {
            extension: "remote".into(),
            reason: "remote guard says no".into()
        }
    );
    assert_eq!(
        host.intercept_tool_call("t2", "bash", &json!({"command": "ls"}))
            .await,
        Outcome::Allow(None)
    );
    let report = host.report();
    assert_eq!(report[0].connection, Some(Connectivity::Connected));
    assert!(report[0].url.is_some());
}

#[tokio::test]
async fn a_zot_extension_over_websocket_works_like_a_local_one() {
    let server = WsServer::start(handler(|conn| guard(conn, "remote"))).await;
    let env = Env::new();
    let dir = remote_manifest(&env, "remote", json!({"url": server.url()}));
    let (host, mut rx) = env.start(&[&dir]).await;
    round_trip(&env, &dir, &host, &mut rx).await;
    assert_eq!(host.shutdown().await, 1);
    // Shut down (the guard acknowledged), then closed with 1000.
    assert!(
        eventually(SECS5, || server.close_codes() == [Some(1000)]).await,
        "{:?}",
        server.close_codes()
    );
    assert!(
        env.log("remote").contains("connected to ws://127.0.0.1:"),
        "{}",
        env.log("remote")
    );
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn a_zot_extension_over_http_works_and_resumes_a_cut_stream() {
    let server = HttpServer::start(handler(|conn| guard(conn, "remote"))).await;
    let env = Env::new();
    let dir = remote_manifest(&env, "remote", json!({"url": server.url()}));
    let (host, mut rx) = env.start(&[&dir]).await;
    round_trip(&env, &dir, &host, &mut rx).await;

    // The stream is cut: the host resumes it in the same session.
    server.cut_streams();
    assert!(
        eventually(RECONNECT, || server.streams_opened() >= 2).await,
        "the stream was not resumed"
    );
    let reply = host
        .call_tool("echo", json!({"after": "cut"}))
        .await
        .unwrap();
    assert_eq!(text(&reply.content), r#"echo {"after":"cut"}"#);
    assert_eq!(
        server.sessions_started(),
        1,
        "a resume is not a new session"
    );
    let resumed = server
        .request_headers()
        .into_iter()
        .any(|h| h.iter().any(|(n, v)| n == "last-event-id" && !v.is_empty()));
    assert!(resumed, "the resume named the last event");

    // The server forgets the session: the host starts over (new hello).
    server.forget_sessions();
    assert!(
        eventually(RECONNECT, || server.sessions_started() >= 2
            && host.tools().len() == 1)
        .await,
        "no new session"
    );
    let reply = host.call_tool("echo", json!({"n": 2})).await.unwrap();
    assert_eq!(text(&reply.content), r#"echo {"n":2}"#);
    host.shutdown().await;
}

/// A server whose first connection registers `echo` and, at its first
/// call, does `fail` with the connection; later connections are `guard`s.
fn first_fails_at_a_tool_call<F, Fut>(fail: F) -> zot_testkit::remote::Handler
where
    F: Fn(Conn) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let first = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let fail = Arc::new(fail);
    handler(move |mut conn: Conn| {
        let failing = first.swap(false, std::sync::atomic::Ordering::SeqCst);
        let fail = Arc::clone(&fail);
        async move {
            if !failing {
                return guard(conn, "remote").await;
            }
            conn.send(json!({"type": "hello", "name": "remote"}));
            conn.recv_type("hello_ack").await;
            conn.send(
                json!({"type": "register_tool", "name": "echo", "schema": {"type": "object"}}),
            );
            conn.send(json!({"type": "ready"}));
            conn.recv_type("tool_call").await;
            fail(conn).await;
        }
    })
}

#[tokio::test]
async fn a_server_that_drops_mid_call_fails_the_call_and_is_reconnected() {
    // The first connection dies on its first tool call; later ones answer.
    let server = WsServer::start(first_fails_at_a_tool_call(|_conn| async {})).await;
    let env = Env::new();
    let dir = remote_manifest(&env, "remote", json!({"url": server.url()}));
    let (host, mut rx) = env.start(&[&dir]).await;
    let err = host.call_tool("echo", json!({})).await.unwrap_err();
    assert_disconnected(&err);
    let message = first_warning(&mut rx).await;
    assert!(message.contains("remote disconnected"), "{message}");
    assert!(message.contains("until zot reconnects"), "{message}");
    let reconnecting = host.report()[0].connection;
    assert!(
        matches!(
            reconnecting,
            Some(Connectivity::Reconnecting { attempt: 1, .. })
        ) || host.tools().len() == 1,
        "{reconnecting:?}"
    );
    assert!(
        eventually(RECONNECT, || host.tools().len() == 1).await,
        "not reconnected"
    );
    let reply = host
        .call_tool("echo", json!({"again": true}))
        .await
        .unwrap();
    assert_eq!(text(&reply.content), r#"echo {"again":true}"#);
    assert_eq!(server.connections(), 2);
    assert_eq!(host.report()[0].connection, Some(Connectivity::Connected));
    // One warning for the loss, none for the attempts.
    let more = event_matching(&mut rx, Duration::from_millis(200), |e| {
        matches!(e, HostEvent::Warning { .. })
    })
    .await;
    assert!(more.is_none(), "{more:?}");
    host.shutdown().await;
}

/// A guard that goes away when told to; its server then refuses connections.
async fn going_guard(on_failure: &str) -> (Env, ExtensionHost, WsServer, Arc<Notify>) {
    let leave = Arc::new(Notify::new());
    let server = {
        let leave = Arc::clone(&leave);
        WsServer::start(handler(move |conn: Conn| {
            let leave = Arc::clone(&leave);
            async move {
                tokio::select! {
                    () = guard(conn, "remote") => {}
                    () = leave.notified() => {}
                }
            }
        }))
        .await
    };
    let env = Env::new();
    let dir = remote_manifest(
        &env,
        "remote",
        json!({"url": server.url(), "on_failure": on_failure}),
    );
    let (host, _rx) = env.start(&[&dir]).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    (env, host, server, leave)
}

#[tokio::test]
async fn a_guard_with_on_failure_block_that_is_down_blocks_tool_calls() {
    let (_env, host, server, leave) = going_guard("block").await;
    assert_eq!(
        host.intercept_tool_call("a", "bash", &json!({"command": "ls"}))
            .await,
        Outcome::Allow(None)
    );
    leave.notify_waiters();
    drop(server);
    assert!(
        eventually(SECS5, || host.report()[0].connection
            != Some(Connectivity::Connected))
        .await
    );
    let verdict = host
        .intercept_tool_call("b", "bash", &json!({"command": "ls"}))
        .await;
    let Outcome::Block { extension, reason } = verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(extension, "remote");
    assert!(
        reason.contains("unreachable (on_failure: block)"),
        "{reason}"
    );
    assert!(host.intercepted(zot_extensions::HookPoint::ToolCall));
    host.shutdown().await;
}

#[tokio::test]
async fn a_guard_that_is_down_allows_by_default() {
    let (_env, host, server, leave) = going_guard("allow").await;
    leave.notify_waiters();
    drop(server);
    assert!(
        eventually(SECS5, || host.report()[0].connection
            != Some(Connectivity::Connected))
        .await
    );
    assert_eq!(
        host.intercept_tool_call("b", "bash", &json!({"command": "rm -rf /"}))
            .await,
        Outcome::Allow(None)
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_says_hello_fails_to_load_at_the_deadline() {
    let server = WsServer::start(handler(|mut conn: Conn| async move {
        // Connected, and silent.
        while conn.recv().await.is_some() {}
    }))
    .await;
    let env = Env::new();
    let dir = remote_manifest(&env, "remote", json!({"url": server.url()}));
    let mut config = env.config(&[&dir]);
    // The deadline is the host's hello timeout (10 s by default); shortened
    // here so the suite does not wait for it.
    config.limits.hello_timeout = Duration::from_millis(300);
    let (host, _rx) = ExtensionHost::start(config).await;
    let errors = host.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0].kind,
        LoadErrorKind::Handshake(HandshakeError::Timeout(Duration::from_millis(300)))
    );
    assert!(
        errors[0].to_string().contains("connection closed by zot"),
        "{}",
        errors[0]
    );
    // It keeps being tried.
    assert!(matches!(
        host.report()[0].connection,
        Some(Connectivity::Reconnecting { .. })
    ));
    host.shutdown().await;
}

#[tokio::test]
async fn a_message_over_the_limit_disconnects_with_a_clear_error() {
    let server = WsServer::start(handler(|mut conn: Conn| async move {
        conn.send(json!({"type": "hello", "name": "remote"}));
        conn.recv_type("hello_ack").await;
        conn.send(json!({"type": "register_command", "name": "big"}));
        conn.send(json!({"type": "ready"}));
        // A binary message is skipped, not fatal.
        conn.send_binary(vec![1, 2, 3]);
        conn.recv_type("command_invoked").await;
        let huge = "x".repeat(5 * 1024 * 1024);
        conn.send_text(json!({"type": "notify", "level": "info", "message": huge}).to_string());
        while conn.recv().await.is_some() {}
    }))
    .await;
    let env = Env::new();
    let dir = remote_manifest(&env, "remote", json!({"url": server.url()}));
    let (host, mut rx) = env.start(&[&dir]).await;
    let err = host.invoke_command("big", "").await.unwrap_err();
    assert_disconnected(&err);
    let message = first_warning(&mut rx).await;
    assert!(
        message.contains("sent a message over the 4194304 byte limit and was disconnected"),
        "{message}"
    );
    let log = env.log("remote");
    assert!(
        log.contains("binary message (3 bytes) was skipped"),
        "{log}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn url_and_headers_expand_variables_when_connecting() {
    let server = WsServer::start(handler(|conn| guard(conn, "remote"))).await;
    let env = Env::new();
    let port = server.addr.port();
    let dir = remote_manifest(
        &env,
        "remote",
        json!({
            "url": format!("ws://${{ZOT_TEST_SURELY_UNSET_HOST:-127.0.0.1}}:{port}/ext"),
            "headers": {"Authorization": "Bearer ${ZOT_TEST_SURELY_UNSET_TOKEN:-tok-123}"}
        }),
    );
    let (host, _rx) = env.start(&[&dir]).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    let headers = server.handshake_headers();
    assert!(
        headers[0]
            .iter()
            .any(|(n, v)| n == "authorization" && v == "Bearer tok-123"),
        "{headers:?}"
    );
    host.shutdown().await;

    let missing = remote_manifest(
        &env,
        "missing",
        json!({"url": server.url(), "headers": {"X-Token": "${ZOT_TEST_SURELY_UNSET_TOKEN}"}}),
    );
    let (host, _rx) = env.start(&[&missing]).await;
    let errors = host.errors();
    let LoadErrorKind::Remote(why) = &errors[0].kind else {
        panic!("{errors:?}")
    };
    assert!(
        why.contains("header X-Token") && why.contains("ZOT_TEST_SURELY_UNSET_TOKEN is not set"),
        "{why}"
    );
    // Not retried: it cannot work until the user sets it.
    assert_eq!(host.report()[0].connection, Some(Connectivity::Failed));
    host.shutdown().await;
}

#[tokio::test]
async fn plain_websocket_to_another_machine_is_refused_before_connecting() {
    let env = Env::new();
    let dir = remote_manifest(&env, "remote", json!({"url": "ws://guard.example.com/zot"}));
    let (host, _rx) = env.start(&[&dir]).await;
    let errors = host.errors();
    assert_eq!(errors.len(), 1);
    let message = errors[0].to_string();
    assert!(message.contains("needs wss://"), "{message}");
    assert!(matches!(host.report()[0].status, ReportStatus::Failed(_)));
    assert_eq!(host.report()[0].connection, Some(Connectivity::Failed));
    host.shutdown().await;
}

#[tokio::test]
async fn a_server_that_stops_answering_pings_is_disconnected_and_reconnected() {
    // The first connection hangs on its first tool call: the socket stays
    // open but nothing is read, so the host's pings get no pong. Later
    // connections answer.
    let server = WsServer::start(first_fails_at_a_tool_call(Conn::freeze)).await;
    let env = Env::new();
    let dir = remote_manifest(&env, "remote", json!({"url": server.url()}));
    let mut config = env.config(&[&dir]);
    // Pings every 20 s by default (and 20 s for the pong); shortened here
    // so the suite does not wait for them.
    config.limits.ping_interval = Duration::from_millis(200);
    let (host, mut rx) = ExtensionHost::start(config).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());

    // The call fails when the missing pong ends the connection, long
    // before its own deadline; the outer deadline only keeps a broken host
    // from hanging the suite.
    let err = tokio::time::timeout(RECONNECT, host.call_tool("echo", json!({})))
        .await
        .expect("the call was not failed by the lost connection")
        .unwrap_err();
    assert_disconnected(&err);
    let message = first_warning(&mut rx).await;
    assert!(
        message.contains("remote disconnected") && message.contains("no pong within"),
        "{message}"
    );
    assert!(
        env.log("remote").contains("no pong within"),
        "{}",
        env.log("remote")
    );

    assert!(
        eventually(RECONNECT, || host.tools().len() == 1).await,
        "not reconnected"
    );
    let note = event_matching(&mut rx, SECS5, |e| {
        matches!(e, HostEvent::Notify { message, .. } if message.starts_with("reconnected to ws://127.0.0.1:"))
    })
    .await;
    assert!(note.is_some(), "no note that it is back");
    let reply = host
        .call_tool("echo", json!({"after": "pong"}))
        .await
        .unwrap();
    assert_eq!(text(&reply.content), r#"echo {"after":"pong"}"#);
    assert_eq!(server.connections(), 2);
    host.shutdown().await;
}

/// A nimlet extension as a team server would run it: a command, a tool and
/// a `tool_call` guard that refuses `rm`. nimlet's host speaks first.
async fn nimlet_guard(mut conn: Conn) {
    if conn.recv_type("initialize").await.is_none() {
        return;
    }
    conn.answer(json!({"type": "register",
        "commands": [{"name": "note", "description": "Append a note"}],
        "tools": [{"name": "save_note", "description": "Save a note.",
                   "input_schema": {"type": "object"}}],
        "events": ["tool_call"]}));
    while let Some(msg) = conn.recv().await {
        let id = msg["id"].clone();
        match msg["type"].as_str().unwrap_or("") {
            "command" => conn.answer(json!({"type": "response", "id": id,
                "message": format!("Noted: {}", msg["arguments"].as_str().unwrap_or(""))})),
            "tool" => conn.answer(json!({"type": "response", "id": id,
                "content": format!("Saved {}", msg["arguments"])})),
            "event" => {
                let command = msg["payload"]["arguments"]["command"]
                    .as_str()
                    .unwrap_or("");
                if command.contains("rm") {
                    conn.answer(json!({"type": "response", "id": id, "allow": false,
                        "reason": "nimlet guard says no"}));
                } else {
                    conn.answer(json!({"type": "response", "id": id}));
                }
            }
            "shutdown" => break,
            _ => {}
        }
    }
}

async fn nimlet_round_trip(url: String) {
    let env = Env::new();
    let dir = remote_manifest(&env, "nim", json!({"url": url, "protocol": "nimlet"}));
    let (host, _rx) = env.start(&[&dir]).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    let reply = host
        .call_tool("save_note", json!({"text": "x"}))
        .await
        .unwrap();
    assert_eq!(text(&reply.content), r#"Saved {"text":"x"}"#);
    assert_eq!(reply.extension, "nim");
    let answer = host.invoke_command("note", "milk").await.unwrap();
    assert_eq!(
        answer.outcome,
        CommandOutcome::Display("Noted: milk".into())
    );
    assert_eq!(
        host.intercept_tool_call("t1", "bash", &json!({"command": "rm -rf /"}))
            .await,
        Outcome::Block {
            extension: "nim".into(),
            reason: "nimlet guard says no".into()
        }
    );
    assert_eq!(
        host.intercept_tool_call("t2", "bash", &json!({"command": "ls"}))
            .await,
        Outcome::Allow(None)
    );
    assert_eq!(host.report()[0].connection, Some(Connectivity::Connected));
    assert_eq!(host.shutdown().await, 1);
}

#[tokio::test]
async fn a_nimlet_extension_over_websocket_works_like_a_local_one() {
    let server = WsServer::start(handler(nimlet_guard)).await;
    nimlet_round_trip(server.url()).await;
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn a_nimlet_extension_over_http_works_like_a_local_one() {
    let server = HttpServer::start(handler(nimlet_guard)).await;
    nimlet_round_trip(server.url()).await;
    assert_eq!(server.sessions_started(), 1);
}

#[tokio::test]
async fn over_http_a_reply_may_come_down_the_event_stream() {
    // Every reply goes through the stream (each POST is answered 202), as
    // a server does with slow work; the host matches them by id.
    let server = HttpServer::start(handler(|mut conn: Conn| async move {
        conn.send(json!({"type": "hello", "name": "remote"}));
        conn.recv_type("hello_ack").await;
        conn.send(json!({"type": "register_tool", "name": "later", "schema": {"type": "object"}}));
        conn.send(json!({"type": "register_command", "name": "later"}));
        conn.send(json!({"type": "ready"}));
        while let Some(frame) = conn.recv().await {
            let id = frame["id"].clone();
            match frame["type"].as_str().unwrap_or("") {
                "tool_call" => conn.send(json!({"type": "tool_result", "id": id,
                    "content": [{"type": "text", "text": "by the stream"}]})),
                "command_invoked" => conn.send(json!({"type": "command_response", "id": id,
                    "action": "display", "display": "also by the stream"})),
                "shutdown" => conn.send(json!({"type": "shutdown_ack"})),
                _ => {}
            }
        }
    }))
    .await;
    let env = Env::new();
    let dir = remote_manifest(&env, "remote", json!({"url": server.url()}));
    let (host, _rx) = env.start(&[&dir]).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    let reply = host.call_tool("later", json!({})).await.unwrap();
    assert_eq!(text(&reply.content), "by the stream");
    let answer = host.invoke_command("later", "").await.unwrap();
    assert_eq!(
        answer.outcome,
        CommandOutcome::Display("also by the stream".into())
    );
    assert_eq!(host.shutdown().await, 1);
}
