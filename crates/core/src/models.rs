//! The model table (`data/models.toml`): ids and aliases, limits, prices,
//! the thinking interface and the request shape of every model zot knows.
//! Unknown models are allowed and get conservative limits and no price.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::provider::config::{ProviderConfig, ProviderKind, Wire};
use crate::provider::usage::Usage;

/// The table, compiled in: one file to update when providers change.
const TABLE: &str = include_str!("../data/models.toml");

/// Upper bound for `max_tokens` per call, whatever the model could do.
pub const MAX_TOKENS_CAP: u32 = 32_000;

/// Limits assumed for a model the table does not know.
pub const UNKNOWN_CONTEXT_WINDOW: u32 = 32_000;
pub const UNKNOWN_MAX_OUTPUT: u32 = 8192;

/// How `--reasoning` reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Thinking {
    /// No reasoning: `--reasoning` is ignored.
    #[default]
    None,
    /// Anthropic `thinking.budget_tokens`.
    Budget,
    /// Anthropic adaptive thinking with `output_config.effort`.
    Adaptive,
    /// OpenAI `reasoning_effort` (and `max_completion_tokens`).
    Effort,
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
    pub cache_read: f64,
}

/// Rates that apply once the prompt is longer than `above` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Tier {
    pub above: u64,
    #[serde(flatten)]
    pub rates: Rates,
}

/// A model's list prices.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Price {
    #[serde(flatten)]
    pub base: Rates,
    #[serde(default)]
    pub tiers: Vec<Tier>,
}

impl Price {
    /// The rates for a prompt of `prompt_tokens` (input, cache reads and
    /// cache writes together): the highest tier it passes, else the base.
    pub fn rates(&self, prompt_tokens: u64) -> &Rates {
        self.tiers
            .iter()
            .filter(|tier| prompt_tokens > tier.above)
            .max_by_key(|tier| tier.above)
            .map_or(&self.base, |tier| &tier.rates)
    }

    /// What one model call with `usage` costs, in USD. The one place a
    /// call is priced: usage events, the session total and the status line
    /// all come from here.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let prompt = usage.input + usage.cache_read + usage.cache_write;
        let rates = self.rates(prompt);
        let write_1h = usage.cache_write_1h.min(usage.cache_write);
        let write_5m = usage.cache_write - write_1h;
        (usage.input as f64 * rates.input
            + usage.output as f64 * rates.output
            + usage.cache_read as f64 * rates.cache_read
            + write_5m as f64 * rates.cache_write_5m
            + write_1h as f64 * rates.cache_write_1h)
            / 1e6
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelInfo {
    pub id: String,
    /// The provider's name: a built-in one, or a named provider of the
    /// user's config.
    pub provider: String,
    /// Other ids the provider accepts for it (dated snapshots).
    #[serde(default)]
    pub aliases: Vec<String>,
    pub context_window: u32,
    pub max_output: u32,
    #[serde(default)]
    pub thinking: Thinking,
    /// Sampling parameters the model accepts.
    #[serde(default)]
    pub sampling: Vec<String>,
    /// Whether it reads image input.
    #[serde(default)]
    pub images: bool,
    /// The APIs that serve it, preferred first.
    #[serde(default)]
    pub wire: Vec<Wire>,
    pub price: Option<Price>,
}

impl ModelInfo {
    /// Whether `--reasoning` means anything to it.
    pub fn reasoning(&self) -> bool {
        self.thinking != Thinking::None
    }

    /// Whether the table knows it (unknown ids get an entry with an empty id).
    pub fn known(&self) -> bool {
        !self.id.is_empty()
    }

    fn unknown(provider: ProviderKind) -> Self {
        Self {
            id: String::new(),
            provider: provider.name().to_owned(),
            aliases: Vec::new(),
            context_window: UNKNOWN_CONTEXT_WINDOW,
            max_output: UNKNOWN_MAX_OUTPUT,
            // What the provider's API took before adaptive thinking: a new
            // model that wants otherwise says so in its error.
            thinking: match provider {
                ProviderKind::Anthropic => Thinking::Budget,
                ProviderKind::OpenAi | ProviderKind::Ollama => Thinking::Effort,
            },
            sampling: Vec::new(),
            images: true,
            wire: Vec::new(),
            price: None,
        }
    }
}

#[derive(Debug, Deserialize)]
struct File {
    /// When the table was last checked against the providers' pages.
    checked: String,
    model: Vec<ModelInfo>,
}

struct Table {
    checked: String,
    models: Vec<ModelInfo>,
    /// One per provider kind, for ids the table does not know.
    unknown: [ModelInfo; 3],
}

fn table() -> &'static Table {
    static TABLE_CELL: OnceLock<Table> = OnceLock::new();
    TABLE_CELL.get_or_init(|| {
        let file = parse(TABLE).unwrap_or_else(|e| {
            // A unit test parses the file, so this is only a safety net.
            tracing::error!(error = %e, "the built-in model table does not parse");
            File {
                checked: String::new(),
                model: Vec::new(),
            }
        });
        Table {
            checked: file.checked,
            models: file.model,
            unknown: [
                ModelInfo::unknown(ProviderKind::Anthropic),
                ModelInfo::unknown(ProviderKind::OpenAi),
                ModelInfo::unknown(ProviderKind::Ollama),
            ],
        }
    })
}

