//! Glue between the agent's `Hooks` and the extension host: lifecycle
//! events, intercept chains, system prompt preparation and extension tools.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::watch;
use zot_core::CancellationToken;
use zot_core::hooks::{
    CompactOutcome, CompactPlan, HookEvent, Hooks, MessageGate, ToolGate, TurnGate,
};
use zot_core::message::Block;
use zot_core::tool::{BoxFuture, Progress, ToolOutput, ToolSpec};
use zot_extensions::model::Compaction;
use zot_extensions::zot_protocol::zot::ContentBlock;
use zot_extensions::{ExtensionHost, Hook, HookPoint, Outcome, ProgressSink};

pub struct ExtHooks {
    pub host: ExtensionHost,
}

/// The host's neutral hook for an agent event.
fn hook(event: HookEvent) -> Hook {
    match event {
        HookEvent::SessionStart => Hook::SessionStart,
        HookEvent::PromptStart => Hook::PromptStart,
        HookEvent::PromptEnd { interrupted } => Hook::PromptEnd { interrupted },
        HookEvent::TurnStart { step } => Hook::TurnStart { step },
        HookEvent::TurnEnd { stop, error } => Hook::TurnEnd {
            stop: stop.as_str().to_owned(),
            error,
        },
        HookEvent::ToolCall { id, name, args } => Hook::ToolCall { id, name, args },
        HookEvent::ToolConfirmationRequested { id, name, preview } => {
            Hook::ToolConfirmation { id, name, preview }
        }
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
        Box::pin(async move { self.host.observe(&hook(event)).await })
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
            match self.host.intercept_tool_call(id, name, args).await {
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

                schema: t.schema,
            })
            .collect()
    }

    fn tool_result<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
        output: ToolOutput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            if !self.host.intercepted(HookPoint::ToolResult) {
                return output;
            }
            let text: Vec<&str> = output
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let text = text.join("\n");
            let (new_text, is_error) = self
                .host
                .intercept_tool_result(name, args, text.clone(), output.is_error)
                .await;
            if new_text == text {
                return ToolOutput { is_error, ..output };
            }
            // The text is replaced; images stay.
            let mut content = vec![Block::Text { text: new_text }];
            content.extend(
                output
                    .content
                    .into_iter()
                    .filter(|b| matches!(b, Block::Image { .. })),
            );
            ToolOutput { content, is_error }
        })
    }

    fn before_compact<'a>(
        &'a self,
        instruction: &'a str,
        tokens_before: u64,
        entries: Value,
    ) -> BoxFuture<'a, CompactPlan> {
        Box::pin(async move {
            let decision = self
                .host
                .intercept_compaction(instruction, tokens_before, entries)
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

    fn set_plan(&self, plan: bool) {
        self.host.set_plan(plan);
    }

    fn take_entries(&self) -> Vec<(String, Value)> {
        self.host.take_entries()
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
