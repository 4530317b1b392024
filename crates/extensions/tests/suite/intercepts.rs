//! Item 11: the tool_call, turn_start and assistant_message intercept chains.
//! (before_agent_start is in prompt.rs.)

use std::time::Duration;

use serde_json::json;
use zot_extensions::{ExtensionHost, HostEvent, Outcome};

use super::support::{Env, SECS5, event_matching, interceptor, received_of};

const GUARD: &str = r#"
def decide(msg):
    cmd = msg.get("tool_args", {}).get("command", "")
    if "rm -rf" in cmd:
        return {"block": True, "reason": "refused: matches danger pattern"}
    if cmd == "ls":
        return {"modified_args": {"command": "ls -la"}}
    return {}
"#;

const WRAPPER: &str = r#"
def decide(msg):
    cmd = msg.get("tool_args", {}).get("command")
    if cmd is None:
        return {"modified_args": msg["tool_args"]}  # identity rewrite
    if "rm" in cmd:
        return {"block": True, "reason": "wrapper says no"}
    return {"modified_args": {"command": "echo GUARDED: " + cmd}}
"#;

#[tokio::test]
async fn tool_call_chain_runs_in_load_order_rewrites_chain_first_block_wins() {
    let env = Env::new();
    let guard = interceptor(&env, "guard", r#"["tool_call"]"#, GUARD);
    let wrapper = interceptor(&env, "wrapper", r#"["tool_call"]"#, WRAPPER);
    let (host, _rx) = env.start(&[&guard, &wrapper]).await;

    for round in 0..5 {
        let verdict = host
            .intercept_tool_call(&format!("ls-{round}"), "bash", &json!({"command": "ls"}))
            .await;
        assert_eq!(
            verdict,
            Outcome::Allow(Some(json!({"command": "echo GUARDED: ls -la"})))
        );
        let verdict = host
            .intercept_tool_call(
                &format!("rm-{round}"),
                "bash",
                &json!({"command": "rm -rf /"}),
            )
            .await;
        assert_eq!(
            verdict,
            Outcome::Block {
                extension: "guard".into(),
                reason: "refused: matches danger pattern".into()
            }
        );
    }
    // The wrapper saw the guard's rewrite and never saw a blocked call.
    let seen = received_of(&wrapper, "event_intercept");
    assert_eq!(seen.len(), 5);
    assert!(
        seen.iter()
            .all(|m| m["tool_args"] == json!({"command": "ls -la"})),
        "{seen:?}"
    );

    // An identity rewrite is not a modification.
    let verdict = host
        .intercept_tool_call("r1", "read", &json!({"path": "a"}))
        .await;
    assert_eq!(verdict, Outcome::Allow(None));
    host.shutdown().await;
}

#[tokio::test]
async fn non_object_modified_args_are_ignored_with_a_warning() {
    let env = Env::new();
    let bad = interceptor(
        &env,
        "bad-args",
        r#"["tool_call"]"#,
        r#"
def decide(msg):
    return {"modified_args": ["not", "an", "object"]}
"#,
    );
    let (host, mut rx) = env.start(&[&bad]).await;
    let verdict = host
        .intercept_tool_call("t", "bash", &json!({"command": "ls"}))
        .await;
    assert_eq!(verdict, Outcome::Allow(None));
    let warning = event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Warning { .. }))
        .await
        .unwrap();
    assert!(
        matches!(&warning, HostEvent::Warning { extension, message } if extension == "bad-args" && message.contains("must be a JSON object")),
        "{warning:?}"
    );
    assert!(
        env.log("bad-args")
            .contains("modified_args must be a JSON object, got an array")
    );
    host.shutdown().await;
}

#[tokio::test]
async fn timeouts_crashes_and_malformed_replies_allow_with_warnings() {
    let env = Env::new();
    let silent = interceptor(
        &env,
        "silent",
        r#"["tool_call"]"#,
        "def decide(msg):\n    return None\n",
    );
    let malformed = interceptor(
        &env,
        "malformed",
        r#"["tool_call"]"#,
        "def decide(msg):\n    return {\"block\": \"yes please\"}\n",
    );
    let crasher = interceptor(
        &env,
        "crasher",
        r#"["tool_call"]"#,
        "def decide(msg):\n    os._exit(4)\n",
    );
    let blocker = interceptor(
        &env,
        "blocker",
        r#"["tool_call"]"#,
        "def decide(msg):\n    return {\"block\": True}\n",
    );
    let mut config = env.config(&[&silent, &malformed, &crasher, &blocker]);
    config.limits.intercept_timeout = Duration::from_millis(300);
    let (host, mut rx) = ExtensionHost::start(config).await;

    let verdict = host
        .intercept_tool_call("t", "bash", &json!({"command": "ls"}))
        .await;
    // Everyone before the blocker failed open; the blocker's missing reason gets a default.
    assert_eq!(
        verdict,
        Outcome::Block {
            extension: "blocker".into(),
            reason: "tool call refused by extension blocker".into()
        }
    );
    let mut warnings = Vec::new();
    while warnings.len() < 3 {
        match event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Warning { .. })).await {
            Some(HostEvent::Warning { extension, message }) => warnings.push((extension, message)),
            _ => panic!("missing warnings, got {warnings:?}"),
        }
    }
    let about = |name: &str| {
        warnings
            .iter()
            .find(|(e, _)| e == name)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    };
    assert!(
        about("silent").contains("intercept tool_call timed out"),
        "{warnings:?}"
    );
    assert!(about("silent").ends_with("allowing"), "{warnings:?}");
    assert!(
        about("malformed").contains("malformed reply"),
        "{warnings:?}"
    );
    assert!(about("crasher").contains("exit status: 4"), "{warnings:?}");
    assert!(env.log("silent").contains("timed out"));
    host.shutdown().await;
}

