//! Project trust: untrusted project extensions never run; trust is pinned to content.

use super::support::{World, json};

#[test]
fn untrusted_project_extensions_are_skipped_with_one_warning() {
    let w = World::new();
    let dir = w.ext(
        &w.project_root(),
        "local",
        &[r#"{"type":"register_command","name":"local"}"#],
    );
    std::fs::write(
        dir.join("ext.sh"),
        format!(
            "#!/bin/sh\ntouch ran\n{}",
            super::support::sh_ext("local", &[]).trim_start_matches("#!/bin/sh\n")
        ),
    )
    .unwrap();
    w.ext(&w.global(), "global-one", &[]);

    let run = w.zot(&["ext", "doctor", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let doc = json(&run);
    assert_eq!(doc["extensions"][0]["state"], "untrusted");
    assert_eq!(
        doc["extensions"][1]["state"], "ready",
        "global extensions need no trust"
    );
    assert!(
        !dir.join("ran").exists(),
        "an untrusted project extension ran"
    );
    assert_eq!(run.stderr.matches("zot trust").count(), 1, "{run:?}");
    assert!(run.stderr.contains("not trusted"), "{run:?}");

    let listed = json(&w.zot(&["ext", "list", "--json"]));
    assert_eq!(listed[0]["state"], "untrusted");

    // --trust: for this run only.
    let run = w.zot(&["ext", "doctor", "--json", "--trust"]);
    assert_eq!(json(&run)["extensions"][0]["state"], "ready");
    assert!(dir.join("ran").exists());
    assert!(!run.stderr.contains("zot trust"), "{run:?}");
    std::fs::remove_file(dir.join("ran")).unwrap();
    assert_eq!(
        json(&w.zot(&["ext", "list", "--json"]))[0]["state"],
        "untrusted"
    );
}

#[test]
fn trust_persists_and_content_changes_revoke_it() {
    let w = World::new();
    let dir = w.ext(&w.project_root(), "local", &[]);

    let run = w.zot(&["trust"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("trusted") && run.stderr.contains("sha256:"),
        "{run:?}"
    );
    let store: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.home.join("trust.json")).unwrap()).unwrap();
    let key = w.project.canonicalize().unwrap().display().to_string();
    assert!(
        store["projects"][&key]["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(json(&w.zot(&["ext", "list", "--json"]))[0]["state"], "ok");
    let run = w.zot(&["trust", "--list"]);
    assert!(
        run.stdout.contains(&key) && run.stdout.contains("\ttrusted"),
        "{run:?}"
    );

    // Changing the script the manifest runs revokes trust.
    std::fs::write(
        dir.join("ext.sh"),
        super::support::sh_ext("local", &[r#"{"type":"ready"}"#]),
    )
    .unwrap();
    let run = w.zot(&["ext", "list", "--json"]);
    assert_eq!(json(&run)[0]["state"], "untrusted");
    assert!(run.stderr.contains("changed since"), "{run:?}");
    assert!(
        w.zot(&["trust", "--list"])
            .stdout
            .contains("changed since trusted")
    );
    w.zot(&["trust"]);
    assert_eq!(json(&w.zot(&["ext", "list", "--json"]))[0]["state"], "ok");

    // So does a new extension, or a manifest edit.
    w.ext(&w.project_root(), "another", &[]);
    assert_eq!(
        json(&w.zot(&["ext", "list", "--json"]))[0]["state"],
        "untrusted"
    );
    w.zot(&["trust"]);
    w.zot(&["ext", "disable", "another"]);
    assert_eq!(
        json(&w.zot(&["ext", "list", "--json"]))[1]["state"],
        "untrusted"
    );

    let run = w.zot(&["trust", "--revoke"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("revoked"), "{run:?}");
    let run = w.zot(&["trust", "--revoke"]);
    assert!(run.stderr.contains("was not trusted"), "{run:?}");
    let run = w.zot(&["trust", "--list"]);
    assert!(run.stdout.is_empty(), "{run:?}");
}

#[test]
fn a_corrupt_trust_file_is_a_clear_error() {
    let w = World::new();
    std::fs::write(w.home.join("trust.json"), "{oops").unwrap();
    let run = w.zot(&["ext", "list"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.starts_with("zot: ") && run.stderr.contains("trust.json: invalid trust file"),
        "{run:?}"
    );
}
