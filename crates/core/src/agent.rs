//! The agent loop. Per model call, in order: `turn_start` event and
//! intercept, the model stream, the `assistant_message` intercept and event,
//! then the tool calls (per call the `tool_call` event, confirmation and
//! intercept in call order; consecutive read-only calls then run
//! concurrently, a call that may write alone), then `turn_end`. A prompt ends with `done`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::event::{AgentEvent, UsageReport};
use crate::hooks::{
    HookEvent, Hooks, MessageGate, Permission, PermissionGate, PromptGate, SessionSource, ToolGate,
    TurnGate,
};
use crate::message::{Block, Message, Role, text_of};
use crate::provider::{
    CacheTtl, Completion, End, MAX_RESPONSE_BYTES, Provider, ProviderError, Reasoning, Request,
    STREAM_RETRY_BACKOFF, StopReason, StreamEvent,
};
use crate::session::{Served, Session, SessionError};
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec, progress_channel};
use crate::tools::output;
mod switch;

mod compact;
mod prefix;
mod side_question;
mod subagent;
mod subagents;
mod validate;
pub use compact::{AUTO_COMPACT_RATIO, COMPACT_KEEP_TAIL, COMPACT_MAX_TOKENS};
pub use subagent::{SUBAGENT_MAX_STEPS, SUBAGENT_SYSTEM};
pub use subagents::{MAX_PARALLEL_TASKS, TASK};

mod checkpointing;
mod text;

pub use text::{PREVIEW_CHARS, preview};
use text::{cut_note, with_text};

/// Default `max_tokens` for a model call when the catalogue knows nothing better.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

pub use crate::session::SUMMARY_HEADING;

/// What closes the answer to a prompt the user cancelled, after whatever
/// text had arrived, so the next prompt is a message of its own.
pub const INTERRUPTED: &str = "[interrupted by the user]";

/// Most times in a row the `before_stop` hook may send the agent on (the
/// issue: at most 3), so a hook that always objects cannot loop forever.
pub const MAX_STOP_CONTINUATIONS: u32 = 3;

/// Most times in a row a paused turn (Anthropic `pause_turn`) is sent back
/// to go on, so a server that pauses forever cannot hold the prompt.
pub const MAX_PAUSE_CONTINUATIONS: u32 = 5;

/// Most read-only tool calls of one assistant message that run at once.
pub const MAX_PARALLEL_TOOLS: usize = 8;

/// Shortest time between two `tool_progress` events of one tool call. The
/// front ends queue events without bound, so this bounds how fast progress
/// can fill their queues (at most `PROGRESS_BUFFER_BYTES` per interval);
/// output that comes faster is coalesced, and what is dropped is counted in
/// the event's `dropped_bytes`.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// Which tools the model may use (`--tools a,b`, `--no-tools`); applies to
/// built-in and extension tools alike.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolFilter {
    #[default]
    All,
    None,
    Only(Vec<String>),
}

impl ToolFilter {
    pub fn allows(&self, name: &str) -> bool {
        match self {
            Self::All => true,
            Self::None => false,
            Self::Only(names) => names.iter().any(|n| n == name),
        }
    }
}

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub cwd: PathBuf,
    pub model: String,
    pub max_tokens: u32,
    pub reasoning: Option<Reasoning>,
    /// Stop after this many model calls in one prompt.
    pub max_steps: Option<u32>,
    pub tools: ToolFilter,
    /// The model's context window, for auto-compaction; `None` disables it.
    pub context_window: Option<u32>,
    /// The share of the context window at which a call's input triggers
    /// auto-compaction ([`AUTO_COMPACT_RATIO`] by default); `None` disables it.
    pub auto_compact: Option<f64>,
    /// Plan mode: only read-only tools are offered and callable.
    pub plan: bool,
    /// How the bash tool's commands are confined (`--sandbox`).
    pub sandbox: zot_sandbox::BashSandbox,
    /// Prompt caching (the `cache` setting: 5m, 1h or off).
    pub cache: CacheTtl,
    /// Where full tool outputs go (`$ZOT_HOME/tool-output`, see
    /// [`output::root`]), one folder per session; `None` keeps none.
    pub tool_output: Option<PathBuf>,
    /// How long a bash command runs when its call names no timeout.
    pub bash_timeout: std::time::Duration,
    /// `web_fetch.allow_private`: web_fetch may reach loopback and private
    /// addresses.
    pub web_fetch_private: bool,
    /// Where checkpoints of the project live (`$ZOT_HOME/checkpoints`, see
    /// [`crate::checkpoint`]); `None` keeps none.
    pub checkpoints: Option<PathBuf>,
    /// The model subagents run (`subagent_model`); `None`: this agent's.
    pub subagent_model: Option<String>,
    /// A subagent's system prompt ([`SUBAGENT_SYSTEM`] with the project's
    /// context files); `None`: that text with the working directory only.
    pub subagent_prompt: Option<String>,
}

impl AgentConfig {
    pub fn new(cwd: impl Into<PathBuf>, model: impl Into<String>) -> Self {
        Self {
            cwd: cwd.into(),
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            reasoning: None,
            max_steps: None,
            tools: ToolFilter::All,
            context_window: None,
            auto_compact: Some(AUTO_COMPACT_RATIO),
            plan: false,
            sandbox: zot_sandbox::BashSandbox::default(),
            cache: CacheTtl::default(),
            tool_output: None,
            bash_timeout: crate::tools::BASH_DEFAULT_TIMEOUT,
            web_fetch_private: false,
            checkpoints: None,
            subagent_model: None,
            subagent_prompt: None,
        }
    }
}

/// Asks the user before a tool runs (`--no-yolo`); absent means yolo.
pub trait Confirm: Send + Sync {
    /// Whether a call of `name` needs the user's approval. Never asked
    /// for zot's own read-only local tools (see [`Tool::reaches_network`]);
    /// `network` says the tool reaches the network.
    fn needed(&self, name: &str, network: bool) -> bool;
    /// Asks about the call; `preview` is what the user reads: the
    /// tool's [`Tool::approval_preview`] (a diff, a whole command) or the
    /// arguments' one-line preview.
    fn confirm<'a>(
        &'a self,
        id: &'a str,
        name: &'a str,
        preview: &'a str,
    ) -> BoxFuture<'a, Result<(), Refusal>>;
}

