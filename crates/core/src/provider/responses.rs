//! The OpenAI Responses API, used statelessly (`store: false`): translating
//! a `Request` into its input items and its streamed events back into
//! stream events and an assistant message. Reasoning items come back with
//! their encrypted content and are replayed in order with the calls they
//! preceded, so a reasoning model keeps its reasoning across tool calls.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use futures_util::{Stream, StreamExt};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::body::{self, BodyCache, Cut, List};
use super::call::{Completion, End, ProviderError, Request, StopReason, StreamEvent, parse_args};
use super::config::{ProviderConfig, ProviderKind, Reasoning, Wire};
use super::openai::joined_text;
use super::usage::Usage;
use crate::message::{Block, Message, Role};
use crate::models::{self, Thinking};
use zot_http::sse;

/// Error codes of `response.failed` and `error` events that a new request
/// may get past: the server was busy, not the request wrong (codex maps
/// the same codes to retryable errors).
const RETRYABLE_CODES: &[&str] = &[
    "server_error",
    "server_is_overloaded",
    "overloaded",
    "rate_limit_exceeded",
    "slow_down",
];

pub(crate) async fn complete(
    http: &reqwest::Client,
    config: &ProviderConfig,
    body: bytes::Bytes,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError> {
    let url = endpoint(&config.base_url);
    let response = super::openai::post(http, config, &url, body).await?;
    read(config.kind.name(), response.bytes_stream(), events).await
}

/// `{base}/v1/responses`, with or without the `/v1` in `base_url`.
pub(crate) fn endpoint(base_url: &str) -> String {
    super::openai::api_url(base_url, "responses")
}

/// Reads a streamed Responses API body into the completion.
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
        if state.handle(&event.data, events)? {
            return Ok(state.finish(events));
        }
    }
    // Unlike chat completions, every stream ends with a terminal event:
    // without one the answer may be cut anywhere.
    Err(stream_error(
        provider,
        "stream ended before response.completed".into(),
    ))
}

fn stream_error(provider: &'static str, message: String) -> ProviderError {
    ProviderError::Stream { provider, message }
}

