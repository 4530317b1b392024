//! The Anthropic Messages API side of the mock: scripted SSE streams in the
//! real wire format (`event:` + `data:` lines) and the request checks the real
//! API makes before it answers.

use serde_json::{Value, json};

use crate::{Recorded, Response, SseEvent, fragments};

/// How many deltas a text, thinking or tool argument string is streamed in
/// unless [`Script::pieces`] says otherwise.
const PIECES: usize = 3;

#[derive(Debug, Clone)]
enum Item {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    ToolUse {
        id: String,
        name: String,
        args_json: String,
    },
}

/// A streamed message, built up block by block.
///
/// ```
/// # use zot_testkit::anthropic::Script;
/// let response = Script::new().thinking("hmm", "sig").text("hi").usage(12, 3).build();
/// ```
#[derive(Debug, Clone)]
pub struct Script {
    items: Vec<Item>,
    input_tokens: u64,
    output_tokens: u64,
    cache_read: u64,
    cache_write: u64,
    stop_reason: Option<String>,
    pieces: usize,
}

impl Default for Script {
    fn default() -> Self {
        Self::new()
    }
}

impl Script {
    /// No blocks yet; usage 10 in, 5 out.
    pub fn new() -> Self {
        Self {
            items: Vec::new(),
            input_tokens: 10,
            output_tokens: 5,
            cache_read: 0,
            cache_write: 0,
            stop_reason: None,
            pieces: PIECES,
        }
    }

    /// Streams each text, thinking and argument string in up to `n` deltas
    /// (at least one); `1` sends each whole, in a single event.
    pub fn pieces(mut self, n: usize) -> Self {
        self.pieces = n.max(1);
        self
    }

    /// A text block, streamed in several `text_delta`s.
    pub fn text(mut self, text: &str) -> Self {
        self.items.push(Item::Text(text.to_owned()));
        self
    }

    /// A thinking block: `thinking_delta`s, then one `signature_delta`.
    pub fn thinking(mut self, thinking: &str, signature: &str) -> Self {
        self.items.push(Item::Thinking {
            thinking: thinking.to_owned(),
            signature: signature.to_owned(),
        });
        self
    }

    /// A `tool_use` block whose input streams as several `input_json_delta`s.
    pub fn tool_call(mut self, id: &str, name: &str, args_json: &str) -> Self {
        self.items.push(Item::ToolUse {
            id: id.to_owned(),
            name: name.to_owned(),
            args_json: args_json.to_owned(),
        });
        self
    }

    /// `input_tokens` (in `message_start`) and `output_tokens` (in `message_delta`).
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        self.input_tokens = input;
        self.output_tokens = output;
        self
    }

    /// `cache_read_input_tokens` and `cache_creation_input_tokens`.
    pub fn cache(mut self, read: u64, write: u64) -> Self {
        self.cache_read = read;
        self.cache_write = write;
        self
    }

    /// The `stop_reason`; by default `tool_use` when there is a tool call,
    /// else `end_turn`.
    pub fn stop_reason(mut self, reason: &str) -> Self {
        self.stop_reason = Some(reason.to_owned());
        self
    }

    /// The whole stream, through `message_stop`.
    pub fn build(self) -> Response {
        Response::stream(self.events(true))
    }

    /// The stream without `message_delta` and `message_stop`: a response cut
    /// short, or with [`Response::stall`] one still in progress.
    pub fn build_partial(self) -> Response {
        Response::stream(self.events(false))
    }

    fn events(&self, complete: bool) -> Vec<SseEvent> {
        let mut events = vec![
            event(json!({
                "type": "message_start",
                "message": {
                    "id": "msg_mock",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-mock",
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {
                        "input_tokens": self.input_tokens,
                        "cache_creation_input_tokens": self.cache_write,
                        "cache_read_input_tokens": self.cache_read,
                        "output_tokens": 1,
                    },
                },
            })),
            event(json!({"type": "ping"})),
        ];
        for (index, item) in self.items.iter().enumerate() {
            let delta = |delta: Value| {
                event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
            };
            match item {
                Item::Text(text) => {
                    events.push(block_start(index, json!({"type": "text", "text": ""})));
                    for piece in fragments(text, self.pieces) {
                        events.push(delta(json!({"type": "text_delta", "text": piece})));
                    }
                }
                Item::Thinking {
                    thinking,
                    signature,
                } => {
                    events.push(block_start(
                        index,
                        json!({"type": "thinking", "thinking": "", "signature": ""}),
                    ));
                    for piece in fragments(thinking, self.pieces) {
                        events.push(delta(json!({"type": "thinking_delta", "thinking": piece})));
                    }
                    events.push(delta(
                        json!({"type": "signature_delta", "signature": signature}),
                    ));
                }
                Item::ToolUse {
                    id,
                    name,
                    args_json,
                } => {
                    events.push(block_start(
                        index,
                        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    ));
                    // The real API opens with an empty fragment.
                    events.push(delta(
                        json!({"type": "input_json_delta", "partial_json": ""}),
                    ));
                    for piece in fragments(args_json, self.pieces) {
                        events.push(delta(
                            json!({"type": "input_json_delta", "partial_json": piece}),
                        ));
                    }
                }
            }
            events.push(event(json!({"type": "content_block_stop", "index": index})));
        }
        if complete {
            let has_tool = self
                .items
                .iter()
                .any(|item| matches!(item, Item::ToolUse { .. }));
            let default_stop = if has_tool { "tool_use" } else { "end_turn" };
            let stop = self.stop_reason.as_deref().unwrap_or(default_stop);
            events.push(event(json!({
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": self.output_tokens},
            })));
            events.push(event(json!({"type": "message_stop"})));
        }
        events
    }
}

