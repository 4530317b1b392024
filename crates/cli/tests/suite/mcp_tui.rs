//! MCP servers in the TUI, through the built binary in tmux: start-up in
//! the background (a prompt waits for a starting server, Esc skips the
//! wait), `/mcp` (states, tools, off and on for the session), elicitation
//! forms and sampling against the pinned reference server.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use zot_testkit::npm::EverythingServer;
use zot_testkit::{MockModel, anthropic};

use super::rpc::Rpc;
use super::support::{Event, World, typed_events};
use super::tui::Tmux;

/// A minimal MCP server over stdio that answers `initialize` only once the
/// file named by its first argument exists, so the test decides when it
/// is up. One tool, `ping`.
const GATED_SERVER: &str = r#"#!/usr/bin/env python3
import json, os, sys, time
gate = sys.argv[1]
def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        deadline = time.time() + 120
        while not os.path.exists(gate) and time.time() < deadline:
            time.sleep(0.05)
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "gated", "version": "1.0.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [
            {"name": "ping", "description": "answers pong", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "pong"}]}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .map(str::to_owned)
        .collect()
}

fn gated(w: &World) -> PathBuf {
    let script = w.scratch.join("gated.py");
    std::fs::write(&script, GATED_SERVER).unwrap();
    let gate = w.scratch.join("gate");
    let config = json!({"mcpServers": {
        "slow": {
            "command": "python3",
            "args": [script, gate],
            "startup_timeout_sec": 120,
        },
        "ghost": {"command": "/nonexistent/zot-test-ghost-server"},
    }});
    std::fs::write(w.home.join("mcp.json"), config.to_string()).unwrap();
    gate
}

fn open(path: &Path) {
    std::fs::write(path, "").unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_opens_while_a_server_starts_and_mcp_turns_it_off_and_on() {
    let w = World::new();
    let gate = gated(&w);
    let model = MockModel::start([
        anthropic::text("ANSWER_ONE"),
        anthropic::text("ANSWER_TWO"),
        anthropic::text("ANSWER_THREE"),
        anthropic::text("ANSWER_FOUR"),
    ])
    .await;
    let tmux = Tmux::against(&w, "mcpstart", &model, &[]);
    // The TUI is up while the server still has not answered initialize.
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    // A server that cannot start is reported when it fails, on the screen.
    tmux.wait_for("/nonexistent/zot-test-ghost-server");
    tmux.type_text("/mcp");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("mcp:slow  starting");
    assert!(screen.contains("mcp:ghost  failed: spawn"), "{screen}");

    // A prompt waits for it; Esc sends it at once, without its tools.
    tmux.type_text("first");
    tmux.keys(&["Enter"]);
    tmux.wait_for("waiting for mcp:slow");
    assert!(model.requests().is_empty());
    tmux.keys(&["Escape"]);
    tmux.wait_for("ANSWER_ONE");
    assert!(
        !tool_names(&model.requests()[0].body).contains(&"mcp__slow__ping".to_owned()),
        "the skipped wait still had the tool"
    );

    // The next prompt waits until the server is up, then has its tool.
    tmux.type_text("second");
    tmux.keys(&["Enter"]);
    tmux.wait_for("waiting for mcp:slow");
    assert_eq!(model.requests().len(), 1);
    open(&gate);
    tmux.wait_for("ANSWER_TWO");
    let tools = tool_names(&model.requests()[1].body);
    assert!(tools.contains(&"mcp__slow__ping".to_owned()), "{tools:?}");

    // /mcp shows it running with its tools, then turns it off and on.
    tmux.type_text("/mcp");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("mcp:slow  running, MCP 2025-06-18, 1 tools");
    assert!(screen.contains("    ping"), "{screen}");
    // The popup completes `/mcp off` with the running server; Enter takes it.
    tmux.type_text("/mcp off");
    tmux.wait_for("/mcp off slow");
    tmux.keys(&["Enter"]);
    tmux.wait_for("mcp:slow is off for this session");
    tmux.type_text("third");
    tmux.keys(&["Enter"]);
    tmux.wait_for("ANSWER_THREE");
    let tools = tool_names(&model.requests()[2].body);
    assert!(!tools.iter().any(|t| t.starts_with("mcp__")), "{tools:?}");
    tmux.type_text("/mcp");
    tmux.keys(&["Enter"]);
    tmux.wait_for("mcp:slow  off for this session");
    // Now stopped, it is offered to `/mcp on` (as the failed ghost is).
    tmux.type_text("/mcp on");
    let screen = tmux.wait_for("/mcp on slow");
    assert!(screen.contains("/mcp on ghost"), "{screen}");
    tmux.type_text(" s");
    tmux.keys(&["Enter"]);
    tmux.wait_for("mcp:slow is on");
    tmux.type_text("fourth");
    tmux.keys(&["Enter"]);
    tmux.wait_for("ANSWER_FOUR");
    let tools = tool_names(&model.requests()[3].body);
    assert!(tools.contains(&"mcp__slow__ping".to_owned()), "{tools:?}");
}

/// `$ZOT_HOME/mcp.json` with the reference server over stdio, `extra`
/// merged into its entry.
fn everything(w: &World, extra: Value) {
    let script = EverythingServer::script().unwrap();
    let mut entry = json!({"command": "node", "args": [script, "stdio"]});
    if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
        entry.extend(extra.clone());
    }
    let config = json!({"mcpServers": {"everything": entry}});
    std::fs::write(w.home.join("mcp.json"), config.to_string()).unwrap();
}

