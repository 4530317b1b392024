//! Named providers: `providers` in the user's `config.json` (a name mapped to
//! a base URL, an API, where its key comes from, extra headers and models)
//! and the presets a user enables by name alone. Each is an Anthropic- or
//! OpenAI-compatible server used like a built-in provider.

use std::path::Path;

use serde_json::{Map, Value};
use zot_core::models::{self, ModelInfo};
use zot_core::provider::{ProviderConfig, ProviderKind, Wire};

/// The built-in providers, whose names a named provider cannot take.
pub const BUILTIN: &[&str] = &["anthropic", "openai", "ollama"];

/// Headers that carry a key: a provider with one needs no other.
const AUTH_HEADERS: &[&str] = &["authorization", "x-api-key", "api-key"];

/// A vendor's documented endpoint, enabled by its name
/// (`"providers": {"groq": {}}`, or `--provider groq`).
pub struct Preset {
    pub name: &'static str,
    pub base_url: &'static str,
    pub wire: Wire,
    /// The variable the vendor's documentation keeps the key in; `None`
    /// for a local server, which needs none.
    pub api_key_env: Option<&'static str>,
}

/// Each with the base URL and key variable documented for OpenAI SDK
/// clients: OpenRouter, DeepSeek, Groq and xAI on their own pages
/// (openrouter.ai/docs/quickstart, api-docs.deepseek.com,
/// console.groq.com/docs/openai, docs.x.ai/api/integrations); Mistral,
/// Moonshot and Gemini's OpenAI-compatible endpoint as the integrations
/// built on them document them. LM Studio and vLLM at their local
/// servers' default ports.
pub const PRESETS: &[Preset] = &[
    preset(
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
    ),
    preset("deepseek", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
    preset("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    preset("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    preset("xai", "https://api.x.ai/v1", "XAI_API_KEY"),
    preset("moonshot", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY"),
    preset(
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GEMINI_API_KEY",
    ),
    Preset {
        name: "lmstudio",
        base_url: "http://localhost:1234/v1",
        wire: Wire::Chat,
        api_key_env: None,
    },
    Preset {
        name: "vllm",
        base_url: "http://localhost:8000/v1",
        wire: Wire::Chat,
        api_key_env: None,
    },
];

const fn preset(name: &'static str, base_url: &'static str, var: &'static str) -> Preset {
    Preset {
        name,
        base_url,
        wire: Wire::Chat,
        api_key_env: Some(var),
    }
}

/// A provider of the user's config (or a preset), resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    pub name: String,
    /// Without a trailing slash.
    pub base_url: String,
    pub wire: Wire,
    pub api_key_env: Option<String>,
    pub headers: Vec<(String, String)>,
    pub models: Vec<ModelInfo>,
}

impl Named {
    /// The family its API belongs to: the defaults of an unknown model.
    pub fn kind(&self) -> ProviderKind {
        match self.wire {
            Wire::Messages => ProviderKind::Anthropic,
            Wire::Chat | Wire::Responses => ProviderKind::OpenAi,
        }
    }

    /// How to reach it with `api_key` (empty: none sent).
    pub fn config(&self, api_key: String) -> ProviderConfig {
        ProviderConfig {
            name: self.name.clone(),
            kind: self.kind(),
            base_url: self.base_url.clone(),
            api_key,
            wire: self.wire,
            headers: self.headers.clone(),
        }
    }

    /// Whether it needs a key: not for a server on this machine, nor for
    /// one whose headers carry its authentication.
    pub fn needs_key(&self) -> bool {
        let auth_header = self.headers.iter().any(|(name, _)| {
            AUTH_HEADERS
                .iter()
                .any(|auth| name.eq_ignore_ascii_case(auth))
        });
        !is_loopback_url(&self.base_url) && !auth_header
    }

    /// The model used when none is named: its first configured one.
    pub fn default_model(&self) -> Option<&str> {
        self.models.first().map(|m| m.id.as_str())
    }

    fn from_preset(preset: &Preset) -> Self {
        Self {
            name: preset.name.to_owned(),
            base_url: preset.base_url.to_owned(),
            wire: preset.wire,
            api_key_env: preset.api_key_env.map(str::to_owned),
            headers: Vec::new(),
            models: Vec::new(),
        }
    }
}

/// Whether `name` is a built-in provider.
pub fn is_builtin(name: &str) -> bool {
    ProviderKind::parse(name).is_some()
}

/// Parses the `providers` object of the user config, every rule checked:
/// the message names the provider and the field.
pub fn parse(value: &Value) -> Result<Vec<Named>, String> {
    let Some(map) = value.as_object() else {
        return Err("\"providers\" must be an object of named providers".into());
    };
    map.iter()
        .map(|(name, entry)| parse_one(name, entry))
        .collect()
}

fn parse_one(name: &str, entry: &Value) -> Result<Named, String> {
    let at = |field: &str, why: &str| format!("\"providers\".\"{name}\".{field} {why}");
    if is_builtin(name) {
        return Err(format!(
            "\"providers\".\"{name}\": {name} is built in and cannot be redefined (use another name)"
        ));
    }
    check_name(name)?;
    let Some(fields) = entry.as_object() else {
        return Err(format!(
            "\"providers\".\"{name}\" must be an object ({{}} enables a preset)"
        ));
    };
    const FIELDS: &[&str] = &["base_url", "api", "api_key_env", "headers", "models"];
    if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "\"providers\".\"{name}\": unknown field \"{unknown}\" (known: {})",
            FIELDS.join(", ")
        ));
    }
    let preset = PRESETS.iter().find(|p| p.name == name);
    let text = |field: &str| -> Result<Option<String>, String> {
        match fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
            Some(_) => Err(at(field, "must be a non-empty string")),
        }
    };
    let base_url = match (text("base_url")?, preset) {
        (Some(url), _) => url,
        (None, Some(preset)) => preset.base_url.to_owned(),
        (None, None) => {
            return Err(format!(
                "\"providers\".\"{name}\" needs a base_url (presets: {})",
                preset_names()
            ));
        }
    };
    let base_url = check_base_url(&base_url).map_err(|why| at("base_url", &why))?;
    let wire = match text("api")? {
        Some(api) => match Wire::parse(&api) {
            Some(wire) => wire,
            None => return Err(at("api", "must be anthropic, chat or responses")),
        },
        None => preset.map_or(Wire::Chat, |p| p.wire),
    };
    let api_key_env = match text("api_key_env")? {
        Some(var) if is_env_name(&var) => Some(var),
        Some(_) => return Err(at("api_key_env", "must be an environment variable's name")),
        None => preset.and_then(|p| p.api_key_env.map(str::to_owned)),
    };
    let headers = match fields.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(headers)) => headers_of(headers).map_err(|why| at("headers", &why))?,
        Some(_) => return Err(at("headers", "must be an object of header names to values")),
    };
    let models = match fields.get("models") {
        None | Some(Value::Null) => Vec::new(),
        Some(list) => models::parse_provider_models(name, list)
            .map_err(|e| at("models", &format!("is not a list of models: {e}")))?,
    };
    if let Some(other) = models.iter().find(|m| m.provider != name) {
        return Err(at(
            "models",
            &format!("lists {} of provider {}", other.id, other.provider),
        ));
    }
    Ok(Named {
        name: name.to_owned(),
        base_url,
        wire,
        api_key_env,
        headers,
        models,
    })
}

