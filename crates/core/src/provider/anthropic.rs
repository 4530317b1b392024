//! The Anthropic Messages API: translating a `Request` into its wire format
//! and its server-sent events back into stream events and an assistant
//! message.

use std::borrow::Cow;
use std::collections::BTreeMap;

use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::body::{self, BodyCache, Cut, List};
use super::call::{Completion, End, ProviderError, Request, StopReason, StreamEvent, parse_args};
use super::config::{CacheTtl, ProviderConfig, ProviderKind, Reasoning, Wire};
use super::retry;
use super::usage::Usage;
use crate::message::{Block, Message, Role};
use crate::models::{self, Thinking};
use zot_http::sse;

const PROVIDER: &str = "anthropic";
const API_VERSION: &str = "2023-06-01";

/// Head room left for the visible answer when thinking is on: the API counts
/// the thinking budget against `max_tokens`.
const ANSWER_TOKENS: u32 = 4096;

/// How many content blocks before a cache mark the API looks back for an
/// earlier cache entry (prompt caching docs): a turn that adds more than this
/// gets a second mark where the previous request's last mark was.
pub const CACHE_LOOKBACK_BLOCKS: usize = 20;

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
    body: bytes::Bytes,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError> {
    let url = format!("{}/v1/messages", config.base_url.trim_end_matches('/'));
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

/// The JSON body of a streaming Messages API call, serialised straight
/// from the conversation (no intermediate `Value` tree); the settled turns
/// of a history come from `cache`.
pub(crate) fn request_body(request: &Request<'_>, cache: &mut BodyCache) -> bytes::Bytes {
    let mut max_tokens = request.max_tokens;
    let model = models::info(ProviderKind::Anthropic, request.model);
    let (thinking, output_config) = match (request.reasoning, model.thinking) {
        (Some(reasoning), Thinking::Budget | Thinking::Effort) => {
            let budget = thinking_budget(reasoning);
            max_tokens = max_tokens.max(budget + ANSWER_TOKENS);
            let thinking = WireThinking {
                kind: "enabled",
                budget_tokens: Some(budget),
            };
            (Some(thinking), None)
        }
        // These models reject a budget: they decide how long to think,
        // guided by the effort level.
        (Some(reasoning), Thinking::Adaptive) => {
            let thinking = WireThinking {
                kind: "adaptive",
                budget_tokens: None,
            };
            let effort = OutputConfig {
                effort: reasoning.as_str(),
            };
            (Some(thinking), Some(effort))
        }
        (None, _) | (Some(_), Thinking::None) => (None, None),
    };
    let mark = match request.cache {
        CacheTtl::Off => None,
        CacheTtl::FiveMinutes => Some(CacheControl {
            kind: "ephemeral",
            ttl: None,
        }),
        CacheTtl::OneHour => Some(CacheControl {
            kind: "ephemeral",
            ttl: Some("1h"),
        }),
    };
    let from = cache.resume(Wire::Messages, request);
    let (mut messages, cuts) = wire_messages(request.messages, from, request.drop_thinking_before);
    // The stable prefix begins with the tools: the last one carries a mark.
    let marked = request
        .tools
        .len()
        .checked_sub(1)
        .filter(|_| mark.is_some());
    let tools = cache.tools(
        (Wire::Messages, request.cache as u8),
        request.tools,
        |i, tool| WireTool {
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.schema,
            cache_control: mark.filter(|_| Some(i) == marked),
        },
    );
    let system = match (request.system, mark) {
        ("", _) => None,
        (text, None) => Some(System::Text(text)),
        (text, Some(mark)) => Some(System::Blocks([SystemBlock {
            kind: "text",
            text,
            cache_control: mark,
        }])),
    };
    if let Some(mark) = mark {
        // The stable prefix: tools (marked above), then the system prompt
        // (marked above), then the conversation up to its newest message.
        mark_messages(&mut messages, mark);
    }
    let head = Head {
        model: request.model,
        thinking,
        output_config,
        max_tokens,
        system,
    };
    let tail = Tail { stream: true };
    let list = List {
        lead: &[],
        items: &messages,
        cuts: &cuts,
        open: MARKED_TURNS,
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

/// The newest turns, which may carry cache marks that move with the next
/// request ([`mark_messages`]): they are always serialised afresh.
const MARKED_TURNS: usize = 3;

/// Marks the newest message's last block, and, when the newest exchange
/// holds more blocks than the API looks back over, the block where the
/// previous request's mark was, so that entry is still read. With the
/// tools and the system prompt that is at most the API's four marks. Only
/// the last [`MARKED_TURNS`] turns are looked at, so `turns` may be just
/// the newest of a conversation's.
fn mark_messages(turns: &mut [Turn<'_>], mark: CacheControl) {
    let Some(last) = turns.len().checked_sub(1) else {
        return;
    };
    turns[last].mark(mark);
    let newest: usize = turns[last.saturating_sub(1)..]
        .iter()
        .map(|turn| turn.content.len())
        .sum();
    if last >= 2 && newest > CACHE_LOOKBACK_BLOCKS {
        turns[last - 2].mark(mark);
    }
}

/// The fields of the request body before the conversation, in the API's
/// order ([`body::request`] writes the conversation after them).
#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<WireThinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<System<'a>>,
}

/// The fields after the conversation and its tools (`body::request` writes
/// those, kept as JSON by `BodyCache::tools`).
#[derive(Serialize)]
struct Tail {
    stream: bool,
}

#[derive(Serialize)]
struct WireThinking {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_tokens: Option<u32>,
}

#[derive(Serialize)]
struct OutputConfig {
    effort: &'static str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// `cache_control`: the prefix up to the block that carries it is cached.
#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

/// The system prompt: a string, or one text block when it carries a mark.
#[derive(Serialize)]
#[serde(untagged)]
enum System<'a> {
    Text(&'a str),
    Blocks([SystemBlock<'a>; 1]),
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: CacheControl,
}

struct Turn<'a> {
    role: &'static str,
    content: Vec<WireBlock<'a>>,
    /// The block that carries a cache mark, and the mark.
    mark: Option<(usize, CacheControl)>,
}

impl Turn<'_> {
    /// Marks the last block that may carry a mark (thinking blocks may not).
    fn mark(&mut self, mark: CacheControl) {
        let markable = self.content.iter().rposition(|block| {
            !matches!(
                block,
                WireBlock::Thinking { .. } | WireBlock::RedactedThinking { .. }
            )
        });
        if let Some(at) = markable {
            self.mark = Some((at, mark));
        }
    }
}

impl Serialize for Turn<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeStruct};
        struct Content<'t, 'a>(&'t Turn<'a>);
        #[derive(Serialize)]
        struct Marked<'t, 'a> {
            #[serde(flatten)]
            block: &'t WireBlock<'a>,
            cache_control: CacheControl,
        }
        impl Serialize for Content<'_, '_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut seq = serializer.serialize_seq(Some(self.0.content.len()))?;
                for (at, block) in self.0.content.iter().enumerate() {
                    match self.0.mark {
                        Some((marked, cache_control)) if marked == at => {
                            seq.serialize_element(&Marked {
                                block,
                                cache_control,
                            })?
                        }
                        _ => seq.serialize_element(block)?,
                    }
                }
                seq.end()
            }
        }
        let mut turn = serializer.serialize_struct("Turn", 2)?;
        turn.serialize_field("role", self.role)?;
        turn.serialize_field("content", &Content(self))?;
        turn.end()
    }
}

