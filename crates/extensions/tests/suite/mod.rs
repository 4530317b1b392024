mod support;

mod commands_tools;
mod discovery;
mod events;
mod frames;
mod handshake;
mod intercepts;
mod lifecycle;
mod manifest;
mod mcp_legacy_sse;
mod mcp_oauth;
mod nimlet;
mod prompt;
mod registration;
mod remote;
mod spawn;
