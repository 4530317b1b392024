//! A first run without any API key: extension commands that need no model
//! work in every mode; what would call the model says exactly how to get a key.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use super::support::{
    Data, EVENT_SCHEMA, Event, Response, Run, World, check_schema, typed, typed_events,
};

const GREETER: &str = r#"
handshake(NAME)
emit({"type":"register_command","name":"greeter","description":"greet someone"})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "command_invoked":
        emit({"type":"command_response","id":msg["id"],"action":"display",
              "display":"Hello, " + msg.get("args","") + "!"})
    elif msg["type"] == "shutdown":
        emit({"type":"shutdown_ack"})
        break
"#;

fn greeter(w: &World) -> PathBuf {
    w.py_ext("greeter", GREETER)
}

fn ext_args<'a>(dir: &'a Path, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--ext", dir.to_str().unwrap()];
    args.extend_from_slice(rest);
    args
}

/// Asserts `text` tells how to get a key for `provider`.
fn names_the_way_out(text: &str, var: &str, provider: &str) {
    for needle in [
        var,
        &format!("zot auth login {provider}"),
        "--provider ollama",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from: {text}");
    }
}

#[test]
fn print_and_json_run_extension_commands_without_a_key() {
    let w = World::new();
    let dir = greeter(&w);
    let run = w.zot(&ext_args(&dir, &["-p", "/greeter Ada"]));
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Hello, Ada!\n");

    let run = w.zot(&ext_args(&dir, &["--json", "/greeter Ada"]));
    assert_eq!(run.code, 0, "{run:?}");
    let evs = typed_events(&run);
    assert_eq!(evs.len(), 1, "{run:?}");
    assert!(
        matches!(&evs[0], Event::ExtDisplay { text, .. } if text == "Hello, Ada!"),
        "{evs:?}"
    );

    // No conversation happened, so no session file was written.
    let sessions = w.home.join("sessions");
    let files = walk(&sessions);
    assert!(files.is_empty(), "{files:?}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

#[test]
fn a_prompt_without_a_key_names_the_variable_login_and_ollama() {
    let w = World::new();
    let run = w.zot(&["-p", "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    names_the_way_out(&run.stderr, "ANTHROPIC_API_KEY", "anthropic");

    let run = w.zot(&["--provider", "openai", "-p", "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    names_the_way_out(&run.stderr, "OPENAI_API_KEY", "openai");
    assert!(!run.stderr.contains("ANTHROPIC_API_KEY"), "{run:?}");

    let run = w.zot(&["--json", "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    let message = typed_events(&run)
        .into_iter()
        .find_map(|e| match e {
            Event::Error { message } => Some(message),
            _ => None,
        })
        .unwrap();
    names_the_way_out(&message, "ANTHROPIC_API_KEY", "anthropic");
}

/// Serves `requests` to `zot rpc` (stdin closed after them); every line out.
fn rpc(w: &World, args: &[&str], requests: &[&str]) -> (Run, Vec<Event>) {
    let mut cmd = w.cmd(&[&["rpc"], args].concat());
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for line in requests {
            writeln!(stdin, "{line}").unwrap();
        }
    }
    let run: Run = child.wait_with_output().unwrap().into();
    let lines = run
        .stdout
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            check_schema(EVENT_SCHEMA, &v).unwrap();
            typed(&v)
        })
        .collect();
    (run, lines)
}

#[test]
fn rpc_serves_commands_without_a_key_and_explains_at_the_first_model_call() {
    let w = World::new();
    let dir = greeter(&w);
    let (run, lines) = rpc(
        &w,
        &ext_args(&dir, &[]),
        &[
            r#"{"id":1,"type":"ping"}"#,
            r#"{"id":2,"type":"get_commands"}"#,
            r#"{"id":3,"type":"prompt","message":"/greeter Ada"}"#,
            r#"{"id":4,"type":"prompt","message":"hello model"}"#,
            r#"{"id":5,"type":"compact"}"#,
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let response = |id: i64| -> &Response {
        lines
            .iter()
            .find_map(|l| match l {
                Event::Response(r) if r.id == Some(Value::from(id)) => Some(r),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no response {id}: {run:?}"))
    };
    assert_eq!(response(1).data, Some(Data::Pong { pong: true }));
    let Some(Data::Commands { commands }) = &response(2).data else {
        panic!("no commands: {run:?}");
    };
    assert!(commands.iter().any(|c| c.name == "greeter"), "{commands:?}");
    assert!(response(3).success);
    assert!(
        lines
            .iter()
            .any(|l| matches!(l, Event::ExtDisplay { text, .. } if text == "Hello, Ada!")),
        "{run:?}"
    );
    assert!(response(4).success, "the prompt is taken");
    let message = lines
        .iter()
        .find_map(|l| match l {
            Event::Error { message } => Some(message),
            _ => None,
        })
        .unwrap();
    names_the_way_out(message, "ANTHROPIC_API_KEY", "anthropic");
    assert!(!response(5).success);
    names_the_way_out(
        response(5).error.as_deref().unwrap(),
        "ANTHROPIC_API_KEY",
        "anthropic",
    );
    let done = lines.iter().filter(|l| matches!(l, Event::Done)).count();
    assert_eq!(done, 2, "each prompt ends with done: {run:?}");
}

/// The README's quick start runs a bundled example with nothing but python3.
#[test]
fn the_quick_start_example_runs_without_a_key_or_network() {
    let w = World::new();
    let weather = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/extensions/weather");
    let run = w.zot(&["--ext", weather.to_str().unwrap(), "-p", "/weather Lisbon"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("Lisbon: "), "{run:?}");
}
