//! The OpenAI Responses API side of the mock: scripted event streams in the
//! real wire format (`event: response.…` with the same `type` in the data,
//! sequence numbers, items added then done), and the request checks the
//! real API makes before it answers: unknown fields, unpaired `call_id`s,
//! reasoning items out of place or without their encrypted content when
//! nothing is stored.

use serde_json::{Value, json};

use crate::{Recorded, Response, SseEvent, fragments};

/// How many deltas a text, summary or argument string is streamed in.
const PIECES: usize = 3;

#[derive(Debug, Clone)]
enum Item {
    Reasoning {
        summary: Vec<String>,
        encrypted: Option<String>,
    },
    Text(String),
    Refusal(String),
    Call {
        call_id: String,
        name: String,
        args: String,
    },
}

/// How the scripted response ends.
#[derive(Debug, Clone)]
enum End {
    Completed,
    Incomplete(String),
}

/// A streamed response, built up item by item.
///
/// ```
/// # use zot_testkit::responses::Script;
/// let response = Script::new().reasoning("plan", "enc-1").tool_call("call_1", "ls", "{}").build();
/// ```
#[derive(Debug, Clone)]
pub struct Script {
    items: Vec<Item>,
    input_tokens: u64,
    output_tokens: u64,
    cached_tokens: u64,
    reasoning_tokens: u64,
    end: End,
}

impl Default for Script {
    fn default() -> Self {
        Self::new()
    }
}

impl Script {
    /// Nothing yet; usage 10 input tokens (none cached), 5 output tokens.
    pub fn new() -> Self {
        Self {
            items: Vec::new(),
            input_tokens: 10,
            output_tokens: 5,
            cached_tokens: 0,
            reasoning_tokens: 0,
            end: End::Completed,
        }
    }

    /// A reasoning item with one summary part and its encrypted content
    /// (sent only in the item's `done` copy, as the API does).
    pub fn reasoning(self, summary: &str, encrypted: &str) -> Self {
        self.reasoning_parts(&[summary], Some(encrypted))
    }

    /// A reasoning item with these summary parts; `None`: no encrypted
    /// content (the request did not `include` it).
    pub fn reasoning_parts(mut self, summary: &[&str], encrypted: Option<&str>) -> Self {
        self.items.push(Item::Reasoning {
            summary: summary.iter().map(|s| (*s).to_owned()).collect(),
            encrypted: encrypted.map(str::to_owned),
        });
        self
    }

    /// An assistant message of `output_text`.
    pub fn text(mut self, text: &str) -> Self {
        self.items.push(Item::Text(text.to_owned()));
        self
    }

    /// An assistant message of one `refusal` part.
    pub fn refusal(mut self, text: &str) -> Self {
        self.items.push(Item::Refusal(text.to_owned()));
        self
    }

    /// A `function_call` item whose arguments stream in deltas.
    pub fn tool_call(mut self, call_id: &str, name: &str, args_json: &str) -> Self {
        self.items.push(Item::Call {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            args: args_json.to_owned(),
        });
        self
    }

    /// `input_tokens` (including `cached`) and `output_tokens` (including
    /// `reasoning`).
    pub fn usage(mut self, input: u64, output: u64, cached: u64, reasoning: u64) -> Self {
        self.input_tokens = input;
        self.output_tokens = output;
        self.cached_tokens = cached;
        self.reasoning_tokens = reasoning;
        self
    }

    /// Ends with `response.incomplete` for `reason` (`max_output_tokens`,
    /// `content_filter`); the last item's `done` is never sent.
    pub fn incomplete(mut self, reason: &str) -> Self {
        self.end = End::Incomplete(reason.to_owned());
        self
    }

    /// The whole stream, terminal event included.
    pub fn build(self) -> Response {
        Response::stream(self.events(true))
    }

    /// The events without the terminal one: a stream cut short, or with
    /// [`Response::stall`] one still in progress.
    pub fn build_partial(self) -> Response {
        Response::stream(self.events(false))
    }

