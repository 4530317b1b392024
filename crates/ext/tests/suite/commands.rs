//! Slash commands: every kind of answer, concurrency, and a panicking handler.

use zot_extensions::CommandOutcome;
use zot_extensions::zot_protocol::zot::PanelContent;

use super::support::{Env, assert_frames_valid, loaded, sent};

#[tokio::test]
async fn every_response_kind_reaches_the_host() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    let run = |name: &'static str, args: &'static str| {
        let host = host.clone();
        async move { host.invoke_command(name, args).await.unwrap() }
    };

    let reply = run("say", "  berlin ").await;
    assert_eq!(reply.outcome, CommandOutcome::Prompt("say berlin".into()));
    assert_eq!((reply.extension.as_str(), reply.error), ("probe", None));
    assert_eq!(
        run("ins", "text").await.outcome,
        CommandOutcome::Insert("text".into())
    );
    assert_eq!(
        run("show", "note").await.outcome,
        CommandOutcome::Display("note".into())
    );
    assert_eq!(run("nothing", "").await.outcome, CommandOutcome::Noop);
    let failed = run("fail", "x").await;
    assert_eq!(failed.outcome, CommandOutcome::Noop);
    assert_eq!(failed.error.as_deref(), Some("failed: x"));
    let both = run("both", "").await;
    assert_eq!(both.outcome, CommandOutcome::Display("shown".into()));
    assert_eq!(both.error.as_deref(), Some("and an error"));
    assert_eq!(
        run("panel", "").await.outcome,
        CommandOutcome::OpenPanel(PanelContent {
            id: "probe-panel".into(),
            title: Some("Probe".into()),
            lines: vec!["one".into(), "two".into()],
            footer: Some("x closes".into()),
        })
    );
    // Case-insensitive, answered under the registered spelling.
    assert_eq!(run("SHOW", "again").await.command, "show");
    host.shutdown().await;
    assert_frames_valid(&dir);
}

/// A slow command does not hold up a quick one sent after it, also when
/// a worker from an earlier request is idle.
#[tokio::test]
async fn commands_run_concurrently() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    host.invoke_command("show", "warm-up").await.unwrap();
    let (slow, quick) = tokio::join!(host.invoke_command("slow", ""), async {
        tokio::task::yield_now().await;
        host.invoke_command("show", "quick").await
    });
    assert_eq!(
        slow.unwrap().outcome,
        CommandOutcome::Display("slow done".into())
    );
    assert_eq!(
        quick.unwrap().outcome,
        CommandOutcome::Display("quick".into())
    );
    host.shutdown().await;
    let answers: Vec<String> = sent(&dir)
        .iter()
        .filter(|f| f["type"] == "command_response")
        .map(|f| f["display"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(answers, ["warm-up", "quick", "slow done"]);
}

#[tokio::test]
async fn a_panicking_command_answers_an_error_and_the_extension_lives_on() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    let reply = host.invoke_command("boom", "").await.unwrap();
    assert_eq!(reply.outcome, CommandOutcome::Noop);
    let error = reply.error.unwrap();
    assert!(error.contains("command exploded"), "{error}");
    assert_eq!(
        host.invoke_command("show", "alive").await.unwrap().outcome,
        CommandOutcome::Display("alive".into())
    );
    assert!(loaded(&host, "probe").running);
    assert!(env.log("probe").contains("command /boom panicked"));
    host.shutdown().await;
    assert_frames_valid(&dir);
}
