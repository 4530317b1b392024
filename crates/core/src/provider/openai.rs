//! OpenAI-compatible chat completions (OpenAI, ollama, any compatible
//! server): translating a `Request` into its wire format and its streamed
//! chunks back into stream events and an assistant message.

use std::borrow::Cow;
use std::collections::BTreeMap;

use futures_util::{Stream, StreamExt};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::body::{self, BodyCache, Cut, List};
use super::call::{Completion, End, ProviderError, Request, StopReason, StreamEvent, parse_args};
use super::config::{ProviderConfig, ProviderKind, Reasoning, Wire};
use super::retry;
use super::usage::Usage;
use crate::message::{Block, Message, Role};
use crate::models::{self, Thinking};
use zot_http::sse;

pub(crate) async fn complete(
    http: &reqwest::Client,
    config: &ProviderConfig,
    body: bytes::Bytes,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError> {
    // Errors name what the user configured: "ollama" says more than "openai".
    let provider = config.kind.name();
    let url = endpoint(&config.base_url);
    let response = post(http, config, &url, body).await?;
    read(provider, response.bytes_stream(), events).await
}

/// POSTs a streaming request `body` to an OpenAI-style `url` with the
/// provider's bearer key, retrying what is worth retrying.
pub(crate) async fn post(
    http: &reqwest::Client,
    config: &ProviderConfig,
    url: &str,
    body: bytes::Bytes,
) -> Result<reqwest::Response, ProviderError> {
    retry::send(config.kind.name(), url, || {
        let builder = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.clone());
        // ollama needs no key, and some proxies reject an empty bearer.
        if config.api_key.is_empty() {
            builder
        } else {
            builder.bearer_auth(&config.api_key)
        }
    })
    .await
}

/// Reads a streamed chat completions response body into the completion.
pub(crate) async fn read<S, B, E>(
    provider: &'static str,
    body: S,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::error::Error + 'static,
{
    let mut stream = std::pin::pin!(sse::events(body));
    let mut state = StreamState {
        provider,
        ..StreamState::default()
    };
    while let Some(event) = stream.next().await {
        let event = event.map_err(|message| stream_error(provider, message))?;
        if event.data.trim() == "[DONE]" {
            return Ok(state.finish(events));
        }
        state.handle(&event.data, events)?;
    }
    // Some compatible servers just close the connection after the last
    // chunk; that is a complete answer once the finish reason has come.
    if state.stop.is_some() {
        return Ok(state.finish(events));
    }
    Err(stream_error(provider, "stream ended early".into()))
}

fn stream_error(provider: &'static str, message: String) -> ProviderError {
    ProviderError::Stream { provider, message }
}

pub(crate) fn endpoint(base_url: &str) -> String {
    api_url(base_url, "chat/completions")
}

/// `base_url` may or may not carry the `/v1` that OpenAI-compatible servers
/// are usually documented with; `path` follows it. A URL whose path names a
/// version already (`/v1`, Groq's `/openai/v1`, Gemini's `/v1beta/openai`)
/// is taken as the API's root.
pub fn api_url(base_url: &str, path: &str) -> String {
    let base = base_url.trim_end_matches('/');
    let after_host = base.split_once("://").map_or(base, |(_, rest)| rest);
    let versioned = after_host.split('/').skip(1).any(|segment| {
        segment
            .strip_prefix('v')
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
    });
    if versioned {
        format!("{base}/{path}")
    } else {
        format!("{base}/v1/{path}")
    }
}

/// The JSON body of a streaming chat completions call, serialised straight
/// from the conversation (no intermediate `Value` tree); the settled
/// messages of a history come from `cache`. `openai`: the server is
/// OpenAI's own.
pub(crate) fn request_body(
    request: &Request<'_>,
    openai: bool,
    cache: &mut BodyCache,
) -> bytes::Bytes {
    let model = models::info(ProviderKind::OpenAi, request.model);
    let reasoning_effort = request
        .reasoning
        .filter(|_| model.thinking != Thinking::None)
        .map(Reasoning::as_str);
    // Reasoning models reject `max_tokens`; their limit includes the hidden
    // reasoning. A model the table does not know gets `max_tokens` unless
    // asked to reason: that is what other compatible servers take.
    let reasoning_model =
        reasoning_effort.is_some() || (model.known() && model.thinking == Thinking::Effort);
    let (max_tokens, max_completion_tokens) = if reasoning_model {
        (None, Some(request.max_tokens))
    } else {
        (Some(request.max_tokens), None)
    };
    let from = cache.resume(Wire::Chat, request);
    let (messages, cuts) = wire_messages(request.messages, from);
    // The system prompt is a message, but one that may change between two
    // requests of a history: never kept.
    let system = (!request.system.is_empty()).then_some(WireMessage::System {
        content: request.system,
    });
    let head = Head {
        model: request.model,
    };
    let tools = cache.tools((Wire::Chat, 0), request.tools, |_, tool| WireTool {
        kind: "function",
        function: WireFunctionSpec {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.schema,
        },
    });
    let tail = Tail {
        tool_choice: (!request.tools.is_empty()).then_some("auto"),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        reasoning_effort,
        max_completion_tokens,
        max_tokens,
        // Requests with the same key go to the same cache: the session's.
        prompt_cache_key: request.cache_key.filter(|_| openai),
    };
    let lead = system.as_slice();
    let list = List {
        lead,
        items: &messages,
        cuts: &cuts,
        open: 0,
    };
    body::request(
        cache,
        request,
        &head,
        "messages",
        list,
        tools.as_deref(),
        &tail,
    )
}

/// The fields of the request body before the conversation, in the API's
/// order ([`body::request`] writes the conversation after them).
#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
}

