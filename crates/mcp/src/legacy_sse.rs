//! The legacy HTTP+SSE transport of MCP 2024-11-05 (`"type": "sse"`), as an
//! `rmcp` client transport: `rmcp` 3 dropped its client, and many deployed
//! servers speak nothing else. One GET opens an event stream whose first
//! `endpoint` event names the URL to POST each JSON-RPC message to; every
//! `message` event on the stream is one message from the server.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::auth::AuthorizationManager;
use tokio::sync::mpsc;
use zot_http::error_chain as chain;

/// How long the server may take to send the `endpoint` event once asked
/// for the stream: it is the first thing a 2024-11-05 server sends, so this
/// only stops a wrong URL (a page that never ends) from hanging a caller
/// that set no deadline of its own. Same as the default `startup_timeout_sec`.
pub const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one POST of a message may take. The server answers it at once
/// (202 Accepted) and sends the reply on the stream, so a slow tool never
/// holds a POST open; this bounds a server that stopped answering.
pub const POST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting to the server may take before the GET or a POST fails.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Messages read from the stream but not yet taken by `rmcp`: past this the
/// reader waits, so a flood from the server holds memory to this many.
const INCOMING_QUEUE: usize = 64;

/// How much of an error response body is quoted in the error.
const ERROR_BODY_CHARS: usize = 300;

/// Why the transport could not connect or send.
#[derive(Debug, thiserror::Error)]
pub enum LegacySseError {
    #[error("mcp:{server}: {url}: {message}")]
    Request {
        server: String,
        url: String,
        message: String,
    },
    #[error("mcp:{server}: {url} answered {status}{detail}")]
    Status {
        server: String,
        url: String,
        status: StatusCode,
        detail: String,
    },
    #[error(
        "mcp:{server}: {url} answered 401 Unauthorized: the server needs a login; run `zot mcp login {server}`"
    )]
    Unauthorized { server: String, url: String },
    #[error(
        "mcp:{server}: {url} answered 401 Unauthorized to the stored login; run `zot mcp login {server}` again"
    )]
    LoginRefused { server: String, url: String },
    #[error("{0}")]
    Login(String),
    #[error(
        "mcp:{server}: {url} is not an SSE endpoint (Content-Type {content_type:?}); if the server speaks Streamable HTTP, set \"type\": \"http\""
    )]
    NotEventStream {
        server: String,
        url: String,
        content_type: String,
    },
    #[error("mcp:{server}: {url}: {message}")]
    Endpoint {
        server: String,
        url: String,
        message: String,
    },
    #[error("mcp:{server}: a header is invalid: {message}")]
    Header { server: String, message: String },
}

/// What every request of one connection shares.
struct Shared {
    server: String,
    client: reqwest::Client,
    /// The URL the stream was opened at, for messages.
    stream_url: Url,
    /// Where messages are POSTed, from the `endpoint` event.
    endpoint: Url,
    /// Sent with every request: the configured headers and the bearer token.
    headers: HeaderMap,
    /// A `zot mcp login`: its (refreshed) access token goes with every request.
    auth: Option<Arc<AuthorizationManager>>,
}

/// A connected legacy SSE session. Dropping it (or `close`) stops reading
/// the stream, which closes the session on the server.
pub struct LegacySseTransport {
    shared: Arc<Shared>,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for LegacySseTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySseTransport")
            .field("server", &self.shared.server)
            .field("endpoint", &shown(&self.shared.endpoint))
            .field("logged_in", &self.shared.auth.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for LegacySseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// `(name, value)` pairs as a header map; `bearer`, when given, becomes
/// `Authorization: Bearer <token>`. The values are never part of an error.
pub fn header_map(
    server: &str,
    headers: &[(String, String)],
    bearer: Option<&str>,
) -> Result<HeaderMap, LegacySseError> {
    let invalid = |message: String| LegacySseError::Header {
        server: server.to_owned(),
        message,
    };
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let key = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("{name:?} is not a header name")))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| invalid(format!("the value of {name} has characters HTTP forbids")))?;
        value.set_sensitive(true);
        map.append(key, value);
    }
    if let Some(token) = bearer {
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| invalid("the bearer token has characters HTTP forbids".to_owned()))?;
        value.set_sensitive(true);
        map.insert(reqwest::header::AUTHORIZATION, value);
    }
    Ok(map)
}

