//! MCP servers as extensions, through the built binary against the loopback
//! model server, with the real reference server
//! (`@modelcontextprotocol/server-everything`, pinned in
//! `crates/testkit/fixtures/mcp-everything`) over stdio and Streamable HTTP.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use zot_testkit::npm::EverythingServer;
use zot_testkit::{MockModel, anthropic, openai};

use super::rpc::Rpc;
use super::support::{
    Data, Event, Response, Run, StopReason, World, is_error, is_result_of, result_text,
    typed_events,
};

/// How long one step of an RPC conversation with MCP servers may take: a
/// cold `node` start of the reference server on a loaded machine takes
/// seconds; this is the backstop that turns a hang into a failure.
const STEP: Duration = Duration::from_secs(90);

/// Polls `check` until it gives a value or [`STEP`] runs out.
fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + STEP;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The JSON-RPC messages zot sent to a server, from the transcript `tee` kept.
pub(super) fn sent_to_server(transcript: &Path) -> Vec<Value> {
    std::fs::read_to_string(transcript)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `dist/index.js` of the pinned reference server (installed once per
/// lockfile hash by the testkit).
fn everything() -> PathBuf {
    EverythingServer::script().unwrap()
}

/// `$ZOT_HOME/mcp.json` with the reference server over stdio as `everything`,
/// plus `extra` options for its entry.
fn stdio_server(w: &World, extra: Value) {
    let mut entry = json!({"command": "node", "args": [everything(), "stdio"]});
    if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
        entry.extend(extra.clone());
    }
    write_user_config(w, json!({"mcpServers": {"everything": entry}}));
}

fn write_user_config(w: &World, config: Value) {
    std::fs::write(w.home.join("mcp.json"), config.to_string()).unwrap();
}

pub(super) fn zot(w: &World, model: &MockModel, provider: &str, args: &[&str]) -> Run {
    w.against(model, provider, args).output().unwrap().into()
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
        })
        .map(str::to_owned)
        .collect()
}

