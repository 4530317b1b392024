//! `zot config …`, and the effective settings it and `zot doctor` show:
//! the settings with the run's own pick of provider and model filled in.
//! It sits above both `config.rs` (the files) and `run.rs` (the pick).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::{Map, Value};
use zot_extensions::atomic_file::write_atomically;

use crate::args::{AgentArgs, ConfigCommand};
use crate::config::{
    KEYS, PROJECT_KEYS, Settings, Source, parse_value, read_object, read_user, without_key_line,
    write_key,
};
use crate::paths::{project_path, user_path};
use crate::run::{Choice, choose};
use crate::{credentials, providers};

/// [`Settings::resolved`], with the defaults that depend on the
/// provider (provider, model, base URL) as `choice`, the run's pick,
/// has them: what `zot doctor` and `zot config list|get` both show.
pub fn resolved_with(
    settings: &Settings,
    args: &AgentArgs,
    choice: Option<&Choice>,
) -> Vec<(&'static str, Value, Source)> {
    let mut resolved = settings.resolved(args);
    if let Some(choice) = choice {
        for (key, value, _) in resolved.iter_mut().filter(|(_, v, _)| v.is_null()) {
            match *key {
                "provider" => *value = Value::from(choice.provider.name.clone()),
                "model" => *value = Value::from(choice.model.clone()),
                "base_url" => *value = Value::from(choice.provider.base_url.clone()),
                "api" => *value = Value::from(choice.provider.wire.name()),
                _ => {}
            }
        }
    }
    resolved
}

/// What a run with no flags resolves (`zot config list|get`).
fn resolved_for_run(
    settings: &mut Settings,
    zot_home: &Path,
) -> Vec<(&'static str, Value, Source)> {
    let mut args = AgentArgs::default();
    settings.apply(&mut args);
    let choice = choose(&args, zot_home).ok();
    resolved_with(settings, &AgentArgs::default(), choice.as_ref())
}

fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// [`show`], with what may carry a key masked (header values of `providers`).
fn show_key(key: &str, value: &Value) -> String {
    if key == "providers" {
        show(&providers::masked(value))
    } else {
        show(value)
    }
}

/// `zot config list|get|set|unset|path`.
pub fn run(zot_home: &Path, project: &Path, command: &ConfigCommand) -> anyhow::Result<ExitCode> {
    let file = |in_project: bool| {
        if in_project {
            project_path(project)
        } else {
            user_path(zot_home)
        }
    };
    let allowed = |key: &str, in_project: bool| -> anyhow::Result<()> {
        if in_project && !PROJECT_KEYS.contains(&key) {
            bail!(
                "\"{key}\" cannot be set in a project config (only {})",
                PROJECT_KEYS.join(", ")
            );
        }
        if !KEYS.contains(&key) {
            bail!("unknown key \"{key}\" (known: {})", KEYS.join(", "));
        }
        Ok(())
    };
    match command {
        ConfigCommand::Path { project: p } => outln!("{}", file(*p).display()),
        ConfigCommand::List { project: true } => {
            let path = file(true);
            for (key, value) in read_object(&path)?.unwrap_or_default() {
                let note = if PROJECT_KEYS.contains(&key.as_str()) {
                    ""
                } else {
                    "  # ignored: not allowed in a project config"
                };
                outln!("{key} = {}{note}", show_key(&key, &value));
            }
        }
        ConfigCommand::List { project: false } => {
            let mut settings = Settings::load(zot_home, project)?;
            let resolved = resolved_for_run(&mut settings, zot_home);
            for warning in &settings.warnings {
                errln!("zot: warning: {warning}");
            }
            for (key, value, source) in resolved {
                if value.is_null() {
                    outln!("{key}  # unset");
                } else {
                    outln!("{key} = {}  # {}", show_key(key, &value), source.describe());
                }
            }
            for (key, value) in &settings.unknown {
                outln!("{key} = {}  # unknown key, kept, not used", show(value));
            }
        }
        ConfigCommand::Get { key, project: p } => {
            let value = if *p {
                read_object(&file(true))?
                    .unwrap_or_default()
                    .get(key.as_str())
                    .cloned()
            } else {
                let mut settings = Settings::load(zot_home, project)?;
                let known = resolved_for_run(&mut settings, zot_home)
                    .into_iter()
                    .find(|(k, ..)| k == key)
                    .map(|(_, v, _)| v);
                known.filter(|v| !v.is_null()).or_else(|| {
                    settings
                        .unknown
                        .iter()
                        .find(|(k, _)| k == key)
                        .map(|(_, v)| v.clone())
                })
            };
            match value {
                Some(value) => outln!("{}", show_key(key, &value)),
                None => {
                    errln!("zot: {key} is unset");
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        ConfigCommand::Set {
            key,
            value,
            project: p,
        } => {
            allowed(key, *p)?;
            let value = parse_value(key, value).map_err(anyhow::Error::msg)?;
            if key == "provider"
                && let Some(name) = value.as_str()
            {
                credentials::named_or_builtin(zot_home, name)?;
            }
            let path = file(*p);
            if !*p {
                // Refuses to rewrite a file it cannot read.
                read_user(&path).or_else(|e| {
                    if e.to_string().contains("invalid JSON") {
                        Err(e)
                    } else {
                        Ok(Map::new())
                    }
                })?;
                zot_core::session::private_dir(zot_home)
                    .with_context(|| format!("cannot create {}", zot_home.display()))?;
            }
            write_key(&path, key, Some(value.clone()))?;
            errln!("{key} = {} in {}", show(&value), path.display());
        }
        ConfigCommand::Unset { key, project: p } => {
            let path = file(*p);
            if let Err(e) = read_object(&path) {
                // A file that does not parse: drop the key's line if that repairs it.
                let text = std::fs::read_to_string(&path)?;
                let Some(repaired) = without_key_line(&text, key) else {
                    return Err(e.context(format!("cannot unset {key}")));
                };
                write_atomically(&path, repaired.as_bytes())
                    .with_context(|| format!("cannot write {}", path.display()))?;
                errln!(
                    "removed {key} from {} (the file parses again)",
                    path.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            if write_key(&path, key, None)? {
                errln!("removed {key} from {}", path.display());
            } else {
                errln!("{key} is not set in {}", path.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
