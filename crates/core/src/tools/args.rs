//! Reading a tool call's JSON arguments: each helper either gives the value
//! or the tool error the model sees, naming the argument and what was wrong.

use serde_json::{Map, Value};

use crate::tool::ToolOutput;

/// The arguments as an object, or the tool error the model should see.
pub(super) fn args_object(args: &Value) -> Result<&Map<String, Value>, ToolOutput> {
    args.as_object().ok_or_else(|| {
        ToolOutput::error(format!(
            "arguments must be a JSON object, got {}",
            json_kind(args)
        ))
    })
}

pub(super) fn required_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a str, ToolOutput> {
    match obj.get(key) {
        None | Some(Value::Null) => Err(ToolOutput::error(format!(
            "missing required argument `{key}`"
        ))),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ToolOutput::error(format!(
            "argument `{key}` must be a string, got {}",
            json_kind(other)
        ))),
    }
}

/// An optional integer that must be at least 1; `null` counts as absent
/// because some models send explicit nulls for optional fields.
pub(super) fn optional_positive_int(
    obj: &Map<String, Value>,
    key: &str,
) -> Result<Option<u64>, ToolOutput> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if v >= 1 => Ok(Some(v)),
            _ => Err(ToolOutput::error(format!(
                "argument `{key}` must be a positive integer, got {n}"
            ))),
        },
        Some(other) => Err(ToolOutput::error(format!(
            "argument `{key}` must be a positive integer, got {}",
            json_kind(other)
        ))),
    }
}

/// An optional string; `null` counts as absent.
pub(super) fn optional_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, ToolOutput> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ToolOutput::error(format!(
            "argument `{key}` must be a string, got {}",
            json_kind(other)
        ))),
    }
}

/// An optional boolean; `null` counts as absent.
pub(super) fn optional_bool(
    obj: &Map<String, Value>,
    key: &str,
) -> Result<Option<bool>, ToolOutput> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(ToolOutput::error(format!(
            "argument `{key}` must be a boolean, got {}",
            json_kind(other)
        ))),
    }
}

/// An optional integer in `min..=max`; `null` counts as absent.
pub(super) fn optional_count(
    obj: &Map<String, Value>,
    key: &str,
    min: usize,
    max: usize,
) -> Result<Option<usize>, ToolOutput> {
    let out_of_range = |got: &dyn std::fmt::Display| {
        ToolOutput::error(format!(
            "argument `{key}` must be an integer from {min} to {max}, got {got}"
        ))
    };
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64().and_then(|v| usize::try_from(v).ok()) {
            Some(v) if (min..=max).contains(&v) => Ok(Some(v)),
            _ => Err(out_of_range(n)),
        },
        Some(other) => Err(out_of_range(&json_kind(other))),
    }
}

pub(super) use zot_protocol::json_kind;
