//! Items 7 and 8: the registration window and the naming rules.

use std::time::Duration;

use serde_json::json;
use zot_extensions::{ExtensionHost, HostEvent, NameKind, Owner, Readiness, ReportStatus};

use super::support::{Env, SECS5, event_matching, registers};

fn readiness(host: &ExtensionHost, name: &str) -> Readiness {
    let report = host.report();
    let entry = report
        .iter()
        .find(|r| r.name.as_deref() == Some(name))
        .unwrap();
    match &entry.status {
        ReportStatus::Loaded(info) => info.readiness,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn registrations_accumulate_until_ready() {
    let env = Env::new();
    let dir = env.ext(
        "reg",
        &registers(
            r#"[
    {"type":"register_command","name":"one","description":"first"},
    {"type":"subscribe","events":["turn_start"]},
    {"type":"register_tool","name":"t1","schema":{"type":"object"}},
    {"type":"register_command","name":"two"},
    {"type":"subscribe","events":["turn_end"],"intercept":["tool_call"]},
    {"type":"register_tool","name":"t2","description":"d","schema":{"type":"object","properties":{}}}
]"#,
        ),
    );
    let (host, _rx) = env.start(&[&dir]).await;
    assert_eq!(readiness(&host, "reg"), Readiness::Ready);
    let names: Vec<_> = host.commands().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["one", "two"]);
    let tools: Vec<_> = host.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(tools, ["t1", "t2"]);
    let ReportStatus::Loaded(info) = &host.report()[0].status else {
        panic!()
    };
    assert_eq!(info.events, ["turn_end", "turn_start"]);
    assert_eq!(info.intercepts, ["tool_call"]);
    host.shutdown().await;
}

#[tokio::test]
async fn silence_without_ready_auto_readies() {
    let env = Env::new();
    let body = r#"
handshake(NAME)
emit({"type":"register_command","name":"legacy"})
for msg in frames():
    pass
"#;
    let dir = env.ext("legacy", body);
    let (host, _rx) = env.start(&[&dir]).await;
    assert_eq!(readiness(&host, "legacy"), Readiness::AutoReady);
    assert_eq!(host.commands()[0].name, "legacy");
    assert!(
        env.log("legacy")
            .contains("no ready frame; auto-readying after idle")
    );
    host.shutdown().await;
}

#[tokio::test]
async fn chatty_extension_without_ready_hits_its_own_deadline() {
    let env = Env::new();
    let chatty = r#"
handshake(NAME)
while True:
    emit({"type":"notify","level":"info","message":"still here"})
    time.sleep(0.05)
"#;
    let a = env.ext("chatty-a", chatty);
    let b = env.ext("chatty-b", chatty);
    let mut config = env.config(&[&a, &b]);
    config.limits.ready_timeout = Duration::from_millis(700);
    let (host, _rx) = ExtensionHost::start(config).await;
    assert_eq!(readiness(&host, "chatty-a"), Readiness::TimedOut);
    assert_eq!(readiness(&host, "chatty-b"), Readiness::TimedOut);
    assert!(
        env.log("chatty-b")
            .contains("timed out waiting for ready frame")
    );
    host.shutdown().await;
}

#[tokio::test]
async fn late_registrations_are_honoured() {
    let env = Env::new();
    let body = r#"
handshake(NAME)
emit({"type":"register_command","name":"more"})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "command_invoked":
        emit({"type":"register_command","name":"later"})
        emit({"type":"register_tool","name":"late_tool","schema":{"type":"object"}})
        emit({"type":"command_response","id":msg["id"],"action":"noop"})
"#;
    let dir = env.ext("late", body);
    let (host, mut rx) = env.start(&[&dir]).await;
    assert!(host.tools().is_empty());
    host.invoke_command("more", "").await.unwrap();
    event_matching(&mut rx, SECS5, |e| *e == HostEvent::ToolsChanged)
        .await
        .expect("tools changed");
    assert_eq!(host.tools()[0].name, "late_tool");
    let commands: Vec<_> = host.commands().into_iter().map(|c| c.name).collect();
    assert_eq!(commands, ["more", "later"]);
    host.invoke_command("later", "").await.unwrap();
    host.shutdown().await;
}

#[tokio::test]
async fn commands_match_case_insensitively_and_keep_their_spelling() {
    let env = Env::new();
    let body = r#"
handshake(NAME)
emit({"type":"register_command","name":"DeployNow"})
emit({"type":"register_command","name":"deploynow"})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "command_invoked":
        emit({"type":"command_response","id":msg["id"],"action":"display","display":msg["name"]})
"#;
    let dir = env.ext("cased", body);
    let (host, _rx) = env.start(&[&dir]).await;
    assert_eq!(host.commands().len(), 1);
    for typed in ["deploynow", "/DEPLOYNOW", "DeployNow"] {
        let reply = host.invoke_command(typed, "").await.unwrap();
        assert_eq!(reply.command, "DeployNow");
        assert_eq!(
            reply.outcome,
            zot_extensions::CommandOutcome::Display("DeployNow".into())
        );
    }
    assert!(env.log("cased").contains("registered twice"));
    host.shutdown().await;
}