/// The tool result the last message of an Anthropic request carries, as text.
pub(super) fn last_result(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn elicitations_are_forms_in_the_tui_and_urls_open_after_the_user_agrees() {
    let w = World::new();
    everything(&w, json!({}));
    let elicit = "mcp__everything__trigger-elicitation-request";
    let model = MockModel::start([
        anthropic::tool_call("e1", elicit, "{}"),
        anthropic::text("FORM_SENT"),
        anthropic::tool_call("e2", elicit, "{}"),
        anthropic::text("FORM_DECLINED"),
        anthropic::tool_call("e3", elicit, "{}"),
        anthropic::text("FORM_CANCELLED"),
        anthropic::tool_call(
            "u1",
            "mcp__everything__trigger-url-elicitation",
            r#"{"url":"https://example.test/consent?step=1","message":"Finish in the browser"}"#,
        ),
        anthropic::text("URL_DONE"),
    ])
    .await;
    let opened = w.scratch.join("opened.txt");
    let browser = w.scratch.join("browser.sh");
    zot_testkit::write_exec(
        &browser,
        &format!("#!/bin/sh\nprintf '%s' \"$1\" > {}\n", opened.display()),
    );
    let env = [("BROWSER", browser.display().to_string())];
    let tmux = Tmux::against_with(&w, "mcpform", &model, &[], &env);
    tmux.wait_for("anthropic/claude-sonnet-5-5");

    // The form: required fields first, each at its default.
    tmux.type_text("fill it in");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("[ Accept ]");
    for shown in [
        "Please provide inputs for the following fields:",
        "String*: []",
        "Integer: [42]",
        "‹ Monica ›",
        "‹ Superman ›",
        "‹ Cats ›",
        "[x] Guitar",
        "Your full, legal name",
    ] {
        assert!(screen.contains(shown), "no {shown:?} in\n{screen}");
    }
    // Accept with the required name empty: the form stays and says so.
    tmux.keys(&["Up", "Up", "Up"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("String is required");
    tmux.type_text("Ada Lovelace");
    // Down to the boolean (the server's order after the required name),
    // Space sets it; two more down to the email, which gets no address.
    tmux.keys(&["Down", "Space"]);
    tmux.wait_for("‹ yes ›");
    tmux.keys(&["Down", "Down"]);
    tmux.type_text("not-an-email");
    // Up past the first field to Accept: the schema's `format` refuses it,
    // on that field.
    tmux.keys(&["Up", "Up", "Up", "Up", "Up", "Up"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for(r#"String with email format: "not-an-email" is not a "email""#);
    tmux.keys(&["BSpace"; 12]);
    tmux.type_text("ada@example.com");
    tmux.keys(&["Up", "Up", "Up", "Up", "Up", "Up"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("FORM_SENT");
    let result = last_result(&model.requests()[1].body);
    for sent in [
        "Name: Ada Lovelace",
        "Email: ada@example.com",
        "Agreed to terms: true",
        "Favorite Integer: 42",
        "fish-1",
        "Monica",
    ] {
        assert!(result.contains(sent), "no {sent:?} in {result}");
    }

    // Decline, then cancel with Esc.
    tmux.type_text("again");
    tmux.keys(&["Enter"]);
    tmux.wait_for("[ Decline ]");
    tmux.keys(&["Up", "Up"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("FORM_DECLINED");
    let result = last_result(&model.requests()[3].body);
    assert!(result.contains("User declined"), "{result}");
    tmux.type_text("once more");
    tmux.keys(&["Enter"]);
    tmux.wait_for("[ Cancel ]");
    tmux.keys(&["Escape"]);
    tmux.wait_for("FORM_CANCELLED");
    let result = last_result(&model.requests()[5].body);
    assert!(result.contains("User cancelled"), "{result}");

    // A URL elicitation: asked first, opened with $BROWSER once agreed.
    tmux.type_text("open it");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Finish in the browser");
    assert!(
        screen.contains("mcp:everything asks you to open")
            && screen.contains("https://example.test/consent?step=1"),
        "{screen}"
    );
    assert!(!opened.exists(), "opened before the user agreed");
    tmux.keys(&["Enter"]);
    tmux.wait_for("URL_DONE");
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap_or_default(),
        "https://example.test/consent?step=1"
    );
    let result = last_result(&model.requests()[7].body);
    assert!(result.contains("accept"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_browser_an_agreed_url_elicitation_is_shown_whole() {
    let w = World::new();
    everything(&w, json!({}));
    // Longer than the 100-column screen: the note wraps instead of cutting it.
    let url = "https://example.test/consent?step=2&session=8c1f0e4d9a7b4c2e&return=https%3A%2F%2Fzot.example%2Fdone";
    let model = MockModel::start([
        anthropic::tool_call(
            "u1",
            "mcp__everything__trigger-url-elicitation",
            &json!({"url": url, "message": "Finish in the browser"}).to_string(),
        ),
        anthropic::text("URL_DONE"),
    ])
    .await;
    // An empty $BROWSER is no browser, whatever the test's environment holds.
    let tmux = Tmux::against_with(&w, "mcpurl", &model, &[], &[("BROWSER", String::new())]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("open it");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Finish in the browser");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("URL_DONE");
    let squeezed: String = screen.chars().filter(|c| !c.is_whitespace()).collect();
    let note = format!("[mcp:everything]mcp:everythingasksyoutoopen{url}");
    assert!(squeezed.contains(&note), "no whole URL note in\n{screen}");
    let result = last_result(&model.requests()[1].body);
    assert!(result.contains("accept"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_asks_the_user_then_calls_the_current_model() {
    let w = World::new();
    everything(&w, json!({"sampling": true}));
    let sample = "mcp__everything__trigger-sampling-request";
    let model = MockModel::start([
        anthropic::tool_call("s1", sample, r#"{"prompt":"name a colour","maxTokens":50}"#),
        anthropic::text("SAMPLED_BY_ZOT"),
        anthropic::text("SAMPLING_DONE"),
        anthropic::tool_call("s2", sample, r#"{"prompt":"again","maxTokens":50}"#),
        anthropic::text("REFUSED_DONE"),
    ])
    .await;
    let tmux = Tmux::against(&w, "mcpsample", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("sample something");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("asks to send 1 message(s)");
    assert!(screen.contains("name a colour"), "{screen}");
    assert_eq!(model.requests().len(), 1, "sent before the user agreed");
    tmux.keys(&["Enter"]);
    tmux.wait_for("SAMPLING_DONE");
    let requests = model.requests();
    // The server's request went to the model as it was, without tools.
    let sampled = &requests[1].body;
    assert_eq!(
        sampled["system"], "You are a helpful test server.",
        "{sampled}"
    );
    assert!(
        sampled["messages"].to_string().contains("name a colour"),
        "{sampled}"
    );
    assert_eq!(sampled["max_tokens"], 50);
    assert!(tool_names(sampled).is_empty(), "{sampled}");
    let result = last_result(&requests[2].body);
    assert!(result.contains("SAMPLED_BY_ZOT"), "{result}");

    // Refused: the server hears an error, the model is not called for it.
    tmux.type_text("sample again");
    tmux.keys(&["Enter"]);
    tmux.wait_for("asks to send 1 message(s)");
    tmux.keys(&["Escape"]);
    tmux.wait_for("REFUSED_DONE");
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    let result = last_result(&requests[4].body);
    assert!(result.contains("the user refused"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_is_refused_headless_and_not_offered_without_the_option() {
    let w = World::new();
    everything(&w, json!({"sampling": true}));
    let model = MockModel::start([
        anthropic::tool_call(
            "s1",
            "mcp__everything__trigger-sampling-request",
            r#"{"prompt":"hi"}"#,
        ),
        anthropic::text("done"),
        anthropic::text("plain"),
        anthropic::tool_call(
            "r1",
            "mcp__everything__trigger-sampling-request",
            r#"{"prompt":"hi"}"#,
        ),
        anthropic::tool_call("r2", "mcp__everything__trigger-elicitation-request", "{}"),
        anthropic::text("rpc done"),
    ])
    .await;
    let run: super::support::Run = w
        .against(&model, "anthropic", &["--json", "--no-session", "go"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        typed_events(&run)
            .iter()
            .any(|e| matches!(e, Event::ToolResult { .. })),
        "{run:?}"
    );
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        2,
        "the model was called for the sampling request"
    );
    let result = last_result(&requests[1].body);
    assert!(result.contains("nobody can be asked here"), "{result}");

    // Without "sampling": true zot does not declare the capability, so the
    // server does not offer its sampling tool.
    everything(&w, json!({}));
    let run: super::support::Run = w
        .against(&model, "anthropic", &["-p", "--no-session", "hi"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let tools = tool_names(&model.requests()[2].body);
    // The elicitation tool, registered for a declared capability the same
    // way, is there.
    assert!(
        tools.contains(&"mcp__everything__trigger-elicitation-request".to_owned()),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"mcp__everything__trigger-sampling-request".to_owned()),
        "{tools:?}"
    );

    // RPC: nobody to ask either; sampling is refused, an elicitation declined.
    everything(&w, json!({"sampling": true}));
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["--no-session"], None);
    rpc.send(r#"{"type":"prompt","message":"both"}"#);
    rpc.done();
    assert_eq!(rpc.close(), 0);
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    let refused = last_result(&requests[4].body);
    assert!(refused.contains("nobody can be asked here"), "{refused}");
    let declined = last_result(&requests[5].body);
    assert!(declined.contains("User declined"), "{declined}");
}
