//! Start-up: hello, hello_ack, on_hello, registrations, subscribe (only
//! what has handlers), ready; and the end: shutdown_ack and a clean exit.

use serde_json::json;
use zot_extensions::{CommandOutcome, Readiness};

use super::support::{Env, assert_frames_valid, loaded, sent, sent_types};

#[tokio::test]
async fn registers_everything_before_ready() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;

    let info = loaded(&host, "probe");
    assert_eq!(
        info.readiness,
        Readiness::Ready,
        "sent ready, not auto-ready"
    );
    let commands: Vec<String> = info.commands.iter().map(|c| c.name.clone()).collect();
    assert_eq!(
        commands,
        [
            "say", "ins", "show", "nothing", "fail", "both", "panel", "boom", "slow", "notes",
            "where"
        ]
    );
    let visible: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(visible, ["forecast", "echo", "loader", "explode", "refuse"]);
    let secret = info.tools.iter().find(|t| t.name == "secret").unwrap();
    assert!(secret.deferred);
    assert_eq!(
        info.events,
        ["session_start", "tool_call", "turn_end", "turn_start"]
    );
    assert_eq!(
        info.intercepts,
        [
            "assistant_message",
            "before_agent_start",
            "tool_call",
            "turn_start"
        ]
    );

    host.shutdown().await;
    let types = sent_types(&dir);
    let ready = types.iter().position(|t| t == "ready").unwrap();
    assert_eq!(types[0], "hello");
    assert_eq!(types[ready + 1..], ["shutdown_ack"]);
    assert_eq!(types.iter().filter(|t| *t == "subscribe").count(), 1);
    assert_eq!(
        types.iter().filter(|t| t.starts_with("register_")).count(),
        17
    );
    assert_eq!(
        sent(&dir)[0],
        json!({"type": "hello", "name": "probe", "version": "0.1.0",
               "capabilities": ["commands", "tools", "events", "panels"]})
    );
    assert_frames_valid(&dir);
}

#[tokio::test]
async fn on_hello_sees_hello_ack_and_its_registrations_come_before_ready() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    let reply = host.invoke_command("where", "").await.unwrap();
    let want = format!("9.9.9 anthropic/test-model in {}", env.cwd());
    assert_eq!(reply.outcome, CommandOutcome::Display(want));
    host.shutdown().await;
    let frames = sent(&dir);
    let at = |pred: &dyn Fn(&serde_json::Value) -> bool| frames.iter().position(pred).unwrap();
    assert!(
        at(&|f| f["name"] == "where") < at(&|f| f["type"] == "ready"),
        "on_hello registration after ready"
    );
    assert_frames_valid(&dir);
}

/// The typed tool's schema is derived from its Rust type, self-contained.
#[tokio::test]
async fn typed_tool_schema_is_derived_from_the_type() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    let forecast = host
        .tools()
        .into_iter()
        .find(|t| t.name == "forecast")
        .unwrap();
    assert_eq!(
        forecast.description.as_deref(),
        Some("Weather forecast for a city.")
    );
    assert_eq!(
        forecast.schema,
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Berlin\"."},
                "days": {
                    "type": ["integer", "null"], "format": "uint8", "minimum": 0, "maximum": 255,
                    "description": "How many days ahead (1 if omitted)."
                },
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["city", "units"],
            "description": "Arguments of the `forecast` tool."
        })
    );
    let loader = host
        .tools()
        .into_iter()
        .find(|t| t.name == "loader")
        .unwrap();
    assert_eq!(
        loader.schema,
        json!({"type": "object", "description": "No arguments."})
    );
    host.shutdown().await;
}

#[tokio::test]
async fn nothing_is_subscribed_without_handlers() {
    let env = Env::new();
    let dir = env.probe("mini", &["minimal"]);
    let (host, _rx) = env.start(&[&dir]).await;
    let info = loaded(&host, "mini");
    assert_eq!(info.readiness, Readiness::Ready);
    assert!(info.events.is_empty() && info.intercepts.is_empty());
    host.shutdown().await;
    assert_eq!(
        sent_types(&dir),
        ["hello", "register_command", "ready", "shutdown_ack"]
    );
    assert_frames_valid(&dir);
}

#[tokio::test]
async fn shutdown_is_acknowledged_and_the_process_exits_cleanly() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    assert_eq!(host.shutdown().await, 1);
    assert_eq!(
        sent_types(&dir).last().map(String::as_str),
        Some("shutdown_ack")
    );
    let info = loaded(&host, "probe");
    assert!(!info.running);
    assert_eq!(info.exit.as_deref(), Some("exit status: 0"));
    assert!(
        !env.log("probe").contains("SIGTERM"),
        "{}",
        env.log("probe")
    );
    assert_frames_valid(&dir);
}
