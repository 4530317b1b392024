//! The JSON Schema contracts, derived from the wire types with schemars and
//! checked in under `schema/` at the repository root so SDKs and clients in
//! any language can validate against them: the extension protocol (one
//! schema per direction), the front-end protocol (`--json` and `zot rpc`
//! lines, RPC requests) and the command-hook wire format (stdin, stdout).

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::Value;

use crate::events::EventLine;
use crate::hooks::{HookInput, HookOutput};
use crate::rpc::Request;
use crate::zot::{ExtFrame, HostFrame};

/// File name of the schema of every extension → host frame ([`ExtFrame`]).
pub const EXT_FRAME_SCHEMA: &str = "ext-frame.schema.json";

/// File name of the schema of every host → extension frame ([`HostFrame`]).
pub const HOST_FRAME_SCHEMA: &str = "host-frame.schema.json";

/// File name of the schema of every `--json` and `zot rpc` output line ([`EventLine`]).
pub const EVENT_SCHEMA: &str = "event.schema.json";

/// File name of the schema of every `zot rpc` request line ([`Request`]).
pub const RPC_REQUEST_SCHEMA: &str = "rpc-request.schema.json";

/// File name of the schema of what a command hook reads on stdin ([`HookInput`]).
pub const HOOK_INPUT_SCHEMA: &str = "hook-input.schema.json";

/// File name of the schema of what a command hook may print on stdout ([`HookOutput`]).
pub const HOOK_OUTPUT_SCHEMA: &str = "hook-output.schema.json";

/// Every schema as `(file name, schema)`, in a stable order.
///
/// They are the contract for writers and readers alike: fields with a default
/// may be omitted and unknown fields are allowed, as the host allows them.
/// Readers tolerate a little more than the schema names (legacy spellings
/// such as `"action":""` or `"level":"warning"`, unknown content blocks).
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        (EXT_FRAME_SCHEMA, root::<ExtFrame>()),
        (HOST_FRAME_SCHEMA, root::<HostFrame>()),
        (EVENT_SCHEMA, root::<EventLine>()),
        (RPC_REQUEST_SCHEMA, root::<Request>()),
        (HOOK_INPUT_SCHEMA, root::<HookInput>()),
        (HOOK_OUTPUT_SCHEMA, root::<HookOutput>()),
    ]
}

