//! The request bodies the cache writes, held byte for byte to a plain
//! serialisation over long scripted sessions on every wire API. Beside
//! `body.rs` rather than inside it, since it drives every wire format,
//! which build on `body.rs`.

use serde_json::{Value, json};

use bytes::Bytes;

use super::body::*;
use super::call::Request;
use super::config::{CacheTtl, Reasoning};
use super::{anthropic, openai, responses};
use crate::conversation::Conversation;
use crate::message::{Block, Message, Role};
use crate::tool::ToolSpec;

/// A small deterministic generator, so a failure replays.
struct Script(u64);

impl Script {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

fn image() -> Block {
    Block::Image {
        mime_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    }
}

/// An assistant message of the kinds models send: thinking (signed,
/// unsigned, redacted), reasoning items, text with characters to
/// escape, tool calls (arguments an object, or a string the model sent
/// unparsable), sometimes many of them, sometimes nothing at all (an
/// aborted turn); then the tool results, some with images.
fn exchange(script: &mut Script, step: usize) -> Vec<Message> {
    let mut content = Vec::new();
    match script.next(4) {
        0 => content.push(Block::Thinking {
            thinking: format!("think {step}"),
            signature: Some(format!("sig{step}")),
        }),
        1 => content.push(Block::Thinking {
            thinking: "unsigned".into(),
            signature: None,
        }),
        2 => content.push(Block::RedactedThinking {
            data: format!("redacted{step}"),
        }),
        _ => content.push(Block::Reasoning {
            id: format!("rs_{step}"),
            summary: if step.is_multiple_of(2) {
                String::new()
            } else {
                "why".into()
            },
            encrypted_content: format!("enc{step}"),
        }),
    }
    if script.next(3) > 0 {
        content.push(Block::Text {
            text: format!("step {step}: \"quoted\" \\ tab\t é ✓\n"),
        });
    }
    // Sometimes more calls than the cache lookback, so a second mark moves.
    let calls = match script.next(6) {
        0 => 0,
        1 if step.is_multiple_of(4) => 24,
        n => n as usize % 4,
    };
    let mut results = Vec::new();
    for call in 0..calls {
        let id = format!("call_{step}_{call}");
        let args = if call == 3 {
            Value::String("{not json".into())
        } else {
            json!({"path": format!("src/{step}.rs"), "n": call})
        };
        content.push(Block::ToolCall {
            id: id.clone(),
            name: "read".into(),
            args,
        });
        let mut result = vec![Block::Text {
            text: format!("line {call}\n}}{{<>"),
        }];
        if script.next(5) == 0 {
            result.push(image());
        }
        if script.next(7) == 0 {
            result.push(Block::Text {
                text: "second part".into(),
            });
        }
        results.push(Block::ToolResult {
            call_id: id,
            is_error: call == 2,
            content: result,
        });
    }
    if script.next(9) == 0 {
        content.clear();
        results.clear();
    }
    let mut messages = vec![Message::new(Role::Assistant, content)];
    if !results.is_empty() {
        messages.push(Message::new(Role::Tool, results));
    }
    messages
}

fn prompt(script: &mut Script, step: usize) -> Message {
    let mut content = vec![Block::Text {
        text: format!("prompt {step}"),
    }];
    if script.next(4) == 0 {
        content.push(image());
    }
    if script.next(6) == 0 {
        content.push(Block::Text {
            text: String::new(),
        });
    }
    Message::new(Role::User, content)
}

/// The bodies of every wire API for `request`: through `caches` (the
/// request names its history) and plainly (it names none). Returns the
/// cached ones, which a caller may hold on to as an HTTP client would.
fn compare(request: &Request<'_>, caches: &mut [BodyCache; 4], step: usize) -> [Bytes; 4] {
    let plain = Request {
        history: None,
        ..*request
    };
    let bodies = |request: &Request<'_>, caches: &mut [BodyCache; 4]| {
        let [a, b, c, d] = caches;
        [
            anthropic::request_body(request, a),
            openai::request_body(request, false, b),
            openai::request_body(request, true, c),
            responses::request_body(request, true, d),
        ]
    };
    let cached = bodies(request, caches);
    let expected = bodies(&plain, &mut Default::default());
    for (wire, (cached, expected)) in cached.iter().zip(&expected).enumerate() {
        assert!(
            cached == expected,
            "step {step}, wire {wire}: the cached body differs\ncached: {}\nplain:  {}",
            String::from_utf8_lossy(cached),
            String::from_utf8_lossy(expected)
        );
        serde_json::from_slice::<Value>(cached).expect("valid JSON");
    }
    cached
}

