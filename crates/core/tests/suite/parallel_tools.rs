//! Tool calls of one assistant message: read-only ones run together once
//! each is gated, a call that may write runs alone, results keep call order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use zot_core::CancellationToken;
use zot_core::agent::{Agent, AgentConfig, MAX_PARALLEL_TOOLS};
use zot_core::event::AgentEvent;
use zot_core::hooks::{Hooks, ToolGate};
use zot_core::message::Block;
use zot_core::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};
use zot_testkit::{MockModel, anthropic};

type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, what: String) {
    log.lock().unwrap().push(what);
}

/// Sleeps `args.ms` (or until cancelled when `args.ms` is absent), logging
/// `start:<tag>` and `end:<tag>` and how many of its calls run at once.
struct Slow {
    name: &'static str,
    read_only: bool,
    log: Log,
    running: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Tool for Slow {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: "Waits.".into(),
            schema: json!({"type": "object"}).into(),
            read_only: self.read_only,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let tag = args["tag"].as_str().unwrap_or_default().to_owned();
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            push(&self.log, format!("start:{tag}"));
            let output = match args["ms"].as_u64() {
                Some(ms) => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    ToolOutput::text(format!("{} {tag}", self.name))
                }
                None => {
                    ctx.cancel.cancelled().await;
                    ToolOutput::error(format!("{tag} aborted"))
                }
            };
            push(&self.log, format!("end:{tag}"));
            self.running.fetch_sub(1, Ordering::SeqCst);
            output
        })
    }
}

/// Logs each tool_call intercept as `gate:<tag>`.
struct Gates(Log);

impl Hooks for Gates {
    fn tool_call<'a>(
        &'a self,
        _id: &'a str,
        _name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, ToolGate> {
        push(
            &self.0,
            format!("gate:{}", args["tag"].as_str().unwrap_or_default()),
        );
        Box::pin(async { ToolGate::Allow { args: None } })
    }
}

struct Setup {
    agent: Agent,
    log: Log,
    most: Arc<AtomicUsize>,
    running: Arc<AtomicUsize>,
    _tmp: tempfile::TempDir,
}

fn setup(model: &MockModel) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let log = Log::default();
    let mut agent = super::agent_against(
        model,
        AgentConfig::new(tmp.path(), "claude-sonnet-4-5"),
        Arc::new(Gates(log.clone())),
    );
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    for (name, read_only) in [("look", true), ("glance", true), ("change", false)] {
        agent.add_tool(Arc::new(Slow {
            name,
            read_only,
            log: log.clone(),
            running: running.clone(),
            most: most.clone(),
        }));
    }
    Setup {
        agent,
        log,
        most,
        running,
        _tmp: tmp,
    }
}

fn position(log: &[String], entry: &str) -> usize {
    log.iter()
        .position(|e| e == entry)
        .unwrap_or_else(|| panic!("{entry} missing from {log:?}"))
}

