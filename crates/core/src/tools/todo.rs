//! The `todo_write` tool: the model's visible plan. Each call replaces the
//! whole plan, which the agent keeps and the front ends show (a `todo`
//! event). The plan lives in the conversation itself, as the arguments of
//! the last successful `todo_write` call, so a resumed session gets it back
//! from its messages ([`plan_in`]).

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use zot_protocol::events::{TodoItem, TodoStatus};

use super::args::{args_object, json_kind};
use crate::event::AgentEvent;
use crate::message::{Block, Message};
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

/// The tool's name, which [`plan_in`] looks for in a conversation.
pub const TODO_TOOL: &str = "todo_write";

/// Most steps in a plan: a plan longer than this is no longer one the user
/// can read above the editor.
pub const MAX_TODO_ITEMS: usize = 50;

/// Longest step text, in characters.
pub const MAX_TODO_TEXT_CHARS: usize = 300;

/// The current plan, shared by the agent and its `todo_write` tool.
pub type Plan = Arc<Mutex<Vec<TodoItem>>>;

pub struct TodoWriteTool {
    plan: Plan,
}

impl TodoWriteTool {
    pub fn new(plan: Plan) -> Self {
        Self { plan }
    }
}

impl Tool for TodoWriteTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TODO_TOOL.into(),
            description: format!(
                "Write your plan for the task as a short list of steps the user sees above the \
                 input box. Each call replaces the whole list: send every step each time with its \
                 status (pending, in_progress, done). Keep one step in_progress while you work on \
                 it and mark steps done as you finish them. Use it for work of three or more \
                 steps; at most {MAX_TODO_ITEMS} steps."
            ),
            schema: json!({
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "maxItems": MAX_TODO_ITEMS,
                        "items": {
                            "type": "object",
                            "properties": {
                                "text": {"type": "string", "description": "The step, in a few words."},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}
                            },
                            "required": ["text", "status"]
                        }
                    }
                },
                "required": ["items"]
            }).into(),
            // It changes only the plan the user sees, never a file.
            read_only: true,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let items = match parse(&args) {
                Ok(items) => items,
                Err(output) => return output,
            };
            let summary = render(&items);
            *self.plan.lock().unwrap_or_else(PoisonError::into_inner) = items.clone();
            ctx.emit(AgentEvent::Todo { items });
            ToolOutput::text(summary)
        })
    }

    /// `parse` checks every rule of the schema.
    fn checks_own_arguments(&self) -> bool {
        true
    }
}

/// The items of a `todo_write` call, or the tool error saying what is wrong.
pub fn parse(args: &Value) -> Result<Vec<TodoItem>, ToolOutput> {
    let obj = args_object(args)?;
    let items = match obj.get("items") {
        Some(Value::Array(items)) => items,
        None | Some(Value::Null) => {
            return Err(ToolOutput::error("missing required argument `items`"));
        }
        Some(other) => {
            return Err(ToolOutput::error(format!(
                "argument `items` must be an array, got {}",
                json_kind(other)
            )));
        }
    };
    if items.len() > MAX_TODO_ITEMS {
        return Err(ToolOutput::error(format!(
            "a plan has at most {MAX_TODO_ITEMS} items, got {}",
            items.len()
        )));
    }
    let parsed = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let bad = |what: String| ToolOutput::error(format!("items[{i}]: {what}"));
            let text = match item.get("text") {
                Some(Value::String(text)) if !text.trim().is_empty() => text.trim(),
                Some(Value::String(_)) => return Err(bad("`text` is empty".into())),
                Some(other) => {
                    return Err(bad(format!(
                        "`text` must be a string, got {}",
                        json_kind(other)
                    )));
                }
                None => return Err(bad("missing `text`".into())),
            };
            if text.chars().count() > MAX_TODO_TEXT_CHARS {
                return Err(bad(format!(
                    "`text` is longer than {MAX_TODO_TEXT_CHARS} characters"
                )));
            }
            let status = item
                .get("status")
                .and_then(Value::as_str)
                .and_then(TodoStatus::parse)
                .ok_or_else(|| {
                    bad(format!(
                        "`status` must be \"pending\", \"in_progress\" or \"done\", got {}",
                        item.get("status")
                            .map_or("nothing".into(), Value::to_string)
                    ))
                })?;
            // Shown on the terminal: no control characters.
            let text = text
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            Ok(TodoItem { text, status })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if parsed
        .iter()
        .filter(|i| i.status == TodoStatus::InProgress)
        .count()
        > 1
    {
        return Err(ToolOutput::error(
            "more than one item is in_progress; work on one step at a time",
        ));
    }
    Ok(parsed)
}

/// The plan as the model reads it back: `[x]` done, `[>]` in progress.
fn render(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return "plan cleared".to_owned();
    }
    let done = items
        .iter()
        .filter(|i| i.status == TodoStatus::Done)
        .count();
    let mut out = format!("plan updated ({done}/{} done):", items.len());
    for item in items {
        let mark = match item.status {
            TodoStatus::Done => "[x]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Pending => "[ ]",
        };
        out.push_str(&format!("\n{mark} {}", item.text));
    }
    out
}

/// The plan a conversation holds: the items of its last `todo_write` call
/// that succeeded (a refused or failed call changed nothing).
pub fn plan_in<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<TodoItem> {
    let messages: Vec<&Message> = messages.into_iter().collect();
    let failed: Vec<&str> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::ToolResult {
                call_id,
                is_error: true,
                ..
            } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    messages
        .iter()
        .rev()
        .flat_map(|m| m.content.iter().rev())
        .find_map(|b| match b {
            Block::ToolCall { id, name, args }
                if name == TODO_TOOL && !failed.contains(&id.as_str()) =>
            {
                parse(args).ok()
            }
            _ => None,
        })
        .unwrap_or_default()
}
