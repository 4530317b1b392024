//! Item 11, before_agent_start: the spec's "System prompt replacement".

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;
use zot_extensions::{CancellationToken, Cancelled, ExtensionHost, HostEvent};

use super::support::{Env, SECS5, event_matching, eventually, interceptor, received_of};

/// A before_agent_start interceptor whose reply is `decide(msg)` (python).
fn preparer(env: &Env, name: &str, decide: &str) -> PathBuf {
    interceptor(env, name, r#"["before_agent_start"]"#, decide)
}

async fn prepare(
    host: &ExtensionHost,
    base: &str,
) -> Result<zot_extensions::PreparedPrompt, Cancelled> {
    let (_tx, mut rx) = watch::channel(base.to_owned());
    host.prepare_system_prompt("session-1", &mut rx, &CancellationToken::new())
        .await
}

#[tokio::test]
async fn replacements_chain_in_load_order_with_exact_values() {
    let env = Env::new();
    let a = preparer(
        &env,
        "a",
        "def decide(msg):\n    return {'system_prompt': msg['system_prompt'] + '\\n+A'}\n",
    );
    let b = preparer(
        &env,
        "b",
        "def decide(msg):\n    return {'system_prompt': msg['system_prompt'] + '  +B  '}\n",
    );
    let (host, _rx) = env.start(&[&a, &b]).await;
    let prepared = prepare(&host, "base").await.unwrap();
    assert_eq!(
        prepared.system_prompt, "base\n+A  +B  ",
        "no trimming or merging"
    );
    let seen_a = &received_of(&a, "event_intercept")[0];
    let seen_b = &received_of(&b, "event_intercept")[0];
    assert_eq!(seen_a["event"], "before_agent_start");
    assert_eq!(seen_a["system_prompt"], "base");
    assert_eq!(seen_b["system_prompt"], "base\n+A");
    assert_eq!(
        seen_a["agent_run_id"], seen_b["agent_run_id"],
        "one run id per pass"
    );
    assert_eq!(seen_a["agent_run_id"], prepared.agent_run_id);
    assert_eq!(seen_a["session_id"], "session-1");
    assert_eq!(seen_a["cwd"], env.project.display().to_string());
    assert_eq!(seen_a["provider"], "anthropic");
    assert_eq!(seen_a["model"], "test-model");

    let again = prepare(&host, "base").await.unwrap();
    assert_ne!(
        again.agent_run_id, prepared.agent_run_id,
        "a new run id per pass"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn empty_removes_omission_keeps_block_is_ignored() {
    let env = Env::new();
    let keep = preparer(
        &env,
        "keep",
        "def decide(msg):\n    return {'block': True, 'reason': 'no'}\n",
    );
    let wipe = preparer(
        &env,
        "wipe",
        "def decide(msg):\n    return {'system_prompt': ''}\n",
    );
    let after = preparer(&env, "after", "def decide(msg):\n    return {}\n");
    let (host, _rx) = env.start(&[&keep, &wipe, &after]).await;
    assert_eq!(prepare(&host, "base").await.unwrap().system_prompt, "");
    assert_eq!(
        received_of(&after, "event_intercept")[0]["system_prompt"],
        ""
    );
    host.shutdown().await;

    let (host, _rx) = env.start(&[&keep, &after]).await;
    assert_eq!(prepare(&host, "base").await.unwrap().system_prompt, "base");
    host.shutdown().await;
}

#[tokio::test]
async fn oversized_and_invalid_values_keep_the_prompt_with_warnings() {
    let env = Env::new();
    let big = preparer(
        &env,
        "big",
        "def decide(msg):\n    return {'system_prompt': 'x' * (1024 * 1024 + 1)}\n",
    );
    let fits = preparer(
        &env,
        "fits",
        "def decide(msg):\n    return {'system_prompt': msg['system_prompt'] + 'y' * (1024 * 1024 - 100)}\n",
    );
    let bad = preparer(
        &env,
        "bad",
        "def decide(msg):\n    return {'system_prompt': 42}\n",
    );
    let (host, mut rx) = env.start(&[&big, &fits, &bad]).await;
    let prepared = prepare(&host, "base").await.unwrap();
    assert_eq!(prepared.system_prompt.len(), 4 + 1024 * 1024 - 100);
    assert!(prepared.system_prompt.starts_with("base"));
    let mut messages = Vec::new();
    while messages.len() < 2 {
        match event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Warning { .. })).await {
            Some(HostEvent::Warning { extension, message }) => {
                messages.push(format!("{extension}: {message}"))
            }
            _ => panic!("missing warnings: {messages:?}"),
        }
    }
    assert!(
        messages[0].starts_with("big: system_prompt reply is 1048579 bytes"),
        "{messages:?}"
    );
    assert!(
        messages[1].starts_with("bad: intercept before_agent_start malformed reply"),
        "{messages:?}"
    );
    assert!(messages[1].ends_with("keeping the prompt"), "{messages:?}");
    assert!(env.log("big").contains("over the 1048576 byte limit"));
    host.shutdown().await;
}

#[tokio::test]
async fn a_reset_during_a_pass_reruns_the_chain_from_the_new_base() {
    let env = Env::new();
    let slow = preparer(
        &env,
        "slow",
        "def decide(msg):\n    time.sleep(0.4)\n    return {'system_prompt': msg['system_prompt'] + '+slow'}\n",
    );
    let (host, _rx) = env.start(&[&slow]).await;
    let (tx, mut rx) = watch::channel("base-1".to_owned());
    let task = {
        let host = host.clone();
        tokio::spawn(async move {
            host.prepare_system_prompt("s", &mut rx, &CancellationToken::new())
                .await
        })
    };
    assert!(eventually(SECS5, || received_of(&slow, "event_intercept").len() == 1).await);
    tx.send("base-2".to_owned()).unwrap();
    assert!(eventually(SECS5, || received_of(&slow, "event_intercept").len() == 2).await);
    // A reset to the same text still reruns.
    tx.send("base-2".to_owned()).unwrap();
    let prepared = task.await.unwrap().unwrap();
    assert_eq!(prepared.system_prompt, "base-2+slow");
    let seen = received_of(&slow, "event_intercept");
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[1]["system_prompt"], "base-2");
    assert_eq!(
        seen[2]["system_prompt"], "base-2",
        "rebuilds start from the base, not the last result"
    );
    let runs: std::collections::HashSet<_> =
        seen.iter().map(|m| m["agent_run_id"].clone()).collect();
    assert_eq!(runs.len(), 3);
    assert_eq!(prepared.agent_run_id, seen[2]["agent_run_id"]);
    host.shutdown().await;
}

#[tokio::test]
async fn cancellation_stops_preparation_without_a_result() {
    let env = Env::new();
    let slow = preparer(
        &env,
        "slow",
        "def decide(msg):\n    time.sleep(3)\n    return {'system_prompt': 'late'}\n",
    );
    let (host, _rx) = env.start(&[&slow]).await;
    let cancel = CancellationToken::new();
    let (_tx, mut rx) = watch::channel("base".to_owned());
    let task = {
        let host = host.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { host.prepare_system_prompt("s", &mut rx, &cancel).await })
    };
    assert!(eventually(SECS5, || received_of(&slow, "event_intercept").len() == 1).await);
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(2), task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result, Err(Cancelled));
    host.shutdown().await;
}