/// The `tool_result` blocks' call ids and texts in the request at `index`.
fn results(model: &MockModel, index: usize) -> Vec<(String, String)> {
    let body = &model.requests()[index].body;
    let last = body["messages"].as_array().unwrap().last().unwrap();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks[0]["text"].as_str().unwrap().to_owned(),
                other => other.to_string(),
            };
            (b["tool_use_id"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

#[tokio::test]
async fn read_only_calls_overlap_a_write_runs_alone_and_results_keep_call_order() {
    let model = MockModel::start([
        anthropic::Script::new()
            .tool_call("t1", "look", r#"{"tag":"a","ms":300}"#)
            .tool_call("t2", "glance", r#"{"tag":"b","ms":50}"#)
            .tool_call("t3", "change", r#"{"tag":"w","ms":50}"#)
            .tool_call("t4", "look", r#"{"tag":"c","ms":50}"#)
            .tool_call("t5", "glance", r#"{"tag":"d","ms":10}"#)
            .build(),
        anthropic::text("done"),
    ])
    .await;
    let Setup { mut agent, log, .. } = setup(&model);
    let (tx, mut rx) = mpsc::unbounded_channel();
    agent
        .prompt(
            vec![Block::Text { text: "go".into() }],
            &tx,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let log = log.lock().unwrap().clone();
    let at = |entry: &str| position(&log, entry);

    // Both read-only calls are gated, in order, before either starts; then they overlap.
    assert!(at("gate:a") < at("gate:b"), "{log:?}");
    assert!(at("gate:b") < at("start:a"), "{log:?}");
    assert!(at("start:b") < at("end:a"), "{log:?}");
    assert!(at("start:a") < at("end:b"), "{log:?}");
    // The write is gated and runs after both end, and alone.
    for before in ["end:a", "end:b"] {
        assert!(at(before) < at("gate:w"), "{log:?}");
    }
    assert!(at("start:w") < at("end:w"), "{log:?}");
    // The read-only calls after it wait for it to end, then overlap again.
    assert!(at("end:w") < at("gate:c"), "{log:?}");
    assert!(at("gate:c") < at("gate:d"), "{log:?}");
    assert!(at("gate:d") < at("start:c"), "{log:?}");
    assert!(at("start:d") < at("end:c"), "{log:?}");
    assert!(at("start:c") < at("end:d"), "{log:?}");

    // The model gets the results in call order, though b ended before a.
    assert_eq!(
        results(&model, 1),
        [
            ("t1".to_owned(), "look a".to_owned()),
            ("t2".to_owned(), "glance b".to_owned()),
            ("t3".to_owned(), "change w".to_owned()),
            ("t4".to_owned(), "look c".to_owned()),
            ("t5".to_owned(), "glance d".to_owned()),
        ]
    );

    // Per call id: its tool_call event, then its result.
    drop(tx);
    let mut order = Vec::new();
    while let Some(event) = rx.recv().await {
        match event {
            AgentEvent::ToolCall { id, .. } => order.push(format!("call:{id}")),
            AgentEvent::ToolResult { id, .. } => order.push(format!("result:{id}")),
            _ => {}
        }
    }
    let at = |entry: &str| position(&order, entry);
    for id in ["t1", "t2", "t3", "t4", "t5"] {
        assert!(
            at(&format!("call:{id}")) < at(&format!("result:{id}")),
            "{order:?}"
        );
    }
    assert!(at("result:t2") < at("call:t3"), "{order:?}");
    assert!(at("result:t3") < at("call:t4"), "{order:?}");
}

#[tokio::test]
async fn at_most_the_limit_of_read_only_calls_run_at_once() {
    let count = MAX_PARALLEL_TOOLS + 3;
    let mut script = anthropic::Script::new();
    for i in 0..count {
        script = script.tool_call(
            &format!("t{i}"),
            "look",
            &format!(r#"{{"tag":"{i}","ms":100}}"#),
        );
    }
    let model = MockModel::start([script.build(), anthropic::text("done")]).await;
    let Setup {
        mut agent, most, ..
    } = setup(&model);
    let (tx, _rx) = mpsc::unbounded_channel();
    agent
        .prompt(
            vec![Block::Text { text: "go".into() }],
            &tx,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(most.load(Ordering::SeqCst), MAX_PARALLEL_TOOLS);
    let ids: Vec<String> = results(&model, 1).into_iter().map(|(id, _)| id).collect();
    let expected: Vec<String> = (0..count).map(|i| format!("t{i}")).collect();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn cancelling_aborts_every_running_read_only_call() {
    let model = MockModel::start([anthropic::Script::new()
        .tool_call("t1", "look", r#"{"tag":"a"}"#)
        .tool_call("t2", "glance", r#"{"tag":"b"}"#)
        .tool_call("t3", "change", r#"{"tag":"w","ms":10}"#)
        .build()])
    .await;
    let Setup {
        mut agent,
        running,
        log,
        ..
    } = setup(&model);
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        async move {
            // Both calls wait for the cancel: they only end together if both run.
            while running.load(Ordering::SeqCst) < 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            cancel.cancel();
        }
    };
    let (tx, _rx) = mpsc::unbounded_channel();
    let prompt = agent.prompt(vec![Block::Text { text: "go".into() }], &tx, &cancel);
    let (result, ()) = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(prompt, canceller)
    })
    .await
    .expect("the calls ran one after the other");
    result.unwrap();
    let log = log.lock().unwrap().clone();
    for entry in ["end:a", "end:b"] {
        position(&log, entry);
    }
    // The write after them never started.
    assert!(!log.iter().any(|e| e.ends_with(":w")), "{log:?}");
    // The prompt is closed after the results, for the next one to follow.
    let [.., results, closing] = agent.messages() else {
        panic!("too few messages")
    };
    assert_eq!(closing.text(), zot_core::agent::INTERRUPTED);
    let texts: Vec<String> = results
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult {
                call_id, content, ..
            } => match &content[0] {
                Block::Text { text } => Some(format!("{call_id}:{text}")),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        texts,
        ["t1:a aborted", "t2:b aborted", "t3:aborted before it ran"]
    );
}
