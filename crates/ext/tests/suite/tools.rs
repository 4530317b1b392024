//! Tools: typed arguments, raw ones with images, errors, panics, and
//! deferred tools activated by a result.

use serde_json::json;
use zot_extensions::zot_protocol::zot::ContentBlock;
use zot_extensions::{DispatchError, HostEvent};

use super::support::{Env, SECS5, assert_frames_valid, event_matching};

fn text(t: &str) -> ContentBlock {
    ContentBlock::Text { text: t.into() }
}

#[tokio::test]
async fn typed_tool_gets_its_arguments_and_bad_ones_are_an_error_result() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    let reply = host
        .call_tool(
            "forecast",
            json!({"city": "Berlin", "units": "fahrenheit", "days": 3}),
        )
        .await
        .unwrap();
    assert!(!reply.is_error);
    assert_eq!(reply.content, [text("Berlin: 21F for 3 day(s)")]);
    let reply = host
        .call_tool("forecast", json!({"city": "Berlin"}))
        .await
        .unwrap();
    assert!(reply.is_error);
    assert_eq!(
        reply.content,
        [text(
            "invalid arguments for tool \"forecast\": missing field `units`"
        )]
    );
    host.shutdown().await;
    assert_frames_valid(&dir);
}

#[tokio::test]
async fn raw_tool_answers_text_and_image_blocks() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    let reply = host.call_tool("echo", json!({"msg": "hi"})).await.unwrap();
    assert_eq!(
        reply.content,
        [
            text(r#"{"msg":"hi"}"#),
            ContentBlock::Image {
                mime_type: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            }
        ]
    );
    host.shutdown().await;
    assert_frames_valid(&dir);
}

#[tokio::test]
async fn a_deferred_tool_becomes_callable_once_a_result_activates_it() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, mut rx) = env.start(&[&dir]).await;
    assert!(!host.tools().iter().any(|t| t.name == "secret"));
    assert!(matches!(
        host.call_tool("secret", json!({})).await,
        Err(DispatchError::UnknownTool(_))
    ));
    let reply = host.call_tool("loader", json!({})).await.unwrap();
    assert_eq!(reply.content, [text("enabled secret")]);
    assert_eq!(reply.activated, ["secret"]);
    assert!(
        event_matching(&mut rx, SECS5, |e| matches!(e, HostEvent::ToolsChanged))
            .await
            .is_some()
    );
    assert!(host.tools().iter().any(|t| t.name == "secret"));
    let reply = host.call_tool("secret", json!({})).await.unwrap();
    assert_eq!(reply.content, [text("the secret is 42")]);
    host.shutdown().await;
    assert_frames_valid(&dir);
}

#[tokio::test]
async fn failing_and_panicking_tools_are_error_results() {
    let env = Env::new();
    let dir = env.probe("probe", &[]);
    let (host, _rx) = env.start(&[&dir]).await;
    let reply = host.call_tool("refuse", json!({})).await.unwrap();
    assert!(reply.is_error);
    assert_eq!(reply.content, [text("refused on purpose")]);
    let reply = host.call_tool("explode", json!({})).await.unwrap();
    assert!(reply.is_error);
    assert!(
        matches!(&reply.content[..], [ContentBlock::Text { text }] if text.contains("tool exploded")),
        "{:?}",
        reply.content
    );
    let reply = host
        .call_tool("forecast", json!({"city": "Oslo", "units": "celsius"}))
        .await
        .unwrap();
    assert_eq!(reply.content, [text("Oslo: 21C for 1 day(s)")]);
    host.shutdown().await;
    assert_frames_valid(&dir);
}
