//! The Anthropic Messages API: translating a `Request` into its wire format
//! and its server-sent events back into stream events and an assistant
//! message.

use std::collections::BTreeMap;

use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::{
    Completion, ProviderConfig, ProviderError, Reasoning, Request, StopReason, StreamEvent, Usage,
    parse_args,
};
use super::{retry, sse};
use crate::message::{Block, Message, Role};

const PROVIDER: &str = "anthropic";
const API_VERSION: &str = "2023-06-01";

/// Head room left for the visible answer when thinking is on: the API counts
/// the thinking budget against `max_tokens`.
const ANSWER_TOKENS: u32 = 4096;

/// Most characters of an event name quoted in an error.
const MAX_NAME_SHOWN: usize = 64;

/// `budget_tokens` per `--reasoning` level, as the agent issue sets them.
fn thinking_budget(reasoning: Reasoning) -> u32 {
    match reasoning {
        Reasoning::Low => 2048,
        Reasoning::Medium => 8192,
        Reasoning::High => 16384,
    }
}

pub(crate) async fn complete(
    http: &reqwest::Client,
    config: &ProviderConfig,
    request: &Request,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError> {
    let url = format!("{}/v1/messages", config.base_url.trim_end_matches('/'));
    let body = request_body(request).to_string();
    let response = retry::send(PROVIDER, &url, || {
        http.post(&url)
            .header("x-api-key", &config.api_key)
            .header("anthropic-version", API_VERSION)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.clone())
    })
    .await?;
    read(response.bytes_stream(), events).await
}

/// Reads a streamed Messages API response body into the completion.
pub(crate) async fn read<S, B, E>(
    body: S,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::error::Error + 'static,
{
    let mut stream = std::pin::pin!(sse::events(body));
    let mut state = StreamState::default();
    while let Some(event) = stream.next().await {
        let event = event.map_err(stream_error)?;
        if state.handle(&event.event, &event.data, events)? {
            return Ok(state.finish());
        }
    }
    Err(stream_error("stream ended early".into()))
}

fn stream_error(message: String) -> ProviderError {
    ProviderError::Stream {
        provider: PROVIDER,
        message,
    }
}

/// The JSON body of a streaming Messages API call.
pub(crate) fn request_body(request: &Request) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    let mut max_tokens = request.max_tokens;
    if let Some(reasoning) = request.reasoning {
        let budget = thinking_budget(reasoning);
        max_tokens = max_tokens.max(budget + ANSWER_TOKENS);
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    body.insert("max_tokens".into(), json!(max_tokens));
    if !request.system.is_empty() {
        body.insert("system".into(), json!(request.system));
    }
    body.insert(
        "messages".into(),
        Value::Array(wire_messages(&request.messages)),
    );
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.schema,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), Value::Bool(true));
    Value::Object(body)
}

