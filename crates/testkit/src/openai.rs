//! The OpenAI chat completions side of the mock: scripted `data:` chunk
//! streams ending in `[DONE]`, in the real wire format, and the request checks
//! the real API makes before it answers.

use serde_json::{Value, json};

use crate::{Recorded, Response, SseEvent, fragments};

/// How many chunks a text or tool argument string is streamed in.
const PIECES: usize = 3;

#[derive(Debug, Clone)]
enum Item {
    Text(String),
    Reasoning {
        field: String,
        text: String,
    },
    /// Several calls whose argument fragments interleave by `index`.
    ToolCalls(Vec<(String, String, String)>),
}

/// A streamed completion, built up piece by piece.
///
/// ```
/// # use zot_testkit::openai::Script;
/// let response = Script::new().reasoning("hmm").text("hi").usage(12, 3, 2).build();
/// ```
#[derive(Debug, Clone)]
pub struct Script {
    items: Vec<Item>,
    prompt_tokens: u64,
    completion_tokens: u64,
    cached_tokens: u64,
    reasoning_tokens: u64,
    finish_reason: Option<String>,
    pieces: usize,
}

impl Default for Script {
    fn default() -> Self {
        Self::new()
    }
}

impl Script {
    /// Nothing yet; usage 10 prompt tokens (none cached), 5 completion tokens.
    pub fn new() -> Self {
        Self {
            items: Vec::new(),
            prompt_tokens: 10,
            completion_tokens: 5,
            cached_tokens: 0,
            reasoning_tokens: 0,
            finish_reason: None,
            pieces: PIECES,
        }
    }

    /// Streams each text, reasoning and argument string in up to `n` chunks
    /// (at least one); `1` sends each whole, in a single event.
    pub fn pieces(mut self, n: usize) -> Self {
        self.pieces = n.max(1);
        self
    }

    /// `delta.content` in several chunks.
    pub fn text(mut self, text: &str) -> Self {
        self.items.push(Item::Text(text.to_owned()));
        self
    }

    /// `delta.reasoning_content` in several chunks (DeepSeek, vLLM).
    pub fn reasoning(self, text: &str) -> Self {
        self.reasoning_in("reasoning_content", text)
    }

    /// Reasoning in another delta field, e.g. `reasoning` (ollama, OpenRouter).
    pub fn reasoning_in(mut self, field: &str, text: &str) -> Self {
        self.items.push(Item::Reasoning {
            field: field.to_owned(),
            text: text.to_owned(),
        });
        self
    }

    /// One tool call: id, name and empty arguments first, then the arguments
    /// in several fragments.
    pub fn tool_call(self, id: &str, name: &str, args_json: &str) -> Self {
        self.tool_calls(&[(id, name, args_json)])
    }

    /// Parallel tool calls `(id, name, args_json)`: each opens with id and
    /// name, then their argument fragments interleave, told apart by `index`.
    pub fn tool_calls(mut self, calls: &[(&str, &str, &str)]) -> Self {
        let calls = calls
            .iter()
            .map(|(id, name, args)| ((*id).to_owned(), (*name).to_owned(), (*args).to_owned()))
            .collect();
        self.items.push(Item::ToolCalls(calls));
        self
    }

    /// The usage chunk: `prompt_tokens` (including `cached_tokens`) and
    /// `completion_tokens`. Sent only when the request asks for it.
    pub fn usage(mut self, prompt: u64, completion: u64, cached: u64) -> Self {
        self.prompt_tokens = prompt;
        self.completion_tokens = completion;
        self.cached_tokens = cached;
        self
    }

    /// The part of `completion_tokens` spent reasoning, reported as
    /// `completion_tokens_details.reasoning_tokens` (as OpenAI's o-series do).
    pub fn reasoning_tokens(mut self, n: u64) -> Self {
        self.reasoning_tokens = n;
        self
    }

    /// The `finish_reason`; by default `tool_calls` when there are tool
    /// calls, else `stop`.
    pub fn finish_reason(mut self, reason: &str) -> Self {
        self.finish_reason = Some(reason.to_owned());
        self
    }

    /// The whole stream: chunks, finish reason, usage, `[DONE]`.
    pub fn build(self) -> Response {
        Response::stream(self.events(true))
    }

    /// The chunks only, without finish reason, usage or `[DONE]`: a response
    /// cut short, or with [`Response::stall`] one still in progress.
    pub fn build_partial(self) -> Response {
        Response::stream(self.events(false))
    }

