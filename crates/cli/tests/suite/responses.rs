//! The OpenAI Responses API through the built binary, against testkit's
//! strict Responses server: stateless requests whose reasoning items are
//! replayed in order with the calls they preceded, every way a response
//! ends, and the `api` setting that picks the wire API.

use std::time::Duration;

use serde_json::{Value, json};
use zot_testkit::responses::{self, Script};
use zot_testkit::{MockModel, openai};

use super::rpc::Rpc;
use super::support::{
    Event, Run, StopReason, World, any_tool_call, compacted_automatically, first, last_answer,
    session_lines, streamed_text, streamed_thinking, text, turn_ends, typed_events,
};

/// `zot args` against `model` as OpenAI speaking the Responses API.
fn zot(w: &World, model: &MockModel, args: &[&str]) -> Run {
    let mut cmd = w.against(model, "openai", args);
    cmd.args(["--api", "responses"]);
    cmd.output().unwrap().into()
}

/// Each input item as `type` plus what tells it apart (a call id, a
/// reasoning item's encrypted content, a message's role).
fn shape(body: &Value) -> Vec<String> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| match item["type"].as_str().unwrap() {
            "message" => format!("message {}", item["role"].as_str().unwrap()),
            "reasoning" => format!("reasoning {}", item["encrypted_content"].as_str().unwrap()),
            kind => format!("{kind} {}", item["call_id"].as_str().unwrap()),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn reasoning_survives_a_chain_of_tool_calls() {
    let w = World::new();
    std::fs::write(w.project.join("notes.txt"), "alpha\n").unwrap();
    let model = MockModel::start([
        Script::new()
            .reasoning("Look around first.", "enc-1")
            .tool_call("call_1", "ls", "{}")
            .build(),
        // Two calls in one response: both run, both answered.
        Script::new()
            .reasoning("Read the notes.", "enc-2")
            .text("Reading both.")
            .tool_call("call_2", "read", r#"{"path":"notes.txt"}"#)
            .tool_call("call_3", "find", r#"{"pattern":"*.txt"}"#)
            .build(),
        Script::new()
            .reasoning("Done.", "enc-3")
            .text("The notes say alpha.")
            .build(),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        &[
            "-p",
            "--no-session",
            "--reasoning",
            "high",
            "what do the notes say?",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "The notes say alpha.\n");
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    let first = &requests[0].body;
    assert_eq!(first["model"], "gpt-6.2-sol");
    assert_eq!(first["store"], false);
    assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        first["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert!(first["instructions"].as_str().unwrap().contains("zot"));
    assert!(first["max_output_tokens"].as_u64().unwrap() > 0);
    // Only OpenAI's own endpoint gets the cache key.
    assert!(first.get("prompt_cache_key").is_none());
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(
        shape(&requests[2].body),
        [
            "message user",
            "reasoning enc-1",
            "function_call call_1",
            "function_call_output call_1",
            "reasoning enc-2",
            "message assistant",
            "function_call call_2",
            "function_call call_3",
            "function_call_output call_2",
            "function_call_output call_3",
        ]
    );
    let input = &requests[2].body["input"];
    assert_eq!(input[1]["summary"][0]["text"], "Look around first.");
    assert_eq!(input[1]["id"], "rs_0");
    assert!(
        input[8]["output"].as_str().unwrap().contains("alpha"),
        "{input}"
    );
    assert!(
        input[9]["output"].as_str().unwrap().contains("notes.txt"),
        "{input}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn summaries_stream_as_thinking_and_usage_counts_cached_and_reasoning_tokens() {
    let w = World::new();
    let model = MockModel::start([Script::new()
        .reasoning_parts(&["First part.", "Second part."], Some("enc"))
        .text("Answer.")
        .usage(1000, 200, 600, 50)
        .build()])
    .await;
    let run = zot(&w, &model, &["--json", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    assert_eq!(streamed_thinking(&evs), "First part.\n\nSecond part.");
    assert_eq!(streamed_text(&evs), "Answer.");
    let usage = first!(evs, Event::Usage { usage, .. } => usage);
    assert_eq!(usage.input, 400);
    assert_eq!(usage.cache_read, 600);
    assert_eq!(usage.output, 200);
    assert_eq!(usage.reasoning, 50);
    // gpt-6.2-sol: $2 in, $0.10 a cached token, $10 out (reasoning included).
    let cost = (400.0 * 2.0 + 600.0 * 0.10 + 200.0 * 10.0) / 1e6;
    assert!((usage.cost_usd - cost).abs() < 1e-12, "{usage:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn reasoning_tokens_are_kept_in_the_session_file_and_rpc_state_on_both_wires() {
    let w = World::new();
    let model = MockModel::start([
        Script::new()
            .reasoning("Think.", "enc")
            .text("One.")
            .usage(100, 80, 0, 60)
            .build(),
        openai::Script::new()
            .text("Two.")
            .usage(100, 30, 0)
            .reasoning_tokens(20)
            .build(),
    ])
    .await;
    let run = zot(&w, &model, &["--json", "one"]);
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    let usage = first!(evs, Event::Usage { usage, .. } => usage);
    assert_eq!((usage.output, usage.reasoning), (80, 60));
    // Chat completions report theirs as `completion_tokens_details`; the
    // resumed session adds them to what its file already holds.
    let mut rpc = Rpc::start(&w, &model, "openai", &["-c"], None);
    rpc.send(r#"{"type":"prompt","message":"two"}"#);
    let (usage, cumulative) = rpc.next_usage();
    assert_eq!(usage.reasoning, 20, "{usage:?}");
    assert_eq!(cumulative.reasoning, 80, "{cumulative:?}");
    rpc.done();
    rpc.send(r#"{"type":"get_state"}"#);
    let state = rpc.response("get_state");
    assert_eq!(state["data"]["usage"]["reasoning"], 80, "{state}");
    assert_eq!(rpc.close(), 0);
    assert_eq!(model.requests()[1].path, "/v1/chat/completions");
    let recorded: Vec<u64> = session_lines(&w)
        .iter()
        .filter(|l| l["type"] == "usage")
        .map(|l| l["usage"]["reasoning"].as_u64().unwrap())
        .collect();
    assert_eq!(recorded, [60, 20]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_incomplete_response_says_why_and_runs_no_cut_call() {
    let w = World::new();
    let cut = Script::new()
        .text("Let me write it.")
        .tool_call("call_1", "bash", r#"{"command": "touch ran"}"#)
        .incomplete("max_output_tokens");
    let model = MockModel::start([cut.build()]).await;
    let run = zot(&w, &model, &["--json", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    let ends = turn_ends(&evs);
    assert_eq!(ends.len(), 1, "{run:?}");
    assert_eq!(ends[0].0, StopReason::Length);
    assert!(
        ends[0]
            .1
            .as_deref()
            .unwrap()
            .contains("cut at the output limit"),
        "{run:?}"
    );
    assert!(!any_tool_call(&evs));
    assert!(!w.project.join("ran").exists());
    assert_eq!(model.requests().len(), 1);

    let model = MockModel::start([Script::new()
        .text("Partial")
        .incomplete("content_filter")
        .build()])
    .await;
    let run = zot(&w, &model, &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("the model refused"), "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_part_is_a_refusal() {
    let w = World::new();
    let model = MockModel::start([
        Script::new().refusal("I can't help with that.").build(),
        Script::new().refusal("Still no.").build(),
    ])
    .await;
    let run = zot(&w, &model, &["-p", "--no-session", "bad"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("the model refused: I can't help with that."),
        "{run:?}"
    );
    let mut rpc = Rpc::start(&w, &model, "openai", &["--api", "responses"], None);
    rpc.send(r#"{"type":"prompt","message":"bad"}"#);
    let (stop, error) = rpc.next_turn_end_within(Duration::from_secs(10));
    assert_eq!(stop, StopReason::Refusal, "{error:?}");
    assert_eq!(error.as_deref(), Some("Still no."));
    rpc.done();
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_server_is_asked_again_and_other_failures_are_clear_errors() {
    let w = World::new();
    let model = MockModel::start([
        responses::failed("server_error", "The server had an error."),
        responses::error_event("server_is_overloaded", "Overloaded."),
        responses::text("Third time lucky."),
        responses::failed("invalid_prompt", "Your prompt was flagged."),
    ])
    .await;
    let run = zot(&w, &model, &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Third time lucky.\n");
    assert_eq!(model.requests().len(), 3);
    let run = zot(&w, &model, &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("the response failed (invalid_prompt): Your prompt was flagged."),
        "{run:?}"
    );
    assert_eq!(
        model.requests().len(),
        4,
        "a refused prompt is not asked again"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_continues_with_its_reasoning_and_the_api_setting_picks_the_wire() {
    let w = World::new();
    let model = MockModel::start([
        Script::new()
            .reasoning("Plan.", "enc-a")
            .tool_call("call_1", "ls", "{}")
            .build(),
        responses::text("Listed."),
        responses::text("Again."),
    ])
    .await;
    let run = zot(&w, &model, &["--json", "first"]);
    assert_eq!(run.code, 0, "{run:?}");
    // The saved session replays the reasoning item from the file.
    let run = zot(&w, &model, &["-p", "-c", "second"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        shape(&model.requests()[2].body),
        [
            "message user",
            "reasoning enc-a",
            "function_call call_1",
            "function_call_output call_1",
            "message assistant",
            "message user",
        ]
    );

    // A custom server speaks chat completions unless the config says otherwise.
    let chat = MockModel::start([openai::text("chat"), responses::text("responses")]).await;
    let run: Run = w
        .against(&chat, "openai", &["-p", "--no-session", "hi"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.stdout, "chat\n", "{run:?}");
    std::fs::write(w.home.join("config.json"), r#"{"api": "responses"}"#).unwrap();
    let run: Run = w
        .against(&chat, "openai", &["-p", "--no-session", "hi"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.stdout, "responses\n", "{run:?}");
    let paths: Vec<String> = chat.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/chat/completions", "/v1/responses"]);
    let run = w.zot(&["config", "set", "api", "grpc"]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("responses or chat"), "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_codex_model_is_asked_through_the_responses_api_whatever_the_setting() {
    let w = World::new();
    // The config asks for chat completions, as a custom server speaks.
    std::fs::write(w.home.join("config.json"), r#"{"api": "chat"}"#).unwrap();
    let model = MockModel::start([openai::text("from chat"), responses::text("from codex")]).await;
    let run: Run = w
        .against(&model, "openai", &["-p", "--model", "gpt-6.2-sol", "hi"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.stdout, "from chat\n", "{run:?}");
    // The same conversation goes on with a model served only by the
    // Responses API: asked there, with what was said so far.
    let args = ["-p", "-c", "--model", "gpt-5.3-codex", "again"];
    let run: Run = w.against(&model, "openai", &args).output().unwrap().into();
    assert_eq!(run.stdout, "from codex\n", "{run:?}");
    let requests = model.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/v1/chat/completions", "/v1/responses"]);
    assert_eq!(requests[1].body["model"], "gpt-5.3-codex");
    assert_eq!(
        shape(&requests[1].body),
        ["message user", "message assistant", "message user"]
    );
    let listed = w.zot(&["models", "--json", "--provider", "openai"]);
    assert!(listed.stdout.contains("\"gpt-5.3-codex\""), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_context_window_compacts_and_the_turn_goes_on() {
    let w = World::new();
    let mut script: Vec<_> = (1..=3)
        .map(|n| responses::tool_call(&format!("call_{n}"), "bash", r#"{"command":"echo hi"}"#))
        .collect();
    script.extend([
        responses::failed(
            "context_length_exceeded",
            "Your input exceeds the context window of this model.",
        ),
        responses::text("Summary of the work."),
        responses::text("done"),
    ]);
    let model = MockModel::start(script).await;
    let run = zot(&w, &model, &["--json", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let all = typed_events(&run);
    assert!(compacted_automatically(&all), "{run:?}");
    assert_eq!(text(&last_answer(&all)[0]), "done");
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    let retry = serde_json::to_string(&requests[5].body["input"][0]).unwrap();
    assert!(retry.contains("Summary of the work."), "{retry}");
}
