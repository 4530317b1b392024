//! Model providers: one request in, a stream of events and a final
//! assistant message out. `anthropic` speaks the Messages API, `openai` the
//! chat completions API (OpenAI, ollama, any compatible server), `responses`
//! OpenAI's Responses API.

pub mod anthropic;
mod body;
#[cfg(test)]
mod body_tests;
mod call;
pub(crate) mod config;
pub mod openai;
pub mod responses;
mod retry;
pub(crate) mod usage;

use std::sync::{Mutex, OnceLock, PoisonError};

use futures_util::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use body::BodyCache;
pub use call::{
    Completion, End, MAX_RESPONSE_BYTES, ProviderError, Request, StopReason, StreamEvent,
    parse_args,
};
pub use config::{CacheTtl, ProviderConfig, ProviderKind, Reasoning, Wire, header_map};
pub use usage::Usage;

/// The waits before asking again after a stream failed with an `error`
/// event before showing anything: the same backoff as a 503.
pub use retry::BACKOFF as STREAM_RETRY_BACKOFF;
/// HTTP lives in `zot-http`, which the extension host shares; these are its
/// names as the agent's callers have known them.
pub use zot_http::sse::{MAX_SSE_EVENT_BYTES, events as sse_events};
pub use zot_http::{error_chain, http_client, install_tls_provider, is_loopback};

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
            .read_timeout(zot_http::idle_timeout().map_err(connect_error)?)
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
        let openai = config::is_openai(&self.config.base_url);
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
