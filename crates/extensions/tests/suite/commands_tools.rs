//! Item 9: commands and tools, their replies, deadlines and request ids.

use std::time::Duration;

use serde_json::json;
use zot_extensions::zot_protocol::zot::{ContentBlock, PanelContent};
use zot_extensions::{CommandOutcome, DispatchError, ExtensionHost, RequestError};

use super::support::{Env, received_of};

const COMMANDS: &str = r#"
handshake(NAME)
for name in ["p", "i", "d", "panel", "n", "oops", "slow", "blank", "wrongreply"]:
    emit({"type":"register_command","name":name})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] != "command_invoked":
        continue
    i, name, args = msg["id"], msg["name"], msg.get("args", "")
    if name == "p":
        emit({"type":"command_response","id":i,"action":"prompt","prompt":"say " + args})
    elif name == "i":
        emit({"type":"command_response","id":i,"action":"insert","insert":args})
    elif name == "d":
        emit({"type":"command_response","id":i,"action":"display","display":"shown"})
    elif name == "panel":
        emit({"type":"command_response","id":i,"action":"open_panel",
              "open_panel":{"id":"p1","title":"T","lines":["a","b"],"footer":"f"}})
    elif name == "n":
        emit({"type":"command_response","id":i,"action":"noop"})
    elif name == "oops":
        emit({"type":"command_response","id":i,"action":"display","display":"x","error":"it broke"})
    elif name == "blank":
        emit({"type":"command_response","id":i})
    elif name == "wrongreply":
        emit({"type":"tool_result","id":i,"content":[]})
"#;

