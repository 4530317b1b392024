//! Wire types for zot's extension protocols. serde only, no I/O: the host
//! (`zot-extensions`), the SDKs and the tests all share these definitions.
//! Their JSON Schema (`schema`) is the language-neutral contract.
//!
//! Each protocol dialect lives in its own module; `zot` is the native one.

pub mod checkpoints;
pub mod events;
pub mod frontmatter;
pub mod hooks;
pub mod layout;
pub mod markdown_command;
pub mod nimlet;
pub mod rpc;
pub mod schema;
pub mod sessions;
pub mod ui;
pub mod zot;

pub use schema::schemas;

/// The protocol version the host announces in `hello_ack` (spec, "hello_ack").
pub const PROTOCOL_VERSION: u32 = 1;

/// How many bytes of a frame or of tool arguments a debug log line shows.
pub const LOG_PREVIEW_BYTES: usize = 1024;

/// `text` for a log line: at most [`LOG_PREVIEW_BYTES`], cut on a character
/// boundary, with the number of bytes left out. Shared by the host's frame
/// logs and the agent's request logs, so every log line is bounded alike.
pub fn log_preview(text: &str) -> String {
    if text.len() <= LOG_PREVIEW_BYTES {
        return text.to_owned();
    }
    let mut end = LOG_PREVIEW_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

/// `a boolean`, `an object`…, for messages about a wrong JSON type.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn log_previews_are_bounded_on_character_boundaries() {
        assert_eq!(super::log_preview("short"), "short");
        let long = "é".repeat(600);
        let shown = super::log_preview(&long);
        assert!(shown.starts_with(&"é".repeat(512)));
        assert!(shown.ends_with("… [176 more bytes]"), "{shown}");
    }
}
