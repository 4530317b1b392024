//! Remote MCP servers: the Streamable HTTP client (`rmcp`'s, over the
//! workspace's reqwest) with the configured headers and bearer token, and
//! the place the legacy HTTP+SSE transport plugs in.

use std::collections::HashMap;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{AuthClient, AuthorizationManager};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::adapter::Mcp;
use super::config::{McpServer, Remote};
use crate::adapter::{HandshakeError, Link};
use crate::model::Registration;

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
    .map_err(|e| HandshakeError::Mcp(e.to_string()))?;
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
