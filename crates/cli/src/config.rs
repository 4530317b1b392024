//! Settings from `$ZOT_HOME/config.json` (the user config) and the
//! project's `.zot/config.json` (the `zot config` command is `config_cmd.rs`).
//!
//! Precedence: flags > environment (`ZOT_PROVIDER`, `ZOT_MODEL`,
//! `ZOT_BASE_URL`) > project file > user file > defaults. A project file may
//! only set [`PROJECT_KEYS`]; anything else in it is ignored with a warning,
//! so a cloned repository cannot send your key to another server. Unknown
//! keys in the user file are kept when zot rewrites it (key order too) and
//! named in a warning. A malformed user file is an error naming the file,
//! line and column; a malformed project file is a warning and is skipped.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::{Map, Value};
use zot_core::provider::{CacheTtl, ProviderKind};
use zot_extensions::atomic_file::write_atomically;

use crate::args::AgentArgs;
use crate::paths::{project_path, user_path};

/// Every key the user config knows, in the order zot shows them.
pub const KEYS: &[&str] = &[
    "provider",
    "model",
    "base_url",
    "api",
    "reasoning",
    "theme",
    "yolo",
    "max_steps",
    "auto_compact",
    "sandbox",
    "sandbox_net",
    "hooks",
    "bash_timeout",
    "web_fetch.allow_private",
    "cache",
    "subagent_model",
    "providers",
];

/// The keys a project's `.zot/config.json` may set.
pub const PROJECT_KEYS: &[&str] = &[
    "model",
    "reasoning",
    "max_steps",
    "auto_compact",
    "subagent_model",
];

/// The environment variables that set a key.
pub const ENV: &[(&str, &str)] = &[
    ("provider", "ZOT_PROVIDER"),
    ("model", "ZOT_MODEL"),
    ("base_url", "ZOT_BASE_URL"),
];

/// The default automatic compaction threshold, in percent of the context window.
pub const DEFAULT_AUTO_COMPACT: u64 = 85;

/// Where a value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag,
    Env(&'static str),
    Project(PathBuf),
    User(PathBuf),
    Default,
}

impl Source {
    /// `flag`, `env`, `project`, `user` or `default`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Flag => "flag",
            Self::Env(_) => "env",
            Self::Project(_) => "project",
            Self::User(_) => "user",
            Self::Default => "default",
        }
    }

    /// The variable or file, when there is one.
    pub fn origin(&self) -> Option<String> {
        match self {
            Self::Env(var) => Some((*var).to_owned()),
            Self::Project(path) | Self::User(path) => Some(path.display().to_string()),
            Self::Flag | Self::Default => None,
        }
    }

    pub fn describe(&self) -> String {
        match self.origin() {
            Some(origin) => format!("{} {origin}", self.kind()),
            None => self.kind().to_owned(),
        }
    }
}

/// The settings below the flags: environment, project file, user file.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Effective values by key (in [`KEYS`] order), with their source.
    values: Vec<(&'static str, Value, Source)>,
    /// Unknown keys of the user file, kept but unused.
    pub unknown: Vec<(String, Value)>,
    /// What to tell the user (unknown keys, refused project keys, a broken project file).
    pub warnings: Vec<String>,
    /// The user file's named providers (`providers`).
    pub providers: Vec<crate::providers::Named>,
}

impl Settings {
    /// Reads both files and the environment. A malformed user file is an error.
    pub fn load(zot_home: &Path, project: &Path) -> anyhow::Result<Self> {
        let env = |var: &str| std::env::var(var).ok().filter(|v| !v.is_empty());
        Self::load_with(zot_home, project, env)
    }

