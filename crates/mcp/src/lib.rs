//! MCP servers as extensions: their configuration (`config`), the adapter
//! that runs each one through the same host as zot and nimlet extensions
//! (stdio, Streamable HTTP, legacy HTTP+SSE), OAuth sign-in, and the
//! [`Ecosystem`](zot_extensions::Ecosystem) the binary installs
//! ([`install`]) so the host finds and runs them.

pub mod config;
pub mod ecosystem;
pub mod legacy_sse;
pub mod oauth;

pub(crate) mod adapter;
mod client;
mod content;
pub(crate) mod directory;
pub(crate) mod names;
pub(crate) mod remote;
mod shared;

pub use adapter::SUPPORTED_VERSIONS;
pub use client::PROTOCOL_VERSION;
pub use ecosystem::{KIND, MCP, McpServers, install};
pub use names::{LIST_RESOURCES, PREFIX as TOOL_PREFIX, READ_RESOURCE, qualified_name};
