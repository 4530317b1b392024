//! The nimlet dialect: the host writes `initialize`, the extension's first
//! line must be a valid `register` (strict, nimlet's exact messages), then
//! every command, tool call and subscribed lifecycle event is a request it
//! answers with `response`. Side effects (status, widget, notification,
//! entry) may ride on any reply or unsolicited line.

use std::time::Duration;

use serde_json::Value;
use zot_protocol::nimlet::{CAPABILITIES, Response, SideEffects, UiRequest};
use zot_protocol::zot::NotifyLevel;

use crate::connection::{FrameReader, ReadError, Reply, RequestError};
use crate::extension::Extension;
use crate::host::{HostEvent, Inner, QuestionReply};
use crate::registry::{CommandInfo, ToolInfo};

/// A validated `register` line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registration {
    pub(crate) commands: Vec<CommandInfo>,
    pub(crate) tools: Vec<ToolInfo>,
    pub(crate) events: Vec<String>,
}

/// Reads the first line, which must be a valid `register`.
pub(crate) async fn register(
    reader: &mut FrameReader,
    extension: &str,
    timeout: Duration,
) -> Result<Registration, super::zot::HandshakeError> {
    use super::zot::HandshakeError;
    let line = match tokio::time::timeout(timeout, reader.next()).await {
        Err(_) => return Err(HandshakeError::Timeout(timeout)),
        Ok(None) => return Err(HandshakeError::ExitedBeforeHello),
        Ok(Some(Err(ReadError::TooLong))) => return Err(HandshakeError::FrameTooLong),
        Ok(Some(Err(ReadError::Io(e)))) => return Err(HandshakeError::Io(e.to_string())),
        Ok(Some(Ok(line))) => line,
    };
    let value: Value =
        serde_json::from_slice(&line).map_err(|e| HandshakeError::BadJson(e.to_string()))?;
    validate(&value, extension).map_err(HandshakeError::BadRegister)
}

/// nimlet's strict `register` rules (research nimlet.md E8, E9).
pub(crate) fn validate(value: &Value, extension: &str) -> Result<Registration, String> {
    if value.get("type").and_then(Value::as_str) != Some("register") {
        return Err("expected register response".into());
    }
    let mut registration = Registration::default();
    let Some(Value::Array(commands)) = value.get("commands") else {
        return Err("register commands must be an array".into());
    };
    for command in commands {
        let name = command
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        if name.is_empty() {
            continue;
        }
        registration.commands.push(CommandInfo {
            name: name.to_owned(),
            description: command
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            extension: extension.to_owned(),
        });
    }
    match value.get("events") {
        None => {}
        Some(Value::Array(events)) => {
            for event in events {
                let Value::String(event) = event else {
                    return Err("register events must be strings".into());
                };
                registration.events.push(event.clone());
            }
        }
        Some(_) => return Err("register events must be an array".into()),
    }
    match value.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(tools)) => {
            for tool in tools {
                registration.tools.push(tool_info(tool, extension)?);
            }
        }
        Some(_) => return Err("register tools must be an array".into()),
    }
    Ok(registration)
}

fn tool_info(tool: &Value, extension: &str) -> Result<ToolInfo, String> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let schema = tool.get("input_schema").filter(|s| s.is_object());
    let (false, false, Some(schema)) = (name.is_empty(), description.is_empty(), schema) else {
        return Err("registered tools require name, description, and input_schema".into());
    };
    let capabilities = match tool.get("capabilities") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            let mut caps = Vec::new();
            for item in items {
                let Value::String(cap) = item else {
                    return Err(format!(
                        "invalid capabilities for tool '{name}': capabilities must contain strings"
                    ));
                };
                let cap = cap.to_lowercase();
                if !CAPABILITIES.contains(&cap.as_str()) {
                    return Err(format!(
                        "invalid capabilities for tool '{name}': unknown capability: {cap}"
                    ));
                }
                caps.push(cap);
            }
            Some(caps)
        }
        Some(_) => {
            return Err(format!(
                "invalid capabilities for tool '{name}': capabilities must be an array"
            ));
        }
    };
    Ok(ToolInfo {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        schema: schema.clone(),
        deferred: false,
        extension: extension.to_owned(),
        capabilities,
    })
}

