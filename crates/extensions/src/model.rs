//! The one extension model every protocol adapter maps onto: hook points
//! and what the host says at them, interceptors' verdicts, registrations,
//! and UI effects. The host, the registry and the dispatcher work only with
//! these types; which protocol an extension speaks stays in its adapter.

use serde_json::Value;
use zot_protocol::ui::{CommandInfo, QuestionReply};
use zot_protocol::zot::{NotifyLevel, PanelRender};

/// A point in the agent's run where extensions may observe or intercept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookPoint {
    /// The first prompt of a session is about to run.
    SessionStart,
    /// The session ends (a switch to another, or exit).
    SessionEnd,
    /// A user prompt starts (once per prompt, however many model calls follow).
    PromptStart,
    /// A user prompt ended: finished, failed or interrupted.
    PromptEnd,
    /// The system prompt is prepared before the first model call after a reset.
    BeforeAgentStart,
    /// One model call (a step of a prompt) starts.
    TurnStart,
    /// One model call ended.
    TurnEnd,
    /// A tool call is about to be confirmed (or run, when no confirmation
    /// is due): it may be approved, put to the user, denied or rewritten.
    ToolPermission,
    /// The model asked for a tool call.
    ToolCall,
    /// The user is asked to confirm a tool call.
    ToolConfirmation,
    /// A tool ran; its output may be rewritten before the model sees it.
    ToolResult,
    /// The model's text is about to be shown.
    AssistantMessage,
    /// Older messages are about to be summarised.
    BeforeCompact,
    /// A user prompt is about to join the conversation (for the first
    /// prompt of a session, the session starts with it).
    PromptSubmit,
    /// The agent (or a subagent) is about to end its answer: it may be
    /// sent on with an instruction.
    Stop,
    /// The conversation was cleared (`/clear`).
    Cleared,
    /// A compaction ran or failed.
    AfterCompact,
}

/// How an extension takes part at a hook point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// Told what happened; its answer (if its protocol has one) changes nothing.
    Observe,
    /// Asked for a verdict that may block or rewrite.
    Intercept,
}

/// What the host tells observers at a hook point.
#[derive(Debug, Clone, PartialEq)]
pub enum Hook {
    SessionStart,
    SessionEnd {
        /// Why: `clear` (a switch to another session), `prompt_input_exit`
        /// (the user quit) or `other`.
        reason: String,
    },
    PromptStart,
    PromptEnd {
        interrupted: bool,
    },
    TurnStart {
        step: u32,
    },
    TurnEnd {
        stop: String,
        error: Option<String>,
    },
    ToolCall {
        id: String,
        name: String,
        args: Value,
        /// The `task` call whose subagent made this call (`None`: the agent's own).
        parent_tool_call_id: Option<String>,
    },
    ToolConfirmation {
        id: String,
        name: String,
        preview: String,
        /// The `task` call whose subagent made this call (`None`: the agent's own).
        parent_tool_call_id: Option<String>,
    },
    AssistantMessage {
        text: String,
    },
    AfterCompact(Compaction),
    /// The conversation was cleared; a new session may follow.
    Cleared,
}

impl Hook {
    pub fn point(&self) -> HookPoint {
        match self {
            Self::SessionStart => HookPoint::SessionStart,
            Self::SessionEnd { .. } => HookPoint::SessionEnd,
            Self::PromptStart => HookPoint::PromptStart,
            Self::PromptEnd { .. } => HookPoint::PromptEnd,
            Self::TurnStart { .. } => HookPoint::TurnStart,
            Self::TurnEnd { .. } => HookPoint::TurnEnd,
            Self::ToolCall { .. } => HookPoint::ToolCall,
            Self::ToolConfirmation { .. } => HookPoint::ToolConfirmation,
            Self::AssistantMessage { .. } => HookPoint::AssistantMessage,
            Self::AfterCompact(_) => HookPoint::AfterCompact,
            Self::Cleared => HookPoint::Cleared,
        }
    }
}

/// How a compaction went, for observers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compaction {
    pub did_compact: bool,
    pub summary: String,
    pub first_kept_index: usize,
    pub tokens_before: u64,
    pub message: String,
}

/// What the host asks interceptors at a hook point.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    TurnStart {
        step: u32,
    },
    BeforeAgentStart {
        session_id: String,
        agent_run_id: String,
        cwd: String,
        provider: String,
        model: String,
        system_prompt: String,
    },
    ToolCall {
        id: String,
        name: String,
        args: Value,
        /// The `task` call whose subagent made this call (`None`: the agent's own).
        parent_tool_call_id: Option<String>,
    },
    /// Before the confirmation of a tool call.
    ToolPermission {
        id: String,
        name: String,
        args: Value,
        /// The `task` call whose subagent made this call (`None`: the agent's own).
        parent_tool_call_id: Option<String>,
    },
    ToolResult {
        id: String,
        name: String,
        args: Value,
        output: String,
        is_error: bool,
        /// The `task` call whose subagent made this call (`None`: the agent's own).
        parent_tool_call_id: Option<String>,
    },
    AssistantMessage {
        text: String,
    },
    BeforeCompact {
        /// The context filled up (rather than the user asking).
        automatic: bool,
        instruction: String,
        tokens_before: u64,
        /// The conversation as JSON.
        entries: Value,
    },
    /// A user prompt, before it joins the conversation.
    PromptSubmit {
        /// Set for the first prompt of a session: why it is the first
        /// (`startup`, `resume`, `clear`, `compact`).
        start: Option<String>,
        prompt: String,
    },
    /// The agent would end its answer.
    Stop {
        /// The answer being ended already followed an instruction to go on.
        again: bool,
        /// The `task` call whose subagent would stop (`None`: the agent itself).
        parent_tool_call_id: Option<String>,
    },
}

