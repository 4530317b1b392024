//! Which provider, which key: `--api-key`, then `ANTHROPIC_API_KEY` /
//! `OPENAI_API_KEY` (a named provider's `api_key_env`), then
//! `$ZOT_HOME/auth.json` (kept 0600). ollama needs none. A named provider's
//! stored key is bound to the base URL it was stored for and sent nowhere else.

use std::path::Path;

use anyhow::{Context as _, bail};
use zot_core::provider::{ProviderConfig, ProviderKind, Wire};
use zot_extensions::atomic_file::write_private;

use crate::args::{AgentArgs, AuthCommand};
use crate::providers::{self, Named};

/// The env var that holds a provider's key.
pub fn env_var(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
        ProviderKind::OpenAi => Some("OPENAI_API_KEY"),
        ProviderKind::Ollama => None,
    }
}

/// A key from `$ZOT_HOME/auth.json` (`{"anthropic": {"api_key": "…"}}`)
/// with the base URL it is bound to, when it was stored with one.
fn stored_entry(zot_home: &Path, name: &str) -> anyhow::Result<Option<(String, Option<String>)>> {
    let path = zot_home.join("auth.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: invalid JSON", path.display()))?;
    let entry = &value[name];
    Ok(entry["api_key"].as_str().map(|key| {
        let bound = entry["base_url"].as_str().map(str::to_owned);
        (key.to_owned(), bound)
    }))
}

fn stored_key(zot_home: &Path, kind: ProviderKind) -> anyhow::Result<Option<String>> {
    Ok(stored_entry(zot_home, kind.name())?.map(|(key, _)| key))
}

/// Whether a key is stored for `named`, but for another base URL (and so
/// not sent to its own).
pub fn stored_elsewhere(zot_home: &Path, named: &Named) -> bool {
    stored_entry(zot_home, &named.name)
        .ok()
        .flatten()
        .is_some_and(|(_, bound)| bound.as_deref() != Some(named.base_url.as_str()))
}

/// A named provider's key and where it was found: `--api-key`, its
/// `api_key_env`, or the key stored for its base URL. `Err` says why
/// there is none (a key stored for another URL is never sent here).
pub fn named_key(
    args: &AgentArgs,
    zot_home: &Path,
    named: &Named,
) -> anyhow::Result<Result<(String, String), String>> {
    if let Some(key) = &args.api_key {
        return Ok(Ok((key.clone(), "--api-key".to_owned())));
    }
    if let Some(var) = &named.api_key_env
        && let Some(key) = std::env::var(var).ok().filter(|k| !k.is_empty())
    {
        return Ok(Ok((key, format!("env {var}"))));
    }
    let name = &named.name;
    let login = format!("`echo $KEY | zot auth login {name}`");
    Ok(match stored_entry(zot_home, name)? {
        Some((key, Some(bound))) if bound == named.base_url => {
            Ok((key, zot_home.join("auth.json").display().to_string()))
        }
        Some((_, bound)) => Err(format!(
            "the key stored for {name} was stored for {}, not {}, and is not sent there; \
             store one for this URL with {login}",
            bound.as_deref().unwrap_or("no base URL"),
            named.base_url
        )),
        None => Err(match &named.api_key_env {
            Some(var) => format!(
                "no API key for {name}: set {var}, or store one with {login} (or pass --api-key)"
            ),
            None => format!("no API key for {name}: store one with {login} (or pass --api-key)"),
        }),
    })
}

fn key_for(
    args: &AgentArgs,
    zot_home: &Path,
    kind: ProviderKind,
) -> anyhow::Result<Option<String>> {
    Ok(find_key(args, zot_home, kind)?.map(|(key, _)| key))
}

/// The key for `kind` and where it was found: `--api-key`, the env var,
/// or `$ZOT_HOME/auth.json`.
pub fn find_key(
    args: &AgentArgs,
    zot_home: &Path,
    kind: ProviderKind,
) -> anyhow::Result<Option<(String, String)>> {
    if let Some(key) = &args.api_key {
        return Ok(Some((key.clone(), "--api-key".to_owned())));
    }
    if let Some(var) = env_var(kind)
        && let Some(key) = std::env::var(var).ok().filter(|k| !k.is_empty())
    {
        return Ok(Some((key, format!("env {var}"))));
    }
    let path = zot_home.join("auth.json");
    Ok(stored_key(zot_home, kind)?.map(|key| (key, path.display().to_string())))
}

/// Resolves the provider: the one named with `--provider`, else the first
/// of anthropic, openai that has a key. Without a key this is not an error
/// yet: the provider comes back with an empty key and the message to show
/// when the first model request is about to be made (extension commands
/// need no model, so they work without any key).
pub fn resolve(
    args: &AgentArgs,
    zot_home: &Path,
) -> anyhow::Result<(ProviderConfig, Option<String>)> {
    if let Some(name) = args
        .provider
        .as_deref()
        .filter(|n| !providers::is_builtin(n))
    {
        let named = named(zot_home, name)?;
        return resolve_named(args, zot_home, named);
    }
    let kinds = match &args.provider {
        Some(name) => match ProviderKind::parse(name) {
            Some(kind) => vec![kind],
            None => bail!("unknown provider \"{name}\" (use anthropic, openai or ollama)"),
        },
        None => vec![ProviderKind::Anthropic, ProviderKind::OpenAi],
    };
    let wire = match args.api.as_deref() {
        None => None,
        Some(name) => match Wire::parse(name) {
            Some(wire @ (Wire::Chat | Wire::Responses)) => Some(wire),
            _ => bail!("unknown API \"{name}\" (use responses or chat)"),
        },
    };
    let config = |kind: ProviderKind, api_key: String| {
        let base_url = args
            .base_url
            .clone()
            .unwrap_or_else(|| kind.default_base_url().to_owned());
        let base_url = base_url.trim_end_matches('/').to_owned();
        // `api` is for OpenAI-style servers: Anthropic speaks only its own.
        let wire = match (kind, wire) {
            (ProviderKind::Anthropic, _) | (_, None) => kind.default_wire(&base_url),
            (_, Some(wire)) => wire,
        };
        ProviderConfig::builtin(kind, base_url, api_key, wire)
    };
    for &kind in &kinds {
        let key = if kind == ProviderKind::Ollama {
            Some(args.api_key.clone().unwrap_or_default())
        } else {
            key_for(args, zot_home, kind)?
        };
        if let Some(api_key) = key {
            return Ok((config(kind, api_key), None));
        }
    }
    Ok((
        config(kinds[0], String::new()),
        Some(missing_message(args.provider.is_some().then_some(kinds[0]))),
    ))
}

