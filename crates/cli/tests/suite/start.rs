//! How zot starts: `--cwd DIR` runs as if started in DIR.

use zot_testkit::{MockModel, anthropic};

use super::support::{Run, World};

#[tokio::test(flavor = "multi_thread")]
async fn cwd_runs_as_if_started_there() {
    let w = World::new();
    let sub = w.project.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("AGENTS.md"), "SUB PROJECT NOTES").unwrap();
    let model = MockModel::start([
        anthropic::tool_call("b1", "bash", r#"{"command":"pwd"}"#),
        anthropic::text("done"),
    ])
    .await;
    let run: Run = w
        .against(&model, "anthropic", &["-p", "--cwd", "sub", "where am i"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let requests = model.requests();
    // The context file of DIR, and tools running there.
    assert!(
        requests[0].body["system"]
            .to_string()
            .contains("SUB PROJECT NOTES"),
        "{}",
        requests[0].body["system"]
    );
    let result = requests[1].body["messages"].to_string();
    let real = std::fs::canonicalize(&sub).unwrap();
    assert!(
        result.contains(&format!("{}\\n", real.display())),
        "{result}"
    );

    let run: Run = w
        .against(&model, "anthropic", &["-p", "-C", "missing", "hi"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("--cwd missing: cannot change to it"),
        "{run:?}"
    );
}
