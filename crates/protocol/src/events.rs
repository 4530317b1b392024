//! The front-end protocol's events: what `--json` prints and `zot rpc`
//! streams, one JSON object per line, `type` first. Every line zot writes in
//! those modes is serialised from these types; `schema/` holds their JSON
//! Schema for clients in any language.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ui::HostEvent;
use crate::zot::NotifyLevel;

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model asked for tools; the agent runs them and calls it again.
    ToolUse,
    /// The output hit the token limit.
    Length,
    Error,
    /// The user cancelled.
    Aborted,
    /// The model declined to answer; `turn_end.error` says why when the
    /// provider did.
    Refusal,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::Length => "length",
            Self::Error => "error",
            Self::Aborted => "aborted",
            Self::Refusal => "refusal",
        }
    }
}

/// Token counts and cost of one model call, or of the session so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    /// The part of `output` the model spent reasoning (OpenAI reports it;
    /// 0 where the provider does not). Priced as output, counted in it.
    #[serde(default)]
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// USD at list prices, when the model's prices are known (else 0).
    pub cost_usd: f64,
}

/// One block of a message as the streams show it: images carry their size
/// in `bytes`, not their data, so a screenshot does not flood the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    Image {
        mime_type: String,
        /// Decoded size of the image.
        bytes: u64,
    },
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider encrypted: unreadable, kept in the session and
    /// sent back with its turn; the streams show only that it was there.
    RedactedThinking {},
    ToolCall {
        id: String,
        name: String,
        args: Value,
    },
    ToolResult {
        call_id: String,
        #[serde(default)]
        is_error: bool,
        content: Vec<Block>,
    },
}

/// One step of the model's plan (`todo_write`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItem {
    pub text: String,
    pub status: TodoStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    /// The step being worked on.
    InProgress,
    Done,
}

impl TodoStatus {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "in_progress" => Some(Self::InProgress),
            "done" => Some(Self::Done),
            _ => None,
        }
    }
}

/// One line of `--json` output or of the `zot rpc` stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    UserMessage {
        content: Vec<Block>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<String>,
    },
    /// A model call starts; `step` is 1-based per prompt.
    TurnStart {
        step: u32,
    },
    AssistantStart,
    TextDelta {
        delta: String,
    },
    ThinkingDelta {
        delta: String,
    },
    ToolUseStart {
        id: String,
        name: String,
    },
    ToolUseArgs {
        id: String,
        delta: String,
    },
    ToolUseEnd {
        id: String,
    },
    Usage {
        #[serde(flatten)]
        usage: Usage,
        cumulative: Usage,
    },
    /// The message as the user sees it (an extension may have replaced its text).
    AssistantMessage {
        content: Vec<Block>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<String>,
    },
    /// An extension hid the assistant message.
    AssistantBlocked {
        extension: String,
        reason: String,
    },
    /// The prompt was dropped before it reached the conversation (`source`:
    /// `hook` for a `UserPromptSubmit` hook) and never reached the model;
    /// `done` follows.
    PromptBlocked {
        source: String,
        reason: String,
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
    /// Output of a running tool (bash), as it comes. When the reader falls
    /// behind, progress is coalesced: `dropped_bytes` bytes of output came
    /// before `text` and were left out (absent when none). The tool result
    /// and its full-output file are not affected.
    ToolProgress {
        id: String,
        text: String,
        #[serde(default, skip_serializing_if = "is_zero")]
        dropped_bytes: u64,
    },
    ToolResult {
        id: String,
        is_error: bool,
        content: Vec<Block>,
    },
    TurnEnd {
        stop: StopReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The prompt is finished.
    Done,
    /// Older messages were replaced by a summary (`automatic`: the context
    /// was getting full; otherwise `/compact` or RPC `compact` asked).
    CompactDone {
        summary: String,
        automatic: bool,
    },
    Error {
        message: String,
    },
    /// The model's plan (`todo_write`), whole: each event replaces the last.
    /// Also sent at the first prompt of a resumed session that had one.
    Todo {
        items: Vec<TodoItem>,
    },
    /// A prompt changed files and zot recorded a checkpoint of them, at
    /// the end of the prompt `entry_id` (what RPC `rewind` takes). `notes`
    /// say once what the checkpoints of this project leave out.
    Checkpoint {
        entry_id: String,
        files: Vec<crate::checkpoints::FileChange>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
    },
    ExtNotify {
        extension: String,
        level: NotifyLevel,
        message: String,
    },
    ExtClearNotes {
        extension: String,
    },
    /// `extension` is null for a manifest that could not be read.
    ExtWarning {
        extension: Option<String>,
        message: String,
    },
    ExtStatus {
        extension: String,
        key: String,
        text: String,
    },
    ExtWidget {
        extension: String,
        key: String,
        lines: Vec<String>,
    },
    ExtEntry {
        extension: String,
        data: Value,
    },
    /// What an extension command displayed.
    ExtDisplay {
        extension: String,
        command: String,
        text: String,
    },
    /// `zot rpc` only: the answer to a request.
    Response(Response),
}

/// One line as the streams print it: an event, and, for an event of a
/// subagent (the child agent a `task` call runs), the id of that call, so a
/// client can file the child's events under it. Lines of the agent itself
/// carry no such field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventLine {
    #[serde(flatten)]
    pub event: Event,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
}

