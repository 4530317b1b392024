//! Glue between the agent's `Hooks` and the extension host: lifecycle
//! events, intercept chains, system prompt preparation and extension tools.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::watch;
use zot_core::CancellationToken;
use zot_core::hooks::{
    CompactOutcome, CompactPlan, HookEvent, Hooks, MessageGate, Permission, PermissionGate,
    PromptGate, SessionSource, ToolGate, TurnGate,
};
use zot_core::message::{Block, text_of};
use zot_core::tool::{BoxFuture, Progress, ToolOutput, ToolSpec};
use zot_extensions::model::Compaction;
use zot_extensions::zot_protocol::zot::ContentBlock;
use zot_extensions::{
    ExtensionHost, Hook, Outcome, Permission as HostPermission, ProgressSink, Refusal,
};

pub struct ExtHooks {
    pub host: ExtensionHost,
    /// A stop said after a tool ran: the prompt stops after the current
    /// group of tools (the agent takes it).
    halt: Mutex<Option<String>>,
    /// The `task` call these hooks' subagent runs for (`None`: the agent's
    /// own hooks); whoever takes part hears it with each call.
    parent: Option<String>,
}

impl ExtHooks {
    /// `asks`: tools are confirmed by the user (`--no-yolo` in the TUI).
    pub fn new(host: ExtensionHost, asks: bool) -> Self {
        host.set_confirms(asks);
        Self {
            host,
            halt: Mutex::new(None),
            parent: None,
        }
    }
}

/// The host's neutral hook for an agent event (`parent`: the `task` call of
/// the subagent it comes from).
fn hook(event: HookEvent, parent: Option<String>) -> Hook {
    match event {
        HookEvent::SessionStart => Hook::SessionStart,
        HookEvent::PromptStart => Hook::PromptStart,
        HookEvent::PromptEnd { interrupted } => Hook::PromptEnd { interrupted },
        HookEvent::TurnStart { step } => Hook::TurnStart { step },
        HookEvent::TurnEnd { stop, error } => Hook::TurnEnd {
            stop: stop.as_str().to_owned(),
            error,
        },
        HookEvent::ToolCall { id, name, args } => Hook::ToolCall {
            id,
            name,
            args,
            parent_tool_call_id: parent,
        },
        HookEvent::ToolConfirmationRequested { id, name, preview } => Hook::ToolConfirmation {
            id,
            name,
            preview,
            parent_tool_call_id: parent,
        },
        HookEvent::AssistantMessage { text } => Hook::AssistantMessage { text },
        HookEvent::Compacted(CompactOutcome {
            did_compact,
            summary,
            first_kept_index,
            tokens_before,
            message,
        }) => Hook::AfterCompact(Compaction {
            did_compact,
            summary,
            first_kept_index,
            tokens_before,
            message,
        }),
    }
}

