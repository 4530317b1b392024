//! MCP tools under `--no-yolo`, and `sampling/createMessage` from a server
//! whose entry lacks `"sampling": true`, through the built binary: the TUI
//! in tmux asks before each MCP tool call (a refused one never reaches the
//! server), and a server that asks for sampling anyway is refused without
//! anyone being asked and without a model call, in the TUI and headless.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use zot_testkit::npm::EverythingServer;
use zot_testkit::{MockModel, anthropic};

use super::mcp::{sent_to_server, zot};
use super::mcp_tui::last_result;
use super::support::World;
use super::tui::Tmux;

/// A stdio MCP server with one tool, `ask`, that sends
/// `sampling/createMessage` to the client whether or not the client
/// declared sampling, and answers the call with what the client replied.
/// Its log (first argument) records the capabilities zot declared, each
/// call and each reply to its sampling request.
const ASKING_SERVER: &str = r#"
import json, sys
LOG = sys.argv[1]
def log(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")
def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        log("capabilities " + json.dumps(msg["params"]["capabilities"], sort_keys=True))
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "asker", "version": "1.0.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [
            {"name": "ask", "description": "asks the client for a model call",
             "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        log("call ask")
        send({"jsonrpc": "2.0", "id": "sample-1", "method": "sampling/createMessage",
              "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "SAMPLE_ME"}}],
                         "maxTokens": 20}})
        for reply in sys.stdin:
            reply = json.loads(reply)
            if reply.get("id") == "sample-1" and "method" not in reply:
                break
        log("sampling reply " + json.dumps(reply, sort_keys=True))
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
            {"type": "text", "text": "the client said: " + json.dumps(reply.get("error") or reply.get("result"))}]}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// The start of the refusal zot sends a server that may not ask for
/// sampling (the rest quotes the option, escaped twice on its way back).
const NOT_ALLOWED: &str = "mcp:asker may not ask for sampling (its config has no";

/// How long the TUI may take to show a confirmation: the first prompt waits
/// for the reference server's cold `node` start on a loaded machine; the
/// backstop that turns a hang into a failure.
const SCREEN_WAIT: Duration = Duration::from_secs(60);

/// Waits until the screen shows the confirmation dialog together with
/// `text` (the call it asks about), and returns the screen.
fn wait_for_confirmation(tmux: &Tmux, text: &str) -> String {
    let deadline = Instant::now() + SCREEN_WAIT;
    loop {
        let screen = tmux.screen();
        if screen.contains("Run this tool?") && screen.contains(text) {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "waited for the confirmation of {text:?}; the screen is:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `$ZOT_HOME/mcp.json` with `asker` (the server above, no `sampling`
/// option) and, when `transcript` is given, the reference server as
/// `everything` behind `tee`, which keeps what zot writes to it there.
fn servers(w: &World, asker_log: &Path, transcript: Option<&Path>) {
    let script = w.scratch.join("asker.py");
    std::fs::write(&script, ASKING_SERVER).unwrap();
    let mut servers = json!({"asker": {"command": "python3", "args": [script, asker_log]}});
    if let Some(transcript) = transcript {
        servers["everything"] = json!({
            "command": "sh",
            "args": ["-c", "tee -a \"$0\" | exec node \"$1\" stdio", transcript,
                     EverythingServer::script().unwrap()],
        });
    }
    let config = json!({ "mcpServers": servers });
    std::fs::write(w.home.join("mcp.json"), config.to_string()).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn no_yolo_asks_before_mcp_tools_and_a_refused_call_never_reaches_the_server() {
    let w = World::new();
    let transcript = w.scratch.join("to-everything.jsonl");
    let asker_log = w.scratch.join("asker.log");
    servers(&w, &asker_log, Some(&transcript));
    let model = MockModel::start([
        anthropic::tool_call(
            "e1",
            "mcp__everything__echo",
            r#"{"message":"REFUSED_ECHO"}"#,
        ),
        anthropic::tool_call(
            "e2",
            "mcp__everything__echo",
            r#"{"message":"ALLOWED_ECHO"}"#,
        ),
        anthropic::tool_call("a1", "mcp__asker__ask", "{}"),
        anthropic::text("ALL_DONE"),
    ])
    .await;
    let tmux = Tmux::against(&w, "mcpconfirm", &model, &["--no-yolo"]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("use the servers");
    tmux.keys(&["Enter"]);

    // Refused: the server never hears of the call.
    let screen = wait_for_confirmation(&tmux, "REFUSED_ECHO");
    assert!(screen.contains("mcp__everything__echo"), "{screen}");
    tmux.type_text("n");
    // The refusal stops the turn; the next prompt goes on.
    tmux.wait_for("type what to do instead");
    tmux.type_text("go on");
    tmux.keys(&["Enter"]);
    // Allowed: it runs.
    wait_for_confirmation(&tmux, "ALLOWED_ECHO");
    tmux.type_text("y");
    // The asking server's call is confirmed like any other; its sampling
    // request is then refused without a question, since its entry has no
    // "sampling": true.
    wait_for_confirmation(&tmux, "mcp__asker__ask");
    tmux.type_text("y");
    let screen = tmux.wait_for("ALL_DONE");
    assert!(!screen.contains("asks to send"), "{screen}");

    let requests = model.requests();
    assert_eq!(requests.len(), 4, "no model call for the sampling request");
    let refused = last_result(&requests[1].body);
    assert!(refused.contains("tool call refused by user"), "{refused}");
    let allowed = last_result(&requests[2].body);
    assert!(allowed.contains("Echo: ALLOWED_ECHO"), "{allowed}");
    let asked = last_result(&requests[3].body);
    assert!(asked.contains(NOT_ALLOWED), "{asked}");

    let calls: Vec<String> = sent_to_server(&transcript)
        .into_iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| m["params"]["arguments"]["message"].to_string())
        .collect();
    assert_eq!(calls, [r#""ALLOWED_ECHO""#], "calls the server saw");
    let log = std::fs::read_to_string(&asker_log).unwrap();
    assert_eq!(log.matches("call ask").count(), 1, "{log}");
    assert!(!log.contains("\"sampling\""), "declared sampling: {log}");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_from_a_server_without_the_option_is_refused_headless() {
    let w = World::new();
    let asker_log = w.scratch.join("asker.log");
    servers(&w, &asker_log, None);
    let model = MockModel::start([
        anthropic::tool_call("a1", "mcp__asker__ask", "{}"),
        anthropic::text("done"),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "ask"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "done\n", "{run:?}");
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "no model call for the sampling request");
    let asked = last_result(&requests[1].body);
    assert!(asked.contains(NOT_ALLOWED), "{asked}");
    let log = std::fs::read_to_string(&asker_log).unwrap();
    assert!(!log.contains("\"sampling\""), "declared sampling: {log}");
    assert!(log.contains("sampling reply"), "{log}");
    let zot_log = w.log("mcp:asker");
    assert!(
        zot_log.contains("sampling/createMessage refused"),
        "{zot_log}"
    );
}
