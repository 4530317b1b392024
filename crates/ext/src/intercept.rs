//! What interceptors see and decide: one input and one decision type per
//! interceptable event, mapped onto `event_intercept_response`.

use serde_json::Value;
use zot_protocol::zot::InterceptResponse;

/// The `before_agent_start` request: the complete system prompt, before the
/// first model call of a session or prompt rebuild.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeforeAgentStart {
    pub session_id: String,
    /// Identifies one preparation pass; shared by every extension in it.
    pub agent_run_id: String,
    pub cwd: String,
    pub provider: String,
    pub model: String,
    pub system_prompt: String,
}

/// A tool call the model made, before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as they are now (after earlier interceptors' rewrites).
    pub args: Value,
    /// The `task` call whose subagent made this call; `None` for the
    /// agent's own calls.
    pub parent_tool_call_id: Option<String>,
}

/// What happens to an intercepted tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallDecision {
    Allow,
    /// Refuse the call; the model sees the reason as the tool's error.
    Block(String),
    /// Run the tool with these arguments instead (must be a JSON object).
    Rewrite(Value),
}

/// Whether a turn may start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnDecision {
    Allow,
    /// Refuse the turn before the model is called; the user sees the reason.
    Block(String),
}

/// What happens to the assistant's final text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageDecision {
    Allow,
    /// Suppress the message.
    Block(String),
    /// Show this text instead; the transcript keeps what the model said.
    Replace(String),
}

impl ToolCallDecision {
    pub fn block(reason: impl Into<String>) -> Self {
        Self::Block(reason.into())
    }

    pub(crate) fn into_frame(self, id: String) -> InterceptResponse {
        match self {
            Self::Allow => allow(id),
            Self::Block(reason) => block(id, reason),
            Self::Rewrite(args) => InterceptResponse {
                modified_args: Some(args),
                ..allow(id)
            },
        }
    }
}

impl TurnDecision {
    pub fn block(reason: impl Into<String>) -> Self {
        Self::Block(reason.into())
    }

    pub(crate) fn into_frame(self, id: String) -> InterceptResponse {
        match self {
            Self::Allow => allow(id),
            Self::Block(reason) => block(id, reason),
        }
    }
}

impl MessageDecision {
    pub fn block(reason: impl Into<String>) -> Self {
        Self::Block(reason.into())
    }

    pub fn replace(text: impl Into<String>) -> Self {
        Self::Replace(text.into())
    }

    pub(crate) fn into_frame(self, id: String) -> InterceptResponse {
        match self {
            Self::Allow => allow(id),
            Self::Block(reason) => block(id, reason),
            Self::Replace(text) => InterceptResponse {
                replace_text: Some(text),
                ..allow(id)
            },
        }
    }
}

/// The bare reply every field of which means "allow, unchanged".
pub(crate) fn allow(id: String) -> InterceptResponse {
    InterceptResponse {
        id,
        ..InterceptResponse::default()
    }
}

fn block(id: String, reason: String) -> InterceptResponse {
    InterceptResponse {
        block: true,
        reason: Some(reason).filter(|r| !r.is_empty()),
        ..allow(id)
    }
}
