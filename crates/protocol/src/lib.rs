//! Wire types for zot's extension protocols. serde only, no I/O: the host
//! (`zot-extensions`), the SDKs and the tests all share these definitions.
//! Their JSON Schema (`schema`) is the language-neutral contract.
//!
//! Each protocol dialect lives in its own module; `zot` is the native one.

pub mod events;
pub mod nimlet;
pub mod rpc;
pub mod schema;
pub mod ui;
pub mod zot;

pub use schema::schemas;

/// The protocol version the host announces in `hello_ack` (spec, "hello_ack").
pub const PROTOCOL_VERSION: u32 = 1;