/// The JSON body of a streaming, stateless Responses API call; the settled
/// items of a history come from `cache`. `openai`: the server is OpenAI's
/// own (it alone gets `prompt_cache_key`).
pub(crate) fn request_body(
    request: &Request<'_>,
    openai: bool,
    cache: &mut BodyCache,
) -> bytes::Bytes {
    let model = models::info(ProviderKind::OpenAi, request.model);
    // Reasoning models reason whether asked or not; they are the ones whose
    // reasoning must be kept (and the only ones that accept these fields).
    let reasoning_model =
        model.thinking == Thinking::Effort || (request.reasoning.is_some() && !model.known());
    let reasoning = reasoning_model.then(|| WireReasoning {
        effort: request.reasoning.map(Reasoning::as_str),
        summary: "auto",
    });
    let from = cache.resume(Wire::Responses, request);
    let (input, cuts) = input_items(request.messages, from, request.drop_thinking_before);
    let head = Head {
        model: request.model,
        instructions: request.system,
    };
    let tools = cache.tools((Wire::Responses, 0), request.tools, |_, tool| WireTool {
        kind: "function",
        name: &tool.name,
        description: &tool.description,
        parameters: &tool.schema,
        strict: false,
    });
    let tail = Tail {
        tool_choice: (!request.tools.is_empty()).then_some("auto"),
        parallel_tool_calls: (!request.tools.is_empty()).then_some(true),
        store: false,
        stream: true,
        include: if reasoning_model {
            vec!["reasoning.encrypted_content"]
        } else {
            Vec::new()
        },
        reasoning,
        max_output_tokens: request.max_tokens,
        prompt_cache_key: request.cache_key.filter(|_| openai),
    };
    let list = List {
        lead: &[],
        items: &input,
        cuts: &cuts,
        open: 0,
    };
    body::request(
        cache,
        request,
        &head,
        "input",
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
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
}

/// The fields after the conversation and its tools (`body::request` writes
/// those, kept as JSON by `BodyCache::tools`).
#[derive(Serialize)]
struct Tail<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<WireReasoning>,
    max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
struct WireReasoning {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    summary: &'static str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

/// One input item.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: Vec<Content<'a>>,
    },
    Reasoning {
        id: &'a str,
        summary: Vec<SummaryText<'a>>,
        encrypted_content: &'a str,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: Cow<'a, str>,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Cow<'a, str>,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content<'a> {
    InputText { text: Cow<'a, str> },
    InputImage { image_url: String },
    OutputText { text: &'a str },
}

#[derive(Serialize)]
struct SummaryText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// The conversation from message `from` on as input items: an assistant
/// turn's reasoning, text and calls in the order the model produced them,
/// each call's output right after its turn. Another provider's thinking is
/// not sent: it means nothing here; nor is reasoning of
/// `messages[..drop_reasoning_before]` (another server's, before a switch of
/// provider). Each message's items are its own, so it may be cut before any
/// message.
fn input_items(
    messages: &[Message],
    from: usize,
    drop_reasoning_before: usize,
) -> (Vec<Item<'_>>, Vec<Cut>) {
    let mut items = Vec::new();
    let mut cuts = Vec::new();
    for (index, message) in messages.iter().enumerate().skip(from) {
        cuts.push(Cut {
            source: index,
            items: items.len(),
        });
        match message.role {
            Role::Assistant => {
                assistant_items(&message.content, index < drop_reasoning_before, &mut items);
            }
            Role::User | Role::Tool => user_items(&message.content, &mut items),
        }
    }
    (items, cuts)
}

fn assistant_items<'a>(content: &'a [Block], stale: bool, items: &mut Vec<Item<'a>>) {
    for block in content {
        match block {
            Block::Reasoning { .. } if stale => {}
            Block::Text { text } if !text.is_empty() => items.push(Item::Message {
                role: "assistant",
                content: vec![Content::OutputText { text }],
            }),
            Block::Reasoning {
                id,
                summary,
                encrypted_content,
            } => items.push(Item::Reasoning {
                id,
                summary: if summary.is_empty() {
                    Vec::new()
                } else {
                    vec![SummaryText {
                        kind: "summary_text",
                        text: summary,
                    }]
                },
                encrypted_content,
            }),
            Block::ToolCall { id, name, args } => items.push(Item::FunctionCall {
                call_id: id,
                name,
                // Unparsable arguments were kept as the model sent them.
                arguments: match args {
                    Value::String(raw) => Cow::Borrowed(raw.as_str()),
                    other => Cow::Owned(other.to_string()),
                },
            }),
            _ => {}
        }
    }
}

/// Tool outputs first (they answer the turn before), then the user's text
/// and images, then any images the tool results held (an output is text).
fn user_items<'a>(content: &'a [Block], items: &mut Vec<Item<'a>>) {
    let mut tool_images = Vec::new();
    for block in content {
        if let Block::ToolResult {
            call_id,
            content: result,
            ..
        } = block
        {
            items.push(Item::FunctionCallOutput {
                call_id,
                output: joined_text(result),
            });
            let mut images = result.iter().filter_map(image).peekable();
            if images.peek().is_some() {
                tool_images.push(Content::InputText {
                    text: Cow::Owned(format!("Images from tool call {call_id}:")),
                });
                tool_images.extend(images);
            }
        }
    }
    let own: Vec<Content<'a>> = content
        .iter()
        .filter_map(|block| match block {
            Block::Text { text } => Some(Content::InputText {
                text: Cow::Borrowed(text),
            }),
            other => image(other),
        })
        .collect();
    for content in [tool_images, own] {
        if !content.is_empty() {
            items.push(Item::Message {
                role: "user",
                content,
            });
        }
    }
}

fn image<'a>(block: &Block) -> Option<Content<'a>> {
    match block {
        Block::Image { mime_type, data } => Some(Content::InputImage {
            image_url: format!("data:{mime_type};base64,{data}"),
        }),
        _ => None,
    }
}

/// A function call while its arguments stream.
#[derive(Debug, Default)]
struct Call {
    call_id: String,
    args: String,
}

/// What a streamed item has shown so far, so its `done` copy adds only
/// what the deltas left out (some servers send no deltas at all).
#[derive(Debug, Default)]
struct Shown {
    text: usize,
    summary: usize,
    /// The summary part the deltas are in.
    part: u64,
}

#[derive(Debug, Default)]
struct StreamState {
    provider: &'static str,
    /// Finished output items by `output_index`: their order in the message.
    blocks: BTreeMap<u64, Block>,
    /// Function calls by item id.
    calls: HashMap<String, Call>,
    shown: HashMap<String, Shown>,
    refusal: String,
    has_calls: bool,
    stop: Option<StopReason>,
    detail: Option<String>,
    usage: Usage,
}

/// The string at `pointer`, or "".
fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

impl StreamState {
    /// Handles one event; `true` once the response is finished.
    fn handle(
        &mut self,
        data: &str,
        events: &mpsc::UnboundedSender<StreamEvent>,
    ) -> Result<bool, ProviderError> {
        let event: Value = serde_json::from_str(data)
            .map_err(|err| stream_error(self.provider, format!("invalid event: {err}")))?;
        // A closed receiver only means nobody watches the stream.
        let emit = |event| {
            let _ = events.send(event);
        };
        let item_id = str_at(&event, "/item_id");
        match str_at(&event, "/type") {
            "response.output_item.added" => {
                let item = &event["item"];
                if item["type"] == "function_call" {
                    let call_id = str_at(item, "/call_id").to_owned();
                    emit(StreamEvent::ToolUseStart {
                        id: call_id.clone(),
                        name: str_at(item, "/name").to_owned(),
                    });
                    let args = str_at(item, "/arguments");
                    if !args.is_empty() {
                        emit(StreamEvent::ToolUseArgs {
                            id: call_id.clone(),
                            delta: args.to_owned(),
                        });
                    }
                    let call = Call {
                        call_id,
                        args: args.to_owned(),
                    };
                    self.calls.insert(str_at(item, "/id").to_owned(), call);
                }
            }
            "response.output_text.delta" => {
                let delta = str_at(&event, "/delta");
                self.shown.entry(item_id.to_owned()).or_default().text += delta.len();
                if !delta.is_empty() {
                    emit(StreamEvent::TextDelta(delta.to_owned()));
                }
            }
            "response.refusal.delta" => self.refusal.push_str(str_at(&event, "/delta")),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let delta = str_at(&event, "/delta");
                let part = event["summary_index"].as_u64().unwrap_or(0);
                let shown = self.shown.entry(item_id.to_owned()).or_default();
                // Summary parts are paragraphs of one summary.
                if part > shown.part && shown.summary > 0 {
                    emit(StreamEvent::ThinkingDelta("\n\n".to_owned()));
                    shown.summary += 2;
                }
                shown.part = part;
                shown.summary += delta.len();
                if !delta.is_empty() {
                    emit(StreamEvent::ThinkingDelta(delta.to_owned()));
                }
            }
            "response.function_call_arguments.delta" => {
                let delta = str_at(&event, "/delta");
                if let Some(call) = self.calls.get_mut(item_id)
                    && !delta.is_empty()
                {
                    call.args.push_str(delta);
                    emit(StreamEvent::ToolUseArgs {
                        id: call.call_id.clone(),
                        delta: delta.to_owned(),
                    });
                }
            }
            "response.output_item.done" => {
                let index = event["output_index"]
                    .as_u64()
                    .unwrap_or(self.blocks.len() as u64);
                if let Some(block) = self.finish_item(&event["item"], &emit) {
                    self.blocks.insert(index, block);
                }
            }
            "response.completed" => {
                self.read_usage(&event["response"]);
                return Ok(true);
            }
            "response.incomplete" => {
                self.read_usage(&event["response"]);
                let reason = str_at(&event, "/response/incomplete_details/reason");
                if reason == "content_filter" {
                    self.stop = Some(StopReason::Refusal);
                    self.detail =
                        Some("the provider's content filter stopped the answer".to_owned());
                } else {
                    // `max_output_tokens`: the agent notes the cut and runs
                    // no tool call of it.
                    self.stop = Some(StopReason::Length);
                }
                return Ok(true);
            }
            "response.failed" => {
                let error = &event["response"]["error"];
                return Err(self.failure(str_at(error, "/code"), str_at(error, "/message")));
            }
            "error" => {
                let code = event
                    .get("code")
                    .and_then(Value::as_str)
                    .or_else(|| event.pointer("/error/code").and_then(Value::as_str))
                    .unwrap_or("error");
                let message = event
                    .get("message")
                    .and_then(Value::as_str)
                    .or_else(|| event.pointer("/error/message").and_then(Value::as_str))
                    .unwrap_or("unknown error");
                return Err(self.failure(code, message));
            }
            // Lifecycle, part and `done` events repeat what the deltas and
            // finished items carry.
            other => tracing::trace!(event = other, "responses event not needed"),
        }
        Ok(false)
    }

    /// A finished output item as a message block, showing what its deltas
    /// did not.
    fn finish_item(&mut self, item: &Value, emit: &impl Fn(StreamEvent)) -> Option<Block> {
        let id = str_at(item, "/id");
        let shown = self.shown.remove(id).unwrap_or_default();
        match str_at(item, "/type") {
            "message" => {
                let mut text = String::new();
                for part in item["content"].as_array().into_iter().flatten() {
                    match str_at(part, "/type") {
                        "output_text" => text.push_str(str_at(part, "/text")),
                        // The deltas' copy, when they came, is the same text.
                        "refusal" if self.refusal.is_empty() => {
                            self.refusal.push_str(str_at(part, "/refusal"));
                        }
                        _ => {}
                    }
                }
                if let Some(rest) = text.get(shown.text..).filter(|r| !r.is_empty()) {
                    emit(StreamEvent::TextDelta(rest.to_owned()));
                }
                (!text.is_empty()).then_some(Block::Text { text })
            }
            "reasoning" => {
                let parts: Vec<&str> = item["summary"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .chain(item["content"].as_array().into_iter().flatten())
                    .map(|part| str_at(part, "/text"))
                    .filter(|text| !text.is_empty())
                    .collect();
                let summary = parts.join("\n\n");
                if let Some(rest) = summary.get(shown.summary..).filter(|r| !r.is_empty()) {
                    emit(StreamEvent::ThinkingDelta(rest.to_owned()));
                }
                match item.get("encrypted_content").and_then(Value::as_str) {
                    Some(encrypted) => Some(Block::Reasoning {
                        id: id.to_owned(),
                        summary,
                        encrypted_content: encrypted.to_owned(),
                    }),
                    // Without its encrypted content a stateless request
                    // cannot send it back: it is only shown.
                    None => (!summary.is_empty()).then_some(Block::Thinking {
                        thinking: summary,
                        signature: None,
                    }),
                }
            }
            "function_call" => {
                let call_id = str_at(item, "/call_id").to_owned();
                let name = str_at(item, "/name").to_owned();
                let args = str_at(item, "/arguments");
                match self.calls.remove(id) {
                    Some(call) => {
                        if let Some(rest) = args.get(call.args.len()..).filter(|r| !r.is_empty())
                            && args.starts_with(&call.args)
                        {
                            emit(StreamEvent::ToolUseArgs {
                                id: call_id.clone(),
                                delta: rest.to_owned(),
                            });
                        }
                    }
                    None => {
                        emit(StreamEvent::ToolUseStart {
                            id: call_id.clone(),
                            name: name.clone(),
                        });
                        if !args.is_empty() {
                            emit(StreamEvent::ToolUseArgs {
                                id: call_id.clone(),
                                delta: args.to_owned(),
                            });
                        }
                    }
                }
                emit(StreamEvent::ToolUseEnd {
                    id: call_id.clone(),
                });
                self.has_calls = true;
                Some(Block::ToolCall {
                    id: call_id,
                    name,
                    args: parse_args(args),
                })
            }
            other => {
                tracing::debug!(item = other, "responses output item not used");
                None
            }
        }
    }

    /// `input_tokens` includes the cached ones, `output_tokens` the
    /// reasoning ones (priced as output, and reported apart as well).
    fn read_usage(&mut self, response: &Value) {
        let Some(usage) = response.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let field = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
        let cached = field("/input_tokens_details/cached_tokens");
        self.usage.input = field("/input_tokens").saturating_sub(cached);
        self.usage.cache_read = cached;
        self.usage.output = field("/output_tokens");
        self.usage.reasoning = field("/output_tokens_details/reasoning_tokens");
    }

    /// The error for a failed response: a full context window is what the
    /// agent compacts for; a busy server is worth asking again.
    fn failure(&self, code: &str, message: &str) -> ProviderError {
        let message = if message.is_empty() {
            "the response failed"
        } else {
            message
        };
        if code == "context_length_exceeded" {
            return ProviderError::Status {
                provider: self.provider,
                status: 400,
                message: format!("{code}: {message}"),
            };
        }
        if RETRYABLE_CODES.contains(&code) {
            return ProviderError::ErrorEvent {
                provider: self.provider,
                kind: code.to_owned(),
                message: message.to_owned(),
            };
        }
        let code = if code.is_empty() { "error" } else { code };
        stream_error(
            self.provider,
            format!("the response failed ({code}): {message}"),
        )
    }

    fn finish(self, events: &mpsc::UnboundedSender<StreamEvent>) -> Completion {
        // Calls the response was cut in the middle of end here; they are
        // not in the message, so they never run.
        for call in self.calls.values() {
            let _ = events.send(StreamEvent::ToolUseEnd {
                id: call.call_id.clone(),
            });
        }
        let blocks: Vec<Block> = self.blocks.into_values().collect();
        let mut stop = self.stop.unwrap_or(if self.has_calls {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        let mut detail = self.detail;
        if !self.refusal.trim().is_empty() {
            stop = StopReason::Refusal;
            detail = Some(self.refusal.trim().to_owned());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::config::{CacheTtl, Wire};

    fn body(model: &str, reasoning: Option<Reasoning>, openai: bool) -> Value {
        let messages = [Message::user("hi")];
        let request = Request {
            model,
            system: "",
            messages: &messages,
            tools: &[],
            max_tokens: 100,
            reasoning,
            cache: CacheTtl::FiveMinutes,
            cache_key: Some("session-1"),
            drop_thinking_before: 0,
            history: None,
        };
        serde_json::from_slice(&request_body(&request, openai, &mut BodyCache::default())).unwrap()
    }

    #[test]
    fn openai_itself_defaults_to_responses_and_other_servers_to_chat() {
        let openai = ProviderKind::OpenAi;
        assert_eq!(
            openai.default_wire("https://api.openai.com"),
            Wire::Responses
        );
        assert_eq!(openai.default_wire("http://127.0.0.1:8080/v1"), Wire::Chat);
        assert_eq!(
            ProviderKind::Ollama.default_wire("http://localhost:11434"),
            Wire::Chat
        );
        assert_eq!(endpoint("http://h:1/v1/"), "http://h:1/v1/responses");
        assert_eq!(endpoint("http://h:1"), "http://h:1/v1/responses");
    }

    #[test]
    fn only_reasoning_models_get_reasoning_fields_and_only_openai_the_cache_key() {
        let plain = body("gpt-4.1", Some(Reasoning::Low), false);
        assert!(plain.get("reasoning").is_none() && plain.get("include").is_none());
        assert!(plain.get("prompt_cache_key").is_none());
        assert_eq!(plain["store"], false);
        assert!(plain.get("instructions").is_none() && plain.get("tools").is_none());
        let sol = body("gpt-6.2-sol", None, true);
        assert_eq!(sol["reasoning"], serde_json::json!({"summary": "auto"}));
        assert_eq!(sol["include"][0], "reasoning.encrypted_content");
        assert_eq!(sol["prompt_cache_key"], "session-1");
        assert_eq!(sol["max_output_tokens"], 100);
    }

    async fn read_all(events: &[Value]) -> (Result<Completion, ProviderError>, Vec<StreamEvent>) {
        let body: Vec<Result<String, std::io::Error>> = events
            .iter()
            .map(|e| {
                Ok(format!(
                    "event: {}\ndata: {e}\n\n",
                    e["type"].as_str().unwrap()
                ))
            })
            .collect();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let result = read("openai", futures_util::stream::iter(body), &tx).await;
        drop(tx);
        let mut seen = Vec::new();
        while let Some(event) = rx.recv().await {
            seen.push(event);
        }
        (result, seen)
    }

    #[tokio::test]
    async fn finished_items_alone_are_enough_and_a_stream_without_its_end_is_an_error() {
        let text = serde_json::json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant",
                "content": [{"type": "output_text", "text": "whole"}]}});
        let (result, seen) = read_all(std::slice::from_ref(&text)).await;
        assert!(
            matches!(result, Err(ProviderError::Stream { .. })),
            "{result:?}"
        );
        assert_eq!(seen, [StreamEvent::TextDelta("whole".into())]);
        let completed = serde_json::json!({"type": "response.completed", "response": {}});
        let (result, _) = read_all(&[text, completed]).await;
        let completion = result.unwrap();
        assert_eq!(completion.message.text(), "whole");
        assert_eq!(completion.stop, StopReason::EndTurn);
    }
}
