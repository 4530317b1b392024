//! A small model catalogue: defaults per provider, context windows and
//! output limits. Unknown models are allowed and get conservative limits.

use crate::provider::ProviderKind;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    pub id: &'static str,
    pub provider: ProviderKind,
    pub context_window: u32,
    pub max_output: u32,
    pub reasoning: bool,
    /// USD per million input and output tokens (list prices), when known.
    pub price: Option<(f64, f64)>,
}

/// Limits assumed for a model the catalogue does not know.
pub const UNKNOWN_CONTEXT_WINDOW: u32 = 32_000;
pub const UNKNOWN_MAX_OUTPUT: u32 = 8192;

const CATALOGUE: &[ModelInfo] = &[
    ModelInfo {
        id: "claude-sonnet-4-5",
        provider: ProviderKind::Anthropic,
        context_window: 200_000,
        max_output: 64_000,
        reasoning: true,
        price: Some((3.0, 15.0)),
    },
    ModelInfo {
        id: "claude-opus-4-1",
        provider: ProviderKind::Anthropic,
        context_window: 200_000,
        max_output: 32_000,
        reasoning: true,
        price: Some((15.0, 75.0)),
    },
    ModelInfo {
        id: "claude-haiku-4-5",
        provider: ProviderKind::Anthropic,
        context_window: 200_000,
        max_output: 64_000,
        reasoning: true,
        price: Some((1.0, 5.0)),
    },
    ModelInfo {
        id: "gpt-4.1",
        provider: ProviderKind::OpenAi,
        context_window: 1_047_576,
        max_output: 32_768,
        reasoning: false,
        price: Some((2.0, 8.0)),
    },
    ModelInfo {
        id: "gpt-4.1-mini",
        provider: ProviderKind::OpenAi,
        context_window: 1_047_576,
        max_output: 32_768,
        reasoning: false,
        price: Some((0.4, 1.6)),
    },
    ModelInfo {
        id: "o4-mini",
        provider: ProviderKind::OpenAi,
        context_window: 200_000,
        max_output: 100_000,
        reasoning: true,
        price: Some((1.1, 4.4)),
    },
];

/// Every catalogued model of `provider` (ollama models are whatever the server has).
pub fn models(provider: ProviderKind) -> Vec<ModelInfo> {
    CATALOGUE
        .iter()
        .filter(|m| m.provider == provider)
        .copied()
        .collect()
}

/// The model used when `--model` is not given; ollama has none.
pub fn default_model(provider: ProviderKind) -> Option<&'static str> {
    match provider {
        ProviderKind::Anthropic => Some("claude-sonnet-4-5"),
        ProviderKind::OpenAi => Some("gpt-4.1"),
        ProviderKind::Ollama => None,
    }
}

/// What the catalogue knows about `id`, or conservative limits.
pub fn info(provider: ProviderKind, id: &str) -> ModelInfo {
    CATALOGUE
        .iter()
        .find(|m| m.id == id)
        .copied()
        .unwrap_or(ModelInfo {
            id: "",
            provider,
            context_window: UNKNOWN_CONTEXT_WINDOW,
            max_output: UNKNOWN_MAX_OUTPUT,
            reasoning: false,
            price: None,
        })
}
