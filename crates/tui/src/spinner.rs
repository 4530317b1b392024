//! The busy spinner's frames, shared by the status line and a running
//! subagent's tool row.

/// One frame per tick, a braille dot turning.
pub(crate) const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];
