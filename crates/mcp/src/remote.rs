//! Remote MCP servers: the Streamable HTTP client (`rmcp`'s, over the
//! workspace's reqwest) with the configured headers and bearer token, and
//! the place the legacy HTTP+SSE transport plugs in.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthorizationManager;
use rmcp::transport::common::client_side_sse::{BoxedSseResponse, SseRetryPolicy};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};

use crate::config::{McpServer, Remote};
use crate::legacy_sse::{LegacySseError, LegacySseTransport};
use crate::shared::DropSignal;
use zot_extensions::adapter::HandshakeError;

/// The first wait before resuming a broken event stream (when the server set
/// no `retry` of its own): half a second, as for remote zot extensions
/// ([`zot_extensions::remote::BACKOFF_START`]), so a server restart is bridged at once.
pub(crate) const STREAM_RETRY_START: Duration = zot_extensions::remote::BACKOFF_START;

/// The longest wait between two tries to resume an event stream, so that a
/// long outage never leaves zot sleeping for minutes (rmcp's own default
/// doubles without bound).
pub(crate) const STREAM_RETRY_MAX: Duration = Duration::from_secs(4);

/// Tries to resume a broken event stream before the server counts as
/// dropped: 0.5 + 1 + 2 + 4 s is long enough to ride out a server restart
/// and short enough to report a dead one within seconds. After that the
/// session is ended and the host reconnects it with its own backoff.
pub(crate) const STREAM_RETRIES: usize = 4;

/// The event-stream retry policy of a Streamable HTTP session: capped
/// doubling, then `dropped` (which ends the session) instead of retrying.
#[derive(Debug)]
struct StreamRetry {
    dropped: DropSignal,
}

impl SseRetryPolicy for StreamRetry {
    fn retry(&self, current_times: usize) -> Option<Duration> {
        if current_times >= STREAM_RETRIES {
            self.dropped.fire(&format!(
                "its event stream could not be resumed after {STREAM_RETRIES} tries"
            ));
            return None;
        }
        // `current_times` counts failed tries (0 for a stream that ended cleanly).
        let exponent = u32::try_from(current_times).unwrap_or(u32::MAX).min(16);
        Some(
            STREAM_RETRY_START
                .saturating_mul(1 << exponent)
                .min(STREAM_RETRY_MAX),
        )
    }
}

/// How many ended event streams [`RetryDelay`] remembers, newest first. A
/// stream is resumed right after it ends, so only the last few matter; the
/// bound keeps a long session (each call's stream ends) from growing it.
const REMEMBERED_STREAM_ENDS: usize = 32;

/// How an event stream ended, kept under the id of its last event (the
/// `Last-Event-ID` a resume of it carries).
#[derive(Debug, Clone, Copy)]
struct StreamEnd {
    /// Broken off (the connection failed) rather than closed by the server.
    broken: bool,
    /// The server's last `retry` on the stream (or on the one it resumed).
    retry: Option<Duration>,
}

/// Ended streams by last event id, at most [`REMEMBERED_STREAM_ENDS`].
#[derive(Debug, Default)]
struct StreamEnds(Mutex<VecDeque<(String, StreamEnd)>>);

impl StreamEnds {
    fn record(&self, last_id: String, end: StreamEnd) {
        let mut ends = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        ends.retain(|(id, _)| *id != last_id);
        ends.push_front((last_id, end));
        ends.truncate(REMEMBERED_STREAM_ENDS);
    }

    fn take(&self, last_id: &str) -> Option<StreamEnd> {
        let mut ends = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let at = ends.iter().position(|(id, _)| id == last_id)?;
        ends.remove(at).map(|(_, end)| end)
    }
}

/// The HTTP client of a Streamable HTTP session, making every resume wait
/// for the server's `retry` delay. rmcp waits for it when the server closes
/// a stream, but resumes a stream whose connection broke at once; the MCP
/// spec (and SSE's reconnection time) asks for the delay before any
/// reconnection, so this client holds back the resume of a broken stream
/// until the `retry` that stream last carried has passed. Every other
/// request goes straight to `inner`.
#[derive(Debug, Clone)]
pub(crate) struct RetryDelay<C> {
    inner: C,
    ends: Arc<StreamEnds>,
}

