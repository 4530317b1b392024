//! The shared loopback model server for tests: `MockModel` answers real HTTP
//! on 127.0.0.1 with scripted responses in the real wire formats (Anthropic
//! Messages, OpenAI chat completions and Responses),
//! records every request, and rejects invalid ones like the real APIs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod anthropic;
pub mod bench;
pub mod cache;
mod http;
pub mod npm;
pub mod oauth;
pub mod openai;
pub mod proxy;
pub mod remote;
pub mod responses;
pub mod terminal;
pub mod wait;
pub mod web;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Response {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Stream {
        events: Vec<SseEvent>,
        stall: bool,
        /// Each event is written in pieces of at most this many bytes.
        write_size: Option<usize>,
        /// The stream starts only once this gate opens.
        gate: Option<watch::Receiver<bool>>,
    },
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

/// One server-sent event, already in wire form.
#[derive(Debug, Clone)]
struct SseEvent {
    text: String,
    /// OpenAI sends the usage chunk only when `stream_options.include_usage` asks for it.
    needs_include_usage: bool,
}

impl Response {
    /// A `200 text/event-stream` response sending `events` verbatim, one
    /// write each (each should end with a blank line: "data: x\n\n").
    pub fn sse<S: Into<String>>(events: impl IntoIterator<Item = S>) -> Self {
        let events = events
            .into_iter()
            .map(|text| SseEvent {
                text: text.into(),
                needs_include_usage: false,
            })
            .collect();
        Self {
            kind: Kind::Stream {
                events,
                stall: false,
                write_size: None,
                gate: None,
            },
        }
    }

    /// The response body as the server sends it (for a stream, every event
    /// in wire form, the usage chunk included), for feeding a stream reader
    /// directly.
    pub fn body(&self) -> String {
        match &self.kind {
            Kind::Stream { events, .. } => events.iter().map(|e| e.text.as_str()).collect(),
            Kind::Status { body, .. } => body.clone(),
        }
    }

    /// Writes each event in pieces of at most `bytes` (each its own HTTP
    /// chunk and socket write), as a server behind TLS (16 KiB records) or
    /// a slow network delivers one big event: in many reads.
    pub fn in_writes_of(mut self, bytes: usize) -> Self {
        if let Kind::Stream { write_size, .. } = &mut self.kind {
            *write_size = Some(bytes.max(4));
        }
        self
    }

    /// After its events, the stream stays open, sending nothing, until the
    /// client goes away (see [`MockModel::wait_hangups`]). For abort tests.
    pub fn stall(mut self) -> Self {
        if let Kind::Stream { stall, .. } = &mut self.kind {
            *stall = true;
        }
        self
    }

    /// The stream starts only once `gate` opens (for tests of requests in
    /// flight together). A gate still shut after [`GATE_DEADLINE`] gets a
    /// 500 saying so, so a client that never makes the opening request
    /// fails its test instead of hanging it.
    pub fn after(mut self, gate: &Gate) -> Self {
        if let Kind::Stream { gate: slot, .. } = &mut self.kind {
            *slot = Some(gate.0.subscribe());
        }
        self
    }

    fn stream(events: Vec<SseEvent>) -> Self {
        Self {
            kind: Kind::Stream {
                events,
                stall: false,
                write_size: None,
                gate: None,
            },
        }
    }
}

/// What a gated response ([`Response::after`]) waits for.
#[derive(Debug, Clone)]
pub struct Gate(Arc<watch::Sender<bool>>);

impl Gate {
    pub fn new() -> Self {
        Self(Arc::new(watch::Sender::new(false)))
    }

