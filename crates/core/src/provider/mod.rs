//! Model providers: one request in, a stream of events and a final
//! assistant message out. `anthropic` speaks the Messages API, `openai` the
//! chat completions API (OpenAI, ollama, any compatible server), `responses`
//! OpenAI's Responses API.

pub mod anthropic;
mod body;
pub mod openai;
pub mod responses;
mod retry;

use std::sync::{Mutex, OnceLock, PoisonError};

use futures_util::Stream;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use zot_http::sse;

use crate::message::Message;
pub use crate::models::Wire;
use crate::tool::ToolSpec;
use body::BodyCache;

/// The waits before asking again after a stream failed with an `error`
/// event before showing anything: the same backoff as a 503.
pub use retry::BACKOFF as STREAM_RETRY_BACKOFF;
/// HTTP lives in `zot-http`, which the extension host shares; these are its
/// names as the agent's callers have known them.
pub use zot_http::sse::{MAX_SSE_EVENT_BYTES, events as sse_events};
pub use zot_http::{error_chain, http_client, install_tls_provider, is_loopback};

/// Which wire format, and the defaults that go with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Anthropic,
    OpenAi,
    Ollama,
}

impl ProviderKind {
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "anthropic" => Some(Self::Anthropic),
            "openai" => Some(Self::OpenAi),
            "ollama" => Some(Self::Ollama),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::Ollama => "ollama",
        }
    }

    /// The wire API it speaks unless told otherwise (`--api`): OpenAI's own
    /// endpoint serves its current models through the Responses API (the
    /// codex ones only there); other compatible servers and ollama speak
    /// chat completions.
    pub fn default_wire(self, base_url: &str) -> Wire {
        match self {
            Self::Anthropic => Wire::Messages,
            Self::OpenAi if openai::is_openai(base_url) => Wire::Responses,
            Self::OpenAi | Self::Ollama => Wire::Chat,
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Anthropic => "https://api.anthropic.com",
            Self::OpenAi => "https://api.openai.com",
            Self::Ollama => "http://localhost:11434",
        }
    }
}

/// How hard the model should think (`--reasoning`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasoning {
    Low,
    Medium,
    High,
}

impl Reasoning {
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// How long a prompt cache entry lives (the `cache` setting): Anthropic
/// keeps a marked prefix for 5 minutes (refreshed by every hit) or an hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheTtl {
    Off,
    #[default]
    FiveMinutes,
    OneHour,
}

impl CacheTtl {
    /// `"5m"`, `"1h"` or `"off"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "5m" => Some(Self::FiveMinutes),
            "1h" => Some(Self::OneHour),
            "off" => Some(Self::Off),
            _ => None,
        }
    }
}

/// Where and how to reach a provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// What the user calls it: a built-in kind's name, or a named provider
    /// of the user's config (`openrouter`) whose API is `kind`'s.
    pub name: String,
    pub kind: ProviderKind,
    /// Without a trailing slash.
    pub base_url: String,
    /// Empty for ollama.
    pub api_key: String,
    /// The wire API: `Messages` for Anthropic, `Chat` or `Responses` for
    /// OpenAI-style servers.
    pub wire: Wire,
    /// Extra headers sent with every request (a named provider's `headers`).
    pub headers: Vec<(String, String)>,
}

impl ProviderConfig {
    /// A built-in provider's config: named after its kind, no extra headers.
    pub fn builtin(kind: ProviderKind, base_url: String, api_key: String, wire: Wire) -> Self {
        Self {
            name: kind.name().to_owned(),
            kind,
            base_url,
            api_key,
            wire,
            headers: Vec::new(),
        }
    }
}

/// Extra headers as a client's defaults, marked sensitive (they may carry a
/// key); a name or value HTTP cannot carry is an error naming the header.
pub fn header_map(headers: &[(String, String)]) -> Result<reqwest::header::HeaderMap, String> {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let key = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("\"{name}\" is not a valid header name"))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            format!("header {name}: the value has characters a header cannot carry")
        })?;
        value.set_sensitive(true);
        map.insert(key, value);
    }
    Ok(map)
}

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

/// Why the model stopped (a front-end protocol type).
pub use zot_protocol::events::StopReason;

/// Token counts of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    /// The part of `output` spent reasoning (already counted in `output`).
    pub reasoning: u64,
    pub cache_read: u64,
    /// Tokens written to the cache, of every lifetime.
    pub cache_write: u64,
    /// The part of `cache_write` kept for an hour (priced higher).
    pub cache_write_1h: u64,
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