/// A content block as the API takes it.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: ImageSource<'a>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: Vec<WireBlock<'a>>,
        is_error: bool,
    },
}

#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

/// A tool call's `input`: the API takes only an object.
#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    Args(&'a Value),
    Empty {},
}

/// The conversation from message `from` on as the API wants it: strictly
/// alternating user and assistant turns, tool results inside user turns
/// ahead of anything else. It may be cut where a turn starts.
fn wire_messages(
    messages: &[Message],
    from: usize,
    drop_thinking_before: usize,
) -> (Vec<Turn<'_>>, Vec<Cut>) {
    let mut turns: Vec<Turn<'_>> = Vec::new();
    let mut cuts = Vec::new();
    for (index, message) in messages.iter().enumerate().skip(from) {
        let stale = index < drop_thinking_before;
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::User | Role::Tool => "user",
        };
        let assistant = message.role == Role::Assistant;
        let mut blocks = message
            .content
            .iter()
            .filter(|block| {
                !(stale
                    && matches!(
                        block,
                        Block::Thinking { .. } | Block::RedactedThinking { .. }
                    ))
            })
            .filter_map(|block| wire_block(block, assistant))
            .peekable();
        // The API rejects empty turns; an aborted turn can leave one behind.
        if blocks.peek().is_none() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => {
                cuts.push(Cut {
                    source: index,
                    items: turns.len(),
                });
                turns.push(Turn {
                    role,
                    content: blocks.collect(),
                    mark: None,
                });
            }
        }
    }
    for turn in &mut turns {
        if turn.role == "user" {
            // Stable: results keep their order, and so does the rest.
            turn.content
                .sort_by_key(|block| !matches!(block, WireBlock::ToolResult { .. }));
        }
    }
    (turns, cuts)
}