    /// Lets every response waiting on this gate go.
    pub fn open(&self) {
        self.0.send_replace(true);
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

/// How long a gated response waits for its gate (generous for a loaded
/// 2-core CI machine).
pub const GATE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// An error (or any other) status with `body` (JSON bodies are sent as
/// `application/json`).
pub fn status(code: u16, body: impl Into<String>) -> Response {
    Response {
        kind: Kind::Status {
            code,
            headers: Vec::new(),
            body: body.into(),
        },
    }
}

/// Like [`status`], with one extra header, e.g. a 429 with `retry-after`.
pub fn status_with_header(
    code: u16,
    header: &str,
    value: &str,
    body: impl Into<String>,
) -> Response {
    Response {
        kind: Kind::Status {
            code,
            headers: vec![(header.to_owned(), value.to_owned())],
            body: body.into(),
        },
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// With any query string.
    pub path: String,
    /// In arrival order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body; `Value::Null` when empty or not JSON.
    pub body: Value,
    pub raw_body: String,
}

impl Recorded {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Makes the answer to a valid request when the queue is empty (see
/// [`MockModel::start_responding`]).
type Responder = Box<dyn FnMut(&Recorded) -> Response + Send>;

struct Shared {
    /// What `GET /v1/models` (and ollama's `/api/tags`) lists.
    models: Mutex<Vec<String>>,
    queue: Mutex<VecDeque<Response>>,
    responder: Mutex<Option<Responder>>,
    requests: Mutex<Vec<Recorded>>,
    hangups: watch::Sender<usize>,
    /// Serving as a real API does, for measuring a client: connections kept
    /// open between requests, no request recorded, and a pace that does not
    /// depend on the client's conversation (see [`MockModel::start_for_bench`]).
    bench: Option<Pace>,
    /// Requests received so far (the first is checked in full).
    served: AtomicUsize,
}

/// How a bench server answers (see [`MockModel::start_for_bench`]).
#[derive(Debug, Clone, Copy)]
struct Pace {
    /// The wait before each answer: a model's time to the first token.
    latency: Duration,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("queued", &self.queue.lock().unwrap().len())
            .field("requests", &self.requests.lock().unwrap().len())
            .finish_non_exhaustive()
    }
}

/// A real HTTP/1.1 server on 127.0.0.1 serving scripted responses in order,
/// one per valid request. Stops when dropped.
#[derive(Debug)]
pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl MockModel {
    /// Starts serving `responses` on a fresh port. Needs a tokio runtime.
    pub async fn start(responses: impl IntoIterator<Item = Response>) -> Self {
        Self::serving(responses, None).await
    }

    /// Starts serving `responses` as a real API does, for measuring a
    /// client (the `mock_model` example): a connection stays open for the
    /// next request (HTTP/1.1 keep-alive), and requests are not recorded
    /// (a long session's would be kept whole, each one larger than the
    /// last). [`MockModel::requests`] is empty.
    ///
    /// Each answer waits `latency`, then comes at a pace that does not grow
    /// with the conversation, as a remote API's does: only the first request
    /// and the one the last scripted answer goes to (the whole session's) are
    /// parsed and checked in full. Checking every request would cost the
    /// server a parse of the whole conversation per turn, on the measured
    /// client's cores, and make the client wait longer each turn; a client
    /// that waited longer pays more to wake, so its own CPU would then grow
    /// with the server's work (issue 37, `BENCHMARKS.md`).
    pub async fn start_for_bench(
        responses: impl IntoIterator<Item = Response>,
        latency: Duration,
    ) -> Self {
        Self::serving(responses, Some(Pace { latency })).await
    }

    async fn serving(responses: impl IntoIterator<Item = Response>, bench: Option<Pace>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            models: Mutex::new(Vec::new()),
            queue: Mutex::new(responses.into_iter().collect()),
            responder: Mutex::new(None),
            requests: Mutex::new(Vec::new()),
            hangups: watch::Sender::new(0),
            bench,
            served: AtomicUsize::new(0),
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Self { addr, shared, task }
    }

    /// Starts serving answers that `responder` makes from each valid
    /// request (a server whose answers depend on what was asked, such as
    /// the prompt-cache emulation of the caching benchmark).
    pub async fn start_responding(
        responder: impl FnMut(&Recorded) -> Response + Send + 'static,
    ) -> Self {
        let model = Self::start([]).await;
        *model.shared.responder.lock().unwrap() = Some(Box::new(responder));
        model
    }

    /// The model ids `GET /v1/models` lists from now on (in Anthropic's
    /// shape when the request carries `anthropic-version`, else OpenAI's),
    /// and ollama's `GET /api/tags`.
    pub fn serve_models(&self, ids: &[&str]) {
        *self.shared.models.lock().unwrap() = ids.iter().map(|id| (*id).to_owned()).collect();
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash (a provider base URL).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, invalid ones included, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Queues one more response after those already queued.
    pub fn push(&self, response: Response) {
        self.shared.queue.lock().unwrap().push_back(response);
    }

    /// How many stalled streams saw their client go away.
    pub fn hangups(&self) -> usize {
        *self.shared.hangups.borrow()
    }

    /// Waits until `count` stalled streams saw their client go away; panics
    /// after [`HANGUP_DEADLINE`] so a client that never lets go fails the test
    /// instead of hanging it.
    pub async fn wait_hangups(&self, count: usize) {
        let mut rx = self.shared.hangups.subscribe();
        let waited = tokio::time::timeout(HANGUP_DEADLINE, rx.wait_for(|n| *n >= count)).await;
        assert!(
            waited.is_ok(),
            "the client kept {} stalled stream(s) open for {HANGUP_DEADLINE:?} (wanted {count} hangups)",
            count.saturating_sub(*self.shared.hangups.borrow())
        );
    }
}

/// How long [`MockModel::wait_hangups`] waits (generous for a loaded 2-core CI machine).
pub const HANGUP_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

impl Drop for MockModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((socket, _)) = listener.accept().await {
        // Each event is written as it comes, as the APIs stream them: on a
        // connection kept open, Nagle's algorithm would hold a small write
        // back until the client's delayed acknowledgement of the last one.
        let _ = socket.set_nodelay(true);
        tokio::spawn(serve(socket, Arc::clone(&shared)));
    }
}

/// The wire format a path belongs to, by the endpoints the real APIs use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Anthropic,
    OpenAi,
    Responses,
}

async fn serve(mut socket: TcpStream, shared: Arc<Shared>) {
    loop {
        let request = match http::read_request(&mut socket).await {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(message) => {
                let body = openai::error_body(&message);
                let _ = http::write_plain(&mut socket, 400, &[], &body, false).await;
                return;
            }
        };
        if !answer(&mut socket, &shared, request).await || shared.bench.is_none() {
            return;
        }
    }
}

/// Answers one request; whether the connection may carry another.
async fn answer(socket: &mut TcpStream, shared: &Shared, request: http::RawRequest) -> bool {
    let keep_alive = shared.bench.is_some();
    let first = shared.served.fetch_add(1, Ordering::Relaxed) == 0;
    let thorough = shared.bench.is_none() || first || shared.queue.lock().unwrap().len() <= 1;
    let raw_body = String::from_utf8(request.body)
        .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned());
    let recorded = Recorded {
        method: request.method,
        path: request.path,
        headers: request.headers,
        body: if thorough {
            serde_json::from_str(&raw_body).unwrap_or(Value::Null)
        } else {
            Value::Null
        },
        raw_body,
    };
    if shared.bench.is_none() {
        shared.requests.lock().unwrap().push(recorded.clone());
    }

    let route = recorded.path.split('?').next().unwrap_or_default();
    if recorded.method == "GET" && (route == "/v1/models" || route == "/api/tags") {
        let ids = shared.models.lock().unwrap().clone();
        let (code, body) = model_list(&recorded, route, &ids);
        return http::write_plain(socket, code, &[], &body, keep_alive)
            .await
            .is_ok();
    }
    let api = if route == "/v1/messages" {
        Api::Anthropic
    } else if route.ends_with("/chat/completions") {
        Api::OpenAi
    } else if route.ends_with("/responses") {
        Api::Responses
    } else {
        let body = openai::error_body(&format!("no such endpoint: {route}"));
        return http::write_plain(socket, 404, &[], &body, keep_alive)
            .await
            .is_ok();
    };
    let verdict = if recorded.method != "POST" {
        Err((405, format!("method {} not allowed", recorded.method)))
    } else if !thorough {
        Ok(())
    } else {
        match api {
            Api::Anthropic => anthropic::validate(&recorded),
            Api::OpenAi => openai::validate(&recorded),
            Api::Responses => responses::validate(&recorded),
        }
    };
    if let Err((code, message)) = verdict {
        let body = match api {
            Api::Anthropic => anthropic::error_body(code, &message),
            Api::OpenAi | Api::Responses => openai::error_body(&message),
        };
        return http::write_plain(socket, code, &[], &body, keep_alive)
            .await
            .is_ok();
    }

    if let Some(pace) = shared.bench.filter(|pace| !pace.latency.is_zero()) {
        tokio::time::sleep(pace.latency).await;
    }
    let queued = shared.queue.lock().unwrap().pop_front();
    let next = queued.or_else(|| {
        let mut responder = shared.responder.lock().unwrap();
        responder.as_mut().map(|respond| respond(&recorded))
    });
    let Some(response) = next else {
        return http::write_plain(socket, 500, &[], "no scripted response left", keep_alive)
            .await
            .is_ok();
    };
    match response.kind {
        Kind::Status {
            code,
            headers,
            body,
        } => http::write_plain(socket, code, &headers, &body, keep_alive)
            .await
            .is_ok(),
        Kind::Stream {
            events,
            stall,
            write_size,
            gate,
        } => {
            if let Some(mut gate) = gate {
                let opened = tokio::time::timeout(GATE_DEADLINE, gate.wait_for(|open| *open))
                    .await
                    .is_ok_and(|waited| waited.is_ok());
                if !opened {
                    let body = openai::error_body("the response's gate never opened");
                    return http::write_plain(socket, 500, &[], &body, keep_alive)
                        .await
                        .is_ok();
                }
            }
            let include_usage = if thorough {
                recorded.body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true))
            } else {
                recorded.raw_body.contains(r#""include_usage":true"#)
            };
            if stream(socket, &events, include_usage, write_size, keep_alive)
                .await
                .is_err()
            {
                // Gone before the stall began: that too is a client
                // letting go of a stalled stream.
                if stall {
                    shared.hangups.send_modify(|n| *n += 1);
                }
                return false;
            }
            if stall {
                http::wait_for_close(socket).await;
                shared.hangups.send_modify(|n| *n += 1);
                false
            } else {
                http::finish_chunked(socket, keep_alive).await.is_ok()
            }
        }
    }
}

/// A model list in the shape of the API asked, or its refusal without a key.
fn model_list(request: &Recorded, route: &str, ids: &[String]) -> (u16, String) {
    if route == "/api/tags" {
        let models: Vec<Value> = ids
            .iter()
            .map(|id| serde_json::json!({"name": id, "model": id, "size": 1}))
            .collect();
        return (200, serde_json::json!({"models": models}).to_string());
    }
    if request.header("anthropic-version").is_some() {
        if request.header("x-api-key").is_none_or(str::is_empty) {
            return (
                401,
                anthropic::error_body(401, "x-api-key header is required"),
            );
        }
        let data: Vec<Value> = ids
            .iter()
            .map(|id| {
                serde_json::json!({"type": "model", "id": id, "display_name": id,
                    "created_at": "2026-11-01T00:00:00Z"})
            })
            .collect();
        let body = serde_json::json!({"data": data, "has_more": false,
            "first_id": ids.first(), "last_id": ids.last()});
        return (200, body.to_string());
    }
    if request
        .header("authorization")
        .is_none_or(|v| !v.starts_with("Bearer "))
    {
        return (401, openai::error_body("You didn't provide an API key."));
    }
    let data: Vec<Value> = ids
        .iter()
        .map(
            |id| serde_json::json!({"id": id, "object": "model", "created": 1, "owned_by": "mock"}),
        )
        .collect();
    (
        200,
        serde_json::json!({"object": "list", "data": data}).to_string(),
    )
}

async fn stream(
    socket: &mut TcpStream,
    events: &[SseEvent],
    include_usage: bool,
    write_size: Option<usize>,
    keep_alive: bool,
) -> std::io::Result<()> {
    http::write_stream_head(socket, keep_alive).await?;
    for event in events {
        if event.needs_include_usage && !include_usage {
            continue;
        }
        let mut rest = event.text.as_str();
        while !rest.is_empty() {
            let mut end = write_size.unwrap_or(rest.len()).min(rest.len());
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            http::write_chunk(socket, &rest[..end]).await?;
            rest = &rest[end..];
        }
    }
    Ok(())
}

/// Splits `text` into up to `pieces` non-empty fragments at char
/// boundaries, the way the APIs stream text and arguments in deltas.
fn fragments(text: &str, pieces: usize) -> Vec<String> {
    if pieces <= 1 {
        return if text.is_empty() {
            Vec::new()
        } else {
            vec![text.to_owned()]
        };
    }
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(pieces.max(1));
    chars
        .chunks(size)
        .map(|chunk| chunk.iter().collect())
        .collect()
}

/// Writes `text` to `path` and makes it executable (a script a test or
/// bench runs as an extension, hook, server or `$BROWSER`).
pub fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn raw(url: &str, request: &str) -> String {
        let addr = url.trim_start_matches("http://");
        let mut socket = TcpStream::connect(addr).await.unwrap();
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        socket.read_to_string(&mut answer).await.unwrap();
        answer
    }

