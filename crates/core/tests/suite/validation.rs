//! Tool arguments are checked against the tool's JSON Schema before it
//! runs. The agent keeps each compiled schema for the next call; an
//! extension that registers the tool again with another schema is checked
//! against the new one.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use zot_core::CancellationToken;
use zot_core::agent::{Agent, AgentConfig};
use zot_core::hooks::Hooks;
use zot_core::message::Block;
use zot_core::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};
use zot_testkit::{MockModel, anthropic};

/// An extension-like tool `pick` whose schema the test changes, counting its runs.
struct Pick {
    schema: Mutex<Value>,
    runs: Mutex<usize>,
}

impl Pick {
    /// `pick`, its schema requiring the integer `field`, not run yet.
    fn requiring(field: &str) -> Arc<Self> {
        Arc::new(Self {
            schema: Mutex::new(requiring(field)),
            runs: Mutex::new(0),
        })
    }
}

impl Hooks for Pick {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "pick".into(),
            description: "Picks.".into(),
            schema: self.schema.lock().unwrap().clone().into(),
            read_only: true,
        }]
    }
    fn call_tool<'a>(&'a self, _name: &'a str, _args: Value) -> BoxFuture<'a, ToolOutput> {
        *self.runs.lock().unwrap() += 1;
        Box::pin(async { ToolOutput::text("picked") })
    }
}

fn requiring(field: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": "integer"}}, "required": [field]})
}

/// The text of the last tool result in request `n`.
fn result_sent(model: &MockModel, n: usize) -> String {
    let body = &model.requests()[n].body;
    let messages = body["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .rfind(|b| b["type"] == "tool_result")
        .expect("a tool result");
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

async fn prompt(agent: &mut Agent) {
    let (tx, _rx) = mpsc::unbounded_channel();
    let go = vec![Block::Text { text: "go".into() }];
    agent
        .prompt(go, &tx, &CancellationToken::new())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_changed_schema_is_checked_instead_of_the_compiled_one() {
    let tmp = tempfile::tempdir().unwrap();
    let model = MockModel::start([
        anthropic::tool_call("t1", "pick", r#"{"x":1}"#),
        anthropic::tool_call("t2", "pick", r#"{"x":"one"}"#),
        anthropic::tool_call("t3", "pick", r#"{"x":2}"#),
        anthropic::text("first done"),
        anthropic::tool_call("t4", "pick", r#"{"x":3}"#),
        anthropic::tool_call("t5", "pick", r#"{"y":3}"#),
        anthropic::text("second done"),
    ])
    .await;
    let hooks = Pick::requiring("x");
    let config = AgentConfig::new(tmp.path(), "claude-sonnet-4-5");
    let mut agent = super::agent_against(&model, config, hooks.clone());

    prompt(&mut agent).await;
    assert_eq!(result_sent(&model, 1), "picked");
    let wrong_type = result_sent(&model, 2);
    assert!(
        wrong_type.starts_with("invalid arguments for pick"),
        "{wrong_type}"
    );
    assert_eq!(result_sent(&model, 3), "picked");
    assert_eq!(*hooks.runs.lock().unwrap(), 2);

    // The extension registers `pick` again, now requiring `y`.
    *hooks.schema.lock().unwrap() = requiring("y");
    prompt(&mut agent).await;
    let old_shape = result_sent(&model, 5);
    assert!(
        old_shape.starts_with("invalid arguments for pick") && old_shape.contains("\"y\""),
        "{old_shape}"
    );
    assert_eq!(result_sent(&model, 6), "picked");
    assert_eq!(*hooks.runs.lock().unwrap(), 3);
}

/// A tool added beside the built-ins, requiring an integer `n`; `own`
/// says whether it checks its arguments itself.
struct Counter {
    name: &'static str,
    own: bool,
}

impl Tool for Counter {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: "Counts.".into(),
            schema: requiring("n").into(),
            read_only: true,
        }
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            match args.get("n").and_then(Value::as_i64) {
                Some(n) => ToolOutput::text(format!("counted {n}")),
                None => {
                    ToolOutput::error(format!("{}: own check: n must be an integer", self.name))
                }
            }
        })
    }

    fn checks_own_arguments(&self) -> bool {
        self.own
    }
}

#[tokio::test]
async fn a_tool_that_checks_its_own_arguments_is_not_run_through_the_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let model = MockModel::start([
        anthropic::tool_call("t1", "own", r#"{"n":"x"}"#),
        anthropic::tool_call("t2", "plain", r#"{"n":"x"}"#),
        anthropic::tool_call("t3", "own", r#"{"n":4}"#),
        anthropic::text("done"),
    ])
    .await;
    let hooks = Pick::requiring("x");
    let config = AgentConfig::new(tmp.path(), "claude-sonnet-4-5");
    let mut agent = super::agent_against(&model, config, hooks);
    agent.add_tool(Arc::new(Counter {
        name: "own",
        own: true,
    }));
    agent.add_tool(Arc::new(Counter {
        name: "plain",
        own: false,
    }));

    prompt(&mut agent).await;
    // The tool's own check answered, not the schema's.
    assert_eq!(
        result_sent(&model, 1),
        "own: own check: n must be an integer"
    );
    // Without it, the schema refuses the call before the tool runs.
    let refused = result_sent(&model, 2);
    assert!(
        refused.starts_with("invalid arguments for plain"),
        "{refused}"
    );
    assert_eq!(result_sent(&model, 3), "counted 4");
}

#[tokio::test]
async fn built_in_tools_answer_bad_arguments_themselves() {
    let tmp = tempfile::tempdir().unwrap();
    let model = MockModel::start([
        anthropic::tool_call("t1", "read", r#"{"path":3}"#),
        anthropic::tool_call("t2", "read", r#"{"path":"a","offset":0}"#),
        anthropic::tool_call("t3", "bash", r#"{}"#),
        anthropic::tool_call("t4", "edit", r#"{"path":"a","edits":[]}"#),
        anthropic::tool_call("t5", "write", r#"{"path":"a"}"#),
        anthropic::text("done"),
    ])
    .await;
    let hooks = Pick::requiring("x");
    let config = AgentConfig::new(tmp.path(), "claude-sonnet-4-5");
    let mut agent = super::agent_against(&model, config, hooks);
    prompt(&mut agent).await;
    assert_eq!(
        result_sent(&model, 1),
        "argument `path` must be a string, got a number"
    );
    assert_eq!(
        result_sent(&model, 2),
        "argument `offset` must be a positive integer, got 0"
    );
    assert_eq!(
        result_sent(&model, 3),
        "missing required argument `command`"
    );
    assert_eq!(result_sent(&model, 4), "argument `edits` must not be empty");
    assert_eq!(
        result_sent(&model, 5),
        "missing required argument `content`"
    );
    assert!(!tmp.path().join("a").exists());
}
