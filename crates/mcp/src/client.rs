//! The `rmcp` client handler: what zot answers to an MCP server's requests
//! (roots, elicitation as a form, sampling after the user agrees, ping)
//! and does on its notifications (progress, logging, list changes).

// Roots and logging are deprecated only for MCP 2026-07-28 (SEP-2577);
// zot speaks 2025-11-25 and earlier, where both are current.
#![allow(deprecated)]

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData,
    Implementation, InitializeRequestParams, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProtocolVersion, Root,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde_json::{Value, json};
use zot_protocol::ui::{FieldKind, Form, FormAnswer, FormField, FormReply, QuestionReply};

use zot_extensions::model::Effect;
use zot_extensions::sampling::SampleRequest;

use crate::shared::{Shared, lock, token_key};

/// The protocol version zot asks for: the newest it speaks.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The `rmcp` client handler: what zot answers to the server's requests
/// and does on its notifications.
pub(crate) struct Client {
    pub(super) shared: Arc<Shared>,
}

impl Client {
    /// Asks the user through the front end; `None` when nobody can answer
    /// (print, JSON and RPC modes dismiss questions).
    async fn ask(&self, prompt: String, options: Vec<String>) -> Option<String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let reply = QuestionReply::new(move |answer| {
            let _ = tx.send(answer);
        });
        let asked = self.shared.effect(Effect::Question {
            prompt,
            options,
            reply,
        });
        if !asked {
            return None;
        }
        rx.await.ok().flatten()
    }

    async fn elicit(&self, request: ElicitRequestParams) -> ElicitResult {
        let decline = ElicitResult::new(ElicitationAction::Decline);
        let value = serde_json::to_value(&request).unwrap_or_default();
        let message = value
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let ext = &self.shared.ext;
        if let Some(url) = value.get("url").and_then(Value::as_str) {
            let prompt = format!("{ext} asks you to open {url}\n{message}");
            let options = vec!["Open".to_owned(), "Decline".to_owned(), "Cancel".to_owned()];
            return match self.ask(prompt, options).await.as_deref() {
                Some("Open") => {
                    open_url(url, &self.shared);
                    ElicitResult::new(ElicitationAction::Accept)
                }
                Some("Cancel") => ElicitResult::new(ElicitationAction::Cancel),
                _ => decline,
            };
        }
        let schema = value.get("requestedSchema").cloned().unwrap_or_default();
        let fields = match form_fields(&schema) {
            Ok(fields) => fields,
            Err(why) => {
                self.shared.log(format_args!("elicitation declined: {why}"));
                return decline;
            }
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let reply = FormReply::new(move |answer| {
            let _ = tx.send(answer);
        });
        let form = Form {
            message: message.clone(),
            fields,
            schema,
        };
        if !self.shared.effect(Effect::Form { form, reply }) {
            return decline;
        }
        match rx.await.ok().flatten() {
            Some(FormAnswer::Accept(content)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            Some(FormAnswer::Cancel) => ElicitResult::new(ElicitationAction::Cancel),
            // Declined, or nobody to ask (print, JSON and RPC modes).
            Some(FormAnswer::Decline) | None => {
                self.shared
                    .log(format_args!("elicitation declined: {message}"));
                decline
            }
        }
    }
}

/// An elicitation's `requestedSchema` as form fields: a flat object of
/// strings (enums as choices), numbers, integers, booleans and lists of
/// enum values, as the MCP spec allows. A field of any other type makes
/// the form unreadable.
fn form_fields(schema: &Value) -> Result<Vec<FormField>, String> {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("the schema has no properties")?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // Required fields first; otherwise the schema's order (which `rmcp`
    // keeps sorted by name).
    let mut ordered: Vec<(&String, &Value)> = properties.iter().collect();
    ordered.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    ordered
        .into_iter()
        .map(|(name, def)| {
            let kind = match def.get("type").and_then(Value::as_str).unwrap_or("string") {
                "string" => match choices(def) {
                    Some((values, labels)) => FieldKind::Choice { values, labels },
                    None => FieldKind::Text,
                },
                "array" => {
                    let items = def.get("items").unwrap_or(&Value::Null);
                    match choices(items) {
                        Some((values, labels)) => FieldKind::MultiChoice { values, labels },
                        None => return Err(format!("field {name} is a list of free values")),
                    }
                }
                "number" => FieldKind::Number,
                "integer" => FieldKind::Integer,
                "boolean" => FieldKind::Boolean,
                other => return Err(format!("field {name} has type {other:?}")),
            };
            Ok(FormField {
                name: name.clone(),
                title: def
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_owned(),
                description: def
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                kind,
                required: required.contains(&name.as_str()),
                default: def.get("default").filter(|d| !d.is_null()).cloned(),
            })
        })
        .collect()
}

/// An enum's values and their labels: `enum` (with the older
/// `enumNames`), or `oneOf`/`anyOf` of `{const, title}`.
fn choices(def: &Value) -> Option<(Vec<String>, Vec<String>)> {
    if let Some(values) = def.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let names: Vec<String> = def
            .get("enumNames")
            .and_then(Value::as_array)
            .map(|n| {
                n.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let labels = if names.len() == values.len() {
            names
        } else {
            values.clone()
        };
        return Some((values, labels));
    }
    let options = def
        .get("oneOf")
        .or_else(|| def.get("anyOf"))
        .and_then(Value::as_array)?;
    let pairs: Vec<(String, String)> = options
        .iter()
        .filter_map(|o| {
            let value = o.get("const")?.as_str()?.to_owned();
            let label = o
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or(&value)
                .to_owned();
            Some((value, label))
        })
        .collect();
    Some(pairs.into_iter().unzip())
}

/// How much of a sampling request's last message the user sees when asked.
/// A dialog's worth of text: enough to judge it, not a wall.
const SAMPLING_PREVIEW_CHARS: usize = 400;

/// A `sampling/createMessage` request in neutral terms: the text of each
/// message (other content described), the system prompt, the token cap.
fn sample_request(params: &Value) -> SampleRequest {
    let text_of = |block: &Value| match block.get("type").and_then(Value::as_str) {
        Some("text") => block
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        Some(other) => format!("[{other} content not passed on]"),
        None => String::new(),
    };
    let messages = params
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    let user = m.get("role").and_then(Value::as_str) != Some("assistant");
                    let text = match m.get("content") {
                        Some(Value::Array(blocks)) => {
                            blocks.iter().map(text_of).collect::<Vec<_>>().join("\n")
                        }
                        Some(block) => text_of(block),
                        None => String::new(),
                    };
                    (user, text)
                })
                .collect()
        })
        .unwrap_or_default();
    SampleRequest {
        system: params
            .get("systemPrompt")
            .and_then(Value::as_str)
            .map(str::to_owned),
        messages,
        max_tokens: params
            .get("maxTokens")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(u32::MAX),
    }
}

