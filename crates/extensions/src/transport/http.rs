//! The HTTP transport, for networks that block WebSocket. The extension's
//! frames come down one event stream (`GET`, `text/event-stream`, one
//! frame per `data:` event, each with an `id:`); each host frame goes up as
//! one `POST` whose response may carry extension frames as JSON lines. Both
//! carry the `Zot-Session` header the stream's response named. A dropped
//! stream is resumed with `Last-Event-ID`; a `404` means the server forgot
//! the session, which ends the connection (the host then starts over).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use reqwest::{Client, RequestBuilder, StatusCode};
use tokio::sync::mpsc;
use tokio_util::io::StreamReader;

use super::wire::{self, Connected, Task};
use super::{FrameReader, Outbox, Outgoing, ReadError, preview};
use crate::ext_log::ExtLog;
use crate::remote::{self, CONNECT_TIMEOUT, Target};

/// The header that names a session (remote extensions issue, "HTTP").
pub const SESSION_HEADER: &str = "Zot-Session";

/// Attempts to resume a dropped event stream (each after a
/// [`remote::backoff`] delay) before the connection counts as lost. The
/// host's own choice: a brief network blip should not cost a new
/// handshake, a server that stays away should soon be reported.
const RESUME_ATTEMPTS: u32 = 3;

/// Bytes an event may have beyond its frame: the `id:`, `event:` and
/// `data:` field names and line ends. The host's own allowance.
const EVENT_OVERHEAD: usize = 64 * 1024;

/// How long one POST may take, the response body included: the longest
/// default request deadline (`limits::TOOL_TIMEOUT`), since a server may
/// answer a tool call in the response.
const POST_TIMEOUT: Duration = crate::limits::TOOL_TIMEOUT;

/// Opens the event stream (within [`CONNECT_TIMEOUT`]) and starts moving frames.
pub(crate) async fn connect(
    name: &str,
    target: &Target,
    log: &Arc<ExtLog>,
    max_frame_bytes: usize,
) -> Result<Connected, String> {
    // reqwest needs the process's crypto provider even for plain http.
    zot_http::install_tls_provider();
    let mut builder = Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("zot/", env!("CARGO_PKG_VERSION")));
    if target.tls {
        builder = builder.tls_backend_preconfigured((*remote::tls_config()?).clone());
    }
    let host = target.url.host_str().unwrap_or_default();
    if remote::is_loopback(host) {
        builder = builder.no_proxy();
    }
    let client = builder
        .build()
        .map_err(|e| format!("cannot set up HTTP: {e}"))?;
    let http = Http {
        client,
        target: target.clone(),
        session: None,
    };
    let (response, session) = tokio::time::timeout(CONNECT_TIMEOUT, http.open(None))
        .await
        .map_err(|_| format!("no event stream within {CONNECT_TIMEOUT:?}"))?
        .map_err(|e| match e {
            Opened::Gone => "the server answered 404".to_owned(),
            Opened::Failed(why) => why,
        })?;
    tracing::info!(extension = %name, "event stream open");
    let http = Http {
        session: Some(session),
        ..http
    };
    let (connected, task) = wire::connection();
    tokio::spawn(run(http, response, task, Arc::clone(log), max_frame_bytes));
    Ok(connected)
}

struct Http {
    client: Client,
    target: Target,
    session: Option<HeaderValue>,
}

/// Why an event stream could not be opened.
enum Opened {
    /// `404`: the server does not know the session.
    Gone,
    Failed(String),
}

impl Http {
    fn request(&self, builder: RequestBuilder) -> RequestBuilder {
        let mut builder = builder;
        for (name, value) in &self.target.headers {
            builder = builder.header(name, value);
        }
        if let Some(session) = &self.session {
            builder = builder.header(SESSION_HEADER, session);
        }
        builder
    }

    /// `GET` the event stream, resuming after `last_id` when given.
    async fn open(
        &self,
        last_id: Option<&str>,
    ) -> Result<(reqwest::Response, HeaderValue), Opened> {
        let mut get = self.request(
            self.client
                .get(self.target.url.clone())
                .header(ACCEPT, "text/event-stream"),
        );
        if let Some(id) = last_id {
            get = get.header("Last-Event-ID", id);
        }
        let response = get
            .send()
            .await
            .map_err(|e| Opened::Failed(format!("cannot open the event stream: {e}")))?;
        match response.status() {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND if self.session.is_some() => return Err(Opened::Gone),
            status => {
                return Err(Opened::Failed(format!(
                    "the event stream was answered HTTP {status}"
                )));
            }
        }
        let session = match (response.headers().get(SESSION_HEADER), &self.session) {
            (Some(session), _) => session.clone(),
            (None, Some(known)) => known.clone(),
            (None, None) => {
                return Err(Opened::Failed(format!(
                    "the event stream's response has no {SESSION_HEADER} header"
                )));
            }
        };
        Ok((response, session))
    }

    /// `POST`s one host frame; returns the response when it carries frames.
    async fn post(&self, line: Vec<u8>) -> Result<Option<reqwest::Response>, String> {
        let post = self.request(
            self.client
                .post(self.target.url.clone())
                .header(CONTENT_TYPE, "application/json")
                .timeout(POST_TIMEOUT)
                .body(line),
        );
        let response = post.send().await.map_err(|e| format!("POST failed: {e}"))?;
        match response.status() {
            StatusCode::OK => Ok(Some(response)),
            StatusCode::ACCEPTED | StatusCode::NO_CONTENT => Ok(None),
            StatusCode::NOT_FOUND => Err("the server no longer knows the session (404)".to_owned()),
            status => Err(format!("a POST was answered HTTP {status}")),
        }
    }
}