    /// [`Settings::load`] with the environment given (tests).
    pub fn load_with(
        zot_home: &Path,
        project: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Self> {
        let mut settings = Self::default();
        let user_file = user_path(zot_home);
        let user = read_user(&user_file)?;
        let project_file = project_path(project);
        let project = match read_object(&project_file) {
            Ok(map) => map.unwrap_or_default(),
            Err(e) => {
                settings
                    .warnings
                    .push(format!("{e:#}; the project config is ignored"));
                Map::new()
            }
        };
        if let Some(value) = user.get("providers") {
            // `read_user` has checked it: this parse cannot fail.
            settings.providers = crate::providers::parse(value).unwrap_or_default();
        }
        for (key, value) in &user {
            if !KEYS.contains(&key.as_str()) {
                settings.warnings.push(format!(
                    "{}: unknown key \"{key}\" (kept, not used)",
                    user_file.display()
                ));
                settings.unknown.push((key.clone(), value.clone()));
            }
        }
        for (key, value) in &project {
            if !PROJECT_KEYS.contains(&key.as_str()) {
                settings.warnings.push(format!(
                    "{}: \"{key}\" is ignored: a project config may only set {}",
                    project_file.display(),
                    PROJECT_KEYS.join(", ")
                ));
            } else if let Err(e) = check(key, value) {
                settings
                    .warnings
                    .push(format!("{}: {e}; ignored", project_file.display()));
            }
        }
        for &key in KEYS {
            let from_env = ENV
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|&(_, var)| env(var).map(|v| (Value::String(v), Source::Env(var))));
            let from_project = project
                .get(key)
                .filter(|v| PROJECT_KEYS.contains(&key) && check(key, v).is_ok())
                .map(|v| (v.clone(), Source::Project(project_file.clone())));
            let from_user = user
                .get(key)
                .map(|v| (v.clone(), Source::User(user_file.clone())));
            if let Some((value, source)) = from_env.or(from_project).or(from_user) {
                settings.values.push((key, value, source));
            }
        }
        Ok(settings)
    }