impl<C> RetryDelay<C> {
    pub(crate) fn new(inner: C) -> Self {
        Self {
            inner,
            ends: Arc::default(),
        }
    }

    /// `stream`, noting how it ends; `resumed` is the last event id it goes
    /// on from and how the stream before it ended, for a resume.
    fn watch(
        &self,
        stream: BoxedSseResponse,
        resumed: Option<(String, Option<StreamEnd>)>,
    ) -> BoxedSseResponse {
        let (last_id, retry) = match resumed {
            Some((id, end)) => (Some(id), end.and_then(|e| e.retry)),
            None => (None, None),
        };
        WatchedStream {
            inner: stream,
            ends: Arc::clone(&self.ends),
            last_id,
            retry,
            ended: false,
        }
        .boxed()
    }

    fn watch_post(&self, response: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
        match response {
            StreamableHttpPostResponse::Sse(stream, session) => {
                StreamableHttpPostResponse::Sse(self.watch(stream, None), session)
            }
            other => other,
        }
    }

    /// Before resuming after `last_id`: waits out the server's `retry` when
    /// that stream broke (rmcp has waited already when it was closed).
    async fn before_resume(&self, last_id: Option<&str>) -> Option<(String, Option<StreamEnd>)> {
        let last_id = last_id?;
        let end = self.ends.take(last_id);
        if let Some(StreamEnd {
            broken: true,
            retry: Some(delay),
        }) = end
        {
            tokio::time::sleep(delay).await;
        }
        Some((last_id.to_owned(), end))
    }
}

/// An event stream passed through unchanged, its last event id and `retry`
/// noted, and how it ended recorded in [`StreamEnds`].
struct WatchedStream {
    inner: BoxedSseResponse,
    ends: Arc<StreamEnds>,
    last_id: Option<String>,
    retry: Option<Duration>,
    ended: bool,
}

impl WatchedStream {
    fn end(&mut self, broken: bool) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        if let Some(id) = self.last_id.take() {
            let retry = self.retry;
            self.ends.record(id, StreamEnd { broken, retry });
        }
    }
}

impl Stream for WatchedStream {
    type Item = <BoxedSseResponse as Stream>::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let item = std::task::ready!(this.inner.poll_next_unpin(cx));
        match &item {
            Some(Ok(event)) => {
                if let Some(ms) = event.retry {
                    this.retry = Some(Duration::from_millis(ms));
                }
                if let Some(id) = &event.id {
                    this.last_id = Some(id.clone());
                }
            }
            Some(Err(_)) => this.end(true),
            None => this.end(false),
        }
        Poll::Ready(item)
    }
}

impl<C> StreamableHttpClient for RetryDelay<C>
where
    C: StreamableHttpClient + Sync,
{
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let response = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await?;
        Ok(self.watch_post(response))
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let response = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.watch_post(response))
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let response = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await?;
        Ok(self.watch_post(response))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, StreamableHttpError<Self::Error>> {
        let resumed = self.before_resume(last_event_id.as_deref()).await;
        let stream = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await?;
        Ok(self.watch(stream, resumed))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, StreamableHttpError<Self::Error>> {
        let resumed = self.before_resume(last_event_id.as_deref()).await;
        let stream = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.watch(stream, resumed))
    }
}