impl LegacySseTransport {
    /// Opens the stream at `url` for server `server` and waits (up to
    /// [`ENDPOINT_TIMEOUT`]) for its `endpoint` event. `headers` go with
    /// every request.
    pub async fn connect(
        server: &str,
        url: &str,
        headers: HeaderMap,
    ) -> Result<Self, LegacySseError> {
        Self::connect_authorized(server, url, headers, None).await
    }

    /// [`LegacySseTransport::connect`] with the access token of a `zot mcp
    /// login` (see [`crate::oauth::authorized`]) on every request.
    pub async fn connect_authorized(
        server: &str,
        url: &str,
        headers: HeaderMap,
        auth: Option<Arc<AuthorizationManager>>,
    ) -> Result<Self, LegacySseError> {
        let stream_url = Url::parse(url).map_err(|e| LegacySseError::Request {
            server: server.to_owned(),
            url: url.to_owned(),
            message: e.to_string(),
        })?;
        let request_error = |message: String| LegacySseError::Request {
            server: server.to_owned(),
            url: shown(&stream_url),
            message,
        };
        let client = zot_http::http_client(url)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| request_error(format!("cannot build the HTTP client: {e}")))?;
        let request = client
            .get(stream_url.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream");
        let response = authorize(request, auth.as_deref(), server)
            .await?
            .send()
            .await
            .map_err(|e| request_error(chain(&e.without_url())))?;
        let response = check(server, &stream_url, response, auth.is_some()).await?;
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        if !content_type.starts_with("text/event-stream") {
            return Err(LegacySseError::NotEventStream {
                server: server.to_owned(),
                url: shown(&stream_url),
                content_type,
            });
        }
        let mut events = Box::pin(zot_http::sse::events(response.bytes_stream()));
        let endpoint_error = |message: String| LegacySseError::Endpoint {
            server: server.to_owned(),
            url: shown(&stream_url),
            message,
        };
        let first = async {
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) if event.event == "endpoint" => return Ok(event.data),
                    // Nothing else is expected first; a keep-alive or an
                    // early message would be a server quirk, not an error.
                    Ok(event) => {
                        tracing::debug!(server, event = %event.event, "mcp sse: event before `endpoint` ignored")
                    }
                    Err(message) => return Err(message),
                }
            }
            Err("the stream ended before the server named its message endpoint (an `endpoint` event)".to_owned())
        };
        let endpoint = tokio::time::timeout(ENDPOINT_TIMEOUT, first)
            .await
            .map_err(|_| {
                endpoint_error(format!(
                    "no `endpoint` event within {} s: is this a legacy SSE server?",
                    ENDPOINT_TIMEOUT.as_secs()
                ))
            })?
            .map_err(endpoint_error)?;
        let endpoint = resolve_endpoint(&stream_url, endpoint.trim()).map_err(endpoint_error)?;
        tracing::info!(server, endpoint = %shown(&endpoint), "mcp sse: connected");
        let (tx, incoming) = mpsc::channel(INCOMING_QUEUE);
        let reader = tokio::spawn(read_messages(events, tx, server.to_owned()));
        Ok(Self {
            shared: Arc::new(Shared {
                server: server.to_owned(),
                client,
                stream_url,
                endpoint,
                headers,
                auth,
            }),
            incoming,
            reader,
        })
    }

    /// The URL messages are POSTed to (from the `endpoint` event).
    pub fn endpoint(&self) -> &Url {
        &self.shared.endpoint
    }
}