    fn events(&self, complete: bool) -> Vec<SseEvent> {
        let mut out = Events::default();
        out.push(
            json!({"type": "response.created", "response": response("in_progress", &[], None)}),
        );
        out.push(
            json!({"type": "response.in_progress", "response": response("in_progress", &[], None)}),
        );
        let mut done_items = Vec::new();
        let cut = matches!(self.end, End::Incomplete(_));
        for (index, item) in self.items.iter().enumerate() {
            let last = index + 1 == self.items.len();
            let finished = item_events(&mut out, index, item, !(cut && last));
            done_items.extend(finished);
        }
        if complete {
            let usage = json!({
                "input_tokens": self.input_tokens,
                "input_tokens_details": {"cached_tokens": self.cached_tokens},
                "output_tokens": self.output_tokens,
                "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
                "total_tokens": self.input_tokens + self.output_tokens,
            });
            let terminal = match &self.end {
                End::Completed => json!({
                    "type": "response.completed",
                    "response": response("completed", &done_items, Some(usage)),
                }),
                End::Incomplete(reason) => {
                    let mut body = response("incomplete", &done_items, Some(usage));
                    body["incomplete_details"] = json!({"reason": reason});
                    json!({"type": "response.incomplete", "response": body})
                }
            };
            out.push(terminal);
        }
        out.events
    }
}

/// Events with the API's increasing `sequence_number`.
#[derive(Default)]
struct Events {
    events: Vec<SseEvent>,
}

impl Events {
    fn push(&mut self, mut event: Value) {
        event["sequence_number"] = json!(self.events.len());
        self.events.push(sse(&event));
    }
}

fn sse(event: &Value) -> SseEvent {
    SseEvent {
        text: format!(
            "event: {}\ndata: {event}\n\n",
            event["type"].as_str().unwrap_or("message")
        ),
        needs_include_usage: false,
    }
}

fn response(status: &str, output: &[Value], usage: Option<Value>) -> Value {
    json!({
        "id": "resp_mock", "object": "response", "created_at": 1_700_000_000,
        "status": status, "model": "gpt-mock", "output": output,
        "error": null, "incomplete_details": null, "usage": usage,
    })
}