/// One block on the wire, or `None` for what this side of the conversation
/// cannot carry.
fn wire_block(block: &Block, assistant: bool) -> Option<WireBlock<'_>> {
    match block {
        // "text content blocks must be non-empty".
        Block::Text { text } if text.is_empty() => None,
        Block::Text { text } => Some(WireBlock::Text { text }),
        Block::Image { mime_type, data } if !assistant => Some(image_block(mime_type, data)),
        // Thinking is replayed only with its signature: the API rejects
        // unsigned thinking (say, from another provider's session).
        Block::Thinking {
            thinking,
            signature: Some(signature),
        } if assistant => Some(WireBlock::Thinking {
            thinking,
            signature,
        }),
        Block::RedactedThinking { data } if assistant => Some(WireBlock::RedactedThinking { data }),
        Block::ToolCall { id, name, args } if assistant => Some(WireBlock::ToolUse {
            id,
            name,
            input: if args.is_object() {
                Input::Args(args)
            } else {
                Input::Empty {}
            },
        }),
        Block::ToolResult {
            call_id,
            is_error,
            content,
        } if !assistant => Some(WireBlock::ToolResult {
            tool_use_id: call_id,
            content: content
                .iter()
                .filter_map(|inner| match inner {
                    Block::Text { text } => Some(WireBlock::Text { text }),
                    Block::Image { mime_type, data } => Some(image_block(mime_type, data)),
                    _ => None,
                })
                .collect(),
            is_error: *is_error,
        }),
        _ => None,
    }
}

fn image_block<'a>(mime_type: &'a str, data: &'a str) -> WireBlock<'a> {
    WireBlock::Image {
        source: ImageSource {
            kind: "base64",
            media_type: mime_type,
            data,
        },
    }
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
    RedactedThinking(String),
    /// Blocks the message model has no place for (server tools).
    Other,
}

