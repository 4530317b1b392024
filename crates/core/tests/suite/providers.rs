//! Both providers against the strict loopback server of zot-testkit: what
//! they send, how they read the real stream formats, and how they retry.

use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;
use zot_core::CancellationToken;
use zot_core::message::{Block, Message, Role};
use zot_core::provider::{
    Completion, Provider, ProviderConfig, ProviderError, ProviderKind, Reasoning, Request,
    StopReason, StreamEvent, Usage,
};
use zot_core::tool::ToolSpec;
use zot_testkit::{MockModel, Response, status, status_with_header};

fn provider(kind: ProviderKind, base_url: String, api_key: &str) -> Provider {
    let wire = kind.default_wire(&base_url);
    Provider::new(ProviderConfig::builtin(
        kind,
        base_url,
        api_key.into(),
        wire,
    ))
}

/// A request that owns nothing (a request borrows the agent's
/// conversation; here the test's messages live to the end of the test).
fn request(messages: Vec<Message>) -> Request<'static> {
    Request {
        model: "test-model",
        system: "Be brief.",
        messages: messages.leak(),
        tools: &[],
        max_tokens: 1024,
        reasoning: None,
        cache: zot_core::provider::CacheTtl::Off,
        cache_key: None,
        drop_thinking_before: 0,
        history: None,
    }
}

/// Runs one call; the events are those sent before it returned.
async fn run(
    provider: &Provider,
    request: &Request<'_>,
) -> (Result<Completion, ProviderError>, Vec<StreamEvent>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = provider
        .complete(request, &tx, &CancellationToken::new())
        .await;
    drop(tx);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    (result, events)
}

fn text_of(events: &[StreamEvent]) -> (usize, String) {
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    (deltas.len(), deltas.concat())
}

fn thinking_of(events: &[StreamEvent]) -> (usize, String) {
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ThinkingDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    (deltas.len(), deltas.concat())
}

fn args_of(events: &[StreamEvent], id: &str) -> (usize, String) {
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolUseArgs { id: call, delta } if call == id => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    (deltas.len(), deltas.concat())
}

fn text(text: &str) -> Block {
    Block::Text { text: text.into() }
}

fn msg(role: Role, content: Vec<Block>) -> Message {
    Message {
        role,
        content,
        time: None,
    }
}

fn read_tool() -> ToolSpec {
    ToolSpec {
        name: "read".into(),
        description: "Read a file.".into(),
        schema: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        })
        .into(),
        read_only: true,
    }
}

/// A conversation with a finished tool round trip: user, assistant calling
/// `read` (with thinking), the tool's result (text and an image), user again.
fn round_trip() -> Vec<Message> {
    vec![
        msg(Role::User, vec![text("What is in a.txt?")]),
        msg(
            Role::Assistant,
            vec![
                Block::Thinking {
                    thinking: "Read it.".into(),
                    signature: Some("sig-1".into()),
                },
                text("Let me look."),
                Block::ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    args: json!({"path": "a.txt"}),
                },
            ],
        ),
        msg(
            Role::Tool,
            vec![Block::ToolResult {
                call_id: "call_1".into(),
                is_error: false,
                content: vec![
                    text("hello"),
                    Block::Image {
                        mime_type: "image/png".into(),
                        data: "iVBORw0K".into(),
                    },
                ],
            }],
        ),
        msg(Role::User, vec![text("Thanks. And now?")]),
    ]
}

fn connection_refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

// Retry behaviour is the same for both providers; each test below runs it
// against one of them with that provider's success response.

async fn retries_503_then_succeeds(kind: ProviderKind, ok: Response) {
    let mock = MockModel::start([status(503, "busy"), ok]).await;
    let (result, _) = run(
        &provider(kind, mock.url(), "k"),
        &request(vec![Message::user("hi")]),
    )
    .await;
    assert_eq!(result.unwrap().message.text(), "hi there");
    assert_eq!(mock.requests().len(), 2);
}

async fn gives_up_after_two_retries(kind: ProviderKind) {
    let mock = MockModel::start([
        status(502, "a"),
        status(504, "b"),
        status(503, "still busy"),
    ])
    .await;
    let (result, _) = run(
        &provider(kind, mock.url(), "k"),
        &request(vec![Message::user("hi")]),
    )
    .await;
    match result {
        Err(ProviderError::Status {
            status: 503,
            message,
            ..
        }) => assert_eq!(message, "still busy"),
        other => panic!("{other:?}"),
    }
    assert_eq!(mock.requests().len(), 3);
}