fn block_start(index: usize, block: Value) -> SseEvent {
    event(json!({"type": "content_block_start", "index": index, "content_block": block}))
}

/// One SSE event: the `event:` name is the data's `type`, as the API sends it.
fn event(data: Value) -> SseEvent {
    let kind = data["type"].as_str().unwrap_or("message").to_owned();
    SseEvent {
        text: format!("event: {kind}\ndata: {data}\n\n"),
        needs_include_usage: false,
    }
}

/// Every `cache_control` mark of a request body, as `"<path> <mark>"`
/// (path like `/messages/2/content/0`), sorted.
pub fn cache_marks(body: &Value) -> Vec<String> {
    fn walk(value: &Value, at: &str, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    if key == "cache_control" {
                        out.push(format!("{at} {inner}"));
                    } else {
                        walk(inner, &format!("{at}/{key}"), out);
                    }
                }
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    walk(inner, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, "", &mut out);
    out.sort();
    out
}

/// A complete answer of one text block.
pub fn text(text: &str) -> Response {
    Script::new().text(text).build()
}

/// A complete answer of one tool call, `stop_reason: tool_use`.
pub fn tool_call(id: &str, name: &str, args_json: &str) -> Response {
    Script::new().tool_call(id, name, args_json).build()
}

/// A stream that starts, then fails with an `error` event
/// (`overloaded_error`) carrying `message`, as the API does mid-stream.
pub fn error_event(message: &str) -> Response {
    let mut events = Script::new().build_partial().into_events();
    events.push(event(json!({
        "type": "error",
        "error": {"type": "overloaded_error", "message": message},
    })));
    Response::stream(events)
}

