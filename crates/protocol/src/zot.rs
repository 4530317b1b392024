//! The zot protocol: one JSON object per line over the extension's stdio, the
//! `type` field is the discriminator. The extension speaks first (`hello`).
//!
//! Types follow the spec (`zot-extensions.txt`, "Wire format"). Unknown fields
//! are tolerated everywhere; defaults are omitted when serialising so a frame
//! round-trips to the exact JSON of the spec.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A frame sent by an extension to the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(title = "zot extension frame (extension → host)")]
pub enum ExtFrame {
    /// Required first frame.
    Hello(Hello),
    RegisterCommand(RegisterCommand),
    RegisterTool(RegisterTool),
    /// All initial registrations are flushed.
    Ready,
    /// Reply to `tool_call`.
    ToolResult(ToolResult),
    /// Which lifecycle events to observe and which to intercept; once, before `ready`.
    Subscribe(Subscribe),
    /// Reply to `event_intercept`.
    EventInterceptResponse(InterceptResponse),
    /// Reply to `command_invoked`.
    CommandResponse(CommandResponse),
    /// Submits text as a user prompt in the interactive host.
    Submit(Submit),
    /// A fresh frame for an already-open panel.
    PanelRender(PanelRender),
    /// Closes a previously-open panel.
    PanelClose(PanelClose),
    /// A one-shot note shown below the transcript.
    Notify(Notify),
    /// Removes every note this extension pushed.
    ClearNotes,
    /// Reply to `shutdown`.
    ShutdownAck,
}

impl ExtFrame {
    /// Every `type` value an extension may send, so a reader can tell an
    /// unknown frame type from a known frame with bad fields.
    pub const TYPES: &'static [&'static str] = &[
        "hello",
        "register_command",
        "register_tool",
        "ready",
        "tool_result",
        "subscribe",
        "event_intercept_response",
        "command_response",
        "submit",
        "panel_render",
        "panel_close",
        "notify",
        "clear_notes",
        "shutdown_ack",
    ];

    /// The wire `type` of this frame.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Hello(_) => "hello",
            Self::RegisterCommand(_) => "register_command",
            Self::RegisterTool(_) => "register_tool",
            Self::Ready => "ready",
            Self::ToolResult(_) => "tool_result",
            Self::Subscribe(_) => "subscribe",
            Self::EventInterceptResponse(_) => "event_intercept_response",
            Self::CommandResponse(_) => "command_response",
            Self::Submit(_) => "submit",
            Self::PanelRender(_) => "panel_render",
            Self::PanelClose(_) => "panel_close",
            Self::Notify(_) => "notify",
            Self::ClearNotes => "clear_notes",
            Self::ShutdownAck => "shutdown_ack",
        }
    }

    /// Parses one frame as the derived `Deserialize` does, faster for the
    /// replies to requests (`tool_result`, `event_intercept_response`,
    /// `command_response`), which every call reads: the derive of an
    /// internally tagged enum first copies the whole frame into serde's
    /// buffered `Content` and then reads that, while a reply whose `type` is
    /// known is read straight into its struct (the `type` key is one more
    /// unknown field there). Every other type, and any reply the direct read
    /// refuses, goes through the derive, so the value or the error is its own.
    pub fn from_slice(line: &[u8]) -> serde_json::Result<Self> {
        /// The frame's `type` alone; the other fields are skipped unread.
        #[derive(Deserialize)]
        struct Kind<'a> {
            #[serde(rename = "type", borrow)]
            kind: std::borrow::Cow<'a, str>,
        }
        let direct = match serde_json::from_slice::<Kind>(line).map(|k| k.kind) {
            Ok(kind) if kind == "tool_result" => {
                serde_json::from_slice(line).map(Self::ToolResult).ok()
            }
            Ok(kind) if kind == "event_intercept_response" => serde_json::from_slice(line)
                .map(Self::EventInterceptResponse)
                .ok(),
            Ok(kind) if kind == "command_response" => {
                serde_json::from_slice(line).map(Self::CommandResponse).ok()
            }
            _ => None,
        };
        match direct {
            Some(frame) => Ok(frame),
            None => serde_json::from_slice(line),
        }
    }
}