/// An interceptor's answer. Where a verdict means nothing at a hook point
/// (a rewrite of the wrong kind, a stop where nothing runs on), it is
/// ignored there; `docs/architecture.md` lists which point reads which.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Allow,
    /// Refuse; the reason may be empty (the host then words one). At
    /// [`HookPoint::Stop`] it sends the agent on, with the reason as its
    /// next instruction.
    Block(String),
    Rewrite(Rewrite),
    /// Run the tool call without asking the user ([`HookPoint::ToolPermission`]).
    Approve,
    /// Ask the user to confirm the tool call even when no confirmation is
    /// due; where nobody can be asked, it is refused with this reason
    /// (which may be empty).
    AskUser(String),
    /// Stop the agent after what it is doing now, with this reason
    /// (at [`HookPoint::Stop`]: let it stop, whatever else was said).
    Stop(String),
    /// Text for the model: with the tool call's result, or before the prompt.
    Context(String),
}

/// What an interceptor changes, by hook point.
#[derive(Debug, Clone, PartialEq)]
pub enum Rewrite {
    /// Tool call: run with these arguments (a JSON object).
    Args(Value),
    /// Assistant message: show this text instead.
    Text(String),
    /// Before agent start: the system prompt ("" removes it).
    SystemPrompt(String),
    /// Tool result: replace the output text and/or the error flag.
    ToolOutput {
        output: Option<String>,
        is_error: Option<bool>,
    },
    /// Before compaction: an extra instruction for the summariser, and/or a
    /// summary of its own (`Some(None)` withdraws an earlier one).
    Compaction {
        instruction: Option<String>,
        summary: Option<Option<CustomSummary>>,
    },
}

/// A summary an extension wrote, replacing the messages before `first_kept_index`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomSummary {
    pub summary: String,
    pub first_kept_index: usize,
}

/// An extension tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: Option<String>,
    /// A JSON Schema object.
    pub schema: Value,
    pub deferred: bool,
    pub extension: String,
    /// Only reads (no writes, no side effects): offered in plan mode.
    pub read_only: bool,
}

/// Something an extension registers, during its handshake or later.
#[derive(Debug, Clone, PartialEq)]
pub enum Registration {
    Command(CommandInfo),
    Tool(ToolInfo),
    Subscribe(HookPoint, Mode),
    /// The registration window is over.
    Ready,
    /// These tools replace every tool registered so far, in one step (a
    /// server's new list after it said its list changed).
    ReplaceTools(Vec<ToolInfo>),
    /// These commands replace every command registered so far, in one step.
    ReplaceCommands(Vec<CommandInfo>),
}

/// What an extension makes the user see, before the host attributes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Notify {
        level: NotifyLevel,
        message: String,
    },
    ClearNotes,
    /// Submit text as a user prompt.
    Submit(String),
    PanelRender(PanelRender),
    PanelClose(String),
    /// Footer text under `key` (the host scopes keys per extension).
    Status {
        key: String,
        text: String,
    },
    /// Lines above the footer under `key`.
    Widget {
        key: String,
        lines: Vec<String>,
    },
    /// Durable data for the session file, never sent to the model.
    Entry(Value),
    Question {
        prompt: String,
        options: Vec<String>,
        reply: QuestionReply,
    },
    /// A form to fill in (a server's elicitation).
    Form {
        form: zot_protocol::ui::Form,
        reply: zot_protocol::ui::FormReply,
    },
}

/// How a protocol's extensions take part in the model, where protocols
/// differ. Each adapter declares its own; the host reads only these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Semantics {
    /// A block does not end the chain: later interceptors of the same
    /// semantics still see the request, and every reason is joined with
    /// "; ". Otherwise the first block wins and the chain stops.
    pub joined_blocks: bool,
    /// Observers and interceptors are called in plan mode too.
    pub hooks_in_plan: bool,
    /// A session switch restarts the extension with a fresh handshake that
    /// carries the new session id.
    pub restart_on_session_switch: bool,
    /// A tool named like a built-in is reported to the user, not only logged.
    pub warn_builtin_tool_clash: bool,
    /// A tool named like another extension's is reported to the user too
    /// (two servers whose sanitised tool names collide).
    pub warn_tool_clash: bool,
}
