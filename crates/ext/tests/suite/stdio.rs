//! The SDK's side of the stdio contract, driven by hand without a host:
//! malformed and oversized frames are skipped and logged to stderr (never
//! stdout), and how the run ends with EOF or `shutdown` at any point.

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use super::support::example_bin;

/// Runs the probe with `input` on stdin (then EOF) and returns what it did.
fn probe(input: &[u8]) -> Output {
    let mut child = Command::new(example_bin("probe"))
        .arg("probe")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    writer.join().unwrap();
    let mut output = child.wait_with_output().unwrap();
    output.stdout = stdout.into_bytes();
    output
}

fn hello_ack(dir: &std::path::Path) -> String {
    json!({"type": "hello_ack", "protocol_version": 1, "zot_version": "9.9.9",
           "provider": "p", "model": "m", "cwd": dir, "extension_dir": dir, "data_dir": dir})
    .to_string()
}

fn frames(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("non-frame on stdout {l:?}: {e}"))
        })
        .collect()
}

#[test]
fn malformed_and_oversized_frames_are_skipped_and_logged_to_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let mut input = String::new();
    for line in [
        hello_ack(tmp.path()),
        "not json".to_owned(),
        r#"{"type":"teleport"}"#.to_owned(),
        r#"{"type":"command_invoked","name":"show"}"#.to_owned(),
        "   ".to_owned(),
    ] {
        input.push_str(&line);
        input.push('\n');
    }
    input.push_str(&"x".repeat(zot_ext::MAX_HOST_FRAME_BYTES + 10));
    input.push('\n');
    input.push_str(r#"{"type":"command_invoked","id":"1","name":"show","args":"still here"}"#);
    input.push_str("\r\n");
    input.push_str(r#"{"type":"shutdown"}"#);
    input.push('\n');

    let output = probe(input.as_bytes());
    assert!(output.status.success(), "{output:?}");
    let frames = frames(&output);
    assert!(frames.contains(
        &json!({"type": "command_response", "id": "1", "action": "display", "display": "still here"})
    ));
    assert_eq!(frames.last(), Some(&json!({"type": "shutdown_ack"})));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.matches("skipped a malformed frame").count(),
        3,
        "{stderr}"
    );
    assert!(stderr.contains("teleport"), "{stderr}");
    assert!(
        stderr.contains(&format!("over {} bytes", zot_ext::MAX_HOST_FRAME_BYTES)),
        "{stderr}"
    );
}

#[test]
fn eof_after_ready_ends_the_run_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let output = probe(format!("{}\n", hello_ack(tmp.path())).as_bytes());
    assert!(output.status.success(), "{output:?}");
    let frames = frames(&output);
    assert_eq!(frames.last(), Some(&json!({"type": "ready"})));
}

#[test]
fn eof_before_hello_ack_is_an_error() {
    let output = probe(b"");
    assert!(!output.status.success());
    assert_eq!(frames(&output).len(), 1, "only hello");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("NoHelloAck"), "{stderr}");
}

#[test]
fn shutdown_before_hello_ack_is_acknowledged() {
    let output = probe(b"{\"type\":\"shutdown\"}\n");
    assert!(output.status.success(), "{output:?}");
    let types: Vec<Value> = frames(&output)
        .into_iter()
        .map(|f| f["type"].clone())
        .collect();
    assert_eq!(types, ["hello", "shutdown_ack"]);
}
