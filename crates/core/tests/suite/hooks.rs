//! The agent's hook points as a hooks implementation sees them.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;
use zot_core::CancellationToken;
use zot_core::agent::AgentConfig;
use zot_core::hooks::{HookEvent, Hooks};
use zot_core::message::Block;
use zot_core::session::Session;
use zot_core::tool::{BoxFuture, ToolOutput};
use zot_testkit::{MockModel, anthropic};

#[derive(Default)]
struct Recorder {
    log: Mutex<Vec<String>>,
    entries: Mutex<Vec<(String, Value)>>,
}

impl Recorder {
    fn push(&self, what: impl Into<String>) {
        self.log.lock().unwrap().push(what.into());
    }
}

impl Hooks for Recorder {
    fn event(&self, event: HookEvent) -> BoxFuture<'_, ()> {
        match event {
            HookEvent::SessionStart => self.push("session_start"),
            HookEvent::PromptStart => self.push("prompt_start"),
            HookEvent::PromptEnd { interrupted } => self.push(format!("prompt_end:{interrupted}")),
            _ => {}
        }
        Box::pin(async {})
    }
    fn tool_result<'a>(
        &'a self,
        _id: &'a str,
        name: &'a str,
        _args: &'a Value,
        _output: ToolOutput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            self.push(format!("tool_result:{name}"));
            ToolOutput::text("REPLACED OUTPUT")
        })
    }
    fn session_changed<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move { self.push(format!("session_changed:{session_id}")) })
    }
    fn take_entries(&self) -> Vec<(String, Value)> {
        std::mem::take(&mut *self.entries.lock().unwrap())
    }
}

#[tokio::test]
async fn prompts_tool_results_entries_and_session_switches() {
    let tmp = tempfile::tempdir().unwrap();
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"echo hi"}"#),
        anthropic::text("first"),
        anthropic::text("second"),
    ])
    .await;
    let hooks = Arc::new(Recorder::default());
    let mut agent = super::agent_against(
        &model,
        AgentConfig::new(tmp.path(), "claude-sonnet-4-5"),
        hooks.clone(),
    );
    let first = Session::create(tmp.path(), tmp.path(), "anthropic", "m").unwrap();
    let first_path = first.path().to_path_buf();
    agent.set_session(first);
    hooks
        .entries
        .lock()
        .unwrap()
        .push(("ext".into(), serde_json::json!({"kept": true})));

    let (tx, _rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    agent
        .prompt(vec![Block::Text { text: "go".into() }], &tx, &cancel)
        .await
        .unwrap();
    // The tool_result hook replaced what the model saw next.
    assert!(
        model.requests()[1]
            .body
            .to_string()
            .contains("REPLACED OUTPUT")
    );

    let second = Session::create(tmp.path(), tmp.path(), "anthropic", "m").unwrap();
    let second_id = second.id().to_owned();
    agent.switch_session(second).await;
    agent
        .prompt(
            vec![Block::Text {
                text: "again".into(),
            }],
            &tx,
            &cancel,
        )
        .await
        .unwrap();

    let log = hooks.log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "session_start",
            "prompt_start",
            "tool_result:bash",
            "prompt_end:false",
            &format!("session_changed:{second_id}"),
            "session_start",
            "prompt_start",
            "prompt_end:false",
        ]
    );
    // The entry landed in the first session's file, never in a request.
    let text = std::fs::read_to_string(first_path).unwrap();
    assert!(
        text.contains(r#""type":"extension","extension":"ext","data":{"kept":true}}"#),
        "{text}"
    );
    assert!(
        !model
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains("kept"))
    );
}

/// Hooks that always object to stopping and record the session sources.
#[derive(Default)]
struct Insistent {
    sources: Mutex<Vec<Option<&'static str>>>,
    stops: Mutex<Vec<bool>>,
}

impl Hooks for Insistent {
    fn prompt_submit<'a>(
        &'a self,
        start: Option<zot_core::hooks::SessionSource>,
        prompt: &'a str,
    ) -> BoxFuture<'a, zot_core::hooks::PromptGate> {
        self.sources.lock().unwrap().push(start.map(|s| s.as_str()));
        let gate = if prompt.contains("forbidden") {
            zot_core::hooks::PromptGate::Block {
                by: "hook".into(),
                reason: "not that".into(),
            }
        } else {
            zot_core::hooks::PromptGate::Allow {
                context: vec!["CONTEXT".into()],
            }
        };
        Box::pin(async move { gate })
    }
    fn before_stop(&self, again: bool) -> BoxFuture<'_, Option<String>> {
        self.stops.lock().unwrap().push(again);
        Box::pin(async { Some("keep going".to_owned()) })
    }
}

#[tokio::test]
async fn before_stop_sends_the_agent_on_at_most_three_times_and_prompt_gates_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let model = MockModel::start((0..8).map(|n| anthropic::text(&format!("answer {n}")))).await;
    let hooks = Arc::new(Insistent::default());
    let mut agent = super::agent_against(
        &model,
        AgentConfig::new(tmp.path(), "claude-sonnet-4-5"),
        hooks.clone(),
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let text = |t: &str| vec![Block::Text { text: t.into() }];
    agent.prompt(text("go"), &tx, &cancel).await.unwrap();
    assert_eq!(
        model.requests().len(),
        1 + zot_core::agent::MAX_STOP_CONTINUATIONS as usize
    );
    assert_eq!(*hooks.stops.lock().unwrap(), [false, true, true]);
    let first = &model.requests()[0].body["messages"][0]["content"];
    assert_eq!(first[0]["text"], "CONTEXT");
    assert_eq!(first[1]["text"], "go");

    while rx.try_recv().is_ok() {}
    agent.prompt(text("forbidden"), &tx, &cancel).await.unwrap();
    let mut seen = Vec::new();
    while let Ok(event) = rx.try_recv() {
        seen.push(event);
    }
    assert!(
        matches!(
            seen.as_slice(),
            [zot_core::AgentEvent::PromptBlocked { source, reason }, zot_core::AgentEvent::Done]
                if source == "hook" && reason == "not that"
        ),
        "{seen:?}"
    );
    assert_eq!(model.requests().len(), 4, "a blocked prompt is never sent");

    agent.clear().await.unwrap();
    agent
        .prompt(text("after clear"), &tx, &cancel)
        .await
        .unwrap();
    assert_eq!(
        *hooks.sources.lock().unwrap(),
        [Some("startup"), None, Some("clear")]
    );
}
