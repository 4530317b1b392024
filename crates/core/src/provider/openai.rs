//! OpenAI-compatible chat completions (OpenAI, ollama, any compatible
//! server): translating a `Request` into its wire format and its streamed
//! chunks back into stream events and an assistant message.

use std::collections::BTreeMap;

use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::{
    Completion, ProviderConfig, ProviderError, Request, StopReason, StreamEvent, Usage, parse_args,
};
use super::{retry, sse};
use crate::message::{Block, Message, Role};

pub(crate) async fn complete(
    http: &reqwest::Client,
    config: &ProviderConfig,
    request: &Request,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError> {
    // Errors name what the user configured: "ollama" says more than "openai".
    let provider = config.kind.name();
    let url = endpoint(&config.base_url);
    let body = request_body(request).to_string();
    let response = retry::send(provider, &url, || {
        let builder = http
            .post(&url)
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
    .await?;
    read(provider, response.bytes_stream(), events).await
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

/// `base_url` may or may not carry the `/v1` that OpenAI-compatible servers
/// are usually documented with.
pub(crate) fn endpoint(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/chat/completions")
    } else {
        format!("{base}/v1/chat/completions")
    }
}

/// The JSON body of a streaming chat completions call.
pub(crate) fn request_body(request: &Request) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert(
        "messages".into(),
        Value::Array(wire_messages(&request.system, &request.messages)),
    );
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.schema,
                    },
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), json!("auto"));
    }
    body.insert("stream".into(), Value::Bool(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    match request.reasoning {
        // Reasoning models reject `max_tokens`; their limit includes the
        // hidden reasoning.
        Some(reasoning) => {
            body.insert("reasoning_effort".into(), json!(reasoning.as_str()));
            body.insert("max_completion_tokens".into(), json!(request.max_tokens));
        }
        None => {
            body.insert("max_tokens".into(), json!(request.max_tokens));
        }
    }
    Value::Object(body)
}

/// The conversation in chat completions form: one `tool` message per tool
/// result, right after the assistant message that asked for it.
fn wire_messages(system: &str, messages: &[Message]) -> Vec<Value> {
    let mut wire = Vec::new();
    if !system.is_empty() {
        wire.push(json!({"role": "system", "content": system}));
    }
    // Tool messages carry text only, so images from tool results follow in a
    // user message, after the whole run of tool messages: anything between
    // them and their assistant message is rejected.
    let mut pending_images: Vec<Value> = Vec::new();
    for message in messages {
        let results: Vec<&Block> = message
            .content
            .iter()
            .filter(|b| matches!(b, Block::ToolResult { .. }))
            .collect();
        if results.is_empty() {
            flush_images(&mut wire, &mut pending_images);
        }
        for result in results {
            if let Block::ToolResult {
                call_id, content, ..
            } = result
            {
                wire.push(json!({
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": joined_text(content),
                }));
                let images: Vec<Value> = content.iter().filter_map(image_part).collect();
                if !images.is_empty() {
                    pending_images.push(json!({
                        "type": "text",
                        "text": format!("Images from tool call {call_id}:"),
                    }));
                    pending_images.extend(images);
                }
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
    wire
}

fn flush_images(wire: &mut Vec<Value>, pending: &mut Vec<Value>) {
    if !pending.is_empty() {
        wire.push(json!({"role": "user", "content": std::mem::take(pending)}));
    }
}

/// Text and images of a user message (tool results are sent separately);
/// `None` when nothing is left.
fn user_message(content: &[Block]) -> Option<Value> {
    let has_images = content.iter().any(|b| matches!(b, Block::Image { .. }));
    if has_images {
        let parts: Vec<Value> = content
            .iter()
            .filter_map(|block| match block {
                Block::Text { text } => Some(json!({"type": "text", "text": text})),
                image @ Block::Image { .. } => image_part(image),
                _ => None,
            })
            .collect();
        return Some(json!({"role": "user", "content": parts}));
    }
    let has_text = content.iter().any(|b| matches!(b, Block::Text { .. }));
    has_text.then(|| json!({"role": "user", "content": joined_text(content)}))
}

/// `None` for a message with neither text nor tool calls (only thinking, or
/// an aborted turn): the API rejects an assistant message without both.
fn assistant_message(message: &Message) -> Option<Value> {
    let text = joined_text(&message.content);
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|(id, name, args)| {
            // A model's unparsable arguments were kept as a string: send them back as they came.
            let arguments = match args {
                Value::String(raw) => raw.clone(),
                other => other.to_string(),
            };
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut wire = Map::new();
    wire.insert("role".into(), json!("assistant"));
    wire.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            json!(text)
        },
    );
    if !calls.is_empty() {
        wire.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(wire))
}

fn joined_text(content: &[Block]) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|block| match block {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

fn image_part(block: &Block) -> Option<Value> {
    match block {
        Block::Image { mime_type, data } => Some(json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{mime_type};base64,{data}")},
        })),
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
            return Err(stream_error(self.provider, message.to_owned()));
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
        if !thinking.is_empty() {
            self.thinking.push_str(thinking);
            emit(StreamEvent::ThinkingDelta(thinking.to_owned()));
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            self.text.push_str(text);
            emit(StreamEvent::TextDelta(text.to_owned()));
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
                "tool_calls" | "function_call" => StopReason::ToolUse,
                _ => StopReason::EndTurn,
            });
        }
        Ok(())
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
        Completion {
            message: Message::new(Role::Assistant, blocks),
            stop,
            usage: self.usage,
        }
    }
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

    #[test]
    fn endpoint_handles_v1() {
        assert_eq!(endpoint("http://h:1"), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint("http://h:1/v1"), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint("http://h:1/v1/"), "http://h:1/v1/chat/completions");
        assert_eq!(
            endpoint("http://h:1/api/v1"),
            "http://h:1/api/v1/chat/completions"
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
        let wire = wire_messages("", &messages);
        let roles: Vec<&str> = wire.iter().filter_map(|m| m["role"].as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
        assert_eq!(
            wire[4]["content"][1]["image_url"]["url"],
            "data:image/png;base64,AAAA"
        );
        assert_eq!(wire[1]["content"], Value::Null);
    }
}
