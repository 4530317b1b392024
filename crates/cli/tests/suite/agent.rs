//! The agent through the built binary in print and JSON modes, against the
//! loopback model server (zot-testkit), with real extensions.

use std::path::Path;

use serde_json::{Value, json};
use zot_testkit::{MockModel, anthropic, openai, status};

use super::support::{
    Block, Event, Run, StopReason, World, first, kind, on_terminal, stops, text,
    turns_filling_the_context, typed_events,
};

/// Runs `zot` against `model` as `provider` with `args`, without a session unless asked.
fn zot(w: &World, model: &MockModel, provider: &str, args: &[&str]) -> Run {
    w.against(model, provider, args).output().unwrap().into()
}

fn with_ext<'a>(args: &[&'a str], exts: &'a [&'a Path]) -> Vec<&'a str> {
    let mut all: Vec<&str> = args.to_vec();
    for dir in exts {
        all.push("--ext");
        all.push(dir.to_str().unwrap());
    }
    all
}

fn tool_names(body: &Value, provider: &str) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| match provider {
                    "openai" => t["function"]["name"].as_str().unwrap().to_owned(),
                    _ => t["name"].as_str().unwrap().to_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A model that goes silent mid-answer (a stalled server or connection)
/// ends the prompt with an error once `ZOT_IDLE_TIMEOUT` has passed, rather
/// than holding it for good; the connection is given up.
#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_goes_silent_is_given_up_after_the_idle_timeout() {
    let w = World::new();
    let model = MockModel::start([anthropic::Script::new()
        .text("half an ans")
        .build_partial()
        .stall()])
    .await;
    // `zot -p go` against `url` with `ZOT_IDLE_TIMEOUT=timeout`: it fails.
    let run = |url: &str, timeout: &str| -> Run {
        let run: Run = w
            .cmd(&["-p", "--no-session", "--provider", "anthropic"])
            .args(["--api-key", "k", "--base-url", url, "go"])
            .env("ZOT_IDLE_TIMEOUT", timeout)
            .output()
            .unwrap()
            .into();
        assert_eq!(run.code, 1, "{run:?}");
        run
    };
    let said = run(&model.url(), "0.5");
    assert!(
        said.stderr.contains(
            "anthropic: stream broken: the server sent nothing for 0.5 s and was given up on (ZOT_IDLE_TIMEOUT sets how long to wait)"
        ),
        "{said:?}"
    );
    model.wait_hangups(1).await;

    // A server that takes the request and never answers: given up at once
    // after the timeout, not asked again (it would only sit as long again).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        let (socket, _) = silent.accept().unwrap();
        let mut buf = [0; 1];
        // Holds the connection until zot lets go of it.
        while std::io::Read::read(&mut &socket, &mut buf).is_ok_and(|n| n > 0) {}
        silent
    });
    let said = run(&url, "0.5");
    assert!(
        said.stderr.contains(&format!(
            "anthropic: no answer from {url}/v1/messages: the server sent nothing for 0.5 s"
        )),
        "{said:?}"
    );
    // zot has exited: a second request would be waiting to be accepted.
    let silent = held.join().unwrap();
    silent.set_nonblocking(true).unwrap();
    assert!(
        silent.accept().is_err(),
        "zot asked the silent server again"
    );

    let said = run(&model.url(), "soon");
    assert!(
        said.stderr
            .contains("ZOT_IDLE_TIMEOUT must be a number of seconds above 0, not \"soon\""),
        "{said:?}"
    );
}

