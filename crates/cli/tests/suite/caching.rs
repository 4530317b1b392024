//! Prompt caching through the built binary: the marks Anthropic requests
//! carry, the `cache` setting, and cache use counted and priced in the
//! usage events, the session file and `get_state`.

use serde_json::Value;
use zot_testkit::anthropic::cache_marks as marks_of;
use zot_testkit::{MockModel, anthropic, openai};

use super::rpc::Rpc;
use super::support::{Event, Run, Usage, World, first, session_lines, typed_events};

fn zot(w: &World, model: &MockModel, provider: &str, args: &[&str]) -> Run {
    w.against(model, provider, args).output().unwrap().into()
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_mark_the_prefix_and_cache_use_is_counted_and_priced() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::Script::new()
            .tool_call("t1", "bash", r#"{"command":"echo hi"}"#)
            .usage(100, 10)
            .cache(0, 4000)
            .build(),
        anthropic::Script::new()
            .text("done")
            .usage(50, 10)
            .cache(4000, 120)
            .build(),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["--json", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let requests = model.requests();
    let tools = requests[0].body["tools"].as_array().unwrap().len();
    let ephemeral = r#"{"type":"ephemeral"}"#;
    assert_eq!(
        marks_of(&requests[0].body),
        [
            format!("/messages/0/content/0 {ephemeral}"),
            format!("/system/0 {ephemeral}"),
            format!("/tools/{} {ephemeral}", tools - 1),
        ]
    );
    // The second request moves the message mark to its newest message and
    // keeps the prefix byte for byte.
    assert_eq!(
        marks_of(&requests[1].body)[0],
        format!("/messages/2/content/0 {ephemeral}")
    );
    let prefix = |i: usize| {
        let body = &requests[i].body;
        (body["tools"].to_string(), body["system"].to_string())
    };
    assert_eq!(prefix(0), prefix(1));

    let usage: Vec<(Usage, Usage)> = typed_events(&run)
        .into_iter()
        .filter_map(|e| match e {
            Event::Usage { usage, cumulative } => Some((usage, cumulative)),
            _ => None,
        })
        .collect();
    assert_eq!(usage[1].0.cache_read, 4000);
    assert_eq!(usage[1].1.cache_write, 4120);
    // claude-sonnet-5-5: $2 in, $10 out, $2.50 a 5-minute write, $0.10 a read.
    let second = (50.0 * 2.0 + 10.0 * 10.0 + 4000.0 * 0.10 + 120.0 * 2.5) / 1e6;
    assert!(
        (usage[1].0.cost_usd - second).abs() < 1e-12,
        "{:?}",
        usage[1]
    );
    let recorded: Vec<Value> = session_lines(&w)
        .into_iter()
        .filter(|l| l["type"] == "usage")
        .collect();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[1]["model"], "claude-sonnet-5-5");
    assert_eq!(recorded[1]["usage"]["cache_read"], 4000);
    assert_eq!(recorded[0]["usage"]["cache_write"], 4000);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cache_setting_picks_the_lifetime_or_turns_marks_off() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("a"), anthropic::text("b")]).await;
    std::fs::write(w.home.join("config.json"), r#"{"cache": "1h"}"#).unwrap();
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    let hour = marks_of(&model.requests()[0].body);
    assert_eq!(hour.len(), 3, "{hour:?}");
    assert!(
        hour.iter()
            .all(|m| m.ends_with(r#"{"type":"ephemeral","ttl":"1h"}"#)),
        "{hour:?}"
    );
    std::fs::write(w.home.join("config.json"), r#"{"cache": "off"}"#).unwrap();
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(marks_of(&model.requests()[1].body).is_empty());
    std::fs::write(w.home.join("config.json"), r#"{"cache": "forever"}"#).unwrap();
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hi"]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("5m, 1h or off"), "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn other_openai_compatible_servers_get_no_cache_key_and_cached_tokens_count() {
    let w = World::new();
    let model = MockModel::start([openai::Script::new()
        .text("hi")
        .usage(1000, 10, 800)
        .build()])
    .await;
    let run = zot(&w, &model, "openai", &["--json", "--no-session", "q"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(model.requests()[0].body.get("prompt_cache_key").is_none());
    let evs = typed_events(&run);
    let usage = first!(evs, Event::Usage { usage, .. } => usage);
    assert_eq!((usage.input, usage.cache_read), (200, 800));
}

#[tokio::test(flavor = "multi_thread")]
async fn get_state_reports_cache_use() {
    let w = World::new();
    let model =
        MockModel::start([anthropic::Script::new().text("x").cache(900, 100).build()]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"prompt","message":"hi"}"#);
    rpc.done();
    rpc.send(r#"{"type":"get_state"}"#);
    let state = rpc.response("get_state");
    assert_eq!(state["data"]["usage"]["cache_read"], 900, "{state}");
    assert_eq!(state["data"]["usage"]["cache_write"], 100, "{state}");
    assert_eq!(rpc.close(), 0);
}
