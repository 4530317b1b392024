//! The hook points where the agent needs one decision from everyone taking
//! part (the permission of a tool call, a submitted prompt, the agent
//! stopping, a tool's result): each point is raised once, every participant
//! answers with [`Verdict`]s, and the verdicts merge here by one rule per
//! point. The intercept chains of the extensions live in `dispatch.rs`.

use std::sync::Arc;

use serde_json::Value;

use crate::host::ExtensionHost;
use crate::model::{Ask, Hook, HookPoint, Rewrite, Verdict};
use crate::participant::{Participant, SessionFacts};

/// What the participants decided about a tool call before its confirmation.
#[derive(Debug, Clone, PartialEq)]
pub enum Permission {
    /// Run it without asking the user.
    Allow,
    /// Ask the user, even when zot would not.
    Ask(String),
    /// Refuse it; the model sees the reason.
    Deny(String),
}

/// The merged answer before a tool call's confirmation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PermissionDecision {
    /// `None`: nobody decided; zot's own rules apply.
    pub permission: Option<Permission>,
    /// The arguments after the last rewrite.
    pub args: Option<Value>,
    /// The agent stops after this call, with this reason.
    pub stop: Option<String>,
    /// Text the model reads with the call's result (beside the refusal,
    /// when the call is refused).
    pub context: Vec<String>,
}

/// Who refused, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub by: String,
    pub reason: String,
}

/// The merged answer before a user prompt joins the conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptDecision {
    /// The prompt is dropped; the user sees why.
    pub blocked: Option<Refusal>,
    /// Text added before the prompt, for the model.
    pub context: Vec<String>,
}

/// A tool's result after the extensions' interceptors and the participants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultDecision {
    pub output: String,
    pub is_error: bool,
    /// What the model reads after the output.
    pub notes: Vec<String>,
    /// The agent stops after this group of tools, with this reason.
    pub stop: Option<String>,
}

impl ExtensionHost {
    /// Before the confirmation of a tool call (`parent`: the `task` call
    /// whose subagent made it): a denial beats a question to the user,
    /// which beats an approval; the last rewrite of the arguments wins; the
    /// first stop wins; every context is kept.
    pub async fn tool_permission(
        &self,
        parent: Option<&str>,
        id: &str,
        name: &str,
        args: &Value,
    ) -> PermissionDecision {
        let mut out = PermissionDecision::default();
        if !self.participating(HookPoint::ToolPermission) {
            return out;
        }
        let ask = Ask::ToolPermission {
            id: id.to_owned(),
            name: name.to_owned(),
            args: args.clone(),
            parent_tool_call_id: parent.map(str::to_owned),
        };
        let (mut denied, mut asked, mut approved) = (Vec::new(), Vec::new(), false);
        for (_, verdict) in self.ask_participants(HookPoint::ToolPermission, &ask).await {
            match verdict {
                Verdict::Block(reason) => denied.push(reason),
                Verdict::AskUser(reason) => asked.push(reason),
                Verdict::Approve => approved = true,
                Verdict::Rewrite(Rewrite::Args(new)) => out.args = Some(new),
                Verdict::Stop(reason) => {
                    out.stop.get_or_insert(reason);
                }
                Verdict::Context(text) => out.context.push(text),
                Verdict::Allow | Verdict::Rewrite(_) => {}
            }
        }
        out.permission = if !denied.is_empty() {
            Some(Permission::Deny(denied.join("; ")))
        } else if !asked.is_empty() {
            let reasons: Vec<String> = asked.into_iter().filter(|r| !r.is_empty()).collect();
            Some(Permission::Ask(reasons.join("; ")))
        } else if approved {
            Some(Permission::Allow)
        } else {
            None
        };
        out
    }

    /// Before a user prompt joins the conversation (`start`: why it is the
    /// first of its session, for the first): refusals join with "; ", and
    /// a stop refuses the prompt too; contexts are kept in order.
    pub async fn prompt_submit(&self, start: Option<&str>, prompt: &str) -> PromptDecision {
        let mut out = PromptDecision::default();
        if !self.participating(HookPoint::PromptSubmit) {
            return out;
        }
        let ask = Ask::PromptSubmit {
            start: start.map(str::to_owned),
            prompt: prompt.to_owned(),
        };
        let mut blocked: Option<(String, Vec<String>)> = None;
        for (by, verdict) in self.ask_participants(HookPoint::PromptSubmit, &ask).await {
            match verdict {
                Verdict::Block(reason) | Verdict::Stop(reason) => {
                    blocked
                        .get_or_insert_with(|| (by, Vec::new()))
                        .1
                        .push(reason);
                }
                Verdict::Context(text) => out.context.push(text),
                _ => {}
            }
        }
        out.blocked = blocked.map(|(by, reasons)| Refusal {
            by,
            reason: reasons.join("; "),
        });
        out
    }