/// The tool results the last message of an Anthropic request carries.
fn last_results(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_resources_and_an_image_over_stdio_reach_the_model() {
    let w = World::new();
    stdio_server(&w, json!({}));
    let model = MockModel::start([
        anthropic::tool_call("c1", "mcp__everything__echo", r#"{"message":"hello mcp"}"#),
        anthropic::tool_call("c2", "mcp__everything__get-sum", r#"{"a":2,"b":40}"#),
        anthropic::tool_call("c3", "mcp__everything__get-tiny-image", "{}"),
        anthropic::tool_call("c4", "mcp_list_resources", r#"{"server":"everything"}"#),
        anthropic::tool_call(
            "c5",
            "mcp_read_resource",
            r#"{"server":"everything","uri":"demo://resource/static/document/features.md"}"#,
        ),
        anthropic::text("done"),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "done\n", "{run:?}");
    let requests = model.requests();
    assert_eq!(requests.len(), 6, "{run:?}");

    // Listed with their schemas.
    let first = &requests[0].body;
    let tools = first["tools"].as_array().unwrap();
    let sum = tools
        .iter()
        .find(|t| t["name"] == "mcp__everything__get-sum")
        .unwrap_or_else(|| panic!("no get-sum in {:?}", tool_names(first)));
    assert_eq!(sum["input_schema"]["properties"]["a"]["type"], "number");
    assert_eq!(sum["description"], "Returns the sum of two numbers");
    assert!(tool_names(first).contains(&"mcp_read_resource".to_owned()));

    let echo = last_results(&requests[1].body);
    assert_eq!(echo[0]["tool_use_id"], "c1");
    assert!(echo[0].to_string().contains("Echo: hello mcp"), "{echo:?}");
    assert!(
        last_results(&requests[2].body)[0]
            .to_string()
            .contains("42"),
        "{:?}",
        last_results(&requests[2].body)
    );
    let image = last_results(&requests[3].body);
    let blocks = image[0]["content"].as_array().unwrap();
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "image" && b["source"]["media_type"] == "image/png"),
        "{image:?}"
    );
    let listed = last_results(&requests[4].body)[0].to_string();
    assert!(
        listed.contains("demo://resource/static/document/features.md"),
        "{listed}"
    );
    let read = last_results(&requests[5].body)[0].to_string();
    assert!(
        read.contains("[resource demo://resource/static/document/features.md]"),
        "{read}"
    );
    // The server's stderr is in its log, with the negotiated version.
    let log = w.log("mcp:everything");
    assert!(log.contains("initialized: MCP 2025-11-25"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_becomes_tool_progress_and_the_tool_timeout_cancels_the_call() {
    let w = World::new();
    // The same server twice: one with the default budget, which the short
    // operation never nears however loaded the machine, and one whose
    // budget the endless operation must run out of.
    let entry = json!({"command": "node", "args": [everything(), "stdio"]});
    let mut strict = entry.clone();
    strict["tool_timeout_sec"] = json!(2);
    write_user_config(
        &w,
        json!({"mcpServers": {"everything": entry, "strict": strict}}),
    );
    let model = MockModel::start([
        openai::tool_call(
            "p1",
            "mcp__everything__trigger-long-running-operation",
            r#"{"duration":2,"steps":4}"#,
        ),
        openai::tool_call(
            "p2",
            "mcp__strict__trigger-long-running-operation",
            r#"{"duration":600,"steps":600}"#,
        ),
        openai::text("ok"),
    ])
    .await;
    let mut cmd = w.against(&model, "openai", &["--json", "--no-session", "run it"]);
    cmd.env("ZOT_LOG", "debug");
    let run: Run = cmd.output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    let progress: Vec<&Event> = evs
        .iter()
        .filter(|e| matches!(e, Event::ToolProgress { id, .. } if id == "p1"))
        .collect();
    let text: String = progress
        .iter()
        .filter_map(|e| match e {
            Event::ToolProgress { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // Steps before the last come well before the result (the last one may
    // race it, since rmcp hands notifications and replies over separately).
    assert!(text.contains("progress 1/4"), "{progress:?}");
    let requests = model.requests();
    let second = requests[1].body.to_string();
    assert!(
        second.contains("Long running operation completed"),
        "{second}"
    );
    let third = requests[2].body.to_string();
    assert!(
        third.contains("timed out after 2 s (tool_timeout_sec)"),
        "{third}"
    );
    // The server was told to stop working on it.
    let log = std::fs::read_to_string(w.home.join("logs").join("zot.log")).unwrap_or_default();
    assert!(
        log.contains("notifications/cancelled") && log.contains("tool_timeout_sec elapsed"),
        "no cancellation in zot.log"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_runs_as_a_slash_command_and_elicitation_is_declined_headless() {
    let w = World::new();
    stdio_server(&w, json!({}));
    let model = MockModel::start([
        anthropic::text("sunny"),
        anthropic::tool_call("e1", "mcp__everything__trigger-elicitation-request", "{}"),
        anthropic::text("fine"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &["-p", "--no-session", "/mcp__everything__args-prompt Paris"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let asked = model.requests()[0].body["messages"].to_string();
    assert!(asked.contains("What's weather in Paris?"), "{asked}");

    let run = zot(
        &w,
        &model,
        "anthropic",
        &["-p", "--no-session", "/mcp__everything__args-prompt"],
    );
    assert_ne!(run.stderr.find("needs city"), None, "{run:?}");

    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "ask me"]);
    assert_eq!(run.code, 0, "{run:?}");
    let answered = last_results(&model.requests()[2].body)[0].to_string();
    assert!(answered.contains("declined"), "{answered}");
}

const GUARD: &str = r#"
handshake(NAME)
emit({"type":"subscribe","intercept":["tool_call"]})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "event_intercept":
        reply = {"type":"event_intercept_response","id":msg["id"]}
        if msg.get("tool_name") == "mcp__everything__echo":
            reply.update({"block": True, "reason": "no echoes here"})
        emit(reply)
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_guard_extension_blocks_an_mcp_tool_and_plan_mode_offers_only_read_only_ones() {
    let w = World::new();
    stdio_server(&w, json!({}));
    let guard = w.py_ext("guard", GUARD);
    let model = MockModel::start([
        anthropic::tool_call("g1", "mcp__everything__echo", r#"{"message":"x"}"#),
        anthropic::text("blocked"),
        anthropic::text("planned"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &[
            "-p",
            "--no-session",
            "--ext",
            guard.to_str().unwrap(),
            "echo",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let result = &last_results(&model.requests()[1].body)[0];
    assert_eq!(result["is_error"], true, "{result}");
    assert!(result.to_string().contains("no echoes here"), "{result}");

    let run = zot(
        &w,
        &model,
        "anthropic",
        &["--plan", "-p", "--no-session", "plan"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let planned = tool_names(&model.requests()[2].body);
    assert!(
        planned.contains(&"mcp__everything__echo".to_owned()),
        "{planned:?}"
    );
    // Only the tools the pinned server annotates `readOnlyHint: true`.
    const READ_ONLY: &[&str] = &[
        "echo",
        "get-annotated-message",
        "get-env",
        "get-resource-links",
        "get-resource-reference",
        "get-roots-list",
        "get-structured-content",
        "get-sum",
        "get-tiny-image",
        "trigger-long-running-operation",
    ];
    for tool in planned
        .iter()
        .filter_map(|t| t.strip_prefix("mcp__everything__"))
    {
        assert!(READ_ONLY.contains(&tool), "{tool} offered in plan mode");
    }
    for acting in [
        "mcp__everything__toggle-simulated-logging",
        "mcp__everything__gzip-file-as-resource",
    ] {
        assert!(
            !planned.contains(&acting.to_owned()),
            "{acting} in plan mode"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_project_mcp_json_runs_only_once_the_project_is_trusted() {
    let w = World::new();
    let config = json!({"mcpServers": {"local": {"command": "node", "args": [everything(), "stdio"], "enabled_tools": ["echo"]}}});
    std::fs::write(w.project.join(".mcp.json"), config.to_string()).unwrap();
    let listed = w.zot(&["ext", "list", "--json"]);
    let rows: Value = serde_json::from_str(&listed.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "mcp:local")
        .unwrap_or_else(|| panic!("{listed:?}"));
    assert_eq!(row["state"], "untrusted", "{row}");
    assert_eq!(row["scope"], "project");
    assert_eq!(row["protocol"], "mcp");

    let model = MockModel::start([anthropic::text("a"), anthropic::text("b")]).await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        !tool_names(&model.requests()[0].body)
            .iter()
            .any(|t| t.starts_with("mcp__")),
        "an untrusted .mcp.json ran"
    );

    let trusted = w.zot(&["trust"]);
    assert_eq!(trusted.code, 0, "{trusted:?}");
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    let tools: Vec<String> = tool_names(&model.requests()[1].body)
        .into_iter()
        .filter(|t| t.starts_with("mcp__"))
        .collect();
    assert_eq!(tools, ["mcp__local__echo"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_command_and_a_silent_server_fail_clearly_and_zot_goes_on() {
    let w = World::new();
    write_user_config(
        &w,
        json!({"mcpServers": {
            "ghost": {"command": "/nonexistent/mcp-server-ghost"},
            "mute": {"command": "sleep", "args": ["600"], "startup_timeout_sec": 1},
            "broken": {"command": "${ZOT_TEST_UNSET_VARIABLE}"},
        }}),
    );
    let model = MockModel::start([openai::text("still here")]).await;
    let run = zot(&w, &model, "openai", &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "still here\n");
    assert!(
        run.stderr.contains("mcp:ghost") && run.stderr.contains("/nonexistent/mcp-server-ghost"),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("mcp:mute") && run.stderr.contains("no answer to initialize within 1s"),
        "{run:?}"
    );
    let doctor = w.zot(&["ext", "doctor", "--json"]);
    let doc: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let broken = doc["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["error"].to_string().contains("ZOT_TEST_UNSET_VARIABLE"))
        .unwrap_or_else(|| panic!("{doctor:?}"));
    assert_eq!(broken["state"], "invalid_manifest");
}

#[tokio::test(flavor = "multi_thread")]
async fn ext_commands_take_mcp_names() {
    let w = World::new();
    stdio_server(&w, json!({}));
    let doctor = w.zot(&["ext", "doctor"]);
    assert_eq!(doctor.code, 0, "{doctor:?}");
    assert!(
        doctor.stdout.contains("mcp protocol: 2025-11-25"),
        "{doctor:?}"
    );
    assert!(doctor.stdout.contains("/mcp__everything__simple-prompt"));
    assert!(doctor.stdout.contains("demo://resource/static/document/"));

    let off = w.zot(&["ext", "disable", "mcp:everything"]);
    assert_eq!(off.code, 0, "{off:?}");
    let listed = w.zot(&["ext", "list"]);
    assert!(
        listed
            .stdout
            .lines()
            .any(|l| l.contains("mcp:everything") && l.contains("disabled")),
        "{listed:?}"
    );
    let on = w.zot(&["ext", "enable", "mcp:everything"]);
    assert_eq!(on.code, 0, "{on:?}");
    let logs = w.zot(&["ext", "logs", "mcp:everything"]);
    assert!(logs.stdout.contains("initialized: MCP"), "{logs:?}");
    let removed = w.zot(&["ext", "remove", "mcp:everything", "--yes"]);
    assert_ne!(removed.code, 0);
    assert!(
        removed.stderr.contains("zot mcp remove everything"),
        "{removed:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_over_streamable_http_and_legacy_sse() {
    let mut http = EverythingServer::start("streamableHttp").unwrap();
    let sse = EverythingServer::start("sse").unwrap();
    let w = World::new();
    write_user_config(
        &w,
        json!({"mcpServers": {
            "web": {"type": "http", "url": http.url("/mcp"), "headers": {"X-Test": "${ZOT_TEST_HEADER:-fallback}"}},
            "old": {"type": "sse", "url": sse.url("/sse")},
        }}),
    );
    let model = MockModel::start([
        anthropic::tool_call("h1", "mcp__web__echo", r#"{"message":"over http"}"#),
        anthropic::tool_call("s1", "mcp__old__echo", r#"{"message":"over sse"}"#),
        anthropic::text("done"),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let requests = model.requests();
    let tools = tool_names(&requests[0].body);
    assert!(tools.contains(&"mcp__web__get-sum".to_owned()), "{tools:?}");
    assert!(tools.contains(&"mcp__old__get-sum".to_owned()), "{tools:?}");
    let echo = last_results(&requests[1].body)[0].to_string();
    assert!(echo.contains("Echo: over http"), "{echo}");
    let echo = last_results(&requests[2].body)[0].to_string();
    assert!(echo.contains("Echo: over sse"), "{echo}");
    let log = w.log("mcp:web");
    assert!(log.contains("initialized: MCP 2025-11-25"), "{log}");
    let log = w.log("mcp:old");
    assert!(log.contains("initialized: MCP"), "{log}");
    // zot ended its Streamable HTTP session with a DELETE on the way out.
    assert!(
        http.wait_for_line(STEP, |l| l.contains("Received session termination request")),
        "{:?}",
        http.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aborted_call_sends_cancelled_to_the_server_and_zot_goes_on() {
    let w = World::new();
    // The reference server, unmodified, behind `tee`: what zot writes to its
    // stdin is kept in a transcript the test reads.
    let transcript = w.scratch.join("to-server.jsonl");
    write_user_config(
        &w,
        json!({"mcpServers": {"everything": {
            "command": "sh",
            "args": ["-c", "tee -a \"$0\" | exec node \"$1\" stdio", transcript, everything()],
        }}}),
    );
    let model = MockModel::start([
        anthropic::tool_call(
            "long",
            "mcp__everything__trigger-long-running-operation",
            r#"{"duration":600,"steps":600}"#,
        ),
        anthropic::tool_call("e1", "mcp__everything__echo", r#"{"message":"still here"}"#),
        anthropic::text("done"),
    ])
    .await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"prompt","message":"run the slow one"}"#);
    let progress = rpc.until_event_within(
        STEP,
        |e| matches!(e, Event::ToolProgress { id, .. } if id == "long"),
    );
    assert!(
        matches!(&progress, Event::ToolProgress { text, .. } if text.contains("/600")),
        "{progress:?}"
    );
    rpc.send(r#"{"type":"abort"}"#);
    assert_eq!(rpc.next_stop_within(STEP), StopReason::Aborted);
    rpc.until_event_within(STEP, |e| *e == Event::Done);

    // The server was told, naming the request it was working on.
    let call_id = eventually("the tools/call in the transcript", || {
        sent_to_server(&transcript)
            .into_iter()
            .find(|m| {
                m["method"] == "tools/call"
                    && m["params"]["name"] == "trigger-long-running-operation"
            })
            .map(|m| m["id"].clone())
    });
    let cancelled = eventually("notifications/cancelled in the transcript", || {
        sent_to_server(&transcript)
            .into_iter()
            .find(|m| m["method"] == "notifications/cancelled")
    });
    assert_eq!(cancelled["params"]["requestId"], call_id, "{cancelled}");
    assert!(
        cancelled["params"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("aborted")),
        "{cancelled}"
    );

    // zot goes on, with the same server.
    rpc.send(r#"{"type":"prompt","message":"again"}"#);
    let result = rpc.until_event_within(STEP, |e| is_result_of(e, "e1"));
    assert!(!is_error(&result), "{result:?}");
    assert!(
        result_text(&result).contains("Echo: still here"),
        "{result:?}"
    );
    rpc.until_event_within(STEP, |e| *e == Event::Done);
    assert_eq!(rpc.close(), 0);
}

/// Waits for an RPC event matching `pred`, keeping the message of every
/// `ext_warning` about extension `ext` that passes by.
fn wait_noting(
    rpc: &Rpc,
    ext: &str,
    warnings: &mut Vec<String>,
    mut pred: impl FnMut(&Event) -> bool,
) -> Event {
    rpc.until_event_within(STEP, |e| {
        if let Event::ExtWarning {
            extension: Some(extension),
            message,
        } = e
            && extension == ext
        {
            warnings.push(message.clone());
        }
        pred(e)
    })
}

/// Asks for the commands until `name` is among them (a server's prompts are
/// its commands, so they show it connected), noting warnings meanwhile.
fn wait_for_command(rpc: &mut Rpc, ext: &str, warnings: &mut Vec<String>, name: &str) {
    let deadline = Instant::now() + STEP;
    loop {
        rpc.send(r#"{"type":"get_commands"}"#);
        let listed = wait_noting(
            rpc,
            ext,
            warnings,
            |e| matches!(e, Event::Response(r) if r.command == "get_commands"),
        );
        let commands = match listed {
            Event::Response(Response {
                data: Some(Data::Commands { commands }),
                ..
            }) => commands,
            _ => Vec::new(),
        };
        if commands.iter().any(|c| c.name == name) {
            return;
        }
        assert!(Instant::now() < deadline, "no /{name} again: {commands:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_server_that_drops_is_reported_once_and_reconnected() {
    let first = EverythingServer::start("streamableHttp").unwrap();
    // zot keeps one URL; the servers behind it change.
    let proxy = zot_testkit::proxy::TcpProxy::start(first.port).await;
    let w = World::new();
    write_user_config(
        &w,
        json!({"mcpServers": {"web": {"type": "http", "url": proxy.url("/mcp")}}}),
    );
    let model = MockModel::start([
        anthropic::tool_call("a", "mcp__web__echo", r#"{"message":"before"}"#),
        anthropic::text("one"),
        anthropic::tool_call("b", "mcp__web__echo", r#"{"message":"after"}"#),
        anthropic::text("two"),
    ])
    .await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    let mut warnings = Vec::new();
    rpc.send(r#"{"type":"prompt","message":"first"}"#);
    let result = wait_noting(&rpc, "mcp:web", &mut warnings, |e| is_result_of(e, "a"));
    assert!(result_text(&result).contains("Echo: before"), "{result:?}");
    wait_noting(&rpc, "mcp:web", &mut warnings, |e| *e == Event::Done);

    // The server dies; zot notices by itself (its event stream cannot be
    // resumed) and says so.
    drop(first);
    let warning = wait_noting(
        &rpc,
        "mcp:web",
        &mut warnings,
        |e| matches!(e, Event::ExtWarning { extension: Some(x), .. } if x == "mcp:web"),
    );
    let Event::ExtWarning { message, .. } = warning else {
        unreachable!()
    };
    assert!(
        message.contains("mcp:web disconnected") && message.contains("until zot reconnects"),
        "{message}"
    );

    // Another server comes up behind the same URL: zot reconnects on its own.
    let second = EverythingServer::start("streamableHttp").unwrap();
    proxy.set_target(second.port);
    wait_for_command(
        &mut rpc,
        "mcp:web",
        &mut warnings,
        "mcp__web__simple-prompt",
    );
    rpc.send(r#"{"type":"prompt","message":"second"}"#);
    let result = wait_noting(&rpc, "mcp:web", &mut warnings, |e| is_result_of(e, "b"));
    assert!(!is_error(&result), "{result:?}");
    assert!(result_text(&result).contains("Echo: after"), "{result:?}");
    wait_noting(&rpc, "mcp:web", &mut warnings, |e| *e == Event::Done);
    assert_eq!(warnings.len(), 1, "reported once: {warnings:?}");
    let log = w.log("mcp:web");
    assert!(log.contains("the server dropped"), "{log}");
    assert_eq!(
        log.matches("initialized: MCP").count(),
        2,
        "one session per server: {log}"
    );
    assert_eq!(rpc.close(), 0);
}

/// A stdio MCP server that answers its first tool call and then exits;
/// each start appends a line to `$STARTS`.
const ONCE_SERVER: &str = r#"
import json, os, sys
with open(os.environ["STARTS"], "a") as f:
    f.write("start\n")
def send(id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, id = msg.get("method"), msg.get("id")
    if id is None:
        continue
    if method == "initialize":
        send(id, {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "once", "version": "1.0.0"}})
    elif method == "tools/list":
        send(id, {"tools": [{"name": "once", "description": "Answers, then the server exits",
                             "inputSchema": {"type": "object"}}]})
    elif method == "tools/call":
        send(id, {"content": [{"type": "text", "text": "answered"}]})
        sys.exit(3)
    else:
        send(id, {})
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_stdio_server_that_crashes_is_reported_once_and_restarted_on_reload() {
    let w = World::new();
    let script = w.scratch.join("once.py");
    std::fs::write(&script, ONCE_SERVER).unwrap();
    let starts = w.scratch.join("starts");
    write_user_config(
        &w,
        json!({"mcpServers": {"once": {"command": "python3", "args": [script], "env": {"STARTS": starts}}}}),
    );
    let model = MockModel::start([
        anthropic::tool_call("c1", "mcp__once__once", "{}"),
        anthropic::text("first"),
        anthropic::text("without it"),
        anthropic::tool_call("c2", "mcp__once__once", "{}"),
        anthropic::text("again"),
    ])
    .await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    let mut warnings = Vec::new();
    rpc.send(r#"{"type":"prompt","message":"call it"}"#);
    let result = wait_noting(&rpc, "mcp:once", &mut warnings, |e| is_result_of(e, "c1"));
    assert!(result_text(&result).contains("answered"), "{result:?}");
    wait_noting(&rpc, "mcp:once", &mut warnings, |e| *e == Event::Done);
    if warnings.is_empty() {
        wait_noting(
            &rpc,
            "mcp:once",
            &mut warnings,
            |e| matches!(e, Event::ExtWarning { extension: Some(x), .. } if x == "mcp:once"),
        );
    }
    assert!(
        warnings[0].contains("mcp:once exited (exit status: 3)")
            && warnings[0].contains("its commands and tools are gone"),
        "{warnings:?}"
    );

    // Not restarted behind the user's back: the next request goes without it.
    rpc.send(r#"{"type":"prompt","message":"and now?"}"#);
    wait_noting(&rpc, "mcp:once", &mut warnings, |e| *e == Event::Done);
    let tools = tool_names(&model.requests()[2].body);
    assert!(!tools.contains(&"mcp__once__once".to_owned()), "{tools:?}");
    assert_eq!(warnings.len(), 1, "reported once: {warnings:?}");

    // /reload-ext starts it again.
    rpc.send(r#"{"type":"reload_extensions"}"#);
    wait_noting(
        &rpc,
        "mcp:once",
        &mut warnings,
        |e| matches!(e, Event::Response(r) if r.command == "reload_extensions"),
    );
    rpc.send(r#"{"type":"prompt","message":"call it again"}"#);
    let result = wait_noting(&rpc, "mcp:once", &mut warnings, |e| is_result_of(e, "c2"));
    assert!(result_text(&result).contains("answered"), "{result:?}");
    wait_noting(&rpc, "mcp:once", &mut warnings, |e| *e == Event::Done);
    let started = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(started.lines().count(), 2, "{started}");
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_that_come_after_initialized_join_and_roots_are_the_project() {
    // The reference server registers its roots tool only after
    // `initialized`, for a client that declared roots, and says so with
    // `list_changed`; over legacy SSE that comes after zot has listed.
    let sse = EverythingServer::start("sse").unwrap();
    let w = World::new();
    write_user_config(
        &w,
        json!({"mcpServers": {"old": {"type": "sse", "url": sse.url("/sse")}}}),
    );
    let model = MockModel::start([]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    // Each model request shows the tools as they are then.
    let deadline = Instant::now() + STEP;
    loop {
        model.push(anthropic::text("noted"));
        rpc.send(r#"{"type":"prompt","message":"which tools now?"}"#);
        rpc.until_event_within(STEP, |e| *e == Event::Done);
        let requests = model.requests();
        let tools = tool_names(&requests.last().unwrap().body);
        if tools.contains(&"mcp__old__get-roots-list".to_owned()) {
            assert!(tools.contains(&"mcp__old__echo".to_owned()), "{tools:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the roots tool never joined: {tools:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    model.push(anthropic::tool_call("r1", "mcp__old__get-roots-list", "{}"));
    model.push(anthropic::text("done"));
    rpc.send(r#"{"type":"prompt","message":"what are my roots?"}"#);
    let result = rpc.until_event_within(STEP, |e| is_result_of(e, "r1"));
    let project = std::fs::canonicalize(&w.project).unwrap();
    let uri = format!("URI: file://{}", project.display());
    assert!(
        result_text(&result).contains(&uri),
        "{uri} not in {result:?}"
    );
    rpc.until_event_within(STEP, |e| *e == Event::Done);
    assert_eq!(rpc.close(), 0);
}

/// A stdio MCP server whose `tools/list` holds a malformed entry (its
/// schema a string), a tool whose schema is not JSON Schema, and a good one,
/// over two pages.
const MIXED_TOOLS_SERVER: &str = r#"
import json, sys
def send(id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, id = msg.get("method"), msg.get("id")
    if id is None:
        continue
    if method == "initialize":
        send(id, {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "mixed", "version": "1.0.0"}})
    elif method == "tools/list" and not (msg.get("params") or {}).get("cursor"):
        send(id, {"tools": [{"name": "broken", "inputSchema": "not a schema"},
                            {"name": "seven", "inputSchema": {"type": 7}},
                            {"name": "good", "inputSchema": {"type": "object"}}],
                  "nextCursor": "2"})
    elif method == "tools/list":
        send(id, {"tools": [{"name": "later", "inputSchema": {"type": "object"}}]})
    else:
        send(id, {})
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_tools_list_entry_costs_only_that_entry() {
    let w = World::new();
    let script = w.scratch.join("mixed.py");
    std::fs::write(&script, MIXED_TOOLS_SERVER).unwrap();
    write_user_config(
        &w,
        json!({"mcpServers": {"mixed": {"command": "python3", "args": [script]}}}),
    );
    let model = MockModel::start([anthropic::text("listed")]).await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "listed\n");
    let tools = tool_names(&model.requests()[0].body);
    assert!(
        tools.contains(&"mcp__mixed__good".to_owned())
            && tools.contains(&"mcp__mixed__later".to_owned()),
        "{tools:?}"
    );
    assert!(
        !tools
            .iter()
            .any(|t| t.contains("broken") || t.contains("seven")),
        "{tools:?}"
    );
    assert!(
        run.stderr
            .contains("tools/list entry 0 (\"broken\") dropped"),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("tool \"mcp__mixed__seven\" rejected: invalid input schema"),
        "{run:?}"
    );
}
