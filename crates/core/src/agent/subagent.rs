//! Subagents: the `task` tool hands a side job to a child agent with a
//! fresh context (a system prompt of its own, the task's prompt, no parent
//! messages). The child is an [`Agent`] running the same loop, on the same
//! provider (or the `subagent_model`), with read-only tools unless the call
//! asks for more and the parent's mode allows them; it cannot start a task
//! of its own. Its events reach the front ends tagged with the task call,
//! its usage adds to the parent's, and its conversation is recorded in the
//! parent's session beside the call.

mod hooks;

use std::sync::{Arc, PoisonError};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::subagents::{Finished, Subagents, TASK};
use super::{Agent, REFUSAL_STOP, REFUSED, ToolFilter};
use crate::event::AgentEvent;
use crate::message::{Block, Message, Role};
use crate::tool::{ToolOutput, ToolSpec};
use crate::tools::todo::TODO_TOOL;
use hooks::ChildHooks;

/// Most model calls of one subagent: its own step limit (the subagents
/// issue), enough for a search of a few dozen reads and greps, small
/// enough that a child that loops comes back to its parent.
pub const SUBAGENT_MAX_STEPS: u32 = 40;

/// A subagent's system prompt before the project's context files, when the
/// front end gives none (see [`super::AgentConfig::subagent_prompt`]).
pub const SUBAGENT_SYSTEM: &str = "You are a zot subagent: another agent handed you one \
self-contained job and reads only your final answer. You do not see its conversation, and the \
user does not read yours. Do the job with your tools: search with grep, find and ls, read the \
files that matter. Do not ask questions; nobody answers them. When you are done, answer with \
what the job asked for, complete and concise: the facts found, with file paths and line numbers \
where they help, and what you could not find. Paths are relative to the working directory \
unless absolute.";

/// A `task` call's arguments.
struct Task {
    description: String,
    prompt: String,
    tools: Option<Vec<String>>,
}

impl Task {
    fn parse(args: &Value) -> Result<Self, String> {
        let text = |key: &str| match args.get(key).and_then(Value::as_str) {
            Some(text) if !text.trim().is_empty() => Ok(text.to_owned()),
            _ => Err(format!("task needs a non-empty `{key}`")),
        };
        let tools = match args.get("tools") {
            None | Some(Value::Null) => None,
            Some(Value::Array(names)) => Some(
                names
                    .iter()
                    .map(|n| n.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or("task `tools` must be a list of tool names")?,
            ),
            Some(_) => return Err("task `tools` must be a list of tool names".to_owned()),
        };
        Ok(Self {
            description: text("description")?,
            prompt: text("prompt")?,
            tools,
        })
    }
}

impl Agent {
    /// Whether a `task` call's subagent only reads (its tools are the
    /// default ones or read-only), so the call may run beside others.
    pub(super) fn task_reads_only(&self, specs: &[ToolSpec], args: &Value) -> bool {
        match args.get("tools").and_then(Value::as_array) {
            None => true,
            Some(names) => names.iter().all(|name| {
                specs
                    .iter()
                    .any(|s| Some(s.name.as_str()) == name.as_str() && s.read_only)
            }),
        }
    }

