//! Remote extensions through the built binary: print, JSON, RPC and TUI
//! modes with a WebSocket and an HTTP extension served in the test,
//! `on_failure: block` with the server down, a lost connection and the
//! reconnect as the user sees them, wss with a test CA through
//! `SSL_CERT_FILE`, and what `zot ext list`/`doctor` show (the url and
//! the connection, never the headers).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use tokio::sync::watch;
use zot_testkit::remote::{Conn, HttpServer, TestCa, WsServer, guard, handler};
use zot_testkit::{MockModel, anthropic};

use super::rpc::Rpc;
use super::support::{Event, Run, World, first, is_error, result_text, typed_events};
use super::tui::Tmux;

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

/// The model asks bash to delete `precious.txt` in the project, with the
/// guard extension `ext` loaded, in `mode` (`-p` or `--json`); the run
/// succeeds and the file survives. Returns the run and the model's second
/// request, which carries the refusal.
async fn rm_precious(w: &World, ext: &Path, mode: &str) -> (Run, String) {
    std::fs::write(w.project.join("precious.txt"), "keep me").unwrap();
    let model = MockModel::start([
        anthropic::tool_call("b1", "bash", r#"{"command":"rm -f precious.txt"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let ext = ext.to_str().unwrap();
    let run = run(w.against(
        &model,
        "anthropic",
        &[mode, "--no-session", "--ext", ext, "clean"],
    ))
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(w.project.join("precious.txt").exists(), "not blocked");
    (run, model.requests()[1].body.to_string())
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
    let ext = remote_ext(&w, "remote", json!({"url": server.url()}));
    let (run, second) = rm_precious(&w, &ext, "--json").await;
    assert!(second.contains("remote guard says no"), "{second}");
    let evs = typed_events(&run);
    let result = first!(evs, e @ Event::ToolResult { .. } => e);
    assert!(is_error(result), "{result:?}");
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
    let ext = remote_ext(&w, "sdk-guard", json!({"url": url}));
    let (run, second) = rm_precious(&w, &ext, "-p").await;
    assert_eq!(run.stdout, "ok\n");
    assert!(second.contains("sdk guard says no"), "{second}");
    let ended = tokio::task::spawn_blocking(move || session.join().unwrap())
        .await
        .unwrap();
    assert!(ended.is_ok(), "{ended:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocking_guard_that_is_down_refuses_bash() {
    let port = closed_port();
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

/// A port nothing listens on: bound, then freed.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread")]
async fn ext_list_and_doctor_show_each_remote_connection() {
    let server = WsServer::start(handler(|conn| guard(conn, "up"))).await;
    let w = World::new();
    let up = remote_ext(&w, "up", json!({"url": server.url()}));
    let down = remote_ext(
        &w,
        "down",
        json!({"url": format!("ws://127.0.0.1:{}/ext", closed_port())}),
    );
    let broken = remote_ext(
        &w,
        "broken",
        json!({"url": server.url(), "headers": {"X-Token": "${ZOT_TEST_SURELY_UNSET_TOKEN}"}}),
    );
    let local = w.ext(&w.scratch, "local", &[]);
    let mut args = vec![];
    for dir in [&up, &down, &broken, &local] {
        args.push("--ext");
        args.push(dir.to_str().unwrap());
    }
    let with = |first: &[&str]| {
        let mut all = first.to_vec();
        all.extend(&args);
        w.cmd(&all)
    };

    let list = run(with(&["ext", "list", "--json"])).await;
    assert_eq!(list.code, 0, "{list:?}");
    let rows: Value = serde_json::from_str(&list.stdout).unwrap();
    let connection = |rows: &Value, name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {rows}"))["connection"]
            .clone()
    };
    assert_eq!(connection(&rows, "up"), "connected");
    let reconnecting = connection(&rows, "down");
    assert!(
        reconnecting
            .as_str()
            .is_some_and(|c| c.starts_with("reconnecting (attempt 1, next in ")),
        "{reconnecting}"
    );
    assert_eq!(connection(&rows, "broken"), "failed");
    assert_eq!(connection(&rows, "local"), Value::Null);
    // Listing connects to remote extensions only; the local one never ran.
    assert!(w.log("local").is_empty(), "{}", w.log("local"));
    assert_eq!(server.connections(), 1);

    let table = run(with(&["ext", "list"])).await;
    assert_eq!(table.code, 0, "{table:?}");
    let line = |name: &str| {
        table
            .stdout
            .lines()
            .find(|l| l.contains(&format!(" {name} ")))
            .unwrap_or_else(|| panic!("no {name}: {table:?}"))
            .to_owned()
    };
    assert!(
        line("up").contains(&format!("ok: remote, {}, connected", server.url())),
        "{table:?}"
    );
    assert!(
        line("down").contains(", reconnecting (attempt 1, next in "),
        "{table:?}"
    );
    assert!(line("broken").contains(", failed"), "{table:?}");

    let doctor = run(with(&["ext", "doctor"])).await;
    assert_eq!(doctor.code, 1, "{doctor:?}");
    assert!(
        doctor.stdout.contains("connection: connected"),
        "{doctor:?}"
    );
    assert!(
        doctor
            .stdout
            .contains("connection: reconnecting (attempt 1, next in "),
        "{doctor:?}"
    );
    assert!(doctor.stdout.contains("connection: failed"), "{doctor:?}");
    assert!(
        doctor
            .stdout
            .contains("environment variable ZOT_TEST_SURELY_UNSET_TOKEN is not set"),
        "{doctor:?}"
    );
}

/// A guard server the test takes down and brings back, over WebSocket or
/// HTTP. While down it drops every connection (or session) before hello,
/// so zot keeps retrying; going down also ends the live one without a
/// goodbye, like a crash.
struct Flaky {
    server: Server,
    up: watch::Sender<bool>,
}

enum Server {
    Ws(WsServer),
    Http(HttpServer),
}

impl Flaky {
    async fn start(http: bool, name: &'static str) -> Self {
        let (up, rx) = watch::channel(true);
        let serve = handler(move |conn: Conn| {
            let mut rx = rx.clone();
            async move {
                if !*rx.borrow_and_update() {
                    return;
                }
                tokio::select! {
                    () = guard(conn, name) => {}
                    _ = rx.wait_for(|up| !*up) => {}
                }
            }
        });
        let server = if http {
            Server::Http(HttpServer::start(serve).await)
        } else {
            Server::Ws(WsServer::start(serve).await)
        };
        Self { server, up }
    }

    fn url(&self) -> String {
        match &self.server {
            Server::Ws(server) => server.url(),
            Server::Http(server) => server.url(),
        }
    }

    /// WebSocket connections, or HTTP sessions, that zot opened so far.
    fn connections(&self) -> usize {
        match &self.server {
            Server::Ws(server) => server.connections(),
            Server::Http(server) => usize::try_from(server.sessions_started()).unwrap(),
        }
    }

    fn down(&self) {
        self.up.send_replace(false);
    }

    fn up(&self) {
        self.up.send_replace(true);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_mode_sees_a_websocket_extension_go_and_come_back() {
    rpc_sees_a_remote_extension_go_and_come_back(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_mode_sees_an_http_extension_go_and_come_back() {
    rpc_sees_a_remote_extension_go_and_come_back(true).await;
}

/// A tool call through the extension, the server going (one warning; its
/// `on_failure: block` guard refuses bash; its tool leaves the model's
/// list), coming back (one note; the tool works), and a reload.
async fn rpc_sees_a_remote_extension_go_and_come_back(http: bool) {
    let flaky = Flaky::start(http, "remote").await;
    let w = World::new();
    std::fs::write(w.project.join("precious.txt"), "keep me").unwrap();
    let ext = remote_ext(
        &w,
        "remote",
        json!({"url": flaky.url(), "on_failure": "block"}),
    );
    let model = MockModel::start([
        anthropic::tool_call("e1", "echo", r#"{"n":1}"#),
        anthropic::text("one"),
        anthropic::tool_call("b1", "bash", r#"{"command":"echo hi > made.txt"}"#),
        anthropic::text("two"),
        anthropic::tool_call("e3", "echo", r#"{"n":3}"#),
        anthropic::text("three"),
    ])
    .await;
    let mut rpc = Rpc::start(
        &w,
        &model,
        "anthropic",
        &["--ext", ext.to_str().unwrap()],
        None,
    );
    let result = |rpc: &Rpc| rpc.until_event(|e| matches!(e, Event::ToolResult { .. }));

    // A tool call through the WebSocket.
    rpc.send(r#"{"type":"prompt","message":"first"}"#);
    let first = result(&rpc);
    assert!(!is_error(&first), "{first:?}");
    assert!(result_text(&first).contains(r#"echo {"n":1}"#), "{first:?}");
    rpc.done();

    // The server goes away: one warning says so and what is lost.
    flaky.down();
    let warning = rpc.until_event(|e| matches!(e, Event::ExtWarning { .. }));
    let Event::ExtWarning { extension, message } = warning else {
        unreachable!()
    };
    assert_eq!(extension.as_deref(), Some("remote"));
    assert!(
        message.contains("remote disconnected") && message.contains("until zot reconnects"),
        "{message}"
    );

    // While it is down, its guard (on_failure: block) refuses bash, and
    // its tool is not offered to the model.
    rpc.send(r#"{"type":"prompt","message":"second"}"#);
    let blocked = result(&rpc);
    assert!(is_error(&blocked), "{blocked:?}");
    assert!(
        result_text(&blocked).contains("extension remote is unreachable (on_failure: block)"),
        "{blocked:?}"
    );
    rpc.done();
    assert!(!w.project.join("made.txt").exists(), "bash ran");
    let requests = model.requests();
    assert!(
        !requests[2].body["tools"].to_string().contains(r#""echo""#),
        "{}",
        requests[2].body["tools"]
    );

    // Back up: zot reconnects, says so once, and the tool works again.
    flaky.up();
    let note = rpc.until_event(
        |e| matches!(e, Event::ExtNotify { message, .. } if message.starts_with("reconnected to ")),
    );
    let Event::ExtNotify {
        extension, message, ..
    } = note
    else {
        unreachable!()
    };
    assert_eq!(extension, "remote");
    assert_eq!(message, format!("reconnected to {}", flaky.url()));
    rpc.send(r#"{"type":"prompt","message":"third"}"#);
    let third = result(&rpc);
    assert!(!is_error(&third), "{third:?}");
    assert!(result_text(&third).contains(r#"echo {"n":3}"#), "{third:?}");
    rpc.done();

    // A reload connects anew, like restarting a local extension.
    let before = flaky.connections();
    rpc.send(r#"{"type":"reload_extensions"}"#);
    let reload = rpc.response("reload_extensions");
    assert_eq!(reload["success"], true, "{reload}");
    assert_eq!(reload["data"]["loaded"], 1, "{reload}");
    assert_eq!(reload["data"]["ready"], 1, "{reload}");
    assert_eq!(flaky.connections(), before + 1);
    assert_eq!(rpc.close(), 0);
    let log = w.log("remote");
    assert!(log.contains("remote disconnected"), "{log}");
    assert!(log.matches("connected to ").count() >= 2, "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tui_shows_a_remote_extension_go_and_come_back() {
    let flaky = Flaky::start(false, "remote").await;
    let w = World::new();
    let ext = remote_ext(&w, "remote", json!({"url": flaky.url()}));
    let model = MockModel::start([
        anthropic::tool_call("e1", "echo", r#"{"n":1}"#),
        anthropic::text("The remote tool answered."),
    ])
    .await;
    let tmux = Tmux::against(&w, "remote", &model, &["--ext", ext.to_str().unwrap()]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");

    // A command and a tool call through the WebSocket.
    tmux.type_text("/hi there");
    tmux.keys(&["Enter"]);
    tmux.wait_for("[remote] hi there");
    tmux.type_text("use the tool");
    tmux.keys(&["Enter"]);
    tmux.wait_for("The remote tool answered.");
    let second = model.requests()[1].body.to_string();
    assert!(second.contains(r#"echo {\"n\":1}"#), "{second}");

    // The server goes: one warning in the chat.
    flaky.down();
    let screen = tmux.wait_for("[remote] remote disconnected");
    assert_eq!(screen.matches("remote disconnected").count(), 1, "{screen}");

    // It comes back: a note, and its command works again.
    flaky.up();
    tmux.wait_for("reconnected to ws://127.0.0.1:");
    tmux.type_text("/hi again");
    tmux.keys(&["Enter"]);
    tmux.wait_for("[remote] hi again");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

/// Trust, enable and disable reach a remote extension as they do a local
/// one: an untrusted project's is never connected to, a disabled one
/// neither.
#[tokio::test(flavor = "multi_thread")]
async fn trust_enable_and_disable_govern_remote_extensions() {
    let team = WsServer::start(handler(|conn| guard(conn, "team"))).await;
    let shared = WsServer::start(handler(|conn| guard(conn, "shared"))).await;
    let w = World::new();
    let manifest = |name: &str, server: &WsServer| {
        json!({"name": name, "version": "1.0.0", "url": server.url()}).to_string()
    };
    let project = w.project_root().join("team");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("extension.json"), manifest("team", &team)).unwrap();
    let global = w.global().join("shared");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(global.join("extension.json"), manifest("shared", &shared)).unwrap();
    let connections = || (team.connections(), shared.connections());
    let list = || async {
        let run = run(w.cmd(&["ext", "list", "--json"])).await;
        assert_eq!(run.code, 0, "{run:?}");
        let rows: Value = serde_json::from_str(&run.stdout).unwrap();
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_owned(),
                    r["state"].as_str().unwrap().to_owned(),
                    r["connection"].as_str().map(str::to_owned),
                )
            })
            .collect::<Vec<_>>()
    };
    let connected = Some("connected".to_owned());

    assert_eq!(
        list().await,
        [
            ("team".into(), "untrusted".into(), None),
            ("shared".into(), "ok".into(), connected.clone()),
        ]
    );
    assert_eq!(connections(), (0, 1), "the untrusted one never connected");

    let trust = run(w.cmd(&["trust"])).await;
    assert_eq!(trust.code, 0, "{trust:?}");
    let disable = run(w.cmd(&["ext", "disable", "shared"])).await;
    assert_eq!(disable.code, 0, "{disable:?}");
    assert_eq!(
        list().await,
        [
            ("team".into(), "ok".into(), connected.clone()),
            ("shared".into(), "disabled".into(), None),
        ]
    );
    assert_eq!(connections(), (1, 1), "the disabled one never connected");

    let enable = run(w.cmd(&["ext", "enable", "shared"])).await;
    assert_eq!(enable.code, 0, "{enable:?}");
    assert_eq!(
        list().await,
        [
            ("team".into(), "ok".into(), connected.clone()),
            ("shared".into(), "ok".into(), connected),
        ]
    );
    assert_eq!(connections(), (2, 2));
}
