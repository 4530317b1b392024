//! What trust pins for MCP servers once the ecosystem is installed: the
//! project's `.mcp.json` and the project files its servers run, beside the
//! other ecosystems' inputs (moved here from the trust store's own tests
//! when MCP left the host core).

use std::path::Path;

use zot_extensions::TrustStore;
use zot_extensions::trust::{diff, snapshot};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn mcp_json_and_the_project_files_it_runs_are_pinned() {
    zot_mcp::install();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    write(
        &project.join(".mcp.json"),
        r#"{"mcpServers": {"local": {"command": "node", "args": ["tools/server.js", "--flag"]}}}"#,
    );
    write(&project.join("tools/server.js"), "// v1");
    let before = snapshot(&project);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        [".mcp.json", "tools/server.js"]
    );
    write(&project.join("tools/server.js"), "// v2");
    let shown: Vec<String> = diff(&before, &snapshot(&project))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(shown, ["changed tools/server.js"]);
}

#[test]
fn what_hooks_servers_and_commands_run_is_pinned_with_its_directory() {
    zot_mcp::install();
    zot_hooks::ecosystem::install();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    write(
        &project.join(".claude/settings.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command",
            "command": "sh tools/check.sh > tools/out.log; sh run.sh; sh tools/later.sh"}]}]}}"#,
    );
    write(&project.join("tools/check.sh"), ". tools/helper.sh");
    write(&project.join("tools/helper.sh"), "echo hi");
    write(&project.join("tools/lib/deep.sh"), "echo deep");
    write(&project.join("run.sh"), "echo top");
    write(&project.join("README.md"), "not run");
    write(
        &project.join(".mcp.json"),
        r#"{"mcpServers": {"py": {"command": "python3", "args": ["-m", "srv.main"]}}}"#,
    );
    write(&project.join("srv/main.py"), "import srv.impl");
    write(&project.join("srv/impl.py"), "print()");
    write(
        &project.join(".claude/commands/fmt.md"),
        "!`node scripts/fmt.js`",
    );
    write(&project.join("scripts/fmt.js"), "//");
    write(&project.join("scripts/util.js"), "//");
    let files = snapshot(&project);
    let pinned: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        pinned,
        [
            ".claude/commands/fmt.md",
            ".claude/settings.json#hooks",
            ".mcp.json",
            "run.sh",
            "scripts/fmt.js",
            "scripts/util.js",
            "srv/impl.py",
            "srv/main.py",
            "tools/check.sh",
            "tools/helper.sh",
            "tools/lib/deep.sh",
        ]
    );

    // A quick re-check sees a change, an added file and a named file appearing.
    let store = TrustStore::load(&dir.path().join("home")).unwrap();
    for change in [
        project.join("tools/helper.sh"),
        project.join("srv/new.py"),
        project.join("tools/later.sh"),
    ] {
        let (_, watched) = store.current_watched(&project);
        assert!(watched.unchanged());
        write(&change, "changed");
        assert!(!watched.unchanged(), "{} went unseen", change.display());
    }
}