    /// The tools a task's subagent gets: the parent's read-only ones by
    /// default, else those it names, each one the parent may use now (its
    /// `--tools` and plan mode), never `task`.
    fn subagent_tools(&self, asked: Option<&[String]>) -> Result<Vec<String>, String> {
        let specs = self.tool_specs();
        let Some(asked) = asked else {
            return Ok(specs
                .into_iter()
                .filter(|s| s.read_only && s.name != TASK && s.name != TODO_TOOL)
                .map(|s| s.name)
                .collect());
        };
        let mut names = Vec::with_capacity(asked.len());
        for name in asked {
            if name == TASK {
                return Err("a subagent cannot start a task of its own".to_owned());
            }
            if !specs.iter().any(|s| s.name == *name) {
                let exists = self.builtin_specs.iter().any(|s| s.name == *name)
                    || self.hooks.tools().iter().any(|s| s.name == *name);
                return Err(match exists {
                    true if self.config.plan => format!(
                        "{name} is not available in plan mode: a subagent may only read there"
                    ),
                    true => format!("{name} is not enabled in this run"),
                    false => format!("unknown tool \"{name}\""),
                });
            }
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        Ok(names)
    }

    /// Runs a `task` call: a subagent with a fresh context does the job and
    /// its final answer is the call's result.
    pub(super) async fn run_task(
        &self,
        id: &str,
        args: &Value,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let task = match Task::parse(args) {
            Ok(task) => task,
            Err(problem) => return ToolOutput::error(problem),
        };
        let tools = match self.subagent_tools(task.tools.as_deref()) {
            Ok(tools) => tools,
            Err(problem) => return ToolOutput::error(problem),
        };
        let slots = Arc::clone(&self.subagents.slots);
        let _slot = tokio::select! {
            biased;
            () = cancel.cancelled() => return ToolOutput::error("aborted before it ran"),
            slot = slots.acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => return ToolOutput::error("no subagent can start now"),
            },
        };
        let child = self.subagent(id, tools);
        let model = child.config.model.clone();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let prompt = vec![Block::Text {
            text: task.prompt.clone(),
        }];
        let run = async move {
            let mut child = child;
            let result = child.prompt(prompt, &tx, cancel).await;
            drop(tx);
            (result, child)
        };
        let forward = async {
            while let Some(event) = rx.recv().await {
                let event = match event {
                    // The task call's result ends the subagent for the front ends.
                    AgentEvent::Done => continue,
                    AgentEvent::Usage { usage, .. } => {
                        let mut cumulative = self.usage;
                        cumulative += self.subagents.add_usage(&model, usage);
                        AgentEvent::Usage { usage, cumulative }
                    }
                    event => event,
                };
                let _ = events.send(AgentEvent::Subagent {
                    parent_tool_call_id: id.to_owned(),
                    event: Box::new(event),
                });
            }
        };
        let ((result, child), ()) = tokio::join!(run, forward);
        self.subagents
            .finished
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Finished {
                tool_call_id: id.to_owned(),
                description: task.description,
                messages: child.messages().to_vec(),
            });
        match result {
            Err(e) => ToolOutput::error(format!("the subagent failed: {e}")),
            Ok(()) if cancel.is_cancelled() => ToolOutput::error("aborted"),
            Ok(()) if refused(child.messages()) => {
                // The user said no to the subagent's call: the prompt stops
                // after this step, as it does for the agent's own calls.
                self.halt
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert_with(|| REFUSAL_STOP.to_owned());
                ToolOutput::error(format!("{REFUSED}: the subagent stopped"))
            }
            Ok(()) => match final_answer(child.messages()) {
                Some(answer) => ToolOutput::text(answer),
                None => ToolOutput::error("the subagent stopped without an answer"),
            },
        }
    }

    /// A child agent for the task call `id`, with `tools`.
    fn subagent(&self, id: &str, tools: Vec<String>) -> Agent {
        let mut config = self.config.clone();
        if let Some(model) = &self.config.subagent_model {
            let info = crate::models::info(self.provider.kind(), model);
            config.max_tokens = config.max_tokens.min(info.max_output);
            config.model = model.clone();
        }
        config.max_steps = Some(SUBAGENT_MAX_STEPS);
        config.tools = ToolFilter::Only(tools);
        // A subagent's job is small; its context is never compacted, and
        // its tool outputs are capped without being kept.
        config.context_window = None;
        config.auto_compact = None;
        config.tool_output = None;
        let system = self.config.subagent_prompt.clone().unwrap_or_else(|| {
            format!(
                "{SUBAGENT_SYSTEM}\n\nWorking directory: {}",
                self.config.cwd.display()
            )
        });
        let hooks: Arc<dyn crate::hooks::Hooks> = Arc::new(ChildHooks::new(&self.hooks, id));
        let mut child = Agent::new(self.provider.clone(), config, hooks, system);
        child.confirm = self.confirm.clone();
        child.subagents = Subagents::child();
        // The provider's cache key: the parent's session.
        child.session_id = self.session_id.clone();
        child
    }

    /// Takes what finished subagents left: their usage joins the parent's
    /// (and the session's), their conversations go to the session.
    pub(super) fn settle_subagents(&mut self) {
        let usage = std::mem::take(
            &mut *self
                .subagents
                .usage
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let finished = std::mem::take(
            &mut *self
                .subagents
                .finished
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for (model, call) in usage {
            self.usage += call;
            if let Some(session) = &mut self.session {
                session.append_usage(&model, call);
            }
        }
        if let Some(session) = &mut self.session {
            for done in finished {
                session.append_subagent(&done.tool_call_id, &done.description, &done.messages);
            }
        }
    }
}

/// Whether the subagent stopped because the user refused one of its calls.
fn refused(messages: &[Message]) -> bool {
    messages.last().is_some_and(|last| {
        last.role == Role::Tool
            && last.content.iter().any(|block| {
                matches!(block, Block::ToolResult { is_error: true, content, .. }
                    if matches!(content.first(), Some(Block::Text { text }) if text == REFUSED))
            })
    })
}

/// The subagent's answer: its last message, when that is the model's text
/// with no tool call left to run.
fn final_answer(messages: &[Message]) -> Option<String> {
    let last = messages.last()?;
    if last.role != Role::Assistant || last.tool_calls().next().is_some() {
        return None;
    }
    let text = last.text();
    (!text.trim().is_empty()).then_some(text)
}
