//! What the user sees is what happened: `clear`, `compact`, cancels, queued
//! prompts and model switches, checked in the next model request and in the
//! session file a resume reads.

use std::path::PathBuf;

use serde_json::{Value, json};
use zot_testkit::{MockModel, Response, anthropic};

use super::rpc::Rpc;
use std::time::Duration;

use super::support::{Event, Run, StopReason, World, text, typed};
use super::tui::Tmux;

/// Each message of a request body as its text (text blocks and tool
/// results' text) joined with `|`.
pub(super) fn texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .flat_map(|b| match b["type"].as_str() {
                    Some("tool_result") => b["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["text"].as_str())
                        .map(str::to_owned)
                        .collect::<Vec<_>>(),
                    _ => b["text"].as_str().map(str::to_owned).into_iter().collect(),
                })
                .collect::<Vec<_>>()
                .join("|"),
            _ => String::new(),
        })
        .collect()
}

/// Every session file under the world's `$ZOT_HOME` (not the index).
pub(super) fn session_files(w: &World) -> Vec<PathBuf> {
    let Ok(dirs) = std::fs::read_dir(w.home.join("sessions")) else {
        return Vec::new();
    };
    dirs.flatten()
        .filter(|dir| dir.path().is_dir())
        .flat_map(|dir| std::fs::read_dir(dir.path()).unwrap().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect()
}

/// The lines of a session file.
pub(super) fn session_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A stream that sends `text` and then neither ends nor closes.
fn stalled(text: &str) -> Response {
    anthropic::Script::new().text(text).build_partial().stall()
}

/// Waits until the text deltas streamed so far spell `text`.
fn streamed(rpc: &Rpc, text: &str) {
    let mut got = String::new();
    rpc.until_event(|e| {
        if let Event::TextDelta { delta } = e {
            got.push_str(delta);
        }
        got == text
    });
}

pub(super) fn prompt(rpc: &mut Rpc, text: &str) {
    rpc.send(&json!({"type": "prompt", "message": text}).to_string());
    assert_eq!(rpc.response("prompt")["success"], true);
}

pub(super) fn answered(rpc: &mut Rpc, text: &str) {
    prompt(rpc, text);
    rpc.done();
}

/// What `--json`/`-p` printed, for messages.
pub(super) fn ok(run: Run) -> Run {
    assert_eq!(run.code, 0, "{run:?}");
    run
}

#[tokio::test(flavor = "multi_thread")]
async fn clear_starts_a_new_session_and_resuming_sends_only_what_came_after() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::text("first"),
        anthropic::text("second"),
        anthropic::text("after clear"),
        anthropic::text("resumed"),
    ])
    .await;
    // `-c` with no session yet starts one.
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["-c"], None);
    answered(&mut rpc, "one");
    answered(&mut rpc, "two");
    rpc.send(r#"{"type":"clear"}"#);
    assert_eq!(rpc.response("clear")["success"], true);
    answered(&mut rpc, "three");
    assert_eq!(rpc.close(), 0);
    assert_eq!(texts(&model.requests()[2].body), ["three"]);

    ok(w.against(&model, "anthropic", &["-p", "-c", "four"])
        .output()
        .unwrap()
        .into());
    assert_eq!(
        texts(&model.requests()[3].body),
        ["three", "after clear", "four"]
    );
    // The conversation before the clear stays whole in a file of its own.
    let files = session_files(&w);
    assert_eq!(files.len(), 2, "{files:?}");
    let old = files
        .iter()
        .map(std::fs::read_to_string)
        .map(Result::unwrap)
        .find(|text| text.contains("\"one\""))
        .unwrap();
    assert!(
        old.contains("\"second\"") && !old.contains("three"),
        "{old}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_session_keeps_its_compaction_and_who_answered_each_message() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::text("one"),
        anthropic::text("two"),
        anthropic::text("three"),
        anthropic::Script::new()
            .text("THE SUMMARY")
            .usage(1000, 200)
            .build(),
        anthropic::text("resumed"),
    ])
    .await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["-c"], None);
    for n in 1..=3 {
        answered(&mut rpc, &format!("message {n}"));
    }
    rpc.send(r#"{"type":"compact"}"#);
    let done = rpc.until_event(|e| matches!(e, Event::CompactDone { .. } | Event::Error { .. }));
    assert!(
        matches!(&done, Event::CompactDone { summary, .. } if summary == "THE SUMMARY"),
        "{done:?}"
    );
    rpc.send(r#"{"type":"set_model","model":"claude-haiku-4-5"}"#);
    assert_eq!(rpc.response("set_model")["success"], true);
    assert_eq!(rpc.close(), 0);

    ok(w.against(
        &model,
        "anthropic",
        &["-p", "-c", "--model", "claude-haiku-4-5", "next"],
    )
    .output()
    .unwrap()
    .into());
    let sent = texts(&model.requests()[4].body);
    assert_eq!(
        sent,
        [
            // Anthropic takes the summary and the next prompt as one user turn.
            "## Context Summary (compacted)\n\nTHE SUMMARY|message 2",
            "two",
            "message 3",
            "three",
            "next"
        ]
    );

    let files = session_files(&w);
    assert_eq!(files.len(), 1, "{files:?}");
    let lines = session_lines(&files[0]);
    let compaction = lines.iter().find(|l| l["type"] == "compaction").unwrap();
    assert_eq!(compaction["summary"], "THE SUMMARY");
    assert_eq!(compaction["first_kept"], 2);
    assert_eq!(compaction["automatic"], false);
    assert_eq!(compaction["served"]["model"], "claude-sonnet-5-5");
    assert_eq!(compaction["served"]["usage"]["input"], 1000);
    let change = lines.iter().find(|l| l["type"] == "model_change").unwrap();
    assert_eq!(
        (&change["provider"], &change["model"]),
        (&json!("anthropic"), &json!("claude-haiku-4-5"))
    );
    // Every assistant message says who wrote it; the switch shows.
    let served: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "assistant")
        .map(|l| {
            (
                l["served"]["provider"].as_str().unwrap(),
                l["served"]["model"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        served,
        [
            ("anthropic", "claude-sonnet-5-5"),
            ("anthropic", "claude-sonnet-5-5"),
            ("anthropic", "claude-sonnet-5-5"),
            ("anthropic", "claude-haiku-4-5"),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_closes_the_prompt_and_leaves_the_queue_and_abort_queue_drops_it() {
    let w = World::new();
    let model = MockModel::start([
        stalled("partial A"),
        anthropic::text("B answer"),
        stalled("partial D"),
        anthropic::text("G answer"),
    ])
    .await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    prompt(&mut rpc, "A");
    streamed(&rpc, "partial A");
    prompt(&mut rpc, "B");
    rpc.send(r#"{"type":"abort"}"#);
    assert_eq!(
        rpc.next_stop_within(Duration::from_secs(10)),
        StopReason::Aborted
    );
    // B was queued: it runs once A is over.
    assert_eq!(text(&rpc.next_answer()[0]), "B answer");
    rpc.done();
    // The cancelled prompt is closed, not glued to the next one.
    assert_eq!(
        texts(&model.requests()[1].body),
        ["A", "partial A\n\n[interrupted by the user]", "B"]
    );

    prompt(&mut rpc, "D");
    streamed(&rpc, "partial D");
    prompt(&mut rpc, "E");
    prompt(&mut rpc, "F");
    rpc.send(r#"{"type":"abort","queue":true}"#);
    // D's `done` and the response may come in either order.
    let (mut response, mut done) = (Value::Null, false);
    rpc.until(|v| {
        let event = typed(v);
        done |= event == Event::Done;
        if let Event::Response(_) = event {
            response = v.clone();
        }
        done && !response.is_null()
    });
    assert_eq!(
        response["data"],
        json!({"dropped": ["E", "F"]}),
        "{response}"
    );
    // E and F never run: the next prompt is answered next, with no `done` between.
    prompt(&mut rpc, "G");
    let mut dones = 0;
    rpc.until_event(|e| {
        dones += usize::from(*e == Event::Done);
        matches!(e, Event::AssistantMessage { .. })
    });
    assert_eq!(dones, 0, "E and F never ran");
    rpc.done();
    assert_eq!(
        texts(&model.requests()[3].body),
        [
            "A",
            "partial A\n\n[interrupted by the user]",
            "B",
            "B answer",
            "D",
            "partial D\n\n[interrupted by the user]",
            "G"
        ]
    );
    assert_eq!(model.requests().len(), 4);
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_call_is_priced_at_the_model_that_served_it_compaction_included() {
    let w = World::new();
    let million = |text: &str| {
        anthropic::Script::new()
            .text(text)
            // Output tokens: input this large would start auto-compaction.
            .usage(10, 1_000_000)
            .build()
    };
    let model = MockModel::start([
        million("sonnet"),
        million("haiku"),
        million("opus"),
        million("opus summary"),
    ])
    .await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    let mut costs = Vec::new();
    for (prompt_text, next) in [
        ("a", Some("claude-haiku-4-5")),
        ("b", Some("claude-opus-4-1")),
        ("c", None),
    ] {
        prompt(&mut rpc, prompt_text);
        let (usage, _) = rpc.next_usage();
        costs.push(usage.cost_usd);
        rpc.done();
        if let Some(next) = next {
            rpc.send(&json!({"type": "set_model", "model": next}).to_string());
            assert_eq!(rpc.response("set_model")["success"], true);
        }
    }
    rpc.send(r#"{"type":"compact"}"#);
    let (usage, cumulative) = rpc.next_usage();
    costs.push(usage.cost_usd);
    let total = cumulative.cost_usd;
    assert!((total - 165.0).abs() < 0.01, "{usage:?}");
    rpc.until_event(|e| matches!(e, Event::CompactDone { .. }));
    // Sonnet 5.5 $10, haiku 4.5 $5, opus 4.1 $75 per million output tokens
    // (the ten input tokens add a few ten-thousandths).
    assert_eq!(
        costs.iter().map(|c| c.round()).collect::<Vec<_>>(),
        [10.0, 5.0, 75.0, 75.0]
    );
    rpc.send(r#"{"type":"get_state"}"#);
    let state = rpc.response("get_state");
    assert_eq!(state["data"]["usage"]["cost_usd"], cumulative.cost_usd);
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_without_a_session_starts_one() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("fresh")]).await;
    let run = ok(w
        .against(&model, "anthropic", &["-p", "-c", "hello"])
        .output()
        .unwrap()
        .into());
    assert_eq!(run.stdout, "fresh\n");
    assert_eq!(session_files(&w).len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_puts_queued_prompts_back_in_the_editor() {
    let w = World::new();
    let model = MockModel::start([
        stalled("thinking about it"),
        anthropic::text("second answer"),
    ])
    .await;
    let tmux = Tmux::against(&w, "unqueue", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("first prompt");
    tmux.keys(&["Enter"]);
    tmux.wait_for("thinking about it");
    tmux.type_text("queued words");
    tmux.keys(&["Enter"]);
    tmux.keys(&["Escape"]);
    tmux.wait_for("aborted");
    // Enter sends what Esc put back.
    tmux.keys(&["Enter"]);
    tmux.wait_for("second answer");
    assert_eq!(
        texts(&model.requests()[1].body),
        [
            "first prompt",
            "thinking about it\n\n[interrupted by the user]",
            "queued words"
        ]
    );
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_the_provider_does_not_list_is_saved_only_once_it_answers() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("hi from the new model")]).await;
    let tmux = Tmux::against(&w, "unknown-model", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("/model claude-nonsense");
    tmux.keys(&["Enter"]);
    tmux.wait_for("saved once it answers");
    let config = w.home.join("config.json");
    assert!(!config.exists(), "saved before it answered");
    tmux.type_text("hello");
    tmux.keys(&["Enter"]);
    tmux.wait_for("saved to");
    assert_eq!(model.requests()[0].body["model"], "claude-nonsense");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(saved["model"], "claude-nonsense");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_key_the_typed_prompt_stays_and_the_error_is_whole() {
    let w = World::new();
    let tmux = Tmux::start(&w, "nokey-prompt", &["--no-session"], &[]);
    tmux.wait_for("no API key");
    tmux.type_text("hello there");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("› hello there");
    let flat = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    let typed = flat.find("› hello there").unwrap();
    // The whole message again, after the prompt, not a line cut mid-word.
    let after = &flat[typed..];
    for needle in [
        "ANTHROPIC_API_KEY",
        "zot auth login anthropic",
        "--provider ollama",
    ] {
        assert!(after.contains(needle), "{needle}: {screen}");
    }
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_cut_by_a_cancel_keeps_its_own_text_before_the_closing_note() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::tool_call("b1", "bash", r#"{"command":"echo started; sleep 30"}"#),
        anthropic::text("next answer"),
    ])
    .await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    prompt(&mut rpc, "run it");
    rpc.until_event(|e| matches!(e, Event::ToolProgress { text, .. } if text.contains("started")));
    rpc.send(r#"{"type":"abort"}"#);
    rpc.done();
    answered(&mut rpc, "what now");
    let sent = texts(&model.requests()[1].body);
    // The command's own output and end, then the note that closes the prompt.
    assert_eq!(sent.len(), 5, "{sent:?}");
    assert!(
        sent[2].contains("started") && sent[2].ends_with("[aborted]"),
        "{sent:?}"
    );
    assert_eq!(sent[3..], ["[interrupted by the user]", "what now"]);
    assert_eq!(rpc.close(), 0);
}

/// An extension that prepares the system prompt only from its second
/// request on: the first waits forever (after creating the file `ASKED`).
const SLOW_PREPARATION: &str = r#"
handshake(NAME)
emit({"type":"subscribe","intercept":["before_agent_start"]})
emit({"type":"ready"})
asked = 0
for msg in frames():
    if msg["type"] == "event_intercept":
        asked += 1
        if asked == 1:
            open(ASKED, "w").close()
            continue
        emit({"type":"event_intercept_response","id":msg["id"],"system_prompt":"prepared"})
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_while_the_system_prompt_is_prepared_keeps_the_prompt() {
    let w = World::new();
    let asked = w.scratch.join("asked");
    let script = format!("ASKED = {:?}\n{SLOW_PREPARATION}", asked.to_str().unwrap());
    let ext = w.py_ext("slow", &script);
    let model = MockModel::start([anthropic::text("prepared answer")]).await;
    let mut rpc = Rpc::start(
        &w,
        &model,
        "anthropic",
        &["--ext", ext.to_str().unwrap()],
        None,
    );
    prompt(&mut rpc, "first try");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !asked.exists() {
        assert!(std::time::Instant::now() < deadline, "never asked");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    rpc.send(r#"{"type":"abort"}"#);
    assert_eq!(
        rpc.next_stop_within(Duration::from_secs(10)),
        StopReason::Aborted
    );
    rpc.done();
    answered(&mut rpc, "second try");
    assert_eq!(
        texts(&model.requests()[0].body),
        ["first try", "[interrupted by the user]", "second try"]
    );
    assert_eq!(rpc.close(), 0);
}
