//! Why [`Extension::run`](crate::Extension::run) stopped early: the seam
//! between the SDK and the program that embeds it.

use std::io;

/// An error that ends [`Extension::run`](crate::Extension::run).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading from the host failed: {0}")]
    Read(#[source] io::Error),
    #[error("writing to the host failed: {0}")]
    Write(#[source] io::Error),
    #[error("the host closed the connection before hello_ack")]
    NoHelloAck,
    #[error("cannot subscribe to unknown event \"{name}\" (known: {})", zot_protocol::zot::Event::NAMES.join(", "))]
    UnknownEvent { name: String },
    #[error(
        "tool \"{name}\": its argument schema must be a JSON object with \"type\": \"object\" ({problem})"
    )]
    ToolSchema { name: String, problem: String },
    #[cfg(feature = "websocket")]
    #[error("cannot serve over WebSocket: {0}")]
    Listen(#[source] io::Error),
}
