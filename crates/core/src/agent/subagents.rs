//! The subagent bookkeeping of one agent: the `task` tool's spec, the slots
//! that bound how many subagents run at once, and what finished subagents
//! left for the parent to settle. Apart from the running of a task
//! (`subagent.rs`) so the agent can hold it without importing that.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::json;
use tokio::sync::Semaphore;

use crate::event::UsageReport;
use crate::message::Message;
use crate::tool::ToolSpec;

/// The tool's name.
pub const TASK: &str = "task";

/// Most subagents running at once (the subagents issue: at most 4); more
/// read-only `task` calls of one step wait for a free slot.
pub const MAX_PARALLEL_TASKS: usize = 4;

/// The `task` tool as the model sees it.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: TASK.to_owned(),
        description: format!(
            "Hand a self-contained job (a search through the code, a review, a question that \
             needs many reads) to a subagent with a fresh context, so the reading does not fill \
             yours. It gets only `prompt` (say everything it needs: it sees nothing of this \
             conversation) and answers once, with its findings as this call's result. It has the \
             read-only tools (read, grep, find, ls, web_fetch) unless `tools` names others. \
             Calls whose subagents only read run in parallel, at most {MAX_PARALLEL_TASKS} at \
             once; a subagent cannot start a task of its own."
        ),
        schema: json!({
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "description": "The job in three to six words, shown to the user."
                },
                "prompt": {
                    "type": "string",
                    "description": "The job for the subagent, with everything it needs to know."
                },
                "tools": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "The tools the subagent may use, by name (default: the read-only ones)."
                }
            },
            "required": ["description", "prompt"]
        }).into(),
        // Offered in plan mode: its subagent is held to plan mode too.
        read_only: true,
    }
}

/// The subagent bookkeeping of one agent.
pub(super) struct Subagents {
    /// The `task` spec; `None` in a subagent, which cannot start a task.
    spec: Option<ToolSpec>,
    pub(super) slots: Arc<Semaphore>,
    /// Calls of subagents since the parent last settled them: the model
    /// that served each, and its usage.
    pub(super) usage: Mutex<Vec<(String, UsageReport)>>,
    /// Finished subagents' conversations, for the session.
    pub(super) finished: Mutex<Vec<Finished>>,
}

pub(super) struct Finished {
    pub(super) tool_call_id: String,
    pub(super) description: String,
    pub(super) messages: Vec<Message>,
}

impl Subagents {
    pub(super) fn new() -> Self {
        Self {
            spec: Some(spec()),
            slots: Arc::new(Semaphore::new(MAX_PARALLEL_TASKS)),
            usage: Mutex::new(Vec::new()),
            finished: Mutex::new(Vec::new()),
        }
    }

    /// A subagent's: no `task` tool.
    pub(super) fn child() -> Self {
        Self {
            spec: None,
            ..Self::new()
        }
    }

    /// The `task` spec, unless this agent is a subagent.
    pub(super) fn spec(&self) -> Option<&ToolSpec> {
        self.spec.as_ref()
    }

    /// Adds a subagent call's usage; returns the usage of every subagent
    /// call not yet settled.
    pub(super) fn add_usage(&self, model: &str, usage: UsageReport) -> UsageReport {
        let mut pending = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
        pending.push((model.to_owned(), usage));
        let mut total = UsageReport::default();
        for (_, usage) in pending.iter() {
            total += *usage;
        }
        total
    }
}
