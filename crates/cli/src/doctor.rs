//! `zot doctor`: one report on everything a run depends on — the resolved
//! config and where each value came from, the credentials per provider
//! (masked), whether the model endpoint answers, `$ZOT_HOME` and its
//! permissions, the sessions' size, then the extension report of `zot ext
//! doctor`. Exit status 1 when something is broken; no credentials for the
//! chosen provider counts as broken.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Map, Value, json};
use zot_core::provider::{ProviderConfig, ProviderKind};

use crate::args::{Cli, ExtCommand};
use crate::config::Settings;
use crate::config_cmd::resolved_with;
use crate::context::Context;
use crate::{credentials, providers};

/// How long the endpoint check waits for an answer.
pub const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(3);

/// What the checks found: a broken thing makes `ok` false.
#[derive(Default)]
struct Findings {
    problems: Vec<String>,
    warnings: Vec<String>,
}

pub fn run(cli: &Cli, ctx: &mut Context, as_json: bool) -> anyhow::Result<ExitCode> {
    let mut found = Findings::default();
    let mut args = cli.agent.clone();
    match Settings::load(&ctx.zot_home, &ctx.project) {
        Ok(settings) => ctx.settings = settings,
        Err(e) => found.problems.push(format!("{e:#}")),
    }
    found.warnings.extend(ctx.settings.warnings.iter().cloned());
    ctx.settings.apply(&mut args);

    let choice = crate::run::provider_and_model(&args, ctx);
    let mut config = Map::new();
    for (key, value, source) in resolved_with(&ctx.settings, &cli.agent, choice.as_ref().ok()) {
        let value = if key == "providers" {
            providers::masked(&value)
        } else {
            value
        };
        let mut entry = json!({"value": value, "source": source.kind()});
        if let Some(origin) = source.origin() {
            entry["from"] = json!(origin);
        }
        config.insert(key.to_owned(), entry);
    }

    let mut creds = Map::new();
    for kind in [
        ProviderKind::Anthropic,
        ProviderKind::OpenAi,
        ProviderKind::Ollama,
    ] {
        let entry = if kind == ProviderKind::Ollama {
            json!({"needed": false})
        } else {
            // --api-key is the chosen provider's key only.
            let chosen = choice.as_ref().ok().map(|c| c.provider.name.as_str());
            let mut lookup = args.clone();
            if chosen != Some(kind.name()) {
                lookup.api_key = None;
            }
            match credentials::find_key(&lookup, &ctx.zot_home, kind) {
                Ok(Some((key, from))) => {
                    json!({"needed": true, "found": true, "key": providers::mask(&key), "from": from})
                }
                Ok(None) => json!({"needed": true, "found": false, "key": null, "from": null,
                    "variable": credentials::env_var(kind)}),
                Err(e) => {
                    found.problems.push(format!("{e:#}"));
                    json!({"needed": true, "found": false, "error": format!("{e:#}")})
                }
            }
        };
        creds.insert(kind.name().to_owned(), entry);
    }
    for named in &ctx.settings.providers {
        let chosen = choice.as_ref().ok().map(|c| c.provider.name.as_str());
        let mut lookup = args.clone();
        if chosen != Some(named.name.as_str()) {
            lookup.api_key = None;
        }
        let entry = match credentials::named_key(&lookup, &ctx.zot_home, named) {
            Ok(Ok((key, from))) => json!({"needed": named.needs_key(), "found": true,
                "key": providers::mask(&key), "from": from, "base_url": named.base_url}),
            Ok(Err(why)) => json!({"needed": named.needs_key(), "found": false, "key": null,
                "from": null, "variable": named.api_key_env, "why": why, "base_url": named.base_url,
                "stored_elsewhere": credentials::stored_elsewhere(&ctx.zot_home, named)}),
            Err(e) => {
                found.problems.push(format!("{e:#}"));
                json!({"needed": true, "found": false, "error": format!("{e:#}")})
            }
        };
        creds.insert(named.name.clone(), entry);
    }

    let endpoint = match &choice {
        Ok(choice) => {
            if let Some(missing) = &choice.missing_credentials {
                found.problems.push(missing.clone());
            }
            // A provider that needs no key (ollama, a local server) is sent
            // none: its 401 is not a refused key.
            let keyed = choice.missing_credentials.is_none() && !choice.provider.api_key.is_empty();
            let result = endpoint(&choice.provider, keyed);
            if let Some(problem) = result["error"].as_str() {
                found.problems.push(format!(
                    "the model endpoint {}: {problem}",
                    choice.provider.base_url
                ));
            }
            result
        }
        Err(e) => {
            found.problems.push(format!("{e:#}"));
            json!({"url": null, "ok": false, "status": null, "error": format!("{e:#}")})
        }
    };

    let home = home(&ctx.zot_home, &mut found);
    ctx.config.hooks &= ctx.settings.hooks();
    let hooks = crate::hooks_cmd::doctor(ctx);
    found.problems.extend(hooks.problems);
    found.warnings.extend(hooks.warnings);
    let hooks = hooks.report;
    let sessions = ctx.zot_home.join("sessions");
    let sessions_bytes = dir_size(&sessions);

    if as_json {
        let extensions = crate::ext_cmd::doctor_report(ctx).unwrap_or_else(|e| {
            json!({"ok": false, "errors": 1, "error": format!("{e:#}"), "extensions": [], "conflicts": []})
        });
        if extensions["ok"] != json!(true) {
            found
                .problems
                .push("an extension is broken (see extensions)".into());
        }
        let doc = json!({
            "ok": found.problems.is_empty(),
            "problems": found.problems,
            "warnings": found.warnings,
            "config": config,
            "credentials": creds,
            "endpoint": endpoint,
            "home": home,
            "sessions_bytes": sessions_bytes,
            "sandbox": zot_sandbox::Kernel::get().to_json(),
            "hooks": hooks,
            "extensions": extensions,
        });
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        // A reader that stops early (`| head`) is not an error worth a panic.
        let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
        return Ok(exit(found.problems.is_empty()));
    }

    outln!("config");
    for (key, entry) in &config {
        let value = match &entry["value"] {
            Value::Null => "(unset)".to_owned(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let from = entry["from"]
            .as_str()
            .map_or(String::new(), |f| format!(" {f}"));
        outln!(
            "  {key:<13}{value:<28} {}{from}",
            entry["source"].as_str().unwrap_or("")
        );
    }
    outln!("credentials");
    for (provider, entry) in &creds {
        let text = match (&entry["needed"], &entry["found"]) {
            (Value::Bool(false), _) if entry["stored_elsewhere"] != true => {
                "needs no key".to_owned()
            }
            (_, Value::Bool(true)) => format!(
                "{} (from {})",
                entry["key"].as_str().unwrap_or(""),
                entry["from"].as_str().unwrap_or("")
            ),
            _ => match (entry["why"].as_str(), entry["variable"].as_str()) {
                (Some(why), _) => format!("none: {why}"),
                (None, Some(var)) => {
                    format!("none (set {var} or run `zot auth login {provider}`)")
                }
                (None, None) => "none".to_owned(),
            },
        };
        outln!("  {provider:<13}{text}");
    }
    let endpoint_text = match (&endpoint["status"], &endpoint["error"]) {
        (_, Value::String(e)) => e.clone(),
        (Value::Number(status), _) => format!("answers (HTTP {status})"),
        _ => "not checked".to_owned(),
    };
    outln!(
        "endpoint       {} {endpoint_text}",
        endpoint["url"].as_str().unwrap_or("-")
    );
    outln!(
        "home           {} ({})",
        ctx.zot_home.display(),
        home["mode"].as_str().unwrap_or("missing")
    );
    outln!(
        "sessions       {} in {}",
        human_bytes(sessions_bytes),
        sessions.display()
    );
    outln!("sandbox        {}", zot_sandbox::Kernel::get().summary());
    let hook_files = hooks["files"].as_array().map_or(0, Vec::len);
    outln!(
        "hooks          {} running, from {hook_files} file(s){}",
        hooks["running"],
        if hooks["enabled"] == json!(false) {
            " (turned off)"
        } else {
            ""
        }
    );
    outln!("\nextensions");
    let extensions = crate::ext_cmd::run(ctx, &ExtCommand::Doctor { json: false })?;
    let extensions_ok = extensions == ExitCode::SUCCESS;
    if !extensions_ok {
        found
            .problems
            .push("an extension is broken (see above)".into());
    }
    for warning in &found.warnings {
        outln!("warning: {warning}");
    }
    if found.problems.is_empty() {
        outln!("\nall good");
    } else {
        outln!("\nbroken:");
        for problem in &found.problems {
            outln!("  - {problem}");
        }
    }
    Ok(exit(found.problems.is_empty()))
}

fn exit(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The URL that shows whether the provider answers (its model list).
fn probe_url(provider: &ProviderConfig) -> String {
    let base = provider.base_url.trim_end_matches('/');
    match provider.kind {
        ProviderKind::Ollama => format!("{base}/api/tags"),
        ProviderKind::OpenAi => zot_core::provider::openai::api_url(base, "models"),
        ProviderKind::Anthropic => format!("{base}/v1/models"),
    }
}

/// Asks the endpoint once, within [`ENDPOINT_TIMEOUT`]: any HTTP answer
/// means it is reachable; a refused key (401, 403) is broken too.
fn endpoint(provider: &ProviderConfig, has_key: bool) -> Value {
    let url = probe_url(provider);
    let answer = (|| -> Result<u16, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            let client = zot_core::provider::http_client(&provider.base_url)
                .default_headers(zot_core::provider::header_map(&provider.headers)?)
                .timeout(ENDPOINT_TIMEOUT)
                .connect_timeout(ENDPOINT_TIMEOUT)
                .build()
                .map_err(|e| e.to_string())?;
            let mut request = client.get(&url);
            if has_key {
                request = match provider.kind {
                    ProviderKind::Anthropic => request
                        .header("x-api-key", &provider.api_key)
                        .header("anthropic-version", "2023-06-01"),
                    _ if !provider.api_key.is_empty() => request.bearer_auth(&provider.api_key),
                    _ => request,
                };
            }
            let response = request.send().await.map_err(|e| {
                if e.is_timeout() {
                    format!("no answer within {} s", ENDPOINT_TIMEOUT.as_secs())
                } else {
                    format!("cannot connect: {}", root_cause(&e))
                }
            })?;
            Ok(response.status().as_u16())
        })
    })();
    match answer {
        Ok(status @ (401 | 403)) if has_key => json!({
            "url": url, "ok": false, "status": status,
            "error": format!("the key is refused (HTTP {status})"),
        }),
        Ok(status) => json!({"url": url, "ok": true, "status": status, "error": null}),
        Err(error) => json!({"url": url, "ok": false, "status": null, "error": error}),
    }
}