/// Ctrl+C while the model answers: the turn is aborted, and the exit status
/// says so as shells do (130), so `zot -p … && git commit` stops there.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_ends_the_print_mode_with_the_interrupted_status() {
    use std::time::Duration;
    use zot_testkit::wait::eventually;
    let w = World::new();
    let stalled = anthropic::Script::new()
        .text("partial")
        .build_partial()
        .stall();
    let model = MockModel::start([stalled.clone(), stalled]).await;
    for mode in ["-p", "--json"] {
        let asked = model.requests().len() + 1;
        let child = w
            .against(&model, "anthropic", &[mode, "--no-session", "go"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        assert!(eventually(Duration::from_secs(10), || model.requests().len() == asked).await);
        let killed = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let run: Run = child.wait_with_output().unwrap().into();
        assert_eq!(run.code, 130, "{mode}: {run:?}");
        match mode {
            "-p" => assert!(run.stderr.contains("zot: aborted"), "{run:?}"),
            _ => assert!(run.stdout.contains(r#""stop":"aborted""#), "{run:?}"),
        }
    }
}

/// `zot -p … | head`: a reader that stops early ends zot quietly (the
/// answer was for it, and it has what it wanted), with no panic.
#[tokio::test(flavor = "multi_thread")]
async fn a_reader_that_stops_early_ends_the_print_mode_quietly() {
    use std::io::Read as _;
    use std::process::Stdio;
    let w = World::new();
    let long = "a line of the answer\n".repeat(20_000);
    let model = MockModel::start([anthropic::text(&long)]).await;
    let mut child = w
        .against(&model, "anthropic", &["-p", "--no-session", "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0; 10];
    stdout.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"a line of ");
    drop(stdout);
    let run: Run = child.wait_with_output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_answers_and_sends_a_proper_request() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("Hello there!")]).await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &["-p", "--no-session", "say", "hi"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Hello there!\n");
    let request = &model.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("test-key"));
    assert_eq!(request.body["model"], "claude-sonnet-5-5");
    assert_eq!(request.body["messages"][0]["content"][0]["text"], "say hi");
    let system = request.body["system"].to_string();
    // The default prompt tells the model which tools to prefer.
    for needle in [
        "You are zot",
        "grep, find and ls tools",
        "web_fetch",
        "todo_write",
    ] {
        assert!(system.contains(needle), "{needle} missing from {system}");
    }
    assert_eq!(
        tool_names(&request.body, "anthropic"),
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
            "task"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_from_stdin_and_no_credentials_error() {
    let w = World::new();
    let model = MockModel::start([openai::text("from stdin")]).await;
    let mut cmd = w.against(&model, "openai", &["-p", "--no-session"]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"question on stdin")
        .unwrap();
    let run: Run = child.wait_with_output().unwrap().into();
    assert_eq!(run.stdout, "from stdin\n", "{run:?}");
    assert_eq!(
        model.requests()[0].body["messages"][1]["content"],
        "question on stdin"
    );
    // Bytes that are not text: said to be stdin's.
    let mut child = w
        .against(&model, "openai", &["-p", "--no-session"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(b"\xff\xfe binary");
    let run: Run = child.wait_with_output().unwrap().into();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.starts_with(
            "zot: cannot read the prompt from stdin: stream did not contain valid UTF-8"
        ),
        "{run:?}"
    );
    assert_eq!(model.requests().len(), 1);

    let run = w.zot(&["-p", "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    for needle in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "--provider ollama"] {
        assert!(run.stderr.contains(needle), "{run:?}");
    }
    let run = w.zot(&["hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("interactive TUI needs a terminal"),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_loop_with_built_in_tools_both_providers() {
    for provider in ["anthropic", "openai"] {
        let w = World::new();
        let (call, done) = match provider {
            "anthropic" => (
                anthropic::tool_call(
                    "t1",
                    "bash",
                    r#"{"command":"echo made > out.txt && cat out.txt"}"#,
                ),
                anthropic::text("all done"),
            ),
            _ => (
                openai::tool_call(
                    "t1",
                    "bash",
                    r#"{"command":"echo made > out.txt && cat out.txt"}"#,
                ),
                openai::text("all done"),
            ),
        };
        let model = MockModel::start([call, done]).await;
        let run = zot(
            &w,
            &model,
            provider,
            &["--json", "--no-session", "make a file"],
        );
        assert_eq!(run.code, 0, "{provider}: {run:?}");
        assert_eq!(
            std::fs::read_to_string(w.project.join("out.txt")).unwrap(),
            "made\n"
        );
        let evs = typed_events(&run);
        let kinds: Vec<String> = evs.iter().map(kind).collect();
        let order = [
            "user_message",
            "turn_start",
            "assistant_message",
            "tool_call",
            "tool_result",
            "turn_end",
            "turn_start",
            "done",
        ];
        let mut at = 0;
        for kind in &kinds {
            if at < order.len() && *kind == order[at] {
                at += 1;
            }
        }
        assert_eq!(at, order.len(), "{provider}: event order {kinds:?}");
        let content = first!(evs, Event::ToolResult { content, .. } => content);
        assert!(text(&content[0]).contains("made"), "{content:?}");
        assert_eq!(stops(&evs), [StopReason::ToolUse, StopReason::EndTurn]);
        let second = &model.requests()[1].body;
        let text = second.to_string();
        assert!(
            text.contains("[exit 0]") && text.contains("made"),
            "{provider}: {text}"
        );
    }
}

const WEATHER: &str = r#"
handshake(NAME)
emit({"type":"register_tool","name":"weather","description":"Weather for a city.",
      "schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "tool_call":
        emit({"type":"tool_result","id":msg["id"],"content":[{"type":"text","text":msg["args"]["city"] + ": 16C, fog"}]})
    elif msg["type"] == "shutdown":
        break
"#;

#[tokio::test(flavor = "multi_thread")]
async fn extension_tool_schema_call_and_result_both_providers() {
    for provider in ["anthropic", "openai"] {
        let w = World::new();
        let ext = w.py_ext("weather", WEATHER);
        let (call, bad_call, done) = match provider {
            "anthropic" => (
                anthropic::tool_call("w1", "weather", r#"{"city":"Berlin"}"#),
                anthropic::tool_call("w2", "weather", r#"{"town":"Paris"}"#),
                anthropic::text("It is foggy."),
            ),
            _ => (
                openai::tool_call("w1", "weather", r#"{"city":"Berlin"}"#),
                openai::tool_call("w2", "weather", r#"{"town":"Paris"}"#),
                openai::text("It is foggy."),
            ),
        };
        let model = MockModel::start([call, bad_call, done]).await;
        let run = zot(
            &w,
            &model,
            provider,
            &with_ext(&["-p", "--no-session", "weather?"], &[&ext]),
        );
        assert_eq!(run.code, 0, "{provider}: {run:?}");
        assert_eq!(run.stdout, "It is foggy.\n");
        let requests = model.requests();
        let first = &requests[0].body;
        assert!(
            tool_names(first, provider).contains(&"weather".to_owned()),
            "{first}"
        );
        let weather = tool_names(first, provider)
            .iter()
            .position(|n| n == "weather")
            .unwrap();
        let schema = if provider == "openai" {
            first["tools"][weather]["function"]["parameters"].clone()
        } else {
            first["tools"][weather]["input_schema"].clone()
        };
        assert_eq!(schema["required"], json!(["city"]), "{provider}: {first}");
        assert!(
            requests[1].body.to_string().contains("Berlin: 16C, fog"),
            "{provider}"
        );
        // A schema violation is an error result the model sees; the extension never got it.
        let third = requests[2].body.to_string();
        assert!(
            third.contains("invalid arguments for weather"),
            "{provider}: {third}"
        );
    }
}

const GUARD: &str = r#"
handshake(NAME)
emit({"type":"subscribe","intercept":["tool_call"]})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "event_intercept":
        cmd = msg.get("tool_args", {}).get("command", "")
        reply = {"type":"event_intercept_response","id":msg["id"]}
        if "rm -rf" in cmd:
            reply.update({"block": True, "reason": "refused: dangerous"})
        elif cmd.startswith("echo original"):
            reply["modified_args"] = {"command": "echo rewritten > which.txt"}
        emit(reply)
"#;

#[tokio::test(flavor = "multi_thread")]
async fn guard_blocks_and_rewrites_while_the_transcript_keeps_the_original() {
    let w = World::new();
    let guard = w.py_ext("guard", GUARD);
    std::fs::write(w.project.join("precious.txt"), "keep me").unwrap();
    let model = MockModel::start([
        anthropic::tool_call("b1", "bash", r#"{"command":"rm -rf precious.txt"}"#),
        anthropic::tool_call("b2", "bash", r#"{"command":"echo original > which.txt"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(&["--json", "--no-session", "clean up"], &[&guard]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        w.project.join("precious.txt").exists(),
        "the guard did not block"
    );
    assert_eq!(
        std::fs::read_to_string(w.project.join("which.txt")).unwrap(),
        "rewritten\n"
    );
    let requests = model.requests();
    let blocked = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(blocked["content"][0]["is_error"], true, "{blocked}");
    assert!(
        blocked.to_string().contains("refused: dangerous"),
        "{blocked}"
    );
    // The transcript sent back keeps the original args of the rewritten call.
    let third = requests[2].body.to_string();
    assert!(third.contains("echo original > which.txt"), "{third}");
    let evs = typed_events(&run);
    let args = first!(evs, Event::ToolCall { id, args, .. } if id == "b2" => args);
    assert_eq!(args["command"], "echo original > which.txt");
}

const REDACT: &str = r#"
handshake(NAME)
emit({"type":"subscribe","intercept":["assistant_message","turn_start","before_agent_start"]})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] != "event_intercept":
        continue
    reply = {"type":"event_intercept_response","id":msg["id"]}
    if msg["event"] == "assistant_message":
        if "forbidden" in msg["text"]:
            reply.update({"block": True, "reason": "not for you"})
        else:
            reply["replace_text"] = msg["text"].replace("SECRET", "[redacted]")
    elif msg["event"] == "turn_start" and os.path.exists(os.path.join(os.environ["GATE_DIR"], "closed")):
        reply.update({"block": True, "reason": "outside business hours"})
    elif msg["event"] == "before_agent_start":
        reply["system_prompt"] = "REPLACED PROMPT for " + msg["model"]
    emit(reply)
"#;

#[tokio::test(flavor = "multi_thread")]
async fn assistant_text_replaced_and_blocked_turns_gated_prompt_replaced() {
    let w = World::new();
    let ext = w.py_ext("redact", REDACT);
    let model = MockModel::start([
        anthropic::text("the key is SECRET"),
        anthropic::text("forbidden words"),
    ])
    .await;
    // zot with the redact extension, its gate directory set.
    let gated = |args: &[&str]| -> Run {
        let mut cmd = w.against(&model, "anthropic", &["--ext", ext.to_str().unwrap()]);
        cmd.env("GATE_DIR", &w.scratch).args(args);
        cmd.output().unwrap().into()
    };
    let run = gated(&["--json", "--no-session", "tell me"]);
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    let shown = first!(evs, Event::AssistantMessage { content, .. } => content);
    assert_eq!(text(&shown[0]), "the key is [redacted]");
    let request = &model.requests()[0].body;
    assert!(
        request["system"]
            .to_string()
            .contains("REPLACED PROMPT for claude-sonnet-5-5"),
        "{request}"
    );

    // Blocked: nothing on stdout in print mode, the reason on stderr.
    let run = gated(&["-p", "--no-session", "again"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("not for you"), "{run:?}");

    // turn_start gate closed: no model call at all, the reason reaches the user.
    std::fs::write(w.scratch.join("closed"), "").unwrap();
    let before = model.requests().len();
    let run = gated(&["--json", "--no-session", "now"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(model.requests().len(), before);
    let evs = typed_events(&run);
    let (stop, error) = first!(evs, Event::TurnEnd { stop, error } => (stop, error));
    assert_eq!(*stop, StopReason::Error);
    assert!(
        error.as_deref().unwrap().contains("outside business hours"),
        "{error:?}"
    );
}

const LOADER: &str = r#"
handshake(NAME)
emit({"type":"register_tool","name":"load_weather","schema":{"type":"object"}})
emit({"type":"register_tool","name":"weather","schema":{"type":"object"},"deferred":True})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "tool_call":
        emit({"type":"tool_result","id":msg["id"],"content":[{"type":"text","text":"loaded"}],
              "activate_tools":["weather"]})
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_deferred_tool_appears_after_activation() {
    let w = World::new();
    let ext = w.py_ext("loader", LOADER);
    let model = MockModel::start([
        openai::tool_call("l1", "load_weather", "{}"),
        openai::text("ready"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        "openai",
        &with_ext(&["-p", "--no-session", "go"], &[&ext]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let requests = model.requests();
    assert!(!tool_names(&requests[0].body, "openai").contains(&"weather".to_owned()));
    assert!(tool_names(&requests[1].body, "openai").contains(&"weather".to_owned()));
}

const COMMANDS: &str = r#"
handshake(NAME)
emit({"type":"register_command","name":"Greet","description":"greet"})
emit({"type":"register_command","name":"show"})
emit({"type":"register_command","name":"ins"})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "command_invoked":
        if msg["name"] == "Greet":
            emit({"type":"command_response","id":msg["id"],"action":"prompt","prompt":"Greet " + msg.get("args","")})
        elif msg["name"] == "show":
            emit({"type":"notify","level":"success","message":"shown"})
            emit({"type":"command_response","id":msg["id"],"action":"display","display":"a note"})
        else:
            emit({"type":"command_response","id":msg["id"],"action":"insert","insert":"x"})
"#;

#[tokio::test(flavor = "multi_thread")]
async fn slash_commands_in_print_and_json_modes() {
    let w = World::new();
    let ext = w.py_ext("cmds", COMMANDS);
    let model = MockModel::start([anthropic::text("Hi Bob")]).await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(&["-p", "--no-session", "/greet Bob"], &[&ext]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Hi Bob\n");
    assert_eq!(
        model.requests()[0].body["messages"][0]["content"][0]["text"],
        "Greet Bob"
    );

    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(&["-p", "--no-session", "/show"], &[&ext]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "a note\n");
    assert!(run.stderr.contains("[cmds] success: shown"), "{run:?}");

    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(&["--json", "--no-session", "/show"], &[&ext]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    assert!(
        evs.contains(&Event::ExtDisplay {
            extension: "cmds".into(),
            command: "show".into(),
            text: "a note".into()
        }),
        "{evs:?}"
    );
    assert!(
        evs.iter()
            .any(|e| matches!(e, Event::ExtNotify { message, .. } if message == "shown")),
        "{evs:?}"
    );

    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(&["-p", "--no-session", "/ins"], &[&ext]),
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("needs the interactive TUI"), "{run:?}");
    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(&["-p", "--no-session", "/nope"], &[&ext]),
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("unknown command /nope"), "{run:?}");
    assert_eq!(model.requests().len(), 1, "no command reached the model");
}

#[tokio::test(flavor = "multi_thread")]
async fn extension_load_failures_are_reported_and_the_run_goes_on() {
    let w = World::new();
    let broken = w.py_ext("broken", "sys.exit(5)\n");
    let model = MockModel::start([anthropic::text("fine"), anthropic::text("fine")]).await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(&["-p", "--no-session", "hi"], &[&broken]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "fine\n");
    assert!(
        run.stderr.contains("extension broken")
            && run.stderr.contains("exit status: 5")
            && run.stderr.contains("ext-broken.log"),
        "{run:?}"
    );
    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(&["--json", "--no-session", "hi"], &[&broken]),
    );
    let evs = typed_events(&run);
    let extension = first!(evs, Event::ExtWarning { extension, .. } => extension);
    assert_eq!(extension.as_deref(), Some("broken"));
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_errors_and_retries() {
    let w = World::new();
    let model = MockModel::start([status(503, "busy"), anthropic::text("after retry")]).await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "after retry\n");
    assert_eq!(model.requests().len(), 2);

    let model = MockModel::start([status(
        400,
        anthropic::error_body(400, "max_tokens: too large"),
    )])
    .await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("400") && run.stderr.contains("max_tokens: too large"),
        "{run:?}"
    );
    let run = zot(
        &w,
        &MockModel::start([status(400, openai::error_body("bad model"))]).await,
        "openai",
        &["--json", "--no-session", "hi"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let evs = typed_events(&run);
    assert!(
        matches!(evs.last().unwrap(), Event::Error { .. }),
        "{evs:?}"
    );
    assert!(stops(&evs).contains(&StopReason::Error));
    assert!(!evs.contains(&Event::Done));
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_written_and_continued() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::text("first answer"),
        anthropic::text("second answer"),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["-p", "remember 42"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = zot(&w, &model, "anthropic", &["-p", "-c", "what number?"]);
    assert_eq!(run.code, 0, "{run:?}");
    let second = &model.requests()[1].body["messages"];
    assert_eq!(second[0]["content"][0]["text"], "remember 42");
    assert_eq!(second[1]["content"][0]["text"], "first answer");
    assert_eq!(second[2]["content"][0]["text"], "what number?");
    // One session file, holding all four messages.
    let sessions = w.home.join("sessions");
    let dir = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("\"type\":\"message\""))
            .count(),
        4
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_closes_tool_calls_that_never_got_a_result_and_survives_a_torn_line() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("resumed")]).await;
    let session = w.scratch.join("old.jsonl");
    let lines = [
        json!({"type":"meta","meta":{"id":"old","cwd":w.project,"provider":"anthropic","model":"m","started":"2026-01-01T00:00:00Z","version":"0"}}).to_string(),
        json!({"type":"message","message":{"role":"user","content":[{"type":"text","text":"run it"}]}}).to_string(),
        json!({"type":"message","message":{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"bash","args":{"command":"sleep 100"}}]}}).to_string(),
    ];
    std::fs::write(
        &session,
        format!("{}\n{{\"type\":\"message\",\"mess", lines.join("\n")),
    )
    .unwrap();
    let run = zot(
        &w,
        &model,
        "anthropic",
        &["-p", "--session", session.to_str().unwrap(), "go on"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let body = &model.requests()[0].body["messages"];
    let result = &body[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "c1");
    assert_eq!(result["is_error"], true);
    let text = std::fs::read_to_string(&session).unwrap();
    assert!(text.contains("tool call was aborted"), "{text}");
    assert!(text.lines().last().unwrap().contains("resumed"));
}

#[tokio::test(flavor = "multi_thread")]
async fn system_prompt_parts_skills_and_tool_filters() {
    let w = World::new();
    std::fs::write(w.home.join("SYSTEM.md"), "CUSTOM BASE PROMPT").unwrap();
    std::fs::write(w.project.join("AGENTS.md"), "Project rule: use tabs.").unwrap();
    let skill_dir = w.project.join(".zot/skills/deploy");
    std::fs::create_dir_all(&skill_dir).unwrap();
    std::fs::write(
        skill_dir.join("SKILL.md"),
        "---\nname: deploy\ndescription: how to ship\n---\nStep 1: run the tests.\n",
    )
    .unwrap();
    // A project's skills load only once it is trusted.
    assert_eq!(w.zot(&["trust"]).code, 0);
    let ext = w.py_ext("weather", WEATHER);
    let model = MockModel::start([
        anthropic::tool_call("s1", "skill", r#"{"name":"deploy"}"#),
        anthropic::text("shipped"),
        anthropic::text("filtered"),
        anthropic::text("none"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(
            &[
                "-p",
                "--no-session",
                "--append-system-prompt",
                "APPENDED ONE",
                "ship it",
            ],
            &[&ext],
        ),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let first = &model.requests()[0].body;
    let system = first["system"].to_string();
    for needle in [
        "CUSTOM BASE PROMPT",
        "APPENDED ONE",
        "Project rule: use tabs.",
        "deploy: how to ship",
    ] {
        assert!(system.contains(needle), "{needle} missing from {system}");
    }
    assert_eq!(
        tool_names(first, "anthropic"),
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
            "skill",
            "task",
            "weather"
        ]
    );
    let second = model.requests()[1].body.to_string();
    assert!(second.contains("Step 1: run the tests."), "{second}");

    // --tools filters extension tools too; --no-tools leaves none; --system-prompt replaces.
    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(
            &[
                "-p",
                "--no-session",
                "--tools",
                "read,weather,reed,mcp__later__tool",
                "--system-prompt",
                "ONLY THIS",
                "x",
            ],
            &[&ext],
        ),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let third = &model.requests()[2].body;
    assert_eq!(tool_names(third, "anthropic"), ["read", "weather"]);
    // A name no tool has is said (an MCP server's tools may come later).
    let warning = run
        .stderr
        .lines()
        .find(|l| l.starts_with("zot: warning: --tools"))
        .unwrap_or_default();
    assert!(
        warning.starts_with(
            "zot: warning: --tools names no tool called reed (the tools: read, write,"
        ) && warning.contains(", weather"),
        "{run:?}"
    );
    assert!(third["system"].to_string().contains("ONLY THIS"));
    assert!(!third["system"].to_string().contains("CUSTOM BASE PROMPT"));
    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(
            &["-p", "--no-session", "--no-tools", "--no-skills", "x"],
            &[&ext],
        ),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        model.requests()[3].body.get("tools").is_none(),
        "{}",
        model.requests()[3].body
    );
}

/// `-c` passes over a session file that does not open (an empty one, as a
/// crash between creating and writing it leaves) for the newest one that
/// does, saying so; a damaged line inside a session is said, not dropped in
/// silence, and the conversation goes on without it.
#[tokio::test(flavor = "multi_thread")]
async fn continue_passes_over_broken_files_and_says_damaged_lines() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::text("one"),
        anthropic::text("two"),
        anthropic::text("three"),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["-p", "first question"]);
    assert_eq!(run.code, 0, "{run:?}");
    let sessions = super::conversation::session_files(&w);
    assert_eq!(sessions.len(), 1);
    let session = &sessions[0];
    let empty = session.with_file_name("99999999-999999-ffffffff.jsonl");
    std::fs::write(&empty, "").unwrap();

    let run = zot(&w, &model, "anthropic", &["-p", "-c", "second question"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "zot: warning: {}: not a zot session (no meta line); passed over for an older session",
            empty.display()
        )),
        "{run:?}"
    );
    let asked = model.requests()[1].body["messages"].to_string();
    assert!(asked.contains("first question"), "{asked}");

    // The first answer's line cut short in place, as a bad copy leaves it.
    let text = std::fs::read_to_string(session).unwrap();
    let number = text.lines().position(|l| l.contains(r#""one""#)).unwrap() + 1;
    let damaged: Vec<&str> = text
        .lines()
        .map(|l| if l.contains(r#""one""#) { &l[..20] } else { l })
        .collect();
    std::fs::write(session, damaged.join("\n") + "\n").unwrap();
    std::fs::remove_file(&empty).unwrap();
    let run = zot(&w, &model, "anthropic", &["-p", "-c", "third question"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "zot: warning: {}: line {number} is damaged (not JSON) and was not loaded",
            session.display()
        )),
        "{run:?}"
    );
    let asked = model.requests()[2].body["messages"].to_string();
    assert!(
        asked.contains("first question") && asked.contains("second question"),
        "{asked}"
    );
    assert!(!asked.contains(r#""one""#), "{asked}");
}

#[tokio::test(flavor = "multi_thread")]
async fn max_steps_stops_the_loop_and_list_models_lists() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::tool_call("a", "bash", r#"{"command":"true"}"#),
        anthropic::tool_call("b", "bash", r#"{"command":"true"}"#),
    ])
    .await;
    // The limit reached before the model finished: said, and a failure.
    let stopped = "stopped at the limit of 1 model calls (max_steps) before the model had finished";
    let run = zot(
        &w,
        &model,
        "anthropic",
        &["--json", "--no-session", "--max-steps", "1", "loop"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(model.requests().len(), 1);
    assert_eq!(
        typed_events(&run).last(),
        Some(&Event::Error {
            message: stopped.to_owned()
        })
    );
    let run = zot(
        &w,
        &model,
        "anthropic",
        &["-p", "--no-session", "--max-steps", "1", "loop"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stderr, format!("zot: {stopped}\n"));
    assert_eq!(model.requests().len(), 2);
    let run = w.zot(&["--list-models", "--provider", "openai"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("gpt-4.1"), "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_compaction_summarises_when_the_context_fills_up() {
    let w = World::new();
    let model = MockModel::start(turns_filling_the_context().into_iter().chain([
        anthropic::text("SUMMARY OF EARLIER WORK"),
        anthropic::text("finished"),
    ]))
    .await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &["--json", "--no-session", "big task"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    let (summary, automatic) =
        first!(evs, Event::CompactDone { summary, automatic } => (summary, *automatic));
    assert_eq!(summary, "SUMMARY OF EARLIER WORK");
    assert!(automatic);
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    let summarising = &requests[3].body;
    assert!(
        summarising["system"].to_string().contains("summarise"),
        "{summarising}"
    );
    assert!(summarising.get("tools").is_none());
    let last = requests[4].body["messages"].to_string();
    assert!(
        last.contains("Context Summary (compacted)") && last.contains("SUMMARY OF EARLIER WORK"),
        "{last}"
    );
    assert!(
        last.contains("echo three") && !last.contains("echo one"),
        "{last}"
    );
    assert_eq!(evs.last(), Some(&Event::Done));
}

#[tokio::test(flavor = "multi_thread")]
async fn stored_keys_are_private_and_used() {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let mut child = w
        .cmd(&["auth", "login", "openai"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"sk-stored\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    let path = w.home.join("auth.json");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let model = MockModel::start([openai::text("keyed")]).await;
    let run: Run = w
        .cmd(&["-p", "--no-session", "--base-url", &model.url(), "hi"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.stdout, "keyed\n", "{run:?}");
    assert_eq!(
        model.requests()[0].header("authorization"),
        Some("Bearer sk-stored")
    );
    let run = w.zot(&["auth", "logout", "openai"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = w.zot(&["-p", "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    let run = w.zot(&["auth", "login", "ollama"]);
    assert_eq!(run.code, 1, "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_events_carry_the_cost_at_list_prices() {
    let w = World::new();
    let model = MockModel::start([anthropic::Script::new()
        .text("priced")
        .usage(1_000_000, 100_000)
        .cache(1_000_000, 1_000_000)
        .build()])
    .await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &[
            "--json",
            "--no-session",
            "--model",
            "claude-opus-5-5",
            "how much?",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    let (usage, cumulative) =
        first!(evs, Event::Usage { usage, cumulative } => (usage, cumulative));
    // From the model table, claude-opus-5-5: $4 in, $20 out, $5 a 5-minute
    // cache write and $0.20 a cache read (a twentieth of input) per million.
    let cost = 4.0 + 2.0 + 5.0 + 0.2;
    assert!((usage.cost_usd - cost).abs() < 1e-9, "{usage:?}");
    assert!((cumulative.cost_usd - cost).abs() < 1e-9, "{cumulative:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_events_show_image_sizes_not_their_data() {
    let w = World::new();
    // A 10-byte "png": the read tool returns it as an image block.
    std::fs::write(w.project.join("dot.png"), b"\x89PNG\r\n\x1a\n\x00\x01").unwrap();
    let model = MockModel::start([
        anthropic::tool_call("r1", "read", r#"{"path":"dot.png"}"#),
        anthropic::text("a dot"),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["--json", "--no-session", "look"]);
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    let content = first!(evs, Event::ToolResult { content, .. } => content);
    assert_eq!(
        content[0],
        Block::Image {
            mime_type: "image/png".into(),
            bytes: 10
        },
        "{content:?}"
    );
    // The model still got the image itself.
    assert!(
        model.requests()[1]
            .body
            .to_string()
            .contains("iVBORw0KGgoAAQ=="),
        "{}",
        model.requests()[1].body
    );
}

const CAREFUL: &str = r#"
handshake(NAME)
emit({"type":"register_tool","name":"peek","description":"Look.","schema":{"type":"object"},"read_only":True})
emit({"type":"register_tool","name":"poke","description":"Change.","schema":{"type":"object"}})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "shutdown":
        break
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_zot_tool_with_read_only_true_is_offered_in_plan_mode() {
    let w = World::new();
    let ext = w.py_ext("careful", CAREFUL);
    let model = MockModel::start([openai::text("planned"), openai::text("acted")]).await;
    let run = zot(
        &w,
        &model,
        "openai",
        &with_ext(&["--plan", "-p", "--no-session", "hi"], &[&ext]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "planned\n", "{run:?}");
    let planned = tool_names(&model.requests()[0].body, "openai");
    assert!(planned.contains(&"peek".to_owned()), "{planned:?}");
    for act in ["poke", "bash", "write", "edit"] {
        assert!(
            !planned.contains(&act.to_owned()),
            "{act} offered in plan mode: {planned:?}"
        );
    }

    let run = zot(
        &w,
        &model,
        "openai",
        &with_ext(&["-p", "--no-session", "hi"], &[&ext]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let acting = tool_names(&model.requests()[1].body, "openai");
    for name in ["peek", "poke"] {
        assert!(acting.contains(&name.to_owned()), "{acting:?}");
    }
}

const ECHOER: &str = r#"
handshake(NAME)
emit({"type":"register_tool","name":"echo","description":"Echo.","schema":{"type":"object"}})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "tool_call":
        emit({"type":"tool_result","id":msg["id"],"content":[{"type":"text","text":"echoed"}]})
    if msg["type"] == "shutdown":
        break
"#;

#[tokio::test(flavor = "multi_thread")]
async fn zot_log_shows_a_turn_at_debug_and_stays_quiet_at_info() {
    let w = World::new();
    let ext = w.py_ext("echoer", ECHOER);
    let model = MockModel::start([
        openai::tool_call("t1", "echo", r#"{"text":"hi"}"#),
        openai::text("done"),
        openai::text("again"),
    ])
    .await;
    let exts = [ext.as_path()];
    let args = with_ext(&["-p", "--no-session", "hi"], &exts);
    let run: Run = w
        .against(&model, "openai", &args)
        .env("ZOT_LOG", "debug")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        !run.stderr.contains("model request"),
        "logs never reach the terminal"
    );
    let path = w.home.join("logs").join("zot.log");
    let log = std::fs::read_to_string(&path).unwrap();
    for needle in [
        "zot starts",
        "extension started",
        "model request",
        r#"tools=["read", "write", "edit", "bash", "grep", "find", "ls", "web_fetch", "todo_write", "task", "echo"]"#,
        "tool call",
        "tool=\"echo\"",
        "frame in",
        r#"frame in extension=echoer frame={"type": "hello""#,
        "frame out",
        r#"{"type":"tool_call""#,
        "model reply",
    ] {
        assert!(log.contains(needle), "zot.log lacks {needle:?}:\n{log}");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // The default level (info) keeps frames out.
    std::fs::remove_file(&path).unwrap();
    let run: Run = w
        .against(&model, "openai", &args)
        .env_remove("ZOT_LOG")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let log = std::fs::read_to_string(&path).unwrap();
    assert!(
        log.contains("zot starts") && !log.contains("frame in"),
        "{log}"
    );
}

const NOISY: &str = r#"
handshake(NAME)
emit({"type":"register_command","name":"show","description":"show text"})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "command_invoked":
        emit({"type":"notify","level":"info","message":"\u001b[2J\u001b]0;pwned\u0007note"})
        emit({"type":"command_response","id":msg["id"],"action":"display",
              "display":"\u001b]52;c;ZXZpbA==\u0007shown \u001b[31mred\u001b[0m"})
    if msg["type"] == "shutdown":
        break
"#;

#[tokio::test(flavor = "multi_thread")]
async fn extension_text_reaches_the_terminal_without_control_sequences() {
    let w = World::new();
    let ext = w.py_ext("noisy", NOISY);
    let model = MockModel::start([]).await;
    let exts = [ext.as_path()];
    let run = zot(
        &w,
        &model,
        "openai",
        &with_ext(&["-p", "--no-session", "/show"], &exts),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        !run.stderr.contains('\u{1b}') && !run.stderr.contains('\u{7}'),
        "{run:?}"
    );
    // The displayed text reaches a pipe as sent, a terminal without escapes.
    assert!(run.stdout.contains('\u{1b}'), "{run:?}");
    let args = with_ext(&["-p", "--no-session", "/show"], &exts);
    let run = on_terminal(&w.against(&model, "openai", &args));
    assert!(run.stdout.contains("shown red"), "{run:?}");
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{7}'),
        "{run:?}"
    );
    // The JSON stream carries the text as sent (JSON escapes it; no terminal reads it raw).
    let run = zot(
        &w,
        &model,
        "openai",
        &with_ext(&["--json", "--no-session", "/show"], &exts),
    );
    let evs = typed_events(&run);
    let display = first!(evs, Event::ExtDisplay { text, .. } => text);
    assert!(display.contains('\u{1b}'));
}

#[tokio::test(flavor = "multi_thread")]
async fn zot_home_and_its_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let model = MockModel::start([openai::text("hi")]).await;
    let home = w.home.join("fresh");
    let run: Run = w
        .against(&model, "openai", &["-p", "hello"])
        .env("ZOT_HOME", &home)
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&home), 0o700, "$ZOT_HOME");
    assert_eq!(mode(&home.join("logs").join("zot.log")), 0o600);
    let sessions = home.join("sessions");
    assert_eq!(mode(&sessions), 0o700);
    let project_dir = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(mode(&project_dir), 0o700);
    let file = std::fs::read_dir(&project_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(mode(&file), 0o600, "{}", file.display());
}

/// `auto_compact` from the user config: a lower percent compacts earlier,
/// `false` never compacts automatically.
#[tokio::test(flavor = "multi_thread")]
async fn auto_compact_from_the_config_sets_when_compaction_runs() {
    let w = World::new();
    // 600,000 of the default model's 1,000,000 tokens: 60%, under the default 85%.
    let filling = |id: &str, input: u64| {
        anthropic::Script::new()
            .tool_call(id, "bash", r#"{"command":"echo hi"}"#)
            .usage(input, 10)
            .build()
    };
    std::fs::create_dir_all(&w.home).unwrap();
    let config = w.home.join("config.json");
    std::fs::write(&config, r#"{"auto_compact": 50}"#).unwrap();
    // Two short turns first, so there is something older than the kept tail to summarise.
    let model = MockModel::start([
        filling("a", 10),
        filling("b", 10),
        filling("c", 600_000),
        anthropic::text("EARLIER"),
        anthropic::text("finished"),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["--json", "--no-session", "task"]);
    assert_eq!(run.code, 0, "{run:?}");
    let compacted = typed_events(&run).into_iter().find_map(|e| match e {
        Event::CompactDone { summary, automatic } => Some((summary, automatic)),
        _ => None,
    });
    let (summary, automatic) =
        compacted.unwrap_or_else(|| panic!("no compaction at 60% with auto_compact 50: {run:?}"));
    assert!(automatic);
    assert_eq!(summary, "EARLIER");

    std::fs::write(&config, r#"{"auto_compact": false}"#).unwrap();
    let model = MockModel::start([
        filling("a", 10),
        filling("b", 10),
        filling("c", 199_000),
        anthropic::text("finished"),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["--json", "--no-session", "task"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        !typed_events(&run)
            .iter()
            .any(|e| matches!(e, Event::CompactDone { .. })),
        "auto_compact false never compacts: {run:?}"
    );
    assert_eq!(model.requests().len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_saved_model_of_another_provider_is_not_sent_to_this_one() {
    let w = World::new();
    std::fs::write(w.home.join("config.json"), r#"{"model": "gpt-4.1"}"#).unwrap();
    let model = MockModel::start([anthropic::text("hi")]).await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "hello"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("the saved model gpt-4.1 belongs to openai"),
        "{run:?}"
    );
    assert_eq!(model.requests()[0].body["model"], "claude-sonnet-5-5");
}

const TIMED: &str = r#"
import threading
LOCK = threading.Lock()
TIMES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "times.log")
handshake(NAME)
emit({"type":"register_tool","name":"peek","description":"Look.","schema":{"type":"object"},"read_only":True})
emit({"type":"register_tool","name":"poke","description":"Change.","schema":{"type":"object"}})
emit({"type":"ready"})
def run(msg):
    tag = msg.get("args", {}).get("tag", "?")
    start = time.time()
    time.sleep(0.3)
    end = time.time()
    with LOCK:
        with open(TIMES, "a") as f:
            f.write(f"{tag} {start} {end}\n")
        emit({"type":"tool_result","id":msg["id"],"content":[{"type":"text","text":msg["name"] + " " + tag}]})
for msg in frames():
    if msg["type"] == "tool_call":
        threading.Thread(target=run, args=(msg,), daemon=True).start()
    if msg["type"] == "shutdown":
        break
"#;

#[tokio::test(flavor = "multi_thread")]
async fn read_only_extension_tools_of_one_message_overlap_and_a_write_runs_alone() {
    let w = World::new();
    let ext = w.py_ext("timed", TIMED);
    let model = MockModel::start([
        anthropic::Script::new()
            .tool_call("t1", "peek", r#"{"tag":"a"}"#)
            .tool_call("t2", "peek", r#"{"tag":"b"}"#)
            .tool_call("t3", "poke", r#"{"tag":"w"}"#)
            .tool_call("t4", "peek", r#"{"tag":"c"}"#)
            .tool_call("t5", "peek", r#"{"tag":"d"}"#)
            .build(),
        anthropic::text("looked"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(&["--json", "--no-session", "go"], &[&ext]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let log = std::fs::read_to_string(ext.join("times.log")).unwrap();
    let span = |tag: &str| -> (f64, f64) {
        let line = log
            .lines()
            .find(|l| l.split(' ').next() == Some(tag))
            .unwrap_or_else(|| panic!("{tag} never ran: {log}"));
        let times: Vec<f64> = line
            .split(' ')
            .skip(1)
            .map(|t| t.parse().unwrap())
            .collect();
        (times[0], times[1])
    };
    let overlap = |x: (f64, f64), y: (f64, f64)| x.0 < y.1 && y.0 < x.1;
    let (a, b, write, c, d) = (span("a"), span("b"), span("w"), span("c"), span("d"));
    assert!(
        overlap(a, b),
        "read-only calls ran one after the other: {log}"
    );
    assert!(
        overlap(c, d),
        "read-only calls ran one after the other: {log}"
    );
    for read in [a, b] {
        assert!(
            read.1 <= write.0,
            "the write started before a read ended: {log}"
        );
    }
    for read in [c, d] {
        assert!(
            write.1 <= read.0,
            "a read started before the write ended: {log}"
        );
    }
    // Results go back in call order; each call's events in their order.
    let body = &model.requests()[1].body;
    let last = body["messages"].as_array().unwrap().last().unwrap();
    let ids: Vec<&str> = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["tool_use_id"].as_str())
        .collect();
    assert_eq!(ids, ["t1", "t2", "t3", "t4", "t5"], "{body}");
    let events = typed_events(&run);
    let at = |kind: &str, id: &str| {
        events
            .iter()
            .position(|e| match e {
                Event::ToolCall { id: of, .. } => kind == "tool_call" && of == id,
                Event::ToolResult { id: of, .. } => kind == "tool_result" && of == id,
                _ => false,
            })
            .unwrap_or_else(|| panic!("no {kind} for {id}: {run:?}"))
    };
    for id in ["t1", "t2", "t3", "t4", "t5"] {
        assert!(at("tool_call", id) < at("tool_result", id), "{run:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_hook_and_a_guard_extension_share_one_chain_hook_first() {
    let w = World::new();
    let guard = w.py_ext("guard", GUARD);
    // The hook rewrites what the model asked; the guard then sees (and
    // rewrites again) the hook's version.
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
        "command": r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"echo original > which.txt"}}}'"#}]}]}});
    std::fs::write(w.home.join("hooks.json"), hooks.to_string()).unwrap();
    let model = MockModel::start([
        anthropic::tool_call("b1", "bash", r#"{"command":"echo start > which.txt"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        "anthropic",
        &with_ext(&["-p", "--no-session", "go"], &[&guard]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(w.project.join("which.txt")).unwrap(),
        "rewritten\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_response_over_64_mib_is_cut_with_an_error_and_its_start_kept_in_the_session() {
    let w = World::new();
    // Three blocks of 22 MiB: each event is under the per-event cap, their
    // sum is over the response cap.
    let block = 22 * 1024 * 1024;
    let (a, b, c) = ("a".repeat(block), "b".repeat(block), "c".repeat(block));
    let huge = anthropic::Script::new().text(&a).text(&b).text(&c).build();
    let model = MockModel::start([huge]).await;
    let run: Run = w
        .against(&model, "anthropic", &["-p", "big answer please"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the model's response is larger than 64 MiB; the rest of it was not read"),
        "{}",
        run.stderr
    );

    // The session keeps the partial answer.
    let sessions = w.home.join("sessions");
    let project_dir = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let file = std::fs::read_dir(project_dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let text = std::fs::read_to_string(file.path()).unwrap();
    let kept = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|entry| {
            let message = entry.get("message")?;
            (message["role"] == "assistant").then(|| message["content"][0]["text"].clone())
        })
        .unwrap();
    // Everything shown up to the delta that crossed the cap.
    let kept = kept.as_str().unwrap();
    assert!(kept.len() > 2 * block && kept.len() <= 64 * 1024 * 1024);
    assert!(kept.starts_with("aaa") && kept.contains("abbb") && kept.ends_with("ccc"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_line_over_128_mib_is_skipped_with_a_warning_and_keeps_its_place() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("resumed")]).await;
    let session = w.scratch.join("big.jsonl");
    let message = |role: &str, content: Value| {
        json!({"type":"message","message":{"role":role,"content":content}}).to_string()
    };
    let head = [
        json!({"type":"meta","meta":{"id":"big","cwd":w.project,"provider":"anthropic","model":"m","started":"2026-01-01T00:00:00Z","version":"0"}}).to_string(),
        message("user", json!([{"type":"text","text":"read it"}])),
        message(
            "assistant",
            json!([{"type":"tool_call","id":"c1","name":"read","args":{"path":"big"}}]),
        ),
    ];
    // Line 4, the result of c1, is larger than the limit: written a MiB at a time.
    let mut file = std::io::BufWriter::new(std::fs::File::create(&session).unwrap());
    use std::io::Write as _;
    writeln!(file, "{}", head.join("\n")).unwrap();
    write!(
        file,
        r#"{{"type":"message","message":{{"role":"tool","content":[{{"type":"tool_result","call_id":"c1","content":[{{"type":"text","text":""#
    )
    .unwrap();
    let mib = vec![b'x'; 1024 * 1024];
    for _ in 0..=zot_core::session::MAX_SESSION_LINE_BYTES / mib.len() {
        file.write_all(&mib).unwrap();
    }
    writeln!(file, r#""}}]}}]}}}}"#).unwrap();
    writeln!(
        file,
        "{}",
        message("assistant", json!([{"type":"text","text":"that was big"}]))
    )
    .unwrap();
    file.flush().unwrap();
    drop(file);
    let run = zot(
        &w,
        &model,
        "anthropic",
        &["-p", "--session", session.to_str().unwrap(), "go on"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "resumed\n");
    assert!(
        run.stderr
            .contains(&format!("zot: warning: {}: line 4 (", session.display()))
            && run
                .stderr
                .contains("bytes) is larger than 128 MiB and was not loaded"),
        "{}",
        run.stderr
    );
    // The call keeps an (error) result in its place, and what came after it stays.
    let body = &model.requests()[0].body["messages"];
    let result = &body[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "c1");
    assert_eq!(result["is_error"], true);
    assert!(result.to_string().contains("was not loaded"), "{result}");
    assert_eq!(body[3]["content"][0]["text"], "that was big");
    assert_eq!(body[4]["content"][0]["text"], "go on");
}
