//! The host's [`Sampler`] for the TUI: an MCP server's sampling request,
//! once the user agreed, as one call to the session's provider, without
//! tools, the way compaction calls it.

use zot_core::CancellationToken;
use zot_core::message::{Block, Message, Role};
use zot_core::provider::{Provider, Request, StopReason};
use zot_core::tool::BoxFuture;
use zot_extensions::sampling::{SampleRequest, SampleResult, Sampler};

use crate::run::MAX_TOKENS_CAP;

pub struct ModelSampler {
    pub provider: Provider,
}

impl Sampler for ModelSampler {
    fn sample<'a>(
        &'a self,
        model: &'a str,
        request: SampleRequest,
    ) -> BoxFuture<'a, Result<SampleResult, String>> {
        Box::pin(async move {
            let messages: Vec<Message> = request
                .messages
                .into_iter()
                .map(|(user, text)| Message {
                    role: if user { Role::User } else { Role::Assistant },
                    content: vec![Block::Text { text }],
                    time: None,
                })
                .collect();
            let call = Request {
                model,
                system: request.system.as_deref().unwrap_or_default(),
                messages: &messages,
                tools: &[],
                max_tokens: request.max_tokens.clamp(1, MAX_TOKENS_CAP),
                reasoning: None,
                cache: zot_core::provider::CacheTtl::Off,
                cache_key: None,
                drop_thinking_before: 0,
                history: None,
            };
            let (events, _) = tokio::sync::mpsc::unbounded_channel();
            let completion = self
                .provider
                .complete(&call, &events, &CancellationToken::new())
                .await
                .map_err(|e| e.to_string())?;
            Ok(SampleResult {
                model: model.to_owned(),
                text: completion.message.text(),
                truncated: completion.stop == StopReason::Length,
            })
        })
    }
}
