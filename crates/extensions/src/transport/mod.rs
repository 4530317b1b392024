//! Transports: how frames travel between the host and one extension,
//! whatever protocol they carry. This module holds what every transport
//! shares: the frame reader (limit enforced while reading), the outgoing
//! queue (frames never interleave and stay in order), the table of requests
//! waiting for a reply by id, and the [`Endpoint`] the host stops. Each
//! transport is a module of its own: `stdio` (a child process), `remote`
//! (a network session its adapter owns, like an ecosystem's server over HTTP), `ws`
//! (WebSocket) and `http` (an event stream and POSTs) for zot and nimlet
//! extensions served remotely; `wire` is the endpoint those two share;
//! `direct` lets a child's stdin be written by the task that sends a frame.

pub(crate) mod direct;
pub(crate) mod http;
pub mod remote;
pub(crate) mod stdio;

pub use stdio::Confinement;
pub(crate) mod wire;
pub(crate) mod ws;

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use serde::Serialize;
use tokio::io::AsyncRead;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, FramedRead};
use zot_protocol::zot::to_line;

use crate::ext_log::ExtLog;
use direct::{Direct, Sent};

/// What one extension is reached through: its name, its log, and the
/// connection its adapter sends frames and requests over.
pub struct Peer {
    pub name: String,
    pub log: Arc<ExtLog>,
    pub conn: Connection,
}

/// The far end of a transport, as the host supervises it: a process, or a
/// network connection. Exit descriptions read `exit status: 3` or
/// `signal: 9 (SIGKILL)` for a process, `connection closed: …` for a connection.
pub trait Endpoint: Send + Sync {
    /// The process id (the process group leader); `None` for a connection.
    fn pid(&self) -> Option<i32>;
    /// How it ended, once it has.
    fn exit(&self) -> Option<String>;
    /// Waits until `deadline` for it to end by itself.
    fn wait_until(&self, deadline: Instant) -> BoxFuture<'_, Option<String>>;
    /// Ends it at once and waits briefly for the end to be seen.
    fn kill(&self) -> BoxFuture<'_, Option<String>>;
    /// After the protocol's shutdown request: waits until `deadline`, then escalates.
    fn stop(&self, deadline: Instant, term_grace: Duration) -> BoxFuture<'_, Option<String>>;
    /// Ends it at once without waiting (the host is being dropped).
    fn kill_now(&self);
}

/// Records how a network connection ended: the first report counts (a
/// transport's task and the host may both see the end).
pub fn record_end(ended: &watch::Sender<Option<String>>, how: impl Into<String>) {
    let how = how.into();
    ended.send_if_modified(|slot| {
        let first = slot.is_none();
        if first {
            *slot = Some(how);
        }
        first
    });
}

/// How a network connection ended, waiting for the end until `deadline`
/// (`None`: still open then).
pub async fn ended_by(
    ended: &watch::Receiver<Option<String>>,
    deadline: Instant,
) -> Option<String> {
    let mut waiting = ended.clone();
    match tokio::time::timeout_at(deadline, waiting.wait_for(Option::is_some)).await {
        Ok(Ok(how)) => how.clone(),
        _ => ended.borrow().clone(),
    }
}

/// A frame for a debug log line (bounded, lossy for invalid UTF-8).
pub fn preview(frame: &[u8]) -> String {
    zot_protocol::log_preview(&String::from_utf8_lossy(frame))
}

/// `exit status: 3`, or that it is still running.
pub fn describe(exit: Option<&str>) -> String {
    exit.unwrap_or("still running").to_owned()
}

/// Reads frames: LF-delimited from a byte stream (a trailing CR is dropped,
/// blank lines skipped), or whole frames a message transport hands over.
pub struct FrameReader {
    inner: Source,
}

enum Source {
    Lines(FramedRead<Box<dyn AsyncRead + Send + Unpin>, AnyDelimiterCodec>),
    Frames(mpsc::Receiver<Result<Bytes, ReadError>>),
}

