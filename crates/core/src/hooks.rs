//! The agent's hook points, as a trait the agent owns: lifecycle events
//! (session, prompt, turn, tool call, confirmation, message, compaction),
//! the intercepts (turn start, assistant message, tool call, tool result,
//! system prompt, compaction), tools that live outside the agent, and the
//! session facts extensions keep (entries, plan mode, session switches).
//! The extension host implements it in the binary; `NoHooks` is the agent alone.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::provider::StopReason;
use crate::tool::{BoxFuture, ToolOutput, ToolSpec};

/// What extensions decided before a compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactPlan {
    /// Summarise with the model; `instruction` is added to the summariser's.
    Proceed {
        instruction: Option<String>,
    },
    Block {
        reason: String,
    },
    /// Use this summary and keep the messages from `first_kept_index` on.
    Custom {
        summary: String,
        first_kept_index: usize,
    },
}

/// How a compaction went, for observers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactOutcome {
    pub did_compact: bool,
    pub summary: String,
    pub first_kept_index: usize,
    pub tokens_before: u64,
    pub message: String,
}

/// Lifecycle notifications: the agent awaits each, but observers cannot change anything.
#[derive(Debug, Clone, PartialEq)]
pub enum HookEvent {
    /// The first prompt of a session is about to run.
    SessionStart,
    /// A user prompt starts (once per prompt, however many model calls follow).
    PromptStart,
    /// A user prompt ended, on every exit path.
    PromptEnd {
        interrupted: bool,
    },
    /// One model call starts.
    TurnStart {
        step: u32,
    },
    TurnEnd {
        stop: StopReason,
        error: Option<String>,
    },
    ToolCall {
        id: String,
        name: String,
        args: Value,
    },
    ToolConfirmationRequested {
        id: String,
        name: String,
        preview: String,
    },
    AssistantMessage {
        text: String,
    },
    /// A compaction ran or failed.
    Compacted(CompactOutcome),
}

/// A turn_start decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnGate {
    Allow,
    Block { by: String, reason: String },
}

/// An assistant_message decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageGate {
    /// `Some(text)`: what the user sees instead.
    Allow {
        replace: Option<String>,
    },
    Block {
        by: String,
        reason: String,
    },
}

/// A tool_call decision.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolGate {
    /// `Some(args)`: run the tool with these instead.
    Allow {
        args: Option<Value>,
    },
    Block {
        by: String,
        reason: String,
    },
}

/// Why a session's first prompt is its first (for hooks that care).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionSource {
    /// A new conversation.
    Startup,
    /// A saved conversation was opened.
    Resume,
    /// The conversation was cleared.
    Clear,
    /// The conversation was compacted.
    Compact,
}

impl SessionSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Startup => "startup",
            Self::Resume => "resume",
            Self::Clear => "clear",
            Self::Compact => "compact",
        }
    }
}

/// A decision before a user prompt joins the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptGate {
    /// Go on; each `context` text goes before the prompt, for the model.
    Allow { context: Vec<String> },
    /// Drop the prompt; the user sees why.
    Block { by: String, reason: String },
}

/// What the hooks before the confirmation decided about a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Permission {
    /// Nothing: the usual confirmation rules apply.
    #[default]
    Default,
    /// Run it without asking the user.
    Allow,
    /// Ask the user even when no confirmation is due; where nobody can be
    /// asked, refuse with the reason.
    Ask(String),
    /// Refuse it with the reason.
    Deny(String),
}

/// The decision before the confirmation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PermissionGate {
    pub permission: Permission,
    /// `Some(args)`: go on with these instead.
    pub args: Option<Value>,
    /// `Some(reason)`: the prompt stops after this call's group of tools.
    pub halt: Option<String>,
    /// Text the model reads with the call's result, whether the call ran
    /// or was refused (a `PreToolUse` hook's `additionalContext`).
    pub context: Vec<String>,
}