    fn post(path: &str, headers: &str, body: &str) -> String {
        format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{headers}content-length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    const VALID_ANTHROPIC: &str = r#"{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

    #[tokio::test]
    async fn an_empty_queue_answers_500() {
        let mock = MockModel::start([]).await;
        let answer = raw(
            &mock.url(),
            &post(
                "/v1/messages",
                "x-api-key: k\r\nanthropic-version: 2023-06-01\r\n",
                VALID_ANTHROPIC,
            ),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
        assert!(answer.ends_with("no scripted response left"), "{answer}");
        let requests = mock.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].method, "POST");
        assert_eq!(requests[0].path, "/v1/messages");
        assert_eq!(requests[0].header("Anthropic-Version"), Some("2023-06-01"));
        assert_eq!(requests[0].body["model"], "m");
    }

    /// A kept-alive connection to `mock`, and a request to it with a body.
    async fn bench_client(mock: &MockModel) -> (TcpStream, impl Fn(&str) -> String) {
        let socket = TcpStream::connect(mock.url().trim_start_matches("http://"))
            .await
            .unwrap();
        let request = |body: &str| {
            let headers = "x-api-key: k\r\nanthropic-version: 2023-06-01\r\n";
            post("/v1/messages", headers, body)
        };
        (socket, request)
    }

