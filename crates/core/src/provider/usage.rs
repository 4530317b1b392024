//! What a model call cost in tokens. Apart from the call's other types so the
//! model table (which prices it) and the agent's events (which report it)
//! need nothing else of the provider.

/// Token counts of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    /// The part of `output` spent reasoning (already counted in `output`).
    pub reasoning: u64,
    pub cache_read: u64,
    /// Tokens written to the cache, of every lifetime.
    pub cache_write: u64,
    /// The part of `cache_write` kept for an hour (priced higher).
    pub cache_write_1h: u64,
}
