//! The requests `zot rpc` reads, one JSON object per line:
//! `{"id"?, "type": <command>, …}`. Each gets one
//! [`Response`](crate::events::Response) on the event stream.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One request, by its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Required first when the server was started with `ZOTCORE_RPC_TOKEN`.
    Hello {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
    },
    /// Runs a prompt (queued behind a running one); ends with `done`.
    Prompt {
        #[serde(default)]
        message: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    /// Cancels the running prompt or compaction; prompts queued behind it
    /// still run in order. With `"queue": true` they are dropped too, and
    /// the response gives back their text.
    Abort {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        queue: bool,
    },
    /// Summarises older messages; ends with `compact_done` or `error`.
    Compact,
    GetState,
    GetMessages,
    /// Starts a fresh conversation.
    Clear,
    /// Switches the model for this session; with `provider` (a built-in or
    /// named provider) the provider too, keeping the conversation. With
    /// `"save": true` also writes them to the user's config.json (default:
    /// not saved).
    SetModel {
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        save: bool,
    },
    GetModels,
    GetCommands,
    ReloadExtensions,
    Ping,
    /// The sessions of this directory (every directory's with `"all": true`),
    /// newest first.
    ListSessions {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        all: bool,
    },
    /// Goes on with another session, by id or a unique prefix of it;
    /// extensions get the new session id. (`session_id`: `id` is the
    /// request's own.)
    SwitchSession {
        session_id: String,
    },
    /// The current session's entries and its leaf.
    GetTree,
    /// Starts a new branch before the prompt `entry_id`: the conversation
    /// goes on from the entry before it. Returns the new leaf and the
    /// prompt's text.
    Fork {
        entry_id: String,
    },
    /// Names the current session.
    SetTitle {
        title: String,
    },
    /// The current branch's prompts with the files each changed.
    GetCheckpoints,
    /// Goes back to before the prompt `entry_id`: its files as they were
    /// (`code`) and the conversation as a new branch before it
    /// (`conversation`); both by default. A file changed since zot last
    /// recorded it (edited by the user) is only overwritten with `force`.
    Rewind {
        entry_id: String,
        #[serde(default = "yes")]
        code: bool,
        #[serde(default = "yes")]
        conversation: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        force: bool,
    },
}

fn yes() -> bool {
    true
}

/// An image attached to a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Image {
    pub mime_type: String,
    /// Standard base64.
    pub data: String,
}

/// A request line with its optional `id`, which the response repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub id: Option<Value>,
    /// The `type` as sent ("" when missing).
    pub command: String,
    pub request: Result<Request, String>,
}

impl Request {
    /// Every command name.
    pub const COMMANDS: &'static [&'static str] = &[
        "hello",
        "prompt",
        "abort",
        "compact",
        "get_state",
        "get_messages",
        "clear",
        "set_model",
        "get_models",
        "get_commands",
        "reload_extensions",
        "ping",
        "list_sessions",
        "switch_session",
        "get_tree",
        "fork",
        "set_title",
        "get_checkpoints",
        "rewind",
    ];
}

impl Envelope {
    /// Reads one request line. `Err` is the whole line's problem (no
    /// response id can be known); a bad request inside a good line is in
    /// `request`, worded for the client.
    pub fn parse(line: &[u8]) -> Result<Self, String> {
        let value: Value = match serde_json::from_slice(line) {
            Ok(value @ Value::Object(_)) => value,
            Ok(_) => return Err("malformed json: a request is an object".into()),
            Err(e) => return Err(format!("malformed json: {e}")),
        };
        let id = value.get("id").cloned().filter(|v| !v.is_null());
        let command = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let request = if command.is_empty() {
            Err("malformed request: no \"type\"".to_owned())
        } else if !Self::known(&command) {
            Err("unknown command".to_owned())
        } else {
            let mut fields = value;
            if let Value::Object(map) = &mut fields {
                map.remove("id");
            }
            let images_bad = fields
                .get("images")
                .is_some_and(|images| !valid_images(images));
            serde_json::from_value(fields)
                .map_err(|e| problem(&command, images_bad, &e.to_string()))
        };
        Ok(Self {
            id,
            command,
            request,
        })
    }

    fn known(command: &str) -> bool {
        Request::COMMANDS.contains(&command)
    }
}

/// Whether `images` is a list of `{mime_type, data}` string pairs.
fn valid_images(images: &Value) -> bool {
    images.as_array().is_some_and(|items| {
        items
            .iter()
            .all(|i| i["mime_type"].is_string() && i["data"].is_string())
    })
}

/// A bad request's fields, in the words the protocol documents.
fn problem(command: &str, images_bad: bool, serde: &str) -> String {
    match command {
        "set_model" => format!(
            "set_model needs \"model\" (a string), and takes \"provider\" (a string) and \"save\" (true or false): {serde}"
        ),
        "prompt" if images_bad => "each image needs \"mime_type\" and \"data\" (base64)".to_owned(),
        "prompt" => "prompt needs a non-empty \"message\" or images".to_owned(),
        _ => format!("malformed {command}: {serde}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Envelope {
        Envelope::parse(line.as_bytes()).unwrap()
    }

    #[test]
    fn requests_parse_with_their_ids() {
        let env = parse(r#"{"id":7,"type":"set_model","model":"m"}"#);
        assert_eq!(env.id, Some(Value::from(7)));
        assert_eq!(
            env.request,
            Ok(Request::SetModel {
                model: "m".into(),
                provider: None,
                save: false
            })
        );
        assert_eq!(
            parse(r#"{"type":"set_model","model":"m","save":true}"#).request,
            Ok(Request::SetModel {
                model: "m".into(),
                provider: None,
                save: true
            })
        );
        assert_eq!(
            parse(r#"{"type":"abort","id":"x"}"#).request,
            Ok(Request::Abort { queue: false })
        );
        let prompt = parse(
            r#"{"type":"prompt","message":"hi","images":[{"mime_type":"image/png","data":"AA=="}]}"#,
        );
        assert!(
            matches!(prompt.request, Ok(Request::Prompt { ref images, .. }) if images.len() == 1)
        );
    }

    #[test]
    fn bad_requests_are_worded_for_the_client() {
        assert_eq!(
            Envelope::parse(b"[1]").unwrap_err(),
            "malformed json: a request is an object"
        );
        assert!(
            Envelope::parse(b"{")
                .unwrap_err()
                .starts_with("malformed json: ")
        );
        assert_eq!(
            parse(r#"{"id":1}"#).request,
            Err("malformed request: no \"type\"".into())
        );
        let unknown = parse(r#"{"type":"fly"}"#);
        assert_eq!(
            (unknown.command.as_str(), unknown.request),
            ("fly", Err("unknown command".into()))
        );
        assert_eq!(
            parse(r#"{"type":"set_model"}"#).request,
            Err("set_model needs \"model\" (a string), and takes \"provider\" (a string) and \"save\" (true or false): missing field `model`".into())
        );
        let wrong = parse(r#"{"type":"set_model","model":"m","save":"yes"}"#).request;
        assert!(
            wrong
                .as_ref()
                .is_err_and(|e| e.ends_with("invalid type: string \"yes\", expected a boolean")),
            "{wrong:?}"
        );
        assert_eq!(
            parse(r#"{"type":"prompt","images":[{"mime_type":"image/png"}]}"#).request,
            Err("each image needs \"mime_type\" and \"data\" (base64)".into())
        );
        for name in Request::COMMANDS {
            let env = parse(&format!(r#"{{"type":"{name}","model":"m"}}"#));
            assert_ne!(env.request, Err("unknown command".into()), "{name}");
        }
    }
}
