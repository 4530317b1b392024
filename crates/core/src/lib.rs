//! The zot agent: providers, built-in tools, the agent loop with its hook
//! points, sessions, skills and the system prompt. It knows extensions only
//! through the [`hooks::Hooks`] trait, so it is testable without subprocesses.

pub mod agent;
pub mod checkpoint;
pub mod conversation;
pub mod event;
pub mod file_refs;
pub mod hooks;
pub mod image;
pub mod markdown_commands;
pub mod message;
pub mod models;
pub mod private_files;
pub mod prompt_files;
pub mod provider;
pub mod session;
pub mod skills;
pub mod system_prompt;
pub mod tool;
pub mod tools;

pub use agent::{Agent, AgentConfig, AgentError, Confirm, ToolFilter};
pub use event::AgentEvent;
pub use hooks::{HookEvent, Hooks, MessageGate, NoHooks, ToolGate, TurnGate};
pub use tokio_util::sync::CancellationToken;
