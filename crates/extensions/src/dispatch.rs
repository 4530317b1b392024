//! Calling into extensions: slash commands, tools, one-way lifecycle events,
//! the intercept chains (serial, in load order, fail-open), system prompt
//! preparation, and panel input.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use zot_protocol::zot::{
    CommandAction, CommandInvoked, ContentBlock, Event, EventIntercept, ExtFrame, HostFrame,
    Intercept, InterceptResponse, Key, PanelClose, PanelContent, PanelKey, ToolCall,
};

use crate::connection::{Reply, RequestError};
use crate::dialect::zot::json_kind;
use crate::extension::Extension;
use crate::host::ExtensionHost;
use crate::host::HostEvent;
use crate::manifest::Dialect;
use zot_protocol::nimlet::{HostFrame as NimletFrame, Response as NimletResponse};
use zot_protocol::zot::NotifyLevel;

/// Why a command or tool call produced no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DispatchError {
    #[error("unknown command /{0}")]
    UnknownCommand(String),
    #[error("unknown tool \"{0}\"")]
    UnknownTool(String),
    #[error("extension {extension}/{name} failed: {source}")]
    Request {
        extension: String,
        name: String,
        #[source]
        source: RequestError,
    },
}

/// An extension's answer to a slash command.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandReply {
    pub extension: String,
    /// The command's registered spelling.
    pub command: String,
    pub outcome: CommandOutcome,
    /// When non-empty, shown as an error line whatever the outcome.
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CommandOutcome {
    /// Submit as a user prompt (queued if a turn is running).
    Prompt(String),
    /// Insert into the editor at the cursor.
    Insert(String),
    /// A one-shot note: not in the transcript, never sent to the model.
    Display(String),
    OpenPanel(PanelContent),
    Noop,
}

/// An extension tool's result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    pub extension: String,
    /// Text and image blocks (unknown block types arrive as a text note).
    pub content: Vec<ContentBlock>,
    pub is_error: bool,
    /// Deferred tools this result made visible.
    pub activated: Vec<String>,
}

/// The outcome of the `tool_call` intercept chain.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallVerdict {
    /// Run the tool; with `Some(args)` when the chain rewrote them.
    Allow {
        args: Option<Value>,
    },
    Block {
        extension: String,
        reason: String,
    },
}

/// The outcome of the `turn_start` intercept chain.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnVerdict {
    Allow,
    Block { extension: String, reason: String },
}

/// The outcome of the `assistant_message` intercept chain.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageVerdict {
    /// Show the message; with `Some(text)` when the chain replaced the visible text.
    Allow {
        text: Option<String>,
    },
    Block {
        extension: String,
        reason: String,
    },
}

/// What nimlet extensions decided before a compaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactDecision {
    /// Set when compaction must not run, with the reason.
    pub blocked: Option<String>,
    /// Added to the summariser's instruction.
    pub instruction: Option<String>,
    /// A custom summary and how many messages from the start it replaces.
    pub custom: Option<(String, usize)>,
}

/// A system prompt after the `before_agent_start` chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedPrompt {
    pub system_prompt: String,
    /// Identifies the pass that produced it; shared by every extension in that pass.
    pub agent_run_id: String,
}

/// Prompt preparation was cancelled; no replacement is committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("system prompt preparation cancelled")]
pub struct Cancelled;