#[test]
fn cached_bodies_equal_plain_serialisations_over_a_long_session() {
    let tools = [ToolSpec {
        name: "read".into(),
        description: "Read a file.".into(),
        schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}).into(),
        read_only: true,
    }];
    // The same tool with another schema, then again with the first one's
    // schema in an allocation of its own: the tools' JSON is kept only
    // while they stay the same.
    let changed = [ToolSpec {
        schema: json!({"type": "object", "properties": {"path": {"type": "integer"}}}).into(),
        ..tools[0].clone()
    }];
    let equal = [ToolSpec {
        schema: (*tools[0].schema).clone().into(),
        ..tools[0].clone()
    }];
    // Equal as a value (`Value`'s `==` ignores the order of keys), but
    // another text: the tools' JSON is written again.
    let reordered = [ToolSpec {
        schema: json!({"properties": {"path": {"type": "string"}}, "type": "object"}).into(),
        ..tools[0].clone()
    }];
    assert_eq!(reordered[0].schema, tools[0].schema);
    let mut script = Script(7);
    let mut caches: [BodyCache; 4] = Default::default();
    let mut history = Conversation::new();
    let mut drop_thinking_before = 0;
    let mut held = None;
    for step in 0..70 {
        let mut new = vec![prompt(&mut script, step)];
        for _ in 0..script.next(4) {
            new.extend(exchange(&mut script, step));
        }
        for message in new {
            history.push(message);
            // What changes between requests without changing the history.
            let cache = match step % 7 {
                0 => CacheTtl::Off,
                1 => CacheTtl::OneHour,
                _ => CacheTtl::FiveMinutes,
            };
            let request = Request {
                model: if step.is_multiple_of(11) {
                    "claude-opus-4-1"
                } else {
                    "claude-sonnet-5-5"
                },
                system: if step.is_multiple_of(13) {
                    ""
                } else {
                    "You are zot. \"Be brief.\""
                },
                messages: &history,
                tools: match step % 17 {
                    5 => &[],
                    9 => &changed,
                    10 => &equal,
                    11 => &reordered,
                    _ => &tools,
                },
                max_tokens: 1000,
                reasoning: (step % 5 != 0).then_some(Reasoning::High),
                cache,
                cache_key: Some("session-1"),
                drop_thinking_before,
                history: Some(history.id()),
            };
            let bodies = compare(&request, &mut caches, step);
            // Now and then the last bodies are still in use when the
            // next ones are written, so their buffers cannot be reused.
            held = step.is_multiple_of(3).then_some(bodies);
        }
        // What changes the history or how it is sent: a changed prefix
        // leaves earlier thinking out, a compaction replaces the start,
        // a rewind cuts the end.
        match step {
            20 => drop_thinking_before = history.len() / 2,
            35 => {
                let kept = history[history.len() - 6..].to_vec();
                let mut compacted = vec![Message::user("summary")];
                compacted.extend(kept);
                history.replace(compacted);
                drop_thinking_before = 0;
            }
            50 => history.truncate(history.len() / 2),
            _ => {}
        }
    }
    // The test is only worth something if most of each body was kept.
    for cache in &caches {
        assert!(
            cache.sources() > history.len() / 2,
            "{} of {}",
            cache.sources(),
            history.len()
        );
        assert!(cache.kept_len() > 10_000, "{} bytes kept", cache.kept_len());
    }
    assert!(held.is_some());
}