    /// The agent (`parent`: the subagent of that `task` call) would end
    /// its answer; `again` when that answer already followed an
    /// instruction to go on. `Some(instruction)` sends it on: the
    /// refusals, one a line. A stop verdict lets it stop, whatever else was said.
    pub async fn stopping(&self, parent: Option<&str>, again: bool) -> Option<String> {
        if !self.participating(HookPoint::Stop) {
            return None;
        }
        let ask = Ask::Stop {
            again,
            parent_tool_call_id: parent.map(str::to_owned),
        };
        let mut reasons = Vec::new();
        for (_, verdict) in self.ask_participants(HookPoint::Stop, &ask).await {
            match verdict {
                Verdict::Stop(_) => return None,
                Verdict::Block(reason) => reasons.push(reason),
                _ => {}
            }
        }
        (!reasons.is_empty()).then(|| reasons.join("\n"))
    }

    /// A tool ran (`parent`: the `task` call whose subagent made the call):
    /// the extensions' interceptors may rewrite its output, then the
    /// participants see what they made of it and may rewrite it again, add
    /// notes for the model (context, and refusals, which come too late to
    /// stop the call) or stop the agent after this group of tools.
    pub async fn tool_result(
        &self,
        parent: Option<&str>,
        id: &str,
        name: &str,
        args: &Value,
        output: String,
        is_error: bool,
    ) -> ResultDecision {
        let (output, is_error) = if self.intercepted(HookPoint::ToolResult) {
            self.intercept_result_of(parent, id, name, args, output, is_error)
                .await
        } else {
            (output, is_error)
        };
        let mut out = ResultDecision {
            output,
            is_error,
            notes: Vec::new(),
            stop: None,
        };
        if !self.participating(HookPoint::ToolResult) {
            return out;
        }
        let ask = Ask::ToolResult {
            id: id.to_owned(),
            name: name.to_owned(),
            args: args.clone(),
            output: out.output.clone(),
            is_error: out.is_error,
            parent_tool_call_id: parent.map(str::to_owned),
        };
        for (_, verdict) in self.ask_participants(HookPoint::ToolResult, &ask).await {
            match verdict {
                Verdict::Rewrite(Rewrite::ToolOutput { output, is_error }) => {
                    out.output = output.unwrap_or(out.output);
                    out.is_error = is_error.unwrap_or(out.is_error);
                }
                Verdict::Block(text) | Verdict::Context(text) => out.notes.push(text),
                Verdict::Stop(reason) => {
                    out.stop.get_or_insert(reason);
                }
                _ => {}
            }
        }
        out
    }

    /// The conversation was cleared (`/clear`): the participants hear it.
    /// The extensions hear of the new session, if one follows, from
    /// [`switch_session`](Self::switch_session).
    pub async fn cleared(&self) {
        self.tell_participants(&Hook::Cleared).await;
    }

    /// The session facts participants' requests carry now.
    pub(crate) fn session_facts(&self) -> SessionFacts {
        let facts = self.inner.cx.facts();
        SessionFacts {
            session_id: facts.session_id.clone(),
            transcript: facts.transcript.clone(),
            plan: self.inner.in_plan(),
            confirms: facts.confirms,
        }
    }

    /// Whether any participant takes part at `point` now.
    pub(crate) fn participating(&self, point: HookPoint) -> bool {
        self.inner
            .participants()
            .iter()
            .any(|p| p.takes_part(point))
    }

    /// Tells every participant of the hook's point, in order.
    pub(crate) async fn tell_participants(&self, hook: &Hook) {
        let facts = self.session_facts();
        for participant in self.participants_at(hook.point()) {
            participant.observe(&facts, hook).await;
        }
    }

    /// Every participant's verdicts on `ask`, in participant order, each
    /// with the name of whom it came from.
    pub(crate) async fn ask_participants(
        &self,
        point: HookPoint,
        ask: &Ask,
    ) -> Vec<(String, Verdict)> {
        let facts = self.session_facts();
        let mut verdicts = Vec::new();
        for participant in self.participants_at(point) {
            let said = participant.intercept(&facts, ask).await;
            let name = participant.name().to_owned();
            verdicts.extend(said.into_iter().map(|v| (name.clone(), v)));
        }
        verdicts
    }

    fn participants_at(&self, point: HookPoint) -> Vec<Arc<dyn Participant>> {
        let mut all = self.inner.participants();
        all.retain(|p| p.takes_part(point));
        all
    }
}
