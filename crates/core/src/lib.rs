//! The zot agent: providers, built-in tools, the agent loop with its hook
//! points, sessions. It knows extensions only through the [`hooks::Hooks`]
//! trait, so it is testable without subprocesses.

pub mod message;
pub mod provider;
pub mod tool;
pub mod tools;

pub use tokio_util::sync::CancellationToken;
