//! Which provider, which key: `--api-key`, then `ANTHROPIC_API_KEY` /
//! `OPENAI_API_KEY`, then `$ZOT_HOME/auth.json` (kept 0600). ollama needs none.

use std::path::Path;

use anyhow::{Context as _, bail};
use zot_core::provider::{ProviderConfig, ProviderKind};

use crate::args::AgentArgs;

/// The env var that holds a provider's key.
pub fn env_var(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
        ProviderKind::OpenAi => Some("OPENAI_API_KEY"),
        ProviderKind::Ollama => None,
    }
}

/// A key from `$ZOT_HOME/auth.json` (`{"anthropic": {"api_key": "…"}}`).
fn stored_key(zot_home: &Path, kind: ProviderKind) -> anyhow::Result<Option<String>> {
    let path = zot_home.join("auth.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: invalid JSON", path.display()))?;
    Ok(value[kind.name()]["api_key"].as_str().map(str::to_owned))
}

fn key_for(
    args: &AgentArgs,
    zot_home: &Path,
    kind: ProviderKind,
) -> anyhow::Result<Option<String>> {
    if let Some(key) = &args.api_key {
        return Ok(Some(key.clone()));
    }
    if let Some(var) = env_var(kind)
        && let Some(key) = std::env::var(var).ok().filter(|k| !k.is_empty())
    {
        return Ok(Some(key));
    }
    stored_key(zot_home, kind)
}

/// Resolves the provider: the one named with `--provider`, else the first
/// of anthropic, openai that has a key.
pub fn resolve(args: &AgentArgs, zot_home: &Path) -> anyhow::Result<ProviderConfig> {
    let kinds = match &args.provider {
        Some(name) => match ProviderKind::parse(name) {
            Some(kind) => vec![kind],
            None => bail!("unknown provider \"{name}\" (use anthropic, openai or ollama)"),
        },
        None => vec![ProviderKind::Anthropic, ProviderKind::OpenAi],
    };
    for &kind in &kinds {
        let key = if kind == ProviderKind::Ollama {
            Some(args.api_key.clone().unwrap_or_default())
        } else {
            key_for(args, zot_home, kind)?
        };
        if let Some(api_key) = key {
            let base_url = args
                .base_url
                .clone()
                .unwrap_or_else(|| kind.default_base_url().to_owned());
            return Ok(ProviderConfig {
                kind,
                base_url: base_url.trim_end_matches('/').to_owned(),
                api_key,
            });
        }
    }
    let wanted = kinds
        .iter()
        .filter_map(|k| env_var(*k))
        .collect::<Vec<_>>()
        .join(" or ");
    bail!(
        "no API key: pass --api-key, set {wanted}, or add it to {}; for a local model use --provider ollama",
        zot_home.join("auth.json").display()
    )
}
