//! TUI tests: app behaviour driven directly, and snapshots of the rendered
//! screen (ratatui TestBackend) for each state.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
