//! What MCP results become in zot: tool results and their content blocks,
//! prompt messages, resource text, and the shared resource tools' answers.

use rmcp::model::{ClientRequest, ReadResourceRequestParams, Request, ServerResult};
use rmcp::service::RoleClient;
use serde_json::Value;
use zot_protocol::zot::ContentBlock;

use crate::directory::Directory;
use zot_extensions::adapter::ToolAnswer;
use zot_extensions::context::HostContext;

pub(super) fn error_answer(text: String) -> ToolAnswer {
    ToolAnswer {
        content: vec![ContentBlock::Text { text }],
        is_error: true,
        activate: Vec::new(),
    }
}

/// A `tools/call` result as zot content: text; images as image blocks;
/// audio as a note; resource links and embedded resources as text;
/// `structuredContent` as JSON text when there is no text; `isError` kept.
pub(crate) fn map_tool_result(result: &Value) -> ToolAnswer {
    let mut content: Vec<ContentBlock> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().filter_map(map_block).collect())
        .unwrap_or_default();
    let has_text = content
        .iter()
        .any(|b| matches!(b, ContentBlock::Text { .. }));
    if !has_text && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        content.push(ContentBlock::Text {
            text: structured.to_string(),
        });
    }
    ToolAnswer {
        content,
        is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
        activate: Vec::new(),
    }
}

pub(super) fn map_block(block: &Value) -> Option<ContentBlock> {
    let str_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    let text = match str_of("type") {
        "text" => {
            let text = str_of("text");
            if text.is_empty() {
                return None;
            }
            text.to_owned()
        }
        "image" => {
            return Some(ContentBlock::Image {
                mime_type: str_of("mimeType").to_owned(),
                data: str_of("data").to_owned(),
            });
        }
        "audio" => format!(
            "[audio from the tool ({}, {} bytes of base64); zot does not pass audio to the model]",
            str_of("mimeType"),
            str_of("data").len()
        ),
        "resource_link" => {
            let mut text = format!("[resource link] {} <{}>", str_of("name"), str_of("uri"));
            if let Some(d) = block.get("description").and_then(Value::as_str) {
                text.push_str(&format!(": {d}"));
            }
            text
        }
        "resource" => resource_text(block.get("resource").unwrap_or(&Value::Null)),
        other => format!("[content of type {other:?} not shown]"),
    };
    Some(ContentBlock::Text { text })
}

/// Resource contents (embedded or read) as text.
pub(super) fn resource_text(resource: &Value) -> String {
    let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
    let mime = resource
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("unknown type");
    match (
        resource.get("text").and_then(Value::as_str),
        resource.get("blob").and_then(Value::as_str),
    ) {
        (Some(text), _) => format!("[resource {uri}]\n{text}"),
        (None, Some(blob)) => {
            format!(
                "[resource {uri}: {mime}, {} bytes of base64 not shown]",
                blob.len()
            )
        }
        (None, None) => format!("[resource {uri}: no contents]"),
    }
}

/// A `prompts/get` result as the text of one user prompt.
pub(super) fn prompt_text(result: &Value) -> String {
    let Some(messages) = result.get("messages").and_then(Value::as_array) else {
        return String::new();
    };
    let only_user = messages
        .iter()
        .all(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    let parts: Vec<String> = messages
        .iter()
        .filter_map(|m| {
            let block = m.get("content")?;
            let text = match map_block(block)? {
                ContentBlock::Text { text } => text,
                ContentBlock::Image { mime_type, .. } => format!("[image: {mime_type}]"),
                ContentBlock::Unsupported => return None,
            };
            let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
            Some(if only_user {
                text
            } else {
                format!("{role}: {text}")
            })
        })
        .collect();
    parts.join("\n\n")
}

/// Splits slash-command arguments on whitespace; double quotes group words.
pub(super) fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut started = false;
    for c in args.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out
}