/// The events of one output item; its finished copy unless `finish` is
/// false (the response was cut inside it).
fn item_events(out: &mut Events, index: usize, item: &Item, finish: bool) -> Option<Value> {
    let at = |mut event: Value| {
        event["output_index"] = json!(index);
        event
    };
    match item {
        Item::Reasoning { summary, encrypted } => {
            let id = format!("rs_{index}");
            out.push(at(json!({"type": "response.output_item.added",
                "item": {"type": "reasoning", "id": id, "summary": []}})));
            for (part, text) in summary.iter().enumerate() {
                let base = json!({"item_id": id, "summary_index": part});
                let with = |kind: &str, extra: Value| {
                    let mut event = base.clone();
                    event["type"] = json!(kind);
                    for (k, v) in extra.as_object().into_iter().flatten() {
                        event[k] = v.clone();
                    }
                    at(event)
                };
                out.push(with(
                    "response.reasoning_summary_part.added",
                    json!({"part": {"type": "summary_text", "text": ""}}),
                ));
                for piece in fragments(text, PIECES) {
                    out.push(with(
                        "response.reasoning_summary_text.delta",
                        json!({"delta": piece}),
                    ));
                }
                out.push(with(
                    "response.reasoning_summary_text.done",
                    json!({"text": text}),
                ));
                out.push(with(
                    "response.reasoning_summary_part.done",
                    json!({"part": {"type": "summary_text", "text": text}}),
                ));
            }
            let summary: Vec<Value> = summary
                .iter()
                .map(|text| json!({"type": "summary_text", "text": text}))
                .collect();
            let mut done = json!({"type": "reasoning", "id": id, "summary": summary});
            if let Some(encrypted) = encrypted {
                done["encrypted_content"] = json!(encrypted);
            }
            finish_item(out, index, done, finish)
        }
        Item::Text(text) | Item::Refusal(text) => {
            let refusal = matches!(item, Item::Refusal(_));
            let id = format!("msg_{index}");
            out.push(at(json!({"type": "response.output_item.added",
                "item": {"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []}})));
            let (part, delta_kind, done_kind, field) = if refusal {
                (
                    "refusal",
                    "response.refusal.delta",
                    "response.refusal.done",
                    "refusal",
                )
            } else {
                (
                    "output_text",
                    "response.output_text.delta",
                    "response.output_text.done",
                    "text",
                )
            };
            let full = if refusal {
                json!({"type": part, "refusal": text})
            } else {
                json!({"type": part, "text": text, "annotations": []})
            };
            out.push(at(
                json!({"type": "response.content_part.added", "item_id": id,
                "content_index": 0, "part": {"type": part, field: ""}}),
            ));
            for piece in fragments(text, PIECES) {
                out.push(at(json!({"type": delta_kind, "item_id": id,
                    "content_index": 0, "delta": piece})));
            }
            out.push(at(json!({"type": done_kind, "item_id": id,
                "content_index": 0, field: text})));
            out.push(at(
                json!({"type": "response.content_part.done", "item_id": id,
                "content_index": 0, "part": full}),
            ));
            let done = json!({"type": "message", "id": id, "role": "assistant",
                "status": "completed", "content": [full]});
            finish_item(out, index, done, finish)
        }
        Item::Call {
            call_id,
            name,
            args,
        } => {
            let id = format!("fc_{index}");
            out.push(at(json!({"type": "response.output_item.added", "item": {
                "type": "function_call", "id": id, "call_id": call_id, "name": name,
                "arguments": "", "status": "in_progress"}})));
            for piece in fragments(args, PIECES) {
                out.push(at(json!({"type": "response.function_call_arguments.delta",
                    "item_id": id, "delta": piece})));
            }
            if !finish {
                return None;
            }
            out.push(at(json!({"type": "response.function_call_arguments.done",
                "item_id": id, "arguments": args})));
            let done = json!({"type": "function_call", "id": id, "call_id": call_id,
                "name": name, "arguments": args, "status": "completed"});
            finish_item(out, index, done, finish)
        }
    }
}

fn finish_item(out: &mut Events, index: usize, item: Value, finish: bool) -> Option<Value> {
    if !finish {
        return None;
    }
    out.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    Some(item)
}

/// A complete answer of text.
pub fn text(text: &str) -> Response {
    Script::new().text(text).build()
}

/// A complete answer of one function call.
pub fn tool_call(call_id: &str, name: &str, args_json: &str) -> Response {
    Script::new().tool_call(call_id, name, args_json).build()
}

/// A response that starts, then fails with `code` (`server_error`,
/// `context_length_exceeded`, …): `response.failed`.
pub fn failed(code: &str, message: &str) -> Response {
    let mut out = Events::default();
    out.push(json!({"type": "response.created", "response": response("in_progress", &[], None)}));
    let mut body = response("failed", &[], None);
    body["error"] = json!({"code": code, "message": message});
    out.push(json!({"type": "response.failed", "response": body}));
    Response::stream(out.events)
}

/// A stream that starts, then sends a bare `error` event.
pub fn error_event(code: &str, message: &str) -> Response {
    let mut out = Events::default();
    out.push(json!({"type": "response.created", "response": response("in_progress", &[], None)}));
    out.push(json!({"type": "error", "code": code, "message": message, "param": null}));
    Response::stream(out.events)
}

/// Fields the Responses API takes at the top level of a request; the real
/// one answers 400 to anything else (a chat completions field, say).
const KNOWN_FIELDS: &[&str] = &[
    "model",
    "instructions",
    "input",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "store",
    "stream",
    "include",
    "reasoning",
    "max_output_tokens",
    "prompt_cache_key",
    "prompt_cache_retention",
    "text",
    "metadata",
    "temperature",
    "top_p",
    "truncation",
    "user",
    "previous_response_id",
    "service_tier",
    "safety_identifier",
    "max_tool_calls",
];

type Verdict = Result<(), (u16, String)>;

fn invalid(message: impl Into<String>) -> Verdict {
    Err((400, message.into()))
}

/// The checks the real API makes, with its wording where it is known.
pub(crate) fn validate(request: &Recorded) -> Verdict {
    let Some(body) = request.body.as_object() else {
        return invalid("We could not parse the JSON body of your request.");
    };
    if let Some(unknown) = body.keys().find(|k| !KNOWN_FIELDS.contains(&k.as_str())) {
        return invalid(format!("Unknown parameter: '{unknown}'."));
    }
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return invalid("Missing required parameter: 'model'.");
    }
    if body.get("stream") != Some(&Value::Bool(true)) {
        return invalid("the mock serves only streaming requests: set \"stream\": true");
    }
    // Reasoning is kept only when the server keeps it or sends it back.
    let stored = body.get("store") != Some(&Value::Bool(false));
    for value in body
        .get("include")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let known = [
            "reasoning.encrypted_content",
            "message.output_text.logprobs",
            "message.input_image.image_url",
        ];
        if !value.as_str().is_some_and(|v| known.contains(&v)) {
            return invalid(format!("Invalid value for 'include': {value}."));
        }
    }
    if let Some(reasoning) = body.get("reasoning") {
        let effort_ok = reasoning.get("effort").is_none_or(|e| {
            matches!(
                e.as_str(),
                Some("none" | "minimal" | "low" | "medium" | "high" | "xhigh")
            )
        });
        let summary_ok = reasoning
            .get("summary")
            .is_none_or(|s| matches!(s.as_str(), Some("auto" | "concise" | "detailed")));
        if !effort_ok || !summary_ok {
            return invalid(format!("Invalid value for 'reasoning': {reasoning}."));
        }
    }
    if body.contains_key("tool_choice") && !body.contains_key("tools") {
        return invalid("Tool choice is only allowed when 'tools' are specified.");
    }
    for (i, tool) in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if tool["type"] != "function" {
            return invalid(format!("Invalid value for 'tools[{i}].type'."));
        }
        if !tool["name"].as_str().is_some_and(valid_function_name) {
            return invalid(format!(
                "Invalid 'tools[{i}].name': string does not match pattern '^[a-zA-Z0-9_-]+$'."
            ));
        }
        if tool.get("parameters").is_some_and(|p| !p.is_object()) {
            return invalid(format!("Invalid type for 'tools[{i}].parameters'."));
        }
    }
    match body.get("input") {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(items)) => check_items(items, stored),
        _ => invalid("Missing required parameter: 'input'."),
    }
}

fn check_items(items: &[Value], stored: bool) -> Verdict {
    let mut calls: Vec<&str> = Vec::new();
    let mut answered: Vec<&str> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        // An item without a type is a plain message.
        match item["type"].as_str().unwrap_or("message") {
            "message" => check_message(&at, item)?,
            "reasoning" => {
                let id = item["id"].as_str().unwrap_or_default();
                if !id.starts_with("rs_") {
                    return invalid(format!(
                        "Invalid '{at}.id': '{id}'. Expected an ID that begins with 'rs'."
                    ));
                }
                if !item["summary"].is_array() {
                    return invalid(format!("Missing required parameter: '{at}.summary'."));
                }
                if !stored && !item["encrypted_content"].is_string() {
                    return Err((
                        404,
                        format!(
                            "Item with id '{id}' not found. Items are not persisted when `store` \
                             is set to false. Try again with `store` set to true, or remove this \
                             item from your input."
                        ),
                    ));
                }
                // A reasoning item belongs before the output it led to.
                let next = items.get(i + 1);
                let follows = next.is_some_and(|n| {
                    n["type"] == "function_call"
                        || (n["type"].as_str().unwrap_or("message") == "message"
                            && n["role"] == "assistant")
                });
                if !follows {
                    return invalid(format!(
                        "Item '{id}' of type 'reasoning' was provided without its required \
                         following item."
                    ));
                }
            }
            "function_call" => {
                let Some(call_id) = item["call_id"].as_str().filter(|c| !c.is_empty()) else {
                    return invalid(format!("Missing required parameter: '{at}.call_id'."));
                };
                if !item["name"].is_string() {
                    return invalid(format!("Missing required parameter: '{at}.name'."));
                }
                if !item["arguments"].is_string() {
                    return invalid(format!(
                        "Invalid type for '{at}.arguments': expected a string."
                    ));
                }
                if let Some(id) = item.get("id").and_then(Value::as_str)
                    && !id.starts_with("fc")
                {
                    return invalid(format!(
                        "Invalid '{at}.id': '{id}'. Expected an ID that begins with 'fc'."
                    ));
                }
                calls.push(call_id);
            }
            "function_call_output" => {
                let call_id = item["call_id"].as_str().unwrap_or_default();
                if !calls.contains(&call_id) {
                    return invalid(format!(
                        "No tool call found for function call output with call_id {call_id}."
                    ));
                }
                if answered.contains(&call_id) {
                    return invalid(format!(
                        "Duplicate function call output for call_id {call_id}."
                    ));
                }
                if !item["output"].is_string() && !item["output"].is_array() {
                    return invalid(format!("Invalid type for '{at}.output'."));
                }
                answered.push(call_id);
            }
            other => return invalid(format!("Invalid value: '{other}' for '{at}.type'.")),
        }
    }
    if let Some(open) = calls.iter().find(|c| !answered.contains(c)) {
        return invalid(format!("No tool output found for function call {open}."));
    }
    Ok(())
}

