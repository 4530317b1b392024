//! A child's stdin written from the task that sends a frame: when no frame
//! waits before it and the pipe takes the whole frame without blocking
//! (a frame within the pipe's buffer, the extension reading), it is written
//! at once, sparing the hand-off to the writer task and back that each
//! tool call otherwise pays. Anything else (a full pipe, frames already
//! queued, a frame cut short) goes to the writer task as before, under the
//! same lock, so frames never interleave and keep their order. Imports
//! nothing of the transports, which build on it.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::net::unix::pipe;

/// The way in to one child, shared by its senders and its writer task.
pub(crate) struct Direct {
    /// The extension's name, for the log.
    name: String,
    state: Mutex<State>,
}

struct State {
    /// `None` once the writer task closed the way in: later frames only queue.
    pipe: Option<Arc<pipe::Sender>>,
    /// The writer task holds frames (or the rest of one) not yet written,
    /// or a close: a new frame must queue behind them.
    backlog: bool,
}

/// What became of a frame handed to [`Direct::send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    Written,
    Queued,
    /// The writer task is gone: the frame was dropped.
    Closed,
}

impl Direct {
    /// The shared way in, and the writer task's own handle on the pipe.
    pub(crate) fn new(name: &str, pipe: pipe::Sender) -> (Arc<Self>, Arc<pipe::Sender>) {
        let pipe = Arc::new(pipe);
        let direct = Arc::new(Self {
            name: name.to_owned(),
            state: Mutex::new(State {
                pipe: Some(Arc::clone(&pipe)),
                backlog: false,
            }),
        });
        (direct, pipe)
    }

    /// Writes `line` now if it can go whole without waiting; otherwise
    /// hands it (or what is left of it) to `queue`, the writer task's queue,
    /// which answers whether the task still takes frames.
    pub(crate) fn send(&self, mut line: Vec<u8>, queue: impl FnOnce(Vec<u8>) -> bool) -> Sent {
        let mut state = self.lock();
        if let (false, Some(pipe)) = (state.backlog, &state.pipe) {
            match pipe.try_write(&line) {
                Ok(n) if n == line.len() => {
                    tracing::debug!(extension = %self.name, frame = %zot_protocol::log_preview(&String::from_utf8_lossy(line.trim_ascii_end())), "frame out");
                    return Sent::Written;
                }
                Ok(n) => {
                    line.drain(..n);
                }
                // A full pipe waits in the writer task; a broken one is
                // logged there, where every write failure is.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => {}
            }
        }
        if queue(line) {
            state.backlog = true;
            Sent::Queued
        } else {
            Sent::Closed
        }
    }

    /// Queues something that must not be overtaken (a close) with `queue`;
    /// returns what `queue` returns.
    pub(crate) fn hold(&self, queue: impl FnOnce() -> bool) -> bool {
        let mut state = self.lock();
        state.backlog = true;
        queue()
    }

    /// The writer task wrote what it held: unless `more` says frames still
    /// wait in its queue, the next frame may be written at once again.
    pub(crate) fn caught_up(&self, more: impl FnOnce() -> bool) {
        let mut state = self.lock();
        if !more() {
            state.backlog = false;
        }
    }

    /// The writer task is done: the way in closes once its own handle goes.
    pub(crate) fn close(&self) {
        self.lock().pipe = None;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic mid-update leaves two plain fields; both stay usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
