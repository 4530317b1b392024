//! Command hooks as a participant of the host: each hook point becomes the
//! Claude Code event it stands for, and each hook's answer becomes the
//! host's verdicts (exit 2 and `decision: "block"` a refusal, a
//! `permissionDecision` an approval, a question or a denial, `updatedInput`
//! a rewrite, `continue: false` a stop, `additionalContext` or plain stdout
//! context). The host merges them with everyone else's.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;
use zot_protocol::hooks::{Decision, HookEvent, HookOutput, ToolResponse};

use zot_extensions::model::{Ask, Hook, HookPoint, Rewrite, Verdict};
use zot_extensions::participant::{Participant, SessionFacts};

use crate::{Answer, CommandHooks, Event, tools};

impl Participant for CommandHooks {
    fn name(&self) -> &str {
        "hook"
    }

    fn takes_part(&self, point: HookPoint) -> bool {
        match point {
            HookPoint::ToolPermission => self.has(Event::PreToolUse),
            HookPoint::ToolResult => self.has(Event::PostToolUse),
            HookPoint::ToolConfirmation => self.has(Event::Notification),
            HookPoint::PromptSubmit => {
                self.has(Event::SessionStart) || self.has(Event::UserPromptSubmit)
            }
            HookPoint::Stop => self.has(Event::Stop) || self.has(Event::SubagentStop),
            HookPoint::BeforeCompact => self.has(Event::PreCompact),
            HookPoint::SessionEnd | HookPoint::Cleared => self.has(Event::SessionEnd),
            _ => false,
        }
    }

    fn observe<'a>(&'a self, facts: &'a SessionFacts, hook: &'a Hook) -> BoxFuture<'a, ()> {
        async move {
            let (event, subject, fields) = match hook {
                Hook::ToolConfirmation { name, .. } => (
                    Event::Notification,
                    String::new(),
                    HookEvent::Notification {
                        message: format!("zot needs your permission to use {name}"),
                    },
                ),
                Hook::SessionEnd { reason } => session_end(reason),
                Hook::Cleared => session_end("clear"),
                _ => return,
            };
            if self.has(event) {
                self.fire(facts, None, event, &subject, fields).await;
            }
        }
        .boxed()
    }

    fn intercept<'a>(
        &'a self,
        facts: &'a SessionFacts,
        ask: &'a Ask,
    ) -> BoxFuture<'a, Vec<Verdict>> {
        async move {
            match ask {
                Ask::ToolPermission {
                    id,
                    name,
                    args,
                    parent_tool_call_id,
                } => {
                    let parent = parent_tool_call_id.as_deref();
                    self.pre_tool_use(facts, parent, id, name, args).await
                }
                Ask::ToolResult {
                    id,
                    name,
                    args,
                    output,
                    is_error,
                    parent_tool_call_id,
                } => {
                    let call = (parent_tool_call_id.as_deref(), id.as_str(), name.as_str());
                    self.post_tool_use(facts, call, args, output, *is_error)
                        .await
                }
                Ask::PromptSubmit { start, prompt } => {
                    self.prompt_submit(facts, start.as_deref(), prompt).await
                }
                Ask::Stop {
                    again,
                    parent_tool_call_id,
                } => {
                    self.stop(facts, parent_tool_call_id.as_deref(), *again)
                        .await
                }
                Ask::BeforeCompact {
                    automatic,
                    instruction,
                    ..
                } => {
                    self.pre_compact(facts, *automatic, instruction).await;
                    Vec::new()
                }
                _ => Vec::new(),
            }
        }
        .boxed()
    }
}

/// `SessionEnd` (`reason`: clear, prompt_input_exit or other).
fn session_end(reason: &str) -> (Event, String, HookEvent) {
    (
        Event::SessionEnd,
        reason.to_owned(),
        HookEvent::SessionEnd {
            reason: reason.to_owned(),
        },
    )
}

