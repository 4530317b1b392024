//! The zot dialect: the extension speaks first (`hello`), the host answers
//! `hello_ack`, registrations stream in until `ready`, and every later frame
//! is routed here.

use std::time::Duration;

use serde_json::Value;
use zot_protocol::zot::{ExtFrame, Hello, RegisterCommand, RegisterTool, Subscribe};

use crate::connection::{FrameReader, ReadError, Reply, RequestError};
use crate::extension::{Extension, Readiness};
use crate::host::{HostEvent, Inner};
use crate::registry::{CommandInfo, ToolInfo};

/// Why the first frame was not an acceptable `hello`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("exited before hello")]
    ExitedBeforeHello,
    #[error("no hello within {0:?}")]
    Timeout(Duration),
    #[error("first frame exceeds the frame size limit")]
    FrameTooLong,
    #[error("reading the first frame failed: {0}")]
    Io(String),
    #[error("first frame is not valid JSON: {0}")]
    BadJson(String),
    #[error("first frame must be hello (got {0})")]
    NotHello(String),
    #[error("hello name \"{got}\" does not match the manifest name \"{want}\"")]
    NameMismatch { got: String, want: String },
    /// nimlet: the first line was not a valid `register` (nimlet's own message).
    #[error("{0}")]
    BadRegister(String),
}

/// Reads the first frame, which must be a `hello` naming `manifest_name`.
pub(crate) async fn handshake(
    reader: &mut FrameReader,
    manifest_name: &str,
    timeout: Duration,
) -> Result<Hello, HandshakeError> {
    let line = match tokio::time::timeout(timeout, reader.next()).await {
        Err(_) => return Err(HandshakeError::Timeout(timeout)),
        Ok(None) => return Err(HandshakeError::ExitedBeforeHello),
        Ok(Some(Err(ReadError::TooLong))) => return Err(HandshakeError::FrameTooLong),
        Ok(Some(Err(ReadError::Io(e)))) => return Err(HandshakeError::Io(e.to_string())),
        Ok(Some(Ok(line))) => line,
    };
    let value: Value =
        serde_json::from_slice(&line).map_err(|e| HandshakeError::BadJson(e.to_string()))?;
    let kind = match value.get("type") {
        Some(Value::String(t)) => format!("\"{t}\""),
        _ => "a frame without a type".to_owned(),
    };
    match serde_json::from_value::<ExtFrame>(value) {
        Ok(ExtFrame::Hello(hello)) if hello.name == manifest_name => Ok(hello),
        Ok(ExtFrame::Hello(hello)) => Err(HandshakeError::NameMismatch {
            got: hello.name,
            want: manifest_name.to_owned(),
        }),
        Ok(_) => Err(HandshakeError::NotHello(kind)),
        Err(e) if kind == "\"hello\"" => Err(HandshakeError::BadJson(e.to_string())),
        Err(_) => Err(HandshakeError::NotHello(kind)),
    }
}

/// Handles one frame after the handshake.
pub(crate) fn handle_line(host: &Inner, ext: &Extension, line: &[u8]) {
    let frame = match serde_json::from_slice::<ExtFrame>(line) {
        Ok(frame) => frame,
        Err(err) => return bad_frame(ext, line, &err),
    };
    match frame {
        ExtFrame::Hello(_) => ext.log.line("unexpected second hello; ignored"),
        ExtFrame::RegisterCommand(cmd) => register_command(host, ext, cmd),
        ExtFrame::RegisterTool(tool) => register_tool(host, ext, tool),
        ExtFrame::Ready => ext.set_readiness(Readiness::Ready),
        ExtFrame::Subscribe(sub) => subscribe(ext, sub),
        ExtFrame::ToolResult(ref r) => reply(ext, &r.id.clone(), frame),
        ExtFrame::CommandResponse(ref r) => reply(ext, &r.id.clone(), frame),
        ExtFrame::EventInterceptResponse(ref r) => reply(ext, &r.id.clone(), frame),
        ExtFrame::Submit(submit) => {
            if !submit.text.trim().is_empty() {
                host.emit(HostEvent::Submit {
                    extension: ext.name.clone(),
                    text: submit.text,
                });
            }
        }
        ExtFrame::PanelRender(panel) => {
            host.emit(HostEvent::PanelRender {
                extension: ext.name.clone(),
                panel,
            });
        }
        ExtFrame::PanelClose(close) => host.emit(HostEvent::PanelClose {
            extension: ext.name.clone(),
            panel_id: close.panel_id,
        }),
        ExtFrame::Notify(n) => host.emit(HostEvent::Notify {
            extension: ext.name.clone(),
            level: n.level,
            message: n.message,
        }),
        ExtFrame::ClearNotes => host.emit(HostEvent::ClearNotes {
            extension: ext.name.clone(),
        }),
        ExtFrame::ShutdownAck => {}
    }
}