    fn events(&self, complete: bool) -> Vec<SseEvent> {
        let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
        let mut next_index = 0;
        for item in &self.items {
            match item {
                Item::Text(text) => {
                    for piece in fragments(text, self.pieces) {
                        events.push(chunk(json!({"content": piece}), None));
                    }
                }
                Item::Reasoning { field, text } => {
                    for piece in fragments(text, self.pieces) {
                        events.push(chunk(json!({ field.as_str(): piece }), None));
                    }
                }
                Item::ToolCalls(calls) => {
                    let first = next_index;
                    next_index += calls.len();
                    for (offset, (id, name, _)) in calls.iter().enumerate() {
                        events.push(chunk(
                            json!({"tool_calls": [{
                                "index": first + offset,
                                "id": id,
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }]}),
                            None,
                        ));
                    }
                    let pieces: Vec<Vec<String>> = calls
                        .iter()
                        .map(|(_, _, args)| fragments(args, self.pieces))
                        .collect();
                    for round in 0..self.pieces {
                        for (offset, call_pieces) in pieces.iter().enumerate() {
                            if let Some(piece) = call_pieces.get(round) {
                                events.push(chunk(
                                    json!({"tool_calls": [{
                                        "index": first + offset,
                                        "function": {"arguments": piece},
                                    }]}),
                                    None,
                                ));
                            }
                        }
                    }
                }
            }
        }
        if complete {
            let has_calls = next_index > 0;
            let default_reason = if has_calls { "tool_calls" } else { "stop" };
            let reason = self.finish_reason.as_deref().unwrap_or(default_reason);
            events.push(chunk(json!({}), Some(reason)));
            let mut usage = data(json!({
                "id": "chatcmpl-mock",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": "gpt-mock",
                "choices": [],
                "usage": {
                    "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens,
                    "total_tokens": self.prompt_tokens + self.completion_tokens,
                    "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
                    "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
                },
            }));
            usage.needs_include_usage = true;
            events.push(usage);
            events.push(SseEvent {
                text: "data: [DONE]\n\n".into(),
                needs_include_usage: false,
            });
        }
        events
    }
}

fn chunk(delta: Value, finish_reason: Option<&str>) -> SseEvent {
    data(json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-mock",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
    }))
}

fn data(value: Value) -> SseEvent {
    SseEvent {
        text: format!("data: {value}\n\n"),
        needs_include_usage: false,
    }
}

/// A complete answer of text.
pub fn text(text: &str) -> Response {
    Script::new().text(text).build()
}

/// A complete answer of one tool call, `finish_reason: tool_calls`.
pub fn tool_call(id: &str, name: &str, args_json: &str) -> Response {
    Script::new().tool_call(id, name, args_json).build()
}

/// A stream that starts, then sends an `error` chunk carrying `message` and
/// ends without `[DONE]`, as OpenAI-compatible servers do mid-stream.
pub fn error_event(message: &str) -> Response {
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    events.push(data(json!({
        "error": {"message": message, "type": "server_error", "param": null, "code": null},
    })));
    Response::stream(events)
}

/// The API's JSON error body.
pub fn error_body(message: &str) -> String {
    json!({
        "error": {"message": message, "type": "invalid_request_error", "param": null, "code": null},
    })
    .to_string()
}

type Verdict = Result<(), (u16, String)>;

fn invalid(message: impl Into<String>) -> Verdict {
    Err((400, message.into()))
}