fn check_message(at: &str, item: &Value) -> Verdict {
    let role = item["role"].as_str().unwrap_or_default();
    let allowed: &[&str] = match role {
        "user" | "system" | "developer" => &["input_text", "input_image", "input_file"],
        "assistant" => &["output_text", "refusal"],
        _ => {
            return invalid(format!(
                "Invalid value: '{role}'. Supported values are: 'assistant', 'system', \
                 'developer', and 'user'."
            ));
        }
    };
    match &item["content"] {
        Value::String(_) => Ok(()),
        Value::Array(parts) => {
            for (j, part) in parts.iter().enumerate() {
                let kind = part["type"].as_str().unwrap_or_default();
                if !allowed.contains(&kind) {
                    return invalid(format!(
                        "Invalid value: '{kind}'. Supported values are: {} for '{at}.content[{j}].type'.",
                        allowed.join(", ")
                    ));
                }
                if kind == "input_image"
                    && !part["image_url"]
                        .as_str()
                        .is_some_and(|u| u.starts_with("data:image/") || u.starts_with("http"))
                {
                    return invalid(format!("Invalid '{at}.content[{j}].image_url'."));
                }
            }
            Ok(())
        }
        _ => invalid(format!("Missing required parameter: '{at}.content'.")),
    }
}