/// The named provider (configured or a preset) called `name`.
pub fn named(zot_home: &Path, name: &str) -> anyhow::Result<Named> {
    let configured = providers::load(zot_home);
    providers::find(&configured, name).with_context(|| {
        format!(
            "unknown provider \"{name}\" (use {}, a preset: {}, or define it under \"providers\" in {})",
            providers::names(&configured),
            providers::preset_names(),
            crate::paths::user_path(zot_home).display()
        )
    })
}

/// Checks that `name` is a provider zot can use (`zot config set provider`).
pub fn named_or_builtin(zot_home: &Path, name: &str) -> anyhow::Result<()> {
    if !providers::is_builtin(name) {
        named(zot_home, name)?;
    }
    Ok(())
}

/// A named provider's config: its own API (`--api` is for the built-in
/// OpenAI provider), `--base-url` if given, and its key.
fn resolve_named(
    args: &AgentArgs,
    zot_home: &Path,
    mut named: Named,
) -> anyhow::Result<(ProviderConfig, Option<String>)> {
    if let Some(url) = &args.base_url {
        url.trim_end_matches('/').clone_into(&mut named.base_url);
    }
    Ok(match named_key(args, zot_home, &named)? {
        Ok((key, _)) => (named.config(key), None),
        Err(_) if !named.needs_key() => (named.config(String::new()), None),
        Err(why) => (named.config(String::new()), Some(why)),
    })
}

/// What to tell a user without a key: exactly which variable, `zot auth
/// login` or `--provider ollama`. `named` is the provider asked for, if any.
pub fn missing_message(named: Option<ProviderKind>) -> String {
    match named.and_then(|k| env_var(k).map(|var| (k, var))) {
        Some((kind, var)) => format!(
            "no API key for {name}: set {var}, or store one with `echo $KEY | zot auth login {name}` \
             (or pass --api-key); for a local model without a key use --provider ollama --model <name>",
            name = kind.name()
        ),
        None => "no API key: set ANTHROPIC_API_KEY (or OPENAI_API_KEY with --provider openai), \
             or store one with `echo $KEY | zot auth login anthropic` (or pass --api-key); \
             for a local model without a key use --provider ollama --model <name>"
            .to_owned(),
    }
}

/// `zot auth login|logout <provider>`: keys live in `$ZOT_HOME/auth.json`,
/// written atomically with mode 0600 so no other user can read them.
pub fn auth_command(
    zot_home: &Path,
    command: &AuthCommand,
) -> anyhow::Result<std::process::ExitCode> {
    let (AuthCommand::Login { provider } | AuthCommand::Logout { provider }) = command;
    // A named provider's key is bound to its base URL: sent nowhere else.
    let (name, bound) = match ProviderKind::parse(provider) {
        Some(ProviderKind::Ollama) => bail!("ollama needs no key"),
        Some(kind) => (kind.name().to_owned(), None),
        None => {
            let named = named(zot_home, provider)?;
            (named.name, Some(named.base_url))
        }
    };
    let path = zot_home.join("auth.json");
    let mut value: serde_json::Value = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{}: invalid JSON", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::json!({}),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let Some(map) = value.as_object_mut() else {
        bail!("{}: must be a JSON object", path.display());
    };
    match command {
        AuthCommand::Login { .. } => {
            let mut key = String::new();
            std::io::stdin()
                .read_line(&mut key)
                .context("cannot read the key from stdin")?;
            let key = key.trim();
            if key.is_empty() {
                bail!("no key on stdin (pipe it in: `echo $KEY | zot auth login {name}`)");
            }
            let mut entry = serde_json::json!({"api_key": key});
            if let Some(url) = &bound {
                entry["base_url"] = serde_json::Value::from(url.as_str());
            }
            map.insert(name.clone(), entry);
        }
        AuthCommand::Logout { .. } => {
            if map.remove(&name).is_none() {
                errln!("no stored key for {name}");
                return Ok(std::process::ExitCode::SUCCESS);
            }
        }
    }
    zot_core::session::private_dir(zot_home)
        .with_context(|| format!("cannot create {}", zot_home.display()))?;
    write_private(&path, &serde_json::to_vec_pretty(&value)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let verb = if matches!(command, AuthCommand::Login { .. }) {
        "stored"
    } else {
        "removed"
    };
    let only = match (&bound, verb) {
        (Some(url), "stored") => format!(" (sent only to {url})"),
        _ => String::new(),
    };
    errln!("{verb} the {name} key in {}{only}", path.display());
    Ok(std::process::ExitCode::SUCCESS)
}