/// The conversation as the API wants it: strictly alternating user and
/// assistant turns, tool results inside user turns ahead of anything else.
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::User | Role::Tool => "user",
        };
        let blocks: Vec<Value> = message
            .content
            .iter()
            .filter_map(|block| wire_block(block, message.role == Role::Assistant))
            .collect();
        // The API rejects empty turns; an aborted turn can leave one behind.
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, last_blocks)) if *last == role => last_blocks.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, mut blocks)| {
            if role == "user" {
                // Stable: results keep their order, and so does the rest.
                blocks.sort_by_key(|block| block["type"] != "tool_result");
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

/// One block on the wire, or `None` for what this side of the conversation
/// cannot carry.
fn wire_block(block: &Block, assistant: bool) -> Option<Value> {
    match block {
        // "text content blocks must be non-empty".
        Block::Text { text } if text.is_empty() => None,
        Block::Text { text } => Some(json!({"type": "text", "text": text})),
        Block::Image { mime_type, data } if !assistant => Some(image_block(mime_type, data)),
        // Thinking is replayed only with its signature: the API rejects
        // unsigned thinking (say, from another provider's session).
        Block::Thinking {
            thinking,
            signature: Some(signature),
        } if assistant => {
            Some(json!({"type": "thinking", "thinking": thinking, "signature": signature}))
        }
        Block::ToolCall { id, name, args } if assistant => {
            let input = if args.is_object() {
                args.clone()
            } else {
                json!({})
            };
            Some(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
        }
        Block::ToolResult {
            call_id,
            is_error,
            content,
        } if !assistant => {
            let content: Vec<Value> = content
                .iter()
                .filter_map(|inner| match inner {
                    Block::Text { text } => Some(json!({"type": "text", "text": text})),
                    Block::Image { mime_type, data } => Some(image_block(mime_type, data)),
                    _ => None,
                })
                .collect();
            Some(json!({
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": content,
                "is_error": is_error,
            }))
        }
        _ => None,
    }
}

fn image_block(mime_type: &str, data: &str) -> Value {
    json!({
        "type": "image",
        "source": {"type": "base64", "media_type": mime_type, "data": data},
    })
}

/// A content block while it streams.
#[derive(Debug)]
enum Partial {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    ToolUse {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    /// Blocks the message model has no place for (`redacted_thinking`, server tools).
    Other,
}

#[derive(Debug, Default)]
struct StreamState {
    /// By the API's block index, which is the order of the final message.
    blocks: BTreeMap<u64, Partial>,
    stop: Option<StopReason>,
    usage: Usage,
}

impl StreamState {
    /// Handles one event; true once the message is complete.
    fn handle(
        &mut self,
        name: &str,
        data: &str,
        events: &mpsc::UnboundedSender<StreamEvent>,
    ) -> Result<bool, ProviderError> {
        let data: Value = serde_json::from_str(data).map_err(|err| {
            // The name comes off the wire: only its start is worth showing.
            let shown: String = name.chars().take(MAX_NAME_SHOWN).collect();
            stream_error(format!("invalid `{shown}` event: {err}"))
        })?;
        let kind = data.get("type").and_then(Value::as_str).unwrap_or(name);
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        // A closed receiver only means nobody watches the stream; the
        // completion still matters.
        let emit = |event| {
            let _ = events.send(event);
        };
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => {
                let block = data.get("content_block").unwrap_or(&Value::Null);
                let partial = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = str_field(block, "text");
                        if !text.is_empty() {
                            emit(StreamEvent::TextDelta(text.to_owned()));
                        }
                        Partial::Text(text.to_owned())
                    }
                    Some("thinking") => {
                        let thinking = str_field(block, "thinking");
                        if !thinking.is_empty() {
                            emit(StreamEvent::ThinkingDelta(thinking.to_owned()));
                        }
                        Partial::Thinking {
                            thinking: thinking.to_owned(),
                            signature: str_field(block, "signature").to_owned(),
                        }
                    }
                    Some("tool_use") => {
                        let id = str_field(block, "id").to_owned();
                        let name = str_field(block, "name").to_owned();
                        emit(StreamEvent::ToolUseStart {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        let initial = block.get("input").cloned().unwrap_or(Value::Null);
                        Partial::ToolUse {
                            id,
                            name,
                            json: String::new(),
                            initial,
                        }
                    }
                    _ => Partial::Other,
                };
                self.blocks.insert(index, partial);
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                let delta_kind = delta
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                match (self.blocks.get_mut(&index), delta_kind) {
                    (Some(Partial::Text(text)), "text_delta") => {
                        let piece = str_field(delta, "text");
                        text.push_str(piece);
                        emit(StreamEvent::TextDelta(piece.to_owned()));
                    }
                    (Some(Partial::Thinking { thinking, .. }), "thinking_delta") => {
                        let piece = str_field(delta, "thinking");
                        thinking.push_str(piece);
                        emit(StreamEvent::ThinkingDelta(piece.to_owned()));
                    }
                    (Some(Partial::Thinking { signature, .. }), "signature_delta") => {
                        signature.push_str(str_field(delta, "signature"));
                    }
                    (Some(Partial::ToolUse { id, json, .. }), "input_json_delta") => {
                        let piece = str_field(delta, "partial_json");
                        // The API opens every tool block with an empty fragment.
                        if !piece.is_empty() {
                            json.push_str(piece);
                            emit(StreamEvent::ToolUseArgs {
                                id: id.clone(),
                                delta: piece.to_owned(),
                            });
                        }
                    }
                    // Citations and deltas of blocks we do not keep.
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(Partial::ToolUse { id, .. }) = self.blocks.get(&index) {
                    emit(StreamEvent::ToolUseEnd { id: id.clone() });
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(usage) = data.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let message = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error event");
                return Err(stream_error(message.to_owned()));
            }
            // `ping` keeps the connection alive; unknown events are the API
            // growing, which must not break old clients.
            _ => {}
        }
        Ok(false)
    }

    /// Usage arrives in `message_start` and, cumulatively, in `message_delta`:
    /// later numbers replace earlier ones.
    fn read_usage(&mut self, usage: &Value) {
        let field = |name: &str| usage.get(name).and_then(Value::as_u64);
        if let Some(n) = field("input_tokens") {
            self.usage.input = n;
        }
        if let Some(n) = field("output_tokens") {
            self.usage.output = n;
        }
        if let Some(n) = field("cache_read_input_tokens") {
            self.usage.cache_read = n;
        }
        if let Some(n) = field("cache_creation_input_tokens") {
            self.usage.cache_write = n;
        }
    }

    fn finish(self) -> Completion {
        let blocks: Vec<Block> = self
            .blocks
            .into_values()
            .filter_map(|partial| match partial {
                Partial::Text(text) => Some(Block::Text { text }),
                Partial::Thinking {
                    thinking,
                    signature,
                } => Some(Block::Thinking {
                    thinking,
                    signature: (!signature.is_empty()).then_some(signature),
                }),
                Partial::ToolUse {
                    id,
                    name,
                    json,
                    initial,
                } => {
                    // Without deltas the arguments were complete in the start event.
                    let args = if json.is_empty() && initial.is_object() {
                        initial
                    } else {
                        parse_args(&json)
                    };
                    Some(Block::ToolCall { id, name, args })
                }
                Partial::Other => None,
            })
            .collect();
        let has_calls = blocks
            .iter()
            .any(|block| matches!(block, Block::ToolCall { .. }));
        let stop = self.stop.unwrap_or(if has_calls {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        Completion {
            message: Message::new(Role::Assistant, blocks),
            stop,
            usage: self.usage,
        }
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        // end_turn, stop_sequence, and pause_turn/refusal, which end the
        // turn as far as the agent is concerned.
        _ => StopReason::EndTurn,
    }
}

fn str_field<'a>(value: &'a Value, name: &str) -> &'a str {
    value.get(name).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: Role, content: Vec<Block>) -> Message {
        Message {
            role,
            content,
            time: None,
        }
    }

    #[test]
    fn adjacent_turns_merge_with_tool_results_first() {
        let messages = vec![
            msg(Role::User, vec![Block::Text { text: "go".into() }]),
            msg(
                Role::Assistant,
                vec![Block::ToolCall {
                    id: "t1".into(),
                    name: "ls".into(),
                    args: json!({}),
                }],
            ),
            msg(
                Role::User,
                vec![Block::Text {
                    text: "also this".into(),
                }],
            ),
            msg(
                Role::Tool,
                vec![Block::ToolResult {
                    call_id: "t1".into(),
                    is_error: false,
                    content: vec![Block::Text { text: "a b".into() }],
                }],
            ),
            msg(
                Role::User,
                vec![Block::Text {
                    text: String::new(),
                }],
            ),
        ];
        let wire = wire_messages(&messages);
        assert_eq!(wire.len(), 3);
        assert_eq!(wire[2]["role"], "user");
        assert_eq!(wire[2]["content"][0]["type"], "tool_result");
        assert_eq!(wire[2]["content"][1]["text"], "also this");
        assert_eq!(wire[2]["content"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn thinking_raises_max_tokens() {
        let mut request = Request {
            model: "m".into(),
            system: String::new(),
            messages: vec![Message::user("hi")],
            tools: vec![],
            max_tokens: 1000,
            reasoning: Some(Reasoning::Medium),
        };
        let body = request_body(&request);
        assert_eq!(body["max_tokens"], 8192 + 4096);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 8192})
        );
        assert!(body.get("system").is_none());
        assert!(body.get("tools").is_none());
        request.max_tokens = 64000;
        assert_eq!(request_body(&request)["max_tokens"], 64000);
    }
}