#[tokio::test]
async fn turn_start_blocks_and_allows() {
    let env = Env::new();
    let gate = interceptor(
        &env,
        "gate",
        r#"["turn_start"]"#,
        r#"
def decide(msg):
    if msg["step"] > 2:
        return {"block": True, "reason": "outside business hours"}
    return {}
"#,
    );
    let (host, _rx) = env.start(&[&gate]).await;
    assert_eq!(host.intercept_turn_start(1).await, Outcome::Allow(None));
    assert_eq!(
        host.intercept_turn_start(3).await,
        Outcome::Block {
            extension: "gate".into(),
            reason: "outside business hours".into()
        }
    );
    // Not subscribed to tool_call: never asked.
    assert_eq!(
        host.intercept_tool_call("t", "bash", &json!({})).await,
        Outcome::Allow(None)
    );
    assert_eq!(received_of(&gate, "event_intercept").len(), 2);
    host.shutdown().await;
}

#[tokio::test]
async fn assistant_message_rewrites_chain_and_block_wins() {
    let env = Env::new();
    let redact = interceptor(
        &env,
        "redact",
        r#"["assistant_message"]"#,
        r#"
def decide(msg):
    text = msg["text"]
    if "forbidden" in text:
        return {"block": True, "reason": "not for your eyes"}
    if "SECRET" in text:
        return {"replace_text": text.replace("SECRET", "[redacted]")}
    return {"replace_text": ""}
"#,
    );
    let shout = interceptor(
        &env,
        "shout",
        r#"["assistant_message"]"#,
        r#"
def decide(msg):
    if "[redacted]" in msg["text"]:
        return {"replace_text": msg["text"] + "!"}
    return {"replace_text": msg["text"]}
"#,
    );
    let (host, _rx) = env.start(&[&redact, &shout]).await;
    assert_eq!(
        host.intercept_assistant_message("your password is SECRET")
            .await,
        Outcome::Allow(Some("your password is [redacted]!".into()))
    );
    // Empty and identical replacements are no change.
    assert_eq!(
        host.intercept_assistant_message("hello world").await,
        Outcome::Allow(None)
    );
    assert_eq!(
        host.intercept_assistant_message("forbidden words").await,
        Outcome::Block {
            extension: "redact".into(),
            reason: "not for your eyes".into()
        }
    );
    host.shutdown().await;
}

/// An extension that never reads stdin: the request write blocks, the
/// deadline (which covers the write) passes, stdin is closed, the chain
/// allows, and later requests fail at once instead of blocking again.
#[tokio::test]
async fn an_extension_that_stops_reading_never_blocks_the_host() {
    let env = Env::new();
    let deaf = env.ext(
        "deaf",
        r#"
handshake(NAME)
emit({"type":"subscribe","intercept":["tool_call"]})
emit({"type":"ready"})
time.sleep(60)
"#,
    );
    let mut config = env.config(&[&deaf]);
    config.limits.intercept_timeout = Duration::from_millis(500);
    let (host, mut rx) = ExtensionHost::start(config).await;
    let huge = json!({"content": "x".repeat(1024 * 1024)});
    let verdict = host.intercept_tool_call("t", "write", &huge).await;
    assert_eq!(verdict, Outcome::Allow(None));
    event_matching(
        &mut rx,
        SECS5,
        |e| matches!(e, HostEvent::Warning { message, .. } if message.contains("timed out")),
    )
    .await
    .expect("timeout warning");
    assert!(
        super::support::eventually(SECS5, || env
            .log("deaf")
            .contains("closing the extension's stdin"))
        .await,
        "{}",
        env.log("deaf")
    );
    let verdict = host
        .intercept_tool_call("t2", "bash", &json!({"command": "ls"}))
        .await;
    assert_eq!(verdict, Outcome::Allow(None));
    let warning = event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Warning { .. }))
        .await
        .unwrap();
    assert!(
        matches!(&warning, HostEvent::Warning { message, .. } if message.contains("input closed")),
        "a closed pipe must fail at once, not wait for the deadline: {warning:?}"
    );
    host.shutdown().await;
}