impl ExtensionHost {
    /// Runs an extension slash command (`name` case-insensitively, with or without `/`).
    pub async fn invoke_command(
        &self,
        name: &str,
        args: &str,
    ) -> Result<CommandReply, DispatchError> {
        let name = name.strip_prefix('/').unwrap_or(name);
        let found = {
            let state = self.inner.state();
            self.inner.live(&state).find_command(name)
        };
        let Some((ext, cmd)) = found else {
            return Err(DispatchError::UnknownCommand(name.to_owned()));
        };
        let fail = |source| DispatchError::Request {
            extension: ext.name.clone(),
            name: cmd.name.clone(),
            source,
        };
        let id = self.inner.next_id();
        if ext.dialect == Dialect::Nimlet {
            let frame = NimletFrame::Command {
                id: id.clone(),
                name: cmd.name.clone(),
                arguments: args.trim().to_owned(),
            };
            let response = self
                .inner
                .nimlet_request(&ext, &id, &frame)
                .await
                .map_err(fail)?;
            // `message` is printed, then `prompt` starts a turn; both may come.
            let message = response.message.filter(|m| !m.is_empty());
            let outcome = match (response.prompt.filter(|p| !p.trim().is_empty()), message) {
                (Some(prompt), message) => {
                    if let Some(message) = message {
                        self.inner.emit(HostEvent::Notify {
                            extension: ext.name.clone(),
                            level: NotifyLevel::Info,
                            message,
                        });
                    }
                    CommandOutcome::Prompt(prompt)
                }
                (None, Some(message)) => CommandOutcome::Display(message),
                (None, None) => CommandOutcome::Noop,
            };
            return Ok(CommandReply {
                extension: ext.name.clone(),
                command: cmd.name,
                outcome,
                error: None,
            });
        }
        let frame = HostFrame::CommandInvoked(CommandInvoked {
            id: id.clone(),
            name: cmd.name.clone(),
            args: args.trim().to_owned(),
        });
        let reply = ext
            .conn
            .request(&id, &frame, Some(self.inner.config.limits.command_timeout))
            .await;
        let response = match reply.and_then(zot_frame).map_err(fail)? {
            ExtFrame::CommandResponse(r) => r,
            other => return Err(fail(unexpected(&other))),
        };
        let text = |s: Option<String>| s.unwrap_or_default();
        let outcome = match response.action {
            CommandAction::Prompt => CommandOutcome::Prompt(text(response.prompt)),
            CommandAction::Insert => CommandOutcome::Insert(text(response.insert)),
            CommandAction::Display => CommandOutcome::Display(text(response.display)),
            CommandAction::OpenPanel => match response.open_panel {
                Some(panel) => CommandOutcome::OpenPanel(panel),
                None => {
                    return Err(fail(RequestError::Malformed(
                        "action open_panel without an open_panel object".into(),
                    )));
                }
            },
            CommandAction::Noop => CommandOutcome::Noop,
        };
        Ok(CommandReply {
            extension: ext.name.clone(),
            command: cmd.name,
            outcome,
            error: response.error.filter(|e| !e.trim().is_empty()),
        })
    }