    /// Reads one whole answer from a kept-alive connection: its head and body.
    async fn next_answer(socket: &mut TcpStream) -> String {
        let mut seen = Vec::new();
        let complete = |seen: &[u8]| {
            let text = String::from_utf8_lossy(seen);
            let (head, body) = text.split_once("\r\n\r\n")?;
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length: "))
                .map(|n| n.parse::<usize>().unwrap());
            // A stream is chunked, ended by its last chunk.
            let done = match length {
                Some(length) => body.len() >= length,
                None => body.ends_with("\r\n0\r\n\r\n"),
            };
            done.then(|| text.to_string())
        };
        let read = async {
            loop {
                if let Some(answer) = complete(&seen) {
                    return answer;
                }
                let mut buf = [0u8; 4096];
                let n = socket.read(&mut buf).await.unwrap();
                assert!(n > 0, "the connection closed after: {seen:?}");
                seen.extend_from_slice(&buf[..n]);
            }
        };
        tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .expect("an answer on the open connection")
    }

    #[tokio::test]
    async fn the_bench_server_answers_on_one_connection_after_its_latency() {
        let answers = ["one", "two"].map(anthropic::text);
        let mock = MockModel::start_for_bench(answers, Duration::from_millis(150)).await;
        let (mut socket, request) = bench_client(&mock).await;
        let start = std::time::Instant::now();
        for _ in 0..2 {
            socket
                .write_all(request(VALID_ANTHROPIC).as_bytes())
                .await
                .unwrap();
            let answer = next_answer(&mut socket).await;
            assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
            assert!(!answer.contains("connection: close"), "{answer}");
        }
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(mock.requests().is_empty());
    }