pub trait Hooks: Send + Sync {
    /// Tells observers; returns once they have been told.
    fn event(&self, _event: HookEvent) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn turn_start(&self, _step: u32) -> BoxFuture<'_, TurnGate> {
        Box::pin(async { TurnGate::Allow })
    }

    fn assistant_message<'a>(&'a self, _text: &'a str) -> BoxFuture<'a, MessageGate> {
        Box::pin(async { MessageGate::Allow { replace: None } })
    }

    fn tool_call<'a>(
        &'a self,
        _id: &'a str,
        _name: &'a str,
        _args: &'a Value,
    ) -> BoxFuture<'a, ToolGate> {
        Box::pin(async { ToolGate::Allow { args: None } })
    }

    /// Before the confirmation of a tool call (and before the `tool_call`
    /// intercept): may allow it without asking, force the question, refuse
    /// it, rewrite its arguments, or stop the prompt after it.
    fn tool_permission<'a>(
        &'a self,
        _id: &'a str,
        _name: &'a str,
        _args: &'a Value,
    ) -> BoxFuture<'a, PermissionGate> {
        Box::pin(async { PermissionGate::default() })
    }

    /// Before a user prompt joins the conversation. `start` is set for the
    /// first prompt of a session, with why it is the first.
    fn prompt_submit<'a>(
        &'a self,
        _start: Option<SessionSource>,
        _prompt: &'a str,
    ) -> BoxFuture<'a, PromptGate> {
        Box::pin(async {
            PromptGate::Allow {
                context: Vec::new(),
            }
        })
    }

    /// The agent is about to end its answer; `Some(instruction)` makes it
    /// go on with that as the next user message. `again` is true when the
    /// answer being ended already followed such an instruction.
    fn before_stop(&self, _again: bool) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }

    /// A subagent (the `task` call `_parent_tool_call_id`) would end its
    /// answer (`SubagentStop`); `Some(instruction)` sends it on, as
    /// [`before_stop`](Self::before_stop) does the agent.
    fn subagent_stop(&self, _again: bool) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }

    /// The hooks a subagent's tool calls go through: the same extensions,
    /// command hooks and permission scopes, each told the `task` call the
    /// subagent runs for. `None`: these hooks as they are.
    fn for_subagent(&self, _parent_tool_call_id: &str) -> Option<Arc<dyn Hooks>> {
        None
    }

    /// The session file the conversation is written to (`None`: none).
    fn session_file(&self, _path: Option<&Path>) {}

    /// The before_agent_start chain over the base prompt in `base` (which
    /// may be reset while it runs). `None` when cancelled.
    fn system_prompt<'a>(
        &'a self,
        _session_id: &'a str,
        base: &'a mut watch::Receiver<String>,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<String>> {
        let prompt = base.borrow().clone();
        Box::pin(async move { Some(prompt) })
    }

    /// Tools that live outside the agent (extension tools), as the model may see them now.
    fn tools(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    /// Runs one of `tools()`.
    fn call_tool<'a>(&'a self, name: &'a str, _args: Value) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { ToolOutput::error(format!("unknown tool \"{name}\"")) })
    }

    /// [`call_tool`](Self::call_tool) with a place for the tool's progress
    /// text, for tools whose protocol reports progress.
    fn call_tool_with_progress<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        _progress: crate::tool::Progress,
    ) -> BoxFuture<'a, ToolOutput> {
        self.call_tool(name, args)
    }

    /// A tool ran: interceptors may replace what the model and the session
    /// see. `args` are the arguments the tool ran with.
    fn tool_result<'a>(
        &'a self,
        _id: &'a str,
        _name: &'a str,
        _args: &'a Value,
        output: ToolOutput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { output })
    }

    /// Before a compaction: interceptors may block it, add to the
    /// summariser's instruction or supply a summary. `entries` is the
    /// conversation as JSON; `automatic` when the context filled up.
    fn before_compact<'a>(
        &'a self,
        _automatic: bool,
        _instruction: &'a str,
        _tokens_before: u64,
        _entries: Value,
    ) -> BoxFuture<'a, CompactPlan> {
        Box::pin(async { CompactPlan::Proceed { instruction: None } })
    }

    /// The conversation moves to another session: the old one ends for
    /// observers; `SessionStart` follows with the next prompt.
    fn session_changed<'a>(&'a self, _session_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// The conversation was cleared (`/clear`): for command hooks the
    /// session ends with reason `clear`; `SessionStart` (source `clear`)
    /// follows with the next prompt.
    fn cleared(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Plan mode changed (only read-only tools are offered while it is on).
    fn set_plan(&self, _plan: bool) {}

    /// Whether something heard while the tools ran (a `PostToolUse` hook's
    /// `continue: false`) stops the prompt after this group of tools, and
    /// why; taking it clears it.
    fn take_halt(&self) -> Option<String> {
        None
    }

    /// Durable extension data to store in the session (never sent to the model).
    fn take_entries(&self) -> Vec<(String, Value)> {
        Vec::new()
    }
}

/// The agent without extensions.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoHooks;

impl Hooks for NoHooks {}