    /// Calls an active extension tool with the (post-intercept) arguments.
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<ToolReply, DispatchError> {
        let found = {
            let state = self.inner.state();
            let tools = self.inner.live(&state).active_tools(&state.activated);
            tools.into_iter().find(|(_, t)| t.name == name)
        };
        let Some((ext, tool)) = found else {
            return Err(DispatchError::UnknownTool(name.to_owned()));
        };
        let args = if args.is_null() {
            Value::Object(Default::default())
        } else {
            args
        };
        let fail = |source| DispatchError::Request {
            extension: ext.name.clone(),
            name: tool.name.clone(),
            source,
        };
        let id = self.inner.next_id();
        if ext.dialect == Dialect::Nimlet {
            let frame = NimletFrame::Tool {
                id: id.clone(),
                name: tool.name.clone(),
                arguments: args,
            };
            // Dropped before the reply (the user aborted the turn): tell the extension.
            let mut cancel = CancelOnDrop {
                ext: &ext,
                id: Some(id.clone()),
            };
            let response = self.inner.nimlet_request(&ext, &id, &frame).await;
            cancel.id = None;
            let response = response.map_err(fail)?;
            let text = response
                .content
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let is_error = response
                .is_error
                .as_ref()
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let content = if text.is_empty() {
                Vec::new()
            } else {
                vec![ContentBlock::Text { text }]
            };
            return Ok(ToolReply {
                extension: ext.name.clone(),
                content,
                is_error,
                activated: Vec::new(),
            });
        }
        let frame = HostFrame::ToolCall(ToolCall {
            id: id.clone(),
            name: tool.name.clone(),
            args,
        });
        let reply = ext
            .conn
            .request(&id, &frame, Some(self.inner.config.limits.tool_timeout))
            .await;
        let result = match reply.and_then(zot_frame).map_err(fail)? {
            ExtFrame::ToolResult(r) => r,
            other => return Err(fail(unexpected(&other))),
        };
        let content = result
            .content
            .into_iter()
            .filter(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()))
            .map(|b| match b {
                ContentBlock::Unsupported => ContentBlock::Text {
                    text: format!("[unsupported content block from extension {}]", ext.name),
                },
                other => other,
            })
            .collect();
        let activated = self.inner.activate(&result.activate_tools);
        Ok(ToolReply {
            extension: ext.name.clone(),
            content,
            is_error: result.is_error,
            activated,
        })
    }

    /// Sends a one-way lifecycle event to every live subscriber, in order per extension.
    pub fn emit_event(&self, event: &Event) {
        let frame = HostFrame::Event(event.clone());
        for ext in self.inner.extensions() {
            // A nimlet subscription of the same name means a request, not this one-way event.
            if ext.dialect == Dialect::Zot && ext.subscribes(event.name()) {
                ext.conn.send(&frame);
            }
        }
    }

    /// Asks `tool_call` interceptors, in load order: the first block wins,
    /// argument rewrites chain; failures allow.
    pub async fn intercept_tool_call(
        &self,
        tool_id: &str,
        tool_name: &str,
        args: &Value,
    ) -> ToolCallVerdict {
        let mut current = args.clone();
        // zot interceptors and nimlet tool_call subscribers form one chain in load order.
        let chain: Vec<Arc<Extension>> = self
            .inner
            .extensions()
            .into_iter()
            .filter(|e| match e.dialect {
                Dialect::Zot => e.intercepts("tool_call"),
                Dialect::Nimlet => {
                    e.subscribes("tool_call")
                        && !self.inner.plan.load(std::sync::atomic::Ordering::SeqCst)
                }
            })
            .collect();
        // nimlet denials do not stop the chain for other nimlet subscribers
        // (they still see the event); their reasons are joined with "; ".
        let mut denied: Option<(String, Vec<String>)> = None;
        for ext in chain {
            if ext.dialect == Dialect::Nimlet {
                let payload = serde_json::json!({"tool": tool_name, "arguments": current});
                let Some(reply) = self.nimlet_event(&ext, "tool_call", payload).await else {
                    continue;
                };
                if reply.allow == Some(Value::Bool(false)) {
                    let reason = reply.reason.unwrap_or_default();
                    match &mut denied {
                        Some((_, reasons)) => reasons.push(reason),
                        None => denied = Some((ext.name.clone(), vec![reason])),
                    }
                    continue;
                }
                if let Some(new @ Value::Object(_)) = reply.arguments {
                    current = new;
                }
                continue;
            }
            if denied.is_some() {
                continue;
            }
            let payload = Intercept::ToolCall {
                tool_id: tool_id.to_owned(),
                tool_name: tool_name.to_owned(),
                tool_args: current.clone(),
            };
            let Some(reply) = self.ask(&ext, payload).await else {
                continue;
            };
            if reply.block {
                let reason = block_reason(reply.reason, &ext, "tool call");
                return ToolCallVerdict::Block {
                    extension: ext.name.clone(),
                    reason,
                };
            }
            match reply.modified_args {
                Some(new @ Value::Object(_)) => current = new,
                Some(other) => self.inner.warn(
                    &ext,
                    format!(
                        "modified_args must be a JSON object, got {}; ignored",
                        json_kind(&other)
                    ),
                ),
                None => {}
            }
        }
        if let Some((extension, reasons)) = denied {
            let mut reason = reasons.join("; ");
            if reason.is_empty() {
                reason = "blocked by extension".to_owned();
            }
            return ToolCallVerdict::Block { extension, reason };
        }
        let args = (current != *args).then_some(current);
        ToolCallVerdict::Allow { args }
    }

    /// Asks `turn_start` interceptors, in load order: the first block wins.
    pub async fn intercept_turn_start(&self, step: u32) -> TurnVerdict {
        for ext in self.interceptors("turn_start") {
            let Some(reply) = self.ask(&ext, Intercept::TurnStart { step }).await else {
                continue;
            };
            if reply.block {
                let reason = block_reason(reply.reason, &ext, "turn");
                return TurnVerdict::Block {
                    extension: ext.name.clone(),
                    reason,
                };
            }
        }
        TurnVerdict::Allow
    }

    /// Asks `assistant_message` interceptors, in load order: the first block
    /// wins, `replace_text` rewrites chain. An empty `replace_text` is no
    /// change (blocking is how a message is suppressed).
    pub async fn intercept_assistant_message(&self, text: &str) -> MessageVerdict {
        let mut current = text.to_owned();
        for ext in self.interceptors("assistant_message") {
            let payload = Intercept::AssistantMessage {
                text: current.clone(),
            };
            let Some(reply) = self.ask(&ext, payload).await else {
                continue;
            };
            if reply.block {
                let reason = block_reason(reply.reason, &ext, "assistant message");
                return MessageVerdict::Block {
                    extension: ext.name.clone(),
                    reason,
                };
            }
            if let Some(replacement) = reply.replace_text.filter(|t| !t.is_empty()) {
                current = replacement;
            }
        }
        MessageVerdict::Allow {
            text: (current != text).then_some(current),
        }
    }

    /// Runs the `before_agent_start` chain over the base prompt in `base`
    /// (spec, "System prompt replacement"): serial in load order, each
    /// extension sees the previous result, exact replacement ("" removes,
    /// omission keeps), failures keep the prompt with a warning. When `base`
    /// changes during a pass (a reset, even to the same text) the pass is
    /// discarded and the chain reruns from the new base with a new run id.
    pub async fn prepare_system_prompt(
        &self,
        session_id: &str,
        base: &mut watch::Receiver<String>,
        cancel: &CancellationToken,
    ) -> Result<PreparedPrompt, Cancelled> {
        let (provider, model) = {
            let state = self.inner.state();
            (state.provider.clone(), state.model.clone())
        };
        let cwd = self.inner.cwd().display().to_string();
        let limit = self.inner.config.limits.max_system_prompt_bytes;
        'pass: loop {
            let mut current = base.borrow_and_update().clone();
            let agent_run_id = format!("run-{}", self.inner.next_id());
            for ext in self.interceptors("before_agent_start") {
                let payload = Intercept::BeforeAgentStart {
                    session_id: session_id.to_owned(),
                    agent_run_id: agent_run_id.clone(),
                    cwd: cwd.clone(),
                    provider: provider.clone(),
                    model: model.clone(),
                    system_prompt: current.clone(),
                };
                let ask = self.ask(&ext, payload);
                let reply = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Err(Cancelled),
                    Ok(()) = base.changed() => continue 'pass,
                    reply = ask => reply,
                };
                let Some(prompt) = reply.and_then(|r| r.system_prompt) else {
                    continue;
                };
                let encoded = serde_json::to_string(&prompt).map_or(usize::MAX, |s| s.len());
                if encoded > limit {
                    self.inner.warn(
                        &ext,
                        format!("system_prompt reply is {encoded} bytes encoded, over the {limit} byte limit; prompt kept"),
                    );
                } else {
                    current = prompt;
                }
            }
            return Ok(PreparedPrompt {
                system_prompt: current,
                agent_run_id,
            });
        }
    }

    /// Sends a key to the extension that owns an open panel. Returns whether it was delivered.
    pub fn panel_key(
        &self,
        extension: &str,
        panel_id: &str,
        key: Key,
        text: Option<String>,
    ) -> bool {
        let frame = HostFrame::PanelKey(PanelKey {
            panel_id: panel_id.to_owned(),
            key,
            text,
        });
        self.send_to(extension, &frame)
    }

    /// Tells an extension the user closed its panel. Returns whether it was delivered.
    pub fn panel_close(&self, extension: &str, panel_id: &str) -> bool {
        let frame = HostFrame::PanelClose(PanelClose {
            panel_id: panel_id.to_owned(),
        });
        self.send_to(extension, &frame)
    }

    fn send_to(&self, extension: &str, frame: &HostFrame) -> bool {
        let target = self
            .inner
            .extensions()
            .into_iter()
            .find(|e| e.name == extension);
        target.map(|ext| ext.conn.send(frame)).is_some()
    }

    fn interceptors(&self, event: &str) -> Vec<Arc<Extension>> {
        let mut exts = self.inner.extensions();
        exts.retain(|e| e.dialect == Dialect::Zot && e.intercepts(event));
        exts
    }

    /// nimlet subscribers of `event`, in load order.
    fn nimlet_subscribers(&self, event: &str) -> Vec<Arc<Extension>> {
        if self.inner.plan.load(std::sync::atomic::Ordering::SeqCst) {
            return Vec::new();
        }
        let mut exts = self.inner.extensions();
        exts.retain(|e| e.dialect == Dialect::Nimlet && e.subscribes(event));
        exts
    }

    /// One nimlet lifecycle request; `None` with a warning when it fails
    /// (timeout, crash, malformed reply): nimlet is fail-open.
    async fn nimlet_event(
        &self,
        ext: &Extension,
        event: &str,
        payload: Value,
    ) -> Option<NimletResponse> {
        let id = self.inner.next_id();
        let frame = NimletFrame::Event {
            id: id.clone(),
            event: event.to_owned(),
            payload,
        };
        match self.inner.nimlet_request(ext, &id, &frame).await {
            Ok(reply) => Some(reply),
            Err(e) => {
                self.inner
                    .warn(ext, format!("extension '{}': {event}: {e}", ext.name));
                None
            }
        }
    }

    /// Sends an acknowledge-only nimlet event to every subscriber, one after another.
    async fn nimlet_notice(&self, event: &str, payload: Value) {
        for ext in self.nimlet_subscribers(event) {
            self.nimlet_event(&ext, event, payload.clone()).await;
        }
    }

    fn session_payload(&self) -> serde_json::Map<String, Value> {
        let session_id = self.inner.state().session_id.clone();
        let mut map = serde_json::Map::new();
        map.insert("session_id".into(), Value::String(session_id));
        map.insert(
            "workspace".into(),
            Value::String(self.inner.cwd().display().to_string()),
        );
        map
    }

    /// nimlet `session_start`: the agent is ready (start-up, or a new session).
    pub async fn session_started(&self) {
        self.nimlet_notice("session_start", Value::Object(self.session_payload()))
            .await;
    }

    /// nimlet `session_end`: before a session switch and at exit, in every mode.
    pub async fn session_ended(&self) {
        self.nimlet_notice("session_end", Value::Object(self.session_payload()))
            .await;
    }

    /// nimlet `turn_start`: once per user prompt (not per model call).
    pub async fn prompt_started(&self) {
        self.nimlet_notice("turn_start", Value::Object(self.session_payload()))
            .await;
    }

    /// nimlet `turn_end`: the prompt finished, failed or was interrupted.
    pub async fn prompt_ended(&self, interrupted: bool) {
        let mut payload = self.session_payload();
        if interrupted {
            payload.insert("interrupted".into(), Value::Bool(true));
        }
        self.nimlet_notice("turn_end", Value::Object(payload)).await;
    }

    /// nimlet `tool_result`: subscribers may replace the output and the error
    /// flag, chained in load order. Returns the (possibly new) output and flag.
    pub async fn after_tool(
        &self,
        tool: &str,
        arguments: &Value,
        output: String,
        is_error: bool,
    ) -> (String, bool) {
        let (mut output, mut is_error) = (output, is_error);
        for ext in self.nimlet_subscribers("tool_result") {
            let payload = serde_json::json!({"tool": tool, "arguments": arguments, "output": output, "is_error": is_error});
            let Some(reply) = self.nimlet_event(&ext, "tool_result", payload).await else {
                continue;
            };
            if let Some(Value::String(new)) = reply.output {
                output = new;
            }
            if let Some(Value::Bool(flag)) = reply.is_error {
                is_error = flag;
            }
        }
        (output, is_error)
    }

    /// nimlet `session_before_compact`, in load order: any `allow: false`
    /// blocks (reasons joined with "; "); the last `instruction` string wins;
    /// the last valid `compaction` object wins, and a later one with an empty
    /// summary resets it (research nimlet.md E34).
    pub async fn before_compact(
        &self,
        instruction: &str,
        tokens_before: u64,
        entries: Value,
    ) -> CompactDecision {
        let mut decision = CompactDecision::default();
        let mut reasons = Vec::new();
        for ext in self.nimlet_subscribers("session_before_compact") {
            let mut payload = self.session_payload();
            payload.insert("instruction".into(), Value::String(instruction.to_owned()));
            payload.insert("tokens_before".into(), Value::from(tokens_before));
            payload.insert("entries".into(), entries.clone());
            let Some(reply) = self
                .nimlet_event(&ext, "session_before_compact", Value::Object(payload))
                .await
            else {
                continue;
            };
            if reply.allow == Some(Value::Bool(false)) {
                reasons.push(reply.reason.unwrap_or_default());
                continue;
            }
            if let Some(extra) = reply.instruction {
                decision.instruction = Some(extra);
            }
            if let Some(compaction) = reply.compaction {
                let summary = compaction.get("summary").and_then(Value::as_str);
                let index = compaction.get("first_kept_index").and_then(Value::as_u64);
                if let (Some(summary), Some(index)) = (summary, index) {
                    decision.custom =
                        (!summary.is_empty()).then(|| (summary.to_owned(), index as usize));
                }
            }
        }
        if !reasons.is_empty() {
            let reason = reasons.join("; ");
            decision.blocked = Some(if reason.is_empty() {
                "blocked by extension".to_owned()
            } else {
                reason
            });
        }
        decision
    }

    /// nimlet `session_compact`: how a compaction went (not sent when one was blocked).
    pub async fn compacted(
        &self,
        did_compact: bool,
        summary: &str,
        first_kept_index: usize,
        tokens_before: u64,
        message: &str,
    ) {
        let mut payload = self.session_payload();
        payload.insert("did_compact".into(), Value::Bool(did_compact));
        payload.insert("summary".into(), Value::String(summary.to_owned()));
        payload.insert("first_kept_index".into(), Value::from(first_kept_index));
        payload.insert("tokens_before".into(), Value::from(tokens_before));
        payload.insert("message".into(), Value::String(message.to_owned()));
        self.nimlet_notice("session_compact", Value::Object(payload))
            .await;
    }

    /// Whether any extension subscribed to nimlet's `tool_result` (so the
    /// agent only builds the output text when someone wants it).
    pub fn wants_tool_results(&self) -> bool {
        !self.nimlet_subscribers("tool_result").is_empty()
    }

    /// One intercept request; `None` (allow) with a warning on timeout,
    /// crash or a malformed reply.
    async fn ask(&self, ext: &Extension, payload: Intercept) -> Option<InterceptResponse> {
        let event = payload.name();
        let id = self.inner.next_id();
        let frame = HostFrame::EventIntercept(EventIntercept {
            id: id.clone(),
            payload,
        });
        let deadline = self.inner.config.limits.intercept_timeout;
        let problem = match ext.conn.request(&id, &frame, Some(deadline)).await {
            Ok(reply) => match zot_frame(reply) {
                Ok(ExtFrame::EventInterceptResponse(reply)) => return Some(reply),
                Ok(other) => unexpected(&other).to_string(),
                Err(e) => e.to_string(),
            },
            Err(RequestError::Timeout(after)) => format!("timed out after {after:?}"),
            Err(e) => e.to_string(),
        };
        let keep = if event == "before_agent_start" {
            "keeping the prompt"
        } else {
            "allowing"
        };
        self.inner
            .warn(ext, format!("intercept {event} {problem}; {keep}"));
        None
    }
}

fn unexpected(frame: &ExtFrame) -> RequestError {
    RequestError::Malformed(format!("unexpected {} reply", frame.type_name()))
}

/// A zot extension's reply frame.
fn zot_frame(reply: Reply) -> Result<ExtFrame, RequestError> {
    match reply {
        Reply::Zot(frame) => Ok(*frame),
        Reply::Nimlet(_) => Err(RequestError::Malformed("unexpected nimlet response".into())),
    }
}

/// Sends nimlet's `cancel{id}` if a tool call is dropped before its reply.
struct CancelOnDrop<'a> {
    ext: &'a Extension,
    id: Option<String>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.ext.conn.send(&NimletFrame::Cancel { id });
        }
    }
}

fn block_reason(reason: Option<String>, ext: &Extension, what: &str) -> String {
    reason
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| format!("{what} refused by extension {}", ext.name))
}
