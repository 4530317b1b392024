//! The framed stdio connection to one extension: a reader that enforces the
//! frame limit, one writer task that owns stdin (frames never interleave and
//! stay in order), and the table of requests waiting for a reply by id.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use serde::Serialize;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, FramedRead};
use zot_protocol::zot::{ExtFrame, to_line};

use crate::ext_log::ExtLog;
use std::sync::Arc;

/// Reads LF-delimited frames: a trailing CR is dropped, blank lines skipped.
pub(crate) struct FrameReader {
    inner: FramedRead<ChildStdout, AnyDelimiterCodec>,
}

#[derive(Debug)]
pub(crate) enum ReadError {
    TooLong,
    Io(std::io::Error),
}

impl FrameReader {
    pub(crate) fn new(stdout: ChildStdout, max_frame_bytes: usize) -> Self {
        let codec =
            AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), max_frame_bytes);
        Self {
            inner: FramedRead::new(stdout, codec),
        }
    }

    /// The next non-blank frame; `None` at end of stream. Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<Result<Bytes, ReadError>> {
        loop {
            let frame = match self.inner.next().await? {
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

enum Outgoing {
    Frame {
        line: Vec<u8>,
        written: Option<oneshot::Sender<()>>,
    },
    /// Close stdin once everything queued before it is written.
    Close,
}

/// A reply to a request, in the dialect of the extension that sent it.
#[derive(Debug)]
pub(crate) enum Reply {
    Zot(Box<ExtFrame>),
    Nimlet(Box<zot_protocol::nimlet::Response>),
}

type Outcome = Result<Reply, RequestError>;

/// The host's side of one extension's stdio.
pub(crate) struct Connection {
    queue: mpsc::UnboundedSender<Outgoing>,
    pending: Mutex<Pending>,
    /// Set to close stdin now, even in the middle of a blocked write.
    abort_input: watch::Sender<bool>,
}

#[derive(Default)]
struct Pending {
    waiting: HashMap<String, oneshot::Sender<Outcome>>,
    /// Once set, new requests fail at once with this reason.
    gone: Option<String>,
}

impl Connection {
    /// Starts the writer task for `stdin`.
    pub(crate) fn new(stdin: ChildStdin, log: Arc<ExtLog>) -> Self {
        let (queue, rx) = mpsc::unbounded_channel();
        let (abort_input, abort_rx) = watch::channel(false);
        tokio::spawn(write_loop(stdin, rx, abort_rx, log));
        Self {
            queue,
            pending: Mutex::new(Pending::default()),
            abort_input,
        }
    }

    /// Queues a one-way frame.
    pub(crate) fn send<T: Serialize>(&self, frame: &T) {
        if let Ok(line) = to_line(frame) {
            let _ = self.queue.send(Outgoing::Frame {
                line,
                written: None,
            });
        }
    }

    /// Closes stdin after everything queued so far has been written.
    pub(crate) fn close_input(&self) {
        let _ = self.queue.send(Outgoing::Close);
    }

    /// Sends a request and waits for the reply with the same id. The
    /// deadline covers the write too; a write still blocked at the deadline
    /// closes stdin so the writer is released (spec, "System prompt replacement").
    pub(crate) async fn request<T: Serialize>(
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
        let queued = Outgoing::Frame {
            line,
            written: Some(written_tx),
        };
        if self.queue.send(queued).is_err() {
            return Err(RequestError::Disconnected("input closed".to_owned()));
        }
        let Some(deadline) = deadline else {
            // No deadline of its own: the caller bounds the wait (nimlet's
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
    pub(crate) fn resolve(&self, id: &str, reply: Outcome) -> Option<Outcome> {
        match self.lock().waiting.remove(id) {
            Some(tx) => {
                let _ = tx.send(reply);
                None
            }
            None => Some(reply),
        }
    }

    pub(crate) fn is_waiting(&self, id: &str) -> bool {
        self.lock().waiting.contains_key(id)
    }

    /// Fails every pending request, and every later one, with `reason`.
    pub(crate) fn fail_all(&self, reason: &str) {
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

async fn write_loop(
    mut stdin: ChildStdin,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    mut abort: watch::Receiver<bool>,
    log: Arc<ExtLog>,
) {
    loop {
        let next = tokio::select! {
            biased;
            _ = abort.wait_for(|a| *a) => break,
            next = rx.recv() => next,
        };
        let Some(Outgoing::Frame { line, written }) = next else {
            break;
        };
        let result = tokio::select! {
            biased;
            _ = abort.wait_for(|a| *a) => {
                log.line("a request write blocked past its deadline; closing the extension's stdin");
                break;
            }
            result = stdin.write_all(&line) => result,
        };
        if let Err(e) = result {
            log.line(format_args!("write to extension failed: {e}"));
            break;
        }
        if let Some(written) = written {
            let _ = written.send(());
        }
    }
    // Dropping stdin closes the pipe: the extension reads EOF.
    drop(stdin);
}

/// Runs a closure when dropped.
struct OnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}
