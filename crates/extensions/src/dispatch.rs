//! Calling into extensions: slash commands, tools, observers at each hook
//! point, the intercept chains (serial, in load order, fail-open), system
//! prompt preparation, and panel input. Every call goes through an
//! extension's adapter; the rules here hold for every protocol, shaped only
//! by each adapter's declared [`Semantics`](crate::model::Semantics).

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use zot_protocol::ui::CommandReply;
use zot_protocol::zot::{ContentBlock, Key};

use crate::adapter::{PanelInput, ProgressSink};
use crate::discovery::FoundStatus;
use crate::extension::Extension;
use crate::host::{Bound, ExtensionHost};
use crate::manifest::OnFailure;
use crate::model::{Ask, CustomSummary, Hook, HookPoint, Mode, Rewrite, Verdict};
use crate::transport::RequestError;

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

/// The outcome of an intercept chain.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// Go on; with `Some(value)` when the chain rewrote what it was asked about.
    Allow(Option<T>),
    Block {
        extension: String,
        reason: String,
    },
}

/// What extensions decided before a compaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactDecision {
    /// Set when compaction must not run, with the reason.
    pub blocked: Option<String>,
    /// Added to the summariser's instruction.
    pub instruction: Option<String>,
    /// A summary of an extension's own, replacing the messages before its index.
    pub custom: Option<CustomSummary>,
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