impl CommandHooks {
    /// `PreToolUse` for a call of zot's tool `name` (`parent`: the `task`
    /// call whose subagent made it), each hook's answer in configuration
    /// order as denials, questions, approvals, rewrites, stops and context.
    async fn pre_tool_use(
        &self,
        facts: &SessionFacts,
        parent: Option<&str>,
        id: &str,
        name: &str,
        args: &Value,
    ) -> Vec<Verdict> {
        if !self.has(Event::PreToolUse) {
            return Vec::new();
        }
        let (tool_name, tool_input) = tools::to_claude(name, args);
        let fields = HookEvent::PreToolUse {
            tool_name: tool_name.clone(),
            tool_input,
            tool_use_id: id.to_owned(),
        };
        let answers = self
            .fire(facts, parent, Event::PreToolUse, &tool_name, fields)
            .await;
        let mut out = Vec::new();
        let mut updates = 0;
        for answer in answers {
            let json = match answer {
                Answer::Block(reason) => {
                    out.push(Verdict::Block(reason));
                    continue;
                }
                Answer::Ignored | Answer::Ok { json: None, .. } => continue,
                Answer::Ok { json: Some(j), .. } => j,
            };
            out.extend(stop_reason(&json).map(Verdict::Stop));
            out.extend(additional_context(&json).map(Verdict::Context));
            let specific = json.hook_specific_output.as_ref();
            let reason = specific
                .and_then(|s| s.permission_decision_reason.clone())
                .or_else(|| json.reason.clone())
                .unwrap_or_default();
            let decision = specific
                .and_then(|s| s.permission_decision)
                .or(json.decision);
            match decision {
                Some(Decision::Deny | Decision::Block) => {
                    out.push(Verdict::Block(if reason.is_empty() {
                        "denied by a hook".to_owned()
                    } else {
                        reason
                    }))
                }
                Some(Decision::Ask) => out.push(Verdict::AskUser(reason)),
                Some(Decision::Allow | Decision::Approve) => out.push(Verdict::Approve),
                None => {}
            }
            if let Some(updated) = specific.and_then(|s| s.updated_input.as_ref()) {
                updates += 1;
                let args = tools::from_claude(name, args, updated);
                out.push(Verdict::Rewrite(Rewrite::Args(args)));
            }
        }
        if updates > 1 {
            (self.warn)(
                "hook:PreToolUse".into(),
                format!("{updates} hooks rewrote the input of {tool_name}; the last one's applies"),
            );
        }
        out
    }

    /// `PostToolUse` after a call (`call`: the `task` call whose subagent
    /// made it, the call's id, the tool) ran: block reasons and additional
    /// context for the model, and stops.
    async fn post_tool_use(
        &self,
        facts: &SessionFacts,
        (parent, id, name): (Option<&str>, &str, &str),
        args: &Value,
        output: &str,
        is_error: bool,
    ) -> Vec<Verdict> {
        if !self.has(Event::PostToolUse) {
            return Vec::new();
        }
        let (tool_name, tool_input) = tools::to_claude(name, args);
        let tool_response = ToolResponse {
            output: output.to_owned(),
            is_error,
            success: !is_error,
            file_path: tool_input.get("file_path").cloned(),
        };
        let fields = HookEvent::PostToolUse {
            tool_name: tool_name.clone(),
            tool_input,
            tool_use_id: id.to_owned(),
            tool_response,
        };
        let answers = self
            .fire(facts, parent, Event::PostToolUse, &tool_name, fields)
            .await;
        let mut out = Vec::new();
        for answer in answers {
            match answer {
                // The call ran: a refusal is only a note for the model.
                Answer::Block(reason) => out.push(Verdict::Context(reason)),
                Answer::Ok { json: Some(j), .. } => {
                    out.extend(stop_reason(&j).map(Verdict::Stop));
                    out.extend(block_reason(&j).map(Verdict::Context));
                    out.extend(additional_context(&j).map(Verdict::Context));
                }
                _ => {}
            }
        }
        out
    }