fn parse(text: &str) -> Result<File, toml::de::Error> {
    toml::from_str(text)
}

/// When the table's figures were last checked (`YYYY-MM-DD`).
pub fn checked() -> &'static str {
    &table().checked
}

/// The user's additions and overrides (`$ZOT_HOME/models.json`), set once
/// at start-up before any lookup ([`add_user_models`]).
static USER: OnceLock<Vec<ModelInfo>> = OnceLock::new();

fn user() -> &'static [ModelInfo] {
    USER.get().map_or(&[], Vec::as_slice)
}

/// Adds the models of `$ZOT_HOME/models.json` for this process: an entry
/// with an id the table knows replaces the table's. Only the first call
/// counts (a process reads the file once).
pub fn add_user_models(models: Vec<ModelInfo>) {
    let _ = USER.set(models);
}

/// Every known model of the provider named `provider`: the user's first,
/// then the table's current ones (ollama models are whatever the server has).
pub fn models(provider: &str) -> impl Iterator<Item = &'static ModelInfo> {
    let user = user();
    let overridden = move |m: &ModelInfo| user.iter().any(|u| u.id == m.id);
    user.iter()
        .chain(table().models.iter().filter(move |m| !overridden(m)))
        .filter(move |m| m.provider == provider)
}

/// Parses `models.json` (`{"models": [...]}`, each entry as `zot models
/// --json` prints a model); an error names the line and column.
pub fn parse_user_models(text: &str) -> Result<Vec<ModelInfo>, serde_json::Error> {
    let file: UserFile = serde_json::from_str(text)?;
    Ok(file.models.into_iter().map(UserModel::into_info).collect())
}

/// Parses a named provider's `models` (entries as in `models.json`, whose
/// `provider` may be left out: it is `provider`).
pub fn parse_provider_models(
    provider: &str,
    models: &serde_json::Value,
) -> Result<Vec<ModelInfo>, serde_json::Error> {
    let mut models = models.clone();
    for entry in models.as_array_mut().into_iter().flatten() {
        if let Some(entry) = entry.as_object_mut() {
            entry.entry("provider").or_insert_with(|| provider.into());
        }
    }
    let models: Vec<UserModel> = serde_json::from_value(models)?;
    Ok(models.into_iter().map(UserModel::into_info).collect())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserFile {
    models: Vec<UserModel>,
}

/// A model entry as the user writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserModel {
    id: String,
    provider: String,
    #[serde(default)]
    aliases: Vec<String>,
    context_window: u32,
    max_output: u32,
    /// Not given: the model does not reason (`max_tokens`, no effort).
    #[serde(default)]
    thinking: Thinking,
    #[serde(default)]
    sampling: Vec<String>,
    #[serde(default = "yes")]
    images: bool,
    #[serde(default)]
    wire: Vec<Wire>,
    price: Option<UserPrice>,
    // What `zot models --json` adds to an entry, so one can be pasted.
    #[serde(default, rename = "in_table")]
    _in_table: Option<serde_json::Value>,
    #[serde(default, rename = "served")]
    _served: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserPrice {
    input: f64,
    output: f64,
    #[serde(default)]
    cache_write: Option<f64>,
    #[serde(default)]
    cache_write_1h: Option<f64>,
    #[serde(default)]
    cache_read: Option<f64>,
}

fn yes() -> bool {
    true
}

impl UserModel {
    fn into_info(self) -> ModelInfo {
        let price = self.price.map(|p| {
            let write = p.cache_write.unwrap_or(p.input);
            Price {
                base: Rates {
                    input: p.input,
                    output: p.output,
                    cache_write_5m: write,
                    cache_write_1h: p.cache_write_1h.unwrap_or(write),
                    cache_read: p.cache_read.unwrap_or(p.input),
                },
                tiers: Vec::new(),
            }
        });
        ModelInfo {
            id: self.id,
            provider: self.provider,
            aliases: self.aliases,
            context_window: self.context_window,
            max_output: self.max_output.min(self.context_window),
            thinking: self.thinking,
            sampling: self.sampling,
            images: self.images,
            wire: self.wire,
            price,
        }
    }
}

/// The model used when `--model` is not given: each provider's current
/// all-round model (both reason by default, adaptive thinking with an effort
/// level and reasoning effort respectively); ollama has none.
pub fn default_model(provider: ProviderKind) -> Option<&'static str> {
    match provider {
        ProviderKind::Anthropic => Some("claude-sonnet-5-5"),
        ProviderKind::OpenAi => Some("gpt-6.2-sol"),
        ProviderKind::Ollama => None,
    }
}