/// The API's JSON error body for `status`.
pub fn error_body(status: u16, message: &str) -> String {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

type Verdict = Result<(), (u16, String)>;

fn invalid(message: impl Into<String>) -> Verdict {
    Err((400, message.into()))
}

/// The checks the real API makes, with its wording where it is known.
pub(crate) fn validate(request: &Recorded) -> Verdict {
    if request.header("x-api-key").is_none_or(str::is_empty) {
        return Err((401, "x-api-key header is required".into()));
    }
    if request.header("anthropic-version").is_none() {
        return invalid("anthropic-version: header is required");
    }
    let Some(body) = request.body.as_object() else {
        return invalid("The request body is not valid JSON or not an object.");
    };
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return invalid("model: Field required");
    }
    let Some(max_tokens) = body.get("max_tokens").and_then(Value::as_u64) else {
        return invalid("max_tokens: Field required");
    };
    if max_tokens == 0 {
        return invalid("max_tokens: Input should be greater than or equal to 1");
    }
    if body.get("stream") != Some(&Value::Bool(true)) {
        return invalid("the mock serves only streaming requests: set \"stream\": true");
    }
    if let Some(system) = body.get("system") {
        let text_blocks = system.as_array().is_some_and(|blocks| {
            blocks
                .iter()
                .all(|b| b["type"] == "text" && b["text"].is_string())
        });
        if !system.is_string() && !text_blocks {
            return invalid("system: Input should be a valid string or a list of text blocks");
        }
    }
    if let Some(thinking) = body.get("thinking") {
        match thinking["type"].as_str() {
            Some("enabled") => {
                let Some(budget) = thinking["budget_tokens"].as_u64() else {
                    return invalid("thinking.enabled.budget_tokens: Field required");
                };
                if budget < 1024 {
                    return invalid(
                        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
                    );
                }
                if budget >= max_tokens {
                    return invalid("`max_tokens` must be greater than `thinking.budget_tokens`");
                }
            }
            Some("adaptive") => {
                if thinking.get("budget_tokens").is_some() {
                    return invalid(
                        "thinking.adaptive.budget_tokens: Extra inputs are not permitted",
                    );
                }
            }
            Some("disabled") => {}
            _ => {
                return invalid(
                    "thinking: Input tag does not match 'enabled', 'adaptive' or 'disabled'",
                );
            }
        }
        let model = body["model"].as_str().unwrap_or_default();
        if thinking["type"] == "enabled" && adaptive_only(model) {
            return invalid(format!(
                "thinking.type.enabled is not supported for {model}; use thinking.type.adaptive \
                 and output_config.effort"
            ));
        }
    }
    let model = body["model"].as_str().unwrap_or_default();
    if adaptive_only(model)
        && let Some(param) = ["temperature", "top_p", "top_k"]
            .into_iter()
            .find(|p| body.contains_key(*p))
    {
        return invalid(format!("{param}: is not supported for {model}"));
    }
    if let Some(effort) = body.get("output_config").and_then(|c| c.get("effort")) {
        let known = ["low", "medium", "high", "xhigh", "max"];
        if !effort.as_str().is_some_and(|e| known.contains(&e)) {
            return invalid(
                "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'",
            );
        }
    }
    if let Some(tools) = body.get("tools") {
        let Some(tools) = tools.as_array() else {
            return invalid("tools: Input should be a valid list");
        };
        for (i, tool) in tools.iter().enumerate() {
            if !tool["name"].as_str().is_some_and(valid_tool_name) {
                return invalid(format!(
                    "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
                ));
            }
            if tool["input_schema"]["type"] != "object" {
                return invalid(format!(
                    "tools.{i}.custom.input_schema.type: Field required"
                ));
            }
        }
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return invalid("messages: Field required");
    };
    if messages.is_empty() {
        return invalid("messages: at least one message is required");
    }
    let mut previous_tool_uses: Vec<String> = Vec::new();
    let mut previous_role = "";
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if role != "user" && role != "assistant" {
            return invalid(format!(
                "messages.{i}.role: Input should be 'user' or 'assistant'"
            ));
        }
        if role == previous_role {
            return invalid(format!(
                "messages: roles must alternate between \"user\" and \"assistant\", but found \
                 multiple \"{role}\" roles in a row"
            ));
        }
        let blocks = blocks_of(i, &message["content"])?;
        let mut tool_uses = Vec::new();
        let mut tool_results = Vec::new();
        for (j, block) in blocks.iter().enumerate() {
            check_block(i, j, role, block)?;
            match block["type"].as_str() {
                Some("tool_use") => {
                    tool_uses.push(block["id"].as_str().unwrap_or_default().to_owned())
                }
                Some("tool_result") => {
                    tool_results.push(block["tool_use_id"].as_str().unwrap_or_default().to_owned());
                }
                _ => {}
            }
        }
        if let Some(unknown) = tool_results
            .iter()
            .find(|id| !previous_tool_uses.contains(id))
        {
            return invalid(format!(
                "messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: \
                 {unknown}. Each `tool_result` block must have a corresponding `tool_use` block \
                 in the previous message."
            ));
        }
        let missing: Vec<&str> = previous_tool_uses
            .iter()
            .filter(|id| !tool_results.contains(id))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return invalid(missing_results(i - 1, &missing));
        }
        previous_tool_uses = tool_uses;
        previous_role = role;
    }
    if !previous_tool_uses.is_empty() {
        let ids: Vec<&str> = previous_tool_uses.iter().map(String::as_str).collect();
        return invalid(missing_results(messages.len() - 1, &ids));
    }
    Ok(())
}

/// Claude models from generation 5 on take adaptive thinking only
/// (`claude-<family>-<major>[-<minor>]`).
fn adaptive_only(model: &str) -> bool {
    model
        .strip_prefix("claude-")
        .and_then(|rest| rest.split('-').nth(1))
        .and_then(|major| major.parse::<u32>().ok())
        .is_some_and(|major| (5..1000).contains(&major))
}

