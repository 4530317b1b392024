//! `zot models` (and its alias `--list-models`): the model table beside what
//! each provider serves (`GET /v1/models`, ollama's `/api/tags`), asked
//! only of providers that have a key (or need none), each within a short
//! timeout, each answer kept a day in `$ZOT_HOME/cache/`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use zot_core::models::{self, ModelInfo};
use zot_core::provider::{ProviderConfig, ProviderKind};

use crate::args::AgentArgs;
use crate::credentials;
use crate::providers::{self, Named};

/// How long one provider's list may take: a listing must not wait on a
/// provider that is down (the model-picker issue asks for a short timeout).
pub const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a provider's list is reused before it is asked again (a day,
/// as the model-picker issue sets it; `--refresh` asks at once).
pub const CACHE_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// The API version header `GET /v1/models` needs at Anthropic.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Most models asked of Anthropic in one page (the API's maximum).
const ANTHROPIC_PAGE: u32 = 1000;

/// What one provider said.
struct Served {
    config: ProviderConfig,
    /// The ids it serves; `Err` says why they are not known.
    ids: Result<Vec<String>, String>,
    /// Whether the list came from the day-old cache.
    cached: bool,
}

/// `zot models`: `args` after the config files, `provider` from the
/// subcommand (it wins over `--provider`).
pub fn run(
    args: &AgentArgs,
    zot_home: &Path,
    refresh: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let configured = providers::load(zot_home);
    let names: Vec<String> = match &args.provider {
        Some(name) => vec![name.clone()],
        None => providers::BUILTIN
            .iter()
            .map(|&name| name.to_owned())
            .chain(configured.iter().map(|n| n.name.clone()))
            .collect(),
    };
    let configs = names
        .iter()
        .map(|name| match ProviderKind::parse(name) {
            Some(kind) => provider_config(args, zot_home, kind),
            None => named_config(args, zot_home, credentials::named(zot_home, name)?),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Every provider at once: the slowest one's timeout bounds the wait.
    let served: Vec<Served> = runtime.block_on(async {
        let asks: Vec<_> = configs
            .into_iter()
            .map(|config| tokio::spawn(ask(config, zot_home.to_owned(), refresh)))
            .collect();
        let mut served = Vec::new();
        for ask in asks {
            served.push(ask.await?);
        }
        Ok::<_, tokio::task::JoinError>(served)
    })?;
    let rows = rows(&served);
    let mut out = std::io::stdout().lock();
    let written = if json {
        writeln!(out, "{}", to_json(&served, &rows))
    } else {
        write_text(&mut out, &served, &rows)
    };
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// The arguments that apply to the provider `name`: the chosen provider
/// takes `--base-url` and `--api-key`; the others only their own defaults,
/// env vars and stored keys (a key is never sent to another provider).
fn own_args(args: &AgentArgs, name: &str) -> AgentArgs {
    let chosen = args
        .provider
        .as_deref()
        .is_some_and(|p| p == name || ProviderKind::parse(p).is_some_and(|k| k.name() == name));
    if chosen {
        args.clone()
    } else {
        AgentArgs::default()
    }
}

/// Where `kind` is reached and with which key. `Err` as the key: no
/// credentials (and why), so the provider is not asked.
fn provider_config(
    args: &AgentArgs,
    zot_home: &Path,
    kind: ProviderKind,
) -> anyhow::Result<(ProviderConfig, Result<String, String>)> {
    let own = own_args(args, kind.name());
    let base_url = own
        .base_url
        .clone()
        .unwrap_or_else(|| kind.default_base_url().to_owned())
        .trim_end_matches('/')
        .to_owned();
    let key = match kind {
        ProviderKind::Ollama => Ok(own.api_key.clone().unwrap_or_default()),
        _ => credentials::find_key(&own, zot_home, kind)?
            .map(|(key, _)| key)
            .ok_or_else(|| format!("no key ({})", credentials::env_var(kind).unwrap_or("a key"))),
    };
    let wire = kind.default_wire(&base_url);
    let config = ProviderConfig::builtin(kind, base_url, key.clone().unwrap_or_default(), wire);
    Ok((config, key))
}

/// [`provider_config`] for a named provider: its stored key only for the
/// base URL it was stored for.
fn named_config(
    args: &AgentArgs,
    zot_home: &Path,
    mut named: Named,
) -> anyhow::Result<(ProviderConfig, Result<String, String>)> {
    let own = own_args(args, &named.name);
    if let Some(url) = &own.base_url {
        url.trim_end_matches('/').clone_into(&mut named.base_url);
    }
    let key = match credentials::named_key(&own, zot_home, &named)? {
        Ok((key, _)) => Ok(key),
        Err(_) if !named.needs_key() => Ok(String::new()),
        Err(why) => Err(why),
    };
    Ok((named.config(key.clone().unwrap_or_default()), key))
}

async fn ask(
    (config, key): (ProviderConfig, Result<String, String>),
    zot_home: PathBuf,
    refresh: bool,
) -> Served {
    if let Err(why) = key {
        return Served {
            config,
            ids: Err(format!("not asked: {why}")),
            cached: false,
        };
    }
    let cache = cache_path(&zot_home, &config);
    if !refresh && let Some(ids) = read_cache(&cache, &config.base_url) {
        return Served {
            config,
            ids: Ok(ids),
            cached: true,
        };
    }
    let ids = fetch(&config).await;
    if let Ok(ids) = &ids {
        write_cache(&cache, &config.base_url, ids);
    }
    Served {
        config,
        ids,
        cached: false,
    }
}

/// A model a session can switch to, with what zot knows of it.
pub struct Offered {
    pub provider: String,
    pub id: String,
    pub info: &'static ModelInfo,
}

/// Every model of every provider a session can switch to, the current
/// provider's first: the table's and the user's, then what each provider
/// served at its last listing (`zot models`, kept a day), asking no one.
pub fn offered(
    zot_home: Option<&Path>,
    current: &ProviderConfig,
    start: &ProviderConfig,
) -> Vec<Offered> {
    let mut offered = Vec::new();
    for target in crate::run::switchable(zot_home, current, start) {
        let listed = models::models(&target.name).map(|info| (info.id.clone(), info));
        let served = zot_home
            .and_then(|home| read_cache(&cache_path(home, &target), &target.base_url))
            .unwrap_or_default()
            .into_iter()
            .map(|id| {
                let info = models::of(&target, &id);
                (id, info)
            })
            // Listed already (under its id or an alias).
            .filter(|(_, info)| !info.known() || info.provider != target.name);
        for (id, info) in listed.chain(served) {
            offered.push(Offered {
                provider: target.name.clone(),
                id,
                info,
            });
        }
    }
    offered
}

/// `$ZOT_HOME/cache/models-<provider>-<hash of the base URL>.json`.
fn cache_path(zot_home: &Path, config: &ProviderConfig) -> PathBuf {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    config.base_url.hash(&mut hasher);
    zot_home.join("cache").join(format!(
        "models-{}-{:016x}.json",
        config.name,
        hasher.finish()
    ))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The cached ids for `base_url`, when younger than [`CACHE_MAX_AGE`].
fn read_cache(path: &Path, base_url: &str) -> Option<Vec<String>> {
    let value: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let fetched = value["fetched"].as_u64()?;
    let fresh = now_secs().saturating_sub(fetched) < CACHE_MAX_AGE.as_secs();
    if !fresh || value["base_url"] != base_url {
        return None;
    }
    value["ids"]
        .as_array()?
        .iter()
        .map(|id| id.as_str().map(str::to_owned))
        .collect()
}

/// Best effort: a listing that cannot be cached is still shown.
fn write_cache(path: &Path, base_url: &str, ids: &[String]) {
    let body = json!({"fetched": now_secs(), "base_url": base_url, "ids": ids});
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            zot_extensions::atomic_file::write_atomically(path, body.to_string().as_bytes())
        });
    if let Err(e) = written {
        tracing::warn!(path = %path.display(), error = %e, "cannot cache the model list");
    }
}

/// Asks the provider what it serves, within [`LIST_TIMEOUT`].
async fn fetch(config: &ProviderConfig) -> Result<Vec<String>, String> {
    let client = zot_core::provider::http_client(&config.base_url)
        .default_headers(zot_core::provider::header_map(&config.headers)?)
        .timeout(LIST_TIMEOUT)
        .connect_timeout(LIST_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    let base = &config.base_url;
    let request = match config.kind {
        ProviderKind::Anthropic => client
            .get(format!("{base}/v1/models?limit={ANTHROPIC_PAGE}"))
            .header("x-api-key", &config.api_key)
            .header("anthropic-version", ANTHROPIC_VERSION),
        ProviderKind::OpenAi => {
            let request = client.get(zot_core::provider::openai::api_url(base, "models"));
            if config.api_key.is_empty() {
                request
            } else {
                request.bearer_auth(&config.api_key)
            }
        }
        ProviderKind::Ollama => client.get(format!("{base}/api/tags")),
    };
    let response = request.send().await.map_err(|e| {
        format!(
            "cannot reach {base}: {}",
            zot_core::provider::error_chain(&e)
        )
    })?;
    let status = response.status();
    let body: Value = response
        .json()
        .await
        .map_err(|e| format!("{base}: not a model list: {e}"))?;
    if !status.is_success() {
        let message = body
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("error"));
        return Err(format!("{base}: HTTP {}: {message}", status.as_u16()));
    }
    let (list, field) = match config.kind {
        ProviderKind::Ollama => ("models", "name"),
        _ => ("data", "id"),
    };
    let ids: Vec<String> = body[list]
        .as_array()
        .ok_or_else(|| format!("{base}: the answer has no \"{list}\" list"))?
        .iter()
        .filter_map(|m| m[field].as_str().map(str::to_owned))
        .collect();
    Ok(ids)
}

/// One line of the listing.
struct Row {
    /// The provider's name, and the family its unknown models default to.
    provider: String,
    kind: ProviderKind,
    id: String,
    info: Option<&'static ModelInfo>,
    /// `None`: the provider was not asked or not reached.
    served: Option<bool>,
}

/// The table's models of each provider, then what it serves beyond them.
fn rows(served: &[Served]) -> Vec<Row> {
    let mut rows = Vec::new();
    for provider in served {
        let (name, kind) = (&provider.config.name, provider.config.kind);
        let ids = provider.ids.as_ref().ok();
        for info in models::models(name) {
            let served = ids.map(|ids| {
                std::iter::once(&info.id)
                    .chain(&info.aliases)
                    .any(|id| ids.contains(id))
            });
            rows.push(Row {
                provider: name.clone(),
                kind,
                id: info.id.clone(),
                info: Some(info),
                served,
            });
        }
        for id in ids.into_iter().flatten() {
            let info = models::of(&provider.config, id);
            if !info.known() || info.provider != *name {
                rows.push(Row {
                    provider: name.clone(),
                    kind,
                    id: id.clone(),
                    info: None,
                    served: Some(true),
                });
            }
        }
    }
    rows
}

fn to_json(served: &[Served], rows: &[Row]) -> Value {
    let models: Vec<Value> = rows
        .iter()
        .map(|row| {
            let info = row
                .info
                .unwrap_or_else(|| models::lookup(&row.provider, row.kind, &row.id));
            let price = info.price.as_ref().map(|p| {
                json!({"input": p.base.input, "output": p.base.output,
                    "cache_write": p.base.cache_write_5m, "cache_read": p.base.cache_read})
            });
            json!({
                "id": row.id,
                "provider": row.provider,
                "context_window": info.context_window,
                "max_output": info.max_output,
                "price": price,
                "in_table": row.info.is_some(),
                "served": row.served,
            })
        })
        .collect();
    let providers: Vec<Value> = served
        .iter()
        .map(|p| {
            json!({
                "provider": p.config.name,
                "base_url": p.config.base_url,
                "served": p.ids.as_ref().ok().map(Vec::len),
                "error": p.ids.as_ref().err(),
                "cached": p.cached,
            })
        })
        .collect();
    json!({"models": models, "providers": providers, "table_checked": models::checked()})
}

fn write_text(
    out: &mut impl std::io::Write,
    served: &[Served],
    rows: &[Row],
) -> std::io::Result<()> {
    for provider in served {
        let name = &provider.config.name;
        match &provider.ids {
            Ok(ids) => {
                let when = if provider.cached { ", cached" } else { "" };
                writeln!(
                    out,
                    "# {name} ({}): {} served{when}",
                    provider.config.base_url,
                    ids.len()
                )?;
            }
            Err(why) => writeln!(out, "# {name}: {why}")?,
        }
    }
    for row in rows {
        let (context, output, price) = match row.info {
            Some(info) => (
                info.context_window.to_string(),
                info.max_output.to_string(),
                info.price.as_ref().map_or_else(
                    || "-".to_owned(),
                    |p| format!("${}/${}", p.base.input, p.base.output),
                ),
            ),
            None => ("?".to_owned(), "?".to_owned(), "-".to_owned()),
        };
        let mark = match (row.info.is_some(), row.served) {
            (true, Some(true)) => "served",
            (true, Some(false)) => "not served",
            (true, None) => "in the table",
            (false, _) => "served, not in the table",
        };
        writeln!(
            out,
            "{}\t{}\tcontext {context}\tmax output {output}\t{price}\t{mark}",
            row.provider, row.id
        )?;
    }
    Ok(())
}