#[derive(Debug)]
pub enum ReadError {
    TooLong,
    Io(std::io::Error),
}

impl FrameReader {
    pub fn new(input: impl AsyncRead + Send + Unpin + 'static, max_frame_bytes: usize) -> Self {
        let codec =
            AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), max_frame_bytes);
        Self {
            inner: Source::Lines(FramedRead::new(Box::new(input), codec)),
        }
    }

    /// Frames a message transport's task sends; the end of the stream is
    /// when that task drops its sender.
    pub fn from_frames(frames: mpsc::Receiver<Result<Bytes, ReadError>>) -> Self {
        Self {
            inner: Source::Frames(frames),
        }
    }

    /// The next non-blank frame; `None` at end of stream. Cancel-safe.
    pub async fn next(&mut self) -> Option<Result<Bytes, ReadError>> {
        let lines = match &mut self.inner {
            Source::Lines(lines) => lines,
            Source::Frames(frames) => loop {
                match frames.recv().await? {
                    Ok(frame) if frame.iter().all(u8::is_ascii_whitespace) => continue,
                    other => return Some(other),
                }
            },
        };
        loop {
            let frame = match lines.next().await? {
                Ok(frame) => frame,
                Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => {
                    return Some(Err(ReadError::TooLong));
                }
                Err(AnyDelimiterCodecError::Io(e)) => return Some(Err(ReadError::Io(e))),
            };
            let frame = match frame.last() {
                Some(b'\r') => frame.slice(..frame.len() - 1),
                _ => frame,
            };
            if !frame.iter().all(u8::is_ascii_whitespace) {
                return Some(Ok(frame));
            }
        }
    }
}

/// Why a request got no usable reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    #[error("extension disconnected ({0})")]
    Disconnected(String),
    #[error("malformed reply: {0}")]
    Malformed(String),
}

pub enum Outgoing {
    Frame {
        line: Vec<u8>,
        written: Option<oneshot::Sender<()>>,
    },
    /// Close the way out once everything queued before it is written.
    Close,
}

/// A reply to a request: the frame the adapter parsed, which only that
/// adapter knows the type of (it downcasts its own frames).
pub type Reply = Box<dyn Any + Send>;

type Outcome = Result<Reply, RequestError>;

/// What a transport's writer task consumes: queued frames, and the signal
/// to give up at once (a write blocked past a request's deadline).
pub struct Outbox {
    pub queue: mpsc::UnboundedReceiver<Outgoing>,
    pub abort: watch::Receiver<bool>,
}

/// Queues one-way frames on a connection; cheap to clone.
#[derive(Clone)]
pub struct Sender(Out);

impl Sender {
    pub fn send<T: Serialize>(&self, frame: &T) {
        let _ = self.try_send(frame);
    }

    /// Queues a frame; `false` when it cannot be encoded or the way out is closed.
    pub fn try_send<T: Serialize>(&self, frame: &T) -> bool {
        let Ok(line) = to_line(frame) else {
            return false;
        };
        self.0.push(line, None)
    }
}

/// The way out of a connection: the writer task's queue, and for a child's
/// stdin the shared pipe a frame may be written to at once.
#[derive(Clone)]
struct Out {
    queue: mpsc::UnboundedSender<Outgoing>,
    direct: Option<Arc<Direct>>,
}

impl Out {
    /// Writes or queues one frame; `written` hears when it is written.
    /// `false` when the way out is closed.
    fn push(&self, line: Vec<u8>, written: Option<oneshot::Sender<()>>) -> bool {
        let Some(direct) = &self.direct else {
            return self.queue.send(Outgoing::Frame { line, written }).is_ok();
        };
        let mut written = written;
        let sent = direct.send(line, |line| {
            let written = written.take();
            self.queue.send(Outgoing::Frame { line, written }).is_ok()
        });
        match sent {
            Sent::Written => {
                if let Some(written) = written {
                    let _ = written.send(());
                }
                true
            }
            Sent::Queued => true,
            Sent::Closed => false,
        }
    }