/// The fields after the conversation and its tools (`body::request` writes
/// those, kept as JSON by `BodyCache::tools`).
#[derive(Serialize)]
struct Tail<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionSpec<'a>,
}

#[derive(Serialize)]
struct WireFunctionSpec<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// One chat message as the API takes it.
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

/// The conversation from message `from` on in chat completions form: one
/// `tool` message per tool result, right after the assistant message that
/// asked for it. It may be cut before any message with no tool result
/// images waiting.
fn wire_messages(messages: &[Message], from: usize) -> (Vec<WireMessage<'_>>, Vec<Cut>) {
    let mut wire = Vec::new();
    let mut cuts = Vec::new();
    // Tool messages carry text only, so images from tool results follow in a
    // user message, after the whole run of tool messages: anything between
    // them and their assistant message is rejected.
    let mut pending_images: Vec<Part<'_>> = Vec::new();
    for (index, message) in messages.iter().enumerate().skip(from) {
        if pending_images.is_empty() {
            cuts.push(Cut {
                source: index,
                items: wire.len(),
            });
        }
        let mut results = message
            .content
            .iter()
            .filter_map(|b| match b {
                Block::ToolResult {
                    call_id, content, ..
                } => Some((call_id, content)),
                _ => None,
            })
            .peekable();
        if results.peek().is_none() {
            flush_images(&mut wire, &mut pending_images);
        }
        for (call_id, content) in results {
            wire.push(WireMessage::Tool {
                tool_call_id: call_id,
                content: joined_text(content),
            });
            let mut images = content.iter().filter_map(image_part).peekable();
            if images.peek().is_some() {
                pending_images.push(Part::Text {
                    text: Cow::Owned(format!("Images from tool call {call_id}:")),
                });
                pending_images.extend(images);
            }
        }
        match message.role {
            Role::Assistant => {
                if let Some(assistant) = assistant_message(message) {
                    wire.push(assistant);
                }
            }
            Role::User | Role::Tool => {
                if let Some(user) = user_message(&message.content) {
                    flush_images(&mut wire, &mut pending_images);
                    wire.push(user);
                }
            }
        }
    }
    flush_images(&mut wire, &mut pending_images);
    (wire, cuts)
}

fn flush_images<'a>(wire: &mut Vec<WireMessage<'a>>, pending: &mut Vec<Part<'a>>) {
    if !pending.is_empty() {
        wire.push(WireMessage::User {
            content: UserContent::Parts(std::mem::take(pending)),
        });
    }
}

