//! What the model gets of tool results through the agent (capped, whatever
//! the tool), where full outputs are kept and for how long, and how tool
//! progress reaches the front ends (bounded).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use zot_core::agent::{Agent, AgentConfig, local_session_id};
use zot_core::event::AgentEvent;
use zot_core::hooks::{Hooks, ToolGate};
use zot_core::message::Block;
use zot_core::session::Session;
use zot_core::tool::{BoxFuture, PROGRESS_BUFFER_BYTES, ToolOutput, ToolSpec};
use zot_core::tools::output::{self, MAX_TOOL_RESULT_BYTES, TOOL_OUTPUT_MAX_AGE};
use zot_core::{CancellationToken, NoHooks};
use zot_testkit::{MockModel, anthropic};

/// An extension-like tool `big` whose result is `text`.
struct BigTool {
    text: String,
}

impl Hooks for BigTool {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "big".into(),
            description: "returns a lot".into(),
            schema: json!({"type": "object"}).into(),
            read_only: true,
        }]
    }
    fn call_tool<'a>(&'a self, _name: &'a str, _args: Value) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { ToolOutput::text(self.text.clone()) })
    }
}

fn agent(model: &MockModel, cwd: &Path, root: &Path, hooks: Arc<dyn Hooks>) -> Agent {
    let mut config = AgentConfig::new(cwd, "claude-sonnet-4-5");
    config.tool_output = Some(root.to_path_buf());
    super::agent_against(model, config, hooks)
}

/// Runs one prompt; returns every event, read only after the prompt ended
/// (a reader that is always behind).
async fn prompt(agent: &mut Agent, text: &str) -> Vec<AgentEvent> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    agent
        .prompt(
            vec![Block::Text { text: text.into() }],
            &tx,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    drop(tx);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    events
}

/// The text blocks of the tool result the model got in request `n`.
fn result_sent(model: &MockModel, n: usize) -> Vec<String> {
    let body = &model.requests()[n].body;
    let messages = body["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .expect("a tool result");
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The path in a `[zot: N bytes omitted; full output: PATH]` note.
fn note_path(note: &str) -> PathBuf {
    let path = note
        .split_once("; full output: ")
        .and_then(|(_, rest)| rest.strip_suffix(']'))
        .unwrap_or_else(|| panic!("not a full-output note: {note}"));
    PathBuf::from(path)
}

#[tokio::test]
async fn an_extension_tool_result_is_capped_and_saved_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tool-output");
    let big: String = (0..300_000).map(|i| format!("row {i}\n")).collect();
    assert!(big.len() > 3_000_000);
    let model = MockModel::start([
        anthropic::tool_call("t1", "big", "{}"),
        anthropic::text("done"),
    ])
    .await;
    let hooks = Arc::new(BigTool { text: big.clone() });
    let mut agent = agent(&model, tmp.path(), &root, hooks);
    let events = prompt(&mut agent, "go").await;

    let sent = result_sent(&model, 1);
    assert_eq!(sent.len(), 2, "the text, then the note");
    assert!(sent[0].len() <= MAX_TOOL_RESULT_BYTES);
    assert!(big.starts_with(&sent[0]) && sent[0].ends_with('\n'));
    let path = note_path(&sent[1]);
    assert_eq!(
        sent[1],
        format!(
            "[zot: {} bytes omitted; full output: {}]",
            big.len() - sent[0].len(),
            path.display()
        )
    );
    assert!(std::fs::read_to_string(&path).unwrap() == big);
    assert_eq!(
        path.parent().unwrap(),
        output::session_dir(&root, &local_session_id())
    );
    // The front ends see what the model saw.
    let shown = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        shown,
        sent.iter()
            .map(|t| Block::Text { text: t.clone() })
            .collect::<Vec<_>>()
    );

    // Without a session file the outputs last as long as the run.
    drop(agent);
    assert!(!path.exists());
    assert!(!output::session_dir(&root, &local_session_id()).exists());
}

