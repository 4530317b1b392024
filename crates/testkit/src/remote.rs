//! Loopback servers that serve a scripted zot extension to a real host:
//! over WebSocket ([`WsServer`], optionally TLS with a certificate from
//! [`TestCa`]) and over HTTP ([`HttpServer`]: an event stream and POSTs,
//! as `docs/extensions.md` describes the wire). Each connection (or HTTP
//! session) runs the test's handler with a [`Conn`]; when the handler
//! returns, the server drops the connection without a goodbye, like a
//! crashed server would.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};

use crate::http::{read_request, write_plain};

/// What a handler does with one connection.
pub type Handler = Arc<dyn Fn(Conn) -> BoxFuture<'static, ()> + Send + Sync>;

/// Wraps an async closure as a [`Handler`].
pub fn handler<F, Fut>(f: F) -> Handler
where
    F: Fn(Conn) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    Arc::new(move |conn| Box::pin(f(conn)))
}

enum Out {
    Text(String),
    Binary(Vec<u8>),
    /// WebSocket: stop reading and writing, keeping the socket open.
    Freeze,
}

struct Incoming {
    frame: Value,
    /// HTTP: where the frames answering this POST go.
    post: Option<oneshot::Sender<Vec<String>>>,
}

/// The extension's side of one connection.
pub struct Conn {
    out: mpsc::UnboundedSender<Out>,
    incoming: mpsc::UnboundedReceiver<Incoming>,
    /// The POST being handled (HTTP) and the frames answering it so far.
    post: Option<(oneshot::Sender<Vec<String>>, Vec<String>)>,
}

impl Conn {
    /// Sends a frame on the way the extension speaks first: the WebSocket,
    /// or the HTTP event stream.
    pub fn send(&self, frame: Value) {
        self.send_text(frame.to_string());
    }

    /// Sends raw text as one frame (for oversized or broken frames).
    pub fn send_text(&self, text: String) {
        let _ = self.out.send(Out::Text(text));
    }

    /// Sends a binary WebSocket message (a protocol error the host skips).
    pub fn send_binary(&self, data: Vec<u8>) {
        let _ = self.out.send(Out::Binary(data));
    }

    /// WebSocket: after the frames sent so far, the server stops reading
    /// and writing but keeps the connection open, like a server that hangs
    /// or a network path that silently died: pings go unanswered. Waits
    /// forever (the connection lives until the test's runtime ends).
    pub async fn freeze(self) {
        let _ = self.out.send(Out::Freeze);
        std::future::pending::<()>().await;
    }

    /// Answers in the response to the POST being handled (HTTP); over
    /// WebSocket this is the same as [`Conn::send`].
    pub fn answer(&mut self, frame: Value) {
        match &mut self.post {
            Some((_, frames)) => frames.push(frame.to_string()),
            None => self.send(frame),
        }
    }

    fn finish_post(&mut self) {
        if let Some((tx, frames)) = self.post.take() {
            let _ = tx.send(frames);
        }
    }

    /// The next frame from the host; `None` once the host is gone. Ends
    /// the POST handled before (HTTP: `200` with its answers, else `202`).
    pub async fn recv(&mut self) -> Option<Value> {
        self.finish_post();
        let incoming = self.incoming.recv().await?;
        self.post = incoming.post.map(|tx| (tx, Vec::new()));
        Some(incoming.frame)
    }