impl From<Event> for EventLine {
    fn from(event: Event) -> Self {
        Self {
            event,
            parent_tool_call_id: None,
        }
    }
}

/// The answer to one RPC request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Response {
    /// The request's `type` ("" when it had none).
    pub command: String,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Data>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The request's `id`, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
}

/// What a successful request returns, by command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Data {
    /// `hello`.
    Hello {
        protocol_version: u32,
        version: String,
        provider: String,
        model: String,
    },
    /// `ping`.
    Pong { pong: bool },
    /// `prompt`, `compact`: the work runs; its events follow.
    Started { started: bool },
    /// `abort` with `"queue": true`: the text of each queued prompt it
    /// dropped, in order (they never run and get no `done`).
    Aborted { dropped: Vec<String> },
    /// `get_state`.
    State {
        provider: String,
        model: String,
        cwd: String,
        message_count: usize,
        busy: bool,
        usage: Usage,
    },
    /// `get_messages`: the conversation as the session file stores it.
    Messages { messages: Vec<Value> },
    /// `get_models`.
    Models { models: Vec<ModelInfo> },
    /// `get_commands`.
    Commands { commands: Vec<CommandEntry> },
    /// `list_sessions`.
    Sessions {
        sessions: Vec<crate::sessions::SessionSummary>,
    },
    /// `get_tree`: every entry in the order written, and the current leaf
    /// (`null` before the first entry).
    Tree {
        session_id: String,
        leaf_id: Option<String>,
        entries: Vec<crate::sessions::TreeEntry>,
    },
    /// `get_checkpoints`: the current branch's prompts, oldest first, each
    /// with the files it changed.
    Checkpoints {
        checkpoints: Vec<crate::checkpoints::PromptCheckpoint>,
    },
    /// `rewind`: the files put back (`restored`), the new leaf when the
    /// conversation moved (`null`: before the first prompt) and the prompt's
    /// text, to edit and send again.
    Rewound {
        restored: Vec<crate::checkpoints::FileChange>,
        conversation: bool,
        leaf_id: Option<String>,
        text: String,
    },
    /// `fork`: the new leaf (`null`: before the first prompt) and the text
    /// of the prompt it starts before.
    Forked {
        leaf_id: Option<String>,
        text: String,
    },
    /// `switch_session`.
    Switched {
        session_id: String,
        message_count: usize,
    },
    /// `set_title`.
    Titled { title: String },
    /// `set_model`: the model now used; `known` says whether zot's model
    /// table has it (else a served or custom model: `note` says what that
    /// means for limits and prices).
    ModelSet {
        model: String,
        /// The provider now in use.
        provider: String,
        known: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// `reload_extensions`.
    Reloaded {
        stopped: usize,
        loaded: usize,
        ready: usize,
        errors: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelInfo {
    pub id: String,
    pub provider: String,
    pub context_window: u32,
    pub max_output: u32,
    pub reasoning: bool,
    /// List prices, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<ModelPrice>,
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelPrice {
    pub input: f64,
    pub output: f64,
    /// A 5-minute cache write.
    pub cache_write: f64,
    pub cache_read: f64,
}

/// A slash command: built in, an extension's, or a Markdown command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommandEntry {
    pub name: String,
    pub description: Option<String>,
    pub source: CommandSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension: Option<String>,
    /// What arguments it takes (a Markdown command's `argument-hint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// A Markdown command's scope: `project` or `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// A Markdown command's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommandSource {
    Builtin,
    Extension,
    /// A Markdown file under `.claude/commands/` (the project's or the user's).
    Markdown,
}

impl Event {
    /// The stream line for a host event; `None` for the ones only the TUI
    /// shows (a question dropped unanswered counts as dismissed).
    pub fn from_host(event: &HostEvent) -> Option<Self> {
        Some(match event.clone() {
            HostEvent::Notify {
                extension,
                level,
                message,
            } => Event::ExtNotify {
                extension,
                level,
                message,
            },
            HostEvent::ClearNotes { extension } => Event::ExtClearNotes { extension },
            HostEvent::Warning { extension, message }
            | HostEvent::LoadFailed {
                extension,
                error: message,
            } => Event::ExtWarning {
                extension: Some(extension),
                message,
            },
            // The host reports an exit once, as the warning that comes with
            // it (the reason, what is lost, the log).
            HostEvent::Exited { .. } => return None,
            HostEvent::Status {
                extension,
                key,
                text,
            } => Event::ExtStatus {
                extension,
                key,
                text,
            },
            HostEvent::Widget {
                extension,
                key,
                lines,
            } => Event::ExtWidget {
                extension,
                key,
                lines,
            },
            HostEvent::Entry { extension, data } => Event::ExtEntry { extension, data },
            HostEvent::TrustChanged { changes } => Event::ExtWarning {
                extension: Some("trust".to_owned()),
                message: HostEvent::trust_changed_message(&changes),
            },
            HostEvent::Question { .. }
            | HostEvent::Form { .. }
            | HostEvent::Submit { .. }
            | HostEvent::PanelRender { .. }
            | HostEvent::PanelClose { .. }
            | HostEvent::ToolsChanged
            | HostEvent::CommandsChanged => return None,
        })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