#[tokio::test]
async fn builtins_win_and_the_earlier_extension_wins_whenever_it_registers() {
    let env = Env::new();
    // "first" loads first but registers its names late; "second" registers at once.
    let first = env.ext(
        "first",
        r#"
handshake(NAME)
time.sleep(0.15)
emit({"type":"register_command","name":"Shared"})
emit({"type":"register_tool","name":"shared_tool","schema":{"type":"object"}})
emit({"type":"ready"})
for msg in frames():
    pass
"#,
    );
    let second = env.ext(
        "second",
        &registers(
            r#"[
    {"type":"register_command","name":"shared"},
    {"type":"register_tool","name":"shared_tool","schema":{"type":"object"}},
    {"type":"register_command","name":"HELP"},
    {"type":"register_tool","name":"bash","schema":{"type":"object"}},
    {"type":"register_tool","name":"web_fetch","schema":{"type":"object"}},
    {"type":"register_command","name":"own"}
]"#,
        ),
    );
    let (host, _rx) = env.start(&[&first, &second]).await;
    let commands: Vec<_> = host
        .commands()
        .into_iter()
        .map(|c| (c.name, c.extension))
        .collect();
    assert_eq!(
        commands,
        [
            ("Shared".to_owned(), "first".to_owned()),
            ("own".to_owned(), "second".to_owned())
        ]
    );
    let tools: Vec<_> = host
        .tools()
        .into_iter()
        .map(|t| (t.name, t.extension))
        .collect();
    assert_eq!(tools, [("shared_tool".to_owned(), "first".to_owned())]);
    assert!(
        host.invoke_command("help", "").await.is_err(),
        "a built-in must never dispatch"
    );

    let conflicts = host.conflicts();
    let has = |kind, name: &str, winner: Owner| {
        conflicts
            .iter()
            .any(|c| c.kind == kind && c.name == name && c.winner == winner && c.loser == "second")
    };
    assert!(
        has(
            NameKind::Command,
            "shared",
            Owner::Extension("first".into())
        ),
        "{conflicts:?}"
    );
    assert!(
        has(
            NameKind::Tool,
            "shared_tool",
            Owner::Extension("first".into())
        ),
        "{conflicts:?}"
    );
    assert!(
        has(NameKind::Command, "HELP", Owner::Builtin),
        "{conflicts:?}"
    );
    assert!(has(NameKind::Tool, "bash", Owner::Builtin), "{conflicts:?}");
    assert!(
        has(NameKind::Tool, "web_fetch", Owner::Builtin),
        "{conflicts:?}"
    );
    assert_eq!(conflicts.len(), 5, "{conflicts:?}");

    let log = env.log("second");
    assert!(
        log.contains("command /shared is shadowed by extension first"),
        "{log}"
    );
    assert!(
        log.contains("tool \"bash\" is shadowed by a built-in"),
        "{log}"
    );
    assert!(!env.log("first").contains("shadowed"));
    host.shutdown().await;
}

#[tokio::test]
async fn non_object_schemas_are_rejected_with_a_warning() {
    let env = Env::new();
    let dir = env.ext(
        "schemas",
        &registers(
            r#"[
    {"type":"register_tool","name":"stringy","schema":"{not json"},
    {"type":"register_tool","name":"missing"},
    {"type":"register_tool","name":"good","schema":{"type":"object"}}
]"#,
        ),
    );
    let (host, mut rx) = env.start(&[&dir]).await;
    let tools: Vec<_> = host.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(tools, ["good"]);
    for (name, kind) in [("stringy", "a string"), ("missing", "null")] {
        let said = format!(
            "tool \"{name}\" rejected: invalid input schema: the schema is {kind}, not a JSON object"
        );
        event_matching(&mut rx, SECS5, |e| {
            matches!(e, HostEvent::Warning { extension, message } if extension == "schemas" && *message == said)
        })
        .await;
        assert!(env.log("schemas").contains(&said));
    }
    host.shutdown().await;
}

#[tokio::test]
async fn deferred_tools_stay_hidden_until_activated() {
    let env = Env::new();
    let body = r#"
handshake(NAME)
emit({"type":"register_tool","name":"loader","schema":{"type":"object"}})
emit({"type":"register_tool","name":"weather","schema":{"type":"object"},"deferred":True})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "tool_call":
        emit({"type":"tool_result","id":msg["id"],"content":[{"type":"text","text":"ok"}],
              "activate_tools":["weather","no_such_tool","loader"]})
"#;
    let dir = env.ext("deferring", body);
    let (host, mut rx) = env.start(&[&dir]).await;
    let names = |host: &ExtensionHost| host.tools().into_iter().map(|t| t.name).collect::<Vec<_>>();
    assert_eq!(names(&host), ["loader"]);
    assert!(
        host.call_tool("weather", json!({})).await.is_err(),
        "hidden tools are not callable"
    );
    let reply = host.call_tool("loader", json!({})).await.unwrap();
    assert_eq!(reply.activated, ["weather"]);
    event_matching(&mut rx, SECS5, |e| *e == HostEvent::ToolsChanged)
        .await
        .expect("tools changed");
    assert_eq!(names(&host), ["loader", "weather"]);
    let again = host.call_tool("loader", json!({})).await.unwrap();
    assert!(again.activated.is_empty(), "already active");
    host.shutdown().await;
}
