//! Item 13: framing rules.

use zot_extensions::{HostEvent, ReportStatus};

use super::support::{Env, SECS5, event_matching, eventually, is_running, read_pid};

#[tokio::test]
async fn crlf_blank_lines_malformed_and_unknown_frames() {
    let env = Env::new();
    let body = r#"
w = sys.stdout.write
w('\r\n\n   \n')
w(json.dumps({"type":"hello","name":NAME}) + '\r\n')
sys.stdout.flush()
for msg in frames():
    if msg["type"] == "hello_ack":
        break
w('\n\n')
w('{not json\n')
w(json.dumps({"type":"teleport","to":"mars"}) + '\n')
w(json.dumps({"no_type": True}) + '\n')
w(json.dumps({"type":"register_command"}) + '\n')
w(json.dumps({"type":"tool_result","id":"999","content":[]}) + '\n')
w(json.dumps({"type":"register_command","name":"survivor"}) + '\r\n')
w(json.dumps({"type":"ready"}) + '\r\n')
sys.stdout.flush()
for msg in frames():
    if msg["type"] == "command_invoked":
        emit({"type":"command_response","id":msg["id"],"action":"display","display":"ok"})
"#;
    let dir = env.ext("framer", body);
    let (host, _rx) = env.start(&[&dir]).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    let ReportStatus::Loaded(info) = &host.report()[0].status else {
        panic!()
    };
    assert_eq!(info.readiness, zot_extensions::Readiness::Ready);
    host.invoke_command("survivor", "").await.unwrap();
    let log = env.log("framer");
    for expected in [
        "malformed json from extension",
        "unknown frame type \"teleport\"; skipped",
        "frame without a \"type\" field; skipped",
        "bad register_command frame: missing field `name`",
        "tool_result for unknown or expired id \"999\"; dropped",
    ] {
        assert!(log.contains(expected), "missing {expected:?} in:\n{log}");
    }
    host.shutdown().await;
}

#[tokio::test]
async fn a_frame_over_four_mib_disconnects_and_kills_the_extension() {
    let env = Env::new();
    let body = r#"
open('pid', 'w').write(str(os.getpid()))
handshake(NAME)
emit({"type":"register_command","name":"bloat"})
emit({"type":"register_tool","name":"bloat_tool","schema":{"type":"object"}})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "command_invoked":
        # 3 MiB is fine...
        emit({"type":"notify","level":"info","message":"x" * (3 * 1024 * 1024)})
        # ...5 MiB is not.
        emit({"type":"notify","level":"info","message":"x" * (5 * 1024 * 1024)})
        time.sleep(60)
"#;
    let dir = env.ext("bloat", body);
    let (host, mut rx) = env.start(&[&dir]).await;
    let pid = read_pid(&dir, "pid").await;
    assert_eq!(host.tools().len(), 1);
    let err = host.invoke_command("bloat", "").await.unwrap_err();
    assert!(
        err.to_string().contains("over the 4194304 byte limit"),
        "{err}"
    );
    assert!(err.to_string().contains("signal: 9 (SIGKILL)"), "{err}");
    let big = event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Notify { .. }))
        .await
        .unwrap();
    assert!(matches!(big, HostEvent::Notify { message, .. } if message.len() == 3 * 1024 * 1024));
    event_matching(
        &mut rx,
        SECS5,
        |e| matches!(e, HostEvent::Exited { extension, .. } if extension == "bloat"),
    )
    .await
    .expect("exit event");
    assert!(eventually(SECS5, || !is_running(pid)).await, "left running");
    assert!(host.commands().is_empty() && host.tools().is_empty());
    assert!(
        env.log("bloat")
            .contains("frame exceeds the 4194304 byte limit")
    );
    host.shutdown().await;
}
