//! `zot ext remove|rm`, `enable`, `disable`: names, scopes, confirmation.

use super::support::{World, json};

#[test]
fn enable_disable_change_only_the_enabled_field() {
    let w = World::new();
    let dir = w.ext_in(
        &w.global(),
        "dir-name",
        r#"{"version":"1.0.0","name":"manifest-name","exec":"./ext.sh","zeta":{"b":1,"a":2},"alpha":[1,2]}"#,
        &super::support::sh_ext("manifest-name", &[]),
    );
    // By manifest name, then by directory name: the same rule for both.
    let run = w.zot(&["ext", "disable", "manifest-name"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("disabled manifest-name"), "{run:?}");
    let text = std::fs::read_to_string(dir.join("extension.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["version", "name", "exec", "zeta", "alpha", "enabled"]
    );
    assert_eq!(value["enabled"], false);
    assert_eq!(value["zeta"], serde_json::json!({"b":1,"a":2}));
    let listed = json(&w.zot(&["ext", "list", "--json"]));
    assert_eq!(listed[0]["state"], "disabled");

    let run = w.zot(&["ext", "enable", "dir-name"]);
    assert_eq!(run.code, 0, "{run:?}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("extension.json")).unwrap())
            .unwrap();
    assert_eq!(value["enabled"], true);
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["version", "name", "exec", "zeta", "alpha", "enabled"]
    );

    let run = w.zot(&["ext", "enable", "ghost"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.starts_with("zot: no extension named \"ghost\""),
        "{run:?}"
    );
    assert!(
        run.stderr.contains(&w.global().display().to_string()),
        "{run:?}"
    );
}

#[test]
fn both_scopes_need_a_choice() {
    let w = World::new();
    w.ext(&w.global(), "twin", &[]);
    w.ext(&w.project_root(), "twin", &[]);
    let run = w.zot(&["ext", "disable", "twin"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("both scopes") && run.stderr.contains("--project or --global"),
        "{run:?}"
    );
    let run = w.zot(&["ext", "disable", "twin", "--project"]);
    assert_eq!(run.code, 0, "{run:?}");
    let listed = json(&w.zot(&["ext", "list", "--json", "--trust"]));
    assert_eq!(listed[0]["scope"], "project");
    assert_eq!(listed[0]["state"], "disabled");
    assert_eq!(listed[1]["state"], "ok");
    let run = w.zot(&["ext", "rm", "twin", "--global", "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!w.global().join("twin").exists());
    assert!(w.project_root().join("twin").exists());
    let run = w.zot(&["ext", "rm", "twin", "--global", "--project"]);
    assert_eq!(run.code, 2, "conflicting flags are a usage error: {run:?}");
}

#[test]
fn remove_refuses_without_a_terminal_unless_yes() {
    let w = World::new();
    let dir = w.ext(&w.global(), "doomed", &[]);
    let run = w.zot(&["ext", "remove", "doomed"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("refusing to remove") && run.stderr.contains("--yes"),
        "{run:?}"
    );
    assert!(dir.exists());
    let run = w.zot(&["ext", "remove", "doomed", "-y"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("removed"), "{run:?}");
    assert!(!dir.exists());
    let run = w.zot(&["ext", "remove", "doomed", "-y"]);
    assert_eq!(run.code, 1, "{run:?}");
}

/// On a terminal, `remove` asks and honours the answer.
#[test]
fn remove_asks_on_a_terminal() {
    let w = World::new();
    let dir = w.ext(&w.global(), "asked", &[]);
    let answer = |reply: &str| {
        let script = format!(
            r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv({zot:?}, [{zot:?}, "ext", "rm", "asked"])
out = b""
while b"[y/N]" not in out:
    out += os.read(fd, 1024)
os.write(fd, {reply:?}.encode() + b"\n")
while True:
    try:
        chunk = os.read(fd, 1024)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode())
sys.exit(os.waitstatus_to_exitcode(status))
"#,
            zot = super::support::ZOT,
        );
        let mut python = std::process::Command::new("python3");
        python.arg("-c").arg(&script);
        let out = w.place(&mut python).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = answer("n");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("aborted; nothing removed"), "{out}");
    assert!(dir.exists());
    let (code, out) = answer("y");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("removed"), "{out}");
    assert!(!dir.exists());
}