    /// Queues the close behind every frame sent before it.
    fn close(&self) {
        let close = || self.queue.send(Outgoing::Close).is_ok();
        let _ = match &self.direct {
            Some(direct) => direct.hold(close),
            None => close(),
        };
    }
}

/// The host's side of one extension's connection, whatever the transport.
pub struct Connection {
    queue: Out,
    pending: Mutex<Pending>,
    /// Set to close stdin now, even in the middle of a blocked write.
    abort_input: watch::Sender<bool>,
    /// Where the protocol's shutdown stands, for transports that close the
    /// connection themselves once it is acknowledged.
    shutdown: watch::Sender<Shutdown>,
}

/// Where a protocol's shutdown stands on one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Not asked, or asked of a protocol that does not acknowledge it.
    NotAwaited,
    /// Asked; the extension is expected to acknowledge.
    Awaiting,
    Acknowledged,
}

#[derive(Default)]
struct Pending {
    waiting: HashMap<String, oneshot::Sender<Outcome>>,
    /// Once set, new requests fail at once with this reason.
    gone: Option<String>,
}

impl Connection {
    /// A connection and the outbox its transport's writer task drains.
    pub fn new() -> (Self, Outbox) {
        Self::with_direct(None)
    }

    /// [`new`](Self::new), with frames written straight into `direct`
    /// whenever nothing waits in the outbox before them.
    pub(crate) fn with_direct(direct: Option<Arc<Direct>>) -> (Self, Outbox) {
        let (queue, rx) = mpsc::unbounded_channel();
        let (abort_input, abort_rx) = watch::channel(false);
        let conn = Self {
            queue: Out { queue, direct },
            pending: Mutex::new(Pending::default()),
            abort_input,
            shutdown: watch::channel(Shutdown::NotAwaited).0,
        };
        (
            conn,
            Outbox {
                queue: rx,
                abort: abort_rx,
            },
        )
    }

    /// Queues a one-way frame.
    pub fn send<T: Serialize>(&self, frame: &T) {
        self.sender().send(frame);
    }

    /// A handle that only queues one-way frames, for answers given later
    /// (a question the user answers after the adapter has returned).
    pub fn sender(&self) -> Sender {
        Sender(self.queue.clone())
    }

    /// Closes the way out (stdin) after everything queued so far has been written.
    pub fn close_input(&self) {
        self.queue.close();
    }

    /// The protocol asked for a shutdown that the extension acknowledges.
    pub fn expect_shutdown_ack(&self) {
        self.shutdown.send_replace(Shutdown::Awaiting);
    }

    /// The extension acknowledged the shutdown.
    pub fn shutdown_acknowledged(&self) {
        self.shutdown.send_replace(Shutdown::Acknowledged);
    }

    /// Follows where the shutdown stands.
    pub fn shutdown_state(&self) -> watch::Receiver<Shutdown> {
        self.shutdown.subscribe()
    }

