//! Interceptors: block, rewrite, replace, the system prompt, and a panicking
//! interceptor failing open.

use serde_json::json;
use tokio::sync::watch;
use zot_extensions::{CancellationToken, Outcome};

use super::support::{Env, assert_frames_valid, sent};

fn blocked(reason: &str) -> Outcome<serde_json::Value> {
    Outcome::Block {
        extension: "probe".into(),
        reason: reason.into(),
    }
}

#[tokio::test]
async fn tool_call_interceptor_blocks_rewrites_and_passes() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    let bash = |command: &str| json!({ "command": command });

    let verdict = host
        .intercept_tool_call("t1", "bash", &bash("rm -rf /tmp/foo"))
        .await;
    assert_eq!(verdict, blocked("refused: rm -rf /tmp/foo"));
    let verdict = host.intercept_tool_call("t2", "bash", &bash("ls")).await;
    assert_eq!(verdict, Outcome::Allow(Some(bash("echo GUARDED: ls"))));
    let verdict = host
        .intercept_tool_call("t3", "read", &json!({"path": "x"}))
        .await;
    assert_eq!(verdict, Outcome::Allow(None));
    // A rewrite to a non-object is dropped by the SDK, never sent.
    let verdict = host
        .intercept_tool_call("t4", "bash", &bash("bad rewrite"))
        .await;
    assert_eq!(verdict, Outcome::Allow(None));
    // The SDK tells a subagent's call by the task call it names.
    let verdict = host
        .intercept_call_of(Some("task-1"), "t5", "read", &json!({"path": "x"}))
        .await;
    assert_eq!(verdict, blocked("not for the subagent of task-1"));
    host.shutdown().await;
    assert!(
        !sent(&dir)
            .iter()
            .any(|f| f["modified_args"] == "not an object")
    );
    assert_frames_valid(&dir);
}

/// A panicking interceptor answers allow at once (no host timeout, no
/// warning about a missing reply), and keeps serving.
#[tokio::test]
async fn a_panicking_interceptor_allows() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    let verdict = host
        .intercept_tool_call("t1", "bash", &json!({"command": "PANIC"}))
        .await;
    assert_eq!(verdict, Outcome::Allow(None));
    assert_eq!(host.intercept_turn_start(99).await, Outcome::Allow(None));
    let log = env.log("probe");
    assert!(log.contains("tool_call interceptor panicked"), "{log}");
    assert!(log.contains("turn_start interceptor panicked"), "{log}");
    assert!(!log.contains("timed out"), "{log}");
    let verdict = host
        .intercept_tool_call("t2", "bash", &json!({"command": "rm -rf /"}))
        .await;
    assert_eq!(verdict, blocked("refused: rm -rf /"));
    host.shutdown().await;
    assert_frames_valid(&dir);
}

#[tokio::test]
async fn turn_start_interceptor_blocks_late_steps() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    assert_eq!(host.intercept_turn_start(1).await, Outcome::Allow(None));
    assert_eq!(
        host.intercept_turn_start(3).await,
        Outcome::Block {
            extension: "probe".into(),
            reason: "step 3 is too many".into()
        }
    );
    host.shutdown().await;
    assert_frames_valid(&dir);
}

#[tokio::test]
async fn assistant_message_interceptor_replaces_and_blocks() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    assert_eq!(
        host.intercept_assistant_message("hello").await,
        Outcome::Allow(None)
    );
    assert_eq!(
        host.intercept_assistant_message("the SECRET is out").await,
        Outcome::Allow(Some("the [redacted] is out".into()))
    );
    assert_eq!(
        host.intercept_assistant_message("FORBIDDEN words").await,
        Outcome::Block {
            extension: "probe".into(),
            reason: "forbidden text".into()
        }
    );
    host.shutdown().await;
    assert_frames_valid(&dir);
}

#[tokio::test]
async fn before_agent_start_replaces_or_keeps_the_system_prompt() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    let cancel = CancellationToken::new();
    let (base, mut rx) = watch::channel("You are zot.".to_owned());
    let prepared = host
        .prepare_system_prompt("s-1", &mut rx, &cancel)
        .await
        .unwrap();
    assert_eq!(
        prepared.system_prompt,
        format!(
            "You are zot.\n[probe: anthropic/test-model in {}]",
            env.cwd()
        )
    );
    base.send("keep".to_owned()).unwrap();
    let prepared = host
        .prepare_system_prompt("s-1", &mut rx, &cancel)
        .await
        .unwrap();
    assert_eq!(prepared.system_prompt, "keep");
    host.shutdown().await;
    let replies: Vec<_> = sent(&dir)
        .into_iter()
        .filter(|f| f["type"] == "event_intercept_response")
        .collect();
    assert_eq!(replies.len(), 2);
    assert!(replies[1].get("system_prompt").is_none(), "None is omitted");
    assert_frames_valid(&dir);
}
