//! Serving an extension over WebSocket (cargo feature `websocket`), for a
//! remote extension zot loads by `url`: one frame per text message, the
//! same run loop as over stdio. One session at a time: a second zot
//! connecting while one is served waits in the listen backlog until the
//! first session ends.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex, PoisonError};

use tungstenite::protocol::{Role, WebSocketConfig};
use tungstenite::{Message, WebSocket};
use zot_protocol::zot::HostFrame;

use crate::error::Error;
use crate::extension::Extension;
use crate::host::Host;
use crate::runtime::{FrameSource, MAX_HOST_FRAME_BYTES, parse_frame};

/// Largest message accepted from zot: the same bound as a host frame over
/// stdio ([`MAX_HOST_FRAME_BYTES`]); a longer one ends the session.
pub const MAX_WEBSOCKET_MESSAGE_BYTES: usize = MAX_HOST_FRAME_BYTES;

/// Serves extensions over WebSocket on a bound TCP listener.
#[derive(Debug)]
pub struct WebSocketServer {
    listener: TcpListener,
}

impl WebSocketServer {
    /// Listens on `addr` (e.g. `127.0.0.1:7878`; port 0 picks a free one,
    /// see [`local_addr`](Self::local_addr)). Any path in zot's `url` is accepted.
    pub fn bind(addr: impl ToSocketAddrs) -> Result<Self, Error> {
        let listener = TcpListener::bind(addr).map_err(Error::Listen)?;
        Ok(Self { listener })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        self.listener.local_addr().map_err(Error::Listen)
    }

    /// Serves sessions one after another, forever: `build` makes a fresh
    /// extension for each connection (zot reconnects after a drop and
    /// says hello again). A failed session is logged and the next accepted.
    pub fn serve(&self, mut build: impl FnMut() -> Extension) -> Result<(), Error> {
        loop {
            let ext = build();
            let name = ext.name.clone();
            if let Err(e) = self.serve_one(ext) {
                crate::host::log(&name, format_args!("session ended: {e}"));
            }
        }
    }

    /// Accepts one WebSocket connection and runs `ext` over it until zot
    /// sends `shutdown` or the connection closes. Connections whose
    /// handshake fails are logged and skipped.
    pub fn serve_one(&self, ext: Extension) -> Result<(), Error> {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_WEBSOCKET_MESSAGE_BYTES))
            .max_frame_size(Some(MAX_WEBSOCKET_MESSAGE_BYTES));
        let (socket, write_half) = loop {
            let (tcp, peer) = self.listener.accept().map_err(Error::Listen)?;
            // Frames are small and latency matters more than batching.
            let _ = tcp.set_nodelay(true);
            let lock = Arc::new(Mutex::new(()));
            let (read_side, write_side) = match (tcp.try_clone(), tcp) {
                (Ok(clone), tcp) => (
                    Locked::new(tcp, Arc::clone(&lock)),
                    Locked::new(clone, lock),
                ),
                (Err(e), _) => return Err(Error::Listen(e)),
            };
            match tungstenite::accept_with_config(read_side, Some(config)) {
                Ok(socket) => break (socket, write_side),
                Err(e) => crate::host::log(
                    &ext.name,
                    format_args!("WebSocket handshake with {peer} failed: {e}"),
                ),
            }
        };
        let writer = WebSocket::from_raw_socket(write_half, Role::Server, Some(config));
        let out = Outgoing {
            socket: writer,
            line: Vec::new(),
        };
        let source = Incoming { socket };
        crate::runtime::run(ext, source, Box::new(out))
    }
}

/// A TCP stream shared by the reading and the writing WebSocket: writes
/// are buffered and go out whole on `flush`, under one lock, so a pong the
/// reader sends never lands inside a frame the writer sends.
struct Locked {
    tcp: TcpStream,
    pending: Vec<u8>,
    lock: Arc<Mutex<()>>,
}

impl Locked {
    fn new(tcp: TcpStream, lock: Arc<Mutex<()>>) -> Self {
        Self {
            tcp,
            pending: Vec::new(),
            lock,
        }
    }
}

impl Read for Locked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.tcp.read(buf)
    }
}

impl Write for Locked {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.tcp.write_all(&self.pending)?;
            self.pending.clear();
        }
        self.tcp.flush()
    }
}

/// Host frames, one per text message; pings are answered by tungstenite
/// (the pong goes out before the next read), binary messages are logged
/// and skipped.
struct Incoming {
    socket: WebSocket<Locked>,
}

impl FrameSource for Incoming {
    fn next_frame(&mut self, host: &Host) -> Result<Option<HostFrame>, Error> {
        loop {
            let message = match self.socket.read() {
                Ok(message) => message,
                Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                    return Ok(None);
                }
                Err(e) => return Err(Error::Read(io_error(e))),
            };
            match message {
                Message::Text(text) => {
                    if let Some(frame) = parse_frame(text.as_bytes(), host) {
                        return Ok(Some(frame));
                    }
                }
                Message::Binary(_) => host.log("skipped a binary message from zot"),
                // The close reply is queued by tungstenite; the next read
                // sends it and reports the end.
                Message::Close(_) | Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
            }
        }
    }
}

/// The writer the run loop gets: it writes whole LF-terminated frames
/// (JSON never holds a raw newline), each sent as one text message.
struct Outgoing {
    socket: WebSocket<Locked>,
    line: Vec<u8>,
}

impl Write for Outgoing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.line.extend_from_slice(buf);
        while let Some(at) = self.line.iter().position(|b| *b == b'\n') {
            let frame: Vec<u8> = self.line.drain(..=at).collect();
            let text = String::from_utf8(frame[..at].to_vec()).map_err(io::Error::other)?;
            self.socket.write(Message::text(text)).map_err(io_error)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.socket.flush().map_err(io_error)
    }
}

impl Drop for Outgoing {
    /// Ends the session with close code 1000 (normal), as zot does.
    fn drop(&mut self) {
        let _ = self.socket.close(None);
        let _ = self.socket.flush();
    }
}

/// tungstenite's error as the I/O error the run loop reports.
fn io_error(e: tungstenite::Error) -> io::Error {
    match e {
        tungstenite::Error::Io(e) => e,
        e => io::Error::other(e),
    }
}
