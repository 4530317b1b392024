//! `/btw`: a side question the model answers with the conversation as
//! context, which never joins the conversation.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Agent, AgentError};
use crate::event::AgentEvent;
use crate::message::Message;
use crate::provider::{ProviderError, Request};

/// Before a `/btw` question: the model answers it from what it knows, as an aside.
const SIDE_QUESTION: &str = "A side question, answered from the conversation so far without \
     calling tools; it will not stay in the conversation:\n\n";

impl Agent {
    /// `/btw QUESTION`: the model answers a side question with the
    /// conversation as context, in a request that begins as the next turn's
    /// would (same system prompt, tools and messages, so the cached prefix
    /// serves it). Its usage is counted; neither question nor answer joins
    /// the conversation or the session's messages.
    pub async fn side_question(
        &mut self,
        question: &str,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<String, AgentError> {
        if !self.prepare_system_prompt(cancel).await {
            return Err(AgentError::Provider(ProviderError::Cancelled));
        }
        let tools = self.tool_specs();
        let mut messages = self.messages.to_vec();
        messages.push(Message::user(format!("{SIDE_QUESTION}{question}")));
        let request = Request {
            model: &self.config.model,
            system: self.prepared.as_deref().unwrap_or_default(),
            messages: &messages,
            tools: &tools,
            max_tokens: self.config.max_tokens,
            reasoning: self.config.reasoning,
            cache: self.config.cache,
            cache_key: Some(&self.session_id),
            drop_thinking_before: self.stale_thinking_before,
            history: None,
        };
        let (tx, _rx) = mpsc::unbounded_channel();
        let completion = self.provider.complete(&request, &tx, cancel).await?;
        let served = self.served(completion.usage);
        self.count_usage(&served, events);
        let answer = completion.message.text();
        Ok(if answer.trim().is_empty() {
            "(the model gave no answer in text)".to_owned()
        } else {
            answer
        })
    }
}