#[tokio::test]
async fn every_command_action_and_error() {
    let env = Env::new();
    let dir = env.ext("cmds", COMMANDS);
    let mut config = env.config(&[&dir]);
    config.limits.command_timeout = Duration::from_millis(500);
    let (host, _rx) = ExtensionHost::start(config).await;

    let outcome = |name: &'static str, args: &'static str| {
        let host = host.clone();
        async move { host.invoke_command(name, args).await.unwrap() }
    };
    assert_eq!(
        outcome("p", "  hello   world  ").await.outcome,
        CommandOutcome::Prompt("say hello   world".into())
    );
    assert_eq!(
        outcome("i", "text").await.outcome,
        CommandOutcome::Insert("text".into())
    );
    assert_eq!(
        outcome("d", "").await.outcome,
        CommandOutcome::Display("shown".into())
    );
    assert_eq!(
        outcome("panel", "").await.outcome,
        CommandOutcome::OpenPanel(PanelContent {
            id: "p1".into(),
            title: Some("T".into()),
            lines: vec!["a".into(), "b".into()],
            footer: Some("f".into()),
        })
    );
    assert_eq!(outcome("n", "").await.outcome, CommandOutcome::Noop);
    assert_eq!(outcome("blank", "").await.outcome, CommandOutcome::Noop);
    let oops = outcome("oops", "").await;
    assert_eq!(oops.error.as_deref(), Some("it broke"));
    assert_eq!(oops.outcome, CommandOutcome::Display("x".into()));
    assert_eq!(oops.extension, "cmds");

    let err = host.invoke_command("slow", "").await.unwrap_err();
    assert!(
        matches!(&err, DispatchError::Request { source: RequestError::Timeout(_), name, .. } if name == "slow"),
        "{err}"
    );
    assert!(err.to_string().contains("cmds/slow"), "{err}");
    let err = host.invoke_command("wrongreply", "").await.unwrap_err();
    assert!(
        matches!(
            err,
            DispatchError::Request {
                source: RequestError::Malformed(_),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        host.invoke_command("nope", "").await.unwrap_err(),
        DispatchError::UnknownCommand("nope".into())
    );

    // args are trimmed and omitted when empty, as the spec says.
    let invoked = received_of(&dir, "command_invoked");
    assert_eq!(invoked[0]["args"], "hello   world");
    assert!(invoked[2].get("args").is_none(), "{}", invoked[2]);
    host.shutdown().await;
}

const TOOLS: &str = r#"
handshake(NAME)
for name in ["echo", "pic", "fail", "odd", "sleepy", "silent"]:
    emit({"type":"register_tool","name":name,"schema":{"type":"object"}})
emit({"type":"ready"})
import threading
lock = threading.Lock()
def reply(obj):
    with lock:
        emit(obj)
def delayed(msg):
    time.sleep(msg["args"]["delay"])
    reply({"type":"tool_result","id":msg["id"],"content":[{"type":"text","text":str(msg["args"]["n"])}]})
for msg in frames():
    if msg["type"] != "tool_call":
        continue
    i, name, args = msg["id"], msg["name"], msg["args"]
    if name == "echo":
        reply({"type":"tool_result","id":i,"content":[{"type":"text","text":json.dumps(args)},{"type":"text","text":""}]})
    elif name == "pic":
        reply({"type":"tool_result","id":i,"content":[{"type":"text","text":"a dot"},
               {"type":"image","mime_type":"image/png","data":"iVBORw0KGgo="}]})
    elif name == "fail":
        reply({"type":"tool_result","id":i,"is_error":True,"content":[{"type":"text","text":"no city"}]})
    elif name == "odd":
        reply({"type":"tool_result","id":i,"content":[{"type":"video","url":"x"}]})
    elif name == "sleepy":
        threading.Thread(target=delayed, args=(msg,)).start()
"#;

#[tokio::test]
async fn tool_results_blocks_errors_and_deadline() {
    let env = Env::new();
    let dir = env.ext("tools", TOOLS);
    let mut config = env.config(&[&dir]);
    config.limits.tool_timeout = Duration::from_millis(500);
    let (host, _rx) = ExtensionHost::start(config).await;

    let echo = host
        .call_tool("echo", json!({"city":"Berlin"}))
        .await
        .unwrap();
    assert_eq!(
        echo.content,
        [ContentBlock::Text {
            text: r#"{"city": "Berlin"}"#.into()
        }]
    );
    assert!(!echo.is_error);
    assert_eq!(echo.extension, "tools");
    // null args become {}
    let echo = host
        .call_tool("echo", serde_json::Value::Null)
        .await
        .unwrap();
    assert_eq!(echo.content, [ContentBlock::Text { text: "{}".into() }]);

    let pic = host.call_tool("pic", json!({})).await.unwrap();
    assert_eq!(
        pic.content[1],
        ContentBlock::Image {
            mime_type: "image/png".into(),
            data: "iVBORw0KGgo=".into()
        }
    );
    let fail = host.call_tool("fail", json!({})).await.unwrap();
    assert!(fail.is_error);
    let odd = host.call_tool("odd", json!({})).await.unwrap();
    assert_eq!(
        odd.content,
        [ContentBlock::Text {
            text: "[unsupported content block from extension tools]".into()
        }]
    );

    let err = host.call_tool("silent", json!({})).await.unwrap_err();
    assert!(
        matches!(
            err,
            DispatchError::Request {
                source: RequestError::Timeout(_),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        host.call_tool("read", json!({})).await.unwrap_err(),
        DispatchError::UnknownTool("read".into())
    );
    host.shutdown().await;
}

/// Concurrent calls get unique ids, and replies arriving in reverse order
/// still reach the right caller.
#[tokio::test]
async fn concurrent_calls_match_replies_by_id() {
    let env = Env::new();
    let dir = env.ext("conc", TOOLS);
    let (host, _rx) = env.start(&[&dir]).await;
    let calls = (0..8).map(|n| {
        let host = host.clone();
        async move {
            let delay = 0.05 * f64::from(8 - n);
            let reply = host
                .call_tool("sleepy", json!({"n": n, "delay": delay}))
                .await
                .unwrap();
            (n, reply.content)
        }
    });
    for (n, content) in futures_util::future::join_all(calls).await {
        assert_eq!(
            content,
            [ContentBlock::Text {
                text: n.to_string()
            }]
        );
    }
    let ids: std::collections::HashSet<String> = received_of(&dir, "tool_call")
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 8);
    host.shutdown().await;
}