pub(super) async fn list_resources(cx: &HostContext, args: &Value) -> ToolAnswer {
    let only = args.get("server").and_then(Value::as_str);
    let servers: Vec<(String, rmcp::Peer<RoleClient>)> = cx
        .slot::<Directory>()
        .lock()
        .iter()
        .filter(|(name, _)| only.is_none_or(|o| o == name.as_str()))
        .map(|(n, p)| (n.clone(), p.clone()))
        .collect();
    if servers.is_empty() {
        return error_answer(match only {
            Some(server) => format!("no connected MCP server {server:?} has resources"),
            None => "no connected MCP server has resources".to_owned(),
        });
    }
    let mut lines = Vec::new();
    for (server, peer) in servers {
        match peer.list_all_resources().await {
            Ok(resources) => {
                for resource in resources {
                    let v = serde_json::to_value(&resource).unwrap_or_default();
                    let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
                    let mut line = format!("{server}\t{}\t{}", field("uri"), field("name"));
                    if !field("mimeType").is_empty() {
                        line.push_str(&format!("\t{}", field("mimeType")));
                    }
                    if !field("description").is_empty() {
                        line.push_str(&format!("\t{}", field("description")));
                    }
                    lines.push(line);
                }
            }
            Err(e) => lines.push(format!("{server}\t(resources/list failed: {e})")),
        }
    }
    if lines.is_empty() {
        lines.push("(no resources)".to_owned());
    }
    ToolAnswer {
        content: vec![ContentBlock::Text {
            text: format!(
                "server\turi\tname\tmime type\tdescription\n{}",
                lines.join("\n")
            ),
        }],
        is_error: false,
        activate: Vec::new(),
    }
}

pub(super) async fn read_resource(cx: &HostContext, args: &Value) -> ToolAnswer {
    let (Some(server), Some(uri)) = (
        args.get("server").and_then(Value::as_str),
        args.get("uri").and_then(Value::as_str),
    ) else {
        return error_answer("mcp_read_resource needs `server` and `uri`".to_owned());
    };
    let Some(peer) = cx.slot::<Directory>().lock().get(server).cloned() else {
        return error_answer(format!("no connected MCP server {server:?} has resources"));
    };
    let request = ClientRequest::ReadResourceRequest(Request::new(ReadResourceRequestParams::new(
        uri.to_owned(),
    )));
    match peer.send_request(request).await {
        Ok(ServerResult::ReadResourceResult(result)) => {
            let value = serde_json::to_value(&result).unwrap_or_default();
            let content: Vec<ContentBlock> = value
                .get("contents")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|item| {
                            let mime = item.get("mimeType").and_then(Value::as_str);
                            match (mime, item.get("blob").and_then(Value::as_str)) {
                                (Some(mime), Some(blob)) if mime.starts_with("image/") => {
                                    ContentBlock::Image {
                                        mime_type: mime.to_owned(),
                                        data: blob.to_owned(),
                                    }
                                }
                                _ => ContentBlock::Text {
                                    text: resource_text(item),
                                },
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            ToolAnswer {
                content,
                is_error: false,
                activate: Vec::new(),
            }
        }
        Ok(_) => error_answer(format!(
            "{server} answered resources/read with something else"
        )),
        Err(rmcp::ServiceError::McpError(e)) => {
            error_answer(format!("{server}: reading {uri} failed: {}", e.message))
        }
        Err(e) => error_answer(format!("{server}: reading {uri} failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn results_map_every_content_type() {
        let result = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "mimeType": "image/png", "data": "iVBOR"},
                {"type": "audio", "mimeType": "audio/wav", "data": "UklGR"},
                {"type": "resource_link", "uri": "test://1", "name": "one", "description": "first"},
                {"type": "resource", "resource": {"uri": "test://2", "text": "body"}},
                {"type": "resource", "resource": {"uri": "test://3", "mimeType": "application/octet-stream", "blob": "AAAA"}},
            ],
            "isError": true,
        });
        let answer = map_tool_result(&result);
        assert!(answer.is_error);
        let texts: Vec<String> = answer
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => text.clone(),
                ContentBlock::Image { mime_type, .. } => format!("image {mime_type}"),
                ContentBlock::Unsupported => "?".into(),
            })
            .collect();
        assert_eq!(texts[0], "hello");
        assert_eq!(texts[1], "image image/png");
        assert!(texts[2].starts_with("[audio"));
        assert_eq!(texts[3], "[resource link] one <test://1>: first");
        assert_eq!(texts[4], "[resource test://2]\nbody");
        assert!(texts[5].contains("4 bytes of base64"));

        let structured = map_tool_result(&json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(
            structured.content,
            vec![ContentBlock::Text {
                text: r#"{"sum":3}"#.into()
            }]
        );
        assert!(!structured.is_error);
    }

    #[test]
    fn prompt_arguments_split_like_a_shell_line() {
        assert_eq!(split_args(r#"a "b c"  d"#), ["a", "b c", "d"]);
        assert_eq!(split_args(r#""""#), [""]);
        assert!(split_args("   ").is_empty());
    }
}