fn reply(ext: &Extension, id: &str, frame: ExtFrame) {
    let kind = frame.type_name();
    if ext
        .conn
        .resolve(id, Ok(Reply::Zot(Box::new(frame))))
        .is_some()
    {
        ext.log.line(format_args!(
            "{kind} for unknown or expired id \"{id}\"; dropped"
        ));
    }
}

/// Logs a frame that did not parse; a malformed reply fails its request at once.
fn bad_frame(ext: &Extension, line: &[u8], err: &serde_json::Error) {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        ext.log
            .line(format_args!("malformed json from extension: {err}"));
        return;
    };
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        ext.log.line("frame without a \"type\" field; skipped");
        return;
    };
    if !ExtFrame::TYPES.contains(&kind) {
        ext.log
            .line(format_args!("unknown frame type \"{kind}\"; skipped"));
        return;
    }
    ext.log
        .line(format_args!("bad {kind} frame: {err}; skipped"));
    if let Some(id) = value.get("id").and_then(Value::as_str)
        && ext.conn.is_waiting(id)
    {
        ext.conn.resolve(
            id,
            Err(RequestError::Malformed(format!("bad {kind} frame: {err}"))),
        );
    }
}

fn register_command(host: &Inner, ext: &Extension, cmd: RegisterCommand) {
    let name = cmd.name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) || name.starts_with('/') {
        ext.log.line(format_args!(
            "command {:?} rejected: a name is one word without a leading '/'",
            cmd.name
        ));
        return;
    }
    host.add_command(
        ext,
        CommandInfo {
            name: name.to_owned(),
            description: cmd.description,
            extension: ext.name.clone(),
        },
    );
}

fn register_tool(host: &Inner, ext: &Extension, tool: RegisterTool) {
    if tool.name.trim().is_empty() {
        ext.log.line("tool with an empty name rejected");
        return;
    }
    if !tool.schema.is_object() {
        ext.log.line(format_args!(
            "tool \"{}\" rejected: schema must be a JSON object (got {})",
            tool.name,
            json_kind(&tool.schema)
        ));
        return;
    }
    host.add_tool(
        ext,
        ToolInfo {
            name: tool.name,
            description: tool.description,
            schema: tool.schema,
            deferred: tool.deferred,
            extension: ext.name.clone(),
            capabilities: None,
        },
    );
}

fn subscribe(ext: &Extension, sub: Subscribe) {
    use zot_protocol::zot::{Event, Intercept};
    let mut regs = ext.registrations();
    for event in sub.events {
        if Event::NAMES.contains(&event.as_str()) {
            regs.events.insert(event);
        } else {
            ext.log
                .line(format_args!("subscribe: unknown event \"{event}\" ignored"));
        }
    }
    for event in sub.intercept {
        if Intercept::NAMES.contains(&event.as_str()) {
            regs.intercepts.insert(event);
        } else {
            ext.log.line(format_args!(
                "subscribe: \"{event}\" cannot be intercepted; ignored"
            ));
        }
    }
}

pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