/// The schema of `T` as a standalone draft 2020-12 document, with `$schema`,
/// `title` and `description` first so the files read top-down.
fn root<T: JsonSchema>() -> Value {
    let schema: Schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut body = match schema.to_value() {
        Value::Object(body) => body,
        other => return other,
    };
    let mut ordered = serde_json::Map::new();
    for key in ["$schema", "title", "description"] {
        if let Some(value) = body.remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.extend(body);
    Value::Object(ordered)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use serde_json::json;

    use super::*;

    /// Where the checked-in schemas live: `schema/` at the repository root.
    fn schema_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema")
    }

    /// How a schema file is written: pretty, LF-terminated.
    fn render(schema: &Value) -> String {
        let mut text = serde_json::to_string_pretty(schema).unwrap();
        text.push('\n');
        text
    }

    fn schema(file: &str) -> Value {
        schemas()
            .into_iter()
            .find(|(name, _)| *name == file)
            .map(|(_, s)| s)
            .unwrap()
    }

    fn validator(file: &str) -> jsonschema::Validator {
        jsonschema::validator_for(&schema(file)).unwrap()
    }

    /// Each frame's schema errors, as text, or an empty list when it is valid.
    fn errors(validator: &jsonschema::Validator, frame: &Value) -> Vec<String> {
        validator
            .iter_errors(frame)
            .map(|e| e.to_string())
            .collect()
    }

    /// The checked-in files are what the types generate now; with
    /// `ZOT_UPDATE_SCHEMA=1` this test rewrites them instead.
    #[test]
    fn checked_in_schemas_are_current() {
        let update = std::env::var_os("ZOT_UPDATE_SCHEMA").is_some_and(|v| !v.is_empty());
        let dir = schema_dir();
        let mut stale = Vec::new();
        for (name, schema) in schemas() {
            let path = dir.join(name);
            let want = render(&schema);
            if update {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, want).unwrap();
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(have) if have == want => {}
                Ok(_) => stale.push(format!("schema/{name} differs from the protocol types")),
                Err(e) => stale.push(format!("schema/{name} cannot be read ({e})")),
            }
        }
        assert!(
            stale.is_empty(),
            "{}\nregenerate with `ZOT_UPDATE_SCHEMA=1 cargo test -p zot-protocol` and check in schema/",
            stale.join("\n")
        );
    }

    #[test]
    fn schemas_are_valid_draft_2020_12() {
        for (name, schema) in schemas() {
            assert_eq!(
                schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{name}"
            );
            assert!(
                jsonschema::meta::is_valid(&schema),
                "{name} is not a valid schema"
            );
        }
    }

    /// Every `type` of each direction is in its schema, so a frame type added
    /// to the enums cannot be missed by the contract.
    #[test]
    fn every_frame_type_is_described() {
        let text = schema(HOST_FRAME_SCHEMA).to_string();
        for kind in [
            "hello_ack",
            "command_invoked",
            "tool_call",
            "event",
            "event_intercept",
            "panel_key",
            "panel_close",
            "shutdown",
        ] {
            assert!(text.contains(&format!("\"const\":\"{kind}\"")), "{kind}");
        }
        let ext_text = schema(EXT_FRAME_SCHEMA).to_string();
        for kind in ExtFrame::TYPES {
            assert!(
                ext_text.contains(&format!("\"const\":\"{kind}\"")),
                "{kind}"
            );
        }
    }

    /// Which way a frame travels.
    #[derive(Clone, Copy, Debug)]
    enum Dir {
        Ext,
        Host,
    }

    /// Every frame example of the spec (`zot-extensions.txt`), verbatim:
    /// the "Wire format" section, the quick start and the prose.
    const SPEC_EXAMPLES: &[(Dir, &str)] = &[
        (
            Dir::Ext,
            r#"{"type":"hello","name":"hello-py","version":"1.0.0","capabilities":["commands"]}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"register_command","name":"hellopy","description":"say hi (python)"}"#,
        ),
        (Dir::Ext, r#"{"type":"shutdown_ack"}"#),
        (
            Dir::Ext,
            r#"{"type":"hello","name":"weather","version":"1.0.0",
 "capabilities":["commands","tools","panels"]}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"register_command","name":"weather",
 "description":"current weather for a city"}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"register_tool","name":"weather",
 "description":"Get the current weather for a city.",
 "schema":{
   "type":"object",
   "properties":{"city":{"type":"string"}},
   "required":["city"]
 }}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"tool_result","id":"...",
 "content":[{"type":"text","text":"Enabled weather lookup"}],
 "activate_tools":["weather"]}"#,
        ),
        (Dir::Ext, r#"{"type":"ready"}"#),
        (
            Dir::Ext,
            r#"{"type":"tool_result","id":"...",
 "content":[{"type":"text","text":"Berlin: 16°C, fog"}]}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"subscribe",
 "events":["session_start","turn_start","tool_call","tool_confirmation_requested","turn_end","assistant_message"],
 "intercept":["tool_call","turn_start","assistant_message"]}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"subscribe","intercept":["before_agent_start"]}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"event_intercept","id":"start-1","event":"before_agent_start","session_id":"session-123","agent_run_id":"run-456","cwd":"/work/repo","provider":"anthropic","model":"claude-opus-4-7","system_prompt":"The complete current system prompt"}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"event_intercept_response","id":"start-1","system_prompt":"The complete replacement system prompt"}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"event_intercept_response","id":"...",
 "block":true,"reason":"refused: matches danger pattern \"rm -rf\""}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"event_intercept_response","id":"...",
 "modified_args":{"command":"echo GUARDED: ls"}}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"event_intercept_response","id":"...",
 "replace_text":"[redacted]"}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"command_response","id":"...","action":"prompt",
 "prompt":"Show today's weather for Berlin in one line."}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"command_response","id":"...","action":"open_panel",
 "open_panel":{
   "id":"todos-main",
   "title":"Todos",
   "lines":["□ ship panel api","✓ persist state"],
   "footer":"↑/↓ navigate - a add - x complete - esc close"
 }}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"submit","text":"Summarize the selected workspace."}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"panel_render","panel_id":"todos-main",
 "title":"Todos",
 "lines":["□ ship panel api","✓ persist state"],
 "footer":"↑/↓ navigate - a add - x complete - esc close"}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"panel_close","panel_id":"todos-main"}"#,
        ),
        (
            Dir::Ext,
            r#"{"type":"notify","level":"info",
 "message":"refreshed cache (12 entries)"}"#,
        ),
        (Dir::Ext, r#"{"type":"clear_notes"}"#),
        (
            Dir::Host,
            r#"{"type":"hello_ack","protocol_version":1,
 "zot_version":"0.0.7","provider":"anthropic",
 "model":"claude-opus-4-7","cwd":"/Users/pat/Developer/zot",
 "extension_dir":"/Users/pat/Developer/zot/.zot/extensions/todos",
 "data_dir":"/Users/pat/Developer/zot/.zot/extensions/todos"}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"command_invoked","id":"...",
 "name":"weather","args":"berlin"}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"tool_call","id":"...","name":"weather",
 "args":{"city":"Berlin"}}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"event","event":"turn_start","step":1}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"event","event":"tool_call",
 "tool_id":"...","tool_name":"read","tool_args":{"path":"foo.go"}}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"event","event":"tool_confirmation_requested",
 "tool_id":"...","tool_name":"read","tool_preview":"foo.go"}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"event","event":"turn_end","stop":"end_turn"}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"event_intercept","id":"...","event":"tool_call",
 "tool_id":"...","tool_name":"bash",
 "tool_args":{"command":"rm -rf /tmp/foo"}}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"event_intercept","id":"...","event":"turn_start",
 "step":3}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"event_intercept","id":"...","event":"assistant_message",
 "text":"here is your api key: sk-ant-..."}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"panel_key","panel_id":"todos-main","key":"down"}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"panel_key","panel_id":"todos-main","key":"rune","text":"x"}"#,
        ),
        (
            Dir::Host,
            r#"{"type":"panel_close","panel_id":"todos-main"}"#,
        ),
    ];

    #[test]
    fn every_spec_example_validates() {
        let ext = validator(EXT_FRAME_SCHEMA);
        let host = validator(HOST_FRAME_SCHEMA);
        for (dir, text) in SPEC_EXAMPLES {
            let frame: Value = serde_json::from_str(text).unwrap();
            let v = match dir {
                Dir::Ext => &ext,
                Dir::Host => &host,
            };
            let errs = errors(v, &frame);
            assert!(
                errs.is_empty(),
                "{dir:?} example {text}:\n{}",
                errs.join("\n")
            );
        }
    }

    /// The spec itself, when the shared folder sits beside the repository
    /// (as in development and CI): every frame example found in it must be
    /// one of `SPEC_EXAMPLES`, so a new example cannot slip past the schema.
    #[test]
    fn spec_examples_list_is_complete() {
        let spec =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec/zot-extensions.txt");
        let Ok(text) = std::fs::read_to_string(&spec) else {
            eprintln!(
                "{} not found; checked the embedded examples only",
                spec.display()
            );
            return;
        };
        let known: Vec<Value> = SPEC_EXAMPLES
            .iter()
            .map(|(_, t)| serde_json::from_str(t).unwrap())
            .collect();
        let frame_types: Vec<&str> = ExtFrame::TYPES
            .iter()
            .copied()
            .chain(["hello_ack", "command_invoked", "tool_call", "event"])
            .chain(["event_intercept", "panel_key", "shutdown"])
            .collect();
        let mut found = 0;
        for (at, _) in text.match_indices(r#"{"type":"#) {
            let mut stream = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
            let Some(Ok(frame)) = stream.next() else {
                continue;
            };
            let Some(kind) = frame["type"].as_str() else {
                continue;
            };
            if !frame_types.contains(&kind) {
                continue;
            }
            found += 1;
            assert!(
                known.contains(&frame),
                "spec example missing from SPEC_EXAMPLES: {frame}"
            );
        }
        assert!(
            found >= SPEC_EXAMPLES.len(),
            "only {found} examples found in the spec"
        );
    }

    /// The schema is a contract, not a formality: it refuses what the host refuses.
    #[test]
    fn schema_refuses_bad_frames() {
        let ext = validator(EXT_FRAME_SCHEMA);
        let host = validator(HOST_FRAME_SCHEMA);
        for bad in [
            json!({"type": "teleport"}),
            json!({"version": "1"}),
            json!({"type": "hello", "version": "1.0.0"}),
            json!({"type": "register_tool", "name": "t"}),
            json!({"type": "register_tool", "name": "t", "schema": "object"}),
            json!({"type": "command_response", "id": "1", "action": "explode"}),
            json!({"type": "event_intercept_response", "id": "1", "modified_args": "rm"}),
            json!({"type": "tool_result", "id": "1", "content": [{"type": "audio"}]}),
            json!({"type": "tool_result", "id": "1", "content": [{"type": "image", "data": "x"}]}),
            json!({"type": "notify", "level": "info"}),
            json!({"type": "submit"}),
        ] {
            assert!(!errors(&ext, &bad).is_empty(), "accepted {bad}");
        }
        for bad in [
            json!({"type": "event", "event": "lunch"}),
            json!({"type": "event", "event": "turn_start"}),
            json!({"type": "event_intercept", "id": "1", "event": "session_start"}),
            json!({"type": "panel_key", "panel_id": "p", "key": "f13"}),
            json!({"type": "hello_ack", "protocol_version": 1}),
            json!({"type": "command_invoked", "name": "x"}),
        ] {
            assert!(!errors(&host, &bad).is_empty(), "accepted {bad}");
        }
        // What serde accepts as a default or an alias stays acceptable.
        for good in [
            json!({"type": "command_response", "id": "1"}),
            json!({"type": "tool_result", "id": "1"}),
            json!({"type": "notify", "message": "m"}),
            json!({"type": "ready", "extra": {"nested": [1, 2]}}),
        ] {
            let errs = errors(&ext, &good);
            assert!(errs.is_empty(), "refused {good}: {}", errs.join("\n"));
        }
    }

    /// Frames serialised from the types validate too (the other half of the contract).
    #[test]
    fn serialised_frames_validate() {
        use crate::zot::*;
        let ext = validator(EXT_FRAME_SCHEMA);
        let frames = [
            ExtFrame::Hello(Hello {
                name: "n".into(),
                version: None,
                capabilities: vec![],
            }),
            ExtFrame::RegisterTool(RegisterTool {
                name: "t".into(),
                description: None,
                schema: json!({"type": "object"}),
                deferred: true,
                read_only: true,
            }),
            ExtFrame::ToolResult(ToolResult {
                id: "1".into(),
                content: vec![
                    ContentBlock::Text { text: "t".into() },
                    ContentBlock::Image {
                        mime_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    },
                ],
                is_error: true,
                activate_tools: vec!["x".into()],
            }),
            ExtFrame::EventInterceptResponse(InterceptResponse {
                id: "1".into(),
                system_prompt: Some(String::new()),
                ..InterceptResponse::default()
            }),
            ExtFrame::Notify(Notify {
                level: NotifyLevel::Warn,
                message: "m".into(),
            }),
            ExtFrame::ClearNotes,
            ExtFrame::ShutdownAck,
        ];
        for frame in frames {
            let value = serde_json::to_value(&frame).unwrap();
            let errs = errors(&ext, &value);
            assert!(errs.is_empty(), "{value}: {}", errs.join("\n"));
        }
    }
}
