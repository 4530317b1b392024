//! The remote transport: an extension reached over the network (an
//! ecosystem's server over HTTP) rather than run as a child. Its adapter owns the
//! connection; the host supervises it like a process through [`Remote`],
//! and reads its end from a frame stream that closes when the session does,
//! so a dropped server is reported once like an exited process.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::io::DuplexStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Endpoint, FrameReader};

/// How long a cancelled session may take to close (its HTTP `DELETE`)
/// before the host stops waiting: the protocols give no figure, and a
/// server that does not answer must not hold up zot's exit.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// The host's side: what it reads (never a frame; the end of the stream
/// means the session ended) and the endpoint it stops.
pub struct RemoteSession {
    pub reader: FrameReader,
    pub endpoint: Remote,
}

/// The adapter's side: cancelled when the host stops the session, and
/// [`RemoteHandle::ended`] once the adapter's session is over.
pub struct RemoteHandle {
    /// The adapter stops its session when this is cancelled.
    pub cancel: CancellationToken,
    ended: watch::Sender<Option<String>>,
    writer: Mutex<Option<DuplexStream>>,
}

impl RemoteHandle {
    /// The session is over (`why` is how, for reports): the host sees its end.
    pub fn ended(&self, why: &str) {
        super::record_end(&self.ended, why);
        self.writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

/// A remote session as the host supervises it.
pub struct Remote {
    cancel: CancellationToken,
    ended: watch::Receiver<Option<String>>,
}

/// A connected pair: the host's session and the adapter's handle.
pub fn pair() -> (RemoteSession, RemoteHandle) {
    let (reader_half, writer_half) = tokio::io::duplex(64);
    let cancel = CancellationToken::new();
    let (ended_tx, ended_rx) = watch::channel(None);
    let session = RemoteSession {
        // Nothing is ever written: only the end of the stream is read.
        reader: FrameReader::new(reader_half, 1),
        endpoint: Remote {
            cancel: cancel.clone(),
            ended: ended_rx,
        },
    };
    let handle = RemoteHandle {
        cancel,
        ended: ended_tx,
        writer: Mutex::new(Some(writer_half)),
    };
    (session, handle)
}

impl Endpoint for Remote {
    /// No process.
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
        self.cancel.cancel();
        super::ended_by(&self.ended, Instant::now() + CLOSE_GRACE).boxed()
    }

    fn stop(&self, deadline: Instant, _term_grace: Duration) -> BoxFuture<'_, Option<String>> {
        async move {
            // The adapter's shutdown already asked the session to close.
            match super::ended_by(&self.ended, deadline).await {
                Some(why) => Some(why),
                None => {
                    self.cancel.cancel();
                    super::ended_by(&self.ended, Instant::now() + CLOSE_GRACE).await
                }
            }
        }
        .boxed()
    }

    fn kill_now(&self) {
        self.cancel.cancel();
    }
}
