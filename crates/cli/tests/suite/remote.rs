//! Remote extensions through the built binary: print and JSON modes with a
//! WebSocket and an HTTP extension served in the test, `on_failure: block`
//! with the server down, wss with a test CA through `SSL_CERT_FILE`, and
//! what `zot ext list`/`doctor` show (the url, never the headers).

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use zot_testkit::remote::{HttpServer, TestCa, WsServer, guard, handler};
use zot_testkit::{MockModel, anthropic};

use super::support::{Run, World, events};

/// Runs `cmd` off the runtime's threads, so the in-test servers keep serving.
async fn run(mut cmd: Command) -> Run {
    tokio::task::spawn_blocking(move || cmd.output().unwrap().into())
        .await
        .unwrap()
}

fn remote_ext(w: &World, name: &str, manifest: Value) -> PathBuf {
    let dir = w.scratch.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut full = json!({"name": name, "version": "1.0.0"});
    for (key, value) in manifest.as_object().unwrap() {
        full[key] = value.clone();
    }
    std::fs::write(dir.join("extension.json"), full.to_string()).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_calls_a_tool_of_a_websocket_extension() {
    let server = WsServer::start(handler(|conn| guard(conn, "remote"))).await;
    let w = World::new();
    let ext = remote_ext(&w, "remote", json!({"url": server.url()}));
    let model = MockModel::start([
        anthropic::tool_call("e1", "echo", r#"{"n":1}"#),
        anthropic::text("done"),
    ])
    .await;
    let run = run(w.against(
        &model,
        "anthropic",
        &["-p", "--no-session", "--ext", ext.to_str().unwrap(), "go"],
    ))
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "done\n");
    let requests = model.requests();
    assert!(
        requests[1].body.to_string().contains(r#"echo {\"n\":1}"#),
        "{}",
        requests[1].body
    );
    assert_eq!(server.connections(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn json_mode_with_an_http_guard_blocks_a_dangerous_call() {
    let server = HttpServer::start(handler(|conn| guard(conn, "remote"))).await;
    let w = World::new();
    std::fs::write(w.project.join("precious.txt"), "keep me").unwrap();
    let ext = remote_ext(&w, "remote", json!({"url": server.url()}));
    let model = MockModel::start([
        anthropic::tool_call("b1", "bash", r#"{"command":"rm -f precious.txt"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = run(w.against(
        &model,
        "anthropic",
        &[
            "--json",
            "--no-session",
            "--ext",
            ext.to_str().unwrap(),
            "clean",
        ],
    ))
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(w.project.join("precious.txt").exists(), "not blocked");
    assert!(
        model.requests()[1]
            .body
            .to_string()
            .contains("remote guard says no")
    );
    let result = events(&run)
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["is_error"], true, "{result}");
}

/// A guard built with the Rust SDK and served by its synchronous WebSocket
/// server (`zot-ext`, feature `websocket`) on a free loopback port.
#[tokio::test(flavor = "multi_thread")]
async fn print_mode_with_a_rust_sdk_websocket_guard_blocks_a_dangerous_call() {
    use zot_ext::{Extension, ToolCallDecision, WebSocketServer};
    let server = WebSocketServer::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/guard", server.local_addr().unwrap());
    // One session: zot -p connects once and shuts the extension down.
    let session = std::thread::spawn(move || {
        let guard = Extension::new("sdk-guard", "1.0.0").intercept_tool_call(|call, _host| {
            match call.args["command"].as_str() {
                Some(command) if call.name == "bash" && command.contains("rm ") => {
                    ToolCallDecision::block("sdk guard says no")
                }
                _ => ToolCallDecision::Allow,
            }
        });
        server.serve_one(guard)
    });
    let w = World::new();
    std::fs::write(w.project.join("precious.txt"), "keep me").unwrap();
    let ext = remote_ext(&w, "sdk-guard", json!({"url": url}));
    let model = MockModel::start([
        anthropic::tool_call("b1", "bash", r#"{"command":"rm -f precious.txt"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = run(w.against(
        &model,
        "anthropic",
        &[
            "-p",
            "--no-session",
            "--ext",
            ext.to_str().unwrap(),
            "clean",
        ],
    ))
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "ok\n");
    assert!(w.project.join("precious.txt").exists(), "not blocked");
    let second = model.requests()[1].body.to_string();
    assert!(second.contains("sdk guard says no"), "{second}");
    let ended = tokio::task::spawn_blocking(move || session.join().unwrap())
        .await
        .unwrap();
    assert!(ended.is_ok(), "{ended:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocking_guard_that_is_down_refuses_bash() {
    // A port nothing listens on: bound, then freed.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let w = World::new();
    let ext = remote_ext(
        &w,
        "team-guard",
        json!({"url": format!("ws://127.0.0.1:{port}/guard"), "on_failure": "block"}),
    );
    let model = MockModel::start([
        anthropic::tool_call("b1", "bash", r#"{"command":"echo hi > made.txt"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = run(w.against(
        &model,
        "anthropic",
        &["-p", "--no-session", "--ext", ext.to_str().unwrap(), "make"],
    ))
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!w.project.join("made.txt").exists(), "bash ran");
    let second = model.requests()[1].body.to_string();
    assert!(
        second.contains("extension team-guard is unreachable (on_failure: block)"),
        "{second}"
    );
    assert!(
        run.stderr.contains("cannot connect to ws://127.0.0.1:"),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn wss_with_a_test_ca_and_headers_that_are_never_shown() {
    let w = World::new();
    let ca = TestCa::new(&w.scratch);
    let server = WsServer::start_tls(handler(|conn| guard(conn, "remote")), &ca).await;
    let ext = remote_ext(
        &w,
        "remote",
        json!({"url": server.url(), "headers": {"Authorization": "Bearer ${ZOT_TEST_GUARD_TOKEN}"}}),
    );
    let dir = ext.to_str().unwrap();
    let doctor = |ca_file: Option<&PathBuf>| {
        let mut cmd = w.cmd(&["ext", "doctor", "--json", "--ext", dir]);
        cmd.env("ZOT_TEST_GUARD_TOKEN", "sekrit-value");
        match ca_file {
            Some(file) => cmd.env("SSL_CERT_FILE", file),
            None => cmd.env_remove("SSL_CERT_FILE"),
        };
        run(cmd)
    };

    let trusted = doctor(Some(&ca.ca_file)).await;
    assert_eq!(trusted.code, 0, "{trusted:?}");
    let report: Value = serde_json::from_str(&trusted.stdout).unwrap();
    let entry = &report["extensions"][0];
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["connection"], "connected");
    assert_eq!(entry["url"], server.url());
    assert_eq!(entry["tools"][0]["name"], "echo");
    let headers = server.handshake_headers();
    assert!(
        headers[0]
            .iter()
            .any(|(n, v)| n == "authorization" && v == "Bearer sekrit-value"),
        "{headers:?}"
    );

    // Without the test CA the server's certificate is not trusted.
    let untrusted = doctor(None).await;
    assert_eq!(untrusted.code, 1, "{untrusted:?}");
    let report: Value = serde_json::from_str(&untrusted.stdout).unwrap();
    let error = report["extensions"][0]["error"].as_str().unwrap();
    assert!(error.contains("TLS with localhost failed"), "{error}");

    let mut list = w.cmd(&["ext", "list", "--ext", dir]);
    list.env("ZOT_TEST_GUARD_TOKEN", "sekrit-value");
    let list = run(list).await;
    assert!(list.stdout.contains(&server.url()), "{list:?}");
    for out in [&trusted, &untrusted, &list] {
        assert!(!out.stdout.contains("sekrit"), "{out:?}");
        assert!(!out.stderr.contains("sekrit"), "{out:?}");
    }
    assert!(!w.log("remote").contains("sekrit"));
}
