//! The check a tool's input schema gets when the tool is registered, before
//! any model sees it: a schema that is not valid JSON Schema (`{"type": 7}`,
//! a `pattern` that is no regular expression) makes a provider refuse every
//! request that offers it, so one bad tool would stop every turn.
//!
//! It checks the shape of each keyword a schema can hold, as the draft
//! 2020-12 meta-schema states it, walking subschemas. It does not validate
//! instances: arguments are still checked by jsonschema when the tool is
//! called. jsonschema's own check of a schema builds its meta-schema
//! validators first, several MiB held for the rest of the run (7.7 MB of
//! heap for draft 2020-12, 2.6 MB for draft 7, measured on this build), which
//! a run that never calls the tool should not pay (BENCHMARKS.md).

use serde_json::{Map, Value};

use crate::adapter::json_kind as kind;

/// How deep subschemas may nest: deeper is refused rather than walked (a
/// hostile schema must not exhaust the stack). Real tool schemas nest a few
/// levels.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// The JSON Schema type names.
const TYPES: [&str; 7] = [
    "array", "boolean", "integer", "null", "number", "object", "string",
];

/// Keywords whose value is one subschema.
const SCHEMA: [&str; 12] = [
    "additionalProperties",
    "additionalItems",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];

/// Keywords whose value is an object of subschemas.
const SCHEMA_MAP: [&str; 5] = [
    "$defs",
    "definitions",
    "dependentSchemas",
    "patternProperties",
    "properties",
];

/// Keywords whose value is a non-empty array of subschemas.
const SCHEMA_LIST: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value is a non-negative integer.
const COUNT: [&str; 8] = [
    "maxContains",
    "maxItems",
    "maxLength",
    "maxProperties",
    "minContains",
    "minItems",
    "minLength",
    "minProperties",
];

/// Keywords whose value is a number.
const NUMBER: [&str; 4] = ["exclusiveMaximum", "exclusiveMinimum", "maximum", "minimum"];

/// Keywords whose value is a string.
const STRING: [&str; 9] = [
    "$anchor",
    "$comment",
    "$id",
    "$ref",
    "$schema",
    "contentEncoding",
    "contentMediaType",
    "description",
    "format",
];

/// `schema` as providers take it, when it is a JSON Schema object whose
/// keywords all have the shape JSON Schema gives them and whose top level
/// describes an object (a tool's arguments are one): a schema without a
/// `type` gets `"type": "object"`, which the Messages API requires. `Err`
/// says what is wrong and where.
pub fn checked(mut schema: Value) -> Result<Value, String> {
    let Value::Object(map) = &mut schema else {
        return Err(format!(
            "the schema is {}, not a JSON object",
            kind(&schema)
        ));
    };
    object(map, "", 0)?;
    match map.get("type") {
        None => {
            map.insert("type".to_owned(), "object".into());
        }
        Some(Value::String(name)) if name == "object" => {}
        Some(other) => {
            return Err(format!(
                "/type: must be \"object\" (a tool's arguments are a JSON object), not {other}"
            ));
        }
    }
    Ok(schema)
}

fn subschema(value: &Value, at: &str, depth: usize) -> Result<(), String> {
    match value {
        Value::Bool(_) => Ok(()),
        Value::Object(map) if depth < MAX_SCHEMA_DEPTH => object(map, at, depth + 1),
        Value::Object(_) => Err(format!(
            "{at}: nested deeper than {MAX_SCHEMA_DEPTH} levels"
        )),
        other => Err(format!(
            "{at}: a schema must be an object or a boolean, not {}",
            kind(other)
        )),
    }
}

fn object(map: &Map<String, Value>, at: &str, depth: usize) -> Result<(), String> {
    for (key, value) in map {
        let here = format!("{at}/{key}");
        let here = here.as_str();
        let key = key.as_str();
        if SCHEMA.contains(&key) {
            subschema(value, here, depth)?;
        } else if SCHEMA_MAP.contains(&key) {
            let entries = value
                .as_object()
                .ok_or_else(|| format!("{here}: must be an object, not {}", kind(value)))?;
            for (name, sub) in entries {
                if key == "patternProperties" {
                    regex(name, here)?;
                }
                subschema(sub, &format!("{here}/{name}"), depth)?;
            }
        } else if SCHEMA_LIST.contains(&key) {
            let items = value
                .as_array()
                .filter(|items| !items.is_empty())
                .ok_or_else(|| format!("{here}: must be a non-empty array of schemas"))?;
            for (i, sub) in items.iter().enumerate() {
                subschema(sub, &format!("{here}/{i}"), depth)?;
            }
        } else if COUNT.contains(&key) {
            if !value.as_f64().is_some_and(|n| n >= 0.0 && n.fract() == 0.0) {
                return Err(format!("{here}: must be a non-negative integer"));
            }
        } else if NUMBER.contains(&key) {
            if !value.is_number() {
                return Err(format!("{here}: must be a number, not {}", kind(value)));
            }
        } else if STRING.contains(&key) {
            if !value.is_string() {
                return Err(format!("{here}: must be a string, not {}", kind(value)));
            }
        } else {
            other_keyword(key, value, here)?;
        }
    }
    Ok(())
}