/// The Streamable HTTP settings for `remote` and the HTTP client to send
/// them with: its headers on every request, and `Authorization: Bearer
/// $<bearer_token_env_var>` when that is set (the adapter wraps the client
/// in `rmcp`'s `AuthClient` when `zot mcp login` stored a token). `rmcp`
/// keeps the `Mcp-Session-Id`, resumes SSE streams with `Last-Event-ID`
/// (after the server's `retry` delay: [`RetryDelay`]), and sends `DELETE`
/// when the session is closed; a stream that cannot be resumed fires `dropped`.
pub(crate) fn streamable_http(
    server: &McpServer,
    remote: &Remote,
    dropped: DropSignal,
) -> Result<(StreamableHttpClientTransportConfig, reqwest::Client), HandshakeError> {
    let headers: HashMap<_, _> = crate::legacy_sse::header_map(&server.name, &remote.headers, None)
        .map_err(|e| HandshakeError::Session(e.to_string()))?
        .into_iter()
        .filter_map(|(name, value)| Some((name?, value)))
        .collect();
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(remote.url.as_str()).custom_headers(headers);
    // rmcp's default retries a broken event stream forever, doubling without
    // a cap; zot's gives up after a few tries and reports the server dropped.
    config.retry_config = Arc::new(StreamRetry { dropped });
    if let Some(token) = bearer_token(server, remote).map_err(HandshakeError::Session)? {
        config = config.auth_header(token);
    }
    let client = zot_http::http_client(remote.url.as_str())
        .build()
        .map_err(|e| HandshakeError::Session(format!("cannot build the HTTP client: {e}")))?;
    Ok((config, client))
}

/// `"type": "sse"`: the legacy HTTP+SSE transport (MCP 2024-11-05), which
/// `rmcp` 3 no longer ships a client for: `legacy_sse.rs` is one, which the
/// adapter opens like any other transport.
pub(crate) async fn legacy_sse(
    server: &McpServer,
    remote: &Remote,
    auth: Option<AuthorizationManager>,
) -> Result<LegacySseTransport, HandshakeError> {
    let token = bearer_token(server, remote).map_err(HandshakeError::Session)?;
    let headers = crate::legacy_sse::header_map(&server.name, &remote.headers, token.as_deref())
        .map_err(|e| HandshakeError::Session(e.to_string()))?;
    LegacySseTransport::connect_authorized(
        &server.name,
        &remote.url,
        headers,
        auth.map(std::sync::Arc::new),
    )
    .await
    .map_err(|e| match e {
        LegacySseError::Unauthorized { .. } | LegacySseError::LoginRefused { .. } => {
            HandshakeError::LoginNeeded(e.to_string())
        }
        other => HandshakeError::Session(other.to_string()),
    })
}

/// The token `bearer_token_env_var` names, read when connecting.
fn bearer_token(server: &McpServer, remote: &Remote) -> Result<Option<String>, String> {
    let Some(var) = &remote.bearer_token_env_var else {
        return Ok(None);
    };
    std::env::var(var)
        .ok()
        .filter(|t| !t.is_empty())
        .map(Some)
        .ok_or_else(|| {
            format!(
                "bearer_token_env_var names {var}, which is not set (server {})",
                server.name
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(broken: bool) -> StreamEnd {
        StreamEnd {
            broken,
            retry: Some(Duration::from_millis(1500)),
        }
    }

    #[test]
    fn stream_ends_are_taken_once_and_only_the_newest_are_kept() {
        let ends = StreamEnds::default();
        for n in 0..REMEMBERED_STREAM_ENDS + 8 {
            ends.record(format!("s{n}-1"), end(n % 2 == 0));
        }
        // The oldest were forgotten; the newest are there, once each.
        assert!(ends.take("s0-1").is_none());
        assert!(ends.take("s7-1").is_none());
        let newest = format!("s{}-1", REMEMBERED_STREAM_ENDS + 7);
        assert!(ends.take(&newest).is_some_and(|e| !e.broken));
        assert!(ends.take(&newest).is_none());
        assert!(ends.take("s8-1").is_some_and(|e| e.broken));
        // Ending again under the same id replaces the old end.
        ends.record("again".to_owned(), end(true));
        ends.record("again".to_owned(), end(false));
        assert!(ends.take("again").is_some_and(|e| !e.broken));
        assert!(ends.take("again").is_none());
    }
}
