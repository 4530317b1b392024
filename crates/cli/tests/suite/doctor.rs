//! `zot ext doctor`: a clean set exits 0, a broken set exits 1 with every problem named.

use super::support::{World, json};

#[test]
fn clean_set_reports_registrations_and_exits_zero() {
    let w = World::new();
    w.ext(
        &w.global(),
        "tidy",
        &[
            r#"{"type":"register_command","name":"hi","description":"say hi"}"#,
            r#"{"type":"register_tool","name":"look","schema":{"type":"object"}}"#,
            r#"{"type":"register_tool","name":"later","schema":{"type":"object"},"deferred":true}"#,
            r#"{"type":"subscribe","events":["turn_start"],"intercept":["tool_call"]}"#,
        ],
    );
    let run = w.zot(&["ext", "doctor"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("global tidy 1.0.0: ready"), "{run:?}");
    assert!(run.stdout.contains("commands: /hi"), "{run:?}");
    assert!(
        run.stdout.contains("tools: look, later (deferred)"),
        "{run:?}"
    );
    assert!(run.stdout.contains("events: turn_start"), "{run:?}");
    assert!(run.stdout.contains("intercepts: tool_call"), "{run:?}");
    assert!(
        run.stdout.contains("1 extension(s): 0 with errors"),
        "{run:?}"
    );
    // It shut the extension down cleanly.
    assert!(
        w.log("tidy").contains("stopped (exit status: 0)"),
        "{}",
        w.log("tidy")
    );
}

#[test]
fn broken_set_names_every_problem_and_exits_one() {
    let w = World::new();
    w.ext(
        &w.global(),
        "good",
        &[r#"{"type":"register_command","name":"dup"}"#],
    );
    w.ext(
        &w.global(),
        "rival",
        &[
            r#"{"type":"register_command","name":"DUP"}"#,
            r#"{"type":"register_command","name":"help"}"#,
        ],
    );
    w.ext_in(
        &w.global(),
        "crashy",
        r#"{"name":"crashy","exec":"./ext.sh"}"#,
        "#!/bin/sh\necho 'dying' >&2\nexit 3\n",
    );
    // Never silent for the 250 ms that would auto-ready it: one process
    // (no `sleep` to fork and exec each time, which a loaded machine can
    // hold back past the idle bound) writing a frame every 10 ms, and
    // leaving at `shutdown` (or when stdin closes).
    w.ext_in(
        &w.global(),
        "chatty",
        r#"{"name":"chatty","exec":"./ext.sh"}"#,
        r#"#!/usr/bin/env python3
import select, sys
print('{"type":"hello","name":"chatty"}', flush=True)
while True:
    print('{"type":"notify","message":"hi"}', flush=True)
    if select.select([sys.stdin], [], [], 0.01)[0]:
        line = sys.stdin.readline()
        if not line or '"shutdown"' in line:
            break
"#,
    );
    // Shadowed: the project copy of "good" is trusted for this run.
    w.ext(&w.project_root(), "shadow", &[]);
    std::fs::write(
        w.project_root().join("shadow/extension.json"),
        r#"{"name":"good","version":"2.0.0","exec":"./ext.sh"}"#,
    )
    .unwrap();
    let dup = r#"{"type":"register_command","name":"dup"}"#;
    std::fs::write(
        w.project_root().join("shadow/ext.sh"),
        super::support::sh_ext("good", &[dup]),
    )
    .unwrap();
    w.ext_in(&w.global(), "invalid", r#"{"name":"invalid"}"#, "");

    let run = w.zot(&["ext", "doctor", "--json", "--trust"]);
    assert_eq!(run.code, 1, "{run:?}");
    let doc = json(&run);
    assert_eq!(doc["ok"], false);
    let by_dir = |d: &str| {
        doc["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["dir"].as_str().unwrap().ends_with(d))
            .unwrap_or_else(|| panic!("{d} missing in {doc}"))
            .clone()
    };
    let crashy = by_dir("/crashy");
    assert_eq!(crashy["state"], "failed");
    assert_eq!(crashy["exit_status"], "exit status: 3");
    let error = crashy["error"].as_str().unwrap();
    assert!(
        error.contains("exited before hello") && error.contains("ext-crashy.log"),
        "{error}"
    );
    assert!(w.log("crashy").contains("dying"));

    let chatty = by_dir("/chatty");
    assert_eq!(chatty["state"], "ready_timeout");
    assert!(chatty["error"].is_null());
    assert!(
        chatty["warnings"][0]
            .as_str()
            .unwrap()
            .contains("never sent ready"),
        "{chatty}"
    );

    let good = by_dir("home/extensions/good");
    assert_eq!(good["state"], "shadowed");
    assert!(
        good["shadowed_by"].as_str().unwrap().ends_with("/shadow"),
        "{good}"
    );

    let rival = by_dir("/rival");
    assert_eq!(rival["state"], "ready");
    let warnings = rival["warnings"].to_string();
    assert!(
        warnings.contains("command /DUP is shadowed by extension good"),
        "{warnings}"
    );
    assert!(
        warnings.contains("command /help is shadowed by a built-in"),
        "{warnings}"
    );

    let invalid = by_dir("/invalid");
    assert_eq!(invalid["state"], "invalid_manifest");
    assert!(
        invalid["error"]
            .as_str()
            .unwrap()
            .contains("field \"exec\"")
    );

    let conflicts = doc["conflicts"].as_array().unwrap();
    assert!(
        conflicts
            .iter()
            .any(|c| c["name"] == "DUP" && c["winner"] == "good" && c["loser"] == "rival"),
        "{conflicts:?}"
    );
    assert_eq!(doc["errors"], 2);

    // The text form says the same and exits the same.
    let run = w.zot(&["ext", "doctor", "--trust"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("global crashy: failed"), "{run:?}");
    assert!(
        run.stdout
            .contains("error: extension crashy: exited before hello"),
        "{run:?}"
    );
    assert!(run.stdout.contains("with errors"), "{run:?}");
}