/// What a chain does with an interceptor's verdict.
enum Step {
    Continue,
    /// The first block wins and the chain stops.
    Stop(String),
}

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
        let link = self.link(&ext);
        let (outcome, error) = ext
            .adapter
            .command(&ext.peer, &link, &cmd.name, args.trim())
            .await
            .map_err(|source| DispatchError::Request {
                extension: ext.name().to_owned(),
                name: cmd.name.clone(),
                source,
            })?;
        Ok(CommandReply {
            extension: ext.name().to_owned(),
            command: cmd.name,
            outcome,
            error,
        })
    }

    /// Calls an active extension tool with the (post-intercept) arguments.
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<ToolReply, DispatchError> {
        self.call_tool_with_progress(name, args, None).await
    }

    /// [`call_tool`](Self::call_tool), with `progress` taking the progress
    /// text of protocols that report it (progress notifications).
    pub async fn call_tool_with_progress(
        &self,
        name: &str,
        args: Value,
        progress: Option<ProgressSink>,
    ) -> Result<ToolReply, DispatchError> {
        let found = {
            let state = self.inner.state();
            self.inner.live(&state).active_tool(name, &state.activated)
        };
        let Some(ext) = found else {
            return Err(DispatchError::UnknownTool(name.to_owned()));
        };
        let args = if args.is_null() {
            Value::Object(Default::default())
        } else {
            args
        };
        let answer = ext
            .adapter
            .call_tool(&ext.peer, name, args, progress)
            .await
            .map_err(|source| DispatchError::Request {
                extension: ext.name().to_owned(),
                name: name.to_owned(),
                source,
            })?;
        let activated = self.inner.activate(&answer.activate);
        Ok(ToolReply {
            extension: ext.name().to_owned(),
            content: answer.content,
            is_error: answer.is_error,
            activated,
        })
    }

    /// Tells every observer of the hook's point, in load order, then the
    /// participants; returns once each has heard.
    pub async fn observe(&self, hook: &Hook) {
        for ext in self.taking_part(hook.point(), Mode::Observe) {
            let link = self.link(&ext);
            ext.adapter.observe(&ext.peer, &link, hook).await;
        }
        self.tell_participants(hook).await;
    }

    /// Whether any extension intercepts `point` now (so callers build the
    /// request only when someone will read it).
    pub fn intercepted(&self, point: HookPoint) -> bool {
        !self.interceptors(point).is_empty()
            || (point == HookPoint::ToolCall && self.never_connected_blocker().is_some())
    }

    /// Asks tool-call interceptors, in load order: blocks end or join the
    /// chain as each protocol says; argument rewrites chain; failures allow.
    pub async fn intercept_tool_call(
        &self,
        tool_id: &str,
        tool_name: &str,
        args: &Value,
    ) -> Outcome<Value> {
        self.intercept_call_of(None, tool_id, tool_name, args).await
    }

    /// [`intercept_tool_call`](Self::intercept_tool_call) for a call a
    /// subagent made: `parent_tool_call_id` names the `task` call it runs for.
    pub async fn intercept_call_of(
        &self,
        parent_tool_call_id: Option<&str>,
        tool_id: &str,
        tool_name: &str,
        args: &Value,
    ) -> Outcome<Value> {
        let mut current = args.clone();
        let blocked = self
            .chain(
                HookPoint::ToolCall,
                "tool call",
                &mut current,
                |current| Ask::ToolCall {
                    id: tool_id.to_owned(),
                    name: tool_name.to_owned(),
                    args: current.clone(),
                    parent_tool_call_id: parent_tool_call_id.map(str::to_owned),
                },
                |current, rewrite| {
                    if let Rewrite::Args(new) = rewrite {
                        *current = new;
                    }
                },
            )
            .await;
        blocked.unwrap_or_else(|| Outcome::Allow((current != *args).then_some(current)))
    }

    /// Asks turn-start interceptors, in load order.
    pub async fn intercept_turn_start(&self, step: u32) -> Outcome<()> {
        let blocked = self
            .chain(
                HookPoint::TurnStart,
                "turn",
                &mut (),
                |()| Ask::TurnStart { step },
                |(), _| {},
            )
            .await;
        blocked.unwrap_or(Outcome::Allow(None))
    }

    /// Asks assistant-message interceptors, in load order: text replacements chain.
    pub async fn intercept_assistant_message(&self, text: &str) -> Outcome<String> {
        let mut current = text.to_owned();
        let blocked = self
            .chain(
                HookPoint::AssistantMessage,
                "assistant message",
                &mut current,
                |current| Ask::AssistantMessage {
                    text: current.clone(),
                },
                |current, rewrite| {
                    if let Rewrite::Text(new) = rewrite {
                        *current = new;
                    }
                },
            )
            .await;
        blocked.unwrap_or_else(|| Outcome::Allow((current != text).then_some(current)))
    }

    /// Asks tool-result interceptors, in load order: each may replace the
    /// output text and the error flag. Returns the (possibly new) pair.
    pub async fn intercept_tool_result(
        &self,
        tool: &str,
        args: &Value,
        output: String,
        is_error: bool,
    ) -> (String, bool) {
        self.intercept_result_of(None, "", tool, args, output, is_error)
            .await
    }

    /// [`intercept_tool_result`](Self::intercept_tool_result) for the call
    /// `id` (`parent`: the `task` call whose subagent made it).
    pub(crate) async fn intercept_result_of(
        &self,
        parent: Option<&str>,
        id: &str,
        tool: &str,
        args: &Value,
        output: String,
        is_error: bool,
    ) -> (String, bool) {
        let (mut output, mut is_error) = (output, is_error);
        let ask = |output: &String, is_error: bool| Ask::ToolResult {
            id: id.to_owned(),
            name: tool.to_owned(),
            args: args.clone(),
            output: output.clone(),
            is_error,
            parent_tool_call_id: parent.map(str::to_owned),
        };
        for ext in self.taking_part(HookPoint::ToolResult, Mode::Intercept) {
            let request = ask(&output, is_error);
            let link = self.link(&ext);
            let verdict = ext.adapter.intercept(&ext.peer, &link, &request).await;
            if let Some(Verdict::Rewrite(Rewrite::ToolOutput {
                output: new_output,
                is_error: new_flag,
            })) = verdict
            {
                output = new_output.unwrap_or(output);
                is_error = new_flag.unwrap_or(is_error);
            }
        }
        (output, is_error)
    }

    /// Asks the participants, then the compaction interceptors in load
    /// order (`automatic`: the context filled up): blocks (with their
    /// reasons) stop compaction; the last instruction wins; the last custom
    /// summary wins, and a later withdrawal resets it.
    pub async fn intercept_compaction(
        &self,
        automatic: bool,
        instruction: &str,
        tokens_before: u64,
        entries: Value,
    ) -> CompactDecision {
        let mut decision = CompactDecision::default();
        let apply = |decision: &mut CompactDecision, rewrite| {
            if let Rewrite::Compaction {
                instruction,
                summary,
            } = rewrite
            {
                if let Some(extra) = instruction {
                    decision.instruction = Some(extra);
                }
                if let Some(summary) = summary {
                    decision.custom = summary;
                }
            }
        };
        let ask = || Ask::BeforeCompact {
            automatic,
            instruction: instruction.to_owned(),
            tokens_before,
            entries: entries.clone(),
        };
        if self.participating(HookPoint::BeforeCompact) {
            let mut refusals = Vec::new();
            for (_, verdict) in self
                .ask_participants(HookPoint::BeforeCompact, &ask())
                .await
            {
                match verdict {
                    Verdict::Block(reason) => refusals.push(reason),
                    Verdict::Rewrite(rewrite) => apply(&mut decision, rewrite),
                    _ => {}
                }
            }
            if !refusals.is_empty() {
                decision.blocked = Some(refusals.join("; "));
                return decision;
            }
        }
        let blocked = self
            .chain(
                HookPoint::BeforeCompact,
                "compaction",
                &mut decision,
                |_| ask(),
                apply,
            )
            .await;
        if let Some(Outcome::<()>::Block { reason, .. }) = blocked {
            decision.blocked = Some(reason);
        }
        decision
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
            let facts = self.inner.cx.facts();
            (facts.provider.clone(), facts.model.clone())
        };
        let cwd = self.inner.cx.cwd().display().to_string();
        let limit = self.inner.cx.config.limits.max_system_prompt_bytes;
        'pass: loop {
            let mut current = base.borrow_and_update().clone();
            let agent_run_id = format!("run-{}", self.inner.cx.next_id());
            for ext in self.taking_part(HookPoint::BeforeAgentStart, Mode::Intercept) {
                let ask = Ask::BeforeAgentStart {
                    session_id: session_id.to_owned(),
                    agent_run_id: agent_run_id.clone(),
                    cwd: cwd.clone(),
                    provider: provider.clone(),
                    model: model.clone(),
                    system_prompt: current.clone(),
                };
                let link = self.link(&ext);
                let verdict = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Err(Cancelled),
                    Ok(()) = base.changed() => continue 'pass,
                    verdict = ext.adapter.intercept(&ext.peer, &link, &ask) => verdict,
                };
                let Some(Verdict::Rewrite(Rewrite::SystemPrompt(prompt))) = verdict else {
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
        self.panel_input(
            extension,
            PanelInput::Key {
                panel_id: panel_id.to_owned(),
                key,
                text,
            },
        )
    }

    /// Tells an extension the user closed its panel. Returns whether it was delivered.
    pub fn panel_close(&self, extension: &str, panel_id: &str) -> bool {
        self.panel_input(
            extension,
            PanelInput::Closed {
                panel_id: panel_id.to_owned(),
            },
        )
    }

    fn panel_input(&self, extension: &str, input: PanelInput) -> bool {
        let target = self
            .inner
            .extensions()
            .into_iter()
            .find(|e| e.name() == extension);
        target.is_some_and(|ext| ext.adapter.panel_input(&ext.peer, input))
    }

    fn link<'a>(&'a self, ext: &'a Extension) -> Bound<'a> {
        Bound {
            inner: &self.inner,
            ext,
        }
    }

    /// Interceptors of `point` in load order: the live ones taking part,
    /// and, in their places, the unreachable ones (gone, or reconnecting)
    /// whose manifest says `on_failure: block`, which block in their absence.
    fn interceptors(&self, point: HookPoint) -> Vec<Arc<Extension>> {
        let plan = self.inner.in_plan();
        let state = self.inner.state();
        state
            .extensions
            .iter()
            .filter(|e| {
                let hooked = e.registrations().hooks.contains(&(point, Mode::Intercept));
                hooked
                    && (e.is_alive() || e.on_failure == OnFailure::Block)
                    && (!plan || e.adapter.semantics().hooks_in_plan)
            })
            .cloned()
            .collect()
    }

    /// A remote extension with `on_failure: block` that has not connected
    /// since it was loaded: nobody knows what it would intercept, so tool
    /// calls (what a guard is for) are refused until it connects.
    fn never_connected_blocker(&self) -> Option<String> {
        let state = self.inner.state();
        state
            .found
            .iter()
            .find_map(|(found, outcome)| match (&found.status, outcome) {
                (FoundStatus::Load(m), Some(Err(_)))
                    if m.remote().is_some() && m.on_failure == OnFailure::Block =>
                {
                    Some(m.name.clone())
                }
                _ => None,
            })
    }

    /// Live extensions taking part at `point` in `mode` now, in load order
    /// (protocols quiet in plan mode are left out while it is on).
    fn taking_part(&self, point: HookPoint, mode: Mode) -> Vec<Arc<Extension>> {
        let plan = self.inner.in_plan();
        let mut exts = self.inner.extensions();
        exts.retain(|e| e.hooks(point, mode) && (!plan || e.adapter.semantics().hooks_in_plan));
        exts
    }

    /// One intercept chain in load order over `state`: `ask` builds the
    /// request for the next interceptor (seeing earlier rewrites, which
    /// `rewrite` applies to `state`). A block from a protocol with joined
    /// blocks is collected and the chain goes on for interceptors of the
    /// same kind only; any other block ends it. An interceptor that cannot
    /// answer allows (it has warned). Returns the block, if any.
    async fn chain<S, T>(
        &self,
        point: HookPoint,
        what: &str,
        state: &mut S,
        ask: impl Fn(&S) -> Ask,
        rewrite: impl Fn(&mut S, Rewrite),
    ) -> Option<Outcome<T>> {
        if point == HookPoint::ToolCall
            && let Some(name) = self.never_connected_blocker()
        {
            return Some(Outcome::Block {
                reason: format!(
                    "{what} blocked: extension {name} is unreachable (on_failure: block)"
                ),
                extension: name,
            });
        }
        let mut joined: Option<(String, Vec<String>)> = None;
        for ext in self.interceptors(point) {
            let joins = ext.adapter.semantics().joined_blocks;
            if joined.is_some() && !joins {
                continue;
            }
            let fails_closed = ext.on_failure == OnFailure::Block;
            let verdict = if ext.is_alive() {
                let request = ask(state);
                let link = self.link(&ext);
                ext.adapter.intercept(&ext.peer, &link, &request).await
            } else {
                None
            };
            let step = match verdict {
                None if fails_closed => Step::Stop(if ext.is_alive() {
                    format!(
                        "{what} blocked: extension {} could not answer (on_failure: block)",
                        ext.name()
                    )
                } else {
                    format!(
                        "{what} blocked: extension {} is unreachable (on_failure: block)",
                        ext.name()
                    )
                }),
                // What only the participants' points read means nothing in a chain.
                None
                | Some(
                    Verdict::Allow
                    | Verdict::Approve
                    | Verdict::AskUser(_)
                    | Verdict::Stop(_)
                    | Verdict::Context(_),
                ) => Step::Continue,
                Some(Verdict::Rewrite(change)) => {
                    rewrite(state, change);
                    Step::Continue
                }
                Some(Verdict::Block(reason)) if joins => {
                    match &mut joined {
                        Some((_, reasons)) => reasons.push(reason),
                        None => joined = Some((ext.name().to_owned(), vec![reason])),
                    }
                    Step::Continue
                }
                Some(Verdict::Block(reason)) => Step::Stop(
                    Some(reason)
                        .filter(|r| !r.trim().is_empty())
                        .unwrap_or_else(|| format!("{what} refused by extension {}", ext.name())),
                ),
            };
            if let Step::Stop(reason) = step {
                return Some(Outcome::Block {
                    extension: ext.name().to_owned(),
                    reason,
                });
            }
        }
        let (extension, reasons) = joined?;
        let mut reason = reasons.join("; ");
        if reason.is_empty() {
            reason = "blocked by extension".to_owned();
        }
        Some(Outcome::Block { extension, reason })
    }
}