/// Text and images of a user message (tool results are sent separately);
/// `None` when nothing is left.
fn user_message(content: &[Block]) -> Option<WireMessage<'_>> {
    let has_images = content.iter().any(|b| matches!(b, Block::Image { .. }));
    if has_images {
        let parts = content
            .iter()
            .filter_map(|block| match block {
                Block::Text { text } => Some(Part::Text {
                    text: Cow::Borrowed(text),
                }),
                image @ Block::Image { .. } => image_part(image),
                _ => None,
            })
            .collect();
        return Some(WireMessage::User {
            content: UserContent::Parts(parts),
        });
    }
    let has_text = content.iter().any(|b| matches!(b, Block::Text { .. }));
    has_text.then(|| WireMessage::User {
        content: UserContent::Text(joined_text(content)),
    })
}

/// `None` for a message with neither text nor tool calls (only thinking, or
/// an aborted turn): the API rejects an assistant message without both.
fn assistant_message(message: &Message) -> Option<WireMessage<'_>> {
    let text = joined_text(&message.content);
    let tool_calls: Vec<WireCall<'_>> = message
        .tool_calls()
        .map(|(id, name, args)| WireCall {
            id,
            kind: "function",
            function: WireFunction {
                name,
                // A model's unparsable arguments were kept as a string: send them back as they came.
                arguments: match args {
                    Value::String(raw) => Cow::Borrowed(raw.as_str()),
                    other => Cow::Owned(other.to_string()),
                },
            },
        })
        .collect();
    if text.is_empty() && tool_calls.is_empty() {
        return None;
    }
    Some(WireMessage::Assistant {
        content: (!text.is_empty()).then_some(text),
        tool_calls,
    })
}

/// The text blocks joined with "\n" (borrowed when there is just one).
pub(crate) fn joined_text(content: &[Block]) -> Cow<'_, str> {
    let mut texts = content.iter().filter_map(|block| match block {
        Block::Text { text } => Some(text.as_str()),
        _ => None,
    });
    let Some(first) = texts.next() else {
        return Cow::Borrowed("");
    };
    match texts.next() {
        None => Cow::Borrowed(first),
        Some(second) => {
            let mut joined = format!("{first}\n{second}");
            for text in texts {
                joined.push('\n');
                joined.push_str(text);
            }
            Cow::Owned(joined)
        }
    }
}

fn image_part<'a>(block: &Block) -> Option<Part<'a>> {
    match block {
        Block::Image { mime_type, data } => Some(Part::ImageUrl {
            image_url: ImageUrl {
                url: format!("data:{mime_type};base64,{data}"),
            },
        }),
        _ => None,
    }
}

/// A tool call while its fragments arrive.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    args: String,
    /// Whether `ToolUseStart` went out; fragments before it are sent with it.
    started: bool,
}

#[derive(Debug, Default)]
struct StreamState {
    provider: &'static str,
    text: String,
    thinking: String,
    /// By the API's `index`, which is also their order in the message.
    calls: BTreeMap<u64, PartialCall>,
    /// What the model said instead of answering (`delta.refusal`).
    refusal: String,
    stop: Option<StopReason>,
    usage: Usage,
}