    /// Sends a request and waits for the reply with the same id. The
    /// deadline covers the write too; a write still blocked at the deadline
    /// closes stdin so the writer is released (spec, "System prompt replacement").
    pub async fn request<T: Serialize>(
        &self,
        id: &str,
        frame: &T,
        deadline: Option<Duration>,
    ) -> Outcome {
        let line = to_line(frame).map_err(|e| RequestError::Malformed(e.to_string()))?;
        let (reply_tx, reply_rx) = oneshot::channel();
        {
            let mut pending = self.lock();
            if let Some(reason) = &pending.gone {
                return Err(RequestError::Disconnected(reason.clone()));
            }
            pending.waiting.insert(id.to_owned(), reply_tx);
        }
        // Forgets the request however this future ends (reply, error, or the
        // caller dropping it mid-wait), so no entry outlives its caller.
        let _forget = OnDrop(|| {
            self.lock().waiting.remove(id);
        });
        let (written_tx, mut written_rx) = oneshot::channel();
        if !self.queue.push(line, Some(written_tx)) {
            return Err(RequestError::Disconnected("input closed".to_owned()));
        }
        let Some(deadline) = deadline else {
            // No deadline of its own: the caller bounds the wait (an adapter's
            // question-aware timeout, or none at all).
            return reply_rx.await.unwrap_or_else(|_| {
                Err(RequestError::Disconnected(
                    "reply channel dropped".to_owned(),
                ))
            });
        };
        match tokio::time::timeout(deadline, reply_rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(RequestError::Disconnected(
                "reply channel dropped".to_owned(),
            )),
            Err(_) => {
                if written_rx.try_recv().is_err() {
                    let _ = self.abort_input.send(true);
                }
                Err(RequestError::Timeout(deadline))
            }
        }
    }

    /// Hands a reply to the request waiting for `id`. Returns the frame back
    /// when nobody waits (unknown or expired id).
    pub fn resolve(&self, id: &str, reply: Outcome) -> Option<Outcome> {
        // The lock is let go before the send: the woken request takes it
        // at once to forget its id, and would otherwise sleep on it.
        let waiting = self.lock().waiting.remove(id);
        match waiting {
            Some(tx) => {
                let _ = tx.send(reply);
                None
            }
            None => Some(reply),
        }
    }

    pub fn is_waiting(&self, id: &str) -> bool {
        self.lock().waiting.contains_key(id)
    }

    /// Fails every pending request, and every later one, with `reason`.
    pub fn fail_all(&self, reason: &str) {
        let waiting = {
            let mut pending = self.lock();
            pending.gone = Some(reason.to_owned());
            std::mem::take(&mut pending.waiting)
        };
        for (_, tx) in waiting {
            let _ = tx.send(Err(RequestError::Disconnected(reason.to_owned())));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // A poisoned lock only means another thread panicked mid-update of a
        // plain map; the map itself is still usable.
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Runs a closure when dropped.
struct OnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Every frame the reader yields for `input`, or where it stopped.
    fn frames(input: Vec<u8>, max: usize) -> (Vec<Vec<u8>>, Option<String>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut reader = FrameReader::new(std::io::Cursor::new(input), max);
            let mut out = Vec::new();
            loop {
                match reader.next().await {
                    Some(Ok(frame)) => out.push(frame.to_vec()),
                    Some(Err(ReadError::TooLong)) => return (out, Some("too long".into())),
                    Some(Err(ReadError::Io(e))) => return (out, Some(e.to_string())),
                    None => return (out, None),
                }
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any bytes: no panic; frames are the non-blank lines, never over
        /// the limit, and a line over the limit ends the stream with TooLong.
        #[test]
        fn the_frame_reader_splits_any_input_within_its_limit(
            input in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b' '), any::<u8>()], 0..600),
            max in 1usize..64,
        ) {
            let (got, stopped) = frames(input.clone(), max);
            let mut want = Vec::new();
            let mut over = false;
            let lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
            let last = lines.len() - 1;
            for (i, line) in lines.into_iter().enumerate() {
                let complete = i < last;
                if line.len() > max {
                    over = true;
                    break;
                }
                if !complete && line.is_empty() {
                    break;
                }
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if !line.iter().all(u8::is_ascii_whitespace) {
                    want.push(line.to_vec());
                }
            }
            for frame in &got {
                prop_assert!(frame.len() <= max);
            }
            if over {
                prop_assert_eq!(stopped.as_deref(), Some("too long"));
                prop_assert!(got.len() <= want.len() + 1);
            } else {
                prop_assert_eq!(stopped, None);
                prop_assert_eq!(got, want);
            }
        }
    }
}
