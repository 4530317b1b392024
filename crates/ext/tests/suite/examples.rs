//! The repository's Rust example extensions, copied and installed as a user
//! would (`zot ext install` of the directory with its built binary in
//! `bin/`), then exercised through the host.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use zot_extensions::manage::install;
use zot_extensions::{CommandOutcome, Outcome, Readiness};

use super::support::{Env, example_bin, loaded};

/// Copies `examples/extensions/<name>` (without a `bin/` of its own) to a
/// scratch dir, puts the freshly built example binary in its `bin/`, and
/// installs that into `$ZOT_HOME/extensions`. Returns the installed dir.
fn install_example(env: &Env, name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/extensions")
        .join(name);
    let copy = env.scratch.join(name);
    copy_dir(&source, &copy);
    std::fs::create_dir_all(copy.join("bin")).unwrap();
    std::fs::copy(example_bin(name), copy.join("bin").join(name)).unwrap();
    let (dir, manifest) = install(copy.to_str().unwrap(), &env.home.join("extensions")).unwrap();
    assert_eq!(manifest.name, name);
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "bin" {
                copy_dir(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test]
async fn hello_example_answers_its_commands() {
    let env = Env::new();
    install_example(&env, "hello");
    let (host, _rx) = env.start(&[]).await;
    let info = loaded(&host, "hello");
    assert_eq!(info.readiness, Readiness::Ready);
    let names: Vec<String> = info.commands.iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, ["hello", "about", "cwd"]);

    let run = |args: &'static str| {
        let host = host.clone();
        async move { host.invoke_command("hello", args).await.unwrap().outcome }
    };
    assert_eq!(
        run("Ada").await,
        CommandOutcome::Prompt("Greet Ada in one short sentence.".into())
    );
    assert_eq!(
        run("").await,
        CommandOutcome::Prompt("Greet me in one short sentence.".into())
    );
    assert_eq!(
        host.invoke_command("about", "").await.unwrap().outcome,
        CommandOutcome::Display("zot 9.9.9 with anthropic / test-model (protocol 1)".into())
    );
    assert_eq!(
        host.invoke_command("cwd", "").await.unwrap().outcome,
        CommandOutcome::Display(env.cwd())
    );
    host.shutdown().await;
    assert_eq!(
        loaded(&host, "hello").exit.as_deref(),
        Some("exit status: 0")
    );
}

#[tokio::test]
async fn guard_example_blocks_rewrites_and_logs_its_decisions() {
    let env = Env::new();
    let dir = install_example(&env, "guard");
    let (host, _rx) = env.start(&[]).await;
    let info = loaded(&host, "guard");
    assert_eq!(info.readiness, Readiness::Ready);
    assert_eq!(info.intercepts, ["tool_call"]);
    let bash = |command: &str| json!({ "command": command });

    assert_eq!(
        host.intercept_tool_call("1", "bash", &bash("rm  -rf /"))
            .await,
        Outcome::Block {
            extension: "guard".into(),
            reason: "refused: matches danger pattern \"rm -rf\"".into()
        }
    );
    assert_eq!(
        host.intercept_tool_call("2", "bash", &bash("sudo apt install jq"))
            .await,
        Outcome::Allow(Some(bash("apt install jq")))
    );
    let push = json!({"command": "git push -f origin main", "timeout": 30});
    assert_eq!(
        host.intercept_tool_call("3", "bash", &push).await,
        Outcome::Allow(Some(
            json!({"command": "git push --force-with-lease origin main", "timeout": 30})
        ))
    );
    assert_eq!(
        host.intercept_tool_call("4", "bash", &bash("ls -la")).await,
        Outcome::Allow(None)
    );
    assert_eq!(
        host.intercept_tool_call("5", "read", &json!({"path": "rm -rf"}))
            .await,
        Outcome::Allow(None)
    );

    let log: Vec<Value> = std::fs::read_to_string(dir.join("guard.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decisions: Vec<(&str, &str)> = log
        .iter()
        .map(|e| {
            (
                e["decision"].as_str().unwrap(),
                e["command"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("block", "rm  -rf /"),
            ("rewrite", "sudo apt install jq"),
            ("rewrite", "git push -f origin main"),
            ("allow", "ls -la"),
        ]
    );
    let CommandOutcome::Display(shown) = host.invoke_command("guard", "").await.unwrap().outcome
    else {
        panic!("/guard should display");
    };
    assert!(
        shown.starts_with("guard, last 4 of 4 decisions:"),
        "{shown}"
    );
    assert!(
        shown.contains(
            "rewrite: git push -f origin main -> git push --force-with-lease origin main"
        )
    );
    host.shutdown().await;
}