fn missing_results(assistant_index: usize, ids: &[&str]) -> String {
    format!(
        "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: \
         {}. Each `tool_use` block must have a corresponding `tool_result` block in the next \
         message.",
        assistant_index + 1,
        ids.join(", ")
    )
}

fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A message's content as blocks (a string is one text block).
fn blocks_of(i: usize, content: &Value) -> Result<Vec<Value>, (u16, String)> {
    match content {
        Value::String(text) if text.is_empty() => Err((
            400,
            format!("messages.{i}: all messages must have non-empty content"),
        )),
        Value::String(text) => Ok(vec![json!({"type": "text", "text": text})]),
        Value::Array(blocks) if blocks.is_empty() => Err((
            400,
            format!("messages.{i}: all messages must have non-empty content"),
        )),
        Value::Array(blocks) => Ok(blocks.clone()),
        _ => Err((
            400,
            format!("messages.{i}.content: Input should be a valid string or list"),
        )),
    }
}

fn check_block(i: usize, j: usize, role: &str, block: &Value) -> Verdict {
    let at = format!("messages.{i}.content.{j}");
    let kind = block["type"].as_str().unwrap_or_default();
    let allowed = match kind {
        "text" => true,
        "image" | "tool_result" | "document" => role == "user",
        "tool_use" | "thinking" | "redacted_thinking" => role == "assistant",
        _ => {
            return invalid(format!(
                "{at}: Input tag '{kind}' found using 'type' does not match any of the expected tags"
            ));
        }
    };
    if !allowed {
        return invalid(format!(
            "{at}: `{kind}` blocks are not allowed in `{role}` messages"
        ));
    }
    match kind {
        "text" if block["text"].as_str().is_none_or(str::is_empty) => {
            return invalid(format!("{at}.text: text content blocks must be non-empty"));
        }
        "image" => check_image(&at, block)?,
        "tool_use" => {
            if !block["id"].is_string() || !block["name"].is_string() {
                return invalid(format!("{at}: tool_use blocks need `id` and `name`"));
            }
            if !block["input"].is_object() {
                return invalid(format!("{at}.input: Input should be a valid dictionary"));
            }
        }
        "thinking" => {
            if !block["thinking"].is_string() {
                return invalid(format!("{at}.thinking: Field required"));
            }
            if block["signature"].as_str().is_none_or(str::is_empty) {
                return invalid(format!("{at}.signature: Field required"));
            }
        }
        "tool_result" => {
            if !block["tool_use_id"].is_string() {
                return invalid(format!("{at}.tool_use_id: Field required"));
            }
            if !matches!(block.get("is_error"), None | Some(Value::Bool(_))) {
                return invalid(format!("{at}.is_error: Input should be a valid boolean"));
            }
            match block.get("content") {
                None | Some(Value::String(_)) => {}
                Some(Value::Array(inner)) => {
                    for (k, part) in inner.iter().enumerate() {
                        let at = format!("{at}.content.{k}");
                        match part["type"].as_str() {
                            Some("text")
                                if part["text"].as_str().is_some_and(|t| !t.is_empty()) => {}
                            Some("text") => {
                                return invalid(format!(
                                    "{at}.text: text content blocks must be non-empty"
                                ));
                            }
                            Some("image") => check_image(&at, part)?,
                            _ => {
                                return invalid(format!(
                                    "{at}: tool_result content must be text or image blocks"
                                ));
                            }
                        }
                    }
                }
                Some(_) => {
                    return invalid(format!(
                        "{at}.content: Input should be a valid string or list"
                    ));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_image(at: &str, block: &Value) -> Verdict {
    let source = &block["source"];
    match source["type"].as_str() {
        Some("base64") => {
            let media_type = source["media_type"].as_str().unwrap_or_default();
            if !["image/jpeg", "image/png", "image/gif", "image/webp"].contains(&media_type) {
                return invalid(format!(
                    "{at}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', \
                     'image/gif' or 'image/webp'"
                ));
            }
            if !source["data"].is_string() {
                return invalid(format!("{at}.source.base64.data: Field required"));
            }
            Ok(())
        }
        Some("url") if source["url"].is_string() => Ok(()),
        _ => invalid(format!(
            "{at}.source: Input tag does not match 'base64' or 'url'"
        )),
    }
}

impl Response {
    fn into_events(self) -> Vec<SseEvent> {
        match self.kind {
            crate::Kind::Stream { events, .. } => events,
            crate::Kind::Status { .. } => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: Value) -> Recorded {
        Recorded {
            method: "POST".into(),
            path: "/v1/messages".into(),
            headers: vec![
                ("x-api-key".into(), "k".into()),
                ("anthropic-version".into(), "2023-06-01".into()),
            ],
            raw_body: body.to_string(),
            body,
        }
    }

    fn with_messages(messages: Value) -> Recorded {
        request(json!({"model": "m", "max_tokens": 100, "stream": true, "messages": messages}))
    }

    fn rejected(recorded: &Recorded) -> String {
        match validate(recorded) {
            Err((_, message)) => message,
            Ok(()) => panic!("accepted: {}", recorded.raw_body),
        }
    }

    fn tool_use(id: &str) -> Value {
        json!({"type": "tool_use", "id": id, "name": "ls", "input": {}})
    }

    fn tool_result(id: &str) -> Value {
        json!({"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "ok"}]})
    }

    #[test]
    fn a_tool_round_trip_is_valid() {
        let recorded = with_messages(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "let me look"}, tool_use("a"), tool_use("b")]},
            {"role": "user", "content": [tool_result("b"), tool_result("a"), {"type": "text", "text": "more"}]},
            {"role": "assistant", "content": "done"},
        ]));
        assert_eq!(validate(&recorded), Ok(()));
    }

    #[test]
    fn headers_and_fields_are_required() {
        let mut recorded = with_messages(json!([{"role": "user", "content": "hi"}]));
        recorded
            .headers
            .retain(|(name, _)| name != "anthropic-version");
        assert!(rejected(&recorded).contains("anthropic-version"));

        let recorded = request(
            json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
        );
        assert!(rejected(&recorded).contains("max_tokens"));

        let mut recorded = with_messages(json!([{"role": "user", "content": "hi"}]));
        recorded.headers.retain(|(name, _)| name != "x-api-key");
        assert_eq!(validate(&recorded).map_err(|(code, _)| code), Err(401));
    }

    #[test]
    fn roles_must_alternate() {
        let recorded = with_messages(json!([
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
        ]));
        assert!(rejected(&recorded).contains("roles must alternate"));
    }

    #[test]
    fn every_tool_use_needs_a_result_in_the_next_message() {
        let unanswered = with_messages(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
            {"role": "user", "content": [tool_result("a")]},
        ]));
        let message = rejected(&unanswered);
        assert!(
            message.contains("without `tool_result`") && message.contains('b'),
            "{message}"
        );

        let last = with_messages(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [tool_use("a")]},
        ]));
        assert!(rejected(&last).contains("without `tool_result`"));
    }

    #[test]
    fn results_for_unknown_ids_are_rejected() {
        let recorded = with_messages(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [tool_use("a")]},
            {"role": "user", "content": [tool_result("a"), tool_result("zzz")]},
        ]));
        assert!(rejected(&recorded).contains("unexpected `tool_use_id`"));
    }

    #[test]
    fn blocks_are_checked() {
        let empty_text =
            with_messages(json!([{"role": "user", "content": [{"type": "text", "text": ""}]}]));
        assert!(rejected(&empty_text).contains("non-empty"));
        let unsigned = with_messages(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]},
        ]));
        assert!(rejected(&unsigned).contains("signature"));
        let bad_image = with_messages(json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA"}}
        ]}]));
        assert!(rejected(&bad_image).contains("media_type"));
    }

    #[test]
    fn thinking_budget_must_fit_max_tokens() {
        let recorded = request(json!({
            "model": "m", "max_tokens": 2048, "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": [{"role": "user", "content": "hi"}],
        }));
        assert!(rejected(&recorded).contains("budget_tokens"));
    }

    #[test]
    fn scripts_write_the_wire_format() {
        let events = Script::new()
            .tool_call("t1", "ls", r#"{"path":"src"}"#)
            .build()
            .into_events();
        let wire: String = events.iter().map(|e| e.text.as_str()).collect();
        assert!(wire.starts_with("event: message_start\ndata: {"), "{wire}");
        assert!(wire.contains("event: ping\n"), "{wire}");
        assert_eq!(wire.matches("input_json_delta").count(), 4, "{wire}");
        assert!(wire.contains(r#""stop_reason":"tool_use""#), "{wire}");
        assert!(
            wire.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
            "{wire}"
        );
    }
}
