//! Integration tests of zot-core: real files, real processes, a loopback SSE server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
