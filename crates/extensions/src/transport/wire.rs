//! The endpoint of a network connection (WebSocket or HTTP), as the host
//! supervises it: the transport's task reports how the connection ended,
//! and is told when to close. Stopping waits for the protocol's shutdown
//! acknowledgement (or the grace period), then closes.

use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tokio::time::Instant;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::{Connection, Endpoint, FrameReader, Outbox, ReadError, Shutdown};

/// After the host closes a connection, how long the transport may take to
/// finish the close (a WebSocket close handshake) before the end is
/// reported anyway. The host's own choice, like `stdio`'s `KILL_REAP`.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Frames read but not yet taken by the host; the transport reads no
/// further until there is room, so a fast server cannot grow memory. The
/// host's own choice.
const READ_AHEAD: usize = 16;

/// A connected remote extension: the endpoint the host supervises, the
/// connection its adapter talks over, and the frames it sends.
pub(crate) struct Connected {
    pub(crate) link: Link,
    pub(crate) conn: Connection,
    pub(crate) reader: FrameReader,
}

/// What a transport's task takes: the host's queued frames, where to put
/// the extension's frames, and its side of the link.
pub(crate) struct Task {
    pub(crate) outbox: Outbox,
    pub(crate) frames: mpsc::Sender<Result<Bytes, ReadError>>,
    pub(crate) side: TaskSide,
}

/// A new connection: the host's parts and the task's.
pub(crate) fn connection() -> (Connected, Task) {
    let (conn, outbox) = Connection::new();
    let (link, side) = pair(conn.shutdown_state());
    let (frames, rx) = mpsc::channel(READ_AHEAD);
    (
        Connected {
            link,
            conn,
            reader: FrameReader::from_frames(rx),
        },
        Task {
            outbox,
            frames,
            side,
        },
    )
}

/// The host's side of a connection's life.
pub(crate) struct Link {
    /// How the connection ended, once it has (set by the transport's task).
    pub(crate) ended: watch::Receiver<Option<String>>,
    /// Set to make the transport close now.
    pub(crate) close: watch::Sender<bool>,
    /// The protocol's shutdown on this connection.
    pub(crate) shutdown: watch::Receiver<Shutdown>,
}

/// The transport task's side.
pub(crate) struct TaskSide {
    pub(crate) ended: watch::Sender<Option<String>>,
    pub(crate) close: watch::Receiver<bool>,
}

impl TaskSide {
    /// Resolves once the host wants the connection closed (or the host's
    /// record is gone). Cancel-safe.
    pub(crate) async fn close_requested(&mut self) {
        let _ = self.close.wait_for(|close| *close).await;
    }

    /// Records how the connection ended (the first report counts).
    pub(crate) fn end(&self, how: impl Into<String>) {
        super::record_end(&self.ended, how);
    }
}

/// A link and the task's side of it; `shutdown` follows the connection's.
fn pair(shutdown: watch::Receiver<Shutdown>) -> (Link, TaskSide) {
    let (ended_tx, ended) = watch::channel(None);
    let (close, close_rx) = watch::channel(false);
    (
        Link {
            ended,
            close,
            shutdown,
        },
        TaskSide {
            ended: ended_tx,
            close: close_rx,
        },
    )
}

impl Link {
    async fn close_now(&self) -> Option<String> {
        self.close.send_replace(true);
        super::ended_by(&self.ended, Instant::now() + CLOSE_WAIT).await
    }

    /// Waits until the extension acknowledged the shutdown (when its
    /// protocol does), the connection ended, or `deadline`; then closes.
    async fn stop_after_ack(&self, deadline: Instant) -> Option<String> {
        let mut shutdown = self.shutdown.clone();
        let mut ended = self.ended.clone();
        let _ = tokio::time::timeout_at(deadline, async {
            tokio::select! {
                _ = shutdown.wait_for(|s| *s != Shutdown::Awaiting) => {}
                _ = ended.wait_for(Option::is_some) => {}
            }
        })
        .await;
        self.close_now().await
    }
}

impl Endpoint for Link {
    fn pid(&self) -> Option<i32> {
        None
    }

    fn exit(&self) -> Option<String> {
        self.ended.borrow().clone()
    }

    fn wait_until(&self, deadline: Instant) -> BoxFuture<'_, Option<String>> {
        super::ended_by(&self.ended, deadline).boxed()
    }

    fn kill(&self) -> BoxFuture<'_, Option<String>> {
        self.close_now().boxed()
    }

    /// A connection has no signals: `term_grace` is unused; the close
    /// itself is bounded by [`CLOSE_WAIT`].
    fn stop(&self, deadline: Instant, _term_grace: Duration) -> BoxFuture<'_, Option<String>> {
        self.stop_after_ack(deadline).boxed()
    }

    fn kill_now(&self) {
        self.close.send_replace(true);
    }
}

impl Drop for Link {
    /// A record dropped while connected still closes the connection.
    fn drop(&mut self) {
        self.close.send_replace(true);
    }
}