#[derive(Debug, Default)]
struct StreamState {
    /// By the API's block index, which is the order of the final message.
    blocks: BTreeMap<u64, Partial>,
    stop: Option<StopReason>,
    /// The refusal's `stop_details`, in words.
    detail: Option<String>,
    end: End,
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
        if name == "content_block_delta"
            && let Ok(event) = serde_json::from_str::<DeltaEvent<'_>>(data)
            && event.kind.as_deref().is_none_or(|kind| kind == name)
        {
            self.delta(event.index, &event.delta, events);
            return Ok(false);
        }
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
                // A message may start with content already in it (a
                // continued turn): those blocks come first, complete.
                let content = data.pointer("/message/content").and_then(Value::as_array);
                for (at, block) in content.into_iter().flatten().enumerate() {
                    let partial = start_block(block, &emit);
                    if let Partial::ToolUse { id, .. } = &partial {
                        emit(StreamEvent::ToolUseEnd { id: id.clone() });
                    }
                    self.blocks.insert(at as u64, partial);
                }
            }
            "content_block_start" => {
                let block = data.get("content_block").unwrap_or(&Value::Null);
                let partial = start_block(block, &emit);
                self.blocks.insert(index, partial);
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                let delta = Delta {
                    kind: str_field(delta, "type").into(),
                    text: str_field(delta, "text").into(),
                    thinking: str_field(delta, "thinking").into(),
                    signature: str_field(delta, "signature").into(),
                    partial_json: str_field(delta, "partial_json").into(),
                };
                self.delta(index, &delta, events);
            }
            "content_block_stop" => {
                if let Some(Partial::ToolUse { id, .. }) = self.blocks.get(&index) {
                    emit(StreamEvent::ToolUseEnd { id: id.clone() });
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(reason));
                    self.end = match reason {
                        "pause_turn" => End::Paused,
                        "model_context_window_exceeded" => End::ContextFull,
                        _ => End::Normal,
                    };
                }
                if let Some(details) = data.pointer("/delta/stop_details") {
                    self.detail = stop_details(details);
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
                let kind = data.pointer("/error/type").and_then(Value::as_str);
                return Err(ProviderError::ErrorEvent {
                    provider: PROVIDER,
                    kind: kind.unwrap_or("error").to_owned(),
                    message: message.to_owned(),
                });
            }
            // `ping` keeps the connection alive; unknown events are the API
            // growing, which must not break old clients.
            _ => {}
        }
        Ok(false)
    }

    /// A piece of the block at `index`: text, thinking, its signature or a
    /// tool call's arguments. Deltas of blocks not kept (citations) and of
    /// another kind than their block's are passed over.
    fn delta(
        &mut self,
        index: u64,
        delta: &Delta<'_>,
        events: &mpsc::UnboundedSender<StreamEvent>,
    ) {
        // A closed receiver only means nobody watches the stream.
        let emit = |event| {
            let _ = events.send(event);
        };
        match (self.blocks.get_mut(&index), &*delta.kind) {
            (Some(Partial::Text(text)), "text_delta") => {
                text.push_str(&delta.text);
                emit(StreamEvent::TextDelta(delta.text.to_string()));
            }
            (Some(Partial::Thinking { thinking, .. }), "thinking_delta") => {
                thinking.push_str(&delta.thinking);
                emit(StreamEvent::ThinkingDelta(delta.thinking.to_string()));
            }
            (Some(Partial::Thinking { signature, .. }), "signature_delta") => {
                signature.push_str(&delta.signature);
            }
            (Some(Partial::ToolUse { id, json, .. }), "input_json_delta") => {
                let piece = &delta.partial_json;
                // The API opens every tool block with an empty fragment.
                if !piece.is_empty() {
                    json.push_str(piece);
                    emit(StreamEvent::ToolUseArgs {
                        id: id.clone(),
                        delta: piece.to_string(),
                    });
                }
            }
            _ => {}
        }
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
        if let Some(n) = usage
            .pointer("/cache_creation/ephemeral_1h_input_tokens")
            .and_then(Value::as_u64)
        {
            self.usage.cache_write_1h = n;
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
                Partial::RedactedThinking(data) => Some(Block::RedactedThinking { data }),
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
            detail: self.detail,
            end: self.end,
        }
    }
}

/// A block as `content_block_start` (or `message_start`) carries it, with
/// the stream events for what it holds already.
fn start_block(block: &Value, emit: &impl Fn(StreamEvent)) -> Partial {
    match block.get("type").and_then(Value::as_str) {
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
        Some("redacted_thinking") => Partial::RedactedThinking(str_field(block, "data").to_owned()),
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
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        "refusal" => StopReason::Refusal,
        // end_turn, stop_sequence, and pause_turn (`End::Paused` says the
        // model goes on).
        _ => StopReason::EndTurn,
    }
}

/// A refusal's `stop_details` (`{type: "refusal", category, explanation}`)
/// in words: the explanation, with the policy category when there is one.
fn stop_details(details: &Value) -> Option<String> {
    let explanation = details
        .get("explanation")
        .and_then(Value::as_str)
        .filter(|e| !e.trim().is_empty());
    let category = details
        .get("category")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty());
    match (explanation, category) {
        (Some(e), Some(c)) => Some(format!("{} ({c})", e.trim())),
        (Some(e), None) => Some(e.trim().to_owned()),
        (None, Some(c)) => Some(format!("category {c}")),
        (None, None) => None,
    }
}

/// A `content_block_delta` event read straight into its fields: the
/// stream's most frequent event (every piece of text), which a `Value` would
/// first copy into maps. Anything this does not read (a field of another
/// type, a duplicate) is read through a `Value` as every other event is.
#[derive(Deserialize)]
struct DeltaEvent<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    index: u64,
    #[serde(borrow)]
    delta: Delta<'a>,
}