    /// The effective value of `key` below the flags, with its source.
    pub fn get(&self, key: &str) -> Option<(&Value, &Source)> {
        self.values
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, v, s)| (v, s))
    }

    fn string(&self, key: &str) -> Option<String> {
        self.get(key)
            .and_then(|(v, _)| v.as_str())
            .map(str::to_owned)
    }

    /// Fills every option the flags left unset from these settings.
    pub fn apply(&mut self, args: &mut AgentArgs) {
        let fill = |slot: &mut Option<String>, key: &str| {
            if slot.is_none() {
                *slot = self.string(key);
            }
        };
        fill(&mut args.provider, "provider");
        let model_given = args.model.is_some();
        fill(&mut args.model, "model");
        // `base_url` and `api` are the built-in providers' settings: a named
        // provider has its own (only the flags override them for a run).
        let named = args
            .provider
            .as_deref()
            .is_some_and(|p| !crate::providers::is_builtin(p));
        if !named {
            fill(&mut args.base_url, "base_url");
            fill(&mut args.api, "api");
        }
        fill(&mut args.reasoning, "reasoning");
        fill(&mut args.sandbox, "sandbox");
        if !args.sandbox_net {
            args.sandbox_net = self
                .get("sandbox_net")
                .and_then(|(v, _)| v.as_bool())
                .unwrap_or(false);
        }
        if args.max_steps.is_none() {
            args.max_steps = self
                .get("max_steps")
                .and_then(|(v, _)| v.as_u64())
                .and_then(|n| u32::try_from(n).ok());
        }
        // A project's model never chooses the provider (`PROVIDER:ID`).
        let project_provider = match self.get("model") {
            Some((value, Source::Project(path))) if !model_given => value
                .as_str()
                .and_then(|m| m.split_once(':'))
                .filter(|(name, _)| crate::providers::known(&self.providers, name))
                .map(|_| format!(
                    "{}: \"model\": {value} names a provider, which a project may not choose; ignored",
                    path.display()
                )),
            _ => None,
        };
        if let Some(warning) = project_provider {
            self.warnings.push(warning);
            args.model = None;
        }
        // A saved model of another provider (say `/model gpt-4.1`, then
        // `--provider anthropic`) is not sent to this one: its default applies.
        if !model_given
            && let (Some(model), Some(kind)) = (
                args.model.clone(),
                args.provider.as_deref().and_then(ProviderKind::parse),
            )
        {
            let known = zot_core::models::info(kind, &model);
            if known.known() && known.provider != kind.name() {
                self.warnings.push(format!(
                    "the saved model {model} belongs to {}, not {}; using {}'s default",
                    known.provider,
                    kind.name(),
                    kind.name()
                ));
                args.model = None;
            }
        }
    }

    /// `yolo` (default true: tools run without asking).
    pub fn yolo(&self) -> bool {
        self.get("yolo")
            .and_then(|(v, _)| v.as_bool())
            .unwrap_or(true)
    }

    /// Whether command hooks run (`hooks: false` turns them all off).
    pub fn hooks(&self) -> bool {
        self.get("hooks")
            .and_then(|(v, _)| v.as_bool())
            .unwrap_or(true)
    }

    /// `web_fetch.allow_private`: web_fetch may reach loopback and private
    /// addresses (user config only: a project cannot open that door).
    pub fn web_fetch_private(&self) -> bool {
        self.get("web_fetch.allow_private")
            .and_then(|(v, _)| v.as_bool())
            .unwrap_or(false)
    }

    /// How long a bash command runs when the model names no timeout.
    pub fn bash_timeout(&self) -> std::time::Duration {
        self.get("bash_timeout")
            .and_then(|(v, _)| v.as_u64())
            .map_or(
                zot_core::tools::BASH_DEFAULT_TIMEOUT,
                std::time::Duration::from_secs,
            )
    }

    /// Prompt caching: `cache` is `"5m"` (the default), `"1h"` or `"off"`.
    pub fn cache(&self) -> CacheTtl {
        self.string("cache")
            .and_then(|s| CacheTtl::parse(&s))
            .unwrap_or_default()
    }

    /// The model subagents (the `task` tool) run; `None`: the agent's.
    pub fn subagent_model(&self) -> Option<String> {
        self.string("subagent_model")
    }

    /// The theme bundle's name, if one is chosen.
    pub fn theme(&self) -> Option<String> {
        self.string("theme")
    }

    /// The automatic compaction threshold in percent; `None` turns it off.
    pub fn auto_compact(&self) -> Option<u64> {
        match self.get("auto_compact").map(|(v, _)| v) {
            Some(Value::Bool(false)) => None,
            Some(v) => Some(v.as_u64().unwrap_or(DEFAULT_AUTO_COMPACT)),
            None => Some(DEFAULT_AUTO_COMPACT),
        }
    }

    /// Who would override a model saved to the user config: the
    /// environment or the project file (`None` when the user config wins).
    pub fn model_override(&self) -> Option<Source> {
        self.get("model")
            .map(|(_, s)| s.clone())
            .filter(|s| matches!(s, Source::Env(_) | Source::Project(_)))
    }

    /// Every key with its effective value (flags applied), defaults filled in,
    /// for `zot doctor` and `zot config list`.
    pub fn resolved(&self, args: &AgentArgs) -> Vec<(&'static str, Value, Source)> {
        let flag = |key: &str| -> Option<Value> {
            match key {
                "provider" => args.provider.clone().map(Value::from),
                "model" => args.model.clone().map(Value::from),
                "base_url" => args.base_url.clone().map(Value::from),
                "api" => args.api.clone().map(Value::from),
                "reasoning" => args.reasoning.clone().map(Value::from),
                "max_steps" => args.max_steps.map(Value::from),
                "yolo" => args.no_yolo.then_some(Value::Bool(false)),
                "sandbox" => args.sandbox.clone().map(Value::from),
                "sandbox_net" => args.sandbox_net.then_some(Value::Bool(true)),
                _ => None,
            }
        };
        KEYS.iter()
            .map(|&key| {
                if let Some(value) = flag(key) {
                    return (key, value, Source::Flag);
                }
                if let Some((value, source)) = self.get(key) {
                    return (key, value.clone(), source.clone());
                }
                let default = match key {
                    "yolo" | "hooks" => Value::Bool(true),
                    "auto_compact" => Value::from(DEFAULT_AUTO_COMPACT),
                    "sandbox" => Value::from("off"),
                    "sandbox_net" | "web_fetch.allow_private" => Value::Bool(false),
                    "bash_timeout" => Value::from(zot_core::tools::BASH_DEFAULT_TIMEOUT.as_secs()),
                    "cache" => Value::from("5m"),
                    _ => Value::Null,
                };
                (key, default, Source::Default)
            })
            .collect()
    }
}