async fn retries_429_with_retry_after(kind: ProviderKind, ok: Response) {
    let mock =
        MockModel::start([status_with_header(429, "retry-after", "0", "slow down"), ok]).await;
    let (result, _) = run(
        &provider(kind, mock.url(), "k"),
        &request(vec![Message::user("hi")]),
    )
    .await;
    assert_eq!(result.unwrap().message.text(), "hi there");
    assert_eq!(mock.requests().len(), 2);
}

async fn does_not_retry_400(kind: ProviderKind, body: String, ok: Response) {
    let mock = MockModel::start([status(400, body), ok]).await;
    let (result, _) = run(
        &provider(kind, mock.url(), "k"),
        &request(vec![Message::user("hi")]),
    )
    .await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Status { status: 400, message, .. } if message == "prompt is too long"),
        "{err:?}"
    );
    let shown = err.to_string();
    assert!(
        shown.contains("400") && shown.contains("prompt is too long"),
        "{shown}"
    );
    assert_eq!(mock.requests().len(), 1);
}

async fn does_not_retry_500(kind: ProviderKind) {
    // An empty queue answers 500.
    let mock = MockModel::start([]).await;
    let (result, _) = run(
        &provider(kind, mock.url(), "k"),
        &request(vec![Message::user("hi")]),
    )
    .await;
    let err = result.unwrap_err();
    assert!(
        err.to_string()
            .contains("HTTP 500: no scripted response left"),
        "{err}"
    );
    assert_eq!(mock.requests().len(), 1);
}

async fn reports_connection_refused(kind: ProviderKind) {
    let url = connection_refused_url();
    let (result, _) = run(
        &provider(kind, url.clone(), "k"),
        &request(vec![Message::user("hi")]),
    )
    .await;
    match result {
        Err(err @ ProviderError::Connect { .. }) => {
            let shown = err.to_string();
            assert!(shown.contains(&url), "{shown}");
            assert!(shown.to_lowercase().contains("refused"), "{shown}");
        }
        other => panic!("{other:?}"),
    }
}

async fn cancels_a_stalled_stream(kind: ProviderKind, partial: Response) {
    let mock = MockModel::start([partial.stall()]).await;
    let provider = provider(kind, mock.url(), "k");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let watcher = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let first = rx.recv().await;
            cancel.cancel();
            first
        })
    };
    let result = provider
        .complete(&request(vec![Message::user("hi")]), &tx, &cancel)
        .await;
    assert_eq!(result, Err(ProviderError::Cancelled));
    let first = watcher.await.unwrap();
    assert!(
        matches!(first, Some(StreamEvent::TextDelta(_))),
        "{first:?}"
    );
    // A guard against hanging, not a timing assertion.
    tokio::time::timeout(Duration::from_secs(30), mock.wait_hangups(1))
        .await
        .unwrap();
}

/// Several MB of text with what JSON has to escape (quotes, backslashes,
/// newlines, control characters) and multi-byte characters.
fn big_text(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 64);
    let mut i = 0u64;
    while text.len() < bytes {
        text.push_str(&format!(
            "line {i}: h\u{e9}llo \"w\u{f6}rld\" \\ tab\there \u{7} \u{1F600}\n"
        ));
        i += 1;
    }
    text
}

/// One text delta of several MB in a single server-sent event, arriving in
/// many network reads (16 KiB writes, like TLS records), is read whole (in
/// linear time; the test checks the result only).
async fn reads_one_huge_delta(kind: ProviderKind, response: Response, text: &str) {
    let mock = MockModel::start([response]).await;
    let (result, events) = run(
        &provider(kind, mock.url(), "test-key"),
        &request(vec![Message::user("hi")]),
    )
    .await;
    let completion = result.unwrap();
    let (deltas, streamed) = text_of(&events);
    assert_eq!(deltas, 1);
    assert!(streamed == text, "the streamed delta differs");
    assert!(
        completion.message.content
            == [Block::Text {
                text: text.to_owned()
            }],
        "the message text differs"
    );
}

mod anthropic {
    use super::*;
    use zot_testkit::anthropic::{self as sse, Script};