/// Opens `url` with `$BROWSER` when set; otherwise (or when it cannot run)
/// shows it to the user.
fn open_url(url: &str, shared: &Shared) {
    let message = match crate::oauth::open_with_browser(url) {
        Ok(Some(browser)) => {
            shared.log(format_args!("opened {url} with {browser}"));
            return;
        }
        Ok(None) => format!("{} asks you to open {url}", shared.ext),
        Err(e) => format!("{} asks you to open {url} ({e})", shared.ext),
    };
    shared.effect(Effect::Notify {
        level: zot_protocol::zot::NotifyLevel::Info,
        message,
    });
}

/// `file://` URI of a directory, percent-encoding what a URI path may not hold.
fn file_uri(path: &std::path::Path) -> String {
    let mut out = String::from("file://");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(*byte));
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

impl rmcp::ClientHandler for Client {
    fn get_info(&self) -> InitializeRequestParams {
        let mut declared = json!({
            "roots": {"listChanged": false},
            "elicitation": {"form": {}, "url": {}},
        });
        // Declared only to servers allowed to ask (each ask still needs the user).
        if self.shared.server.sampling {
            declared["sampling"] = json!({});
        }
        let capabilities: ClientCapabilities = serde_json::from_value(declared).unwrap_or_default();
        InitializeRequestParams::new(
            capabilities,
            Implementation::new("zot", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(PROTOCOL_VERSION)
    }

    fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> impl Future<Output = Result<ListRootsResult, ErrorData>> + Send + '_ {
        let cwd = self.shared.cx.cwd();
        let mut root = Root::new(file_uri(&cwd));
        root.name = cwd.file_name().map(|n| n.to_string_lossy().into_owned());
        std::future::ready(Ok(ListRootsResult::new(vec![root])))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.elicit(request).await)
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let refuse = |why: String| {
            self.shared
                .log(format_args!("sampling/createMessage refused: {why}"));
            ErrorData::invalid_request(why, None)
        };
        if !self.shared.server.sampling {
            return Err(refuse(format!(
                "{} may not ask for sampling (its config has no \"sampling\": true)",
                self.shared.ext
            )));
        }
        let Some(sampler) = self.shared.cx.sampler() else {
            return Err(refuse(
                "sampling needs a user to agree, and nobody can be asked here".to_owned(),
            ));
        };
        let request = sample_request(&serde_json::to_value(&params).unwrap_or_default());
        let model = self.shared.cx.facts().model.clone();
        let last = request
            .messages
            .last()
            .map(|(_, text)| text.as_str())
            .unwrap_or_default();
        let preview: String = last.chars().take(SAMPLING_PREVIEW_CHARS).collect();
        let prompt = format!(
            "{} asks to send {} message(s) to {model} (up to {} tokens). The last one:\n{preview}",
            self.shared.ext,
            request.messages.len(),
            request.max_tokens
        );
        let options = vec!["Send".to_owned(), "Refuse".to_owned()];
        if self.ask(prompt, options).await.as_deref() != Some("Send") {
            return Err(refuse("the user refused".to_owned()));
        }
        let result = sampler
            .sample(&model, request)
            .await
            .map_err(|e| refuse(format!("the model call failed: {e}")))?;
        self.shared.log(format_args!(
            "sampling/createMessage answered by {}",
            result.model
        ));
        let stop = if result.truncated {
            rmcp::model::CreateMessageResult::STOP_REASON_END_MAX_TOKEN
        } else {
            rmcp::model::CreateMessageResult::STOP_REASON_END_TURN
        };
        Ok(rmcp::model::CreateMessageResult::new(
            rmcp::model::SamplingMessage::assistant_text(result.text),
            result.model,
        )
        .with_stop_reason(stop))
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let sink = lock(&self.shared.progress)
            .get(&token_key(&params.progress_token))
            .cloned();
        if let Some(sink) = sink {
            let figures = match params.total {
                Some(total) => format!("{}/{total}", params.progress),
                None => format!("{}", params.progress),
            };
            let text = match &params.message {
                Some(message) => format!("{message} ({figures})\n"),
                None => format!("progress {figures}\n"),
            };
            sink(&text);
        }
        std::future::ready(())
    }

    fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let level = serde_json::to_value(params.level).unwrap_or_default();
        let data = match &params.data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.shared.log(format_args!(
            "[{}{}] {data}",
            level.as_str().unwrap_or("log"),
            params
                .logger
                .as_deref()
                .map(|l| format!(" {l}"))
                .unwrap_or_default()
        ));
        std::future::ready(())
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.shared.changed();
        std::future::ready(())
    }

    fn on_prompt_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.shared.changed();
        std::future::ready(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_file_uris() {
        assert_eq!(
            file_uri(std::path::Path::new("/a b/ü")),
            "file:///a%20b/%C3%BC"
        );
    }
}