/// Why `value` cannot be `key`'s value.
pub fn check(key: &str, value: &Value) -> Result<(), String> {
    let ok = match key {
        "provider" => value.as_str().is_some_and(|name| {
            crate::providers::is_builtin(name) || crate::providers::valid_name(name)
        }),
        "providers" => return crate::providers::parse(value).map(|_| ()),
        "model" | "theme" | "subagent_model" => {
            value.as_str().is_some_and(|s| !s.trim().is_empty())
        }
        "base_url" => value.as_str().is_some_and(|s| {
            reqwest::Url::parse(s).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
        }),
        "reasoning" => matches!(value.as_str(), Some("low" | "medium" | "high")),
        "api" => matches!(value.as_str(), Some("responses" | "chat")),
        "yolo" | "sandbox_net" | "hooks" | "web_fetch.allow_private" => value.is_boolean(),
        "cache" => value.as_str().and_then(CacheTtl::parse).is_some(),
        "sandbox" => value
            .as_str()
            .and_then(zot_sandbox::SandboxMode::parse)
            .is_some(),
        "max_steps" => value
            .as_u64()
            .is_some_and(|n| n >= 1 && u32::try_from(n).is_ok()),
        "bash_timeout" => value
            .as_u64()
            .is_some_and(|n| (1..=zot_core::tools::BASH_MAX_TIMEOUT_SECS).contains(&n)),
        "auto_compact" => {
            value == &Value::Bool(false) || value.as_u64().is_some_and(|n| (1..=100).contains(&n))
        }
        _ => {
            return Err(format!(
                "unknown key \"{key}\" (known: {})",
                KEYS.join(", ")
            ));
        }
    };
    if ok {
        return Ok(());
    }
    let wanted = match key {
        "provider" => "anthropic, openai, ollama or a named provider",
        "model" | "theme" | "subagent_model" => "a non-empty string",
        "base_url" => "an http or https URL",
        "reasoning" => "low, medium or high",
        "api" => "responses or chat",
        "yolo" | "sandbox_net" | "hooks" | "web_fetch.allow_private" => "true or false",
        "sandbox" => "off, read-only or workspace",
        "max_steps" => "a positive integer",
        "bash_timeout" => "a number of seconds from 1 to 3600",
        "cache" => "5m, 1h or off",
        _ => "a percentage (1 to 100) or false",
    };
    Err(format!("\"{key}\" must be {wanted}, not {value}"))
}

/// A JSON object file; `Ok(None)` when it does not exist. Syntax errors name
/// the file, line and column.
pub fn read_object(path: &Path) -> anyhow::Result<Option<Map<String, Value>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(Some(Map::new()));
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => bail!("{}: must be a JSON object", path.display()),
        Err(e) => {
            let message = e.to_string();
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(m, _)| m);
            bail!(
                "{}: invalid JSON at line {}, column {}: {message}",
                path.display(),
                e.line(),
                e.column()
            )
        }
    }
}

/// The user file: a syntax error or a bad value is an error (with how to repair it).
pub fn read_user(path: &Path) -> anyhow::Result<Map<String, Value>> {
    let map = read_object(path)
        .map_err(|e| anyhow::anyhow!("{e:#} (fix it by hand, or see `zot config path`)"))?
        .unwrap_or_default();
    for (key, value) in &map {
        if KEYS.contains(&key.as_str())
            && let Err(e) = check(key, value)
        {
            bail!(
                "{}: {e} (repair it with `zot config set {key} <value>` or `zot config unset {key}`)",
                path.display()
            );
        }
    }
    Ok(map)
}

