//! Write zot extensions in Rust. An extension is a program zot starts and
//! talks to in newline-delimited JSON over stdio; this crate speaks that
//! protocol so the program only registers what it offers:
//!
//! ```no_run
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use zot_ext::{Extension, NotifyLevel, Response, ToolCallDecision, ToolResult};
//!
//! /// Arguments of the `weather` tool; the model sees their JSON Schema.
//! #[derive(Deserialize, JsonSchema)]
//! struct Weather {
//!     /// City name, e.g. "Berlin".
//!     city: String,
//! }
//!
//! fn main() -> Result<(), zot_ext::Error> {
//!     Extension::new("demo", "1.0.0")
//!         .command("hello", "say hi", |_args, _host| Response::prompt("Greet me briefly."))
//!         .tool("weather", "Current weather for a city.", |args: Weather, _host| {
//!             ToolResult::text(format!("{}: sunny", args.city))
//!         })
//!         .intercept_tool_call(|call, _host| {
//!             let command = call.args["command"].as_str().unwrap_or_default();
//!             if call.name == "bash" && command.contains("rm -rf") {
//!                 ToolCallDecision::block("refused: rm -rf")
//!             } else {
//!                 ToolCallDecision::Allow
//!             }
//!         })
//!         .on("turn_end", |_event, host| host.notify(NotifyLevel::Info, "turn over"))
//!         .run()
//! }
//! ```
//!
//! The run loop sends `hello`, waits for `hello_ack`, runs the
//! [`on_hello`](Extension::on_hello) hooks, announces every registration,
//! subscribes to exactly the events and intercepts that have handlers,
//! sends `ready`, and then serves zot until stdin closes or zot sends
//! `shutdown`. stdout is the protocol: log with [`Host::log`] or stderr.
//!
//! With the `websocket` feature, [`WebSocketServer`] serves the same
//! extension over WebSocket, for zot to load by `url` (a remote extension).

mod error;
mod extension;
mod host;
mod intercept;
mod response;
mod runtime;
mod tool;
#[cfg(feature = "websocket")]
mod websocket;

pub use error::Error;
pub use extension::Extension;
pub use host::{Host, HostInfo};
pub use intercept::{
    BeforeAgentStart, MessageDecision, PendingToolCall, ToolCallDecision, TurnDecision,
};
pub use response::{Action, Panel, Response};
pub use runtime::{MAX_CONCURRENT_HANDLERS, MAX_HOST_FRAME_BYTES, SHUTDOWN_DRAIN};
pub use tool::{Content, ToolResult};
#[cfg(feature = "websocket")]
pub use websocket::{MAX_WEBSOCKET_MESSAGE_BYTES, WebSocketServer};
pub use zot_protocol::zot::{Event, Key, NotifyLevel, PanelKey};
pub use {schemars, serde_json};