/// The checks the real API makes, with its wording where it is known.
pub(crate) fn validate(request: &Recorded) -> Verdict {
    let Some(body) = request.body.as_object() else {
        return invalid("We could not parse the JSON body of your request.");
    };
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return invalid("you must provide a model parameter");
    }
    let streaming = body.get("stream") == Some(&Value::Bool(true));
    if body.contains_key("stream_options") && !streaming {
        return invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.");
    }
    if !streaming {
        return invalid("the mock serves only streaming requests: set \"stream\": true");
    }
    if body.contains_key("max_tokens") && body.contains_key("max_completion_tokens") {
        return invalid("max_tokens and max_completion_tokens cannot both be set");
    }
    if body.contains_key("reasoning_effort") && body.contains_key("max_tokens") {
        return invalid(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use \
             'max_completion_tokens' instead.",
        );
    }
    if let Some(effort) = body.get("reasoning_effort")
        && !matches!(effort.as_str(), Some("minimal" | "low" | "medium" | "high"))
    {
        return invalid(format!("Invalid value for 'reasoning_effort': {effort}"));
    }
    let tools = body.get("tools");
    if body.contains_key("tool_choice") && tools.is_none() {
        return invalid(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
        );
    }
    if let Some(tools) = tools {
        let Some(tools) = tools.as_array() else {
            return invalid("Invalid type for 'tools': expected an array");
        };
        for (i, tool) in tools.iter().enumerate() {
            if tool["type"] != "function" {
                return invalid(format!("Missing required parameter: 'tools[{i}].type'."));
            }
            if !tool["function"]["name"]
                .as_str()
                .is_some_and(valid_function_name)
            {
                return invalid(format!(
                    "Invalid 'tools[{i}].function.name': string does not match pattern. \
                     Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
                ));
            }
            if let Some(parameters) = tool["function"].get("parameters")
                && !parameters.is_object()
            {
                return invalid(format!("Invalid type for 'tools[{i}].function.parameters'"));
            }
        }
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return invalid("Missing required parameter: 'messages'.");
    };
    if messages.is_empty() {
        return invalid(
            "Invalid 'messages': empty array. Expected an array with minimum length 1.",
        );
    }
    // The ids of the last assistant message's tool calls not answered yet,
    // while only tool messages have followed it.
    let mut open_calls: Option<Vec<String>> = None;
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if role != "tool"
            && let Some(unanswered) = open_calls.take()
            && !unanswered.is_empty()
        {
            return invalid(unanswered_calls(&unanswered));
        }
        match role {
            "system" | "developer" | "user" => check_content(i, message, role == "user")?,
            "assistant" => {
                let calls = match message.get("tool_calls") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(calls)) => calls.clone(),
                    Some(_) => {
                        return invalid(format!("Invalid type for 'messages[{i}].tool_calls'"));
                    }
                };
                match message.get("content") {
                    None | Some(Value::Null) if calls.is_empty() => {
                        return invalid(format!(
                            "Invalid value for 'messages[{i}].content': expected content unless \
                             'tool_calls' is specified."
                        ));
                    }
                    None | Some(Value::Null | Value::String(_) | Value::Array(_)) => {}
                    Some(_) => {
                        return invalid(format!("Invalid type for 'messages[{i}].content'"));
                    }
                }
                let mut ids = Vec::new();
                for (j, call) in calls.iter().enumerate() {
                    let at = format!("messages[{i}].tool_calls[{j}]");
                    let Some(id) = call["id"].as_str() else {
                        return invalid(format!("Missing required parameter: '{at}.id'."));
                    };
                    if call["type"] != "function" {
                        return invalid(format!("Missing required parameter: '{at}.type'."));
                    }
                    if !call["function"]["name"].is_string() {
                        return invalid(format!(
                            "Missing required parameter: '{at}.function.name'."
                        ));
                    }
                    if !call["function"]["arguments"].is_string() {
                        return invalid(format!(
                            "Invalid type for '{at}.function.arguments': expected a string, but \
                             got {}.",
                            kind_of(&call["function"]["arguments"])
                        ));
                    }
                    ids.push(id.to_owned());
                }
                if !ids.is_empty() {
                    open_calls = Some(ids);
                }
            }
            "tool" => {
                let Some(id) = message["tool_call_id"].as_str() else {
                    return invalid(format!(
                        "Missing required parameter: 'messages[{i}].tool_call_id'."
                    ));
                };
                let Some(open) = open_calls.as_mut() else {
                    return invalid(
                        "Invalid parameter: messages with role 'tool' must be a response to a \
                         preceeding message with 'tool_calls'.",
                    );
                };
                let Some(position) = open.iter().position(|open_id| open_id == id) else {
                    return invalid(format!(
                        "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of \
                         previous message."
                    ));
                };
                open.remove(position);
                match &message["content"] {
                    Value::String(_) => {}
                    Value::Array(parts) if parts.iter().all(|p| p["type"] == "text") => {}
                    _ => {
                        return invalid(format!(
                            "Invalid 'messages[{i}].content': tool messages take a string or \
                             text parts."
                        ));
                    }
                }
            }
            _ => {
                return invalid(format!(
                    "Invalid value: '{role}'. Supported values are: 'system', 'assistant', \
                     'user', 'tool', and 'developer'."
                ));
            }
        }
    }
    if let Some(unanswered) = open_calls
        && !unanswered.is_empty()
    {
        return invalid(unanswered_calls(&unanswered));
    }
    Ok(())
}

fn unanswered_calls(ids: &[String]) -> String {
    format!(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to \
         each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
        ids.join(", ")
    )
}

