//! End-to-end tests of the `zot` binary against temp `$ZOT_HOME` and project
//! directories, with real script extensions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