    /// The next frame of type `kind`, skipping others.
    pub async fn recv_type(&mut self, kind: &str) -> Option<Value> {
        loop {
            let frame = self.recv().await?;
            if frame["type"] == kind {
                return Some(frame);
            }
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.finish_post();
    }
}

fn conn() -> (
    Conn,
    mpsc::UnboundedReceiver<Out>,
    mpsc::UnboundedSender<Incoming>,
) {
    let (out, out_rx) = mpsc::unbounded_channel();
    let (in_tx, incoming) = mpsc::unbounded_channel();
    (
        Conn {
            out,
            incoming,
            post: None,
        },
        out_rx,
        in_tx,
    )
}

/// A zot extension as a team server would run it: a tool `echo`, a command
/// `hi` (answered in the POST response over HTTP, with an unsolicited
/// panel and notify through the stream first), a `tool_call` guard that
/// blocks `rm`, and panel keys echoed back as notes.
pub async fn guard(mut conn: Conn, name: &'static str) {
    conn.send(json!({"type": "hello", "name": name, "version": "2.0.0"}));
    let Some(ack) = conn.recv_type("hello_ack").await else {
        return;
    };
    conn.send(json!({"type": "notify", "level": "info",
        "message": format!("dirs {} {}", ack["extension_dir"].as_str().unwrap_or(""), ack["data_dir"].as_str().unwrap_or(""))}));
    conn.send(
        json!({"type": "register_tool", "name": "echo", "description": "echoes",
        "schema": {"type": "object"}}),
    );
    conn.send(json!({"type": "register_command", "name": "hi", "description": "say hi"}));
    conn.send(json!({"type": "subscribe", "intercept": ["tool_call"]}));
    conn.send(json!({"type": "ready"}));
    while let Some(frame) = conn.recv().await {
        let id = frame["id"].clone();
        match frame["type"].as_str().unwrap_or("") {
            "tool_call" => conn.answer(json!({"type": "tool_result", "id": id,
                "content": [{"type": "text", "text": format!("echo {}", frame["args"])}]})),
            "command_invoked" => {
                conn.send(
                    json!({"type": "panel_render", "panel_id": "p1", "title": "T",
                    "lines": ["remote panel"]}),
                );
                conn.answer(
                    json!({"type": "command_response", "id": id, "action": "display",
                    "display": format!("hi {}", frame["args"].as_str().unwrap_or(""))}),
                );
            }
            "event_intercept" => {
                let command = frame["tool_args"]["command"].as_str().unwrap_or("");
                let reply = if command.contains("rm") {
                    json!({"type": "event_intercept_response", "id": id, "block": true,
                        "reason": "remote guard says no"})
                } else {
                    json!({"type": "event_intercept_response", "id": id})
                };
                conn.answer(reply);
            }
            "panel_key" => conn.send(json!({"type": "notify", "level": "info",
                "message": format!("key {}", frame["key"].as_str().unwrap_or(""))})),
            "shutdown" => conn.answer(json!({"type": "shutdown_ack"})),
            _ => {}
        }
    }
}

/// Request headers of every connection or request, names lowercased.
type Seen = Arc<Mutex<Vec<Vec<(String, String)>>>>;

/// A WebSocket server on 127.0.0.1 serving `handler` to each connection.
pub struct WsServer {
    pub addr: SocketAddr,
    tls: bool,
    connections: Arc<AtomicUsize>,
    seen: Seen,
    closes: Closes,
    task: JoinHandle<()>,
}

/// The close code of each close frame the server received, in order.
type Closes = Arc<Mutex<Vec<Option<u16>>>>;

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

impl WsServer {
    pub async fn start(handler: Handler) -> Self {
        Self::serve(handler, None).await
    }

    /// Serves over TLS with `ca`'s certificate for localhost and 127.0.0.1.
    pub async fn start_tls(handler: Handler, ca: &TestCa) -> Self {
        Self::serve(handler, Some(ca.acceptor())).await
    }

    // The handshake callback's error type is tungstenite's, not ours.
    #[allow(clippy::result_large_err)]
    async fn serve(handler: Handler, tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let seen: Seen = Arc::default();
        let closes: Closes = Arc::default();
        let is_tls = tls.is_some();
        let task = {
            let connections = Arc::clone(&connections);
            let seen = Arc::clone(&seen);
            let closes = Arc::clone(&closes);
            tokio::spawn(async move {
                while let Ok((socket, _)) = listener.accept().await {
                    let handler = Arc::clone(&handler);
                    let connections = Arc::clone(&connections);
                    let seen = Arc::clone(&seen);
                    let closes = Arc::clone(&closes);
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        let stream: Box<dyn Io> = match tls {
                            Some(tls) => match tls.accept(socket).await {
                                Ok(stream) => Box::new(stream),
                                Err(_) => return,
                            },
                            None => Box::new(socket),
                        };
                        let record = |request: &Request, response: Response| {
                            record_headers(&seen, request, response)
                        };
                        let Ok(ws) = tokio_tungstenite::accept_hdr_async(stream, record).await
                        else {
                            return;
                        };
                        connections.fetch_add(1, Ordering::SeqCst);
                        serve_ws(ws, handler, closes).await;
                    });
                }
            })
        };
        Self {
            addr,
            tls: is_tls,
            connections,
            seen,
            closes,
            task,
        }
    }

    /// `ws://127.0.0.1:<port>/ext` (or `wss://localhost:<port>/ext`).
    pub fn url(&self) -> String {
        if self.tls {
            format!("wss://localhost:{}/ext", self.addr.port())
        } else {
            format!("ws://127.0.0.1:{}/ext", self.addr.port())
        }
    }

    /// Connections that completed the WebSocket handshake so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// The request headers of each handshake, names lowercased.
    pub fn handshake_headers(&self) -> Vec<Vec<(String, String)>> {
        self.seen.lock().unwrap().clone()
    }

    /// The code of each close frame received from the host so far (`None`
    /// for a close frame without a code).
    pub fn close_codes(&self) -> Vec<Option<u16>> {
        self.closes.lock().unwrap().clone()
    }
}