fn root_cause(error: &dyn std::error::Error) -> String {
    let mut source = error;
    while let Some(next) = source.source() {
        source = next;
    }
    source.to_string()
}

/// `$ZOT_HOME`: whether it exists, its mode; other users able to read it
/// is a warning, an auth.json others can read is broken.
fn home(zot_home: &Path, found: &mut Findings) -> Value {
    let mode = |path: &Path| {
        std::fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o777)
    };
    let home_mode = mode(zot_home);
    if let Some(m) = home_mode
        && m & 0o077 != 0
    {
        found.warnings.push(format!(
            "{} is mode {m:04o}: other users can look inside (chmod 700 it)",
            zot_home.display()
        ));
    }
    let auth = zot_home.join("auth.json");
    let auth_mode = mode(&auth);
    if let Some(m) = auth_mode
        && m & 0o077 != 0
    {
        found.problems.push(format!(
            "{} is mode {m:04o}: other users can read your keys (chmod 600 it)",
            auth.display()
        ));
    }
    let probe = zot_home.join(format!(".doctor-{}", std::process::id()));
    let writable = home_mode.is_some()
        && std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .is_ok();
    let _ = std::fs::remove_file(&probe);
    if home_mode.is_some() && !writable {
        found
            .problems
            .push(format!("{} is not writable", zot_home.display()));
    }
    json!({
        "path": zot_home.display().to_string(),
        "exists": home_mode.is_some(),
        "mode": home_mode.map(|m| format!("{m:04o}")),
        "private": home_mode.map(|m| m & 0o077 == 0),
        "writable": writable,
        "auth_mode": auth_mode.map(|m| format!("{m:04o}")),
    })
}

/// Bytes in every file under `dir` (0 when it does not exist).
fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => dir_size(&entry.path()),
            Ok(t) if t.is_file() => entry.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_probe_urls() {
        assert_eq!(human_bytes(10), "10 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 * 1024 * 1024), "5.0 MiB");
        let config = |kind: ProviderKind, base_url: &str| {
            ProviderConfig::builtin(
                kind,
                base_url.into(),
                String::new(),
                kind.default_wire(base_url),
            )
        };
        assert_eq!(
            probe_url(&config(ProviderKind::OpenAi, "http://h/v1")),
            "http://h/v1/models"
        );
        assert_eq!(
            probe_url(&config(ProviderKind::Anthropic, "http://h")),
            "http://h/v1/models"
        );
        assert_eq!(
            probe_url(&config(ProviderKind::Ollama, "http://h:11434")),
            "http://h:11434/api/tags"
        );
        assert_eq!(providers::mask("sk-ant-0123456789abcd"), "sk-a…abcd");
        assert_eq!(providers::mask("short"), "*****");
    }
}
