//! Remote MCP servers: the Streamable HTTP client (`rmcp`'s, over the
//! workspace's reqwest) with the configured headers and bearer token, and
//! the place the legacy HTTP+SSE transport plugs in.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{AuthClient, AuthorizationManager};
use rmcp::transport::common::client_side_sse::SseRetryPolicy;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::adapter::Mcp;
use super::config::{McpServer, Remote};
use super::legacy_sse::LegacySseError;
use crate::adapter::{HandshakeError, Link};
use crate::model::Registration;

/// The first wait before resuming a broken event stream (when the server set
/// no `retry` of its own): half a second, as for remote zot extensions
/// ([`crate::remote::BACKOFF_START`]), so a server restart is bridged at once.
pub(crate) const STREAM_RETRY_START: Duration = crate::remote::BACKOFF_START;

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
    dropped: super::adapter::DropSignal,
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

/// The Streamable HTTP transport for `remote`: its headers on every request,
/// and `Authorization: Bearer $<bearer_token_env_var>` when that is set, or
/// the (refreshed) token of a `zot mcp login` when there is one.
/// `rmcp` keeps the `Mcp-Session-Id`, resumes SSE streams with
/// `Last-Event-ID` after the server's `retry` delay, and sends `DELETE` when
/// the session is closed.
pub(crate) async fn open_streamable_http(
    mcp: &Mcp,
    server: &McpServer,
    remote: &Remote,
    auth: Option<AuthorizationManager>,
    link: &dyn Link,
) -> Result<Vec<Registration>, HandshakeError> {
    let headers: HashMap<_, _> = super::legacy_sse::header_map(&server.name, &remote.headers, None)
        .map_err(|e| HandshakeError::Mcp(e.to_string()))?
        .into_iter()
        .filter_map(|(name, value)| Some((name?, value)))
        .collect();
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(remote.url.as_str()).custom_headers(headers);
    // rmcp's default retries a broken event stream forever, doubling without
    // a cap; zot's gives up after a few tries and reports the server dropped.
    config.retry_config = Arc::new(StreamRetry {
        dropped: mcp.on_drop(),
    });
    if let Some(token) = bearer_token(server, remote).map_err(HandshakeError::Mcp)? {
        config = config.auth_header(token);
    }
    let client = zot_core::provider::http_client(remote.url.as_str())
        .build()
        .map_err(|e| HandshakeError::Mcp(format!("cannot build the HTTP client: {e}")))?;
    match auth {
        Some(manager) => {
            let client = AuthClient::new(client, manager);
            mcp.open(
                StreamableHttpClientTransport::with_client(client, config),
                link,
            )
            .await
        }
        None => {
            mcp.open(
                StreamableHttpClientTransport::with_client(client, config),
                link,
            )
            .await
        }
    }
}

/// `"type": "sse"`: the legacy HTTP+SSE transport (MCP 2024-11-05), which
/// `rmcp` 3 no longer ships a client for: `legacy_sse.rs` is one, handed to
/// [`Mcp::open`] like any other transport.
pub(crate) async fn open_sse(
    mcp: &Mcp,
    server: &McpServer,
    remote: &Remote,
    auth: Option<AuthorizationManager>,
    link: &dyn Link,
) -> Result<Vec<Registration>, HandshakeError> {
    let token = bearer_token(server, remote).map_err(HandshakeError::Mcp)?;
    let headers = super::legacy_sse::header_map(&server.name, &remote.headers, token.as_deref())
        .map_err(|e| HandshakeError::Mcp(e.to_string()))?;
    let transport = super::legacy_sse::LegacySseTransport::connect_authorized(
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
        other => HandshakeError::Mcp(other.to_string()),
    })?;
    mcp.open(transport, link).await
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
