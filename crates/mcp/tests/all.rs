//! Integration tests of the MCP ecosystem: its transports and sign-in
//! against real servers (the reference server, loopback ones), and what
//! trust pins for it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
