//! How a model call can end, through the built binary: refusals, answers cut
//! at the output limit, a full context window, paused turns, error events
//! mid-stream, and the stream shapes that carry content in unusual places.

use std::time::Duration;

use serde_json::{Value, json};
use zot_testkit::{MockModel, Response, anthropic, openai, status};

use super::rpc::Rpc;
use super::support::{
    Block, Event, Run, StopReason, World, any_tool_call, compacted_automatically, first,
    last_answer, text, turn_ends, typed_events,
};
use super::tui::Tmux;

fn zot(w: &World, model: &MockModel, provider: &str, args: &[&str]) -> Run {
    w.against(model, provider, args).output().unwrap().into()
}

/// An Anthropic stream of exactly these events (each `event:` named after
/// its `type`, as the API sends them).
fn anthropic_stream(events: &[Value]) -> Response {
    Response::sse(
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())),
    )
}

fn message_start(content: Value) -> Value {
    json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-mock",
        "content": content, "stop_reason": null,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }})
}

fn text_block(index: u64, text: &str) -> [Value; 3] {
    [
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": index}),
    ]
}

fn message_end(stop: &str, details: Value) -> [Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_details": details}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ]
}

/// An OpenAI chat completions stream of these chunks' deltas, then `finish`.
fn openai_stream(deltas: &[Value], finish: &str) -> Response {
    let chunk = |delta: &Value, finish: Option<&str>| {
        let body = json!({"id": "c1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {body}\n\n")
    };
    let mut lines: Vec<String> = deltas.iter().map(|d| chunk(d, None)).collect();
    lines.push(chunk(&json!({}), Some(finish)));
    lines.push("data: [DONE]\n\n".to_owned());
    Response::sse(lines)
}

fn refusal() -> Response {
    let mut events = vec![message_start(json!([]))];
    events.extend(text_block(0, "I can't"));
    events.extend(message_end(
        "refusal",
        json!({"type": "refusal", "category": "cyber", "explanation": "This asks for working malware."}),
    ));
    anthropic_stream(&events)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_is_shown_with_its_reason_and_fails_the_prompt() {
    let w = World::new();
    let model = MockModel::start([refusal(), refusal()]).await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &["-p", "--no-session", "write malware"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("the model refused: This asks for working malware. (cyber)"),
        "{run:?}"
    );
    assert_eq!(run.stdout, "I can't\n");

    let run = zot(
        &w,
        &model,
        "anthropic",
        &["--json", "--no-session", "again"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let ends = turn_ends(&typed_events(&run));
    assert_eq!(ends.len(), 1, "{run:?}");
    assert_eq!(ends[0].0, StopReason::Refusal);
    assert_eq!(
        ends[0].1.as_deref(),
        Some("This asks for working malware. (cyber)")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_openai_refusal_and_content_filter_are_refusals() {
    let w = World::new();
    let model = MockModel::start([
        openai_stream(
            &[json!({"role": "assistant", "refusal": "I won't help with that."})],
            "stop",
        ),
        openai_stream(&[json!({"content": "Partial"})], "content_filter"),
    ])
    .await;
    let run = zot(&w, &model, "openai", &["-p", "--no-session", "bad"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("the model refused: I won't help with that."),
        "{run:?}"
    );
    let run = zot(&w, &model, "openai", &["--json", "--no-session", "bad"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        turn_ends(&typed_events(&run))[0].0,
        StopReason::Refusal,
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_cut_at_the_output_limit_says_so_and_runs_no_cut_tool_call() {
    let w = World::new();
    // The tool call's arguments stop mid-string: it must not run.
    let cut = anthropic::Script::new()
        .text("Let me write it.")
        .tool_call("t1", "bash", r#"{"command": "touch ran"#)
        .stop_reason("max_tokens")
        .build();
    let model = MockModel::start([cut, anthropic::text("next")]).await;
    let run = zot(&w, &model, "anthropic", &["--json", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    let ends = turn_ends(&evs);
    assert_eq!(ends.len(), 1, "{run:?}");
    assert_eq!(ends[0].0, StopReason::Length);
    let note = ends[0].1.as_deref().unwrap();
    assert!(note.contains("cut at the output limit"), "{note}");
    assert!(note.contains("not run: bash"), "{note}");
    assert!(!any_tool_call(&evs));
    assert!(!w.project.join("ran").exists());
    assert_eq!(model.requests().len(), 1);

    // Print mode tells the user on stderr and keeps the answer.
    let model = MockModel::start([anthropic::Script::new()
        .text("The first half")
        .stop_reason("max_tokens")
        .build()])
    .await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "The first half\n");
    assert!(
        run.stderr
            .contains("zot: note: the answer was cut at the output limit"),
        "{run:?}"
    );
}

/// Three tool-calling turns, so a compaction has something to summarise.
fn three_tool_turns() -> Vec<Response> {
    (1..=3)
        .map(|n| anthropic::tool_call(&format!("t{n}"), "bash", r#"{"command":"echo hi"}"#))
        .collect()
}

fn too_long() -> Response {
    status(
        400,
        anthropic::error_body(400, "prompt is too long: 210000 tokens > 200000 maximum"),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_context_window_compacts_and_retries_once() {
    let w = World::new();
    let mut script = three_tool_turns();
    script.push(too_long());
    script.push(anthropic::text("Summary of the work."));
    script.push(anthropic::text("done"));
    let model = MockModel::start(script).await;
    let run = zot(&w, &model, "anthropic", &["--json", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let all = typed_events(&run);
    assert!(compacted_automatically(&all), "{run:?}");
    assert_eq!(text(&last_answer(&all)[0]), "done");
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    let retry = &requests[5].body["messages"];
    assert!(
        retry[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Summary of the work."),
        "{retry}"
    );

    // Still too long after compacting: a clear error, no third attempt.
    let mut script = three_tool_turns();
    script.extend([
        too_long(),
        anthropic::text("Summary."),
        too_long(),
        anthropic::text("never"),
    ]);
    let model = MockModel::start(script).await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("prompt is too long")
            && run.stderr.contains("still does not fit after compacting"),
        "{run:?}"
    );
    assert_eq!(model.requests().len(), 6);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_context_window_stop_reason_compacts_too() {
    let w = World::new();
    let mut script = three_tool_turns();
    script.push(
        anthropic::Script::new()
            .text("cut by the window")
            .stop_reason("model_context_window_exceeded")
            .build(),
    );
    script.push(anthropic::text("Summary."));
    script.push(anthropic::text("done"));
    let model = MockModel::start(script).await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "done\n");
    // The cut answer is not part of the conversation asked again.
    let last = model.requests().pop().unwrap();
    assert!(
        !last.raw_body.contains("cut by the window"),
        "{}",
        last.raw_body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paused_turn_is_sent_back_to_go_on() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::Script::new()
            .text("Searching the web")
            .stop_reason("pause_turn")
            .build(),
        anthropic::text("Found it."),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &["-p", "--no-session", "look it up"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Found it.\n");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant", "{last}");
    assert_eq!(last["content"][0]["text"], "Searching the web");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_event_before_any_output_is_retried() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::error_event("Overloaded"),
        anthropic::text("Second time lucky."),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Second time lucky.\n");
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_event_after_output_fails_and_keeps_the_partial_answer() {
    let w = World::new();
    let mut events = vec![message_start(json!([]))];
    events.extend(text_block(0, "Half an ans"));
    events.push(
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let model = MockModel::start([anthropic_stream(&events), anthropic::text("ok")]).await;
    let run = zot(&w, &model, "anthropic", &["-p", "first"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("Overloaded"), "{run:?}");
    assert_eq!(
        model.requests().len(),
        1,
        "shown output is never asked again"
    );
    // The session goes on from the partial answer.
    let run = zot(&w, &model, "anthropic", &["-p", "-c", "go on"]);
    assert_eq!(run.code, 0, "{run:?}");
    let messages = model.requests()[1].body["messages"].clone();
    assert_eq!(messages[1]["role"], "assistant", "{messages}");
    assert_eq!(messages[1]["content"][0]["text"], "Half an ans");
}

#[tokio::test(flavor = "multi_thread")]
async fn redacted_and_empty_thinking_go_back_verbatim_and_message_start_content_counts() {
    let w = World::new();
    let events = [
        vec![message_start(json!([{"type": "text", "text": "Already here."}]))],
        vec![
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "ENCRYPTED=="}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "signature_delta", "signature": "sig-empty"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}}),
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{\"command\":\"echo hi\"}"}}),
            json!({"type": "content_block_stop", "index": 3}),
        ],
        message_end("tool_use", Value::Null).to_vec(),
    ]
    .concat();
    let model = MockModel::start([anthropic_stream(&events), anthropic::text("done")]).await;
    let run = zot(&w, &model, "anthropic", &["--json", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    let first = first!(evs, Event::AssistantMessage { content, .. } => content);
    assert_eq!(text(&first[0]), "Already here.", "{first:?}");
    assert_eq!(first[1], Block::RedactedThinking {}, "{first:?}");
    let sent = &model.requests()[1].body["messages"][1]["content"];
    assert_eq!(
        sent,
        &json!([
            {"type": "text", "text": "Already here."},
            {"type": "redacted_thinking", "data": "ENCRYPTED=="},
            {"type": "thinking", "thinking": "", "signature": "sig-empty"},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "echo hi"}},
        ])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn content_sent_as_an_array_of_parts_is_read() {
    let w = World::new();
    let model = MockModel::start([openai_stream(
        &[
            json!({"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Let me think."}]}]}),
            json!({"content": [{"type": "text", "text": "The answer"}]}),
            json!({"content": [{"type": "text", "text": " is 42."}]}),
        ],
        "stop",
    )])
    .await;
    let run = zot(&w, &model, "openai", &["--json", "--no-session", "q"]);
    assert_eq!(run.code, 0, "{run:?}");
    let all = typed_events(&run);
    assert!(
        all.contains(&Event::ThinkingDelta {
            delta: "Let me think.".into()
        }),
        "{run:?}"
    );
    let answer = first!(all, Event::AssistantMessage { content, .. } => content);
    assert_eq!(text(&answer[1]), "The answer is 42.", "{answer:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_ends_a_refused_turn_with_stop_refusal() {
    let w = World::new();
    let model = MockModel::start([refusal()]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"prompt","message":"write malware"}"#);
    let (stop, error) = rpc.next_turn_end_within(Duration::from_secs(10));
    assert_eq!(stop, StopReason::Refusal, "{error:?}");
    assert_eq!(
        error.as_deref(),
        Some("This asks for working malware. (cyber)")
    );
    rpc.done();
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn adaptive_models_get_an_effort_not_a_budget() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("thought")]).await;
    let args = [
        "-p",
        "--no-session",
        "--model",
        "claude-opus-5-5",
        "--reasoning",
        "high",
        "hi",
    ];
    let run = zot(&w, &model, "anthropic", &args);
    assert_eq!(run.code, 0, "{run:?}");
    let body = &model.requests()[0].body;
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(body["output_config"], json!({"effort": "high"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_models_are_current_and_think_their_own_way() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("a"), anthropic::text("b")]).await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    let args = ["-p", "--no-session", "--reasoning", "medium", "hi"];
    let run = zot(&w, &model, "anthropic", &args);
    assert_eq!(run.code, 0, "{run:?}");
    let requests = model.requests();
    let (plain, reasoning) = (&requests[0].body, &requests[1].body);
    assert_eq!(plain["model"], "claude-sonnet-5-5");
    // Without --reasoning the model's own default (adaptive) applies; with
    // it, adaptive thinking and an effort, never a budget or sampling.
    assert!(plain.get("thinking").is_none(), "{plain}");
    assert_eq!(reasoning["thinking"], json!({"type": "adaptive"}));
    assert_eq!(reasoning["output_config"], json!({"effort": "medium"}));
    for body in [plain, reasoning] {
        for field in ["temperature", "top_p", "top_k"] {
            assert!(body.get(field).is_none(), "{field} in {body}");
        }
    }

    let model = MockModel::start([openai::text("c")]).await;
    let args = ["-p", "--no-session", "--reasoning", "high", "hi"];
    let run = zot(&w, &model, "openai", &args);
    assert_eq!(run.code, 0, "{run:?}");
    let body = &model.requests()[0].body;
    assert_eq!(body["model"], "gpt-6.2-sol");
    assert_eq!(body["reasoning_effort"], "high");
    assert!(body.get("max_tokens").is_none(), "{body}");
    assert!(body["max_completion_tokens"].as_u64().is_some(), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_shows_the_cache_share_a_cut_answer_and_a_refusal() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::Script::new()
            .text("First answer.")
            .usage(100, 10)
            .cache(0, 4000)
            .build(),
        anthropic::Script::new()
            .text("Second answer.")
            .usage(50, 10)
            .cache(4000, 100)
            .build(),
        anthropic::Script::new()
            .text("The first half")
            .stop_reason("max_tokens")
            .build(),
        refusal(),
    ])
    .await;
    let tmux = Tmux::against(&w, "stops", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("one");
    tmux.keys(&["Enter"]);
    tmux.wait_for("First answer.");
    tmux.type_text("two");
    tmux.keys(&["Enter"]);
    // 4,000 of the 8,250 prompt tokens so far were read from the cache.
    tmux.wait_for("cache 48%");
    tmux.type_text("three");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer was cut at the output limit");
    tmux.type_text("four");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the model refused: This asks for working malware. (cyber)");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}
