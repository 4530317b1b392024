//! The WebSocket transport: one frame per text message (no newline
//! framing), the frame size limit as the message limit, binary messages
//! logged and skipped, a ping every `Limits::ping_interval` (20 s) and a
//! disconnect when the previous one got no pong, close code 1000 when the
//! host closes.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::wire::{self, Connected, Task};
use super::{Outbox, Outgoing, ReadError, preview};
use crate::ext_log::ExtLog;
use crate::limits::Limits;
use crate::remote::{self, CONNECT_TIMEOUT, Target};

/// Any byte stream a WebSocket can run over: TCP, or TLS over TCP.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Opens a TCP connection to `target`'s host (and TLS for `wss`), then
/// the WebSocket handshake with the manifest's headers; all within
/// [`CONNECT_TIMEOUT`]. The connection is then pinged every
/// `ping_interval` (`Limits::ping_interval`).
pub(crate) async fn connect(
    name: &str,
    target: &Target,
    log: &Arc<ExtLog>,
    limits: &Limits,
) -> Result<Connected, String> {
    let opened = tokio::time::timeout(CONNECT_TIMEOUT, open(target, limits.max_frame_bytes))
        .await
        .map_err(|_| format!("no connection within {CONNECT_TIMEOUT:?}"))??;
    tracing::info!(extension = %name, "websocket connected");
    let (connected, task) = wire::connection();
    tokio::spawn(run(opened, task, Arc::clone(log), limits.ping_interval));
    Ok(connected)
}

/// A TCP (and TLS) connection to the target's host and port.
pub(crate) async fn dial(target: &Target) -> Result<Box<dyn Io>, String> {
    let host = target.url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let port = target
        .url
        .port_or_known_default()
        .ok_or_else(|| "the url has no port".to_owned())?;
    let tcp = TcpStream::connect((bare, port))
        .await
        .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    if !target.tls {
        return Ok(Box::new(tcp));
    }
    let server = rustls::pki_types::ServerName::try_from(bare.to_owned())
        .map_err(|e| format!("{host} is not a name TLS can verify: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(remote::tls_config()?)
        .connect(server, tcp)
        .await
        .map_err(|e| format!("TLS with {host} failed: {e}"))?;
    Ok(Box::new(tls))
}

async fn open(
    target: &Target,
    max_frame_bytes: usize,
) -> Result<WebSocketStream<Box<dyn Io>>, String> {
    let stream = dial(target).await?;
    let mut request = target
        .url
        .as_str()
        .into_client_request()
        .map_err(|e| format!("bad websocket url: {e}"))?;
    for (name, value) in &target.headers {
        request.headers_mut().append(name.clone(), value.clone());
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_frame_bytes))
        .max_frame_size(Some(max_frame_bytes));
    let (ws, _response) =
        tokio_tungstenite::client_async_with_config(request, stream, Some(config))
            .await
            .map_err(|e| match e {
                WsError::Http(response) => format!(
                    "the server refused the websocket upgrade: HTTP {}",
                    response.status()
                ),
                other => format!("websocket handshake failed: {other}"),
            })?;
    Ok(ws)
}

/// Why the socket loop ended.
enum End {
    /// The host closes: send close 1000 and wait briefly for the reply.
    Close,
    /// The connection is gone (or broken): nothing more to send.
    Gone(String),
}

/// Moves frames both ways until the connection ends, then reports how.
async fn run(
    mut ws: WebSocketStream<Box<dyn Io>>,
    task: Task,
    log: Arc<ExtLog>,
    ping_interval: Duration,
) {
    let Task {
        outbox: Outbox {
            queue: mut rx,
            mut abort,
        },
        frames,
        mut side,
    } = task;
    let mut ping = tokio::time::interval(ping_interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    let mut awaiting_pong = false;
    let end = loop {
        tokio::select! {
            biased;
            () = side.close_requested() => break End::Close,
            () = async { let _ = abort.wait_for(|a| *a).await; } => {
                log.line("a request write blocked past its deadline; closing the connection");
                break End::Close;
            }
            message = ws.next() => match message {
                None => break End::Gone("connection closed".into()),
                Some(Ok(Message::Text(text))) => {
                    let frame = Bytes::from(text);
                    if frames.send(Ok(frame)).await.is_err() {
                        break End::Close;
                    }
                }
                Some(Ok(Message::Binary(data))) => log.line(format_args!(
                    "protocol error: a binary message ({} bytes) was skipped; frames are text messages",
                    data.len()
                )),
                Some(Ok(Message::Pong(_))) => awaiting_pong = false,
                // tungstenite answers pings itself.
                Some(Ok(Message::Ping(_) | Message::Frame(_))) => {}
                Some(Ok(Message::Close(frame))) => {
                    break End::Gone(match frame {
                        Some(frame) if frame.reason.is_empty() => {
                            format!("closed by the server (code {})", u16::from(frame.code))
                        }
                        Some(frame) => format!(
                            "closed by the server (code {}: {})",
                            u16::from(frame.code),
                            frame.reason
                        ),
                        None => "closed by the server".to_owned(),
                    });
                }
                Some(Err(WsError::Capacity(CapacityError::MessageTooLong { size, max_size }))) => {
                    let _ = frames.send(Err(ReadError::TooLong)).await;
                    side.end(format!("a message of {size} bytes is over the {max_size} byte limit"));
                    break End::Close;
                }
                Some(Err(e)) => break End::Gone(format!("read failed: {e}")),
            },
            next = rx.recv() => match next {
                Some(Outgoing::Frame { line, written }) => {
                    let text = String::from_utf8_lossy(line.trim_ascii_end()).into_owned();
                    tracing::debug!(frame = %preview(text.as_bytes()), "frame out");
                    if let Err(e) = ws.send(Message::text(text)).await {
                        break End::Gone(format!("write failed: {e}"));
                    }
                    if let Some(written) = written {
                        let _ = written.send(());
                    }
                }
                // The host closes through the endpoint once the shutdown is acknowledged.
                Some(Outgoing::Close) => {}
                None => break End::Close,
            },
            _ = ping.tick() => {
                if awaiting_pong {
                    break End::Gone(format!("no pong within {ping_interval:?}"));
                }
                if let Err(e) = ws.send(Message::Ping(Bytes::new())).await {
                    break End::Gone(format!("ping failed: {e}"));
                }
                awaiting_pong = true;
            }
        }
    };
    match end {
        End::Close => {
            let close = Message::Close(Some(CloseFrame {
                code: CloseCode::Normal,
                reason: "zot closed the connection".into(),
            }));
            // The close handshake gets the same bound the host waits for it.
            let _ = tokio::time::timeout(wire::CLOSE_WAIT, async {
                if ws.send(close).await.is_ok() {
                    while let Some(Ok(_)) = ws.next().await {}
                }
            })
            .await;
            side.end("connection closed by zot");
        }
        End::Gone(why) => side.end(why),
    }
}