    fn anthropic(mock: &MockModel) -> Provider {
        provider(ProviderKind::Anthropic, mock.url(), "test-key")
    }

    #[tokio::test]
    async fn streams_text() {
        let mock = MockModel::start([sse::text("Hello there, world!")]).await;
        let (result, events) = run(&anthropic(&mock), &request(vec![Message::user("hi")])).await;
        let completion = result.unwrap();
        let (deltas, streamed) = text_of(&events);
        assert!(deltas > 1, "{events:?}");
        assert_eq!(streamed, "Hello there, world!");
        assert_eq!(events.len(), deltas, "only text deltas: {events:?}");
        assert_eq!(completion.message.role, Role::Assistant);
        assert_eq!(completion.message.content, [text("Hello there, world!")]);
        assert_eq!(completion.stop, StopReason::EndTurn);
        assert_eq!(
            completion.usage,
            Usage {
                input: 10,
                output: 5,
                reasoning: 0,
                cache_read: 0,
                cache_write: 0,
                cache_write_1h: 0,
            }
        );
    }

    #[tokio::test]
    async fn assembles_streamed_tool_arguments() {
        let args = r#"{"path":"src/main.rs","limit":20}"#;
        let mock = MockModel::start([Script::new()
            .text("Reading.")
            .tool_call("toolu_1", "read", args)
            .build()])
        .await;
        let (result, events) = run(&anthropic(&mock), &request(vec![Message::user("hi")])).await;
        let completion = result.unwrap();
        let start = events.iter().position(|e| {
            *e == StreamEvent::ToolUseStart {
                id: "toolu_1".into(),
                name: "read".into(),
            }
        });
        let end = events.iter().position(|e| {
            *e == StreamEvent::ToolUseEnd {
                id: "toolu_1".into(),
            }
        });
        assert!(start.is_some() && start < end, "{events:?}");
        let (fragments, streamed) = args_of(&events, "toolu_1");
        assert!(fragments > 1, "{events:?}");
        assert_eq!(streamed, args);
        assert_eq!(
            completion.message.content,
            [
                text("Reading."),
                Block::ToolCall {
                    id: "toolu_1".into(),
                    name: "read".into(),
                    args: json!({"path": "src/main.rs", "limit": 20}),
                },
            ]
        );
        assert_eq!(completion.stop, StopReason::ToolUse);
    }

