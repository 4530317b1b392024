//! One model call as every wire format sees it: the request, the events it
//! streams, the completion it ends with and how it can fail. The formats
//! (`anthropic`, `openai`, `responses`) build on these; `Provider` above them
//! picks one.

use serde_json::Value;

use super::config::{CacheTtl, Reasoning};
use super::usage::Usage;
use crate::message::Message;
use crate::tool::ToolSpec;
/// Why the model stopped (a front-end protocol type).
pub use zot_protocol::events::StopReason;

/// One model call. It borrows the conversation: a turn serialises the
/// agent's messages into the body without copying them first.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub max_tokens: u32,
    pub reasoning: Option<Reasoning>,
    /// Prompt caching: Anthropic `cache_control` marks with this lifetime.
    pub cache: CacheTtl,
    /// Groups requests that share a prefix (the session id): OpenAI's
    /// `prompt_cache_key`, sent only to OpenAI's own endpoint.
    pub cache_key: Option<&'a str>,
    /// Thinking blocks of `messages[..drop_thinking_before]` stay out of the
    /// request: they were made under another system prompt or tool list,
    /// and the API refuses thinking bound to a prefix that changed.
    pub drop_thinking_before: usize,
    /// The identity of `messages` as an append-only history
    /// ([`Conversation::id`](crate::conversation::Conversation::id)): the
    /// provider then reuses what it serialised of the same history before.
    /// `None` for a one-off request (a summary, a side question).
    pub history: Option<u64>,
}

/// What a provider reports while it streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ThinkingDelta(String),
    ToolUseStart {
        id: String,
        name: String,
    },
    /// A fragment of the tool call's JSON arguments.
    ToolUseArgs {
        id: String,
        delta: String,
    },
    ToolUseEnd {
        id: String,
    },
}

/// A finished model call.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The assistant message (text, thinking and tool call blocks).
    pub message: Message,
    pub stop: StopReason,
    pub usage: Usage,
    /// Why it stopped, in the provider's words, when it said more than the
    /// reason (a refusal's explanation).
    pub detail: Option<String>,
    /// How the call ended beyond `stop`.
    pub end: End,
}

/// What the agent must do about how a call ended, beyond its stop reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum End {
    #[default]
    Normal,
    /// The provider paused a long turn (Anthropic `pause_turn`): send the
    /// message back as it is and the model goes on.
    Paused,
    /// The conversation filled the context window (Anthropic
    /// `model_context_window_exceeded`): the answer is cut.
    ContextFull,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The server answered with an error status (after any retries).
    #[error("{provider}: HTTP {status}: {message}")]
    Status {
        provider: &'static str,
        status: u16,
        message: String,
    },
    #[error("{provider}: cannot connect to {url}: {message}")]
    Connect {
        provider: &'static str,
        url: String,
        message: String,
    },
    /// A broken or malformed stream after the response started.
    #[error("{provider}: {message}")]
    Stream {
        provider: &'static str,
        message: String,
    },
    /// An `error` event in a streamed response (an `overloaded_error`, say):
    /// the server gave up on the answer, which a new request may get.
    #[error("{provider}: {message}")]
    ErrorEvent {
        provider: &'static str,
        kind: String,
        message: String,
    },
    #[error("cancelled")]
    Cancelled,
    /// The response grew past [`MAX_RESPONSE_BYTES`]; the agent keeps the
    /// text shown up to there.
    #[error("the model's response is larger than {} MiB; the rest of it was not read", MAX_RESPONSE_BYTES >> 20)]
    TooLarge,
}

impl ProviderError {
    /// Whether the request was too long for the model's context window
    /// (Anthropic "prompt is too long", OpenAI `context_length_exceeded`):
    /// compacting the conversation may make it fit.
    pub fn is_context_overflow(&self) -> bool {
        let Self::Status {
            status: 400 | 413,
            message,
            ..
        } = self
        else {
            return false;
        };
        let message = message.to_ascii_lowercase();
        [
            "prompt is too long",
            "context_length_exceeded",
            "maximum context length",
            "context window",
            "too many tokens",
        ]
        .iter()
        .any(|needle| message.contains(needle))
    }
}

/// Most bytes of one model response (its text, thinking and tool-call
/// arguments together). Each stream event is capped already
/// ([`MAX_SSE_EVENT_BYTES`]), but not their sum: six 50 MB deltas took
/// 1.52 GB and wrote a 300 MB session line. 64 MiB is hundreds of
/// times any real answer (a 128k-token answer is about half a MiB).
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Parses the JSON arguments a model streamed; empty means `{}`.
pub fn parse_args(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}
