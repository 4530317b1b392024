//! MCP servers as extensions: their configuration (`config`), and the
//! adapter that runs each one through the same host as zot and nimlet
//! extensions.

pub mod config;
pub mod legacy_sse;
pub mod oauth;

pub(crate) mod adapter;
pub(crate) mod remote;

pub use adapter::{
    LIST_RESOURCES, PROTOCOL_VERSION, READ_RESOURCE, SUPPORTED_VERSIONS, qualified_name,
};