    /// `SessionStart` then `UserPromptSubmit` before a prompt joins the
    /// conversation; `start` is `Some(source)` for the first prompt of a session.
    async fn prompt_submit(
        &self,
        facts: &SessionFacts,
        start: Option<&str>,
        prompt: &str,
    ) -> Vec<Verdict> {
        let mut out = Vec::new();
        if let Some(source) = start
            && self.has(Event::SessionStart)
        {
            let fields = HookEvent::SessionStart {
                source: source.to_owned(),
            };
            let answers = self
                .fire(facts, None, Event::SessionStart, source, fields)
                .await;
            // SessionStart cannot block: exit 2 only shows its reason.
            for answer in answers {
                match answer {
                    Answer::Block(reason) => (self.warn)("hook:SessionStart".into(), reason),
                    other => out.extend(context_of(other).map(Verdict::Context)),
                }
            }
        }
        if !self.has(Event::UserPromptSubmit) {
            return out;
        }
        let fields = HookEvent::UserPromptSubmit {
            prompt: prompt.to_owned(),
        };
        let answers = self
            .fire(facts, None, Event::UserPromptSubmit, "", fields)
            .await;
        for answer in answers {
            match answer {
                Answer::Block(reason) => out.push(Verdict::Block(reason)),
                Answer::Ok { json: Some(j), .. }
                    if block_reason(&j).is_some() || stop_reason(&j).is_some() =>
                {
                    out.extend(
                        block_reason(&j)
                            .or_else(|| stop_reason(&j))
                            .map(Verdict::Block),
                    );
                }
                other => out.extend(context_of(other).map(Verdict::Context)),
            }
        }
        out
    }

    /// `Stop` when the agent would end its answer, or `SubagentStop` when
    /// the subagent of the `task` call `parent` would: refusals send it on
    /// with their reasons; a `continue: false` lets it stop.
    async fn stop(&self, facts: &SessionFacts, parent: Option<&str>, again: bool) -> Vec<Verdict> {
        let (event, fields) = match parent {
            None => (
                Event::Stop,
                HookEvent::Stop {
                    stop_hook_active: again,
                },
            ),
            Some(_) => (
                Event::SubagentStop,
                HookEvent::SubagentStop {
                    stop_hook_active: again,
                },
            ),
        };
        if !self.has(event) {
            return Vec::new();
        }
        let answers = self.fire(facts, parent, event, "", fields).await;
        let mut out = Vec::new();
        for answer in answers {
            match answer {
                Answer::Block(reason) => out.push(Verdict::Block(reason)),
                Answer::Ok { json: Some(j), .. } => {
                    out.extend(stop_reason(&j).map(Verdict::Stop));
                    out.extend(block_reason(&j).map(Verdict::Block));
                }
                _ => {}
            }
        }
        out
    }

    /// `PreCompact` (`trigger`: manual or auto); what the hooks say changes nothing.
    async fn pre_compact(&self, facts: &SessionFacts, automatic: bool, instructions: &str) {
        if self.has(Event::PreCompact) {
            let trigger = if automatic { "auto" } else { "manual" };
            let fields = HookEvent::PreCompact {
                trigger: trigger.to_owned(),
                custom_instructions: instructions.to_owned(),
            };
            self.fire(facts, None, Event::PreCompact, trigger, fields)
                .await;
        }
    }
}

/// `decision: "block"`, with its `reason`.
fn block_reason(json: &HookOutput) -> Option<String> {
    (json.decision == Some(Decision::Block)).then(|| {
        json.reason
            .clone()
            .unwrap_or_else(|| "blocked by a hook".to_owned())
    })
}

/// `continue: false`, with its `stopReason`.
fn stop_reason(json: &HookOutput) -> Option<String> {
    (json.continue_ == Some(false)).then(|| {
        json.stop_reason
            .clone()
            .unwrap_or_else(|| "stopped by a hook".to_owned())
    })
}

fn additional_context(json: &HookOutput) -> Option<String> {
    json.hook_specific_output
        .as_ref()
        .and_then(|s| s.additional_context.as_deref())
        .filter(|c| !c.trim().is_empty())
        .map(str::to_owned)
}

/// Context from an exit-0 answer: `additionalContext`, or plain stdout.
fn context_of(answer: Answer) -> Option<String> {
    match answer {
        Answer::Ok { json: Some(j), .. } => additional_context(&j),
        Answer::Ok { stdout, json: None } => {
            let text = stdout.trim();
            (!text.is_empty()).then(|| text.to_owned())
        }
        _ => None,
    }
}