impl StreamState {
    fn handle(
        &mut self,
        data: &str,
        events: &mpsc::UnboundedSender<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let chunk: Value = serde_json::from_str(data)
            .map_err(|err| stream_error(self.provider, format!("invalid chunk: {err}")))?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .or_else(|| error.as_str())
                .unwrap_or("unknown error");
            let kind = error
                .get("type")
                .or_else(|| error.get("code"))
                .and_then(Value::as_str)
                .unwrap_or("error");
            return Err(ProviderError::ErrorEvent {
                provider: self.provider,
                kind: kind.to_owned(),
                message: message.to_owned(),
            });
        }
        // A closed receiver only means nobody watches the stream.
        let emit = |event| {
            let _ = events.send(event);
        };
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let field = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
            let cached = field("/prompt_tokens_details/cached_tokens");
            self.usage.input = field("/prompt_tokens").saturating_sub(cached);
            self.usage.cache_read = cached;
            self.usage.output = field("/completion_tokens");
            self.usage.reasoning = field("/completion_tokens_details/reasoning_tokens");
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        let thinking = delta
            .get("reasoning_content")
            .and_then(Value::as_str)
            .or_else(|| delta.get("reasoning").and_then(Value::as_str))
            .unwrap_or_default();
        self.add_thinking(thinking, &emit);
        match delta.get("content") {
            Some(Value::String(text)) => self.add_text(text, &emit),
            // Some servers (Mistral's reasoning models) send the content as
            // parts: text, and thinking that holds text parts of its own.
            Some(Value::Array(parts)) => {
                for part in parts {
                    match part.get("type").and_then(Value::as_str) {
                        Some("text") => self.add_text(str_at(part, "text"), &emit),
                        Some("thinking") => match part.get("thinking") {
                            Some(Value::String(text)) => self.add_thinking(text, &emit),
                            Some(Value::Array(inner)) => {
                                for piece in inner {
                                    self.add_thinking(str_at(piece, "text"), &emit);
                                }
                            }
                            _ => {}
                        },
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        if let Some(refusal) = delta.get("refusal").and_then(Value::as_str) {
            self.refusal.push_str(refusal);
        }
        for (position, fragment) in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            // Some compatible servers leave out `index` when each chunk
            // carries whole calls; their position says the same.
            let index = fragment
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            let call = self.calls.entry(index).or_default();
            let text = |pointer: &str| fragment.pointer(pointer).and_then(Value::as_str);
            if let Some(id) = text("/id").filter(|id| !id.is_empty())
                && call.id.is_empty()
            {
                call.id = id.to_owned();
            }
            if let Some(name) = text("/function/name").filter(|n| !n.is_empty())
                && call.name.is_empty()
            {
                call.name = name.to_owned();
            }
            let args = text("/function/arguments").unwrap_or_default();
            call.args.push_str(args);
            if call.started {
                if !args.is_empty() {
                    emit(StreamEvent::ToolUseArgs {
                        id: call.id.clone(),
                        delta: args.to_owned(),
                    });
                }
            } else if !call.id.is_empty() && !call.name.is_empty() {
                start_call(call, &emit);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.stop = Some(match reason {
                "length" => StopReason::Length,
                "content_filter" => StopReason::Refusal,
                "tool_calls" | "function_call" => StopReason::ToolUse,
                _ => StopReason::EndTurn,
            });
        }
        Ok(())
    }

    fn add_text(&mut self, text: &str, emit: &impl Fn(StreamEvent)) {
        if !text.is_empty() {
            self.text.push_str(text);
            emit(StreamEvent::TextDelta(text.to_owned()));
        }
    }

    fn add_thinking(&mut self, thinking: &str, emit: &impl Fn(StreamEvent)) {
        if !thinking.is_empty() {
            self.thinking.push_str(thinking);
            emit(StreamEvent::ThinkingDelta(thinking.to_owned()));
        }
    }

    fn finish(mut self, events: &mpsc::UnboundedSender<StreamEvent>) -> Completion {
        let emit = |event| {
            let _ = events.send(event);
        };
        let mut blocks = Vec::new();
        if !self.thinking.is_empty() {
            blocks.push(Block::Thinking {
                thinking: self.thinking,
                signature: None,
            });
        }
        if !self.text.is_empty() {
            blocks.push(Block::Text { text: self.text });
        }
        for (index, call) in &mut self.calls {
            // Servers that send no call id still need one to match the result to.
            if call.id.is_empty() {
                call.id = format!("call_{index}");
            }
            if !call.started {
                start_call(call, &emit);
            }
            emit(StreamEvent::ToolUseEnd {
                id: call.id.clone(),
            });
        }
        let has_calls = !self.calls.is_empty();
        blocks.extend(self.calls.into_values().map(|call| Block::ToolCall {
            id: call.id,
            name: call.name,
            args: parse_args(&call.args),
        }));
        let mut stop = self.stop.unwrap_or(StopReason::EndTurn);
        // Some servers (older ollama) say "stop" after tool calls; the calls
        // still have to run.
        if has_calls && stop == StopReason::EndTurn {
            stop = StopReason::ToolUse;
        }
        let mut detail = None;
        if !self.refusal.trim().is_empty() {
            stop = StopReason::Refusal;
            detail = Some(self.refusal.trim().to_owned());
        } else if stop == StopReason::Refusal {
            detail = Some("the provider's content filter stopped the answer".to_owned());
        }
        Completion {
            message: Message::new(Role::Assistant, blocks),
            stop,
            usage: self.usage,
            detail,
            end: End::Normal,
        }
    }
}

fn str_at<'a>(value: &'a Value, name: &str) -> &'a str {
    value.get(name).and_then(Value::as_str).unwrap_or_default()
}

fn start_call(call: &mut PartialCall, emit: &impl Fn(StreamEvent)) {
    call.started = true;
    emit(StreamEvent::ToolUseStart {
        id: call.id.clone(),
        name: call.name.clone(),
    });
    if !call.args.is_empty() {
        emit(StreamEvent::ToolUseArgs {
            id: call.id.clone(),
            delta: call.args.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::config::is_openai;
    use serde_json::json;

    #[test]
    fn endpoint_handles_v1() {
        assert_eq!(endpoint("http://h:1"), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint("http://h:1/v1"), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint("http://h:1/v1/"), "http://h:1/v1/chat/completions");
        assert_eq!(
            endpoint("http://h:1/api/v1"),
            "http://h:1/api/v1/chat/completions"
        );
        assert_eq!(
            endpoint("https://g.example/v1beta/openai/"),
            "https://g.example/v1beta/openai/chat/completions"
        );
        assert_eq!(
            endpoint("http://v1.h:1"),
            "http://v1.h:1/v1/chat/completions"
        );
    }

    #[test]
    fn tool_result_images_follow_the_tool_messages() {
        let messages = vec![
            Message {
                role: Role::User,
                content: vec![Block::Text {
                    text: "look".into(),
                }],
                time: None,
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::ToolCall {
                        id: "a".into(),
                        name: "read".into(),
                        args: json!({}),
                    },
                    Block::ToolCall {
                        id: "b".into(),
                        name: "read".into(),
                        args: json!({}),
                    },
                ],
                time: None,
            },
            Message {
                role: Role::Tool,
                content: vec![Block::ToolResult {
                    call_id: "a".into(),
                    is_error: false,
                    content: vec![Block::Image {
                        mime_type: "image/png".into(),
                        data: "AAAA".into(),
                    }],
                }],
                time: None,
            },
            Message {
                role: Role::Tool,
                content: vec![Block::ToolResult {
                    call_id: "b".into(),
                    is_error: false,
                    content: vec![Block::Text {
                        text: "done".into(),
                    }],
                }],
                time: None,
            },
        ];
        let wire = serde_json::to_value(wire_messages(&messages, 0).0).unwrap();
        let wire = wire.as_array().unwrap();
        let roles: Vec<&str> = wire.iter().filter_map(|m| m["role"].as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
        assert_eq!(
            wire[4]["content"][1]["image_url"]["url"],
            "data:image/png;base64,AAAA"
        );
        assert_eq!(wire[1]["content"], Value::Null);
    }

    #[test]
    fn the_cache_key_goes_only_to_openai() {
        assert!(is_openai("https://api.openai.com"));
        assert!(is_openai("https://API.openai.com/v1/"));
        assert!(!is_openai("http://api.openai.com.evil.example"));
        assert!(!is_openai("http://127.0.0.1:8080/v1"));
        let messages = [Message::user("hi")];
        let request = Request {
            model: "gpt-6.2-sol",
            system: "",
            messages: &messages,
            tools: &[],
            max_tokens: 100,
            reasoning: None,
            cache: crate::provider::config::CacheTtl::FiveMinutes,
            cache_key: Some("session-1"),
            drop_thinking_before: 0,
            history: None,
        };
        let body = |openai| -> Value {
            serde_json::from_slice(&request_body(&request, openai, &mut BodyCache::default()))
                .unwrap()
        };
        assert_eq!(body(true)["prompt_cache_key"], "session-1");
        assert!(body(false).get("prompt_cache_key").is_none());
    }

    #[test]
    fn the_table_decides_the_reasoning_fields() {
        let messages = [Message::user("hi")];
        let body = |model, reasoning| -> Value {
            let request = Request {
                model,
                system: "",
                messages: &messages,
                tools: &[],
                max_tokens: 100,
                reasoning,
                cache: crate::provider::config::CacheTtl::Off,
                cache_key: None,
                drop_thinking_before: 0,
                history: None,
            };
            serde_json::from_slice(&request_body(&request, false, &mut BodyCache::default()))
                .unwrap()
        };
        let low = Some(crate::provider::config::Reasoning::Low);
        // gpt-4.1 does not reason: no effort, and `max_tokens`.
        let plain = body("gpt-4.1", low);
        assert!(plain.get("reasoning_effort").is_none());
        assert_eq!(plain["max_tokens"], 100);
        // A reasoning model takes `max_completion_tokens` even without --reasoning.
        let sol = body("gpt-6.2-sol", None);
        assert!(sol.get("max_tokens").is_none() && sol.get("reasoning_effort").is_none());
        assert_eq!(sol["max_completion_tokens"], 100);
        assert_eq!(body("gpt-6.2-sol", low)["reasoning_effort"], "low");
    }

    #[test]
    fn the_body_carries_every_message_in_the_wire_shape() {
        let messages = [
            Message::user("one"),
            Message {
                role: Role::User,
                content: vec![
                    Block::Text { text: "two".into() },
                    Block::Text {
                        text: "three".into(),
                    },
                ],
                time: None,
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Text {
                        text: "reading".into(),
                    },
                    Block::ToolCall {
                        id: "a".into(),
                        name: "read".into(),
                        args: json!({"path": "x"}),
                    },
                    Block::ToolCall {
                        id: "b".into(),
                        name: "read".into(),
                        args: json!("{broken"),
                    },
                ],
                time: None,
            },
            Message {
                role: Role::Tool,
                content: vec![
                    Block::ToolResult {
                        call_id: "a".into(),
                        is_error: false,
                        content: vec![Block::Text { text: "x".into() }],
                    },
                    Block::ToolResult {
                        call_id: "b".into(),
                        is_error: true,
                        content: vec![],
                    },
                ],
                time: None,
            },
        ];
        let tools = [crate::tool::ToolSpec {
            name: "read".into(),
            description: "Read.".into(),
            schema: json!({"type": "object"}).into(),
            read_only: true,
        }];
        let request = Request {
            model: "m",
            system: "be brief",
            messages: &messages,
            tools: &tools,
            max_tokens: 100,
            reasoning: Some(crate::provider::config::Reasoning::High),
            cache: crate::provider::config::CacheTtl::Off,
            cache_key: None,
            drop_thinking_before: 0,
            history: None,
        };
        let body: Value =
            serde_json::from_slice(&request_body(&request, false, &mut BodyCache::default()))
                .unwrap();
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "one"},
                    {"role": "user", "content": "two\nthree"},
                    {"role": "assistant", "content": "reading", "tool_calls": [
                        {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"x\"}"}},
                        {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{broken"}},
                    ]},
                    {"role": "tool", "tool_call_id": "a", "content": "x"},
                    {"role": "tool", "tool_call_id": "b", "content": ""},
                ],
                "tools": [{"type": "function", "function": {"name": "read", "description": "Read.", "parameters": {"type": "object"}}}],
                "tool_choice": "auto",
                "stream": true,
                "stream_options": {"include_usage": true},
                "reasoning_effort": "high",
                "max_completion_tokens": 100,
            })
        );
        let plain = Request {
            tools: &[],
            reasoning: None,
            ..request
        };
        let body: Value =
            serde_json::from_slice(&request_body(&plain, false, &mut BodyCache::default()))
                .unwrap();
        assert_eq!(body["max_tokens"], 100);
        assert!(body.get("max_completion_tokens").is_none());
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    }
}
