//! zot's tools as hooks written for Claude Code expect them: the built-ins
//! under Claude's names and input shapes (and back, for `updatedInput`),
//! everything else under its own name; and the matchers that pick tools.

use serde_json::{Map, Value, json};

/// The name and input a hook sees for a zot tool call.
pub fn to_claude(name: &str, args: &Value) -> (String, Value) {
    let get = |key: &str| args.get(key).cloned();
    let mut input = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            input.insert(key.to_owned(), value);
        }
    };
    let claude = match name {
        "bash" => {
            put("command", get("command"));
            // Claude's Bash timeout is in milliseconds, zot's in seconds.
            put(
                "timeout",
                args.get("timeout")
                    .and_then(Value::as_u64)
                    .map(|s| json!(s.saturating_mul(1000))),
            );
            "Bash"
        }
        "read" => {
            put("file_path", get("path"));
            put("offset", get("offset"));
            put("limit", get("limit"));
            "Read"
        }
        "write" => {
            put("file_path", get("path"));
            put("content", get("content"));
            "Write"
        }
        "edit" => {
            let edits: Vec<Value> = args
                .get("edits")
                .and_then(Value::as_array)
                .map(|edits| {
                    edits
                        .iter()
                        .map(|e| {
                            json!({
                                "old_string": e.get("oldText").cloned().unwrap_or(Value::Null),
                                "new_string": e.get("newText").cloned().unwrap_or(Value::Null),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            put("file_path", get("path"));
            if let [one] = edits.as_slice() {
                put("old_string", one.get("old_string").cloned());
                put("new_string", one.get("new_string").cloned());
                put("replace_all", Some(Value::Bool(false)));
                "Edit"
            } else {
                put("edits", Some(Value::Array(edits)));
                "MultiEdit"
            }
        }
        // Claude's subagent tool; zot's `tools` has no Claude field.
        "task" => {
            put("description", get("description"));
            put("prompt", get("prompt"));
            "Task"
        }
        _ => return (name.to_owned(), args.clone()),
    };
    (claude.to_owned(), Value::Object(input))
}

/// zot's arguments for a hook's `updatedInput` of a call to `name` (zot's
/// name). Keys the hook left out keep their value from `original`.
pub fn from_claude(name: &str, original: &Value, updated: &Value) -> Value {
    let Value::Object(updated) = updated else {
        return original.clone();
    };
    let mut args = match original {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let mut take = |from: &str, to: &str| {
        if let Some(value) = updated.get(from) {
            args.insert(to.to_owned(), value.clone());
        }
    };
    match name {
        "bash" => {
            take("command", "command");
            if let Some(ms) = updated.get("timeout").and_then(Value::as_u64) {
                args.insert("timeout".into(), json!(ms.div_ceil(1000).max(1)));
            }
        }
        "read" => {
            take("file_path", "path");
            take("offset", "offset");
            take("limit", "limit");
        }
        "write" => {
            take("file_path", "path");
            take("content", "content");
        }
        "task" => {
            take("description", "description");
            take("prompt", "prompt");
        }
        "edit" => {
            take("file_path", "path");
            let edit = |e: &Value| {
                json!({
                    "oldText": e.get("old_string").cloned().unwrap_or(Value::Null),
                    "newText": e.get("new_string").cloned().unwrap_or(Value::Null),
                })
            };
            if let Some(edits) = updated.get("edits").and_then(Value::as_array) {
                args.insert("edits".into(), edits.iter().map(edit).collect());
            } else if updated.contains_key("old_string") || updated.contains_key("new_string") {
                let mut one = Map::new();
                let first = args
                    .get("edits")
                    .and_then(|e| e.get(0))
                    .map(
                        |e| json!({"old_string": e.get("oldText"), "new_string": e.get("newText")}),
                    )
                    .unwrap_or_default();
                for key in ["old_string", "new_string"] {
                    let value = updated
                        .get(key)
                        .or_else(|| first.get(key))
                        .cloned()
                        .unwrap_or(Value::Null);
                    one.insert(key.to_owned(), value);
                }
                args.insert("edits".into(), json!([edit(&Value::Object(one))]));
            }
        }
        _ => return Value::Object(updated.clone()),
    }
    Value::Object(args)
}

/// A group's matcher: `""` or `*` match everything; a plain name (letters,
/// digits, `_`, `-`, `|`) matches exactly one of its `|`-separated names;
/// anything else is a regular expression that must match the whole subject.
#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    Names(Vec<String>),
    Regex(regex::Regex),
    /// A pattern that is not a valid regex: matches nothing (reported once).
    Invalid(String),
}

impl Matcher {
    pub fn new(pattern: &str) -> Self {
        let pattern = pattern.trim();
        if pattern.is_empty() || pattern == "*" {
            return Self::All;
        }
        let plain = pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|'));
        if plain {
            return Self::Names(pattern.split('|').map(str::to_owned).collect());
        }
        match regex::Regex::new(&format!("^(?:{pattern})$")) {
            Ok(re) => Self::Regex(re),
            Err(e) => Self::Invalid(e.to_string()),
        }
    }

    pub fn matches(&self, subject: &str) -> bool {
        match self {
            Self::All => true,
            Self::Names(names) => names.iter().any(|n| n == subject),
            Self::Regex(re) => re.is_match(subject),
            Self::Invalid(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_take_claudes_shapes_and_come_back() {
        let (name, input) = to_claude("bash", &json!({"command": "ls", "timeout": 5}));
        assert_eq!(name, "Bash");
        assert_eq!(input, json!({"command": "ls", "timeout": 5000}));
        let back = from_claude(
            "bash",
            &json!({"command": "ls", "timeout": 5}),
            &json!({"command": "ls -a", "timeout": 1500}),
        );
        assert_eq!(back, json!({"command": "ls -a", "timeout": 2}));

        let edit = json!({"path": "a.rs", "edits": [{"oldText": "x", "newText": "y"}]});
        let (name, input) = to_claude("edit", &edit);
        assert_eq!(name, "Edit");
        assert_eq!(
            input,
            json!({"file_path": "a.rs", "old_string": "x", "new_string": "y", "replace_all": false})
        );
        let back = from_claude("edit", &edit, &json!({"new_string": "z"}));
        assert_eq!(
            back,
            json!({"path": "a.rs", "edits": [{"oldText": "x", "newText": "z"}]})
        );
        let two = json!({"path": "a", "edits": [{"oldText": "1", "newText": "2"}, {"oldText": "3", "newText": "4"}]});
        assert_eq!(to_claude("edit", &two).0, "MultiEdit");

        let (name, input) = to_claude("write", &json!({"path": "f", "content": "c"}));
        assert_eq!(
            (name.as_str(), input),
            ("Write", json!({"file_path": "f", "content": "c"}))
        );
        assert_eq!(to_claude("mcp__s__t", &json!({"a": 1})).0, "mcp__s__t");
    }

    #[test]
    fn matchers() {
        assert!(Matcher::new("").matches("Bash") && Matcher::new("*").matches("x"));
        let m = Matcher::new("Edit|Write");
        assert!(m.matches("Edit") && m.matches("Write") && !m.matches("MultiEdit"));
        let re = Matcher::new("mcp__.*__read.*");
        assert!(re.matches("mcp__fs__read_file") && !re.matches("Read"));
        assert!(Matcher::new("Ed.*").matches("Edit") && !Matcher::new("Ed.*").matches("xEdit"));
        assert!(matches!(Matcher::new("(("), Matcher::Invalid(_)));
    }
}
