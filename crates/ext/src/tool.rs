//! LLM-callable tools: their results ([`ToolResult`]) and the argument
//! schema derived from a Rust type with schemars.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;
use zot_protocol::zot::{self, ContentBlock};

/// A tool's answer to the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolResult {
    pub content: Vec<Content>,
    /// Marks the call as failed.
    pub is_error: bool,
    /// Registered deferred tools that become available after this result.
    pub activate_tools: Vec<String>,
}

/// One block of a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    Text(String),
    Image {
        mime_type: String,
        /// Standard base64.
        data: String,
    },
}

impl ToolResult {
    /// An empty, successful result to add blocks to.
    pub fn new() -> Self {
        Self::default()
    }

    /// One text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    /// One text block, marked as failed.
    pub fn error(text: impl Into<String>) -> Self {
        Self::text(text).failed()
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(Content::Text(text.into()));
        self
    }

    /// Adds an image; `base64` is the standard-base64 encoded file.
    pub fn with_image(mut self, mime_type: impl Into<String>, base64: impl Into<String>) -> Self {
        self.content.push(Content::Image {
            mime_type: mime_type.into(),
            data: base64.into(),
        });
        self
    }

    pub fn failed(mut self) -> Self {
        self.is_error = true;
        self
    }

    /// Makes registered deferred tools available to the model from the next request on.
    pub fn activate_tools<I>(mut self, names: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.activate_tools
            .extend(names.into_iter().map(Into::into));
        self
    }

    pub(crate) fn into_frame(self, id: String) -> zot::ToolResult {
        let content = self
            .content
            .into_iter()
            .map(|block| match block {
                Content::Text(text) => ContentBlock::Text { text },
                Content::Image { mime_type, data } => ContentBlock::Image { mime_type, data },
            })
            .collect();
        zot::ToolResult {
            id,
            content,
            is_error: self.is_error,
            activate_tools: self.activate_tools,
        }
    }
}

/// The argument schema of a typed tool: self-contained (sub-schemas inlined,
/// no `$schema`/`title`), since model APIs take one plain object schema.
pub(crate) fn args_schema<A: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let mut schema = settings.into_generator().into_root_schema_for::<A>();
    schema.remove("title");
    schema.to_value()
}

/// Why a schema cannot describe tool arguments, if it cannot.
pub(crate) fn schema_problem(schema: &Value) -> Option<String> {
    match schema {
        Value::Object(map) => match map.get("type") {
            Some(Value::String(t)) if t == "object" => None,
            Some(other) => Some(format!("\"type\" is {other}")),
            None => Some("no \"type\"".to_owned()),
        },
        other => Some(format!("the schema is not an object: {other}")),
    }
}