impl Drop for WsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[allow(clippy::result_large_err)]
fn record_headers(
    seen: &Seen,
    request: &Request,
    response: Response,
) -> Result<Response, ErrorResponse> {
    seen.lock().unwrap().push(
        request
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect(),
    );
    Ok(response)
}

async fn serve_ws(
    mut ws: tokio_tungstenite::WebSocketStream<Box<dyn Io>>,
    handler: Handler,
    closes: Closes,
) {
    let (conn, mut out, incoming) = conn();
    let mut run = handler(conn);
    loop {
        tokio::select! {
            () = &mut run => break,
            message = ws.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    if let Ok(frame) = serde_json::from_str(text.as_str()) {
                        let _ = incoming.send(Incoming { frame, post: None });
                    }
                }
                Some(Ok(Message::Close(frame))) => {
                    closes.lock().unwrap().push(frame.map(|f| u16::from(f.code)));
                    break;
                }
                None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
            next = out.recv() => match next {
                Some(Out::Text(text)) => {
                    if ws.send(Message::text(text)).await.is_err() {
                        break;
                    }
                }
                Some(Out::Binary(data)) => {
                    if ws.send(Message::binary(data)).await.is_err() {
                        break;
                    }
                }
                Some(Out::Freeze) => {
                    let _ = ws.flush().await;
                    // Holds the socket unread: no pong, no close, no EOF.
                    std::future::pending::<()>().await;
                }
                None => break,
            },
        }
    }
    // Dropped without a close frame when the handler ended: like a crash.
    // The host closing (a close frame read above) is answered by tungstenite.
    let _ = ws.flush().await;
}

/// A certificate authority made for one test, and a certificate it signed
/// for `localhost` and `127.0.0.1`.
pub struct TestCa {
    /// The CA certificate (PEM), for `SSL_CERT_FILE`.
    pub ca_file: PathBuf,
    cert: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
}

impl TestCa {
    /// Makes the CA and the server certificate; writes the CA's PEM into `dir`.
    pub fn new(dir: &Path) -> Self {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "zot test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        let ca_file = dir.join("test-ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();
        Self {
            ca_file,
            cert: leaf.der().clone(),
            key: key.serialize_der(),
        }
    }

    fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.key.clone().into());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![self.cert.clone()], key)
            .unwrap();
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    }
}

/// One HTTP session: the extension's frames so far (the event log the
/// stream serves and replays), and the way to its handler.
struct Session {
    events: Mutex<Vec<String>>,
    grew: Notify,
    incoming: mpsc::UnboundedSender<Incoming>,
    /// Ends when the handler returns (then the session is forgotten).
    alive: watch::Receiver<bool>,
}

#[derive(Default)]
struct HttpState {
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Bumped to cut every open event stream.
    cuts: watch::Sender<u64>,
    seen: Mutex<Vec<Vec<(String, String)>>>,
    next_session: AtomicU64,
    streams_opened: AtomicUsize,
}

/// An HTTP server on 127.0.0.1 speaking the zot HTTP transport: `GET`
/// opens a session's event stream (or resumes it with `Last-Event-ID`),
/// each `POST` hands one host frame to the session's handler.
pub struct HttpServer {
    pub addr: SocketAddr,
    state: Arc<HttpState>,
    task: JoinHandle<()>,
}