/// Why a call was not approved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The user said no. The call fails with [`REFUSED`], the other calls
    /// of that step are not run, and the prompt ends so the user can tell
    /// the model what to do instead.
    ByUser,
    /// Nobody could answer: the call fails with this reason and the prompt
    /// goes on.
    Unanswered(String),
}

/// The result of a call the user refused.
pub const REFUSED: &str = "tool call refused by user";

/// The result of a call not run because the user refused another call of
/// the same step.
pub const NOT_RUN_AFTER_REFUSAL: &str =
    "not run: the user refused another tool call of this step and stopped the turn";

/// How a prompt ends after a refusal (the `turn_end` error, with stop `aborted`).
pub const REFUSAL_STOP: &str = "tool call refused: the turn stopped; type what to do instead";

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("nothing to compact")]
    NothingToCompact,
    #[error("the model returned an empty summary")]
    EmptySummary,
    #[error("compaction blocked: {0}")]
    CompactionBlocked(String),
    /// The conversation does not fit the model's context window, even
    /// after compacting it.
    #[error("{0}")]
    ContextFull(String),
    /// `max_steps` model calls were made and the model had not finished.
    #[error("stopped at the limit of {0} model calls (max_steps) before the model had finished")]
    MaxSteps(u32),
}

/// The session id of a run without a session file (`--no-session`, RPC).
pub fn local_session_id() -> String {
    format!("local-{}", std::process::id())
}

/// A tool's compiled argument validator, with the schema it was compiled from.
type Compiled = (Arc<Value>, Arc<jsonschema::Validator>);

pub struct Agent {
    provider: Provider,
    config: AgentConfig,
    hooks: Arc<dyn Hooks>,
    builtin: Vec<Arc<dyn Tool>>,
    /// `builtin`'s specs, in the same order: made once, since a spec builds
    /// its JSON Schema and the tools are looked up on every turn.
    builtin_specs: Vec<ToolSpec>,
    /// Compiled argument validators by tool name, each with the schema it
    /// was compiled from: compiling takes far longer than the call it
    /// checks. An entry is replaced when the tool's schema changes (an
    /// extension reloaded or re-registered it).
    validators: Mutex<HashMap<String, Compiled>>,
    confirm: Option<Arc<dyn Confirm>>,
    /// The assembled base prompt; a send (even of the same text) is a reset.
    base_prompt: watch::Sender<String>,
    /// The base prompt after the before_agent_start chain; `None` until prepared.
    prepared: Option<String>,
    messages: Conversation,
    usage: UsageReport,
    /// Input tokens of the last call, for auto-compaction.
    last_input: u64,
    session_id: String,
    session: Option<Session>,
    session_started: bool,
    /// Set until the next prompt: why that prompt starts a session.
    session_source: Option<SessionSource>,
    /// The last request's system prompt and tools: the prefix a provider
    /// caches, and binds thinking blocks to.
    prefix: Option<prefix::Prefix>,
    /// Thinking in messages before this index was made under an earlier
    /// prefix and is left out of requests.
    stale_thinking_before: usize,
    /// A permission gate asked to stop the prompt after the current tools.
    halt: std::sync::Mutex<Option<String>>,
    /// The model's plan (`todo_write`), restored from a session's messages.
    plan: crate::tools::todo::Plan,
    /// A plan came back with a resumed session: the next prompt tells the
    /// front ends (a `todo` event) before anything else.
    announce_plan: bool,
    checkpoints: Option<crate::checkpoint::Checkpoints>,
    subagents: subagents::Subagents,
}

impl Agent {
    pub fn new(
        provider: Provider,
        config: AgentConfig,
        hooks: Arc<dyn Hooks>,
        base_prompt: String,
    ) -> Self {
        hooks.set_plan(config.plan);
        if let Some(root) = &config.tool_output {
            let removed = output::prune(root, output::TOOL_OUTPUT_MAX_AGE);
            if removed > 0 {
                tracing::debug!(removed, root = %root.display(), "pruned old tool outputs");
            }
        }
        let plan = crate::tools::todo::Plan::default();
        let builtin = crate::tools::builtin(Arc::clone(&plan), config.web_fetch_private);
        let checkpoints = config
            .checkpoints
            .as_deref()
            .map(|root| crate::checkpoint::Checkpoints::new(root, &config.cwd));
        Self {
            checkpoints,
            provider,
            config,
            hooks,
            builtin_specs: builtin.iter().map(|t| t.spec()).collect(),
            builtin,
            validators: Mutex::new(HashMap::new()),
            confirm: None,
            base_prompt: watch::channel(base_prompt).0,
            prepared: None,
            messages: Conversation::new(),
            usage: UsageReport::default(),
            last_input: 0,
            session_id: local_session_id(),
            session: None,
            session_started: false,
            session_source: Some(SessionSource::Startup),
            halt: std::sync::Mutex::new(None),
            plan,
            announce_plan: false,
            prefix: None,
            stale_thinking_before: 0,
            subagents: subagents::Subagents::new(),
        }
    }

    /// This session's folder of full tool outputs.
    fn tool_output_dir(&self) -> Option<PathBuf> {
        let root = self.config.tool_output.as_ref()?;
        Some(output::session_dir(root, &self.session_id))
    }

    /// Adds a tool beside the built-ins (e.g. `skill`).
    pub fn add_tool(&mut self, tool: Arc<dyn Tool>) {
        self.builtin_specs.push(tool.spec());
        self.builtin.push(tool);
    }

    pub fn set_confirm(&mut self, confirm: Arc<dyn Confirm>) {
        self.confirm = Some(confirm);
    }

