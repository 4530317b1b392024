//! Claude Code's command-hook wire format, as zot speaks it: the JSON object
//! a hook command reads on stdin ([`HookInput`]: the session's facts, then
//! the event and its fields) and the one it may print on stdout, exit 0
//! ([`HookOutput`]: decisions, context, whether the run goes on).
//!
//! Output is read leniently, as Claude Code reads it: a field of the wrong
//! type counts as absent, unknown fields are ignored, and stdout that is not
//! a JSON object is plain text (context for some events).

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// What a hook command reads on stdin: one JSON object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookInput {
    pub session_id: String,
    /// The session file, when the session has one.
    pub transcript_path: Option<String>,
    /// The project directory.
    pub cwd: String,
    /// `default`, `plan` in plan mode, `bypassPermissions` when zot asks nothing.
    pub permission_mode: String,
    /// The `task` call whose subagent the event belongs to (its tool
    /// calls, its `SubagentStop`); absent for the agent's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// The event (`hook_event_name`) and its own fields.
    #[serde(flatten)]
    pub event: HookEvent,
}

/// The event a hook runs for, named by `hook_event_name`, with its fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "hook_event_name")]
pub enum HookEvent {
    /// Before a tool call, under Claude Code's tool name and input shape.
    PreToolUse {
        tool_name: String,
        tool_input: Value,
        tool_use_id: String,
    },
    /// After a tool call ran.
    PostToolUse {
        tool_name: String,
        tool_input: Value,
        tool_use_id: String,
        tool_response: ToolResponse,
    },
    /// Before a prompt joins the conversation.
    UserPromptSubmit { prompt: String },
    /// Before a session's first prompt (`source`: startup, resume, clear or compact).
    SessionStart { source: String },
    /// The session ends (`reason`: clear, prompt_input_exit or other).
    SessionEnd { reason: String },
    /// The agent would end its answer; `stop_hook_active` once a Stop hook
    /// has already sent it on.
    Stop { stop_hook_active: bool },
    /// A subagent (a `task` call's child agent) would end its answer; like
    /// `Stop`, a block sends it on with the reason.
    SubagentStop { stop_hook_active: bool },
    /// Before compaction (`trigger`: manual or auto).
    PreCompact {
        trigger: String,
        custom_instructions: String,
    },
    /// zot waits for the user.
    Notification { message: String },
}

/// A finished call as `PostToolUse` hooks see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResponse {
    pub output: String,
    pub is_error: bool,
    pub success: bool,
    /// The file the call wrote or read, for tools that take one.
    #[serde(rename = "filePath", default, skip_serializing_if = "Option::is_none")]
    pub file_path: Option<Value>,
}

/// What a hook may print on stdout (exit 0) as one JSON object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    /// `false` stops the run (with `stopReason`).
    #[serde(
        rename = "continue",
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub continue_: Option<bool>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_reason: Option<String>,
    /// A message for the user.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub system_message: Option<String>,
    /// `block` (with `reason`) on most events; on `PreToolUse` also the
    /// older spelling of `permissionDecision` (`approve`, `block`).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub decision: Option<Decision>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub reason: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub hook_specific_output: Option<HookSpecificOutput>,
}

/// The event-specific part of a hook's output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookSpecificOutput {
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub hook_event_name: Option<String>,
    /// `PreToolUse`: allow, deny or ask.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub permission_decision: Option<Decision>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub permission_decision_reason: Option<String>,
    /// `PreToolUse`: the call's input as the hook rewrote it (Claude Code's shape).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub updated_input: Option<Value>,
    /// Text the model reads with the prompt or the call's result.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub additional_context: Option<String>,
}

/// A hook's decision, in either spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Allow,
    Approve,
    Ask,
    Deny,
    Block,
}

impl HookOutput {
    /// `stdout` as a hook's output: `None` when it is not a JSON object.
    pub fn parse(stdout: &str) -> Option<Self> {
        let trimmed = stdout.trim();
        if !trimmed.starts_with('{') {
            return None;
        }
        serde_json::from_str(trimmed).ok()
    }
}

/// A field of the wrong type counts as absent rather than failing the output.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn input_puts_the_event_name_after_the_session_facts() {
        let input = HookInput {
            session_id: "s".into(),
            transcript_path: None,
            cwd: "/p".into(),
            permission_mode: "default".into(),
            parent_tool_call_id: None,
            event: HookEvent::Stop {
                stop_hook_active: true,
            },
        };
        assert_eq!(
            serde_json::to_string(&input).unwrap(),
            r#"{"session_id":"s","transcript_path":null,"cwd":"/p","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":true}"#
        );
    }

    #[test]
    fn output_fields_of_the_wrong_type_count_as_absent() {
        let out = HookOutput::parse(
            r#"{"continue": "no", "decision": 5, "reason": "r", "hookSpecificOutput": {"permissionDecision": "deny", "additionalContext": 3}, "other": 1}"#,
        )
        .unwrap();
        assert_eq!(out.continue_, None);
        assert_eq!(out.decision, None);
        assert_eq!(out.reason.as_deref(), Some("r"));
        let specific = out.hook_specific_output.unwrap();
        assert_eq!(specific.permission_decision, Some(Decision::Deny));
        assert_eq!(specific.additional_context, None);
        assert_eq!(HookOutput::parse("plain text"), None);
        assert_eq!(HookOutput::parse("[1]"), None);
        assert_eq!(
            HookOutput::parse(&json!({"continue": false}).to_string()).and_then(|o| o.continue_),
            Some(false)
        );
    }
}