/// A frame sent by the host to an extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(title = "zot host frame (host → extension)")]
pub enum HostFrame {
    /// Reply to `hello`: protocol version and host metadata.
    HelloAck(HelloAck),
    /// The user ran a registered slash command; answer with `command_response`.
    CommandInvoked(CommandInvoked),
    /// The model called a registered tool; answer with `tool_result`.
    ToolCall(ToolCall),
    /// One-way lifecycle notification for a subscribed event.
    Event(Event),
    /// Asks an interceptor to allow, block or rewrite; answer with `event_intercept_response`.
    EventIntercept(EventIntercept),
    /// A key typed while the extension's panel is focused.
    PanelKey(PanelKey),
    /// The user closed the extension's panel.
    PanelClose(PanelClose),
    /// zot is exiting; answer with `shutdown_ack` and exit.
    Shutdown,
}

/// Serialises a frame as one protocol line, LF included.
pub fn to_line<T: Serialize>(frame: &T) -> serde_json::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(frame)?;
    line.push(b'\n');
    Ok(line)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The host refuses a tool without an object schema, but `schema` has a
/// serde default (so a bad frame gets a precise message), which would
/// otherwise make the schema call it optional with a `null` default.
fn require_tool_schema(schema: &mut schemars::Schema) {
    let object = schema.ensure_object();
    if let Some(Value::Object(field)) = object
        .get_mut("properties")
        .and_then(|p| p.get_mut("schema"))
    {
        field.remove("default");
    }
    if let Some(required) = object
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        && !required.iter().any(|r| r == "schema")
    {
        required.push(Value::String("schema".to_owned()));
    }
}

// ---------------------------------------------------------------- extension → host

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hello {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RegisterCommand {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = require_tool_schema)]
pub struct RegisterTool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON Schema object for the tool's arguments. Kept as a raw value so
    /// the host can reject a non-object with a precise message.
    #[serde(default)]
    #[schemars(
        with = "serde_json::Map<String, Value>",
        description = "JSON Schema object describing the tool's arguments."
    )]
    pub schema: Value,
    /// Registered but not advertised until a `tool_result` activates it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub deferred: bool,
    /// The tool only reads (no writes, no side effects): plan mode offers it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub read_only: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResult {
    pub id: String,
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_error: bool,
    /// Names of registered deferred tools that become available after this result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub activate_tools: Vec<String>,
}

/// One block of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Image {
        mime_type: String,
        /// Standard base64.
        data: String,
    },
    /// A block type this protocol version does not know. Tolerated when
    /// reading, never valid to send, so the schema leaves it out.
    #[serde(other)]
    #[schemars(skip)]
    Unsupported,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Subscribe {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intercept: Vec<String>,
}

/// Reply to `event_intercept`. Every field defaults to "allow, unchanged".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterceptResponse {
    pub id: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub block: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Raw so the host can warn about (and ignore) a non-object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        with = "Option<serde_json::Map<String, Value>>",
        description = "tool_call: the rewritten args the tool will see; ignored when blocking."
    )]
    pub modified_args: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_text: Option<String>,
    /// Exact replacement; `Some("")` removes the prompt, `None` keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "before_agent_start: exact replacement; \"\" removes the prompt, omission keeps it."
    )]
    pub system_prompt: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommandResponse {
    pub id: String,
    #[serde(default)]
    pub action: CommandAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_panel: Option<PanelContent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommandAction {
    Prompt,
    Insert,
    Display,
    OpenPanel,
    /// Also what an empty or missing `action` means (legacy SDKs send "").
    #[default]
    #[serde(alias = "")]
    Noop,
}

/// The content of a panel opened by `command_response`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PanelContent {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footer: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Submit {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PanelRender {
    pub panel_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footer: Option<String>,
}