fn valid_function_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// System and user content: a string, or parts (images only for users).
fn check_content(i: usize, message: &Value, images_allowed: bool) -> Verdict {
    match &message["content"] {
        Value::String(_) => Ok(()),
        Value::Array(parts) => {
            for (j, part) in parts.iter().enumerate() {
                let at = format!("messages[{i}].content[{j}]");
                match part["type"].as_str() {
                    Some("text") if part["text"].is_string() => {}
                    Some("image_url") if images_allowed => {
                        let url = part["image_url"]["url"].as_str().unwrap_or_default();
                        let data_url = url.starts_with("data:image/") && url.contains(";base64,");
                        if !data_url && !url.starts_with("http") {
                            return invalid(format!(
                                "Invalid '{at}.image_url.url': expected a URL or a base64 data URL."
                            ));
                        }
                    }
                    _ => return invalid(format!("Invalid value for '{at}.type'.")),
                }
            }
            Ok(())
        }
        _ => invalid(format!(
            "Missing required parameter: 'messages[{i}].content'."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_messages(messages: Value) -> Recorded {
        let body = json!({"model": "m", "stream": true, "messages": messages});
        Recorded {
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            headers: Vec::new(),
            raw_body: body.to_string(),
            body,
        }
    }

    fn rejected(recorded: &Recorded) -> String {
        match validate(recorded) {
            Err((_, message)) => message,
            Ok(()) => panic!("accepted: {}", recorded.raw_body),
        }
    }

    fn assistant_calling(ids: &[&str]) -> Value {
        let calls: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}))
            .collect();
        json!({"role": "assistant", "content": null, "tool_calls": calls})
    }

    fn tool(id: &str) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": "ok"})
    }

    #[test]
    fn a_tool_round_trip_is_valid() {
        let recorded = with_messages(json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            assistant_calling(&["a", "b"]),
            tool("b"),
            tool("a"),
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
            {"role": "assistant", "content": "done"},
        ]));
        assert_eq!(validate(&recorded), Ok(()));
    }

    #[test]
    fn tool_messages_must_answer_the_previous_calls() {
        let unknown = with_messages(
            json!([{"role": "user", "content": "hi"}, assistant_calling(&["a"]), tool("x")]),
        );
        assert!(rejected(&unknown).contains("'x' not found"));
        let orphan = with_messages(json!([{"role": "user", "content": "hi"}, tool("a")]));
        assert!(rejected(&orphan).contains("must be a response"));
        let late = with_messages(json!([
            {"role": "user", "content": "hi"},
            assistant_calling(&["a"]),
            tool("a"),
            {"role": "user", "content": "more"},
            tool("a"),
        ]));
        assert!(rejected(&late).contains("must be a response"));
    }

    #[test]
    fn every_call_needs_a_tool_message() {
        let between = with_messages(json!([
            {"role": "user", "content": "hi"},
            assistant_calling(&["a", "b"]),
            tool("a"),
            {"role": "user", "content": "wait"},
        ]));
        let message = rejected(&between);
        assert!(
            message.contains("did not have response messages: b"),
            "{message}"
        );
        let at_end =
            with_messages(json!([{"role": "user", "content": "hi"}, assistant_calling(&["a"])]));
        assert!(rejected(&at_end).contains("did not have response messages: a"));
    }

    #[test]
    fn arguments_must_be_a_string() {
        let recorded = with_messages(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "ls", "arguments": {}}}]},
            tool("a"),
        ]));
        assert!(rejected(&recorded).contains("expected a string"));
    }

    #[test]
    fn parameters_are_checked() {
        let mut recorded = with_messages(json!([{"role": "user", "content": "hi"}]));
        recorded.body["tool_choice"] = json!("auto");
        assert!(rejected(&recorded).contains("tool_choice"));
        let mut recorded = with_messages(json!([{"role": "user", "content": "hi"}]));
        recorded.body["stream"] = json!(false);
        recorded.body["stream_options"] = json!({"include_usage": true});
        assert!(rejected(&recorded).contains("stream_options"));
        let mut recorded = with_messages(json!([{"role": "user", "content": "hi"}]));
        recorded.body["reasoning_effort"] = json!("high");
        recorded.body["max_tokens"] = json!(100);
        assert!(rejected(&recorded).contains("max_completion_tokens"));
    }

    #[test]
    fn scripts_interleave_parallel_calls_by_index() {
        let events = Script::new()
            .tool_calls(&[
                ("a", "ls", r#"{"p":"one"}"#),
                ("b", "cat", r#"{"p":"two"}"#),
            ])
            .build()
            .into_stream_text();
        let args: Vec<(u64, String)> = events
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .filter_map(|chunk| {
                let call = chunk.pointer("/choices/0/delta/tool_calls/0")?.clone();
                Some((
                    call["index"].as_u64()?,
                    call["function"]["arguments"].as_str()?.to_owned(),
                ))
            })
            .collect();
        let indices: Vec<u64> = args.iter().map(|(i, _)| *i).collect();
        assert_eq!(indices, [0, 1, 0, 1, 0, 1, 0, 1]);
        let joined = |index| {
            args.iter()
                .filter(|(i, _)| *i == index)
                .map(|(_, a)| a.as_str())
                .collect::<String>()
        };
        assert_eq!(joined(0), r#"{"p":"one"}"#);
        assert_eq!(joined(1), r#"{"p":"two"}"#);
        assert!(events.ends_with("data: [DONE]\n\n"));
        assert!(events.contains(r#""finish_reason":"tool_calls""#));
    }

    impl Response {
        fn into_stream_text(self) -> String {
            match self.kind {
                crate::Kind::Stream { events, .. } => events.into_iter().map(|e| e.text).collect(),
                crate::Kind::Status { .. } => String::new(),
            }
        }
    }
}