/// Reads `message` events into `tx` until the stream ends, breaks, or the
/// transport is dropped. A message that is not JSON-RPC is logged and skipped.
async fn read_messages<S>(
    mut events: std::pin::Pin<Box<S>>,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
    server: String,
) where
    S: futures_util::Stream<Item = Result<eventsource_stream::Event, String>>,
{
    while let Some(event) = events.next().await {
        match event {
            Ok(event) if event.event == "message" => {
                match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(
                            server,
                            "mcp sse: a message that is not JSON-RPC was skipped: {e}"
                        );
                    }
                }
            }
            Ok(event) => {
                tracing::debug!(server, event = %event.event, "mcp sse: event ignored");
            }
            Err(message) => {
                tracing::warn!(server, "mcp sse: the stream broke: {message}");
                return;
            }
        }
    }
    tracing::info!(server, "mcp sse: the server closed the stream");
}

/// `data` of the `endpoint` event, resolved against the stream's URL. It must
/// stay on the server's origin: the configured headers (tokens) go with every
/// POST, and a server must not be able to send them elsewhere.
fn resolve_endpoint(stream_url: &Url, data: &str) -> Result<Url, String> {
    if data.is_empty() {
        return Err("the `endpoint` event is empty".to_owned());
    }
    let endpoint = stream_url
        .join(data)
        .map_err(|e| format!("the `endpoint` event {data:?} is not a URL: {e}"))?;
    if endpoint.origin() != stream_url.origin() {
        return Err(format!(
            "the server named {} as its message endpoint, which is not on {}; zot sends the configured headers only to the server's own origin",
            shown(&endpoint),
            stream_url.origin().ascii_serialization()
        ));
    }
    Ok(endpoint)
}

/// `url` as errors and logs show it: without credentials, query or fragment,
/// which may hold tokens.
fn shown(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_password(None);
    let _ = url.set_username("");
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// `response` when its status is a success; else the error saying what it was.
async fn check(
    server: &str,
    url: &Url,
    response: reqwest::Response,
    logged_in: bool,
) -> Result<reqwest::Response, LegacySseError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    if status == StatusCode::UNAUTHORIZED {
        return Err(if logged_in {
            LegacySseError::LoginRefused {
                server: server.to_owned(),
                url: shown(url),
            }
        } else {
            LegacySseError::Unauthorized {
                server: server.to_owned(),
                url: shown(url),
            }
        });
    }
    let body = response.text().await.unwrap_or_default();
    let quoted: String = body.trim().chars().take(ERROR_BODY_CHARS).collect();
    Err(LegacySseError::Status {
        server: server.to_owned(),
        url: shown(url),
        status,
        detail: if quoted.is_empty() {
            String::new()
        } else {
            format!(": {quoted}")
        },
    })
}

/// `request` with the login's access token, fetched (and refreshed when it
/// expired) for each request, so a long session outlives one token.
async fn authorize(
    request: reqwest::RequestBuilder,
    auth: Option<&AuthorizationManager>,
    server: &str,
) -> Result<reqwest::RequestBuilder, LegacySseError> {
    let Some(manager) = auth else {
        return Ok(request);
    };
    let token = crate::oauth::access_token(manager, server)
        .await
        .map_err(|e| LegacySseError::Login(e.to_string()))?;
    Ok(request.bearer_auth(token))
}

impl Shared {
    async fn post(&self, message: ClientJsonRpcMessage) -> Result<(), LegacySseError> {
        let request_error = |message: String| LegacySseError::Request {
            server: self.server.clone(),
            url: shown(&self.endpoint),
            message,
        };
        let body = serde_json::to_vec(&message).map_err(|e| request_error(e.to_string()))?;
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .timeout(POST_TIMEOUT)
            .body(body);
        let response = authorize(request, self.auth.as_deref(), &self.server)
            .await?
            .send()
            .await
            .map_err(|e| request_error(chain(&e.without_url())))?;
        check(&self.server, &self.endpoint, response, self.auth.is_some()).await?;
        Ok(())
    }
}

impl Transport<RoleClient> for LegacySseTransport {
    type Error = LegacySseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let shared = self.shared.clone();
        async move { shared.post(item).await }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        tracing::info!(server = %self.shared.server, url = %shown(&self.shared.stream_url), "mcp sse: closed");
        Ok(())
    }
}
