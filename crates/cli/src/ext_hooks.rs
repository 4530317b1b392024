//! Glue between the agent's `Hooks` and the extension host: lifecycle
//! events, intercept chains, system prompt preparation and extension tools.

use serde_json::Value;
use tokio::sync::watch;
use zot_core::CancellationToken;
use zot_core::hooks::{
    CompactOutcome, CompactPlan, HookEvent, Hooks, MessageGate, ToolGate, TurnGate,
};
use zot_core::message::Block;
use zot_core::tool::{BoxFuture, ToolOutput, ToolSpec};
use zot_extensions::zot_protocol::zot::{ContentBlock, Event};
use zot_extensions::{ExtensionHost, MessageVerdict, ToolCallVerdict, TurnVerdict};

pub struct ExtHooks {
    pub host: ExtensionHost,
}

impl Hooks for ExtHooks {
    fn event(&self, event: HookEvent) {
        let event = match event {
            HookEvent::SessionStart => Event::SessionStart,
            HookEvent::TurnStart { step } => Event::TurnStart { step },
            HookEvent::TurnEnd { stop, error } => Event::TurnEnd {
                stop: stop.to_owned(),
                error,
            },
            HookEvent::ToolCall { id, name, args } => Event::ToolCall {
                tool_id: id,
                tool_name: name,
                tool_args: args,
            },
            HookEvent::ToolConfirmationRequested { id, name, preview } => {
                Event::ToolConfirmationRequested {
                    tool_id: id,
                    tool_name: name,
                    tool_preview: preview,
                }
            }
            HookEvent::AssistantMessage { text } => Event::AssistantMessage { text },
        };
        self.host.emit_event(&event);
    }

    fn turn_start(&self, step: u32) -> BoxFuture<'_, TurnGate> {
        Box::pin(async move {
            match self.host.intercept_turn_start(step).await {
                TurnVerdict::Allow => TurnGate::Allow,
                TurnVerdict::Block { extension, reason } => TurnGate::Block {
                    by: extension,
                    reason,
                },
            }
        })
    }

    fn assistant_message<'a>(&'a self, text: &'a str) -> BoxFuture<'a, MessageGate> {
        Box::pin(async move {
            match self.host.intercept_assistant_message(text).await {
                MessageVerdict::Allow { text } => MessageGate::Allow { replace: text },
                MessageVerdict::Block { extension, reason } => MessageGate::Block {
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
                ToolCallVerdict::Allow { args } => ToolGate::Allow { args },
                ToolCallVerdict::Block { extension, reason } => ToolGate::Block {
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
                read_only: t.read_only(),
                name: t.name,
                description: t
                    .description
                    .unwrap_or_else(|| format!("(from extension {})", t.extension)),

                schema: t.schema,
            })
            .collect()
    }

    fn session_start(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.host.session_started())
    }

    fn prompt_start(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.host.prompt_started())
    }

    fn prompt_end(&self, interrupted: bool) -> BoxFuture<'_, ()> {
        Box::pin(self.host.prompt_ended(interrupted))
    }

    fn tool_result<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
        output: ToolOutput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            if !self.host.wants_tool_results() {
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
                .after_tool(name, args, text.clone(), output.is_error)
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
                .before_compact(instruction, tokens_before, entries)
                .await;
            match (decision.blocked, decision.custom) {
                (Some(reason), _) => CompactPlan::Block { reason },
                (None, Some((summary, first_kept_index))) => CompactPlan::Custom {
                    summary,
                    first_kept_index,
                },
                (None, None) => CompactPlan::Proceed {
                    instruction: decision.instruction,
                },
            }
        })
    }

    fn after_compact(&self, outcome: CompactOutcome) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let CompactOutcome {
                did_compact,
                summary,
                first_kept_index,
                tokens_before,
                message,
            } = outcome;
            self.host
                .compacted(
                    did_compact,
                    &summary,
                    first_kept_index,
                    tokens_before,
                    &message,
                )
                .await;
        })
    }

    fn session_changed<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.host.session_ended().await;
            self.host.set_session_id(session_id);
            // nimlet extensions restart with a fresh initialize carrying the new
            // id; zot extensions keep running (their protocol has no such rule).
            self.host.restart(zot_extensions::Dialect::Nimlet).await;
        })
    }

    fn set_plan(&self, plan: bool) {
        self.host.set_plan(plan);
    }

    fn take_entries(&self) -> Vec<(String, Value)> {
        self.host.take_entries()
    }

    fn call_tool<'a>(&'a self, name: &'a str, args: Value) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            match self.host.call_tool(name, args).await {
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
        })
    }
}
