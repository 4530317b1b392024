//! MCP servers as extensions: their configuration (`config`), and the
//! adapter that runs each one through the same host as zot and nimlet
//! extensions.

pub mod config;
pub mod legacy_sse;