/// Blocks every tool call with a very long reason.
struct LongBlock;

impl Hooks for LongBlock {
    fn tool_call<'a>(
        &'a self,
        _id: &'a str,
        _name: &'a str,
        _args: &'a Value,
    ) -> BoxFuture<'a, ToolGate> {
        Box::pin(async {
            ToolGate::Block {
                by: "ext".into(),
                reason: "no! ".repeat(100_000),
            }
        })
    }
}

#[tokio::test]
async fn a_long_block_reason_is_capped_too() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tool-output");
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"true"}"#),
        anthropic::text("done"),
    ])
    .await;
    let mut agent = agent(&model, tmp.path(), &root, Arc::new(LongBlock));
    prompt(&mut agent, "go").await;
    let sent = result_sent(&model, 1);
    assert!(sent[0].len() <= MAX_TOOL_RESULT_BYTES);
    assert!(sent[1].starts_with("[zot: "), "{}", sent[1]);
    let saved = std::fs::read_to_string(note_path(&sent[1])).unwrap();
    assert_eq!(saved.len(), 400_000);
}

#[tokio::test]
async fn a_result_within_the_cap_is_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tool-output");
    let text = "x".repeat(MAX_TOOL_RESULT_BYTES);
    let model = MockModel::start([
        anthropic::tool_call("t1", "big", "{}"),
        anthropic::text("done"),
    ])
    .await;
    let mut agent = agent(
        &model,
        tmp.path(),
        &root,
        Arc::new(BigTool { text: text.clone() }),
    );
    prompt(&mut agent, "go").await;
    assert_eq!(result_sent(&model, 1), [text]);
    assert!(!root.exists(), "nothing saved");
}

#[tokio::test]
async fn a_session_keeps_its_full_outputs_in_its_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let root = output::root(&home);
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"seq 1 30000"}"#),
        anthropic::text("done"),
    ])
    .await;
    let mut agent = agent(&model, tmp.path(), &root, Arc::new(NoHooks));
    let session = Session::create(&home, tmp.path(), "anthropic", "m").unwrap();
    let id = session.id().to_owned();
    agent.set_session(session);
    prompt(&mut agent, "go").await;

    let sent = result_sent(&model, 1);
    assert_eq!(sent.len(), 1, "bash cuts its own output: {sent:?}");
    let note = sent[0].lines().last().unwrap();
    let path = note_path(note);
    assert_eq!(path.parent().unwrap(), root.join(&id));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap().lines().count(),
        30_000
    );
    drop(agent);
    assert!(path.exists(), "a session's outputs outlive the run");
}

/// A pid no process has now (one that ran and was reaped).
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn file_aged(path: &Path, age: Duration) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::fs::File::create(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

#[tokio::test]
async fn start_up_prunes_old_outputs_and_those_of_dead_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tool-output");
    let day = Duration::from_secs(24 * 60 * 60);
    let old = root.join("old-session/bash-1.log");
    let mixed_old = root.join("mixed/bash-2.log");
    let mixed_new = root.join("mixed/bash-3.log");
    let dead = root.join(format!("local-{}/bash-4.log", dead_pid()));
    let live = root.join(format!("{}/bash-5.log", local_session_id()));
    file_aged(&old, TOOL_OUTPUT_MAX_AGE + day);
    file_aged(&mixed_old, TOOL_OUTPUT_MAX_AGE + day);
    file_aged(&mixed_new, TOOL_OUTPUT_MAX_AGE - day);
    file_aged(&dead, Duration::ZERO);
    file_aged(&live, Duration::ZERO);

    let model = MockModel::start([]).await;
    let agent = agent(&model, tmp.path(), &root, Arc::new(NoHooks));
    assert!(
        !old.parent().unwrap().exists(),
        "an emptied folder goes too"
    );
    assert!(!mixed_old.exists());
    assert!(mixed_new.exists());
    assert!(!dead.parent().unwrap().exists());
    assert!(live.exists(), "this process's own folder is alive");
    drop(agent);
}

