//! The search tools (grep, find, ls) through the built binary: what the
//! model is offered, what a call returns in a real git repository, caps,
//! bad arguments, and no confirmation for them under `--no-yolo`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use zot_testkit::{MockModel, anthropic};

use super::support::{Block, Event, Run, World, first, typed_events};
use super::tui::Tmux;

/// The text of the `tool_result` event for call `id`, and whether it is an error.
fn result(events: &[Event], id: &str) -> (String, bool) {
    let (content, is_error) = first!(
        events,
        Event::ToolResult { id: of, content, is_error } if of == id => (content, *is_error)
    );
    let text = content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    (text, is_error)
}

fn write(root: &Path, rel: &str, text: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn set_age(root: &Path, rel: &str, seconds_ago: u64) {
    let file = std::fs::File::options()
        .write(true)
        .open(root.join(rel))
        .unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
        .unwrap();
}

/// A git repository with ignored, hidden and binary files beside the sources.
fn repository(w: &World) {
    let p = &w.project;
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(p)
        .status()
        .unwrap();
    assert!(git.success());
    write(p, ".gitignore", b"target/\n*.log\n");
    write(p, "src/main.rs", b"fn main() {\n    let needle = 1;\n}\n");
    write(p, "src/lib.rs", b"// Needle in upper case\npub fn f() {}\n");
    write(p, "src/old.rs", b"// old\n");
    write(p, "target/debug/out.rs", b"needle in a build output\n");
    write(p, "run.log", b"needle in a log\n");
    write(p, ".hidden/secret.txt", b"needle in a hidden dir\n");
    write(p, "data.bin", b"needle\0binary\n");
    let many: String = (1..=10).map(|i| format!("needle {i}\n")).collect();
    write(p, "docs/many.md", many.as_bytes());
    set_age(p, "src/old.rs", 3600);
    set_age(p, "src/lib.rs", 60);
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_find_and_ls_search_a_repository_like_ripgrep() {
    let w = World::new();
    repository(&w);
    let calls = anthropic::Script::new()
        .tool_call("g1", "grep", r#"{"pattern":"needle"}"#)
        .tool_call(
            "g2",
            "grep",
            r#"{"pattern":"NEEDLE","case_insensitive":true,"path":"src","context":1}"#,
        )
        .tool_call("g3", "grep", r#"{"pattern":"needle","max_results":3}"#)
        .tool_call("g4", "grep", r#"{"pattern":"needle","glob":"*.rs"}"#)
        .tool_call("g5", "grep", r#"{"pattern":"needle","type":"markdown"}"#)
        .tool_call("f1", "find", r#"{"pattern":"*.rs"}"#)
        .tool_call("f2", "find", r#"{"pattern":"src/*.rs","max_results":2}"#)
        .tool_call("l1", "ls", r#"{}"#)
        .tool_call("l2", "ls", r#"{"path":"src"}"#)
        .build();
    let model = MockModel::start([calls, anthropic::text("searched")]).await;
    let run: Run = w
        .against(&model, "anthropic", &["--json", "--no-session", "look"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let events = typed_events(&run);

    let requests = model.requests();
    let offered = requests[0].body["tools"].as_array().unwrap();
    let tools: Vec<&str> = offered
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in ["grep", "find", "ls"] {
        assert!(tools.contains(&name), "{tools:?}");
    }
    let grep = &offered.iter().find(|t| t["name"] == "grep").unwrap()["input_schema"];
    assert_eq!(grep["required"], serde_json::json!(["pattern"]));
    assert_eq!(grep["properties"]["glob"]["type"], "string");

    // Path order; ignored (target/, *.log), hidden and binary files skipped.
    let (all, _) = result(&events, "g1");
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines[0], "docs/many.md:1: needle 1", "{all}");
    assert_eq!(lines[10], "src/main.rs:2:     let needle = 1;", "{all}");
    assert_eq!(lines.len(), 11, "{all}");

    let (ci, _) = result(&events, "g2");
    assert_eq!(
        ci,
        "src/lib.rs:1: // Needle in upper case\nsrc/lib.rs-2- pub fn f() {}\n--\n\
         src/main.rs-1- fn main() {\nsrc/main.rs:2:     let needle = 1;\nsrc/main.rs-3- }"
    );

    let (capped, _) = result(&events, "g3");
    assert!(
        capped.ends_with(
            "[8 more matches in 2 files; narrow the search (path, glob, type) or raise max_results]"
        ),
        "{capped}"
    );
    assert_eq!(capped.lines().count(), 4, "{capped}");

    let (rs, _) = result(&events, "g4");
    assert_eq!(rs, "src/main.rs:2:     let needle = 1;");
    let (md, _) = result(&events, "g5");
    assert_eq!(md.lines().count(), 10, "{md}");

    // Newest first; the build output under target/ stays out.
    let (found, _) = result(&events, "f1");
    assert_eq!(found, "src/main.rs\nsrc/lib.rs\nsrc/old.rs");
    let (two, _) = result(&events, "f2");
    assert_eq!(
        two,
        "src/main.rs\nsrc/lib.rs\n[1 more paths; narrow the pattern or path, or raise max_results]"
    );

    let (top, _) = result(&events, "l1");
    assert!(top.contains("d          - src/"), "{top}");
    assert!(top.contains("d          - .hidden/"), "{top}");
    assert!(top.contains("f         16 run.log"), "{top}");
    let (src, _) = result(&events, "l2");
    assert!(
        src.starts_with("f         38 lib.rs\nf         34 main.rs\nf          7 old.rs"),
        "{src}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn search_tools_answer_bad_arguments_with_clear_errors() {
    let w = World::new();
    write(&w.project, "a.txt", b"text\n");
    let calls = anthropic::Script::new()
        .tool_call("b1", "grep", r#"{"pattern":"("}"#)
        .tool_call("b2", "grep", r#"{"pattern":"x","max_results":0}"#)
        .tool_call("b3", "grep", r#"{"pattern":"x","type":"nosuchtype"}"#)
        .tool_call("b4", "grep", r#"{"pattern":"x","path":"missing"}"#)
        .tool_call("b5", "find", r#"{"pattern":"a[","max_results":5}"#)
        .tool_call("b6", "find", r#"{"pattern":"*","path":"a.txt"}"#)
        .tool_call("b7", "ls", r#"{"path":"a.txt"}"#)
        .tool_call("b8", "grep", r#"{"path":"."}"#)
        .tool_call("b9", "grep", r#"{"pattern":"x","context":"two"}"#)
        .build();
    let model = MockModel::start([calls, anthropic::text("ok")]).await;
    let run: Run = w
        .against(&model, "anthropic", &["--json", "--no-session", "go"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let events = typed_events(&run);
    let expect = [
        ("b1", "invalid regular expression"),
        (
            "b2",
            "argument `max_results` must be an integer from 1 to 2000, got 0",
        ),
        ("b3", "unrecognized file type: nosuchtype"),
        ("b4", "file not found"),
        ("b5", "invalid glob \"a[\""),
        ("b6", "is not a directory; find searches directories"),
        ("b7", "is not a directory; use read for a file"),
        ("b8", "missing required argument `pattern`"),
        (
            "b9",
            "argument `context` must be an integer from 0 to 20, got a string",
        ),
    ];
    for (id, text) in expect {
        let (got, is_error) = result(&events, id);
        assert!(is_error && got.contains(text), "{id}: {got}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_yolo_runs_read_only_tools_unasked_and_asks_before_bash() {
    let w = World::new();
    write(&w.project, "notes.txt", b"the needle is here\n");
    let model = MockModel::start([
        anthropic::Script::new()
            .tool_call("g", "grep", r#"{"pattern":"needle"}"#)
            .tool_call("l", "ls", r#"{}"#)
            .tool_call("r", "read", r#"{"path":"notes.txt"}"#)
            .build(),
        anthropic::tool_call("b", "bash", r#"{"command":"touch made.txt"}"#),
        anthropic::text("all searched"),
    ])
    .await;
    let tmux = Tmux::against(&w, "readonly-unasked", &model, &["--no-yolo"]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("find the needle");
    tmux.keys(&["Enter"]);
    // The first question is about bash: the searches ran without one.
    let screen = tmux.wait_for("Run this tool?");
    assert!(screen.contains("touch made.txt"), "{screen}");
    assert_eq!(model.requests().len(), 2);
    let second = model.requests()[1].body.to_string();
    assert!(
        second.contains("notes.txt:1: the needle is here"),
        "{second}"
    );
    tmux.type_text("y");
    tmux.wait_for("all searched");
    assert!(w.project.join("made.txt").exists());
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}