/// Sets `key` to `value` in the file at `path` (created if missing),
/// keeping every other key and their order.
pub fn write_key(path: &Path, key: &str, value: Option<Value>) -> anyhow::Result<bool> {
    let mut map = read_object(path)?.unwrap_or_default();
    let changed = match value {
        Some(value) => {
            map.insert(key.to_owned(), value);
            true
        }
        None => map.shift_remove(key).is_some(),
    };
    if !changed {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(map))?;
    text.push('\n');
    write_atomically(path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(true)
}

/// Saves `model` as the user's model (`/model <id>`, RPC `set_model` with
/// `save`), and `provider` as the user's provider when the switch chose one.
pub fn save_model(zot_home: &Path, provider: Option<&str>, model: &str) -> anyhow::Result<PathBuf> {
    let path = user_path(zot_home);
    zot_core::session::private_dir(zot_home)
        .with_context(|| format!("cannot create {}", zot_home.display()))?;
    if let Some(provider) = provider {
        write_key(&path, "provider", Some(Value::from(provider)))?;
    }
    write_key(&path, "model", Some(Value::from(model)))?;
    Ok(path)
}

/// The value `zot config set` stores: JSON when it parses (and fits the
/// key), else the text as a string.
pub fn parse_value(key: &str, raw: &str) -> Result<Value, String> {
    let parsed = serde_json::from_str::<Value>(raw).ok();
    if let Some(value) = &parsed
        && check(key, value).is_ok()
    {
        return Ok(value.clone());
    }
    let text = Value::String(raw.to_owned());
    match check(key, &text) {
        Ok(()) => Ok(text),
        Err(e) => Err(match parsed {
            Some(value) => check(key, &value).err().unwrap_or(e),
            None => e,
        }),
    }
}

/// `text` (a JSON object that does not parse) without the lines that set
/// `key`, when that makes it parse (a dangling comma before `}` is dropped too).
pub fn without_key_line(text: &str, key: &str) -> Option<String> {
    let needle = format!("\"{key}\"");
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| {
            !line
                .trim_start()
                .strip_prefix(&needle)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .collect();
    if kept.len() == text.lines().count() {
        return None;
    }
    let mut repaired = kept.join("\n");
    repaired.push('\n');
    let parses = |t: &str| matches!(serde_json::from_str::<Value>(t), Ok(Value::Object(_)));
    if parses(&repaired) {
        return Some(repaired);
    }
    // `"a": 1,` followed by the removed last entry leaves `1,\n}`.
    let trimmed = repaired.trim_end();
    let body = trimmed.strip_suffix('}')?.trim_end();
    let fixed = format!("{}\n}}\n", body.strip_suffix(',')?);
    parses(&fixed).then_some(fixed)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn files(user: Option<&str>, project: Option<&str>) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (home, proj) = (dir.path().join("home"), dir.path().join("proj"));
        std::fs::create_dir_all(proj.join(".zot")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        if let Some(text) = user {
            std::fs::write(user_path(&home), text).unwrap();
        }
        if let Some(text) = project {
            std::fs::write(project_path(&proj), text).unwrap();
        }
        (dir, home, proj)
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn env_beats_project_beats_user_and_flags_beat_all() {
        let (_d, home, proj) = files(
            Some(r#"{"model":"user-m","reasoning":"low","provider":"openai","max_steps":3}"#),
            Some(r#"{"model":"proj-m","max_steps":7}"#),
        );
        let s = Settings::load_with(&home, &proj, no_env).unwrap();
        assert_eq!(s.get("model").unwrap().0, "proj-m");
        assert!(matches!(s.get("model").unwrap().1, Source::Project(_)));
        assert_eq!(s.get("reasoning").unwrap().0, "low");
        assert_eq!(s.get("max_steps").unwrap().0, 7);
        let env = |var: &str| (var == "ZOT_MODEL").then(|| "env-m".to_owned());
        let mut s = Settings::load_with(&home, &proj, env).unwrap();
        assert_eq!(
            s.get("model").unwrap(),
            (&json!("env-m"), &Source::Env("ZOT_MODEL"))
        );
        let mut args = AgentArgs::default();
        s.apply(&mut args);
        assert_eq!(args.model.as_deref(), Some("env-m"));
        assert_eq!(args.provider.as_deref(), Some("openai"));
        assert_eq!(args.max_steps, Some(7));
        let mut args = AgentArgs {
            model: Some("flag-m".into()),
            ..AgentArgs::default()
        };
        s.apply(&mut args);
        assert_eq!(args.model.as_deref(), Some("flag-m"));
        let resolved = s.resolved(&args);
        assert_eq!(resolved[1], ("model", json!("flag-m"), Source::Flag));
    }

    #[test]
    fn a_named_provider_keeps_its_own_base_url_over_the_configs() {
        let (_d, home, proj) = files(
            Some(
                r#"{"provider":"chatty","base_url":"https://old.example","api":"responses",
                    "providers":{"chatty":{"base_url":"https://chatty.example"}}}"#,
            ),
            None,
        );
        let mut s = Settings::load_with(&home, &proj, no_env).unwrap();
        assert_eq!(s.providers[0].name, "chatty");
        let mut args = AgentArgs::default();
        s.apply(&mut args);
        assert_eq!(args.provider.as_deref(), Some("chatty"));
        assert_eq!((args.base_url, args.api), (None, None));
    }

    #[test]
    fn a_project_cannot_set_provider_base_url_or_anything_else() {
        let (_d, home, proj) = files(
            None,
            Some(r#"{"base_url":"http://evil","provider":"openai","api_key":"x","model":"m"}"#),
        );
        let s = Settings::load_with(&home, &proj, no_env).unwrap();
        assert!(s.get("base_url").is_none() && s.get("provider").is_none());
        assert_eq!(s.get("model").unwrap().0, "m");
        for key in ["base_url", "provider", "api_key"] {
            assert!(
                s.warnings
                    .iter()
                    .any(|w| w.contains(&format!("\"{key}\" is ignored"))
                        && w.contains(".zot/config.json")),
                "{key}: {:?}",
                s.warnings
            );
        }
    }

    #[test]
    fn broken_files_user_is_an_error_with_line_and_column_project_a_warning() {
        let (_d, home, proj) = files(Some("{\n  \"model\": \"m\",\n  oops\n}"), None);
        let e = Settings::load_with(&home, &proj, no_env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("config.json: invalid JSON at line 3, column 3"),
            "{e}"
        );
        let (_d, home, proj) = files(None, Some("{\"model\": }"));
        let s = Settings::load_with(&home, &proj, no_env).unwrap();
        assert!(
            s.warnings[0].contains("line 1, column 11"),
            "{:?}",
            s.warnings
        );
        let (_d, home, proj) = files(Some(r#"{"max_steps":"lots"}"#), None);
        let e = Settings::load_with(&home, &proj, no_env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"max_steps\" must be a positive integer"),
            "{e}"
        );
        assert!(e.contains("zot config unset max_steps"), "{e}");
    }

    #[test]
    fn rewriting_keeps_unknown_keys_and_their_order() {
        let (_d, home, proj) = files(Some(r#"{"zeta":1,"model":"a","alpha":{"x":[1]}}"#), None);
        let s = Settings::load_with(&home, &proj, no_env).unwrap();
        assert_eq!(s.unknown.len(), 2);
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("unknown key \"zeta\""))
        );
        save_model(&home, None, "b").unwrap();
        write_key(&user_path(&home), "yolo", Some(json!(false))).unwrap();
        let text = std::fs::read_to_string(user_path(&home)).unwrap();
        let keys: Vec<String> = serde_json::from_str::<Map<String, Value>>(&text)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["zeta", "model", "alpha", "yolo"]);
        assert!(text.contains("\"model\": \"b\""));
    }

    #[test]
    fn unset_repairs_a_file_broken_on_that_key_line() {
        let broken = "{\n  \"model\": \"m\"\n  \"yolo\": true\n}\n";
        assert_eq!(
            without_key_line(broken, "yolo").as_deref(),
            Some("{\n  \"model\": \"m\"\n}\n")
        );
        let dangling = "{\n  \"model\": \"m\",\n  \"max_steps\": oops\n}";
        assert_eq!(
            without_key_line(dangling, "max_steps").as_deref(),
            Some("{\n  \"model\": \"m\"\n}\n")
        );
        assert_eq!(without_key_line(broken, "theme"), None);
        assert_eq!(without_key_line("{\"model\": 1 \"x\"}", "model"), None);
    }

    #[test]
    fn values_parse_as_json_else_as_strings() {
        assert_eq!(parse_value("max_steps", "12"), Ok(json!(12)));
        assert_eq!(parse_value("auto_compact", "false"), Ok(json!(false)));
        assert_eq!(parse_value("model", "gpt-4.1"), Ok(json!("gpt-4.1")));
        assert_eq!(parse_value("model", "4"), Ok(json!("4")));
        assert_eq!(parse_value("model", "\"quoted\""), Ok(json!("quoted")));
        assert!(parse_value("max_steps", "0").is_err());
        assert!(parse_value("reasoning", "extreme").is_err());
        assert!(parse_value("nope", "1").is_err());
    }
}