#[tokio::test]
async fn progress_through_the_agent_is_coalesced_and_accounted_for() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tool-output");
    // 20 MB of output; the events are read only after the prompt ended.
    let command = "yes 0123456789012345678901234567890123456789abcdefghi | head -c 20000000";
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", &json!({ "command": command }).to_string()),
        anthropic::text("done"),
    ])
    .await;
    let mut agent = agent(&model, tmp.path(), &root, Arc::new(NoHooks));
    let events = prompt(&mut agent, "go").await;
    let progress: Vec<(&str, u64)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolProgress {
                id,
                text,
                dropped_bytes,
            } => {
                assert_eq!(id, "t1");
                Some((text.as_str(), *dropped_bytes))
            }
            _ => None,
        })
        .collect();
    assert!(!progress.is_empty());
    for (text, _) in &progress {
        assert!(text.len() <= PROGRESS_BUFFER_BYTES, "{}", text.len());
    }
    let accounted: u64 = progress
        .iter()
        .map(|(text, dropped)| text.len() as u64 + dropped)
        .sum();
    assert_eq!(accounted, 20_000_000, "every byte is shown or counted");
    assert!(progress.last().unwrap().0.ends_with("abcdefghi\n"));
}

#[test]
fn dropped_bytes_are_on_the_wire_only_when_some_were_dropped() {
    let line = |dropped_bytes| {
        serde_json::to_value(
            AgentEvent::ToolProgress {
                id: "t1".into(),
                text: "out".into(),
                dropped_bytes,
            }
            .to_wire(),
        )
        .unwrap()
    };
    assert_eq!(
        line(0),
        json!({"type": "tool_progress", "id": "t1", "text": "out"})
    );
    assert_eq!(
        line(42),
        json!({"type": "tool_progress", "id": "t1", "text": "out", "dropped_bytes": 42})
    );
}

#[test]
fn a_saved_extension_output_over_the_cap_keeps_its_first_and_last_32_mib() {
    let root = tempfile::tempdir().unwrap();
    let max = output::MAX_SAVED_OUTPUT_BYTES as usize;
    let text = format!("HEAD{}TAIL", "z".repeat(max));
    let capped = output::cap(ToolOutput::text(text), "big", Some(&root.path().join("s")));
    let note = match capped.content.last() {
        Some(Block::Text { text }) => text.clone(),
        other => panic!("{other:?}"),
    };
    let path = note
        .split_once("; full output: ")
        .and_then(|(_, rest)| rest.strip_suffix(']'))
        .unwrap();
    let saved = std::fs::read(path).unwrap();
    let cut = output::cut_note(8);
    assert_eq!(saved.len(), max + cut.len());
    assert!(saved.starts_with(b"HEADzzz") && saved.ends_with(b"zzzTAIL"));
    assert_eq!(&saved[max / 2..max / 2 + cut.len()], cut.as_bytes());
}

#[test]
fn saving_an_output_tightens_the_tool_output_root_but_no_other_parent() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let big = || ToolOutput::text("x".repeat(output::MAX_TOOL_RESULT_BYTES * 2));
    let base = tempfile::tempdir().unwrap();

    // A session folder straight under an ordinary folder (as under /tmp):
    // the folder keeps its mode, sticky bit included.
    let shared = base.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    output::cap(big(), "big", Some(&shared.join("s1")));
    assert_eq!(mode(&shared), 0o1777);
    assert_eq!(mode(&shared.join("s1")), 0o700);

    // Under the tool-output root, the root is made private too.
    let root = base.path().join(output::TOOL_OUTPUT_DIR);
    std::fs::create_dir(&root).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    output::cap(big(), "big", Some(&root.join("s2")));
    assert_eq!(mode(&root), 0o700);
    assert_eq!(mode(&root.join("s2")), 0o700);
}
