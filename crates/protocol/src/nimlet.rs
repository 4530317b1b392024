//! The nimlet protocol: the host speaks first (`initialize`), the extension
//! answers with one `register` line, and every command, tool call and
//! lifecycle event is a request the extension must answer with `response`.
//! Any reply (and unsolicited `update` lines) may carry side effects.
//!
//! `register` is validated field by field by the host (strict rules with
//! exact messages), so only its parts are typed here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version sent in `initialize`.
pub const VERSION: u32 = 1;

/// A request or notice from the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostFrame {
    Initialize {
        version: u32,
        workspace: String,
        session_id: String,
    },
    Command {
        id: String,
        name: String,
        arguments: String,
    },
    Tool {
        id: String,
        name: String,
        arguments: Value,
    },
    Event {
        id: String,
        event: String,
        payload: Value,
    },
    Cancel {
        id: String,
    },
    UiResponse {
        id: String,
        answer: String,
        cancelled: bool,
    },
    Shutdown,
}

/// Side effects any reply or `update` may carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideEffects {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widget: Option<Widget>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification: Option<Notification>,
    /// Durable session data; `null` counts when the key is present.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub entry: Option<Value>,
}

/// Distinguishes `"entry": null` (present) from no `entry` at all.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Footer text keyed `<extension>:<key>`; empty text removes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub text: String,
}

/// Lines above the footer keyed `<extension>:<key>`; no lines removes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Widget {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub lines: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    #[serde(default)]
    pub level: String,
    #[serde(default)]
    pub message: String,
}

/// A reply to a request: which fields matter depends on the request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub id: String,
    /// Tool result text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<Value>,
    /// Command: printed to the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Command: starts a turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// tool_call / session_before_compact: `false` (the boolean) blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// tool_call: replacement arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// tool_result: replacement output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Value>,
    #[serde(flatten)]
    pub effects: SideEffects,
}

/// A multiple-choice question for the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UiRequest {
    #[serde(default)]
    pub id: Value,
    #[serde(default)]
    pub method: String,
    #[serde(default)]
    pub prompt: String,
    #[serde(default)]
    pub options: Vec<String>,
}

/// The `session_id` and `workspace` every session-level event carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub session_id: String,
    pub workspace: String,
}

/// A lifecycle event the host sends as a request, with its payload.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Event {
    ToolCall {
        tool: String,
        arguments: Value,
        /// The `task` call whose subagent makes this call; left out for the
        /// agent's own calls, so extensions that predate subagents see the
        /// payload they know.
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    ToolResult {
        tool: String,
        arguments: Value,
        output: String,
        is_error: bool,
    },
    /// Once per user prompt (not per model call).
    TurnStart(SessionInfo),
    TurnEnd {
        #[serde(flatten)]
        session: SessionInfo,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        interrupted: bool,
    },
    SessionStart(SessionInfo),
    SessionEnd(SessionInfo),
    SessionBeforeCompact {
        #[serde(flatten)]
        session: SessionInfo,
        instruction: String,
        tokens_before: u64,
        entries: Value,
    },
    SessionCompact {
        #[serde(flatten)]
        session: SessionInfo,
        did_compact: bool,
        summary: String,
        first_kept_index: usize,
        tokens_before: u64,
        message: String,
    },
}

impl Event {
    /// The event's name, as in `register.events` and the `event` field.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ToolCall { .. } => "tool_call",
            Self::ToolResult { .. } => "tool_result",
            Self::TurnStart(_) => "turn_start",
            Self::TurnEnd { .. } => "turn_end",
            Self::SessionStart(_) => "session_start",
            Self::SessionEnd(_) => "session_end",
            Self::SessionBeforeCompact { .. } => "session_before_compact",
            Self::SessionCompact { .. } => "session_compact",
        }
    }

    /// The `event` request frame carrying this event.
    pub fn into_frame(self, id: String) -> HostFrame {
        let event = self.name().to_owned();
        // Plain structs of strings, numbers and values: serialising cannot fail.
        let payload = serde_json::to_value(&self).unwrap_or(Value::Null);
        HostFrame::Event { id, event, payload }
    }
}