/// What the table knows about `id` (or one of its aliases) at a built-in
/// provider, or conservative limits for it.
pub fn info(provider: ProviderKind, id: &str) -> &'static ModelInfo {
    lookup(provider.name(), provider, id)
}

/// [`info`] for the provider `config` reaches (a named one included).
pub fn of(config: &ProviderConfig, id: &str) -> &'static ModelInfo {
    lookup(&config.name, config.kind, id)
}

/// `id` at the provider named `name`: its own entries first, then any
/// provider's (a proxy serves the same model under the same id), else
/// conservative limits for a provider of `kind`.
pub fn lookup(name: &str, kind: ProviderKind, id: &str) -> &'static ModelInfo {
    let table = table();
    let named = |m: &&ModelInfo| m.id == id || m.aliases.iter().any(|a| a == id);
    user()
        .iter()
        .find(|m| m.provider == name && named(m))
        .or_else(|| user().iter().find(named))
        .or_else(|| table.models.iter().find(named))
        .unwrap_or(match kind {
            ProviderKind::Anthropic => &table.unknown[0],
            ProviderKind::OpenAi => &table.unknown[1],
            ProviderKind::Ollama => &table.unknown[2],
        })
}

/// The list prices of `id` at the provider `config` reaches, when known.
/// Usage is priced per call with the model that served it.
pub fn price(config: &ProviderConfig, id: &str) -> Option<&'static Price> {
    of(config, id).price.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_every_entry_is_sane() {
        let file = parse(TABLE).unwrap();
        assert_eq!(file.checked.len(), "2026-12-02".len());
        let mut ids = std::collections::HashSet::new();
        for model in &file.model {
            assert!(
                ProviderKind::parse(&model.provider).is_some(),
                "{}",
                model.id
            );
            for id in std::iter::once(&model.id).chain(&model.aliases) {
                assert!(ids.insert(id.clone()), "{id} listed twice");
            }
            assert!(model.max_output <= model.context_window, "{}", model.id);
            assert!(!model.wire.is_empty(), "{}", model.id);
            let price = model.price.as_ref().unwrap();
            for rates in std::iter::once(&price.base).chain(price.tiers.iter().map(|t| &t.rates)) {
                assert!(rates.cache_read <= rates.input, "{}", model.id);
                assert!(rates.cache_write_5m <= rates.cache_write_1h, "{}", model.id);
            }
        }
        // The models of the old table stay, with their prices.
        for (id, input, output) in [
            ("claude-sonnet-4-5", 3.0, 15.0),
            ("claude-opus-4-1", 15.0, 75.0),
            ("claude-haiku-4-5", 1.0, 5.0),
            ("gpt-4.1", 2.0, 8.0),
            ("gpt-4.1-mini", 0.4, 1.6),
            ("o4-mini", 1.1, 4.4),
        ] {
            let base = &file.model.iter().find(|m| m.id == id).unwrap();
            let rates = &base.price.as_ref().unwrap().base;
            assert_eq!((rates.input, rates.output), (input, output), "{id}");
        }
    }

    #[test]
    fn aliases_and_unknown_ids() {
        let dated = info(ProviderKind::Anthropic, "claude-haiku-4-5-20251001");
        assert_eq!(dated.id, "claude-haiku-4-5");
        let unknown = info(ProviderKind::OpenAi, "my-local-model");
        assert!(!unknown.known());
        assert_eq!(unknown.context_window, UNKNOWN_CONTEXT_WINDOW);
        assert!(unknown.price.is_none());
        assert_eq!(
            info(ProviderKind::Anthropic, "claude-opus-5-5").thinking,
            Thinking::Adaptive
        );
    }

    #[test]
    fn cost_prices_cache_writes_by_lifetime_and_long_prompts_by_tier() {
        let price = |kind: ProviderKind, id: &str| info(kind, id).price.as_ref();
        let sonnet = price(ProviderKind::Anthropic, "claude-sonnet-4-5").unwrap();
        let usage = Usage {
            input: 1_000_000,
            output: 100_000,
            // Part of `output`: priced with it, not again.
            reasoning: 40_000,
            cache_read: 1_000_000,
            cache_write: 2_000_000,
            cache_write_1h: 1_000_000,
        };
        // 3 + 1.5 + 0.30 + 3.75 + 6.
        assert!((sonnet.cost(&usage) - 14.55).abs() < 1e-9);
        let haiku = price(ProviderKind::Anthropic, "claude-haiku-5-5").unwrap();
        let short = Usage {
            input: 100_000,
            output: 1_000_000,
            ..Usage::default()
        };
        assert!((haiku.cost(&short) - (0.01 + 0.5)).abs() < 1e-9);
        let long = Usage {
            input: 100_001,
            ..short
        };
        assert!((haiku.cost(&long) - (100_001.0 * 0.5 / 1e6 + 2.5)).abs() < 1e-9);
    }
}