    #[tokio::test]
    async fn the_bench_server_checks_the_first_and_the_last_request_in_full() {
        let answers = ["one", "two", "three"].map(anthropic::text);
        let mock = MockModel::start_for_bench(answers, Duration::ZERO).await;
        let (mut socket, request) = bench_client(&mock).await;
        let invalid = r#"{"model":"m","messages":[]}"#;
        let mut status = async |body: &str| {
            socket.write_all(request(body).as_bytes()).await.unwrap();
            let answer = next_answer(&mut socket).await;
            answer.lines().next().unwrap_or_default().to_owned()
        };
        // The first request is checked; one between is answered unread, so
        // the server's time per answer does not grow with a conversation.
        assert_eq!(status(invalid).await, "HTTP/1.1 400 Bad Request");
        assert_eq!(status(invalid).await, "HTTP/1.1 200 OK");
        assert_eq!(status(invalid).await, "HTTP/1.1 200 OK");
        // The one the last scripted answer goes to is checked again.
        assert_eq!(status(invalid).await, "HTTP/1.1 400 Bad Request");
        assert_eq!(status(VALID_ANTHROPIC).await, "HTTP/1.1 200 OK");
        assert_eq!(
            status(VALID_ANTHROPIC).await,
            "HTTP/1.1 500 Internal Server Error"
        );
    }

