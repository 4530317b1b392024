//! `zot rpc`: commands, events, abort, extension commands, auth.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use zot_testkit::{MockModel, Response, anthropic, openai};

use super::support::{
    Block, EVENT_SCHEMA, Event, EventLine, RPC_REQUEST_SCHEMA, StopReason, Usage, World,
    check_schema, record_input, text, typed,
};

/// An RPC client: every line zot prints is checked against the published
/// event schema, every well-formed request against the request schema.
pub(super) struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
    /// Lines that broke the event schema.
    invalid: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Rpc {
    pub(super) fn start(
        w: &World,
        model: &MockModel,
        provider: &str,
        extra: &[&str],
        token: Option<&str>,
    ) -> Self {
        let mut cmd = w.against(model, provider, &["rpc"]);
        cmd.args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(token) = token {
            cmd.env("ZOTCORE_RPC_TOKEN", token);
        }
        Self::from_command(cmd)
    }

    /// Starts `cmd` (stdin and stdout piped) as the server.
    pub(super) fn from_command(mut cmd: std::process::Command) -> Self {
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        let invalid: std::sync::Arc<std::sync::Mutex<Vec<String>>> = std::sync::Arc::default();
        let seen = std::sync::Arc::clone(&invalid);
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let value: Value = match serde_json::from_str(&line) {
                    Ok(value) => value,
                    Err(e) => {
                        seen.lock().unwrap().push(format!("{e}: {line}"));
                        continue;
                    }
                };
                if let Err(e) = check_schema(EVENT_SCHEMA, &value) {
                    seen.lock().unwrap().push(e);
                }
                let _ = tx.send(value);
            }
        });
        Self {
            child,
            stdin,
            lines,
            invalid,
        }
    }

    pub(super) fn send(&mut self, line: &str) {
        if let Ok(request) = serde_json::from_str::<Value>(line)
            && request
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| zot_extensions::zot_protocol::rpc::Request::COMMANDS.contains(&t))
        {
            check_schema(RPC_REQUEST_SCHEMA, &request).unwrap();
        }
        self.send_raw(line);
    }

    /// Sends bytes and a newline as they are (invalid UTF-8, huge lines).
    fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a line as is (for malformed input).
    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next output line matching `pred`, skipping others, within 10 s.
    pub(super) fn until(&self, pred: impl FnMut(&Value) -> bool) -> Value {
        self.until_within(Duration::from_secs(10), pred)
    }

    /// The next output line matching `pred`, skipping others (each seen by
    /// `pred`), within `limit`.
    pub(super) fn until_within(
        &self,
        limit: Duration,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            self.assert_valid();
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(_) => continue,
                Err(e) => panic!("no matching rpc output: {e}"),
            }
        }
    }

    /// The next output line, read as the protocol's typed [`Event`], that
    /// `pred` accepts, skipping others, within 10 s.
    pub(super) fn until_event(&self, pred: impl FnMut(&Event) -> bool) -> Event {
        self.until_event_within(Duration::from_secs(10), pred)
    }

    /// [`Rpc::until_event`] within `limit`.
    pub(super) fn until_event_within(
        &self,
        limit: Duration,
        mut pred: impl FnMut(&Event) -> bool,
    ) -> Event {
        let mut found = None;
        self.until_within(limit, |v| {
            let event = typed(v);
            let hit = pred(&event);
            if hit {
                found = Some(event);
            }
            hit
        });
        found.unwrap_or_else(|| unreachable!("until returns only once pred accepted a line"))
    }

    /// The next output line, read as the protocol's [`EventLine`] (the
    /// event and the `task` call a subagent's belongs to), that `pred`
    /// accepts, skipping others, within 10 s.
    pub(super) fn until_line(&self, mut pred: impl FnMut(&EventLine) -> bool) -> EventLine {
        let mut found = None;
        self.until(|v| {
            let line: EventLine =
                serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v}"));
            let hit = pred(&line);
            if hit {
                found = Some(line);
            }
            hit
        });
        found.unwrap_or_else(|| unreachable!("until returns only once pred accepted a line"))
    }

    pub(super) fn response(&self, command: &str) -> Value {
        self.until(|v| matches!(typed(v), Event::Response(r) if r.command == command))
    }

    /// Why the next turn ends (its `turn_end`), waiting up to `limit`.
    pub(super) fn next_stop_within(&self, limit: Duration) -> StopReason {
        self.next_turn_end_within(limit).0
    }

    /// The next `turn_end`: why the turn ended and the error it gave.
    pub(super) fn next_turn_end_within(&self, limit: Duration) -> (StopReason, Option<String>) {
        match self.until_event_within(limit, |e| matches!(e, Event::TurnEnd { .. })) {
            Event::TurnEnd { stop, error } => (stop, error),
            other => unreachable!("until_event_within returned {other:?}"),
        }
    }

    /// The content of the next assistant message.
    pub(super) fn next_answer(&self) -> Vec<Block> {
        match self.until_event(|e| matches!(e, Event::AssistantMessage { .. })) {
            Event::AssistantMessage { content, .. } => content,
            other => unreachable!("until_event returned {other:?}"),
        }
    }

    /// The next model call's usage and the session's so far.
    pub(super) fn next_usage(&self) -> (Usage, Usage) {
        match self.until_event(|e| matches!(e, Event::Usage { .. })) {
            Event::Usage { usage, cumulative } => (usage, cumulative),
            other => unreachable!("until_event returned {other:?}"),
        }
    }

    /// Waits for the `done` that ends the running prompt.
    pub(super) fn done(&self) {
        self.until_event(|e| *e == Event::Done);
    }

    fn assert_valid(&self) {
        let invalid = self.invalid.lock().unwrap();
        assert!(invalid.is_empty(), "{}", invalid.join("\n"));
    }

    pub(super) fn close(mut self) -> i32 {
        drop(self.stdin.take());
        // zot exits at EOF once its work is done; a deadline turns a hang into a failure.
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "zot rpc did not exit within 20 s of stdin closing"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let code = status.code().unwrap_or(-1);
        // The reader sees the end of the stream once the process is gone.
        while self.lines.recv_timeout(Duration::from_secs(5)).is_ok() {}
        self.assert_valid();
        code
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_schema_check_refuses_what_the_protocol_does_not_have() {
    assert!(check_schema(EVENT_SCHEMA, &json!({"type": "done"})).is_ok());
    assert!(check_schema(EVENT_SCHEMA, &json!({"type": "teleported"})).is_err());
    assert!(check_schema(EVENT_SCHEMA, &json!({"type": "turn_end", "stop": "bored"})).is_err());
    assert!(check_schema(RPC_REQUEST_SCHEMA, &json!({"type": "set_model"})).is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_events_and_malformed_lines() {
    let w = World::new();
    let model = MockModel::start([openai::text("hello from rpc")]).await;
    let mut rpc = Rpc::start(&w, &model, "openai", &[], None);
    rpc.send(r#"{"id":1,"type":"ping"}"#);
    assert_eq!(
        rpc.response("ping"),
        json!({"type":"response","command":"ping","success":true,"data":{"pong":true},"id":1})
    );
    rpc.send("{not json");
    let bad = rpc.response("");
    assert_eq!(bad["success"], false);
    assert!(
        bad["error"].as_str().unwrap().starts_with("malformed json"),
        "{bad}"
    );
    rpc.send(r#"{"type":"teleport"}"#);
    assert_eq!(rpc.response("teleport")["error"], "unknown command");
    rpc.send(r#"{"type":"hello"}"#);
    assert_eq!(rpc.response("hello")["data"]["model"], "gpt-6.2-sol");

    rpc.send(r#"{"id":"p","type":"prompt","message":"hi"}"#);
    assert_eq!(rpc.response("prompt")["data"], json!({"started": true}));
    assert_eq!(text(&rpc.next_answer()[0]), "hello from rpc");
    rpc.done();
    rpc.send(r#"{"type":"get_state"}"#);
    let state = rpc.response("get_state")["data"].clone();
    assert_eq!(state["message_count"], 2);
    assert_eq!(state["busy"], false);
    assert_eq!(state["provider"], "openai");
    rpc.send(r#"{"type":"get_messages"}"#);
    assert_eq!(
        rpc.response("get_messages")["data"]["messages"][1]["content"][0]["text"],
        "hello from rpc"
    );
    rpc.send(r#"{"type":"get_models"}"#);
    let listed = rpc.response("get_models")["data"]["models"].clone();
    let gpt = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "gpt-4.1")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(gpt["provider"], "openai");
    assert_eq!(
        gpt["price"],
        json!({"input": 2.0, "output": 8.0, "cache_write": 2.0, "cache_read": 0.5})
    );
    // A model outside the table (a proxy's, a newer one) is taken, with a note.
    rpc.send(r#"{"type":"set_model","model":"served-model-x"}"#);
    let set = rpc.response("set_model");
    assert_eq!(set["success"], true, "{set}");
    assert_eq!(set["data"]["known"], false, "{set}");
    let note = set["data"]["note"].as_str().unwrap();
    assert!(note.contains("not in zot's openai model table"), "{note}");
    rpc.send(r#"{"type":"get_state"}"#);
    assert_eq!(rpc.response("get_state")["data"]["model"], "served-model-x");
    rpc.send(r#"{"type":"set_model","model":" "}"#);
    let refused = rpc.response("set_model");
    assert_eq!(
        refused["error"], "set_model needs a model id, not an empty \"model\"",
        "{refused}"
    );
    rpc.send(r#"{"type":"set_model","model":"gpt-4.1-mini"}"#);
    let set = rpc.response("set_model");
    assert_eq!(
        set["data"],
        json!({"model": "gpt-4.1-mini", "provider": "openai", "known": true}),
        "{set}"
    );
    rpc.send(r#"{"type":"clear"}"#);
    rpc.response("clear");
    rpc.send(r#"{"type":"get_state"}"#);
    let state = rpc.response("get_state")["data"].clone();
    assert_eq!(state["message_count"], 0);
    assert_eq!(state["model"], "gpt-4.1-mini");
    assert_eq!(rpc.close(), 0);
}

/// An answer that sends "partial" and then neither ends nor closes: the
/// prompt it answers holds the agent until aborted.
fn stalled_answer() -> Response {
    anthropic::Script::new()
        .text("partial")
        .build_partial()
        .stall()
}

/// Prompts queued together run first come, first served (each used to race
/// for the agent); a request that needs the agent while a prompt holds it
/// waits its turn behind the queue, and the requests after it are answered
/// meanwhile (it used to stop the reading: a `ping`, and the `abort` that
/// ends the running prompt, waited for the prompt to end by itself).
#[tokio::test(flavor = "multi_thread")]
async fn queued_work_runs_in_order_and_agent_requests_wait_their_turn() {
    let w = World::new();
    let stalled = stalled_answer();
    let answers = (1..=5).map(|i| anthropic::text(&format!("a{i}")));
    let model = MockModel::start(std::iter::once(stalled).chain(answers)).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"prompt","message":"p0"}"#);
    rpc.until_event(|e| matches!(e, Event::TextDelta { .. }));
    for i in 1..=5 {
        rpc.send(&format!(r#"{{"type":"prompt","message":"p{i}"}}"#));
    }
    rpc.send(r#"{"id":"m","type":"get_messages"}"#);
    rpc.send(r#"{"id":"p","type":"ping"}"#);
    rpc.response("ping");
    rpc.send(r#"{"type":"abort"}"#);
    assert_eq!(
        rpc.next_stop_within(Duration::from_secs(10)),
        StopReason::Aborted
    );
    let mut prompts = Vec::new();
    let messages = rpc.until(|v| match typed(v) {
        Event::UserMessage { content, .. } => {
            prompts.push(text(&content[0]).to_owned());
            false
        }
        Event::Response(r) => r.command == "get_messages",
        _ => false,
    });
    assert_eq!(prompts, ["p1", "p2", "p3", "p4", "p5"]);
    assert_eq!(messages["id"], "m");
    // Asked after the five prompts, answered after them: p0 (aborted,
    // with its partial answer) and five prompts with their answers.
    let messages = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 12, "{messages:?}");
    assert_eq!(messages[11]["content"][0]["text"], "a5");
    assert_eq!(rpc.close(), 0);
}

/// Requests waiting for the agent are bounded as prompts are: past twice
/// the prompts' cap, each further one is refused at once.
#[tokio::test(flavor = "multi_thread")]
async fn requests_waiting_for_the_agent_are_bounded() {
    let w = World::new();
    let stalled = stalled_answer();
    let model = MockModel::start([stalled]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"prompt","message":"p0"}"#);
    rpc.until_event(|e| matches!(e, Event::TextDelta { .. }));
    for _ in 0..=2000 {
        rpc.send_raw(r#"{"type":"get_messages"}"#);
    }
    let refused = rpc.response("get_messages");
    assert_eq!(
        refused["error"],
        "2001 requests are waiting for the agent; send more once some are answered (or abort)",
        "{refused}"
    );
    rpc.send(r#"{"type":"abort"}"#);
    let mut answered = 0;
    rpc.until_within(Duration::from_secs(30), |v| {
        if matches!(typed(v), Event::Response(r) if r.command == "get_messages" && r.success) {
            answered += 1;
        }
        answered == 2000
    });
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_mid_stream_ends_the_turn() {
    let w = World::new();
    let stalled = stalled_answer();
    let model = MockModel::start([stalled, anthropic::text("after abort")]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"prompt","message":"long answer please"}"#);
    rpc.until_event(|e| matches!(e, Event::TextDelta { .. }));
    // While the prompt holds the agent, get_state still knows the model.
    rpc.send(r#"{"type":"get_state"}"#);
    let state = rpc.response("get_state");
    assert_eq!(state["data"]["busy"], true, "{state}");
    assert_eq!(state["data"]["model"], "claude-sonnet-5-5", "{state}");
    rpc.send(r#"{"type":"abort"}"#);
    assert_eq!(
        rpc.next_stop_within(Duration::from_secs(10)),
        StopReason::Aborted
    );
    rpc.done();
    model.wait_hangups(1).await;
    // The conversation stays valid: the next prompt works.
    rpc.send(r#"{"type":"prompt","message":"again"}"#);
    assert_eq!(text(&rpc.next_answer()[0]), "after abort");
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn extension_commands_reload_and_auth() {
    let w = World::new();
    let ext = w.py_ext(
        "cmds",
        r#"
handshake(NAME)
emit({"type":"register_command","name":"show","description":"show a note"})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "command_invoked":
        emit({"type":"command_response","id":msg["id"],"action":"display","display":"a note"})
"#,
    );
    let model = MockModel::start([]).await;
    let mut rpc = Rpc::start(
        &w,
        &model,
        "anthropic",
        &["--ext", ext.to_str().unwrap()],
        Some("s3cret"),
    );
    rpc.send(r#"{"type":"ping"}"#);
    assert_eq!(
        rpc.response("ping")["error"],
        "auth required: send hello with token first"
    );
    rpc.send(r#"{"type":"hello","token":"s3cret"}"#);
    assert_eq!(rpc.response("hello")["success"], true);
    rpc.send(r#"{"type":"get_commands"}"#);
    let commands = rpc.response("get_commands")["data"]["commands"].clone();
    assert!(
        commands
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "show" && c["source"] == "extension"),
        "{commands}"
    );
    assert!(
        commands
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "help" && c["source"] == "builtin")
    );
    rpc.send(r#"{"type":"prompt","message":"/show"}"#);
    let display = rpc.until_event(|e| matches!(e, Event::ExtDisplay { .. }));
    assert_eq!(
        display,
        Event::ExtDisplay {
            extension: "cmds".into(),
            command: "show".into(),
            text: "a note".into()
        }
    );
    rpc.done();
    // Print, JSON and RPC share one rule: an unknown command never reaches the model.
    rpc.send(r#"{"type":"prompt","message":"/nope please"}"#);
    let error = rpc.until_event(|e| matches!(e, Event::Error { .. }));
    assert_eq!(
        error,
        Event::Error {
            message: "unknown command /nope".into()
        }
    );
    rpc.done();
    rpc.send(r#"{"type":"reload_extensions"}"#);
    let stats = rpc.response("reload_extensions")["data"].clone();
    assert_eq!(stats["stopped"], 1);
    assert_eq!(stats["loaded"], 1);
    assert!(model.requests().is_empty());
    assert_eq!(rpc.close(), 0);

    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], Some("s3cret"));
    rpc.send(r#"{"type":"hello","token":"wrong"}"#);
    assert_eq!(rpc.response("hello")["error"], "invalid token");
    assert_eq!(rpc.close(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn compact_summarises_older_messages() {
    let w = World::new();
    let model = MockModel::start([
        openai::text("one"),
        openai::text("two"),
        openai::text("three"),
        openai::text("THE SUMMARY"),
    ])
    .await;
    let mut rpc = Rpc::start(&w, &model, "openai", &[], None);
    for n in 1..=3 {
        rpc.send(&format!(r#"{{"type":"prompt","message":"message {n}"}}"#));
        rpc.done();
    }
    rpc.send(r#"{"type":"compact"}"#);
    let done = rpc.until_event(|e| matches!(e, Event::CompactDone { .. } | Event::Error { .. }));
    // The same event as automatic compaction, marked as asked for.
    assert_eq!(
        done,
        Event::CompactDone {
            summary: "THE SUMMARY".into(),
            automatic: false
        }
    );
    rpc.send(r#"{"type":"get_messages"}"#);
    let messages = rpc.response("get_messages")["data"]["messages"].clone();
    let first = messages[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        first.starts_with("## Context Summary (compacted)"),
        "{first}"
    );
    assert_eq!(
        messages.as_array().unwrap().len(),
        5,
        "summary + the last four messages"
    );
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn hook_points_fire_in_order_and_prompt_preparation_reruns_after_a_model_change() {
    let w = World::new();
    let ext = w.py_ext(
        "observer",
        r#"
handshake(NAME)
emit({"type":"subscribe","events":["session_start","turn_start","turn_end","tool_call","assistant_message"],
      "intercept":["before_agent_start"]})
emit({"type":"ready"})
log = open("seen.jsonl", "a")
for msg in frames():
    if msg["type"] in ("event", "event_intercept"):
        log.write(json.dumps(msg) + "\n")
        log.flush()
    if msg["type"] == "event_intercept":
        emit({"type":"event_intercept_response","id":msg["id"],"system_prompt":"prepared for " + msg["model"]})
"#,
    );
    let model = MockModel::start([
        anthropic::Script::new()
            .text("running it")
            .tool_call("t1", "bash", r#"{"command":"true"}"#)
            .build(),
        anthropic::text("done"),
        anthropic::text("second prompt"),
        anthropic::text("after model change"),
    ])
    .await;
    let mut rpc = Rpc::start(
        &w,
        &model,
        "anthropic",
        &["--ext", ext.to_str().unwrap()],
        None,
    );
    for message in ["first", "second"] {
        rpc.send(&format!(r#"{{"type":"prompt","message":"{message}"}}"#));
        rpc.done();
    }
    rpc.send(r#"{"type":"set_model","model":"claude-haiku-4-5"}"#);
    rpc.response("set_model");
    rpc.send(r#"{"type":"prompt","message":"third"}"#);
    rpc.done();
    assert_eq!(rpc.close(), 0);

    let seen: Vec<Value> = std::fs::read_to_string(ext.join("seen.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<String> = seen
        .iter()
        .map(|m| m["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names[..7],
        [
            "session_start",
            "before_agent_start",
            "turn_start",
            "assistant_message",
            "tool_call",
            "turn_end",
            "turn_start"
        ],
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| *n == "session_start").count(),
        1,
        "{names:?}"
    );
    let preparations: Vec<&Value> = seen
        .iter()
        .filter(|m| m["event"] == "before_agent_start")
        .collect();
    assert_eq!(
        preparations.len(),
        2,
        "once, then again after the model change: {names:?}"
    );
    assert_eq!(preparations[1]["model"], "claude-haiku-4-5");
    assert_ne!(
        preparations[0]["agent_run_id"],
        preparations[1]["agent_run_id"]
    );
    let requests = model.requests();
    assert!(
        requests[0].body["system"]
            .to_string()
            .contains("prepared for claude-sonnet-5-5")
    );
    assert!(
        requests[3].body["system"]
            .to_string()
            .contains("prepared for claude-haiku-4-5")
    );
    let ends: Vec<&str> = seen
        .iter()
        .filter(|m| m["event"] == "turn_end")
        .map(|m| m["stop"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["tool_use", "end_turn", "end_turn", "end_turn"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_and_invalid_lines_get_errors_and_the_server_goes_on() {
    let w = World::new();
    let model = MockModel::start([]).await;
    let mut rpc = Rpc::start(&w, &model, "openai", &[], None);
    // 17 MiB without a newline inside: over the 16 MiB limit, never buffered whole.
    rpc.send_bytes(&vec![b'x'; 17 * 1024 * 1024]);
    let long = rpc.response("");
    assert_eq!(long["success"], false);
    assert!(
        long["error"].as_str().unwrap().contains("line longer than"),
        "{long}"
    );
    rpc.send_bytes(b"{\"type\":\"ping\",\"id\":\"\xff\xfe\"}");
    let bad = rpc.response("");
    assert!(
        bad["error"].as_str().unwrap().starts_with("malformed json"),
        "{bad}"
    );
    rpc.send(r#"{"id":9,"type":"ping"}"#);
    let pong = rpc.response("ping");
    assert_eq!(pong["data"]["pong"], true);
    assert_eq!(rpc.close(), 0);
}

/// The soak worker: a tool that answers, and exits on its own after
/// `CRASH_EVERY` calls (a crash zot must survive and clean up after).
const SOAK_WORKER: &str = r#"
with open(os.environ["SOAK_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
handshake(NAME)
emit({"type":"register_tool","name":"work","description":"Work.","schema":{"type":"object"}})
emit({"type":"ready"})
calls = 0
for msg in frames():
    if msg["type"] == "tool_call":
        calls += 1
        emit({"type":"tool_result","id":msg["id"],"content":[{"type":"text","text":f"done {calls}"}]})
        if calls % 50 == 0:
            sys.exit(3)
    if msg["type"] == "shutdown":
        break
"#;

/// The soak guard: intercepts every tool call (allowing it), and exits on
/// its own now and then too.
const SOAK_GUARD: &str = r#"
with open(os.environ["SOAK_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
handshake(NAME)
emit({"type":"subscribe","events":[],"intercept":["tool_call"]})
emit({"type":"ready"})
asked = 0
for msg in frames():
    if msg["type"] == "event_intercept":
        asked += 1
        emit({"type":"event_intercept_response","id":msg["id"],"block":False})
        if asked % 70 == 0:
            sys.exit(4)
    if msg["type"] == "shutdown":
        break
"#;

/// zot's resident memory (KiB) and open file descriptors.
fn footprint(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    (rss, fds)
}

/// Live processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …: comm may hold spaces, so split after the last ')'.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let mut fields = rest.split_whitespace();
        let (state, ppid) = (fields.next(), fields.next().and_then(|p| p.parse().ok()));
        if ppid == Some(pid) && state != Some("Z") {
            out.push(child);
        }
    }
    out
}

/// Soak: thousands of tool calls and intercepts while the extensions crash
/// on their own and are reloaded. zot's memory and file descriptors must
/// come back to where they were after warm-up, crashed extensions must be
/// reaped, and nothing may outlive zot. Figures go to BENCHMARKS.md
/// (`cargo test -p zot --test all -- soak --nocapture`).
#[tokio::test(flavor = "multi_thread")]
async fn soak_tool_calls_and_intercepts_through_crashes_and_reloads() {
    const PROMPTS: usize = 250;
    const CALLS_PER_PROMPT: usize = 10;
    const RELOAD_EVERY: usize = 8;
    const WARM_UP: usize = 48;
    let w = World::new();
    let worker = w.py_ext("worker", SOAK_WORKER);
    let guard = w.py_ext("guard", SOAK_GUARD);
    let pids = w.scratch.join("pids");
    let responses = (0..PROMPTS).flat_map(|p| {
        let mut script = anthropic::Script::new().pieces(1);
        for c in 0..CALLS_PER_PROMPT {
            script = script.tool_call(&format!("t{p}-{c}"), "work", "{}");
        }
        [script.build(), anthropic::text("ok")]
    });
    let model = MockModel::start(responses).await;
    let mut cmd_args = vec![];
    for dir in [&worker, &guard] {
        cmd_args.push("--ext");
        cmd_args.push(dir.to_str().unwrap());
    }
    // SAFETY-free env passing: the child gets SOAK_PIDS through the command.
    let mut rpc = {
        let mut cmd = w.against(&model, "anthropic", &["rpc"]);
        cmd.args(&cmd_args)
            .env("SOAK_PIDS", &pids)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        Rpc::from_command(cmd)
    };
    let pid = rpc.child.id();
    let mut warm = None;
    let mut results = 0usize;
    let mut crashes = 0usize;
    for prompt in 0..PROMPTS {
        if prompt % RELOAD_EVERY == 0 && prompt > 0 {
            rpc.send(r#"{"type":"reload_extensions"}"#);
            rpc.response("reload_extensions");
            if prompt == WARM_UP {
                warm = Some(footprint(pid));
            }
        }
        rpc.send(r#"{"type":"prompt","message":"go"}"#);
        let mut done = false;
        while !done {
            let line = rpc.until_event(|e| {
                matches!(
                    e,
                    Event::ToolResult { .. } | Event::Done | Event::ExtWarning { .. }
                )
            });
            match line {
                Event::Done => done = true,
                Event::ToolResult { .. } => results += 1,
                Event::ExtWarning { message, .. } if message.contains("exited (exit status") => {
                    crashes += 1
                }
                _ => {}
            }
        }
        rpc.send(r#"{"type":"clear"}"#);
        rpc.response("clear");
    }
    rpc.send(r#"{"type":"reload_extensions"}"#);
    rpc.response("reload_extensions");
    let end = footprint(pid);
    let (warm_rss, warm_fds) = warm.unwrap();
    let live = children(pid);
    let started: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    println!(
        "soak: {} tool calls ({} results), {} crashes injected, {} reloads, {} extension starts, \
         RSS after warm-up {warm_rss} KiB, at the end {} KiB, fds {warm_fds} -> {}",
        PROMPTS * CALLS_PER_PROMPT,
        results,
        crashes,
        PROMPTS / RELOAD_EVERY,
        started.len(),
        end.0,
        end.1
    );
    assert_eq!(
        results,
        PROMPTS * CALLS_PER_PROMPT,
        "every call got a result"
    );
    assert!(
        end.0 * 10 <= warm_rss * 11,
        "RSS grew from {warm_rss} KiB to {} KiB",
        end.0
    );
    assert_eq!(end.1, warm_fds, "open file descriptors");
    assert_eq!(
        live.len(),
        2,
        "only the two live extensions are zot's children: {live:?}"
    );
    assert_eq!(rpc.close(), 0);
    // Nothing zot started outlives it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let left = |started: &[u32]| -> Vec<u32> {
        started
            .iter()
            .copied()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                    !s.rsplit_once(')')
                        .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
                })
            })
            .collect()
    };
    while !left(&started).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        left(&started).is_empty(),
        "left running: {:?}",
        left(&started)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn command_hooks_block_prompts_and_hear_compaction_and_the_session_end() {
    let w = World::new();
    let log = w.scratch.join("hooks.log");
    let record = |what: &str| {
        let fields = format!(r#"d["hook_event_name"], d.get("{what}")"#);
        json!({"type": "command", "command": record_input(&log, &fields)})
    };
    let hooks = json!({"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": "grep -q secret && { echo 'keep it to yourself' >&2; exit 2; }; exit 0"}]}],
        "PreCompact": [{"matcher": "manual", "hooks": [record("trigger")]}],
        "SessionEnd": [{"hooks": [record("reason")]}],
    }});
    std::fs::write(w.home.join("hooks.json"), hooks.to_string()).unwrap();
    let model = MockModel::start([
        openai::text("one"),
        openai::text("two"),
        openai::text("three"),
        openai::text("SUMMARY"),
    ])
    .await;
    let mut rpc = Rpc::start(&w, &model, "openai", &[], None);
    rpc.send(r#"{"type":"prompt","message":"my secret is 42"}"#);
    let blocked = rpc.until_event(|e| matches!(e, Event::PromptBlocked { .. }));
    assert_eq!(
        blocked,
        Event::PromptBlocked {
            source: "hook".into(),
            reason: "keep it to yourself".into()
        }
    );
    rpc.done();
    assert!(model.requests().is_empty(), "the model never heard it");
    for n in 1..=3 {
        rpc.send(&format!(r#"{{"type":"prompt","message":"message {n}"}}"#));
        rpc.done();
    }
    rpc.send(r#"{"type":"compact"}"#);
    rpc.until_event(|e| matches!(e, Event::CompactDone { .. }));
    assert_eq!(rpc.close(), 0);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "PreCompact manual\nSessionEnd other\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn at_most_1000_prompts_wait_and_each_further_one_gets_an_error() {
    let w = World::new();
    let stalled = stalled_answer();
    let model = MockModel::start([stalled]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"prompt","message":"the running one","id":"run"}"#);
    rpc.until_event(|e| matches!(e, Event::TextDelta { .. }));
    let max = zot_cli::rpc::MAX_QUEUED_PROMPTS;
    let mut batch = String::new();
    for i in 0..max + 2 {
        batch.push_str(&format!(
            "{{\"type\":\"prompt\",\"message\":\"waiting {i}\",\"id\":{i}}}\n"
        ));
    }
    rpc.send_raw(batch.trim_end());
    let (mut started, mut refused) = (0, Vec::new());
    while started + refused.len() < max + 2 {
        let response = rpc.response("prompt");
        if response["success"] == true {
            started += 1;
        } else {
            refused.push(response);
        }
    }
    assert_eq!(started, max);
    assert_eq!(refused.len(), 2, "{refused:?}");
    for response in &refused {
        assert_eq!(
            response["error"],
            format!("{max} prompts are already waiting; send more once some have run (or abort)")
        );
    }
}