impl HttpServer {
    pub async fn start(handler: Handler) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(HttpState::default());
        let task = {
            let state = Arc::clone(&state);
            tokio::spawn(async move {
                while let Ok((socket, _)) = listener.accept().await {
                    tokio::spawn(serve_http(socket, Arc::clone(&state), Arc::clone(&handler)));
                }
            })
        };
        Self { addr, state, task }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/ext", self.addr.port())
    }

    /// Cuts every open event stream mid-body; sessions stay.
    pub fn cut_streams(&self) {
        self.state.cuts.send_modify(|n| *n += 1);
    }

    /// Forgets every session (their streams are cut, later requests get 404).
    pub fn forget_sessions(&self) {
        self.state.sessions.lock().unwrap().clear();
        self.cut_streams();
    }

    /// Event streams opened or resumed so far.
    pub fn streams_opened(&self) -> usize {
        self.state.streams_opened.load(Ordering::SeqCst)
    }

    /// Sessions started so far.
    pub fn sessions_started(&self) -> u64 {
        self.state.next_session.load(Ordering::SeqCst)
    }

    /// The headers of every request, names lowercased.
    pub fn request_headers(&self) -> Vec<Vec<(String, String)>> {
        self.state.seen.lock().unwrap().clone()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

async fn serve_http(mut socket: TcpStream, state: Arc<HttpState>, handler: Handler) {
    let Ok(Some(request)) = read_request(&mut socket).await else {
        return;
    };
    state.seen.lock().unwrap().push(request.headers.clone());
    let session_id = header(&request.headers, "zot-session").map(str::to_owned);
    let known = session_id
        .as_deref()
        .and_then(|id| state.sessions.lock().unwrap().get(id).cloned());
    match (request.method.as_str(), session_id, known) {
        ("GET", None, _) => {
            let id = format!("s{}", state.next_session.fetch_add(1, Ordering::SeqCst) + 1);
            let session = start_session(&state, &id, handler);
            stream_events(socket, &state, &id, &session, 0).await;
        }
        ("GET", Some(id), Some(session)) => {
            let after = header(&request.headers, "last-event-id")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            stream_events(socket, &state, &id, &session, after).await;
        }
        ("POST", Some(_), Some(session)) => {
            let Ok(frame) = serde_json::from_slice::<Value>(&request.body) else {
                let _ = write_plain(&mut socket, 400, &[], "not JSON", false).await;
                return;
            };
            let (tx, rx) = oneshot::channel();
            let _ = session.incoming.send(Incoming {
                frame,
                post: Some(tx),
            });
            match rx.await {
                Ok(frames) if !frames.is_empty() => {
                    let _ = write_plain(&mut socket, 200, &[], &frames.join("\n"), false).await;
                }
                _ => {
                    let _ = write_status(&mut socket, 202).await;
                }
            }
        }
        (_, Some(_), None) => {
            let _ = write_plain(&mut socket, 404, &[], "unknown session", false).await;
        }
        _ => {
            let _ = write_plain(&mut socket, 400, &[], "bad request", false).await;
        }
    }
}

async fn write_status(socket: &mut TcpStream, code: u16) -> std::io::Result<()> {
    let head =
        format!("HTTP/1.1 {code} Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    socket.shutdown().await
}

/// Starts a session: its handler runs until it returns, its frames go into
/// the session's event log; then the session is forgotten.
fn start_session(state: &Arc<HttpState>, id: &str, handler: Handler) -> Arc<Session> {
    let (conn, mut out, incoming) = conn();
    let (alive_tx, alive) = watch::channel(true);
    let session = Arc::new(Session {
        events: Mutex::new(Vec::new()),
        grew: Notify::new(),
        incoming,
        alive,
    });
    state
        .sessions
        .lock()
        .unwrap()
        .insert(id.to_owned(), Arc::clone(&session));
    {
        let session = Arc::clone(&session);
        let state = Arc::clone(state);
        let id = id.to_owned();
        tokio::spawn(async move {
            let mut run = handler(conn);
            loop {
                tokio::select! {
                    () = &mut run => break,
                    next = out.recv() => match next {
                        Some(Out::Text(text)) => {
                            session.events.lock().unwrap().push(text);
                            session.grew.notify_waiters();
                        }
                        // No WebSocket here: nothing to send or to freeze.
                        Some(Out::Binary(_) | Out::Freeze) => {}
                        None => break,
                    },
                }
            }
            // Frames the handler sent just before it returned still count.
            while let Ok(Out::Text(text)) = out.try_recv() {
                session.events.lock().unwrap().push(text);
            }
            session.grew.notify_waiters();
            state.sessions.lock().unwrap().remove(&id);
            let _ = alive_tx.send(false);
        });
    }
    session
}

/// Streams the session's events after event number `after`, then new ones
/// as they come, until the stream is cut or the session ends.
async fn stream_events(
    mut socket: TcpStream,
    state: &HttpState,
    id: &str,
    session: &Session,
    after: usize,
) {
    state.streams_opened.fetch_add(1, Ordering::SeqCst);
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nzot-session: {id}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    );
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let mut cuts = state.cuts.subscribe();
    cuts.borrow_and_update();
    let mut alive = session.alive.clone();
    let mut sent = after;
    loop {
        let grew = session.grew.notified();
        let pending: Vec<(usize, String)> = {
            let events = session.events.lock().unwrap();
            events
                .iter()
                .enumerate()
                .skip(sent)
                .map(|(i, e)| (i + 1, e.clone()))
                .collect()
        };
        for (n, event) in pending {
            let text = format!("id: {n}\ndata: {event}\n\n");
            let chunk = format!("{:x}\r\n{text}\r\n", text.len());
            if socket.write_all(chunk.as_bytes()).await.is_err() {
                return;
            }
            sent = n;
        }
        let _ = socket.flush().await;
        if !*alive.borrow() {
            // The handler ended: drop the stream without ending the body.
            return;
        }
        tokio::select! {
            () = grew => {}
            _ = cuts.changed() => return,
            _ = alive.changed() => {}
        }
    }
}