/// `panel_close`, in either direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PanelClose {
    pub panel_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Notify {
    #[serde(default)]
    pub level: NotifyLevel,
    pub message: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotifyLevel {
    Success,
    #[serde(alias = "warning")]
    Warn,
    Error,
    /// Also what an unknown level means, as a muted note.
    #[default]
    #[serde(other)]
    Info,
}

// ---------------------------------------------------------------- host → extension

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HelloAck {
    pub protocol_version: u32,
    pub zot_version: String,
    pub provider: String,
    pub model: String,
    /// The user's project directory (not the extension's working directory).
    pub cwd: String,
    pub extension_dir: String,
    pub data_dir: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommandInvoked {
    pub id: String,
    /// The canonical spelling the extension registered.
    pub name: String,
    /// Everything the user typed after the command name, trimmed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub args: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// One-way lifecycle notification (`{"type":"event","event":…}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    SessionStart,
    TurnStart {
        step: u32,
    },
    TurnEnd {
        stop: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    ToolCall {
        tool_id: String,
        tool_name: String,
        tool_args: Value,
        /// The `task` call whose subagent made this call; absent for the
        /// agent's own calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    ToolConfirmationRequested {
        tool_id: String,
        tool_name: String,
        tool_preview: String,
        /// The `task` call whose subagent made this call; absent for the
        /// agent's own calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    AssistantMessage {
        text: String,
    },
}

impl Event {
    /// Every event name an extension may subscribe to.
    pub const NAMES: &'static [&'static str] = &[
        "session_start",
        "turn_start",
        "turn_end",
        "tool_call",
        "tool_confirmation_requested",
        "assistant_message",
    ];

    /// The subscription name of this event.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SessionStart => "session_start",
            Self::TurnStart { .. } => "turn_start",
            Self::TurnEnd { .. } => "turn_end",
            Self::ToolCall { .. } => "tool_call",
            Self::ToolConfirmationRequested { .. } => "tool_confirmation_requested",
            Self::AssistantMessage { .. } => "assistant_message",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventIntercept {
    pub id: String,
    #[serde(flatten)]
    pub payload: Intercept,
}

/// What an `event_intercept` asks about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Intercept {
    ToolCall {
        tool_id: String,
        tool_name: String,
        tool_args: Value,
        /// The `task` call whose subagent made this call; absent for the
        /// agent's own calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    TurnStart {
        step: u32,
    },
    AssistantMessage {
        text: String,
    },
    BeforeAgentStart {
        session_id: String,
        agent_run_id: String,
        cwd: String,
        provider: String,
        model: String,
        system_prompt: String,
    },
}

impl Intercept {
    /// Every interceptable event name.
    pub const NAMES: &'static [&'static str] = &[
        "tool_call",
        "turn_start",
        "assistant_message",
        "before_agent_start",
    ];

    /// The subscription name of this intercept.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ToolCall { .. } => "tool_call",
            Self::TurnStart { .. } => "turn_start",
            Self::AssistantMessage { .. } => "assistant_message",
            Self::BeforeAgentStart { .. } => "before_agent_start",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PanelKey {
    pub panel_id: String,
    pub key: Key,
    /// The typed character when `key` is `rune`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Normalised key names sent while a panel is focused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Key {
    Up,
    Down,
    Left,
    Right,
    Enter,
    Esc,
    Tab,
    PageUp,
    PageDown,
    Home,
    End,
    Backspace,
    Delete,
    Rune,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Parses `text` as `T`, serialises it again and checks the JSON is unchanged.
    fn round_trip<T>(text: &str) -> T
    where
        T: serde::de::DeserializeOwned + Serialize,
    {
        let original: Value = serde_json::from_str(text).unwrap();
        let typed: T = serde_json::from_str(text).unwrap();
        let again = serde_json::to_value(&typed).unwrap();
        assert_eq!(again, original, "round trip changed {text}");
        typed
    }

    // Every example below is copied verbatim from zot-extensions.txt.

    #[test]
    fn hello() {
        let f: ExtFrame = round_trip(
            r#"{"type":"hello","name":"weather","version":"1.0.0",
 "capabilities":["commands","tools","panels"]}"#,
        );
        let ExtFrame::Hello(h) = f else {
            panic!("{f:?}")
        };
        assert_eq!(h.name, "weather");
        assert_eq!(h.capabilities, ["commands", "tools", "panels"]);
        round_trip::<ExtFrame>(
            r#"{"type":"hello","name":"hello-py","version":"1.0.0","capabilities":["commands"]}"#,
        );
    }

    #[test]
    fn register_command() {
        let f: ExtFrame = round_trip(
            r#"{"type":"register_command","name":"weather",
 "description":"current weather for a city"}"#,
        );
        assert!(matches!(f, ExtFrame::RegisterCommand(c) if c.name == "weather"));
    }

    #[test]
    fn register_tool_plain_and_deferred() {
        let f: ExtFrame = round_trip(
            r#"{"type":"register_tool","name":"weather",
 "description":"Get the current weather for a city.",
 "schema":{
   "type":"object",
   "properties":{"city":{"type":"string"}},
   "required":["city"]
 }}"#,
        );
        let ExtFrame::RegisterTool(t) = f else {
            panic!("{f:?}")
        };
        assert!(!t.deferred);
        assert_eq!(t.schema["required"], json!(["city"]));
        let f: ExtFrame = round_trip(
            r#"{"type":"register_tool","name":"weather","schema":{"type":"object"},"deferred":true}"#,
        );
        assert!(matches!(f, ExtFrame::RegisterTool(t) if t.deferred));
    }

    #[test]
    fn ready_clear_notes_shutdown_ack() {
        assert_eq!(
            round_trip::<ExtFrame>(r#"{"type":"ready"}"#),
            ExtFrame::Ready
        );
        assert_eq!(
            round_trip::<ExtFrame>(r#"{"type":"clear_notes"}"#),
            ExtFrame::ClearNotes
        );
        assert_eq!(
            round_trip::<ExtFrame>(r#"{"type":"shutdown_ack"}"#),
            ExtFrame::ShutdownAck
        );
    }

    #[test]
    fn tool_result_with_activate_tools_and_image() {
        let f: ExtFrame = round_trip(
            r#"{"type":"tool_result","id":"...",
 "content":[{"type":"text","text":"Enabled weather lookup"}],
 "activate_tools":["weather"]}"#,
        );
        let ExtFrame::ToolResult(r) = f else {
            panic!("{f:?}")
        };
        assert_eq!(r.activate_tools, ["weather"]);
        round_trip::<ExtFrame>(
            r#"{"type":"tool_result","id":"...",
 "content":[{"type":"text","text":"Berlin: 16°C, fog"}]}"#,
        );
        let f: ExtFrame = round_trip(
            r#"{"type":"tool_result","id":"7","is_error":true,
 "content":[{"type":"image","mime_type":"image/png","data":"iVBORw0KGgo="}]}"#,
        );
        let ExtFrame::ToolResult(r) = f else {
            panic!("{f:?}")
        };
        assert!(r.is_error);
        assert_eq!(
            r.content,
            [ContentBlock::Image {
                mime_type: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            }]
        );
    }

    #[test]
    fn unknown_content_block_is_tolerated() {
        let f: ExtFrame = serde_json::from_str(
            r#"{"type":"tool_result","id":"1","content":[{"type":"audio","x":1},{"type":"text","text":"t"}]}"#,
        )
        .unwrap();
        let ExtFrame::ToolResult(r) = f else {
            panic!("{f:?}")
        };
        assert_eq!(r.content[0], ContentBlock::Unsupported);
        assert_eq!(r.content[1], ContentBlock::Text { text: "t".into() });
    }

    #[test]
    fn subscribe() {
        let f: ExtFrame = round_trip(
            r#"{"type":"subscribe",
 "events":["session_start","turn_start","tool_call","tool_confirmation_requested","turn_end","assistant_message"],
 "intercept":["tool_call","turn_start","assistant_message"]}"#,
        );
        let ExtFrame::Subscribe(s) = f else {
            panic!("{f:?}")
        };
        assert_eq!(s.events.len(), 6);
        let f: ExtFrame = round_trip(r#"{"type":"subscribe","intercept":["before_agent_start"]}"#);
        assert!(matches!(f, ExtFrame::Subscribe(s) if s.events.is_empty()));
    }

    #[test]
    fn event_intercept_responses() {
        let f: ExtFrame = round_trip(
            r#"{"type":"event_intercept_response","id":"start-1","system_prompt":"The complete replacement system prompt"}"#,
        );
        let ExtFrame::EventInterceptResponse(r) = f else {
            panic!("{f:?}")
        };
        assert_eq!(
            r.system_prompt.as_deref(),
            Some("The complete replacement system prompt")
        );
        let f: ExtFrame = round_trip(
            r#"{"type":"event_intercept_response","id":"...",
 "block":true,"reason":"refused: matches danger pattern \"rm -rf\""}"#,
        );
        assert!(matches!(f, ExtFrame::EventInterceptResponse(r) if r.block));
        let f: ExtFrame = round_trip(
            r#"{"type":"event_intercept_response","id":"...",
 "modified_args":{"command":"echo GUARDED: ls"}}"#,
        );
        let ExtFrame::EventInterceptResponse(r) = f else {
            panic!("{f:?}")
        };
        assert_eq!(r.modified_args, Some(json!({"command":"echo GUARDED: ls"})));
        round_trip::<ExtFrame>(
            r#"{"type":"event_intercept_response","id":"...",
 "replace_text":"[redacted]"}"#,
        );
        // "" is a real value: it removes the prompt.
        let f: ExtFrame =
            round_trip(r#"{"type":"event_intercept_response","id":"x","system_prompt":""}"#);
        assert!(
            matches!(f, ExtFrame::EventInterceptResponse(r) if r.system_prompt.as_deref() == Some(""))
        );
    }

    #[test]
    fn command_responses_all_actions() {
        let f: ExtFrame = round_trip(
            r#"{"type":"command_response","id":"...","action":"prompt",
 "prompt":"Show today's weather for Berlin in one line."}"#,
        );
        assert!(matches!(f, ExtFrame::CommandResponse(r) if r.action == CommandAction::Prompt));
        let f: ExtFrame = round_trip(
            r#"{"type":"command_response","id":"...","action":"open_panel",
 "open_panel":{
   "id":"todos-main",
   "title":"Todos",
   "lines":["□ ship panel api","✓ persist state"],
   "footer":"↑/↓ navigate - a add - x complete - esc close"
 }}"#,
        );
        let ExtFrame::CommandResponse(r) = f else {
            panic!("{f:?}")
        };
        assert_eq!(r.action, CommandAction::OpenPanel);
        assert_eq!(r.open_panel.unwrap().lines.len(), 2);
        for (action, field) in [("insert", "insert"), ("display", "display")] {
            round_trip::<ExtFrame>(&format!(
                r#"{{"type":"command_response","id":"1","action":"{action}","{field}":"x"}}"#
            ));
        }
        let f: ExtFrame = round_trip(
            r#"{"type":"command_response","id":"1","action":"noop","error":"no such city"}"#,
        );
        let ExtFrame::CommandResponse(r) = f else {
            panic!("{f:?}")
        };
        assert_eq!(r.error.as_deref(), Some("no such city"));
        // An empty or missing action is a noop (legacy SDKs).
        for text in [
            r#"{"type":"command_response","id":"1","action":""}"#,
            r#"{"type":"command_response","id":"1"}"#,
        ] {
            let f: ExtFrame = serde_json::from_str(text).unwrap();
            assert!(matches!(f, ExtFrame::CommandResponse(r) if r.action == CommandAction::Noop));
        }
        assert!(
            serde_json::from_str::<ExtFrame>(
                r#"{"type":"command_response","id":"1","action":"explode"}"#
            )
            .is_err()
        );
    }

    #[test]
    fn submit_panels_notify() {
        let f: ExtFrame =
            round_trip(r#"{"type":"submit","text":"Summarize the selected workspace."}"#);
        assert!(matches!(f, ExtFrame::Submit(s) if s.text.starts_with("Summarize")));
        let f: ExtFrame = round_trip(
            r#"{"type":"panel_render","panel_id":"todos-main",
 "title":"Todos",
 "lines":["□ ship panel api","✓ persist state"],
 "footer":"↑/↓ navigate - a add - x complete - esc close"}"#,
        );
        assert!(matches!(f, ExtFrame::PanelRender(p) if p.panel_id == "todos-main"));
        let f: ExtFrame = round_trip(r#"{"type":"panel_close","panel_id":"todos-main"}"#);
        assert!(matches!(f, ExtFrame::PanelClose(p) if p.panel_id == "todos-main"));
        let f: ExtFrame = round_trip(
            r#"{"type":"notify","level":"info",
 "message":"refreshed cache (12 entries)"}"#,
        );
        assert!(matches!(f, ExtFrame::Notify(n) if n.level == NotifyLevel::Info));
        for (level, want) in [
            ("success", NotifyLevel::Success),
            ("warn", NotifyLevel::Warn),
            ("warning", NotifyLevel::Warn),
            ("error", NotifyLevel::Error),
            ("shout", NotifyLevel::Info),
        ] {
            let f: ExtFrame = serde_json::from_str(&format!(
                r#"{{"type":"notify","level":"{level}","message":"m"}}"#
            ))
            .unwrap();
            assert!(
                matches!(f, ExtFrame::Notify(n) if n.level == want),
                "{level}"
            );
        }
    }

    #[test]
    fn hello_ack() {
        let f: HostFrame = round_trip(
            r#"{"type":"hello_ack","protocol_version":1,
 "zot_version":"0.0.7","provider":"anthropic",
 "model":"claude-opus-4-7","cwd":"/Users/pat/Developer/zot",
 "extension_dir":"/Users/pat/Developer/zot/.zot/extensions/todos",
 "data_dir":"/Users/pat/Developer/zot/.zot/extensions/todos"}"#,
        );
        assert!(matches!(f, HostFrame::HelloAck(a) if a.protocol_version == PROTOCOL_VERSION_TEST));
    }
    const PROTOCOL_VERSION_TEST: u32 = crate::PROTOCOL_VERSION;

    #[test]
    fn command_invoked_and_tool_call() {
        let f: HostFrame = round_trip(
            r#"{"type":"command_invoked","id":"...",
 "name":"weather","args":"berlin"}"#,
        );
        assert!(matches!(f, HostFrame::CommandInvoked(c) if c.args == "berlin"));
        let f: HostFrame = round_trip(
            r#"{"type":"tool_call","id":"...","name":"weather",
 "args":{"city":"Berlin"}}"#,
        );
        assert!(matches!(f, HostFrame::ToolCall(c) if c.args == json!({"city":"Berlin"})));
    }

    #[test]
    fn events() {
        let cases: [(&str, Event); 6] = [
            (
                r#"{"type":"event","event":"turn_start","step":1}"#,
                Event::TurnStart { step: 1 },
            ),
            (
                r#"{"type":"event","event":"tool_call",
 "tool_id":"...","tool_name":"read","tool_args":{"path":"foo.go"}}"#,
                Event::ToolCall {
                    tool_id: "...".into(),
                    tool_name: "read".into(),
                    tool_args: json!({"path":"foo.go"}),
                    parent_tool_call_id: None,
                },
            ),
            (
                r#"{"type":"event","event":"tool_confirmation_requested",
 "tool_id":"...","tool_name":"read","tool_preview":"foo.go"}"#,
                Event::ToolConfirmationRequested {
                    tool_id: "...".into(),
                    tool_name: "read".into(),
                    tool_preview: "foo.go".into(),
                    parent_tool_call_id: None,
                },
            ),
            (
                r#"{"type":"event","event":"turn_end","stop":"end_turn"}"#,
                Event::TurnEnd {
                    stop: "end_turn".into(),
                    error: None,
                },
            ),
            (
                r#"{"type":"event","event":"session_start"}"#,
                Event::SessionStart,
            ),
            (
                r#"{"type":"event","event":"assistant_message","text":"hi"}"#,
                Event::AssistantMessage { text: "hi".into() },
            ),
        ];
        for (text, want) in cases {
            let name = want.name();
            assert_eq!(round_trip::<HostFrame>(text), HostFrame::Event(want));
            assert!(Event::NAMES.contains(&name));
        }
    }

    #[test]
    fn event_intercepts() {
        let f: HostFrame = round_trip(
            r#"{"type":"event_intercept","id":"start-1","event":"before_agent_start","session_id":"session-123","agent_run_id":"run-456","cwd":"/work/repo","provider":"anthropic","model":"claude-opus-4-7","system_prompt":"The complete current system prompt"}"#,
        );
        let HostFrame::EventIntercept(i) = f else {
            panic!("{f:?}")
        };
        assert_eq!(i.id, "start-1");
        assert!(
            matches!(i.payload, Intercept::BeforeAgentStart { ref agent_run_id, .. } if agent_run_id == "run-456")
        );
        let f: HostFrame = round_trip(
            r#"{"type":"event_intercept","id":"...","event":"tool_call",
 "tool_id":"...","tool_name":"bash",
 "tool_args":{"command":"rm -rf /tmp/foo"}}"#,
        );
        assert!(
            matches!(f, HostFrame::EventIntercept(EventIntercept { payload: Intercept::ToolCall { ref tool_name, .. }, .. }) if tool_name == "bash")
        );
        let f: HostFrame = round_trip(
            r#"{"type":"event_intercept","id":"...","event":"turn_start",
 "step":3}"#,
        );
        assert!(matches!(
            f,
            HostFrame::EventIntercept(EventIntercept {
                payload: Intercept::TurnStart { step: 3 },
                ..
            })
        ));
        let f: HostFrame = round_trip(
            r#"{"type":"event_intercept","id":"...","event":"assistant_message",
 "text":"here is your api key: sk-ant-..."}"#,
        );
        assert!(matches!(
            f,
            HostFrame::EventIntercept(EventIntercept {
                payload: Intercept::AssistantMessage { .. },
                ..
            })
        ));
    }

    #[test]
    fn panel_key_close_shutdown() {
        let f: HostFrame =
            round_trip(r#"{"type":"panel_key","panel_id":"todos-main","key":"down"}"#);
        assert!(matches!(f, HostFrame::PanelKey(k) if k.key == Key::Down));
        let f: HostFrame =
            round_trip(r#"{"type":"panel_key","panel_id":"todos-main","key":"rune","text":"x"}"#);
        assert!(
            matches!(f, HostFrame::PanelKey(k) if k.key == Key::Rune && k.text.as_deref() == Some("x"))
        );
        for key in [
            "pageup",
            "pagedown",
            "esc",
            "backspace",
            "delete",
            "home",
            "end",
            "tab",
        ] {
            round_trip::<HostFrame>(&format!(
                r#"{{"type":"panel_key","panel_id":"p","key":"{key}"}}"#
            ));
        }
        let f: HostFrame = round_trip(r#"{"type":"panel_close","panel_id":"todos-main"}"#);
        assert!(matches!(f, HostFrame::PanelClose(_)));
        assert_eq!(
            round_trip::<HostFrame>(r#"{"type":"shutdown"}"#),
            HostFrame::Shutdown
        );
    }

    #[test]
    fn unknown_fields_are_tolerated_and_types_listed() {
        let f: ExtFrame =
            serde_json::from_str(r#"{"type":"ready","extra":{"nested":[1,2]}}"#).unwrap();
        assert_eq!(f, ExtFrame::Ready);
        for name in ExtFrame::TYPES {
            let probe = serde_json::from_str::<ExtFrame>(&format!(r#"{{"type":"{name}"}}"#));
            if let Ok(frame) = probe {
                assert_eq!(frame.type_name(), *name);
            }
        }
        assert!(serde_json::from_str::<ExtFrame>(r#"{"type":"teleport"}"#).is_err());
    }

    #[test]
    fn to_line_is_one_lf_terminated_line() {
        let line = to_line(&HostFrame::Shutdown).unwrap();
        assert_eq!(line, b"{\"type\":\"shutdown\"}\n");
    }

    /// `ExtFrame::from_slice` gives what the derive gives: the same frame,
    /// or the same error, for replies read directly and for every other type.
    #[test]
    fn from_slice_matches_the_derive() {
        let mut parsed = 0;
        for line in [
            r#"{"type":"tool_result","id":"7","content":[{"type":"text","text":"hi"},{"type":"image","data":"AA==","mime_type":"image/png"}],"is_error":true,"extra":1}"#,
            r#"{"id":"7","type":"tool_result"}"#,
            r#"{"type":"tool_result","id":"8","content":[{"type":"future_block","x":1}],"activate_tools":["a"]}"#,
            r#"{"type":"tool_\u0072esult","id":"9"}"#,
            r#"{"type":"event_intercept_response","id":"3","block":true,"reason":"no"}"#,
            r#"{"type":"command_response","id":"4","action":"display","display":"x"}"#,
            r#"{"type":"ready"}"#,
            r#"{"type":"hello","name":"w"}"#,
            r#"{"type":"clear_notes","x":[1,2]}"#,
            r#"{"type":"tool_result"}"#,
            r#"{"type":"tool_result","id":7}"#,
            r#"{"type":"tool_result","type":"ready","id":"1"}"#,
            r#"{"type":"command_response","id":"4","action":"fly"}"#,
            r#"{"type":"no_such_frame"}"#,
            r#"{"type":3}"#,
            r#"[1,2]"#,
            r#"{"type":"tool_result","id":"1""#,
        ] {
            let derived = serde_json::from_slice::<ExtFrame>(line.as_bytes());
            let fast = ExtFrame::from_slice(line.as_bytes());
            match (derived, fast) {
                (Ok(want), Ok(got)) => {
                    assert_eq!(got, want, "{line}");
                    parsed += 1;
                }
                (Err(want), Err(got)) => assert_eq!(got.to_string(), want.to_string(), "{line}"),
                (want, got) => panic!("{line}: derive gave {want:?}, from_slice {got:?}"),
            }
        }
        // The first nine are frames; the rest are refused by both.
        assert_eq!(parsed, 9);
    }
}
