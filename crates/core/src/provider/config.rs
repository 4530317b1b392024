//! Where and how to reach a provider: its kind, the wire API it speaks, the
//! request options a user picks (reasoning, prompt cache lifetime) and the
//! extra headers. Imports nothing of the crate, so the model table and every
//! wire format build on it.

use serde::Deserialize;

/// An API that serves a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wire {
    /// Anthropic Messages.
    Messages,
    /// OpenAI chat completions.
    Chat,
    /// OpenAI Responses.
    Responses,
}

impl Wire {
    /// `--api`'s names: `chat` and `responses` (OpenAI-style servers), and
    /// `anthropic` for the Messages API.
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "anthropic" | "messages" => Some(Self::Messages),
            "chat" => Some(Self::Chat),
            "responses" => Some(Self::Responses),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Messages => "anthropic",
            Self::Chat => "chat",
            Self::Responses => "responses",
        }
    }
}

/// Which wire format, and the defaults that go with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Anthropic,
    OpenAi,
    Ollama,
}

impl ProviderKind {
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "anthropic" => Some(Self::Anthropic),
            "openai" => Some(Self::OpenAi),
            "ollama" => Some(Self::Ollama),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::Ollama => "ollama",
        }
    }

    /// The wire API it speaks unless told otherwise (`--api`): OpenAI's own
    /// endpoint serves its current models through the Responses API (the
    /// codex ones only there); other compatible servers and ollama speak
    /// chat completions.
    pub fn default_wire(self, base_url: &str) -> Wire {
        match self {
            Self::Anthropic => Wire::Messages,
            Self::OpenAi if is_openai(base_url) => Wire::Responses,
            Self::OpenAi | Self::Ollama => Wire::Chat,
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Anthropic => "https://api.anthropic.com",
            Self::OpenAi => "https://api.openai.com",
            Self::Ollama => "http://localhost:11434",
        }
    }
}

/// How hard the model should think (`--reasoning`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasoning {
    Low,
    Medium,
    High,
}

impl Reasoning {
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// How long a prompt cache entry lives (the `cache` setting): Anthropic
/// keeps a marked prefix for 5 minutes (refreshed by every hit) or an hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheTtl {
    Off,
    #[default]
    FiveMinutes,
    OneHour,
}

impl CacheTtl {
    /// `"5m"`, `"1h"` or `"off"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "5m" => Some(Self::FiveMinutes),
            "1h" => Some(Self::OneHour),
            "off" => Some(Self::Off),
            _ => None,
        }
    }
}

/// Where and how to reach a provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// What the user calls it: a built-in kind's name, or a named provider
    /// of the user's config (`openrouter`) whose API is `kind`'s.
    pub name: String,
    pub kind: ProviderKind,
    /// Without a trailing slash.
    pub base_url: String,
    /// Empty for ollama.
    pub api_key: String,
    /// The wire API: `Messages` for Anthropic, `Chat` or `Responses` for
    /// OpenAI-style servers.
    pub wire: Wire,
    /// Extra headers sent with every request (a named provider's `headers`).
    pub headers: Vec<(String, String)>,
}

impl ProviderConfig {
    /// A built-in provider's config: named after its kind, no extra headers.
    pub fn builtin(kind: ProviderKind, base_url: String, api_key: String, wire: Wire) -> Self {
        Self {
            name: kind.name().to_owned(),
            kind,
            base_url,
            api_key,
            wire,
            headers: Vec::new(),
        }
    }
}

/// Extra headers as a client's defaults, marked sensitive (they may carry a
/// key); a name or value HTTP cannot carry is an error naming the header.
pub fn header_map(headers: &[(String, String)]) -> Result<reqwest::header::HeaderMap, String> {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let key = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("\"{name}\" is not a valid header name"))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            format!("header {name}: the value has characters a header cannot carry")
        })?;
        value.set_sensitive(true);
        map.insert(key, value);
    }
    Ok(map)
}

/// Whether `base_url` is OpenAI's own API, which takes `prompt_cache_key`
/// (other compatible servers may reject fields they do not know) and serves
/// its current models through the Responses API.
pub(crate) fn is_openai(base_url: &str) -> bool {
    let rest = base_url.strip_prefix("https://").unwrap_or_default();
    let host = rest.split(['/', ':']).next().unwrap_or_default();
    host.eq_ignore_ascii_case("api.openai.com")
}
