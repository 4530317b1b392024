//! Integration tests of the Rust SDK: extensions built with it (the `probe`
//! example, and the repository's `hello` and `guard` examples) run as real
//! subprocesses of the real host, `zot-extensions`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
