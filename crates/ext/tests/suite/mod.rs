mod support;

mod commands;
mod events;
mod examples;
mod handshake;
mod intercepts;
mod stdio;
mod tools;
#[cfg(feature = "websocket")]
mod websocket;