/// Handles one line after `register`.
pub(crate) fn handle_line(
    host: &std::sync::Arc<Inner>,
    ext: &std::sync::Arc<Extension>,
    line: &[u8],
) {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            return ext
                .log
                .line(format_args!("malformed json from extension: {e}; skipped"));
        }
    };
    match value.get("type").and_then(Value::as_str).unwrap_or("") {
        "response" => match serde_json::from_value::<Response>(value) {
            Ok(response) => {
                apply(host, ext, &response.effects);
                let id = response.id.clone();
                if ext
                    .conn
                    .resolve(&id, Ok(Reply::Nimlet(Box::new(response))))
                    .is_some()
                {
                    ext.log.line(format_args!(
                        "response for unknown or expired id \"{id}\"; dropped"
                    ));
                }
            }
            Err(e) => {
                ext.log
                    .line(format_args!("bad response frame: {e}; skipped"));
                if let Some(id) = serde_json::from_slice::<Value>(line)
                    .ok()
                    .and_then(|v| v["id"].as_str().map(str::to_owned))
                {
                    ext.conn.resolve(
                        &id,
                        Err(RequestError::Malformed(format!("bad response frame: {e}"))),
                    );
                }
            }
        },
        "ui_request" if value.get("method").and_then(Value::as_str) == Some("question") => {
            match serde_json::from_value::<UiRequest>(value) {
                Ok(request) => ask(host, ext, request),
                Err(e) => ext.log.line(format_args!("bad ui_request: {e}; skipped")),
            }
        }
        "register" => ext.log.line("a second register; ignored"),
        _ => match serde_json::from_value::<SideEffects>(value) {
            Ok(effects) => apply(host, ext, &effects),
            Err(e) => ext.log.line(format_args!("bad update frame: {e}; skipped")),
        },
    }
}

/// Turns side effects into host events, attributed to the extension.
fn apply(host: &Inner, ext: &Extension, effects: &SideEffects) {
    let name = &ext.name;
    if let Some(status) = effects.status.as_ref().filter(|s| !s.key.is_empty()) {
        host.emit(HostEvent::Status {
            extension: name.clone(),
            key: format!("{name}:{}", status.key),
            text: status.text.clone(),
        });
    }
    if let Some(widget) = effects.widget.as_ref().filter(|w| !w.key.is_empty()) {
        let lines = widget
            .lines
            .iter()
            .filter_map(|l| l.as_str().map(str::to_owned))
            .collect();
        host.emit(HostEvent::Widget {
            extension: name.clone(),
            key: format!("{name}:{}", widget.key),
            lines,
        });
    }
    if let Some(note) = effects
        .notification
        .as_ref()
        .filter(|n| !n.message.is_empty())
    {
        let level = match note.level.as_str() {
            "error" => NotifyLevel::Error,
            "warning" | "warn" => NotifyLevel::Warn,
            _ => NotifyLevel::Info,
        };
        host.emit(HostEvent::Notify {
            extension: name.clone(),
            level,
            message: note.message.clone(),
        });
    }
    if let Some(data) = &effects.entry {
        host.record_entry(name, data.clone());
    }
}

/// Puts a question to the front end and writes its answer back; time spent
/// waiting does not count against the extension's reply timeout.
fn ask(host: &std::sync::Arc<Inner>, ext: &std::sync::Arc<Extension>, request: UiRequest) {
    let id = request.id.as_str().unwrap_or("").to_owned();
    let (reply, answer) = QuestionReply::new();
    host.questions.begin();
    host.emit(HostEvent::Question {
        extension: ext.name.clone(),
        prompt: request.prompt,
        options: request.options,
        reply,
    });
    let (host, ext) = (std::sync::Arc::clone(host), std::sync::Arc::clone(ext));
    tokio::spawn(async move {
        // A dropped reply (no front end to ask, a headless mode) is a cancellation.
        let answer = answer.await.ok().flatten();
        host.questions.end();
        let frame = zot_protocol::nimlet::HostFrame::UiResponse {
            id,
            cancelled: answer.is_none(),
            answer: answer.unwrap_or_default(),
        };
        ext.conn.send(&frame);
    });
}