    #[tokio::test]
    async fn streams_thinking_with_its_signature() {
        let mock = MockModel::start([Script::new()
            .thinking("Let me think this over.", "sig-abc")
            .text("42")
            .build()])
        .await;
        let mut req = request(vec![Message::user("hi")]);
        req.reasoning = Some(Reasoning::High);
        let (result, events) = run(&anthropic(&mock), &req).await;
        let completion = result.unwrap();
        let (deltas, thought) = thinking_of(&events);
        assert!(deltas > 1, "{events:?}");
        assert_eq!(thought, "Let me think this over.");
        assert!(
            matches!(events.first(), Some(StreamEvent::ThinkingDelta(_))),
            "{events:?}"
        );
        assert_eq!(
            completion.message.content,
            [
                Block::Thinking {
                    thinking: "Let me think this over.".into(),
                    signature: Some("sig-abc".into())
                },
                text("42"),
            ]
        );
        let body = &mock.requests()[0].body;
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 16384})
        );
        assert_eq!(body["max_tokens"], 16384 + 4096);
    }

    #[tokio::test]
    async fn reports_usage_with_cache() {
        let mock =
            MockModel::start([Script::new().text("ok").usage(100, 42).cache(30, 7).build()]).await;
        let (result, _) = run(&anthropic(&mock), &request(vec![Message::user("hi")])).await;
        assert_eq!(
            result.unwrap().usage,
            Usage {
                input: 100,
                output: 42,
                reasoning: 0,
                cache_read: 30,
                cache_write: 7,
                cache_write_1h: 0,
            }
        );
    }

    #[tokio::test]
    async fn maps_stop_reasons() {
        for (reason, stop) in [
            ("end_turn", StopReason::EndTurn),
            ("stop_sequence", StopReason::EndTurn),
            ("max_tokens", StopReason::Length),
            ("tool_use", StopReason::ToolUse),
        ] {
            let mock =
                MockModel::start([Script::new().text("x").stop_reason(reason).build()]).await;
            let (result, _) = run(&anthropic(&mock), &request(vec![Message::user("hi")])).await;
            assert_eq!(result.unwrap().stop, stop, "{reason}");
        }
    }

    #[tokio::test]
    async fn an_error_event_fails_the_call() {
        let mock = MockModel::start([sse::error_event("Overloaded")]).await;
        let (result, _) = run(&anthropic(&mock), &request(vec![Message::user("hi")])).await;
        assert_eq!(
            result,
            Err(ProviderError::ErrorEvent {
                provider: "anthropic",
                kind: "overloaded_error".into(),
                message: "Overloaded".into()
            })
        );
        assert_eq!(
            mock.requests().len(),
            1,
            "mid-stream errors are not retried"
        );
    }

    #[tokio::test]
    async fn a_stream_without_message_stop_ended_early() {
        let mock = MockModel::start([Script::new().text("half an ans").build_partial()]).await;
        let (result, _) = run(&anthropic(&mock), &request(vec![Message::user("hi")])).await;
        let err = result.unwrap_err();
        assert!(
            matches!(&err, ProviderError::Stream { message, .. } if message.contains("stream ended early")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn sends_the_documented_request() {
        let mock = MockModel::start([sse::text("fine")]).await;
        let mut req = request(round_trip());
        let tools = [read_tool()];
        req.tools = &tools;
        let (result, _) = run(&anthropic(&mock), &req).await;
        result.unwrap();
        let requests = mock.requests();
        let sent = &requests[0];
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.path, "/v1/messages");
        assert_eq!(sent.header("x-api-key"), Some("test-key"));
        assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(sent.header("content-type"), Some("application/json"));
        assert_eq!(sent.header("accept"), Some("text/event-stream"));
        assert_eq!(sent.header("authorization"), None);
        assert_eq!(
            sent.body,
            json!({
                "model": "test-model",
                "max_tokens": 1024,
                "system": "Be brief.",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "What is in a.txt?"}]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "Read it.", "signature": "sig-1"},
                        {"type": "text", "text": "Let me look."},
                        {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.txt"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "call_1", "is_error": false, "content": [
                            {"type": "text", "text": "hello"},
                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
                        ]},
                        {"type": "text", "text": "Thanks. And now?"},
                    ]},
                ],
                "tools": [{
                    "name": "read",
                    "description": "Read a file.",
                    "input_schema": {
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                    },
                }],
                "stream": true,
            })
        );
    }

    #[tokio::test]
    async fn omits_empty_system_and_tools() {
        let mock = MockModel::start([sse::text("fine")]).await;
        let mut req = request(vec![Message::user("hi")]);
        req.system = "";
        run(&anthropic(&mock), &req).await.0.unwrap();
        let body = &mock.requests()[0].body;
        assert!(
            body.get("system").is_none() && body.get("tools").is_none(),
            "{body}"
        );
        assert!(body.get("thinking").is_none(), "{body}");
    }

    #[tokio::test]
    async fn an_unanswered_tool_call_is_rejected_like_the_real_api() {
        let mock = MockModel::start([sse::text("never sent")]).await;
        let mut messages = round_trip();
        messages.remove(2);
        let (result, _) = run(&anthropic(&mock), &request(messages)).await;
        let err = result.unwrap_err();
        assert!(
            matches!(&err, ProviderError::Status { status: 400, message, .. } if message.contains("call_1")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn retries_503() {
        retries_503_then_succeeds(ProviderKind::Anthropic, sse::text("hi there")).await;
    }

    #[tokio::test]
    async fn gives_up_on_503_after_two_retries() {
        gives_up_after_two_retries(ProviderKind::Anthropic).await;
    }

    #[tokio::test]
    async fn retries_429() {
        retries_429_with_retry_after(ProviderKind::Anthropic, sse::text("hi there")).await;
    }

    #[tokio::test]
    async fn does_not_retry_a_400() {
        let body = sse::error_body(400, "prompt is too long");
        does_not_retry_400(ProviderKind::Anthropic, body, sse::text("hi there")).await;
    }

    #[tokio::test]
    async fn does_not_retry_a_500() {
        does_not_retry_500(ProviderKind::Anthropic).await;
    }

    #[tokio::test]
    async fn connection_refused() {
        reports_connection_refused(ProviderKind::Anthropic).await;
    }

    #[tokio::test]
    async fn cancel_drops_the_connection() {
        let partial = Script::new().text("partial").build_partial();
        cancels_a_stalled_stream(ProviderKind::Anthropic, partial).await;
    }

    #[tokio::test]
    async fn one_multi_megabyte_delta_in_one_event() {
        let text = big_text(6 << 20);
        let response = Script::new()
            .pieces(1)
            .text(&text)
            .build()
            .in_writes_of(16 * 1024);
        reads_one_huge_delta(ProviderKind::Anthropic, response, &text).await;
    }
}

mod openai {
    use super::*;
    use zot_testkit::openai::{self as sse, Script};

    fn openai(mock: &MockModel) -> Provider {
        provider(ProviderKind::OpenAi, mock.url(), "test-key")
    }

    #[tokio::test]
    async fn streams_text() {
        let mock = MockModel::start([sse::text("Hello there, world!")]).await;
        let (result, events) = run(&openai(&mock), &request(vec![Message::user("hi")])).await;
        let completion = result.unwrap();
        let (deltas, streamed) = text_of(&events);
        assert!(deltas > 1, "{events:?}");
        assert_eq!(streamed, "Hello there, world!");
        assert_eq!(events.len(), deltas, "only text deltas: {events:?}");
        assert_eq!(completion.message.role, Role::Assistant);
        assert_eq!(completion.message.content, [text("Hello there, world!")]);
        assert_eq!(completion.stop, StopReason::EndTurn);
        assert_eq!(
            completion.usage,
            Usage {
                input: 10,
                output: 5,
                reasoning: 0,
                cache_read: 0,
                cache_write: 0,
                cache_write_1h: 0,
            }
        );
    }

    #[tokio::test]
    async fn assembles_parallel_tool_calls_by_index() {
        let first = r#"{"path":"src/main.rs","limit":20}"#;
        let second = r#"{"path":"Cargo.toml"}"#;
        let script = Script::new()
            .text("Reading both.")
            .tool_calls(&[("call_a", "read", first), ("call_b", "read", second)]);
        let mock = MockModel::start([script.build()]).await;
        let (result, events) = run(&openai(&mock), &request(vec![Message::user("hi")])).await;
        let completion = result.unwrap();
        for (id, args) in [("call_a", first), ("call_b", second)] {
            let start = events.iter().position(|e| {
                *e == StreamEvent::ToolUseStart {
                    id: id.into(),
                    name: "read".into(),
                }
            });
            let end = events
                .iter()
                .position(|e| *e == StreamEvent::ToolUseEnd { id: id.into() });
            assert!(start.is_some() && start < end, "{id}: {events:?}");
            let (fragments, streamed) = args_of(&events, id);
            assert!(fragments > 1, "{events:?}");
            assert_eq!(streamed, args);
        }
        let starts = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolUseStart { .. }))
            .count();
        assert_eq!(starts, 2);
        assert_eq!(
            completion.message.content,
            [
                text("Reading both."),
                Block::ToolCall {
                    id: "call_a".into(),
                    name: "read".into(),
                    args: json!({"path": "src/main.rs", "limit": 20})
                },
                Block::ToolCall {
                    id: "call_b".into(),
                    name: "read".into(),
                    args: json!({"path": "Cargo.toml"})
                },
            ]
        );
        assert_eq!(completion.stop, StopReason::ToolUse);
    }

    #[tokio::test]
    async fn whole_calls_in_one_chunk_without_index() {
        // How ollama streams tool calls: complete in one chunk, no `index`,
        // then "stop" and no usage.
        let call = json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "qwen",
            "choices": [{"index": 0, "finish_reason": null, "delta": {"role": "assistant", "content": "",
                "tool_calls": [{"id": "call_x", "type": "function",
                    "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}]}}]});
        let stop = json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "qwen",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"}]});
        let raw = Response::sse([
            format!("data: {call}\n\n"),
            format!("data: {stop}\n\n"),
            "data: [DONE]\n\n".into(),
        ]);
        let mock = MockModel::start([raw]).await;
        let (result, events) = run(&openai(&mock), &request(vec![Message::user("hi")])).await;
        let completion = result.unwrap();
        assert_eq!(
            events,
            [
                StreamEvent::ToolUseStart {
                    id: "call_x".into(),
                    name: "read".into()
                },
                StreamEvent::ToolUseArgs {
                    id: "call_x".into(),
                    delta: r#"{"path":"a"}"#.into()
                },
                StreamEvent::ToolUseEnd {
                    id: "call_x".into()
                },
            ]
        );
        assert_eq!(
            completion.message.content,
            [Block::ToolCall {
                id: "call_x".into(),
                name: "read".into(),
                args: json!({"path": "a"})
            }]
        );
        assert_eq!(completion.stop, StopReason::ToolUse);
        assert_eq!(completion.usage, Usage::default());
    }

    #[tokio::test]
    async fn streams_reasoning_in_either_field() {
        for field in ["reasoning_content", "reasoning"] {
            let mock = MockModel::start([Script::new()
                .reasoning_in(field, "Let me think this over.")
                .text("42")
                .build()])
            .await;
            let (result, events) = run(&openai(&mock), &request(vec![Message::user("hi")])).await;
            let completion = result.unwrap();
            let (deltas, thought) = thinking_of(&events);
            assert!(deltas > 1, "{field}: {events:?}");
            assert_eq!(thought, "Let me think this over.");
            assert_eq!(
                completion.message.content,
                [
                    Block::Thinking {
                        thinking: "Let me think this over.".into(),
                        signature: None
                    },
                    text("42")
                ]
            );
        }
    }

    #[tokio::test]
    async fn reports_usage_net_of_cached_tokens() {
        let mock = MockModel::start([Script::new()
            .text("ok")
            .usage(100, 20, 30)
            .reasoning_tokens(8)
            .build()])
        .await;
        let (result, _) = run(&openai(&mock), &request(vec![Message::user("hi")])).await;
        assert_eq!(
            result.unwrap().usage,
            Usage {
                input: 70,
                output: 20,
                reasoning: 8,
                cache_read: 30,
                cache_write: 0,
                cache_write_1h: 0,
            }
        );
    }

    #[tokio::test]
    async fn maps_finish_reasons() {
        for (reason, stop) in [
            ("stop", StopReason::EndTurn),
            ("length", StopReason::Length),
            ("tool_calls", StopReason::ToolUse),
            ("function_call", StopReason::ToolUse),
        ] {
            let mock =
                MockModel::start([Script::new().text("x").finish_reason(reason).build()]).await;
            let (result, _) = run(&openai(&mock), &request(vec![Message::user("hi")])).await;
            assert_eq!(result.unwrap().stop, stop, "{reason}");
        }
    }

    #[tokio::test]
    async fn an_error_chunk_fails_the_call() {
        let mock = MockModel::start([sse::error_event("The server had an error")]).await;
        let (result, _) = run(&openai(&mock), &request(vec![Message::user("hi")])).await;
        assert_eq!(
            result,
            Err(ProviderError::ErrorEvent {
                provider: "openai",
                kind: "server_error".into(),
                message: "The server had an error".into()
            })
        );
        assert_eq!(
            mock.requests().len(),
            1,
            "mid-stream errors are not retried"
        );
    }

    #[tokio::test]
    async fn a_stream_without_a_finish_ended_early() {
        let mock = MockModel::start([Script::new().text("half an ans").build_partial()]).await;
        let (result, _) = run(&openai(&mock), &request(vec![Message::user("hi")])).await;
        let err = result.unwrap_err();
        assert!(
            matches!(&err, ProviderError::Stream { message, .. } if message.contains("stream ended early")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn sends_the_documented_request() {
        let mock = MockModel::start([sse::text("fine")]).await;
        let mut messages = round_trip();
        messages.push(msg(Role::Assistant, vec![text("Nothing more.")]));
        messages.push(msg(
            Role::User,
            vec![
                text("Look at this:"),
                Block::Image {
                    mime_type: "image/jpeg".into(),
                    data: "/9j/4AAQ".into(),
                },
            ],
        ));
        let mut req = request(messages);
        let tools = [read_tool()];
        req.tools = &tools;
        let (result, _) = run(&openai(&mock), &req).await;
        result.unwrap();
        let requests = mock.requests();
        let sent = &requests[0];
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.path, "/v1/chat/completions");
        assert_eq!(sent.header("authorization"), Some("Bearer test-key"));
        assert_eq!(sent.header("content-type"), Some("application/json"));
        assert_eq!(sent.header("accept"), Some("text/event-stream"));
        assert_eq!(
            sent.body,
            json!({
                "model": "test-model",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "What is in a.txt?"},
                    {"role": "assistant", "content": "Let me look.", "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": r#"{"path":"a.txt"}"#}},
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
                    {"role": "user", "content": [
                        {"type": "text", "text": "Images from tool call call_1:"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                    ]},
                    {"role": "user", "content": "Thanks. And now?"},
                    {"role": "assistant", "content": "Nothing more."},
                    {"role": "user", "content": [
                        {"type": "text", "text": "Look at this:"},
                        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
                    ]},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "read",
                    "description": "Read a file.",
                    "parameters": {
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                    },
                }}],
                "tool_choice": "auto",
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 1024,
            })
        );
    }

    #[tokio::test]
    async fn reasoning_sends_effort_and_max_completion_tokens() {
        let mock = MockModel::start([sse::text("fine")]).await;
        let mut req = request(vec![Message::user("hi")]);
        req.reasoning = Some(Reasoning::Low);
        req.system = "";
        run(&openai(&mock), &req).await.0.unwrap();
        let body = &mock.requests()[0].body;
        assert_eq!(body["reasoning_effort"], "low");
        assert_eq!(body["max_completion_tokens"], 1024);
        assert!(body.get("max_tokens").is_none(), "{body}");
        assert!(
            body.get("tools").is_none() && body.get("tool_choice").is_none(),
            "{body}"
        );
        assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    }

    #[tokio::test]
    async fn base_urls_with_and_without_v1() {
        let mock = MockModel::start([sse::text("one"), sse::text("two"), sse::text("three")]).await;
        for base in [
            mock.url(),
            format!("{}/v1", mock.url()),
            format!("{}/v1/", mock.url()),
        ] {
            run(
                &provider(ProviderKind::OpenAi, base, "k"),
                &request(vec![Message::user("hi")]),
            )
            .await
            .0
            .unwrap();
        }
        let paths: Vec<String> = mock.requests().into_iter().map(|r| r.path).collect();
        assert_eq!(paths, ["/v1/chat/completions"; 3]);
    }

    #[tokio::test]
    async fn no_authorization_without_a_key() {
        let mock = MockModel::start([sse::text("fine")]).await;
        let ollama = provider(ProviderKind::Ollama, mock.url(), "");
        run(&ollama, &request(vec![Message::user("hi")]))
            .await
            .0
            .unwrap();
        assert_eq!(mock.requests()[0].header("authorization"), None);
    }

    #[tokio::test]
    async fn an_unanswered_tool_call_is_rejected_like_the_real_api() {
        let mock = MockModel::start([sse::text("never sent")]).await;
        let mut messages = round_trip();
        messages.remove(2);
        let (result, _) = run(&openai(&mock), &request(messages)).await;
        let err = result.unwrap_err();
        assert!(
            matches!(&err, ProviderError::Status { status: 400, message, .. } if message.contains("call_1")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn retries_503() {
        retries_503_then_succeeds(ProviderKind::OpenAi, sse::text("hi there")).await;
    }

    #[tokio::test]
    async fn gives_up_on_503_after_two_retries() {
        gives_up_after_two_retries(ProviderKind::OpenAi).await;
    }

    #[tokio::test]
    async fn retries_429() {
        retries_429_with_retry_after(ProviderKind::OpenAi, sse::text("hi there")).await;
    }

    #[tokio::test]
    async fn does_not_retry_a_400() {
        does_not_retry_400(
            ProviderKind::OpenAi,
            sse::error_body("prompt is too long"),
            sse::text("hi there"),
        )
        .await;
    }

    #[tokio::test]
    async fn does_not_retry_a_500() {
        does_not_retry_500(ProviderKind::OpenAi).await;
    }

    #[tokio::test]
    async fn connection_refused() {
        reports_connection_refused(ProviderKind::OpenAi).await;
    }

    #[tokio::test]
    async fn cancel_drops_the_connection() {
        let partial = Script::new().text("partial").build_partial();
        cancels_a_stalled_stream(ProviderKind::OpenAi, partial).await;
    }

    #[tokio::test]
    async fn one_multi_megabyte_delta_in_one_event() {
        let text = big_text(6 << 20);
        let response = Script::new()
            .pieces(1)
            .text(&text)
            .build()
            .in_writes_of(16 * 1024);
        reads_one_huge_delta(ProviderKind::OpenAi, response, &text).await;
    }
}
