//! The hooks a subagent runs under: its tool calls go through the parent's
//! extensions, command hooks, confirmations and permission scopes (told the
//! `task` call they belong to), while what belongs to the user's session
//! (session and prompt events, the system prompt chain, turn and message
//! intercepts, extension entries, plan mode) stays the parent's.

use std::sync::Arc;

use serde_json::Value;

use crate::hooks::{HookEvent, Hooks, PermissionGate, ToolGate};
use crate::tool::{BoxFuture, Progress, ToolOutput, ToolSpec};

pub(super) struct ChildHooks {
    inner: Arc<dyn Hooks>,
    /// `inner` is the subagent's own (from [`Hooks::for_subagent`]), so its
    /// stop requests are the subagent's, not the parent's to take.
    own: bool,
}

impl ChildHooks {
    pub(super) fn new(parent: &Arc<dyn Hooks>, parent_tool_call_id: &str) -> Self {
        match parent.for_subagent(parent_tool_call_id) {
            Some(inner) => Self { inner, own: true },
            None => Self {
                inner: Arc::clone(parent),
                own: false,
            },
        }
    }
}

/// Turn and message intercepts and prompt hooks keep the trait's defaults
/// (allow, nothing added): the subagent's prompt is the parent model's, not
/// the user's, so no `UserPromptSubmit` or `SessionStart` hooks run for it.
impl Hooks for ChildHooks {
    /// Only the tool events: the subagent's session, prompt and turns are
    /// the task call's business, which observers hear as the parent's.
    fn event(&self, event: HookEvent) -> BoxFuture<'_, ()> {
        match event {
            HookEvent::ToolCall { .. } | HookEvent::ToolConfirmationRequested { .. } => {
                self.inner.event(event)
            }
            _ => Box::pin(async {}),
        }
    }

    fn tool_call<'a>(
        &'a self,
        id: &'a str,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, ToolGate> {
        self.inner.tool_call(id, name, args)
    }

    fn tool_permission<'a>(
        &'a self,
        id: &'a str,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, PermissionGate> {
        self.inner.tool_permission(id, name, args)
    }

    /// Claude's `SubagentStop`, where the agent's own answer has `Stop`.
    fn before_stop(&self, again: bool) -> BoxFuture<'_, Option<String>> {
        self.inner.subagent_stop(again)
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.inner.tools()
    }

    fn call_tool<'a>(&'a self, name: &'a str, args: Value) -> BoxFuture<'a, ToolOutput> {
        self.inner.call_tool(name, args)
    }

    fn call_tool_with_progress<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        progress: Progress,
    ) -> BoxFuture<'a, ToolOutput> {
        self.inner.call_tool_with_progress(name, args, progress)
    }

    fn tool_result<'a>(
        &'a self,
        id: &'a str,
        name: &'a str,
        args: &'a Value,
        output: ToolOutput,
    ) -> BoxFuture<'a, ToolOutput> {
        self.inner.tool_result(id, name, args, output)
    }

    fn take_halt(&self) -> Option<String> {
        if self.own {
            self.inner.take_halt()
        } else {
            None
        }
    }
}
