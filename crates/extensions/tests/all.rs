//! Integration tests of the extension host, with real subprocess extensions
//! (python3 and sh scripts written into temp dirs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