fn valid_function_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_input(input: Value) -> Recorded {
        let body = json!({"model": "m", "stream": true, "store": false, "input": input});
        Recorded {
            method: "POST".into(),
            path: "/v1/responses".into(),
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

    fn user(text: &str) -> Value {
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    }

    fn call(id: &str) -> Value {
        json!({"type": "function_call", "call_id": id, "name": "ls", "arguments": "{}"})
    }

    fn output(id: &str) -> Value {
        json!({"type": "function_call_output", "call_id": id, "output": "ok"})
    }

    fn reasoning(encrypted: bool) -> Value {
        let mut item = json!({"type": "reasoning", "id": "rs_1", "summary": []});
        if encrypted {
            item["encrypted_content"] = json!("enc");
        }
        item
    }

    #[test]
    fn a_reasoning_tool_round_trip_is_valid() {
        let input = json!([user("hi"), reasoning(true), call("a"), call("b"), output("b"), output("a"),
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}]);
        assert_eq!(validate(&with_input(input)), Ok(()));
    }

    #[test]
    fn calls_and_outputs_pair_by_call_id() {
        let orphan = with_input(json!([user("hi"), output("x")]));
        assert!(rejected(&orphan).contains("No tool call found"));
        let open = with_input(json!([user("hi"), call("a"), user("more")]));
        assert!(rejected(&open).contains("No tool output found for function call a"));
        let twice = with_input(json!([user("hi"), call("a"), output("a"), output("a")]));
        assert!(rejected(&twice).contains("Duplicate"));
    }

    #[test]
    fn reasoning_must_lead_to_output_and_carry_its_content_when_nothing_is_stored() {
        let alone = with_input(json!([user("hi"), reasoning(true), user("next")]));
        assert!(rejected(&alone).contains("without its required following item"));
        let bare = with_input(json!([
            user("hi"),
            reasoning(false),
            call("a"),
            output("a")
        ]));
        assert!(rejected(&bare).contains("not persisted"));
    }

    #[test]
    fn chat_fields_are_unknown_here() {
        let mut recorded = with_input(json!([user("hi")]));
        recorded.body["max_tokens"] = json!(10);
        assert!(rejected(&recorded).contains("Unknown parameter: 'max_tokens'"));
    }

    #[test]
    fn scripts_send_encrypted_content_only_when_done() {
        let body = Script::new().reasoning("think", "enc-1").build().body();
        let added = body
            .lines()
            .find(|l| l.contains("response.output_item.added") && l.starts_with("data"))
            .unwrap();
        assert!(!added.contains("enc-1"));
        let done = body
            .lines()
            .find(|l| l.contains("response.output_item.done") && l.starts_with("data"))
            .unwrap();
        assert!(done.contains("enc-1"));
        assert!(body.contains("response.completed"));
    }
}
