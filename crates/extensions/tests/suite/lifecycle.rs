//! Items 14-16: crashes, shutdown and reload.

use std::time::{Duration, Instant};

use serde_json::json;
use zot_extensions::{DispatchError, ExtensionHost, HostEvent, ReportStatus, RequestError};

use super::support::{
    Env, Root, SECS5, event_matching, eventually, is_running, read_pid, received_of, registers,
};

#[tokio::test]
async fn a_crash_fails_pending_requests_at_once_and_removes_registrations() {
    let env = Env::new();
    let crashy = env.ext(
        "crashy",
        r#"
handshake(NAME)
emit({"type":"register_command","name":"c"})
emit({"type":"register_tool","name":"slow","schema":{"type":"object"}})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "tool_call":
        time.sleep(0.2)
        sys.exit(7)
"#,
    );
    let steady = env.ext(
        "steady",
        r#"
handshake(NAME)
emit({"type":"register_tool","name":"ping","schema":{"type":"object"}})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "tool_call":
        emit({"type":"tool_result","id":msg["id"],"content":[{"type":"text","text":"pong"}]})
"#,
    );
    // The default 60 s tool deadline: the failure must not wait for it.
    let mut config = env.config(&[&crashy, &steady]);
    config.limits.tool_timeout = Duration::from_secs(60);
    let (host, mut rx) = ExtensionHost::start(config).await;
    let started = Instant::now();
    let err = host.call_tool("slow", json!({})).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "waited for the deadline"
    );
    match &err {
        DispatchError::Request {
            source: RequestError::Disconnected(why),
            ..
        } => {
            assert!(why.contains("exit status: 7"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    event_matching(
        &mut rx,
        SECS5,
        |e| matches!(e, HostEvent::Exited { extension, .. } if extension == "crashy"),
    )
    .await
    .expect("exit event");
    let tools: Vec<_> = host.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(tools, ["ping"]);
    assert!(host.commands().is_empty());
    assert_eq!(
        host.invoke_command("c", "").await.unwrap_err(),
        DispatchError::UnknownCommand("c".into())
    );
    // The host goes on.
    assert!(host.call_tool("ping", json!({})).await.is_ok());
    let ReportStatus::Loaded(info) = &host.report()[0].status else {
        panic!()
    };
    assert!(!info.running);
    assert_eq!(info.exit.as_deref(), Some("exit status: 7"));
    assert!(env.log("crashy").contains("crashy exited (exit status: 7)"));
    host.shutdown().await;
}

#[tokio::test]
async fn shutdown_sends_shutdown_then_escalates_to_the_whole_group() {
    let env = Env::new();
    let polite = env.ext("polite", &registers("[]"));
    let stubborn_body = r#"
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "300"])
open("child", "w").write(str(child.pid))
open("pid", "w").write(str(os.getpid()))
handshake(NAME)
emit({"type":"ready"})
for msg in frames():
    pass
time.sleep(300)
"#;
    let stubborn = env.ext("stubborn", stubborn_body);
    let stubborn2 = env.ext("stubborn2", stubborn_body);
    let (host, _rx) = env.start(&[&polite, &stubborn, &stubborn2]).await;
    let pids = [
        read_pid(&stubborn, "pid").await,
        read_pid(&stubborn2, "pid").await,
    ];
    let children = [
        read_pid(&stubborn, "child").await,
        read_pid(&stubborn2, "child").await,
    ];
    assert_eq!(host.shutdown().await, 3);
    // Leaders are reaped before shutdown returns; SIGKILL to the group has
    // been sent to grandchildren, which the kernel finishes off at once.
    for pid in pids {
        assert!(!is_running(pid), "{pid} survived shutdown");
    }
    for pid in children {
        assert!(
            eventually(SECS5, || !is_running(pid)).await,
            "grandchild {pid} survived shutdown"
        );
    }
    for dir in [&polite, &stubborn, &stubborn2] {
        assert_eq!(received_of(dir, "shutdown").len(), 1);
    }
    assert!(
        env.log("polite").contains("stopped (exit status: 0)"),
        "{}",
        env.log("polite")
    );
    assert!(
        env.log("stubborn")
            .contains("stopped (signal: 9 (SIGKILL))"),
        "{}",
        env.log("stubborn")
    );
    // The reaped leader leaves no zombie behind.
    assert!(!std::path::Path::new(&format!("/proc/{}", pids[0])).exists());
    assert!(host.commands().is_empty());
}

#[tokio::test]
async fn dropping_the_host_kills_everything() {
    let env = Env::new();
    let dir = env.ext(
        "dropped",
        &format!(
            "open('pid','w').write(str(os.getpid()))\n{}",
            registers("[]")
        ),
    );
    let (host, rx) = env.start(&[&dir]).await;
    let pid = read_pid(&dir, "pid").await;
    drop(host);
    drop(rx);
    assert!(eventually(SECS5, || !is_running(pid)).await);
}

#[tokio::test]
async fn reload_respawns_remembers_ext_paths_and_respects_no_ext() {
    let env = Env::new();
    let counting = |cmd: &str| {
        format!(
            "open('starts','a').write('x')\n{}",
            registers(&format!(
                r#"[{{"type":"register_command","name":"{cmd}"}}]"#
            ))
        )
    };
    let explicit = env.ext("explicit", &counting("rtest"));
    let global = env.py(Root::Global, "global", "global", &counting("gtest"));
    let broken = env.ext("broken", "sys.exit(2)\n");
    let mut config = env.config(&[&explicit, &broken]);
    config.discover = false;
    let (host, mut rx) = ExtensionHost::start(config).await;
    assert_eq!(host.commands().len(), 1);

    // Edit the extension on disk: the reload picks it up.
    std::fs::write(
        explicit.join("extension.json"),
        r#"{"name":"explicit","version":"2.0.0","exec":"./ext.py"}"#,
    )
    .unwrap();
    let stats = host.reload().await;
    assert_eq!(stats.stopped, 1);
    assert_eq!(stats.loaded, 1);
    assert_eq!(stats.ready, 1);
    assert_eq!(stats.errors.len(), 1);
    assert!(
        stats.errors[0].to_string().contains("exit status: 2"),
        "{}",
        stats.errors[0]
    );
    event_matching(&mut rx, SECS5, |e| *e == HostEvent::ToolsChanged)
        .await
        .expect("tools changed");
    let commands: Vec<_> = host.commands().into_iter().map(|c| c.name).collect();
    assert_eq!(commands, ["rtest"], "--no-ext must survive a reload");
    assert_eq!(
        std::fs::read_to_string(explicit.join("starts")).unwrap(),
        "xx"
    );
    assert!(!global.join("starts").exists());
    assert_eq!(host.report()[0].version.as_deref(), Some("2.0.0"));
    assert!(env.log("explicit").contains("starting explicit/2.0.0"));
    host.shutdown().await;
}