    #[tokio::test]
    async fn invalid_requests_get_400_and_keep_the_queue() {
        let mock = MockModel::start([anthropic::text("hi")]).await;
        let answer = raw(
            &mock.url(),
            &post("/v1/messages", "x-api-key: k\r\n", VALID_ANTHROPIC),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(answer.contains("anthropic-version"), "{answer}");
        assert!(
            answer.contains(r#""type":"invalid_request_error""#),
            "{answer}"
        );

        let answer = raw(
            &mock.url(),
            &post(
                "/v1/messages",
                "x-api-key: k\r\nanthropic-version: 2023-06-01\r\n",
                VALID_ANTHROPIC,
            ),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("transfer-encoding: chunked"), "{answer}");
        assert!(answer.contains("event: message_stop"), "{answer}");
        assert!(answer.ends_with("0\r\n\r\n"), "{answer}");
        assert_eq!(mock.requests().len(), 2);
    }

    #[tokio::test]
    async fn pushed_responses_and_statuses_are_served_in_order() {
        let mock =
            MockModel::start([status_with_header(429, "retry-after", "7", "slow down")]).await;
        mock.push(status(418, r#"{"error":{"message":"teapot"}}"#));
        let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
        let request = post("/v1/chat/completions", "", body);
        let first = raw(&mock.url(), &request).await;
        assert!(first.starts_with("HTTP/1.1 429"), "{first}");
        assert!(first.contains("retry-after: 7\r\n"), "{first}");
        assert!(first.ends_with("slow down"), "{first}");
        let second = raw(&mock.url(), &request).await;
        assert!(second.starts_with("HTTP/1.1 418"), "{second}");
        assert!(
            second.contains("content-type: application/json"),
            "{second}"
        );
        let third = raw(&mock.url(), &request).await;
        assert!(third.starts_with("HTTP/1.1 500"), "{third}");
    }

    #[tokio::test]
    async fn usage_chunks_only_when_asked_for() {
        let body_with = r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}"#;
        let body_without =
            r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
        let mock = MockModel::start([openai::text("hi"), openai::text("hi")]).await;
        let with = raw(&mock.url(), &post("/v1/chat/completions", "", body_with)).await;
        let without = raw(&mock.url(), &post("/v1/chat/completions", "", body_without)).await;
        assert!(with.contains(r#""prompt_tokens""#), "{with}");
        assert!(!without.contains(r#""prompt_tokens""#), "{without}");
        assert!(without.contains("data: [DONE]"), "{without}");
    }

    /// A request the bench server answers unread still gets the usage
    /// chunk it asked for (found in its text, the body not being parsed).
    #[tokio::test]
    async fn the_bench_server_streams_usage_when_an_unread_request_asks() {
        let with = r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}"#;
        let without = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
        let answers = ["1", "2", "3", "4"].map(openai::text);
        let mock = MockModel::start_for_bench(answers, Duration::ZERO).await;
        let (mut socket, _) = bench_client(&mock).await;
        let mut usage = Vec::new();
        // The first and the last are read and checked; the two between are not.
        for body in [without, with, without, with] {
            let request = post("/v1/chat/completions", "", body);
            socket.write_all(request.as_bytes()).await.unwrap();
            let answer = next_answer(&mut socket).await;
            assert!(answer.contains("data: [DONE]"), "{answer}");
            usage.push(answer.contains(r#""prompt_tokens""#));
        }
        assert_eq!(usage, [false, true, false, true]);
    }

    #[tokio::test]
    async fn stalled_streams_count_hangups() {
        let mock = MockModel::start([anthropic::Script::new()
            .text("partial")
            .build_partial()
            .stall()])
        .await;
        let mut socket = TcpStream::connect(mock.url().trim_start_matches("http://"))
            .await
            .unwrap();
        let request = post(
            "/v1/messages",
            "x-api-key: k\r\nanthropic-version: 2023-06-01\r\n",
            VALID_ANTHROPIC,
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut seen = Vec::new();
        while !String::from_utf8_lossy(&seen).contains("text_delta") {
            let mut buf = [0u8; 4096];
            let n = socket.read(&mut buf).await.unwrap();
            assert_ne!(n, 0, "stream closed early");
            seen.extend_from_slice(&buf[..n]);
        }
        assert_eq!(mock.hangups(), 0);
        drop(socket);
        mock.wait_hangups(1).await;
        assert_eq!(mock.hangups(), 1);
    }

    #[test]
    fn fragments_split_at_char_boundaries() {
        assert_eq!(fragments("abcdefg", 3), ["abc", "def", "g"]);
        assert_eq!(fragments("éé", 3), ["é", "é"]);
        assert!(fragments("", 3).is_empty());
    }
}
