//! An emulation of Anthropic's prompt cache, for the caching benchmark
//! (`examples/cache_session.rs`): it sees each Messages request and says
//! how many of its prompt tokens the real API would read from the cache,
//! write to it, and bill as plain input.
//!
//! The rules, from the prompt caching documentation: the prompt is a run of
//! blocks (tools, then system blocks, then each message's content blocks);
//! a `cache_control` mark writes the prefix through its block; a mark reads
//! the longest prefix an earlier request wrote that ends at most
//! [`LOOKBACK_BLOCKS`] blocks before it, and the prefix must be the same
//! bytes (the marks themselves aside). Tokens are estimated as a quarter of
//! a block's JSON bytes; a prefix shorter than [`MIN_PREFIX_TOKENS`] is
//! never cached.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// How many blocks before a mark the API looks for an earlier entry (the
/// prompt caching documentation: 20 block positions).
pub const LOOKBACK_BLOCKS: usize = 20;

/// The shortest prefix the API caches for Sonnet 5.x (1,024 tokens in the
/// prompt caching documentation's table).
pub const MIN_PREFIX_TOKENS: u64 = 1024;

/// What one request costs in prompt tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Split {
    /// After the last mark (or all of it, when nothing is marked).
    pub input: u64,
    pub cache_write: u64,
    pub cache_read: u64,
}

impl Split {
    pub fn total(&self) -> u64 {
        self.input + self.cache_write + self.cache_read
    }
}

/// The cache of one account, across requests.
#[derive(Debug, Default)]
pub struct Emulator {
    /// Hashes of the prefixes written so far.
    entries: HashSet<u64>,
}

impl Emulator {
    pub fn new() -> Self {
        Self::default()
    }

    /// How the request `body` is billed, writing what it marks.
    pub fn request(&mut self, body: &Value) -> Split {
        let blocks = blocks(body);
        let tokens: Vec<u64> = blocks.iter().map(|b| b.tokens).collect();
        // The hash of the prefix through each block.
        let mut prefix = Vec::with_capacity(blocks.len());
        let mut hasher = DefaultHasher::new();
        for block in &blocks {
            block.bytes.hash(&mut hasher);
            prefix.push(hasher.finish());
        }
        let marks: Vec<usize> = (0..blocks.len()).filter(|i| blocks[*i].marked).collect();
        let Some(&last) = marks.last() else {
            return Split {
                input: tokens.iter().sum(),
                ..Split::default()
            };
        };
        let through = |end: usize| tokens[..=end].iter().sum::<u64>();
        let hit = marks
            .iter()
            .flat_map(|&mark| (mark.saturating_sub(LOOKBACK_BLOCKS - 1)..=mark).rev())
            .filter(|&end| self.entries.contains(&prefix[end]))
            .max();
        for &mark in &marks {
            if through(mark) >= MIN_PREFIX_TOKENS {
                self.entries.insert(prefix[mark]);
            }
        }
        let read = hit.map_or(0, through);
        let written = through(last) - read;
        // A prefix too short to cache is billed as input.
        let (write, input_before) = if through(last) >= MIN_PREFIX_TOKENS {
            (written, 0)
        } else {
            (0, written)
        };
        Split {
            input: input_before + tokens[last + 1..].iter().sum::<u64>(),
            cache_write: write,
            cache_read: read,
        }
    }
}

struct Block {
    /// Its JSON without `cache_control`, with its role for message blocks.
    bytes: String,
    tokens: u64,
    marked: bool,
}

fn blocks(body: &Value) -> Vec<Block> {
    let mut out = Vec::new();
    let mut push = |value: &Value, role: &str| {
        let marked = value.get("cache_control").is_some();
        let mut value = value.clone();
        if let Some(object) = value.as_object_mut() {
            object.remove("cache_control");
        }
        let bytes = format!("{role}{value}");
        out.push(Block {
            tokens: (bytes.len() as u64).div_ceil(4),
            bytes,
            marked,
        });
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push(tool, "tool");
    }
    match &body["system"] {
        Value::Array(blocks) => blocks.iter().for_each(|b| push(b, "system")),
        Value::Null => {}
        text => push(text, "system"),
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default();
        match &message["content"] {
            Value::Array(blocks) => blocks.iter().for_each(|b| push(b, role)),
            text => push(text, role),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(messages: Value) -> Value {
        let long = "x".repeat(8000);
        json!({"system": [{"type": "text", "text": long, "cache_control": {"type": "ephemeral"}}],
            "messages": messages})
    }

    fn user(text: &str, marked: bool) -> Value {
        let mut block = json!({"type": "text", "text": text});
        if marked {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"role": "user", "content": [block]})
    }

    #[test]
    fn a_repeated_prefix_is_read_and_the_rest_written() {
        let mut cache = Emulator::new();
        let first = cache.request(&request(json!([user("one", true)])));
        assert_eq!(first.cache_read, 0);
        assert!(first.cache_write > 2000, "{first:?}");
        let second = cache.request(&request(json!([
            user("one", false),
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            user("two", true),
        ])));
        assert_eq!(second.cache_read, first.cache_write);
        assert!(
            second.cache_write > 0 && second.cache_write < 40,
            "{second:?}"
        );
        assert_eq!(second.input, 0);
    }

    #[test]
    fn a_changed_byte_misses() {
        let mut cache = Emulator::new();
        cache.request(&request(json!([user("one", true)])));
        let mut changed = request(json!([user("one", true)]));
        changed["system"][0]["text"] = json!("y".repeat(8000));
        assert_eq!(cache.request(&changed).cache_read, 0);
    }

    #[test]
    fn a_mark_reads_back_at_most_twenty_blocks() {
        // The system prompt unmarked: only the first user block is written.
        let body = |pairs: usize| {
            let mut messages = vec![user("one", pairs == 0)];
            for i in 0..pairs {
                messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("a{i}")}]}));
                messages.push(user(&format!("u{i}"), i + 1 == pairs));
            }
            json!({"system": "x".repeat(8000), "messages": messages})
        };
        let mut cache = Emulator::new();
        let written = cache.request(&body(0)).cache_write;
        // The mark 19 blocks on still sees it; 21 blocks on it does not.
        let mut near = Emulator::new();
        near.request(&body(0));
        assert_eq!(near.request(&body(9)).cache_read, written);
        assert_eq!(cache.request(&body(10)).cache_read, 0);
    }

    #[test]
    fn unmarked_requests_are_all_input() {
        let mut cache = Emulator::new();
        let body = json!({"system": "short", "messages": [user("hi", false)]});
        let split = cache.request(&body);
        assert_eq!(split.cache_read + split.cache_write, 0);
        assert_eq!(split.input, split.total());
    }
}
