mod support;

mod commands_tools;
mod discovery;
mod events;
mod frames;
mod handshake;
mod intercepts;
mod lifecycle;
mod manifest;
mod nimlet;
mod prompt;
mod registration;
mod remote;
mod spawn;