impl Hooks for ExtHooks {
    fn event(&self, event: HookEvent) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.host.observe(&hook(event, self.parent.clone())).await })
    }

    fn tool_permission<'a>(
        &'a self,
        id: &'a str,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, PermissionGate> {
        Box::pin(async move {
            let decided = self
                .host
                .tool_permission(self.parent.as_deref(), id, name, args)
                .await;
            PermissionGate {
                permission: match decided.permission {
                    None => Permission::Default,
                    Some(HostPermission::Allow) => Permission::Allow,
                    Some(HostPermission::Ask(reason)) => Permission::Ask(reason),
                    Some(HostPermission::Deny(reason)) => Permission::Deny(reason),
                },
                args: decided.args,
                halt: decided.stop,
                context: decided.context,
            }
        })
    }

    fn prompt_submit<'a>(
        &'a self,
        start: Option<SessionSource>,
        prompt: &'a str,
    ) -> BoxFuture<'a, PromptGate> {
        Box::pin(async move {
            let decided = self
                .host
                .prompt_submit(start.map(SessionSource::as_str), prompt)
                .await;
            match decided.blocked {
                Some(Refusal { by, reason }) => PromptGate::Block { by, reason },
                None => PromptGate::Allow {
                    context: decided.context,
                },
            }
        })
    }

    fn before_stop(&self, again: bool) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move { self.host.stopping(None, again).await })
    }

    fn subagent_stop(&self, again: bool) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let parent = self.parent.as_deref()?;
            self.host.stopping(Some(parent), again).await
        })
    }

    fn for_subagent(&self, parent_tool_call_id: &str) -> Option<Arc<dyn Hooks>> {
        Some(Arc::new(Self {
            host: self.host.clone(),
            halt: Mutex::new(None),
            parent: Some(parent_tool_call_id.to_owned()),
        }))
    }

    fn session_file(&self, path: Option<&Path>) {
        self.host.set_session_file(path);
    }

    fn turn_start(&self, step: u32) -> BoxFuture<'_, TurnGate> {
        Box::pin(async move {
            match self.host.intercept_turn_start(step).await {
                Outcome::Allow(_) => TurnGate::Allow,
                Outcome::Block { extension, reason } => TurnGate::Block {
                    by: extension,
                    reason,
                },
            }
        })
    }

    fn assistant_message<'a>(&'a self, text: &'a str) -> BoxFuture<'a, MessageGate> {
        Box::pin(async move {
            match self.host.intercept_assistant_message(text).await {
                Outcome::Allow(text) => MessageGate::Allow { replace: text },
                Outcome::Block { extension, reason } => MessageGate::Block {
                    by: extension,
                    reason,
                },
            }
        })
    }

    fn tool_call<'a>(
        &'a self,
        id: &'a str,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, ToolGate> {
        Box::pin(async move {
            let parent = self.parent.as_deref();
            match self.host.intercept_call_of(parent, id, name, args).await {
                Outcome::Allow(args) => ToolGate::Allow { args },
                Outcome::Block { extension, reason } => ToolGate::Block {
                    by: extension,
                    reason,
                },
            }
        })
    }

    fn system_prompt<'a>(
        &'a self,
        session_id: &'a str,
        base: &'a mut watch::Receiver<String>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            self.host
                .prepare_system_prompt(session_id, base, cancel)
                .await
                .ok()
                .map(|p| p.system_prompt)
        })
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.host
            .tools()
            .into_iter()
            .map(|t| ToolSpec {
                read_only: t.read_only,
                name: t.name,
                description: t
                    .description
                    .unwrap_or_else(|| format!("(from extension {})", t.extension)),

                schema: Arc::new(t.schema),
            })
            .collect()
    }

    fn tool_result<'a>(
        &'a self,
        id: &'a str,
        name: &'a str,
        args: &'a Value,
        output: ToolOutput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let text = text_of(&output.content);
            let decided = self
                .host
                .tool_result(
                    self.parent.as_deref(),
                    id,
                    name,
                    args,
                    text.clone(),
                    output.is_error,
                )
                .await;
            if let Some(reason) = decided.stop {
                self.halt
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert(reason);
            }
            let mut output = if decided.output == text {
                ToolOutput {
                    is_error: decided.is_error,
                    ..output
                }
            } else {
                // The text is replaced; images stay.
                let mut content = vec![Block::Text {
                    text: decided.output,
                }];
                content.extend(
                    output
                        .content
                        .into_iter()
                        .filter(|b| matches!(b, Block::Image { .. })),
                );
                ToolOutput {
                    content,
                    is_error: decided.is_error,
                }
            };
            // What the participants said, the model reads after the output.
            if !decided.notes.is_empty() {
                output.content.push(Block::Text {
                    text: decided.notes.join("\n"),
                });
            }
            output
        })
    }
    fn before_compact<'a>(
        &'a self,
        automatic: bool,
        instruction: &'a str,
        tokens_before: u64,
        entries: Value,
    ) -> BoxFuture<'a, CompactPlan> {
        Box::pin(async move {
            let decision = self
                .host
                .intercept_compaction(automatic, instruction, tokens_before, entries)
                .await;
            match (decision.blocked, decision.custom) {
                (Some(reason), _) => CompactPlan::Block { reason },
                (None, Some(custom)) => CompactPlan::Custom {
                    summary: custom.summary,
                    first_kept_index: custom.first_kept_index,
                },
                (None, None) => CompactPlan::Proceed {
                    instruction: decision.instruction,
                },
            }
        })
    }

    fn session_changed<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.host.switch_session(session_id).await;
        })
    }

    fn cleared(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.host.cleared().await })
    }

    fn set_plan(&self, plan: bool) {
        self.host.set_plan(plan);
    }

    fn take_entries(&self) -> Vec<(String, Value)> {
        self.host.take_entries()
    }

    fn take_halt(&self) -> Option<String> {
        self.halt
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn call_tool<'a>(&'a self, name: &'a str, args: Value) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.run_tool(name, args, None))
    }

    fn call_tool_with_progress<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        progress: Progress,
    ) -> BoxFuture<'a, ToolOutput> {
        let sink: ProgressSink = Arc::new(move |text| progress.send(text));
        Box::pin(self.run_tool(name, args, Some(sink)))
    }
}

impl ExtHooks {
    /// Runs an extension tool; its protocol's progress (if any) goes to `progress`.
    async fn run_tool(
        &self,
        name: &str,
        args: Value,
        progress: Option<ProgressSink>,
    ) -> ToolOutput {
        {
            match self
                .host
                .call_tool_with_progress(name, args, progress)
                .await
            {
                Ok(reply) => {
                    let mut content: Vec<Block> = reply
                        .content
                        .into_iter()
                        .map(|b| match b {
                            ContentBlock::Text { text } => Block::Text { text },
                            ContentBlock::Image { mime_type, data } => {
                                Block::Image { mime_type, data }
                            }
                            ContentBlock::Unsupported => Block::Text {
                                text: "[unsupported content]".into(),
                            },
                        })
                        .collect();
                    if content.is_empty() {
                        content.push(Block::Text {
                            text: "(extension returned no content)".into(),
                        });
                    }
                    ToolOutput {
                        content,
                        is_error: reply.is_error,
                    }
                }
                Err(e) => ToolOutput::error(e.to_string()),
            }
        }
    }
}