/// Whether `name` can name a provider: `PROVIDER:ID` can split it and a
/// file name carry it.
pub fn valid_name(name: &str) -> bool {
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
}

fn check_name(name: &str) -> Result<(), String> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(format!(
            "\"providers\".\"{name}\": a provider's name is letters, digits, '-', '_' and '.'"
        ))
    }
}

fn is_env_name(var: &str) -> bool {
    var.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn headers_of(headers: &Map<String, Value>) -> Result<Vec<(String, String)>, String> {
    let headers = headers
        .iter()
        .map(|(name, value)| match value.as_str() {
            Some(value) => Ok((name.clone(), value.to_owned())),
            None => Err(format!("\"{name}\" must be a string")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    zot_core::provider::header_map(&headers)?;
    Ok(headers)
}

/// `url` without its trailing slash, when it is https, or plain http to
/// this machine: a key must not cross the network in plain text.
pub fn check_base_url(url: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("is not a URL ({e}): {url}"))?;
    match parsed.scheme() {
        "https" => {}
        "http"
            if parsed
                .host_str()
                .is_some_and(zot_core::provider::is_loopback) => {}
        "http" => {
            return Err(format!(
                "must be https unless it is this machine (localhost, 127.0.0.0/8, ::1): {url}"
            ));
        }
        other => return Err(format!("must be an https URL, not {other}: {url}")),
    }
    Ok(url.trim_end_matches('/').to_owned())
}

fn is_loopback_url(url: &str) -> bool {
    reqwest::Url::parse(url)
        .ok()
        .is_some_and(|u| u.host_str().is_some_and(zot_core::provider::is_loopback))
}

/// The presets' names, for messages.
pub fn preset_names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The named providers of `$ZOT_HOME/config.json` (a project's config may
/// never set them). A broken entry is the config's error, reported where
/// the file is read; here it only leaves the providers out.
pub fn load(zot_home: &Path) -> Vec<Named> {
    let path = crate::paths::user_path(zot_home);
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|config| parse(config.get("providers")?).ok())
        .unwrap_or_default()
}

/// The provider called `name`: the user's, else a preset of that name.
pub fn find(configured: &[Named], name: &str) -> Option<Named> {
    configured
        .iter()
        .find(|n| n.name == name)
        .cloned()
        .or_else(|| {
            PRESETS
                .iter()
                .find(|p| p.name == name)
                .map(Named::from_preset)
        })
}

/// Whether `name` is a provider zot can use: built in, configured or a preset.
pub fn known(configured: &[Named], name: &str) -> bool {
    is_builtin(name) || find(configured, name).is_some()
}

/// Every provider name, for messages: the built-in ones, then the user's.
pub fn names(configured: &[Named]) -> String {
    let mut names: Vec<&str> = BUILTIN.to_vec();
    names.extend(configured.iter().map(|n| n.name.as_str()));
    names.join(", ")
}

/// A key as it may be shown: its first and last four characters.
pub fn mask(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() < 12 {
        return "*".repeat(chars.len().min(8));
    }
    let head: String = chars[..4].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}…{tail}")
}

/// `providers` as it may be shown: header values masked.
pub fn masked(value: &Value) -> Value {
    let mut value = value.clone();
    for entry in value
        .as_object_mut()
        .into_iter()
        .flat_map(|m| m.values_mut())
    {
        if let Some(headers) = entry.get_mut("headers").and_then(Value::as_object_mut) {
            for header in headers.values_mut() {
                if let Some(text) = header.as_str() {
                    *header = Value::from(mask(text));
                }
            }
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn presets_fill_what_is_left_out_and_entries_override_them() {
        let named = parse(&json!({
            "groq": {},
            "deepseek": {"api_key_env": "MY_DS"},
            "work": {"base_url": "https://llm.example.com/v1/", "api": "anthropic",
                     "headers": {"X-Org": "42"},
                     "models": [{"id": "m1", "context_window": 1000, "max_output": 100}]},
        }))
        .unwrap();
        assert_eq!(named[0].base_url, "https://api.groq.com/openai/v1");
        assert_eq!(named[0].api_key_env.as_deref(), Some("GROQ_API_KEY"));
        assert_eq!(named[1].api_key_env.as_deref(), Some("MY_DS"));
        let work = &named[2];
        assert_eq!(work.base_url, "https://llm.example.com/v1");
        assert_eq!(work.kind(), ProviderKind::Anthropic);
        assert_eq!(work.models[0].provider, "work");
        assert_eq!(work.default_model(), Some("m1"));
        assert!(work.needs_key());
        let gateway = parse(&json!({"gw": {"base_url": "https://gw.example",
            "headers": {"Authorization": "Bearer k"}}}))
        .unwrap();
        assert!(!gateway[0].needs_key());
        assert!(named[0].needs_key());
        let lmstudio = find(&[], "lmstudio").unwrap();
        assert_eq!(lmstudio.base_url, "http://localhost:1234/v1");
        assert!(!lmstudio.needs_key());
    }

    #[test]
    fn the_rules_are_errors_naming_provider_and_field() {
        let error = |value: Value| parse(&value).unwrap_err();
        assert!(error(json!({"openai": {"base_url": "https://x"}})).contains("built in"));
        assert!(error(json!({"x": {"base_url": "http://10.0.0.2/v1"}})).contains("must be https"));
        assert!(error(json!({"x": {}})).contains("needs a base_url"));
        assert!(error(json!({"x": {"base_url": "https://h", "api": "grpc"}})).contains(".api"));
        assert!(error(json!({"x": {"base_url": "https://h", "key": "k"}})).contains("\"key\""));
        assert!(error(json!({"a:b": {"base_url": "https://h"}})).contains("name"));
        assert!(
            error(json!({"x": {"base_url": "https://h", "headers": {"X": "a\nb"}}}))
                .contains("headers")
        );
        assert!(parse(&json!({"x": {"base_url": "http://127.0.0.1:9/v1"}})).is_ok());
        assert!(parse(&json!({"x": {"base_url": "http://[::1]:9"}})).is_ok());
    }

    #[test]
    fn header_values_are_masked() {
        let shown =
            masked(&json!({"x": {"headers": {"Authorization": "Bearer sk-0123456789abcdef"}}}));
        let value = shown["x"]["headers"]["Authorization"].as_str().unwrap();
        assert!(!value.contains("0123456789"), "{value}");
    }
}
