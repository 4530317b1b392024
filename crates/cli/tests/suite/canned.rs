//! Whole `--json` and RPC streams of a few canned sessions, kept as insta
//! JSON snapshots (`snapshots/`): any change to what a front end reads
//! shows up as a diff. Times and the working directory are redacted; the
//! loopback model's ids, usage and text are fixed, so everything else is too.

use serde_json::{Value, json};
use zot_testkit::{MockModel, anthropic, openai};

use super::rpc::Rpc;
use super::support::{Event, World, events, typed};

/// A `--json` run of `prompt` against `model`, its stream checked against
/// the schema and the protocol's type.
fn json_stream(w: &World, model: &MockModel, provider: &str, prompt: &str) -> Vec<Value> {
    let run: super::support::Run = w
        .against(model, provider, &["--json", "--no-session", prompt])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let lines = events(&run);
    for line in &lines {
        typed(line);
    }
    lines
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_answer() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("Hello there.")]).await;
    let stream = json_stream(&w, &model, "anthropic", "say hello");
    insta::assert_json_snapshot!(stream, { "[].time" => "[time]" });
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_and_its_result() {
    let w = World::new();
    std::fs::write(w.project.join("notes.txt"), "buy milk\n").unwrap();
    let model = MockModel::start([
        openai::tool_call("r1", "read", r#"{"path":"notes.txt"}"#),
        openai::text("You need milk."),
    ])
    .await;
    let stream = json_stream(&w, &model, "openai", "what do I need?");
    insta::assert_json_snapshot!(stream, { "[].time" => "[time]" });
}

#[tokio::test(flavor = "multi_thread")]
async fn an_rpc_session_with_get_state() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("Done that.")]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["--no-session"], None);
    rpc.send(r#"{"id":1,"type":"get_state"}"#);
    let before = rpc.response("get_state");
    // The prompt's answer and its events come from two tasks, so their
    // order varies: the answer is kept apart from the events.
    rpc.send(r#"{"id":2,"type":"prompt","message":"do that"}"#);
    let mut answer = None;
    let mut stream = Vec::new();
    rpc.until(|line| {
        let event = typed(line);
        match event {
            Event::Response(_) => answer = Some(line.clone()),
            _ => stream.push(line.clone()),
        }
        event == Event::Done
    });
    let answer = answer.unwrap_or_else(|| rpc.response("prompt"));
    rpc.send(r#"{"id":3,"type":"get_state"}"#);
    let after = rpc.response("get_state");
    assert_eq!(rpc.close(), 0);
    let session = json!({
        "before": before,
        "prompt": answer,
        "events": stream,
        "after": after,
    });
    insta::assert_json_snapshot!(session, {
        ".before.data.cwd" => "[cwd]",
        ".after.data.cwd" => "[cwd]",
        ".events[].time" => "[time]",
    });
}