/// The lifecycle events an extension may subscribe to.
pub const EVENTS: &[&str] = &[
    "tool_call",
    "tool_result",
    "turn_start",
    "turn_end",
    "session_start",
    "session_end",
    "session_before_compact",
    "session_compact",
];

/// Tool capabilities; a tool whose capabilities are a subset of read and
/// user is read-only.
pub const CAPABILITIES: &[&str] = &["read", "write", "shell", "network", "user"];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn host_frames_match_the_spec_examples() {
        let f: HostFrame = serde_json::from_value(json!({"type":"initialize","version":1,"workspace":"/home/you/code/project","session_id":"1789233281025102"})).unwrap();
        assert!(matches!(f, HostFrame::Initialize { version: 1, .. }));
        let f: HostFrame = serde_json::from_value(json!({"type":"tool","id":"7","name":"save_note","arguments":{"text":"remember the cache bug"}})).unwrap();
        assert!(matches!(f, HostFrame::Tool { ref id, .. } if id == "7"));
        let f: HostFrame = serde_json::from_value(
            json!({"type":"command","id":"3","name":"note","arguments":"remember the cache bug"}),
        )
        .unwrap();
        assert!(matches!(f, HostFrame::Command { .. }));
        let f: HostFrame = serde_json::from_value(json!({"type":"event","id":"9","event":"tool_call","payload":{"tool":"bash","arguments":{"command":"npm test"}}})).unwrap();
        assert!(matches!(f, HostFrame::Event { ref event, .. } if event == "tool_call"));
        assert_eq!(
            serde_json::to_value(HostFrame::Cancel { id: "7".into() }).unwrap(),
            json!({"type":"cancel","id":"7"})
        );
        assert_eq!(
            serde_json::to_value(HostFrame::Shutdown).unwrap(),
            json!({"type":"shutdown"})
        );
        assert_eq!(
            serde_json::to_value(HostFrame::UiResponse {
                id: "q1".into(),
                answer: "staging".into(),
                cancelled: false
            })
            .unwrap(),
            json!({"type":"ui_response","id":"q1","answer":"staging","cancelled":false})
        );
    }

    #[test]
    fn events_serialise_as_their_payloads() {
        let session = SessionInfo {
            session_id: "s1".into(),
            workspace: "/w".into(),
        };
        let frame = Event::TurnEnd {
            session: session.clone(),
            interrupted: true,
        }
        .into_frame("4".into());
        assert_eq!(
            serde_json::to_value(frame).unwrap(),
            json!({"type":"event","id":"4","event":"turn_end",
                "payload":{"session_id":"s1","workspace":"/w","interrupted":true}})
        );
        let quiet = Event::TurnEnd {
            session,
            interrupted: false,
        };
        assert_eq!(
            serde_json::to_value(&quiet).unwrap(),
            json!({"session_id":"s1","workspace":"/w"})
        );
        let call = Event::ToolCall {
            tool: "bash".into(),
            arguments: json!({"command":"ls"}),
            parent_tool_call_id: None,
        };
        assert_eq!(call.name(), "tool_call");
        assert!(EVENTS.contains(&call.name()));
        assert_eq!(
            serde_json::to_value(&call).unwrap(),
            json!({"tool":"bash","arguments":{"command":"ls"}})
        );
    }

    #[test]
    fn responses_and_side_effects() {
        let r: Response = serde_json::from_value(
            json!({"type":"response","id":"7","content":"Saved.","is_error":false,
            "status":{"key":"notes","text":"NOTES.md updated"}}),
        )
        .unwrap();
        assert_eq!(r.content, Some(json!("Saved.")));
        assert_eq!(r.effects.status.unwrap().key, "notes");
        let r: Response = serde_json::from_value(
            json!({"type":"update","id":"","widget":{"key":"agents","lines":["✓ research"]},
            "notification":{"level":"info","message":"done"},"entry":null}),
        )
        .unwrap();
        assert_eq!(
            r.effects.entry,
            Some(Value::Null),
            "a present null entry counts"
        );
        assert_eq!(r.effects.widget.unwrap().lines, [json!("✓ research")]);
        let r: Response = serde_json::from_value(json!({"id":"1"})).unwrap();
        assert_eq!(r.effects.entry, None);
    }
}