/// A delta's kind and its piece (missing ones empty).
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Cow<'a, str>,
    #[serde(borrow, default)]
    thinking: Cow<'a, str>,
    #[serde(borrow, default)]
    signature: Cow<'a, str>,
    #[serde(borrow, default)]
    partial_json: Cow<'a, str>,
}

fn str_field<'a>(value: &'a Value, name: &str) -> &'a str {
    value.get(name).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolSpec;
    use serde_json::json;

    fn body(request: &Request<'_>) -> Value {
        serde_json::from_slice(&request_body(request, &mut BodyCache::default())).unwrap()
    }

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
        let wire = serde_json::to_value(wire_messages(&messages, 0, 0).0).unwrap();
        let wire = wire.as_array().unwrap();
        assert_eq!(wire.len(), 3);
        assert_eq!(wire[2]["role"], "user");
        assert_eq!(wire[2]["content"][0]["type"], "tool_result");
        assert_eq!(wire[2]["content"][1]["text"], "also this");
        assert_eq!(wire[2]["content"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn thinking_raises_max_tokens() {
        let messages = [Message::user("hi")];
        let mut request = Request {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
            max_tokens: 1000,
            reasoning: Some(Reasoning::Medium),
            cache: crate::provider::config::CacheTtl::Off,
            cache_key: None,
            drop_thinking_before: 0,
            history: None,
        };
        let sent = body(&request);
        assert_eq!(sent["max_tokens"], 8192 + 4096);
        assert_eq!(
            sent["thinking"],
            json!({"type": "enabled", "budget_tokens": 8192})
        );
        assert!(sent.get("system").is_none());
        assert!(sent.get("tools").is_none());
        request.max_tokens = 64000;
        assert_eq!(body(&request)["max_tokens"], 64000);
    }

    fn cached(messages: &[Message], tools: &[ToolSpec], cache: CacheTtl) -> Value {
        body(&Request {
            model: "claude-sonnet-4-5",
            system: "be brief",
            messages,
            tools,
            max_tokens: 100,
            reasoning: None,
            cache,
            cache_key: None,
            drop_thinking_before: 0,
            history: None,
        })
    }

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "A tool.".into(),
            schema: json!({"type": "object"}).into(),
            read_only: true,
        }
    }

    /// Where the marks are, without what they say.
    fn marks_of(body: &Value) -> Vec<String> {
        zot_testkit::anthropic::cache_marks(body)
            .into_iter()
            .map(|m| m.split(' ').next().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn the_stable_prefix_and_the_newest_message_are_marked() {
        let tools = [tool("read"), tool("ext_tool")];
        let messages = [
            Message::user("one"),
            msg(
                Role::Assistant,
                vec![
                    Block::Text { text: "a".into() },
                    Block::Thinking {
                        thinking: "trailing thought".into(),
                        signature: Some("s".into()),
                    },
                ],
            ),
        ];
        let sent = cached(&messages, &tools, CacheTtl::FiveMinutes);
        assert_eq!(
            marks_of(&sent),
            ["/messages/1/content/0", "/system/0", "/tools/1"]
        );
        assert_eq!(
            sent["tools"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(sent["system"][0]["text"], "be brief");
        let hour = cached(&messages, &tools, CacheTtl::OneHour);
        assert_eq!(
            hour["system"][0]["cache_control"],
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        let off = cached(&messages, &tools, CacheTtl::Off);
        assert!(marks_of(&off).is_empty());
        assert_eq!(off["system"], "be brief");
    }

    #[test]
    fn a_long_tool_turn_gets_a_mark_where_the_last_request_had_one() {
        let calls: Vec<Block> = (0..12)
            .map(|i| Block::ToolCall {
                id: format!("t{i}"),
                name: "read".into(),
                args: json!({}),
            })
            .collect();
        let results: Vec<Block> = (0..12)
            .map(|i| Block::ToolResult {
                call_id: format!("t{i}"),
                is_error: false,
                content: vec![Block::Text { text: "x".into() }],
            })
            .collect();
        let mut messages = vec![
            Message::user("go"),
            msg(Role::Assistant, vec![Block::Text { text: "ok".into() }]),
            Message::user("now read them all"),
            msg(Role::Assistant, calls),
            msg(Role::Tool, results),
        ];
        let sent = cached(&messages, &[tool("read")], CacheTtl::FiveMinutes);
        assert_eq!(
            marks_of(&sent),
            [
                "/messages/2/content/0",
                "/messages/4/content/11",
                "/system/0",
                "/tools/0"
            ]
        );
        // A short turn needs no second mark.
        messages.truncate(3);
        let short = cached(&messages, &[tool("read")], CacheTtl::FiveMinutes);
        assert_eq!(marks_of(&short).len(), 3);
    }

    #[test]
    fn stale_thinking_stays_out() {
        let messages = [
            Message::user("one"),
            msg(
                Role::Assistant,
                vec![
                    Block::Thinking {
                        thinking: "old".into(),
                        signature: Some("s1".into()),
                    },
                    Block::RedactedThinking { data: "R".into() },
                    Block::Text { text: "a".into() },
                ],
            ),
            Message::user("two"),
        ];
        let wire = serde_json::to_value(wire_messages(&messages, 0, 2).0).unwrap();
        assert_eq!(wire[1]["content"], json!([{"type": "text", "text": "a"}]));
        let wire = serde_json::to_value(wire_messages(&messages, 0, 0).0).unwrap();
        assert_eq!(
            wire[1]["content"][1],
            json!({"type": "redacted_thinking", "data": "R"})
        );
    }

    #[test]
    fn adaptive_models_get_an_effort_not_a_budget() {
        let messages = [Message::user("hi")];
        let request = Request {
            model: "claude-opus-5-5",
            system: "",
            messages: &messages,
            tools: &[],
            max_tokens: 32_000,
            reasoning: Some(Reasoning::High),
            cache: crate::provider::config::CacheTtl::Off,
            cache_key: None,
            drop_thinking_before: 0,
            history: None,
        };
        let sent = body(&request);
        assert_eq!(sent["thinking"], json!({"type": "adaptive"}));
        assert_eq!(sent["output_config"], json!({"effort": "high"}));
        assert_eq!(sent["max_tokens"], 32_000);
        let quiet = body(&Request {
            reasoning: None,
            ..request
        });
        assert!(quiet.get("thinking").is_none() && quiet.get("output_config").is_none());
    }

    #[test]
    fn the_body_carries_every_block_in_the_wire_shape() {
        let image = || Block::Image {
            mime_type: "image/png".into(),
            data: "iVBO".into(),
        };
        let messages = [
            msg(
                Role::User,
                vec![
                    Block::Text {
                        text: "look".into(),
                    },
                    image(),
                ],
            ),
            msg(
                Role::Assistant,
                vec![
                    Block::Thinking {
                        thinking: "unsigned".into(),
                        signature: None,
                    },
                    Block::Thinking {
                        thinking: "hmm".into(),
                        signature: Some("sig".into()),
                    },
                    Block::ToolCall {
                        id: "t1".into(),
                        name: "read".into(),
                        args: json!({"path": "a"}),
                    },
                    Block::ToolCall {
                        id: "t2".into(),
                        name: "read".into(),
                        args: json!("not an object"),
                    },
                ],
            ),
            msg(
                Role::Tool,
                vec![
                    Block::ToolResult {
                        call_id: "t1".into(),
                        is_error: false,
                        content: vec![Block::Text { text: "x".into() }, image()],
                    },
                    Block::ToolResult {
                        call_id: "t2".into(),
                        is_error: true,
                        content: vec![],
                    },
                ],
            ),
        ];
        let tools = [ToolSpec {
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
            reasoning: None,
            cache: crate::provider::config::CacheTtl::Off,
            cache_key: None,
            drop_thinking_before: 0,
            history: None,
        };
        let png = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}});
        assert_eq!(
            body(&request),
            json!({
                "model": "m",
                "max_tokens": 100,
                "system": "be brief",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "look"}, png]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
                        {"type": "tool_use", "id": "t2", "name": "read", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "x"}, png], "is_error": false},
                        {"type": "tool_result", "tool_use_id": "t2", "content": [], "is_error": true},
                    ]},
                ],
                "tools": [{"name": "read", "description": "Read.", "input_schema": {"type": "object"}}],
                "stream": true,
            })
        );
    }
}