    /// Persists the conversation from now on (and adopts its id and messages).
    pub fn set_session(&mut self, session: Session) {
        self.session_id = session.id().to_owned();
        self.messages.replace(session.messages().to_vec());
        self.usage = session.usage();
        self.hooks.session_file(Some(session.path()));
        self.session_source = Some(if self.messages.is_empty() {
            SessionSource::Startup
        } else {
            SessionSource::Resume
        });
        // From the whole path: a compaction may have summarised the call.
        let plan = crate::tools::todo::plan_in(session.history());
        self.session = Some(session);
        self.session_started = false;
        self.reset_system_prompt();
        self.announce_plan = !plan.is_empty();
        *self.plan.lock().unwrap_or_else(PoisonError::into_inner) = plan;
    }

    /// The model's current plan (`todo_write`).
    pub fn plan(&self) -> Vec<zot_protocol::events::TodoItem> {
        self.plan
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Moves the conversation to another session, telling the hooks first.
    pub async fn switch_session(&mut self, session: Session) {
        self.store_entries();
        self.hooks.session_changed(session.id()).await;
        self.set_session(session);
    }

    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// Starts a new branch of this session before the prompt `entry_id`
    /// (`/fork`, RPC `fork`, and the undo of a prompt): the conversation
    /// goes on from the entry before it, its earlier messages unchanged.
    /// Returns the prompt's text, to edit and send again. The session keeps
    /// its id, so extensions are not restarted.
    pub fn fork_before(&mut self, entry_id: &str) -> Result<String, SessionError> {
        let session = self.session.as_mut().ok_or(SessionError::NoFile)?;
        let text = session.fork_before(entry_id)?;
        self.adopt_branch();
        Ok(text)
    }

    /// Moves the conversation to another entry of this session (`/tree`):
    /// to a prompt's answer, or to the entry itself.
    pub fn move_to(&mut self, entry_id: &str) -> Result<(), SessionError> {
        let session = self.session.as_mut().ok_or(SessionError::NoFile)?;
        session.move_to(entry_id)?;
        self.adopt_branch();
        Ok(())
    }

    /// Names the session (`/name`, RPC `set_title`).
    pub fn set_title(&mut self, title: &str) -> Result<(), SessionError> {
        let session = self.session.as_mut().ok_or(SessionError::NoFile)?;
        session.set_title(title);
        Ok(())
    }

    /// Takes the conversation of the session's new leaf: its messages, as
    /// stored, and the plan they hold.
    fn adopt_branch(&mut self) {
        let Some(session) = &self.session else {
            return;
        };
        self.messages.replace(session.messages().to_vec());
        self.stale_thinking_before = self.stale_thinking_before.min(self.messages.len());
        self.last_input = 0;
        let plan = crate::tools::todo::plan_in(session.history());
        *self.plan.lock().unwrap_or_else(PoisonError::into_inner) = plan;
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn usage(&self) -> UsageReport {
        self.usage
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    /// The system prompt the model gets (after extensions), once prepared.
    pub fn system_prompt(&self) -> Option<&str> {
        self.prepared.as_deref()
    }

    /// The base prompt changed or must be rebuilt (model change, clear,
    /// session change, extension reload): the before_agent_start chain runs
    /// again from it before the next model call.
    pub fn reset_system_prompt(&mut self) {
        self.prepared = None;
        self.base_prompt.send_modify(|_| {});
    }

    pub fn set_base_prompt(&mut self, prompt: String) {
        self.prepared = None;
        self.base_prompt.send_replace(prompt);
    }

    /// Goes on with `model` (priced per call): its limits, a model-change line
    /// in the session; another provider keeps the transcript, not its thinking.
    pub fn set_model(&mut self, provider: Provider, model: String) {
        let info = crate::models::of(provider.config(), &model);
        self.config.max_tokens = info.max_output.min(crate::models::MAX_TOKENS_CAP);
        if self.config.context_window.is_some() {
            self.config.context_window = Some(info.context_window);
        }
        self.forget_thinking_unless(&provider);
        (self.provider, self.config.model) = (provider, model);
        if let Some(session) = &mut self.session {
            session.append_model_change(self.provider.name(), &self.config.model);
        }
        self.reset_system_prompt();
    }

    /// Plan mode on or off (`/plan`, `/act`, `--plan`).
    pub fn set_plan(&mut self, plan: bool) {
        self.config.plan = plan;
        self.hooks.set_plan(plan);
    }

    /// The bash tool's sandbox from the next call on (`--sandbox`, `/sandbox`).
    pub fn set_sandbox(&mut self, sandbox: zot_sandbox::BashSandbox) {
        self.config.sandbox = sandbox;
    }

    /// Forgets the conversation (`/clear`), telling the hooks first. With a
    /// session file, the next messages go to a new session (the old one
    /// stays resumable as it was), so resuming never brings back what was
    /// cleared.
    pub async fn clear(&mut self) -> Result<(), crate::session::SessionError> {
        self.hooks.cleared().await;
        self.messages.clear();
        self.plan
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.announce_plan = false;
        self.last_input = 0;
        let next = match &self.session {
            Some(session) => Some(session.successor(self.provider.name(), &self.config.model)?),
            None => None,
        };
        if let Some(next) = next {
            self.store_entries();
            self.hooks.session_changed(next.id()).await;
            self.session_id = next.id().to_owned();
            self.hooks.session_file(Some(next.path()));
            self.session = Some(next);
        }
        self.stale_thinking_before = 0;
        self.session_source = Some(SessionSource::Clear);
        self.reset_system_prompt();
        Ok(())
    }

    /// Prepares the system prompt unless it is; false when cancelled meanwhile.
    async fn prepare_system_prompt(&mut self, cancel: &CancellationToken) -> bool {
        if self.prepared.is_none() {
            let mut base = self.base_prompt.subscribe();
            self.prepared = self
                .hooks
                .system_prompt(&self.session_id, &mut base, cancel)
                .await;
        }
        self.prepared.is_some()
    }

    /// Adds a call's usage, priced with the model that served it, to the
    /// running cost, the session's record and the front ends'; the priced
    /// usage. Every model call (turns, compaction, side questions) is
    /// counted here.
    fn count_usage(
        &mut self,
        served: &Served,
        events: &mpsc::UnboundedSender<AgentEvent>,
    ) -> UsageReport {
        let price = crate::models::price(self.provider.config(), &served.model);
        let usage = UsageReport::priced(served.usage, price);
        self.usage += usage;
        if let Some(session) = &mut self.session {
            session.append_usage(&served.model, usage);
        }
        let _ = events.send(AgentEvent::Usage {
            usage,
            cumulative: self.usage,
        });
        usage
    }

    /// With `--tools`: the names it gives that no tool has now (built-in,
    /// the subagents' `task`, an extension's), and the names of every tool.
    pub fn unknown_tools(&self) -> (Vec<String>, Vec<String>) {
        let ToolFilter::Only(wanted) = &self.config.tools else {
            return (Vec::new(), Vec::new());
        };
        let known: Vec<String> = self
            .builtin_specs
            .iter()
            .chain(self.subagents.spec())
            .map(|s| s.name.clone())
            .chain(self.hooks.tools().into_iter().map(|s| s.name))
            .collect();
        let unknown = wanted
            .iter()
            .filter(|name| !known.contains(name))
            .cloned()
            .collect();
        (unknown, known)
    }

    /// The tools the model sees now: allowed built-ins, then allowed
    /// extension tools whose names no built-in takes.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        let mut specs = self.builtin_specs.clone();
        specs.extend(self.subagents.spec().cloned());
        for spec in self.hooks.tools() {
            if !specs.iter().any(|s| s.name == spec.name) {
                specs.push(spec);
            }
        }
        specs.retain(|s| self.config.tools.allows(&s.name) && (!self.config.plan || s.read_only));
        specs
    }

    /// Runs one user prompt to completion: model calls and tool calls until
    /// the model stops, the user aborts, or `max_steps` is reached.
    pub async fn prompt(
        &mut self,
        mut content: Vec<Block>,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        let emit = |event: AgentEvent| {
            let _ = events.send(event);
        };
        if !self.session_started {
            self.session_started = true;
            self.hooks.event(HookEvent::SessionStart).await;
        }
        let typed = text_of(&content);
        match self
            .hooks
            .prompt_submit(self.session_source.take(), &typed)
            .await
        {
            PromptGate::Block { by, reason } => {
                emit(AgentEvent::PromptBlocked { source: by, reason });
                emit(AgentEvent::Done);
                return Ok(());
            }
            PromptGate::Allow { context } => {
                // Before the prompt, in the same message: the model reads it
                // first, and the system prompt stays as prepared.
                let blocks = context.into_iter().map(|text| Block::Text { text });
                content.splice(0..0, blocks);
            }
        }
        crate::prompt_files::attach(&mut content, &self.config.cwd).await;
        if !self.prepare_system_prompt(cancel).await {
            // Cancelled while the system prompt was prepared: the prompt is
            // kept and closed like any cancelled one, so the session and
            // the next request show it.
            let user = Message::new(Role::User, content);
            emit(AgentEvent::UserMessage {
                content: user.content.clone(),
                time: user.time.clone(),
            });
            self.push(user);
            self.close_interrupted("");
            self.end_turn(events, StopReason::Aborted, None).await;
            emit(AgentEvent::Done);
            return Ok(());
        }
        let user = Message::new(Role::User, content);
        emit(AgentEvent::UserMessage {
            content: user.content.clone(),
            time: user.time.clone(),
        });
        self.push(user);
        let checkpoint = self.start_checkpoint();
        if std::mem::take(&mut self.announce_plan) {
            emit(AgentEvent::Todo { items: self.plan() });
        }
        self.hooks.event(HookEvent::PromptStart).await;
        // A stop asked for in a prompt that was aborted before it was
        // taken does not carry over to this one.
        self.halt
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        self.hooks.take_halt();

        let mut step = 0;
        let mut failure = None;
        let mut sent_on = 0;
        let mut pauses = 0;
        let mut compacted_for_overflow = false;
        loop {
            step += 1;
            if let Some(max) = self.config.max_steps.filter(|max| step > *max) {
                let stopped = AgentError::MaxSteps(max);
                emit(AgentEvent::Error {
                    message: stopped.to_string(),
                });
                failure = Some(stopped);
                break;
            }
            emit(AgentEvent::TurnStart { step });
            self.hooks.event(HookEvent::TurnStart { step }).await;
            // The reason reaches the user as the extension wrote it.
            if let TurnGate::Block { reason, .. } = self.hooks.turn_start(step).await {
                self.end_turn(events, StopReason::Error, Some(reason)).await;
                break;
            }

            if self.needs_compaction() {
                // Best effort: a failed auto-compaction leaves the transcript as it was.
                if let Ok(summary) = self
                    .compact_with(true, COMPACT_KEEP_TAIL, events, cancel)
                    .await
                {
                    emit(AgentEvent::CompactDone {
                        summary,
                        automatic: true,
                    });
                }
            }
            emit(AgentEvent::AssistantStart);
            let tools = self.tool_specs();
            self.note_prefix(&tools);
            let completion = match self.call_model(&tools, events, cancel).await {
                Ok(completion) => completion,
                Err((ProviderError::Cancelled, partial)) => {
                    self.close_interrupted(&partial);
                    self.end_turn(events, StopReason::Aborted, None).await;
                    break;
                }
                Err((e, _)) if e.is_context_overflow() => {
                    failure = self
                        .overflowed(e.to_string(), &mut compacted_for_overflow, events, cancel)
                        .await
                        .err();
                    if failure.is_some() {
                        break;
                    }
                    continue;
                }
                Err((e, partial)) => {
                    // What the user saw stays in the conversation.
                    if !partial.is_empty() {
                        self.push(Message::new(
                            Role::Assistant,
                            vec![Block::Text { text: partial }],
                        ));
                    }
                    self.end_turn(events, StopReason::Error, Some(e.to_string()))
                        .await;
                    emit(AgentEvent::Error {
                        message: e.to_string(),
                    });
                    failure = Some(e.into());
                    break;
                }
            };
            // Priced with the model that served the call (`/model` may
            // have switched it since the last one).
            let usage = self.count_usage(&self.served(completion.usage), events);
            self.last_input = usage.input + usage.cache_read + usage.cache_write;

            if completion.end == End::ContextFull {
                // The answer was cut where the context ran out: dropped, and
                // asked again of a compacted conversation.
                let cause = "the model's context window is full".to_owned();
                failure = self
                    .overflowed(cause, &mut compacted_for_overflow, events, cancel)
                    .await
                    .err();
                if failure.is_some() {
                    break;
                }
                continue;
            }
            let mut message = completion.message;
            let mut note = None;
            if completion.stop == StopReason::Length {
                note = Some(cut_note(&mut message, self.config.max_tokens));
            }
            self.show_assistant(&message, events).await;
            let served = self.served(completion.usage);
            if completion.stop == StopReason::Refusal {
                self.push_served(message, Some(served));
                let why = completion
                    .detail
                    .unwrap_or_else(|| "the model declined to answer".to_owned());
                self.end_turn(events, StopReason::Refusal, Some(why)).await;
                break;
            }
            if completion.end == End::Paused && pauses < MAX_PAUSE_CONTINUATIONS {
                // The paused message goes back as it is; the model continues it.
                pauses += 1;
                self.push_served(message, Some(served));
                self.end_turn(events, StopReason::ToolUse, None).await;
                continue;
            }
            let calls: Vec<(String, String, Value)> = message
                .tool_calls()
                .map(|(id, name, args)| (id.to_owned(), name.to_owned(), args.clone()))
                .collect();
            self.push_served(message, Some(served));
            if calls.is_empty() {
                self.end_turn(events, completion.stop, note).await;
                if sent_on < MAX_STOP_CONTINUATIONS
                    && completion.stop == StopReason::EndTurn
                    && !cancel.is_cancelled()
                    && let Some(instruction) = self.hooks.before_stop(sent_on > 0).await
                {
                    sent_on += 1;
                    let user = Message::user(instruction);
                    emit(AgentEvent::UserMessage {
                        content: user.content.clone(),
                        time: user.time.clone(),
                    });
                    self.push(user);
                    continue;
                }
                break;
            }
            let (results, refused) = self.run_tools(&calls, events, cancel).await;
            self.settle_subagents();
            self.push(Message::new(Role::Tool, results));
            if cancel.is_cancelled() {
                self.close_interrupted("");
                self.end_turn(events, StopReason::Aborted, None).await;
                break;
            }
            if refused {
                // The user's next prompt says what to do instead; it
                // follows the refusal in the conversation.
                self.end_turn(events, StopReason::Aborted, Some(REFUSAL_STOP.to_owned()))
                    .await;
                break;
            }
            let halt = self
                .halt
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            // Both kinds are taken, so neither is left for the next prompt.
            let after = self.hooks.take_halt();
            if let Some(reason) = halt.or(after) {
                self.end_turn(events, StopReason::Error, Some(reason)).await;
                break;
            }
            self.end_turn(events, StopReason::ToolUse, None).await;
        }
        self.end_checkpoint(checkpoint, events).await;
        let interrupted = cancel.is_cancelled();
        self.hooks.event(HookEvent::PromptEnd { interrupted }).await;
        self.store_entries();
        if let Some(session) = &mut self.session {
            session.sync();
        }
        if let Some(e) = failure {
            return Err(e);
        }
        emit(AgentEvent::Done);
        Ok(())
    }

    /// Writes extension entries recorded so far into the session.
    fn store_entries(&mut self) {
        let entries = self.hooks.take_entries();
        if let Some(session) = &mut self.session {
            for (extension, data) in entries {
                session.append_extension(&extension, data);
            }
        }
    }

    fn push(&mut self, message: Message) {
        self.push_served(message, None);
    }

    /// Appends a message to the conversation and the session; `served` says
    /// which provider and model produced it.
    fn push_served(&mut self, message: Message, served: Option<Served>) {
        self.store_entries();
        if let Some(session) = &mut self.session {
            session.append_served(&message, served);
        }
        self.messages.push(message);
    }

    /// The current provider and model, for a call's `usage`.
    fn served(&self, usage: crate::provider::Usage) -> Served {
        Served {
            provider: self.provider.name().to_owned(),
            model: self.config.model.clone(),
            usage,
        }
    }

    /// Closes a cancelled prompt with an assistant message: the text that
    /// had arrived (no thinking, no half-streamed tool call), then
    /// [`INTERRUPTED`]. The next prompt is then a user message of its own
    /// and the model sees that the user stopped this one.
    fn close_interrupted(&mut self, partial: &str) {
        let text = match partial.trim_end() {
            "" => INTERRUPTED.to_owned(),
            partial => format!("{partial}\n\n{INTERRUPTED}"),
        };
        self.push(Message::new(Role::Assistant, vec![Block::Text { text }]));
    }

    async fn end_turn(
        &self,
        events: &mpsc::UnboundedSender<AgentEvent>,
        stop: StopReason,
        error: Option<String>,
    ) {
        let _ = events.send(AgentEvent::TurnEnd {
            stop,
            error: error.clone(),
        });
        self.hooks.event(HookEvent::TurnEnd { stop, error }).await;
    }

    /// One model call. A stream that fails with an `error` event before
    /// anything was shown (thinking counts as shown) is asked again with
    /// the usual backoff; a failure returns the text shown so far.
    async fn call_model(
        &self,
        tools: &[ToolSpec],
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<Completion, (ProviderError, String)> {
        let mut retries = 0;
        loop {
            let (result, shown) = self.call_model_once(tools, events, cancel).await;
            match result {
                Ok(completion) => return Ok(completion),
                Err(e @ ProviderError::ErrorEvent { .. })
                    if shown.is_none() && retries < STREAM_RETRY_BACKOFF.len() =>
                {
                    tracing::warn!(error = %e, retries, "stream failed before any output; retrying");
                    tokio::select! {
                        () = cancel.cancelled() => return Err((ProviderError::Cancelled, String::new())),
                        () = tokio::time::sleep(STREAM_RETRY_BACKOFF[retries]) => {}
                    }
                    retries += 1;
                }
                Err(e) => return Err((e, shown.unwrap_or_default())),
            }
        }
    }

    /// One request; with it, the text it showed (`Some("")` when only
    /// thinking or tool calls were shown, `None` when nothing was).
    async fn call_model_once(
        &self,
        tools: &[ToolSpec],
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> (Result<Completion, ProviderError>, Option<String>) {
        let request = Request {
            model: &self.config.model,
            system: self.prepared.as_deref().unwrap_or_default(),
            messages: &self.messages,
            tools,
            max_tokens: self.config.max_tokens,
            reasoning: self.config.reasoning,
            cache: self.config.cache,
            cache_key: Some(&self.session_id),
            drop_thinking_before: self.stale_thinking_before,
            history: Some(self.messages.id()),
        };
        tracing::debug!(
            provider = self.provider.name(),
            model = %request.model,
            messages = request.messages.len(),
            tools = ?request.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            system_bytes = request.system.len(),
            "model request"
        );
        let (tx, mut rx) = mpsc::unbounded_channel();
        // Cancelled, like the user's abort, once the response is too large.
        let cut = cancel.child_token();
        let call = async {
            let result = self.provider.complete(&request, &tx, &cut).await;
            match &result {
                Ok(c) => tracing::debug!(
                    stop = c.stop.as_str(),
                    input = c.usage.input,
                    output = c.usage.output,
                    cache_read = c.usage.cache_read,
                    cache_write = c.usage.cache_write,
                    "model reply"
                ),
                Err(e) => tracing::warn!(error = %e, "model request failed"),
            }
            drop(tx);
            result
        };
        let forward = async {
            let mut shown: Option<String> = None;
            let mut received = 0usize;
            while let Some(event) = rx.recv().await {
                if received > MAX_RESPONSE_BYTES {
                    continue;
                }
                received += match &event {
                    StreamEvent::TextDelta(delta)
                    | StreamEvent::ThinkingDelta(delta)
                    | StreamEvent::ToolUseArgs { delta, .. } => delta.len(),
                    StreamEvent::ToolUseStart { name, .. } => name.len(),
                    StreamEvent::ToolUseEnd { .. } => 0,
                };
                if received > MAX_RESPONSE_BYTES {
                    cut.cancel();
                    continue;
                }
                let text = shown.get_or_insert_with(String::new);
                let _ = events.send(match event {
                    StreamEvent::TextDelta(delta) => {
                        text.push_str(&delta);
                        AgentEvent::TextDelta { delta }
                    }
                    StreamEvent::ThinkingDelta(delta) => AgentEvent::ThinkingDelta { delta },
                    StreamEvent::ToolUseStart { id, name } => AgentEvent::ToolUseStart { id, name },
                    StreamEvent::ToolUseArgs { id, delta } => AgentEvent::ToolUseArgs { id, delta },
                    StreamEvent::ToolUseEnd { id } => AgentEvent::ToolUseEnd { id },
                });
            }
            (shown, received > MAX_RESPONSE_BYTES)
        };
        let (result, (shown, too_large)) = tokio::join!(call, forward);
        // The user's abort, if that came first, is what stopped it.
        if too_large && !cancel.is_cancelled() {
            return (Err(ProviderError::TooLarge), shown);
        }
        (result, shown)
    }

    /// The assistant_message intercept and event. The transcript keeps the
    /// original message; only what the user sees changes.
    async fn show_assistant(&self, message: &Message, events: &mpsc::UnboundedSender<AgentEvent>) {
        let text = message.text();
        if text.is_empty() {
            let _ = events.send(AgentEvent::assistant(message));
            return;
        }
        match self.hooks.assistant_message(&text).await {
            MessageGate::Block { by, reason } => {
                let _ = events.send(AgentEvent::AssistantBlocked {
                    extension: by,
                    reason,
                });
            }
            MessageGate::Allow { replace } => {
                let visible = match &replace {
                    Some(new) => with_text(message, new),
                    None => message.clone(),
                };
                let _ = events.send(AgentEvent::assistant(&visible));
                self.hooks
                    .event(HookEvent::AssistantMessage {
                        text: replace.unwrap_or(text),
                    })
                    .await;
            }
        }
    }

    /// Runs the tool calls of one assistant message and returns their
    /// result blocks in call order. Consecutive read-only calls form a group:
    /// each is gated in call order (its events, confirmation and `tool_call`
    /// intercept), then the allowed ones run together, at most
    /// [`MAX_PARALLEL_TOOLS`] at once. A call that may write is a group of
    /// its own, so it runs alone, after the calls before it and before the
    /// calls after it.
    ///
    /// The flag says the user refused a call: the calls after it (and the
    /// allowed ones of its group) were not run.
    async fn run_tools(
        &self,
        calls: &[(String, String, Value)],
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> (Vec<Block>, bool) {
        let mut results = Vec::with_capacity(calls.len());
        let mut refused = false;
        let mut start = 0;
        while start < calls.len() {
            // Again per group: a tool result may activate tools.
            let specs = self.tool_specs();
            let read_only = |(_, name, args): &(String, String, Value)| {
                specs.iter().any(|s| s.name == *name && s.read_only)
                    && (name != TASK || self.task_reads_only(&specs, args))
            };
            let end = if read_only(&calls[start]) {
                start + calls[start..].iter().take_while(|c| read_only(c)).count()
            } else {
                start + 1
            };
            let group = &calls[start..end];
            if !read_only(&group[0]) && !refused {
                self.checkpoint_before(&group[0].1, &group[0].2, events)
                    .await;
            }
            let mut gates = Vec::with_capacity(group.len());
            for call in group {
                let mut context = Vec::new();
                let gate = if refused {
                    let _ = events.send(AgentEvent::ToolCall {
                        id: call.0.clone(),
                        name: call.1.clone(),
                        args: call.2.clone(),
                    });
                    Gate::Done(ToolOutput::error(NOT_RUN_AFTER_REFUSAL))
                } else {
                    self.gate(&specs, call, &mut context, events, cancel).await
                };
                refused |= matches!(gate, Gate::Refused);
                gates.push((gate, context));
            }
            if refused {
                // The calls allowed before the refusal have not run yet: they
                // stop with the rest of the step.
                for (gate, _) in &mut gates {
                    match gate {
                        Gate::Run(_) => {
                            *gate = Gate::Done(ToolOutput::error(NOT_RUN_AFTER_REFUSAL))
                        }
                        Gate::Refused => *gate = Gate::Done(ToolOutput::error(REFUSED)),
                        Gate::Done(_) => {}
                    }
                }
            }
            // Then the allowed calls run, at most MAX_PARALLEL_TOOLS at once.
            let mut waiting = group.iter().zip(gates).enumerate();
            let mut running = FuturesUnordered::new();
            let mut outputs: Vec<Option<ToolOutput>> = group.iter().map(|_| None).collect();
            loop {
                while running.len() < MAX_PARALLEL_TOOLS {
                    let Some((index, ((id, name, _), gated))) = waiting.next() else {
                        break;
                    };
                    // Boxed: the call's future is large, and the set would otherwise
                    // copy it into each task it makes.
                    running.push(Box::pin(
                        self.finish_tool(index, id, name, gated, events, cancel),
                    ));
                }
                let Some((index, output)) = running.next().await else {
                    break;
                };
                outputs[index] = Some(output);
            }
            for ((id, _, _), output) in group.iter().zip(outputs) {
                let output = output.unwrap_or_else(|| ToolOutput::error("the call never ended"));
                results.push(Block::ToolResult {
                    call_id: id.clone(),
                    is_error: output.is_error,
                    content: output.content,
                });
            }
            start = end;
        }
        (results, refused)
    }

    /// Runs a gated call (if allowed), adds the context its gates gave for
    /// the model, caps its output and reports it.
    async fn finish_tool(
        &self,
        index: usize,
        id: &str,
        name: &str,
        (gate, context): (Gate, Vec<String>),
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> (usize, ToolOutput) {
        let mut output = match gate {
            Gate::Done(output) => output,
            Gate::Refused => ToolOutput::error(REFUSED),
            Gate::Run(_) if cancel.is_cancelled() => ToolOutput::error("aborted before it ran"),
            Gate::Run(args) => self.run_tool(id, name, args, events, cancel).await,
        };
        // After the result (and what `tool_result` made of it), so the
        // result's first line stays the tool's own.
        if !context.is_empty() {
            output.content.push(Block::Text {
                text: context.join("\n"),
            });
        }
        // Whatever produced it (tool, extension, a hook's reason).
        let output = cap_output(output, name, self.tool_output_dir()).await;
        let _ = events.send(AgentEvent::ToolResult {
            id: id.to_owned(),
            is_error: output.is_error,
            content: output.content.clone(),
        });
        (index, output)
    }

    /// What comes before a tool call runs: the `tool_call` event, the
    /// confirmation and the `tool_call` intercept, then the argument check.
    /// Text the hooks want the model to read with the result goes to `context`.
    async fn gate(
        &self,
        specs: &[ToolSpec],
        (id, name, args): &(String, String, Value),
        context: &mut Vec<String>,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Gate {
        let _ = events.send(AgentEvent::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            args: args.clone(),
        });
        self.hooks
            .event(HookEvent::ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                args: args.clone(),
            })
            .await;
        if cancel.is_cancelled() {
            return Gate::Done(ToolOutput::error("aborted before it ran"));
        }
        let Some(spec) = specs.iter().find(|s| s.name == *name) else {
            return Gate::Done(ToolOutput::error(format!("unknown tool \"{name}\"")));
        };
        let PermissionGate {
            permission,
            args: rewritten,
            halt,
            context: said,
        } = self.hooks.tool_permission(id, name, args).await;
        context.extend(said);
        if let Some(reason) = halt {
            self.halt
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get_or_insert(reason);
        }
        let args = rewritten.as_ref().unwrap_or(args);
        let ask = match &permission {
            Permission::Deny(reason) => return Gate::Done(ToolOutput::error(reason.clone())),
            Permission::Allow => None,
            Permission::Ask(reason) => match &self.confirm {
                Some(confirm) => Some(confirm),
                None => {
                    let reason = match reason.as_str() {
                        "" => "a hook asked for confirmation, and nobody can be asked here",
                        reason => reason,
                    };
                    return Gate::Done(ToolOutput::error(reason));
                }
            },
            Permission::Default => match self.builtin_tool(name) {
                Some(tool) if spec.read_only && !tool.reaches_network() => None,
                // Each call of its subagent is asked about on its own.
                None if name == TASK => None,
                tool => {
                    let network = tool.is_some_and(|t| t.reaches_network());
                    self.confirm.as_ref().filter(|c| c.needed(name, network))
                }
            },
        };
        if let Some(confirm) = ask {
            let shown = self.approval_preview(name, args).await;
            let preview = preview(args);
            let _ = events.send(AgentEvent::ToolConfirmationRequested {
                id: id.to_owned(),
                name: name.to_owned(),
                preview: preview.clone(),
            });
            self.hooks
                .event(HookEvent::ToolConfirmationRequested {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    preview: preview.clone(),
                })
                .await;
            let shown = shown.as_deref().unwrap_or(&preview);
            match confirm.confirm(id, name, shown).await {
                Ok(()) => {}
                Err(Refusal::ByUser) => return Gate::Refused,
                Err(Refusal::Unanswered(reason)) => return Gate::Done(ToolOutput::error(reason)),
            }
        }
        let args = match self.hooks.tool_call(id, name, args).await {
            ToolGate::Block { reason, .. } => return Gate::Done(ToolOutput::error(reason)),
            ToolGate::Allow { args: Some(new) } => new,
            ToolGate::Allow { args: None } => args.clone(),
        };
        if !self.checks_own_arguments(name)
            && let Err(problem) = self.validate(spec, &args)
        {
            return Gate::Done(ToolOutput::error(problem));
        }
        Gate::Run(args)
    }

    /// What a built-in tool shows for approval (a diff, a whole command),
    /// worked out on a blocking thread: it may read a large file.
    async fn approval_preview(&self, name: &str, args: &Value) -> Option<String> {
        let tool = Arc::clone(self.builtin_tool(name)?);
        let (args, cwd) = (args.clone(), self.config.cwd.clone());
        tokio::task::spawn_blocking(move || tool.approval_preview(&args, &cwd))
            .await
            .ok()
            .flatten()
    }

    /// `!command` typed by the user: runs it under the bash tool's rules
    /// (its sandbox, timeout, output cap, stdin closed, a process group of
    /// its own), without asking (the user typed it) and without the tool
    /// hooks (no model made the call). The front ends see it as a `bash`
    /// call with its live output; the result is capped as the model's are.
    pub async fn run_shell(
        &self,
        id: &str,
        command: &str,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let args = serde_json::json!({ "command": command });
        let _ = events.send(AgentEvent::ToolCall {
            id: id.to_owned(),
            name: "bash".to_owned(),
            args: args.clone(),
        });
        let bash: Arc<dyn Tool> = Arc::new(crate::tools::bash::BashTool);
        let output = self
            .call_tool(id, Some(&bash), "bash", args, events, cancel)
            .await;
        let output = cap_output(output, "bash", self.tool_output_dir()).await;
        let _ = events.send(AgentEvent::ToolResult {
            id: id.to_owned(),
            is_error: output.is_error,
            content: output.content.clone(),
        });
        output
    }

    /// Runs an allowed tool call, then the `tool_result` intercept.
    async fn run_tool(
        &self,
        id: &str,
        name: &str,
        args: Value,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        tracing::debug!(
            id,
            tool = name,
            args = %zot_protocol::log_preview(&args.to_string()),
            "tool call"
        );
        let ran_with = args.clone();
        let output = match self.subagents.spec() {
            Some(_) if name == TASK => self.run_task(id, &args, events, cancel).await,
            _ => {
                self.call_tool(id, self.builtin_tool(name), name, args, events, cancel)
                    .await
            }
        };
        self.hooks.tool_result(id, name, &ran_with, output).await
    }

    /// Runs a tool call (a built-in one when `builtin` is given, else an
    /// extension's), its progress forwarded as events.
    async fn call_tool(
        &self,
        id: &str,
        builtin: Option<&Arc<dyn Tool>>,
        name: &str,
        args: Value,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let (progress, mut reader) = progress_channel();
        let call = async move {
            match builtin {
                Some(tool) => {
                    let ctx = ToolContext {
                        cwd: self.config.cwd.clone(),
                        cancel: cancel.clone(),
                        progress: Some(progress),
                        output_dir: self.tool_output_dir(),
                        sandbox: self.config.sandbox,
                        bash_timeout: self.config.bash_timeout,
                        events: Some(events.clone()),
                    };
                    let output = tool.call(args, &ctx).await;
                    drop(ctx);
                    output
                }
                // Extension tools report progress too (MCP `notifications/progress`);
                // an abort drops the call, which its protocol turns into a cancellation.
                None => {
                    let output = tokio::select! {
                        biased;
                        () = cancel.cancelled() => ToolOutput::error("aborted"),
                        output = self.hooks.call_tool_with_progress(name, args, progress.clone()) => output,
                    };
                    drop(progress);
                    output
                }
            }
        };
        let forward = async {
            while let Some(chunk) = reader.recv().await {
                let _ = events.send(AgentEvent::ToolProgress {
                    id: id.to_owned(),
                    text: chunk.text,
                    dropped_bytes: chunk.dropped_bytes,
                });
                // What comes meanwhile is coalesced into the next event;
                // the end of the call is not kept waiting.
                tokio::select! {
                    () = tokio::time::sleep(PROGRESS_INTERVAL) => {}
                    () = reader.closed() => {}
                }
            }
        };
        let (output, ()) = tokio::join!(call, forward);
        output
    }
}

/// A tool call after its gates.
enum Gate {
    /// Allowed: run it with these arguments.
    Run(Value),
    /// Refused or failed before it ran: this is its result.
    Done(ToolOutput),
    /// The user refused it: the step stops.
    Refused,
}

/// What the model (and the front ends) get of a tool's result, from any
/// tool: at most [`output::MAX_TOOL_RESULT_BYTES`] of text, the whole saved
/// in `dir`.
async fn cap_output(output: ToolOutput, name: &str, dir: Option<PathBuf>) -> ToolOutput {
    let total: usize = output
        .content
        .iter()
        .map(|b| match b {
            Block::Text { text } => text.len(),
            _ => 0,
        })
        .sum();
    if total <= output::MAX_TOOL_RESULT_BYTES {
        return output;
    }
    let name = name.to_owned();
    tokio::task::spawn_blocking(move || output::cap(output, &name, dir.as_deref()))
        .await
        .unwrap_or_else(|e| ToolOutput::error(format!("internal error capping the output: {e}")))
}

impl Agent {
    /// Whether `name` runs a built-in tool that checks its own arguments
    /// (see [`Tool::checks_own_arguments`]).
    fn checks_own_arguments(&self, name: &str) -> bool {
        self.builtin_tool(name)
            .is_some_and(|tool| tool.checks_own_arguments())
    }

    /// The built-in (or added) tool called `name`.
    fn builtin_tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.builtin_specs
            .iter()
            .position(|s| s.name == name)
            .and_then(|i| self.builtin.get(i))
    }
}

impl Drop for Agent {
    /// A run without a session file keeps its full tool outputs only while
    /// it runs (the model may read them in a later turn); its folder goes
    /// with it. Runs that crash leave theirs to the next start-up's prune.
    fn drop(&mut self) {
        if let Some(root) = &self.config.tool_output {
            let dir = output::session_dir(root, &local_session_id());
            if dir.exists()
                && let Err(e) = std::fs::remove_dir_all(&dir)
            {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot remove tool outputs");
            }
        }
    }
}