/// Moves frames until the connection ends, then reports how.
async fn run(
    http: Http,
    response: reqwest::Response,
    task: Task,
    log: Arc<ExtLog>,
    max_frame_bytes: usize,
) {
    let Task {
        outbox,
        frames,
        mut side,
    } = task;
    let how = tokio::select! {
        how = read_events(&http, response, frames.clone(), &log, max_frame_bytes) => how,
        how = post_frames(&http, outbox, frames, max_frame_bytes) => how,
        () = side.close_requested() => "connection closed by zot".to_owned(),
    };
    side.end(how);
}

/// Reads the event stream, resuming it after a drop, until the server
/// forgets the session or stays away; returns why it ended.
async fn read_events(
    http: &Http,
    response: reqwest::Response,
    frames: mpsc::Sender<Result<Bytes, ReadError>>,
    log: &ExtLog,
    max_frame_bytes: usize,
) -> String {
    let mut response = response;
    let mut last_id: Option<String> = None;
    loop {
        let events =
            guarded(response.bytes_stream(), max_frame_bytes + EVENT_OVERHEAD).eventsource();
        futures_util::pin_mut!(events);
        let dropped = loop {
            match events.next().await {
                None => break "the event stream ended".to_owned(),
                Some(Ok(event)) => {
                    if !event.id.is_empty() {
                        last_id = Some(event.id);
                    }
                    if event.data.len() > max_frame_bytes {
                        let _ = frames.send(Err(ReadError::TooLong)).await;
                        return format!("an event over the {max_frame_bytes} byte limit");
                    }
                    if frames.send(Ok(Bytes::from(event.data))).await.is_err() {
                        return "connection closed by zot".to_owned();
                    }
                }
                Some(Err(EventStreamError::Transport(Guarded::TooLong))) => {
                    let _ = frames.send(Err(ReadError::TooLong)).await;
                    return format!("an event over the {max_frame_bytes} byte limit");
                }
                Some(Err(e)) => break format!("the event stream broke: {e}"),
            }
        };
        log.line(format_args!("{dropped}; resuming"));
        let mut attempt = 1;
        response = loop {
            tokio::time::sleep(remote::backoff(attempt)).await;
            match http.open(last_id.as_deref()).await {
                Ok((response, _)) => break response,
                Err(Opened::Gone) => {
                    return "the server no longer knows the session (404)".to_owned();
                }
                Err(Opened::Failed(why)) if attempt >= RESUME_ATTEMPTS => {
                    return format!("{dropped}, and resuming failed: {why}");
                }
                Err(Opened::Failed(why)) => {
                    log.line(format_args!("resuming the event stream failed: {why}"));
                    attempt += 1;
                }
            }
        };
        log.line("event stream resumed");
    }
}

/// POSTs each queued frame in order, one at a time; frames in a `200`
/// response go to the host like the stream's. Returns why it stopped.
async fn post_frames(
    http: &Http,
    outbox: Outbox,
    frames: mpsc::Sender<Result<Bytes, ReadError>>,
    max_frame_bytes: usize,
) -> String {
    let Outbox {
        queue: mut rx,
        mut abort,
    } = outbox;
    loop {
        let next = tokio::select! {
            biased;
            _ = abort.wait_for(|a| *a) => return "a request write blocked past its deadline".to_owned(),
            next = rx.recv() => next,
        };
        let (line, written) = match next {
            Some(Outgoing::Frame { line, written }) => (line, written),
            // The host closes through the endpoint once the shutdown is acknowledged.
            Some(Outgoing::Close) => continue,
            None => return "connection closed by zot".to_owned(),
        };
        tracing::debug!(frame = %preview(line.trim_ascii_end()), "frame out");
        let response = match http.post(line).await {
            Ok(response) => response,
            Err(why) => return why,
        };
        if let Some(written) = written {
            let _ = written.send(());
        }
        let Some(response) = response else { continue };
        let body = StreamReader::new(
            response
                .bytes_stream()
                .map(|chunk| chunk.map_err(std::io::Error::other)),
        );
        let mut reader = FrameReader::new(body, max_frame_bytes);
        while let Some(frame) = reader.next().await {
            let stop = frame.is_err();
            if frames.send(frame).await.is_err() {
                return "connection closed by zot".to_owned();
            }
            if stop {
                return "a POST response line over the frame size limit, or unreadable".to_owned();
            }
        }
    }
}

/// A byte stream error, or an event grown past the limit.
#[derive(Debug)]
enum Guarded {
    TooLong,
    Http(reqwest::Error),
}

impl std::fmt::Display for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLong => f.write_str("event too long"),
            Self::Http(e) => write!(f, "{e}"),
        }
    }
}

/// Passes `bytes` on while no event (the bytes between blank lines) grows
/// past `max`, so the event parser never buffers more than that.
fn guarded(
    bytes: impl Stream<Item = Result<Bytes, reqwest::Error>>,
    max: usize,
) -> impl Stream<Item = Result<Bytes, Guarded>> {
    let mut since_blank = 0usize;
    let mut at_line_start = true;
    bytes.map(move |chunk| {
        let chunk = chunk.map_err(Guarded::Http)?;
        for &b in chunk.iter() {
            match b {
                b'\n' if at_line_start => since_blank = 0,
                b'\n' => at_line_start = true,
                b'\r' => {}
                _ => {
                    at_line_start = false;
                    since_blank += 1;
                    if since_blank > max {
                        return Err(Guarded::TooLong);
                    }
                }
            }
        }
        Ok(chunk)
    })
}
