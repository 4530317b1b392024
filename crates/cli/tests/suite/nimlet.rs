//! nimlet-protocol extensions run unmodified by the real binary, beside zot ones.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use zot_testkit::{MockModel, openai};

use super::support::{self, Data, Event, Response, Run, World, first, typed, typed_events};

/// A nimlet extension (manifest with a `command` array) in `<scratch>/<name>`.
fn nimlet_ext(w: &World, name: &str, body: &str) -> PathBuf {
    let dir = w.scratch.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        format!(r#"{{"name":"{name}","command":["./extension.py"]}}"#),
    )
    .unwrap();
    let script = dir.join("extension.py");
    zot_testkit::write_exec(
        &script,
        &format!(
            r#"#!/usr/bin/env python3
import json, os, sys
EXT_DIR = os.path.dirname(os.path.abspath(__file__))
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
def log(msg):
    with open(os.path.join(EXT_DIR, "seen.jsonl"), "a") as f:
        f.write(json.dumps(msg) + "\n")
{body}"#
        ),
    );
    dir
}

fn seen(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("seen.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const NOTES: &str = r#"
send({"type": "register",
      "commands": [{"name": "note", "description": "Append a note"}, {"name": "ask"}],
      "tools": [{"name": "save_note", "description": "Save a note.",
                 "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                 "capabilities": ["read"]}],
      "events": ["tool_call", "tool_result", "turn_start", "turn_end", "session_start", "session_end"]})
for line in sys.stdin:
    msg = json.loads(line)
    log(msg)
    kind = msg.get("type")
    if kind == "command" and msg["name"] == "note":
        send({"type": "response", "id": msg["id"], "message": "Noted: " + msg["arguments"]})
    elif kind == "command" and msg["name"] == "ask":
        send({"type": "ui_request", "id": "q1", "method": "question", "prompt": "Which?", "options": ["a", "b"]})
        for answer in map(json.loads, sys.stdin):
            log(answer)
            if answer.get("type") == "ui_response":
                break
        send({"type": "response", "id": msg["id"], "message": "cancelled=%s" % answer["cancelled"]})
    elif kind == "tool":
        send({"type": "response", "id": msg["id"], "content": "saved " + msg["arguments"]["text"],
              "status": {"key": "notes", "text": "1 saved"}, "widget": {"key": "w", "lines": ["a line"]},
              "notification": {"level": "info", "message": "saved it"}, "entry": {"saved": msg["arguments"]["text"]}})
    elif kind == "event":
        reply = {"type": "response", "id": msg["id"]}
        if msg["event"] == "tool_call" and "curl" in json.dumps(msg["payload"]["arguments"]):
            reply.update({"allow": False, "reason": "no network from nimlet"})
        if msg["event"] == "tool_result":
            reply["output"] = msg["payload"]["output"] + " [checked]"
        send(reply)
    elif kind == "shutdown":
        break
"#;

fn zot(w: &World, model: &MockModel, args: &[&str]) -> Run {
    w.against(model, "openai", args).output().unwrap().into()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nimlet_tool_with_side_effects_events_and_a_persisted_entry() {
    let w = World::new();
    let ext = nimlet_ext(&w, "notes", NOTES);
    let model = MockModel::start([
        openai::tool_call("c1", "save_note", r#"{"text":"cache bug"}"#),
        openai::text("done"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        &["--json", "--ext", ext.to_str().unwrap(), "save it"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    let find = |kind: &str| {
        evs.iter()
            .find(|e| support::kind(e) == kind)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind}: {evs:?}"))
    };
    assert_eq!(
        find("ext_status"),
        Event::ExtStatus {
            extension: "notes".into(),
            key: "notes:notes".into(),
            text: "1 saved".into()
        }
    );
    assert_eq!(
        find("ext_widget"),
        Event::ExtWidget {
            extension: "notes".into(),
            key: "notes:w".into(),
            lines: vec!["a line".into()]
        }
    );
    assert_eq!(
        find("ext_entry"),
        Event::ExtEntry {
            extension: "notes".into(),
            data: json!({"saved": "cache bug"})
        }
    );
    assert!(
        matches!(find("ext_notify"), Event::ExtNotify { message, .. } if message == "saved it")
    );
    // The tool's schema went to the model, the result (rewritten by tool_result) came back.
    let requests = model.requests();
    assert!(requests[0].body["tools"].to_string().contains("save_note"));
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("saved cache bug [checked]"),
        "{}",
        requests[1].body
    );
    // Lifecycle: session_start, turn_start once per prompt, tool_call, tool_result, turn_end, session_end.
    let names: Vec<String> = seen(&ext)
        .iter()
        .filter(|m| m["type"] == "event")
        .map(|m| m["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "session_start",
            "turn_start",
            "tool_call",
            "tool_result",
            "turn_end",
            "session_end"
        ],
        "{names:?}"
    );
    // The entry is in the session file, and never in a request to the model.
    let files = super::conversation::session_files(&w);
    assert_eq!(files.len(), 1, "{files:?}");
    let lines = super::conversation::session_lines(&files[0]);
    assert!(
        lines.iter().any(|l| l["type"] == "extension"
            && l["extension"] == "notes"
            && l["data"] == json!({"saved": "cache bug"})),
        "{lines:?}"
    );
    assert!(!requests[1].body.to_string().contains("\"saved\":"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nimlet_guard_blocks_beside_a_zot_extension_and_questions_cancel_headless() {
    let w = World::new();
    let ext = nimlet_ext(&w, "notes", NOTES);
    let zot_ext = w.py_ext(
        "observer",
        r#"
handshake(NAME)
emit({"type":"subscribe","events":["tool_call"]})
emit({"type":"ready"})
for msg in frames():
    pass
"#,
    );
    let model = MockModel::start([
        openai::tool_call("c1", "bash", r#"{"command":"curl example.com"}"#),
        openai::text("ok"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        &[
            "-p",
            "--no-session",
            "--ext",
            ext.to_str().unwrap(),
            "--ext",
            zot_ext.to_str().unwrap(),
            "fetch",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let second = model.requests()[1].body.to_string();
    assert!(second.contains("no network from nimlet"), "{second}");

    // Commands over rpc-less print mode: message is printed; a question is cancelled headless.
    let run = zot(
        &w,
        &model,
        &[
            "-p",
            "--no-session",
            "--ext",
            ext.to_str().unwrap(),
            "/note remember",
        ],
    );
    assert_eq!(run.stdout, "Noted: remember\n", "{run:?}");
    let run = zot(
        &w,
        &model,
        &["-p", "--no-session", "--ext", ext.to_str().unwrap(), "/ask"],
    );
    assert_eq!(run.stdout, "cancelled=True\n", "{run:?}");
    let answer = seen(&ext)
        .into_iter()
        .find(|m| m["type"] == "ui_response")
        .unwrap();
    assert_eq!(
        answer,
        json!({"type":"ui_response","id":"q1","answer":"","cancelled":true})
    );

    // list and doctor name the protocol.
    let listed: Value = serde_json::from_str(
        &w.zot(&["ext", "list", "--json", "--ext", ext.to_str().unwrap()])
            .stdout,
    )
    .unwrap();
    assert_eq!(listed[0]["protocol"], "nimlet");
    let doctor: Value = serde_json::from_str(
        &w.zot(&["ext", "doctor", "--json", "--ext", ext.to_str().unwrap()])
            .stdout,
    )
    .unwrap();
    assert_eq!(doctor["extensions"][0]["protocol"], "nimlet");
    assert_eq!(doctor["extensions"][0]["state"], "ready");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_nimlet_example_runs_unmodified() {
    let w = World::new();
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/extensions/notes-nimlet");
    // A copy, so the example directory stays clean.
    let dir = w.scratch.join("notes-nimlet");
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["extension.json", "extension.py", "README.md"] {
        std::fs::copy(example.join(file), dir.join(file)).unwrap();
    }
    let model = MockModel::start([
        openai::tool_call("c1", "recall_notes", "{}"),
        openai::text("You noted: ship it"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        &[
            "-p",
            "--no-session",
            "--ext",
            dir.to_str().unwrap(),
            "/note ship it",
        ],
    );
    assert_eq!(run.stdout, "noted\n", "{run:?}");
    assert_eq!(
        std::fs::read_to_string(w.project.join("NOTES.md")).unwrap(),
        "- ship it\n"
    );
    let run = zot(
        &w,
        &model,
        &[
            "--json",
            "--no-session",
            "--ext",
            dir.to_str().unwrap(),
            "what did I note?",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(model.requests()[1].body.to_string().contains("- ship it"));
    let evs = typed_events(&run);
    let status = first!(evs, Event::ExtStatus { text, .. } => text);
    assert_eq!(status, "1 tool call(s) seen");
    let doctor: Value = serde_json::from_str(
        &w.zot(&["ext", "doctor", "--json", "--ext", dir.to_str().unwrap()])
            .stdout,
    )
    .unwrap();
    assert_eq!(doctor["extensions"][0]["protocol"], "nimlet");
    assert_eq!(doctor["extensions"][0]["tools"][0]["name"], "recall_notes");
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_mode_offers_only_read_only_tools() {
    let w = World::new();
    let ext = nimlet_ext(
        &w,
        "caps",
        r#"
send({"type": "register", "commands": [],
      "tools": [{"name": "peek", "description": "Look.", "input_schema": {"type": "object"}, "capabilities": ["read", "user"]},
                {"name": "poke", "description": "Change.", "input_schema": {"type": "object"}, "capabilities": ["write"]},
                {"name": "plain", "description": "No capabilities.", "input_schema": {"type": "object"}}]})
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "tool":
        send({"type": "response", "id": msg["id"], "content": "ran " + msg["name"]})
"#,
    );
    let zot_tool = w.py_ext(
        "zottool",
        r#"
handshake(NAME)
emit({"type":"register_tool","name":"zot_tool","schema":{"type":"object"}})
emit({"type":"ready"})
for msg in frames():
    pass
"#,
    );
    let model = MockModel::start([
        openai::tool_call("c1", "poke", "{}"),
        openai::text("planned"),
        openai::text("acted"),
    ])
    .await;
    let exts = [
        "--ext",
        ext.to_str().unwrap(),
        "--ext",
        zot_tool.to_str().unwrap(),
    ];
    let mut args = vec!["-p", "--no-session", "--plan"];
    args.extend(exts);
    args.push("make a plan");
    let run = zot(&w, &model, &args);
    assert_eq!(run.code, 0, "{run:?}");
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let requests = model.requests();
    assert_eq!(
        names(&requests[0].body),
        [
            "read",
            "grep",
            "find",
            "ls",
            "web_fetch",
            "todo_write",
            "task",
            "peek"
        ],
        "only read-only tools in plan mode (a task's child reads only there)"
    );
    // An act-only tool the model calls anyway is refused.
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("unknown tool \\\"poke\\\""),
        "{}",
        requests[1].body
    );
    let mut args = vec!["-p", "--no-session"];
    args.extend(exts);
    args.push("act now");
    zot(&w, &model, &args);
    assert_eq!(
        names(&model.requests()[2].body),
        [
            "read",
            "write",
            "edit",
            "bash",
            "grep",
            "find",
            "ls",
            "web_fetch",
            "todo_write",
            "task",
            "peek",
            "poke",
            "plain",
            "zot_tool"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_and_blocked_compaction() {
    let w = World::new();
    let ext = nimlet_ext(
        &w,
        "compactor",
        r#"
send({"type": "register", "commands": [], "events": ["session_before_compact", "session_compact"]})
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") != "event":
        continue
    log(msg)
    reply = {"type": "response", "id": msg["id"]}
    if msg["event"] == "session_before_compact":
        if os.path.exists(os.path.join(EXT_DIR, "block")):
            reply.update({"allow": False, "reason": "not now"})
        else:
            entries = msg["payload"]["entries"]
            reply["compaction"] = {"summary": "CUSTOM SUMMARY of %d entries" % len(entries), "first_kept_index": len(entries) - 2}
    send(reply)
"#,
    );
    let model = MockModel::start([
        openai::text("one"),
        openai::text("two"),
        openai::text("three"),
    ])
    .await;
    let input = [
        r#"{"type":"prompt","message":"first"}"#,
        r#"{"type":"prompt","message":"second"}"#,
        r#"{"type":"compact"}"#,
        r#"{"type":"get_messages"}"#,
    ];
    let run = rpc_run(&w, &model, &ext, &input);
    let summary = first!(run, Event::CompactDone { summary, .. } => summary);
    assert_eq!(summary, "CUSTOM SUMMARY of 4 entries");
    let messages = first!(run, Event::Response(Response {
        data: Some(Data::Messages { messages }),
        ..
    }) => messages);
    assert_eq!(messages.len(), 3, "summary + the last two");
    assert!(
        messages[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("CUSTOM SUMMARY")
    );
    let after = seen(&ext)
        .into_iter()
        .find(|m| m["event"] == "session_compact")
        .unwrap();
    let before = seen(&ext)
        .into_iter()
        .find(|m| m["event"] == "session_before_compact")
        .unwrap();
    assert_eq!(
        before["payload"]["tokens_before"], 10,
        "the model's count from the last request"
    );
    assert_eq!(after["payload"]["did_compact"], true);
    assert_eq!(after["payload"]["message"], "Compacted by extension.");
    assert_eq!(model.requests().len(), 2, "no summariser call");

    std::fs::write(ext.join("block"), "").unwrap();
    let run = rpc_run(
        &w,
        &model,
        &ext,
        &[
            r#"{"type":"prompt","message":"x"}"#,
            r#"{"type":"compact"}"#,
        ],
    );
    let error = first!(run, Event::Error { message } => message);
    assert_eq!(error, "compaction blocked: not now");
}

/// Runs `zot rpc` with `lines` on stdin (each command waits for the previous
/// to finish) and returns every output line, read as the protocol's event.
fn rpc_run(w: &World, model: &MockModel, ext: &Path, lines: &[&str]) -> Vec<Event> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = w
        .against(model, "openai", &["rpc", "--ext", ext.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
        let request: Value = serde_json::from_str(line).unwrap();
        let kind = request["type"].as_str().unwrap().to_owned();
        // prompt ends with done; compact with compact_done or error; others with their response.
        loop {
            let value: Value = serde_json::from_str(&out.next().unwrap().unwrap()).unwrap();
            let event = typed(&value);
            let end = match kind.as_str() {
                "prompt" => event == Event::Done,
                "compact" => matches!(event, Event::CompactDone { .. } | Event::Error { .. }),
                _ => matches!(&event, Event::Response(r) if r.command == kind),
            };
            seen.push(event);
            if end {
                break;
            }
        }
    }
    drop(stdin);
    child.wait().unwrap();
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn nimlet_extensions_install_like_any_other() {
    let w = World::new();
    let src = nimlet_ext(&w, "notes", NOTES);
    let run = w.zot(&["ext", "install", src.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let doctor: Value = serde_json::from_str(&w.zot(&["ext", "doctor", "--json"]).stdout).unwrap();
    let entry = &doctor["extensions"][0];
    assert_eq!(entry["scope"], "global");
    assert_eq!(entry["protocol"], "nimlet");
    assert_eq!(entry["state"], "ready", "{doctor}");
    let run = w.zot(&["ext", "disable", "notes"]);
    assert_eq!(run.code, 0, "{run:?}");
    let listed: Value = serde_json::from_str(&w.zot(&["ext", "list", "--json"]).stdout).unwrap();
    assert_eq!(listed[0]["state"], "disabled");
    assert_eq!(listed[0]["protocol"], "nimlet");
}

#[tokio::test(flavor = "multi_thread")]
async fn nimlets_initialize_carries_the_same_session_id_as_the_agents_session_file() {
    let w = World::new();
    let ext = nimlet_ext(
        &w,
        "recorder",
        r#"
for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    log(msg)
    if msg.get("type") == "initialize":
        send({"type": "register", "commands": [], "tools": []})
    elif msg.get("type") == "shutdown":
        break
"#,
    );
    let initializes = || -> Vec<Value> {
        seen(&ext)
            .into_iter()
            .filter(|m| m["type"] == "initialize")
            .collect()
    };
    let model = MockModel::start([openai::text("hello"), openai::text("hello again")]).await;

    // With a session: print mode writes one session file.
    let run = zot(&w, &model, &["-p", "--ext", ext.to_str().unwrap(), "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "hello\n", "{run:?}");
    let dirs: Vec<_> = std::fs::read_dir(w.home.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let files: Vec<_> = std::fs::read_dir(&dirs[0])
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let text = std::fs::read_to_string(file).unwrap();
    let meta: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(meta["type"], "meta", "{text}");
    let id = meta["meta"]["id"].as_str().unwrap().to_owned();
    // The file is named after the session's id.
    assert_eq!(
        file.file_name().unwrap().to_str().unwrap(),
        format!("{id}.jsonl")
    );
    let inits = initializes();
    assert!(!inits.is_empty(), "no initialize recorded: {run:?}");
    for init in &inits {
        assert_eq!(init["session_id"], id.as_str(), "{init}");
    }

    // Without a session: a local id.
    let before = inits.len();
    let run = zot(
        &w,
        &model,
        &["-p", "--no-session", "--ext", ext.to_str().unwrap(), "hi"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let inits = initializes();
    assert!(inits.len() > before, "no initialize recorded: {run:?}");
    for init in &inits[before..] {
        let session_id = init["session_id"].as_str().unwrap();
        assert!(session_id.starts_with("local-"), "{init}");
        assert_ne!(session_id, id);
    }
}
