//! The nimlet protocol: real nimlet-style extensions (python3) run beside
//! zot ones through the same host.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use zot_extensions::{
    CommandOutcome, Dialect, ExtensionHost, Hook, HookPoint, HostEvent, Launch, LoadErrorKind,
    Manifest, Outcome, ReportStatus, discover,
};

use super::support::{
    Env, PY_PRELUDE, Root, SECS5, event_matching, eventually, is_running, read_pid, write_exec,
};

/// A nimlet prelude: `send`, `frames()` (recording every host frame into
/// `<ext dir>/received.jsonl`, found through `EXT_DIR` since the cwd is the workspace).
const NIMLET_PRELUDE: &str = r#"#!/usr/bin/env python3
import json, os, sys, time, threading
EXT_DIR = os.path.dirname(os.path.abspath(__file__))
lock = threading.Lock()
def send(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()
def frames():
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        with open(os.path.join(EXT_DIR, "received.jsonl"), "a") as f:
            f.write(json.dumps(msg) + "\n")
        yield msg
"#;

/// Writes a nimlet extension `<root>/<dir>` with a `command` manifest.
fn nimlet(env: &Env, root: &Path, name: &str, manifest_extra: &str, body: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        format!(r#"{{"name":"{name}","command":["./extension.py"]{manifest_extra}}}"#),
    )
    .unwrap();
    write_exec(
        &dir.join("extension.py"),
        &format!("{NIMLET_PRELUDE}\n{body}"),
    );
    let _ = env;
    dir
}

fn received(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("received.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const NOTES: &str = r#"
send({"type": "register",
      "commands": [{"name": "note", "description": "Append a note"}, {"name": "  "}, {"name": "both"}, {"name": "slow"}],
      "tools": [{"name": "save_note", "description": "Save a note.",
                 "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                 "capabilities": ["read", "USER"]},
                {"name": "danger", "description": "Does things.", "input_schema": {"type": "object"}}],
      "events": ["session_start", "turn_start", "turn_end", "session_end", "custom_unknown"]})
open(os.path.join(EXT_DIR, "cwd"), "w").write(os.getcwd())
def answer_later(msg):
    time.sleep(float(msg["arguments"] or "0.3"))
    send({"type": "response", "id": msg["id"], "message": "slow " + msg["arguments"]})
for msg in frames():
    kind = msg.get("type")
    if kind == "command":
        if msg["name"] == "note":
            send({"type": "response", "id": msg["id"], "message": "Noted: " + msg["arguments"],
                  "status": {"key": "notes", "text": "1 note"}})
        elif msg["name"] == "both":
            send({"type": "response", "id": msg["id"], "message": "printing first", "prompt": "then a turn"})
        elif msg["name"] == "slow":
            threading.Thread(target=answer_later, args=(msg,)).start()
    elif kind == "tool":
        if msg["name"] == "save_note":
            send({"type": "response", "id": msg["id"], "content": "Saved " + msg["arguments"]["text"],
                  "widget": {"key": "w", "lines": ["one", 2, "three"]},
                  "notification": {"level": "warning", "message": "careful"},
                  "entry": {"count": 1}})
        # "danger" never answers: it is cancelled or times out
    elif kind == "event":
        send({"type": "response", "id": msg["id"]})
    elif kind == "shutdown":
        break
"#;

#[test]
fn manifests_pick_the_dialect_and_validate_like_nimlet() {
    let env = Env::new();
    let root = env.project.join(".agents/extensions");
    let cases = [
        (r#"{"command":["x"]}"#, "missing name"),
        (r#"{"name":5,"command":["x"]}"#, "missing name"),
        (r#"{"name":"n"}"#, "command must be an array"),
        (r#"{"name":"n","command":"x"}"#, "command must be an array"),
        (
            r#"{"name":"n","command":["x",""]}"#,
            "command entries must be strings",
        ),
        (r#"{"name":"n","command":[]}"#, "command must not be empty"),
        (
            r#"{"name":"n","command":["x"],"response_timeout_seconds":0}"#,
            "must be a positive integer or null",
        ),
        (
            r#"{"name":"n","command":["x"],"response_timeout_seconds":1.5}"#,
            "must be a positive integer or null",
        ),
        (
            r#"{"name":"n","command":["x"],"response_timeout_seconds":"30"}"#,
            "must be a positive integer or null",
        ),
    ];
    for (i, (text, message)) in cases.iter().enumerate() {
        let dir = root.join(format!("case{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("extension.json"), text).unwrap();
        let err = Manifest::load_in(&dir, Dialect::Nimlet).unwrap_err();
        assert!(err.message.contains(message), "{text}: {err}");
    }
    // A zot manifest under a nimlet root fails with nimlet's message.
    let zot = root.join("zotty");
    std::fs::create_dir_all(&zot).unwrap();
    std::fs::write(
        zot.join("extension.json"),
        r#"{"name":"zotty","exec":"./x"}"#,
    )
    .unwrap();
    assert_eq!(
        Manifest::load_in(&zot, Dialect::Nimlet).unwrap().dialect(),
        Some(Dialect::Zot)
    );
    let neither = root.join("neither");
    std::fs::create_dir_all(&neither).unwrap();
    std::fs::write(neither.join("extension.json"), r#"{"name":"neither"}"#).unwrap();
    assert!(
        Manifest::load_in(&neither, Dialect::Nimlet)
            .unwrap_err()
            .message
            .contains("command must be an array")
    );
    assert!(
        Manifest::load_in(&neither, Dialect::Zot)
            .unwrap_err()
            .message
            .contains("is required")
    );

    // Both keys: the root decides, with a warning.
    let both = root.join("both");
    std::fs::create_dir_all(&both).unwrap();
    std::fs::write(
        both.join("extension.json"),
        r#"{"name":"both","exec":"./x","command":["./y"],"response_timeout_seconds":null}"#,
    )
    .unwrap();
    let as_nimlet = Manifest::load_in(&both, Dialect::Nimlet).unwrap();
    assert_eq!(
        as_nimlet.launch,
        Launch::Nimlet {
            command: vec!["./y".into()],
            timeout: None
        }
    );
    assert!(
        as_nimlet.warnings[0].contains("treated as nimlet"),
        "{:?}",
        as_nimlet.warnings
    );
    assert_eq!(
        Manifest::load_in(&both, Dialect::Zot).unwrap().dialect(),
        Some(Dialect::Zot)
    );
    let default = Manifest::load_in(&zot, Dialect::Zot).unwrap();
    assert!(default.warnings.is_empty());
}

#[test]
fn portable_roots_come_after_the_zot_roots_and_need_trust_in_a_project() {
    let env = Env::new();
    let user_home = env.scratch.join("user");
    nimlet(
        &env,
        &user_home.join(".agents/extensions"),
        "portable",
        "",
        "",
    );
    nimlet(
        &env,
        &env.project.join(".agents/extensions"),
        "local",
        "",
        "",
    );
    env.py(Root::Global, "zotty", "zotty", "");
    let mut config = env.config(&[]);
    config.user_home = Some(user_home);
    let names = |found: Vec<zot_extensions::Found>| {
        found
            .iter()
            .map(|f| {
                (
                    f.manifest().unwrap().name.clone(),
                    matches!(f.status, zot_extensions::FoundStatus::Untrusted(_)),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(discover(&config)),
        [
            ("zotty".into(), false),
            ("portable".into(), false),
            ("local".into(), false)
        ]
    );
    config.project_trusted = false;
    assert_eq!(
        names(discover(&config)),
        [
            ("zotty".into(), false),
            ("portable".into(), false),
            ("local".into(), true)
        ]
    );
}

#[tokio::test]
async fn handshake_commands_tools_side_effects_and_shutdown() {
    let env = Env::new();
    let dir = nimlet(&env, &env.scratch, "notes", "", NOTES);
    let mut config = env.config(&[&dir]);
    config.session_id = "session-42".into();
    let (host, mut rx) = ExtensionHost::start(config).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());

    // initialize first, with the workspace and session id; cwd = the workspace.
    // (The extension records frames as it reads them, after registering.)
    assert!(
        eventually(SECS5, || !received(&dir).is_empty()
            && dir.join("cwd").exists())
        .await
    );
    let first = &received(&dir)[0];
    assert_eq!(
        *first,
        json!({"type":"initialize","version":1,"workspace":env.project.display().to_string(),"session_id":"session-42"})
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("cwd")).unwrap(),
        env.project.canonicalize().unwrap().display().to_string()
    );

    let ReportStatus::Loaded(info) = &host.report()[0].status else {
        panic!("{:?}", host.report())
    };
    assert_eq!(info.readiness, zot_extensions::Readiness::Ready);
    let commands: Vec<_> = host.commands().into_iter().map(|c| c.name).collect();
    assert_eq!(
        commands,
        ["note", "both", "slow"],
        "blank names are skipped"
    );
    let tools = host.tools();
    assert!(
        tools[0].read_only,
        "capabilities read and user are read-only"
    );
    assert!(!tools[1].read_only, "no capabilities means act-only");

    // Commands: message → display (with side effects), message + prompt.
    let reply = host
        .invoke_command("NOTE", "remember the cache bug")
        .await
        .unwrap();
    assert_eq!(
        reply.outcome,
        CommandOutcome::Display("Noted: remember the cache bug".into())
    );
    let status = event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Status { .. }))
        .await
        .unwrap();
    assert_eq!(
        status,
        HostEvent::Status {
            extension: "notes".into(),
            key: "notes:notes".into(),
            text: "1 note".into()
        }
    );
    let reply = host.invoke_command("both", "").await.unwrap();
    assert_eq!(reply.outcome, CommandOutcome::Prompt("then a turn".into()));
    let note = event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Notify { .. }))
        .await
        .unwrap();
    assert!(matches!(note, HostEvent::Notify { message, .. } if message == "printing first"));

    // Tools: content string, side effects of every kind.
    let reply = host
        .call_tool("save_note", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(
        reply.content,
        [zot_extensions::zot_protocol::zot::ContentBlock::Text {
            text: "Saved hi".into()
        }]
    );
    assert!(!reply.is_error);
    let widget = event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Widget { .. }))
        .await
        .unwrap();
    assert_eq!(
        widget,
        HostEvent::Widget {
            extension: "notes".into(),
            key: "notes:w".into(),
            lines: vec!["one".into(), "three".into()]
        }
    );
    let warn = event_matching(&mut rx, SECS5, |e| {
        matches!(
            e,
            HostEvent::Notify {
                level: zot_extensions::zot_protocol::zot::NotifyLevel::Warn,
                ..
            }
        )
    })
    .await;
    assert!(warn.is_some());
    assert_eq!(
        host.take_entries(),
        [("notes".to_owned(), json!({"count": 1}))]
    );
    assert!(host.take_entries().is_empty());

    // Lifecycle notices are requests that get acknowledged.
    host.observe(&Hook::SessionStart).await;
    host.observe(&Hook::PromptStart).await;
    host.observe(&Hook::PromptEnd { interrupted: true }).await;
    let events: Vec<Value> = received(&dir)
        .into_iter()
        .filter(|m| m["type"] == "event")
        .collect();
    assert_eq!(events[0]["event"], "session_start");
    assert_eq!(
        events[0]["payload"],
        json!({"session_id":"session-42","workspace":env.project.display().to_string()})
    );
    assert_eq!(events[2]["payload"]["interrupted"], true);
    // ids are strings
    assert!(events.iter().all(|e| e["id"].is_string()));

    host.shutdown().await;
    assert_eq!(received(&dir).last().unwrap()["type"], "shutdown");
}

#[tokio::test]
async fn replies_arrive_out_of_order_and_a_dropped_tool_call_is_cancelled() {
    let env = Env::new();
    let dir = nimlet(&env, &env.scratch, "notes", "", NOTES);
    let (host, _rx) = ExtensionHost::start(env.config(&[&dir])).await;
    let slow = host.invoke_command("slow", "0.6");
    let fast = host.invoke_command("slow", "0.1");
    let (slow, fast) = tokio::join!(slow, fast);
    assert_eq!(
        slow.unwrap().outcome,
        CommandOutcome::Display("slow 0.6".into())
    );
    assert_eq!(
        fast.unwrap().outcome,
        CommandOutcome::Display("slow 0.1".into())
    );

    // The agent drops the call when the user aborts: the extension is told.
    let call = host.call_tool("danger", json!({}));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), call)
            .await
            .is_err()
    );
    assert!(
        eventually(SECS5, || received(&dir)
            .iter()
            .any(|m| m["type"] == "cancel"))
        .await
    );
    let tool_id = received(&dir).iter().find(|m| m["type"] == "tool").unwrap()["id"].clone();
    let cancel = received(&dir)
        .into_iter()
        .find(|m| m["type"] == "cancel")
        .unwrap();
    assert_eq!(cancel, json!({"type":"cancel","id":tool_id}));
    host.shutdown().await;
}

#[tokio::test]
async fn timeouts_null_timeouts_and_questions() {
    let env = Env::new();
    let body = r#"
send({"type": "register", "commands": [{"name": "wait"}, {"name": "ask"}]})
for msg in frames():
    if msg.get("type") == "command" and msg["name"] == "wait":
        time.sleep(1.5)
        send({"type": "response", "id": msg["id"], "message": "waited"})
    elif msg.get("type") == "command" and msg["name"] == "ask":
        send({"type": "ui_request", "id": "q1", "method": "question", "prompt": "Which env?", "options": ["staging", "prod"]})
        for answer in frames():
            if answer.get("type") == "ui_response":
                break
        send({"type": "response", "id": msg["id"], "message": "answer=%s cancelled=%s" % (answer["answer"], answer["cancelled"])})
"#;
    let short = nimlet(
        &env,
        &env.scratch,
        "short",
        r#","response_timeout_seconds":1"#,
        body,
    );
    let forever = nimlet(
        &env,
        &env.scratch,
        "forever",
        r#","response_timeout_seconds":null"#,
        body,
    );
    let (host, mut rx) = ExtensionHost::start(env.config(&[&short])).await;
    let err = host.invoke_command("wait", "").await.unwrap_err();
    assert!(err.to_string().contains("no reply within 1s"), "{err}");

    // A question: time spent waiting for the user does not count.
    let ask = {
        let host = host.clone();
        tokio::spawn(async move { host.invoke_command("ask", "").await })
    };
    let question = event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Question { .. }))
        .await
        .unwrap();
    let HostEvent::Question {
        prompt,
        options,
        reply,
        extension,
    } = question
    else {
        unreachable!()
    };
    assert_eq!(
        (extension.as_str(), prompt.as_str()),
        ("short", "Which env?")
    );
    assert_eq!(options, ["staging", "prod"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    reply.answer("staging");
    let reply = ask.await.unwrap().unwrap();
    assert_eq!(
        reply.outcome,
        CommandOutcome::Display("answer=staging cancelled=False".into())
    );

    // Nobody to ask (the event is dropped): an immediate cancellation.
    let ask = {
        let host = host.clone();
        tokio::spawn(async move { host.invoke_command("ask", "").await })
    };
    let question = event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Question { .. }))
        .await
        .unwrap();
    drop(question);
    let reply = ask.await.unwrap().unwrap();
    assert_eq!(
        reply.outcome,
        CommandOutcome::Display("answer= cancelled=True".into())
    );
    host.shutdown().await;

    let (host, _rx) = ExtensionHost::start(env.config(&[&forever])).await;
    let reply = host.invoke_command("wait", "").await.unwrap();
    assert_eq!(
        reply.outcome,
        CommandOutcome::Display("waited".into()),
        "null means no timeout"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn strict_registration_failures_stop_the_process() {
    let env = Env::new();
    let cases = [
        (
            r#"send({"type": "register", "commands": [], "tools": [{"name": "t", "description": "d", "input_schema": {}, "capabilities": ["teleport"]}]})"#,
            "invalid capabilities for tool 't': unknown capability: teleport",
        ),
        (
            r#"send({"type": "update", "status": {"key": "k", "text": "early"}})"#,
            "expected register response",
        ),
        (
            r#"send({"type": "register", "tools": []})"#,
            "register commands must be an array",
        ),
        (
            r#"send({"type": "register", "commands": [], "events": "tool_call"})"#,
            "register events must be an array",
        ),
        (
            r#"send({"type": "register", "commands": [], "events": [1]})"#,
            "register events must be strings",
        ),
        (
            r#"send({"type": "register", "commands": [], "tools": [{"name": "t", "input_schema": {}}]})"#,
            "require name, description, and input_schema",
        ),
    ];
    for (i, (register, message)) in cases.iter().enumerate() {
        let name = format!("bad{i}");
        let body = format!(
            "open(os.path.join(EXT_DIR, 'pid'), 'w').write(str(os.getpid()))\n{register}\ntime.sleep(30)\n"
        );
        let dir = nimlet(&env, &env.scratch, &name, "", &body);
        let (host, _rx) = ExtensionHost::start(env.config(&[&dir])).await;
        let errors = host.errors();
        assert_eq!(errors.len(), 1, "{name}");
        assert!(matches!(errors[0].kind, LoadErrorKind::Handshake(_)));
        assert!(errors[0].to_string().contains(message), "{}", errors[0]);
        assert!(
            !is_running(read_pid(&dir, "pid").await),
            "{name} left running"
        );
    }

    // A null timeout never holds start-up past the host's hello deadline.
    let silent = nimlet(
        &env,
        &env.scratch,
        "silent",
        r#","response_timeout_seconds":null"#,
        "time.sleep(30)\n",
    );
    let mut config = env.config(&[&silent]);
    config.limits.hello_timeout = Duration::from_millis(500);
    let (host, _rx) = ExtensionHost::start(config).await;
    assert!(
        host.errors()[0].to_string().contains("no hello within"),
        "{}",
        host.errors()[0]
    );
}

#[tokio::test]
async fn a_nimlet_guard_blocks_beside_a_zot_guard_and_rewrites_chain() {
    let env = Env::new();
    let nimlet_guard = nimlet(
        &env,
        &env.scratch,
        "nguard",
        "",
        r#"
send({"type": "register", "commands": [], "events": ["tool_call", "tool_result"]})
for msg in frames():
    if msg.get("type") != "event":
        continue
    reply = {"type": "response", "id": msg["id"]}
    p = msg["payload"]
    if msg["event"] == "tool_call":
        cmd = p["arguments"].get("command", "")
        if "curl " in cmd:
            reply.update({"allow": False, "reason": "no network"})
        elif cmd == "ls":
            reply["arguments"] = {"command": "ls -la"}
    elif msg["event"] == "tool_result":
        reply.update({"output": p["output"].upper(), "is_error": False})
    send(reply)
"#,
    );
    let zot_guard = env.ext(
        "zguard",
        r#"
handshake(NAME)
emit({"type":"subscribe","intercept":["tool_call"]})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "event_intercept":
        cmd = msg["tool_args"].get("command", "")
        reply = {"type":"event_intercept_response","id":msg["id"]}
        if "rm -rf" in cmd:
            reply.update({"block": True, "reason": "zot says no"})
        elif cmd == "ls -la":
            reply["modified_args"] = {"command": "ls -la --color=never"}
        emit(reply)
"#,
    );
    let (host, _rx) = ExtensionHost::start(env.config(&[&nimlet_guard, &zot_guard])).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    assert_eq!(
        host.intercept_tool_call("1", "bash", &json!({"command": "curl evil"}))
            .await,
        Outcome::Block {
            extension: "nguard".into(),
            reason: "no network".into()
        }
    );
    assert_eq!(
        host.intercept_tool_call("2", "bash", &json!({"command": "rm -rf /"}))
            .await,
        Outcome::Block {
            extension: "zguard".into(),
            reason: "zot says no".into()
        }
    );
    assert_eq!(
        host.intercept_tool_call("3", "bash", &json!({"command": "ls"}))
            .await,
        Outcome::Allow(Some(json!({"command": "ls -la --color=never"}))),
        "the nimlet rewrite reached the zot guard, whose rewrite won"
    );
    assert!(host.intercepted(HookPoint::ToolResult));
    assert_eq!(
        host.intercept_tool_result("bash", &json!({}), "out".into(), true)
            .await,
        ("OUT".to_owned(), false)
    );
    // Plan mode: no nimlet lifecycle events at all.
    host.set_plan(true);
    assert!(!host.intercepted(HookPoint::ToolResult));
    assert_eq!(
        host.intercept_tool_call("4", "bash", &json!({"command": "curl evil"}))
            .await,
        Outcome::Allow(None)
    );
    host.set_plan(false);
    host.shutdown().await;
    let _ = PY_PRELUDE;
}

#[tokio::test]
async fn a_tool_named_like_a_built_in_is_skipped_with_a_warning() {
    let env = Env::new();
    let dir = nimlet(
        &env,
        &env.scratch,
        "clash",
        "",
        r#"
send({"type": "register", "commands": [], "tools": [{"name": "bash", "description": "mine", "input_schema": {"type": "object"}}]})
for msg in frames():
    pass
"#,
    );
    let (host, mut rx) = ExtensionHost::start(env.config(&[&dir])).await;
    assert!(host.tools().is_empty());
    let warning = event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::Warning { .. }))
        .await
        .unwrap();
    assert!(
        matches!(&warning, HostEvent::Warning { message, .. } if message.contains("extension tool 'bash' collides with a built-in tool")),
        "{warning:?}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_session_switch_restarts_only_nimlet_extensions() {
    let env = Env::new();
    let nim = nimlet(&env, &env.scratch, "notes", "", NOTES);
    let zot = env.ext(
        "steady",
        &super::support::registers(r#"[{"type":"register_command","name":"still"}]"#),
    );
    let (host, _rx) = ExtensionHost::start(env.config(&[&nim, &zot])).await;
    assert!(eventually(SECS5, || !received(&nim).is_empty()).await);
    let stats = host.switch_session("session-2").await;
    assert_eq!((stats.stopped, stats.loaded), (1, 1));
    assert!(
        eventually(SECS5, || received(&nim)
            .iter()
            .filter(|m| m["type"] == "initialize")
            .count()
            == 2)
        .await
    );
    let frames = received(&nim);
    let inits: Vec<&Value> = frames
        .iter()
        .filter(|m| m["type"] == "initialize")
        .collect();
    assert_eq!(inits[1]["session_id"], "session-2");
    assert!(
        frames
            .iter()
            .any(|m| m["type"] == "event" && m["event"] == "session_end")
    );
    // The zot extension was left alone: one hello_ack, its command still there.
    assert_eq!(super::support::received_of(&zot, "hello_ack").len(), 1);
    let names: Vec<_> = host.commands().into_iter().map(|c| c.name).collect();
    assert!(
        names.contains(&"still".to_owned()) && names.contains(&"note".to_owned()),
        "{names:?}"
    );
    host.shutdown().await;
}