/// A configured provider client.
#[derive(Debug)]
pub struct Provider {
    config: ProviderConfig,
    /// Made at the first model call (see [`http_client`]): a run that never
    /// calls the model never loads TLS roots.
    http: OnceLock<reqwest::Client>,
    /// The serialised settled head of the conversation last sent.
    bodies: Mutex<BodyCache>,
}

/// A copy starts with an empty body cache: it is likely to serve another
/// conversation (a subagent's, a model switch's).
impl Clone for Provider {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
            http: self.http.clone(),
            bodies: Mutex::default(),
        }
    }
}

impl Provider {
    pub fn new(config: ProviderConfig) -> Self {
        Self {
            config,
            http: OnceLock::new(),
            bodies: Mutex::default(),
        }
    }

    fn http(&self) -> Result<&reqwest::Client, ProviderError> {
        if let Some(client) = self.http.get() {
            return Ok(client);
        }
        let connect_error = |message: String| ProviderError::Connect {
            provider: self.config.kind.name(),
            url: self.config.base_url.clone(),
            message,
        };
        let client = http_client(&self.config.base_url)
            .default_headers(header_map(&self.config.headers).map_err(connect_error)?)
            .build()
            .map_err(|e| connect_error(error_chain(&e)))?;
        Ok(self.http.get_or_init(|| client))
    }

    pub fn kind(&self) -> ProviderKind {
        self.config.kind
    }

    /// The provider's name as the user calls it (`anthropic`, `openrouter`).
    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The wire API a call for `model` goes through: the configured one,
    /// unless the model table says the model is served only by the other
    /// API an OpenAI-style server speaks (the `*-codex` models exist only on
    /// the Responses API, so asking for them by chat completions fails
    /// whatever the server). A named provider's own `api` always wins: the
    /// user set it for that server.
    pub fn wire_for(&self, model: &str) -> Wire {
        let wire = self.config.wire;
        if wire == Wire::Messages || self.config.name != self.config.kind.name() {
            return wire;
        }
        let served = &crate::models::of(&self.config, model).wire;
        if served.is_empty() || served.contains(&wire) {
            return wire;
        }
        served
            .iter()
            .copied()
            .find(|w| *w != Wire::Messages)
            .unwrap_or(wire)
    }

    /// Runs one model call, sending stream events to `events` as they arrive.
    pub async fn complete(
        &self,
        request: &Request<'_>,
        events: &mpsc::UnboundedSender<StreamEvent>,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let call = async {
            let http = self.http()?;
            let wire = self.wire_for(request.model);
            let body = self.body(request, wire);
            match wire {
                Wire::Messages => anthropic::complete(http, &self.config, body, events).await,
                Wire::Chat => openai::complete(http, &self.config, body, events).await,
                Wire::Responses => responses::complete(http, &self.config, body, events).await,
            }
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ProviderError::Cancelled),
            result = call => result,
        }
    }
}

impl Provider {
    /// The request's JSON body in `wire`'s format.
    fn body(&self, request: &Request<'_>, wire: Wire) -> bytes::Bytes {
        // A panic while the cache was held leaves nothing half-kept that
        // matters: `resume` checks the key and drops what does not match.
        let mut cache = self.bodies.lock().unwrap_or_else(PoisonError::into_inner);
        let openai = openai::is_openai(&self.config.base_url);
        match wire {
            Wire::Messages => anthropic::request_body(request, &mut cache),
            Wire::Chat => openai::request_body(request, openai, &mut cache),
            Wire::Responses => responses::request_body(request, openai, &mut cache),
        }
    }
}

/// Reads a streamed response body (its bytes, chunked any way) in `kind`'s
/// wire format into the completion, sending stream events as they arrive.
/// [`Provider::complete`] reads the HTTP body with it; it takes any byte
/// stream so the reader can be exercised on its own (property tests).
/// Malformed input is a [`ProviderError::Stream`], never a panic.
pub async fn read_stream<S, B, E>(
    kind: ProviderKind,
    body: S,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::error::Error + 'static,
{
    read_wire(kind.name(), kind.default_wire(""), body, events).await
}

/// [`read_stream`] for a wire API: `provider` names the provider in errors.
pub async fn read_wire<S, B, E>(
    provider: &'static str,
    wire: Wire,
    body: S,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::error::Error + 'static,
{
    match wire {
        Wire::Messages => anthropic::read(body, events).await,
        Wire::Chat => openai::read(provider, body, events).await,
        Wire::Responses => responses::read(provider, body, events).await,
    }
}

/// Parses the JSON arguments a model streamed; empty means `{}`.
pub fn parse_args(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}
