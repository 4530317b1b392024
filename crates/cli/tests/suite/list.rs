//! `zot ext list`, `--version`, `--help`, usage errors, `--ext` and `--no-ext`.

use super::support::{World, json};

#[test]
fn version_help_and_usage_errors() {
    let w = World::new();
    let run = w.zot(&["--version"]);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout.trim(),
        format!("zot {}", env!("CARGO_PKG_VERSION"))
    );
    let run = w.zot(&["--help"]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.contains("ext") && run.stdout.contains("--no-ext"),
        "{run:?}"
    );
    let run = w.zot(&["ext", "frobnicate"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("Usage: zot ext"), "{run:?}");
    let run = w.zot(&["ext"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("Usage: zot ext"), "{run:?}");
    let run = w.zot(&["ext", "remove"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("<NAME>"), "{run:?}");
}

#[test]
fn empty_list_says_so() {
    let w = World::new();
    let run = w.zot(&["ext", "list"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("no extensions installed"), "{run:?}");
    let run = w.zot(&["ext", "list", "--json"]);
    assert_eq!(json(&run), serde_json::json!([]));
}

#[test]
fn list_shows_every_state_in_a_stable_order() {
    let w = World::new();
    w.ext(&w.global(), "alpha", &[]);
    w.ext(&w.global(), "shared", &[]);
    w.ext(&w.project_root(), "shared", &[]);
    w.ext_in(
        &w.global(),
        "off",
        r#"{"name":"off","exec":"./ext.sh","enabled":false}"#,
        "",
    );
    w.ext_in(&w.global(), "broken", r#"{"name":"broken","exec":7}"#, "");
    let explicit = w.ext(&w.scratch, "alpha", &[]);

    let run = w
        .cmd(&["ext", "list", "--trust", "-e"])
        .arg(&explicit)
        .output()
        .unwrap();
    let run = super::support::Run::from(run);
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("SCOPE") && lines[0].contains("PROTOCOL") && lines[0].ends_with("DIR")
    );
    let rows: Vec<Vec<&str>> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let summary: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r[0], r[1], r[7])).collect();
    assert_eq!(
        summary,
        [
            ("explicit", "alpha", "ok"),
            ("project", "shared", "ok"),
            ("global", "alpha", "shadowed:"),
            ("global", "-", "invalid:"),
            ("global", "off", "disabled"),
            ("global", "shared", "shadowed:"),
        ],
        "{run:?}"
    );
    assert!(
        run.stdout.contains("field \"exec\" must be a string"),
        "{run:?}"
    );

    let run = w
        .cmd(&["ext", "list", "--json", "--trust", "--ext"])
        .arg(&explicit)
        .output()
        .unwrap();
    let doc = json(&run.into());
    let first = &doc[0];
    assert_eq!(first["scope"], "explicit");
    assert_eq!(first["protocol"], "zot");
    assert_eq!(first["language"], "sh");
    assert_eq!(first["enabled"], true);
    assert_eq!(doc[2]["state"], "shadowed");
    assert!(
        doc[2]["reason"]
            .as_str()
            .unwrap()
            .contains(&explicit.display().to_string())
    );
    assert_eq!(doc[3]["state"], "invalid");
    assert_eq!(doc[3]["name"], serde_json::Value::Null);

    // --no-ext skips discovery; --ext still counts.
    let run = w
        .cmd(&["ext", "list", "--json", "--no-ext", "-e"])
        .arg(&explicit)
        .output()
        .unwrap();
    let doc = json(&run.into());
    assert_eq!(doc.as_array().unwrap().len(), 1);
}

#[test]
fn overlong_and_spoofing_names_are_invalid_manifests() {
    let w = World::new();
    let long = "a".repeat(10_000);
    w.ext_in(
        &w.global(),
        "long",
        &format!(r#"{{"name":"{long}","exec":"./ext.sh"}}"#),
        "#!/bin/sh\n",
    );
    // U+202E turns the rest of the line around when printed.
    w.ext_in(
        &w.global(),
        "spoof",
        "{\"name\":\"abc\u{202E}txt.exe\",\"exec\":\"./ext.sh\"}",
        "#!/bin/sh\n",
    );
    let run = w.zot(&["ext", "list", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let listed = json(&run);
    assert_eq!(listed[0]["state"], "invalid");
    assert!(
        listed[0]["reason"]
            .as_str()
            .unwrap()
            .contains("must be at most 64 characters"),
        "{listed}"
    );
    assert_eq!(listed[1]["state"], "invalid");
    assert!(
        listed[1]["reason"]
            .as_str()
            .unwrap()
            .contains("bidirectional"),
        "{listed}"
    );
    let run = w.zot(&["ext", "list"]);
    assert!(
        !run.stdout.contains('\u{202E}') && !run.stdout.contains(&long),
        "{run:?}"
    );
    // doctor does not trip over them either.
    let run = w.zot(&["ext", "doctor", "--json"]);
    assert_eq!(json(&run)["extensions"][0]["state"], "invalid_manifest");
}