/// The keywords with shapes of their own.
fn other_keyword(key: &str, value: &Value, here: &str) -> Result<(), String> {
    match key {
        "type" => {
            let names: Vec<&Value> = match value {
                Value::Array(names) => names.iter().collect(),
                one => vec![one],
            };
            for name in &names {
                if !name.as_str().is_some_and(|n| TYPES.contains(&n)) {
                    return Err(format!(
                        "{here}: {name} is not a type (one of {})",
                        TYPES.join(", ")
                    ));
                }
            }
            unique(&names, here)
        }
        "required" => {
            let names = value
                .as_array()
                .filter(|names| names.iter().all(Value::is_string))
                .ok_or_else(|| format!("{here}: must be an array of strings"))?;
            unique(&names.iter().collect::<Vec<_>>(), here)
        }
        "dependentRequired" => {
            let ok = value.as_object().is_some_and(|deps| {
                deps.values().all(|names| {
                    names
                        .as_array()
                        .is_some_and(|names| names.iter().all(Value::is_string))
                })
            });
            if ok {
                Ok(())
            } else {
                Err(format!("{here}: must map names to arrays of strings"))
            }
        }
        "enum" if !value.is_array() => Err(format!("{here}: must be an array")),
        "multipleOf" if !value.as_f64().is_some_and(|n| n > 0.0) => {
            Err(format!("{here}: must be a number above 0"))
        }
        "uniqueItems" | "readOnly" | "writeOnly" | "deprecated" if !value.is_boolean() => {
            Err(format!("{here}: must be true or false"))
        }
        "pattern" => match value.as_str() {
            Some(pattern) => regex(pattern, here),
            None => Err(format!("{here}: must be a string, not {}", kind(value))),
        },
        // Anything else (`title`, `default`, `examples`, `const`, unknown
        // keywords) may hold any value.
        _ => Ok(()),
    }
}

/// JSON Schema regular expressions are ECMA-262's; `fancy_regex` (what
/// jsonschema compiles them with) takes the same syntax, look-around and
/// back-references included.
fn regex(pattern: &str, here: &str) -> Result<(), String> {
    fancy_regex::Regex::new(pattern)
        .map(drop)
        .map_err(|e| format!("{here}: {pattern:?} is not a regular expression: {e}"))
}

fn unique(values: &[&Value], here: &str) -> Result<(), String> {
    for (i, value) in values.iter().enumerate() {
        if values[..i].contains(value) {
            return Err(format!("{here}: {value} is listed twice"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn accepts_the_schemas_tools_use() {
        for schema in [
            json!({"type": "object"}),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "d", "minLength": 1},
                    "mode": {"enum": ["a", "b"], "default": "a"},
                    "n": {"type": ["integer", "null"], "minimum": 0, "multipleOf": 2},
                    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "uniqueItems": true},
                    "id": {"type": "string", "pattern": "^(?=x)[a-z]+\\d*$"},
                },
                "required": ["path"],
                "additionalProperties": false,
                "$defs": {"tag": {"anyOf": [{"type": "string"}, true]}},
                "patternProperties": {"^x-": {}},
            }),
        ] {
            assert_eq!(checked(schema.clone()), Ok(schema.clone()), "{schema}");
        }
    }

    #[test]
    fn refuses_what_a_provider_would() {
        for (schema, says) in [
            (json!("object"), "not a JSON object"),
            (json!({"type": 7}), "/type: 7 is not a type"),
            (json!({"type": ["string", "string"]}), "listed twice"),
            (
                json!({"properties": {"x": {"pattern": "(unclosed"}}}),
                "/properties/x/pattern: \"(unclosed\" is not a regular expression",
            ),
            (
                json!({"required": "x"}),
                "/required: must be an array of strings",
            ),
            (json!({"properties": []}), "/properties: must be an object"),
            (
                json!({"items": 3}),
                "/items: a schema must be an object or a boolean",
            ),
            (json!({"anyOf": []}), "/anyOf: must be a non-empty array"),
            (
                json!({"minLength": -1}),
                "/minLength: must be a non-negative integer",
            ),
            (
                json!({"patternProperties": {"[": {}}}),
                "is not a regular expression",
            ),
        ] {
            let error = checked(schema.clone()).unwrap_err();
            assert!(error.contains(says), "{schema}: {error}");
        }
    }

    #[test]
    fn the_top_level_describes_an_object() {
        assert_eq!(checked(json!({})), Ok(json!({"type": "object"})));
        assert_eq!(
            checked(json!({"properties": {"x": {"type": "string"}}})),
            Ok(json!({"properties": {"x": {"type": "string"}}, "type": "object"}))
        );
        for schema in [
            json!({"type": "array"}),
            json!({"type": "string"}),
            json!({"type": ["object", "null"]}),
        ] {
            let error = checked(schema.clone()).unwrap_err();
            assert!(
                error.starts_with("/type: must be \"object\""),
                "{schema}: {error}"
            );
        }
    }

    #[test]
    fn refuses_nesting_past_the_limit() {
        let mut schema = json!({"type": "string"});
        for _ in 0..=MAX_SCHEMA_DEPTH {
            schema = json!({"items": schema});
        }
        assert!(checked(schema).unwrap_err().contains("nested deeper"));
    }
}
