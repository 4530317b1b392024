//! Participants: what takes part at the agent's hook points beside the
//! extensions the host starts and supervises (command hooks, which are one
//! process per call). A participant hears the same [`Hook`]s and answers the
//! same [`Ask`]s with the same [`Verdict`]s; the host merges its answers with
//! the extensions' (`dispatch.rs`, `decide.rs`).

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::config::HostConfig;
use crate::model::{Ask, Hook, HookPoint, Verdict};

/// Where a participant's warning goes: (source, such as `hook:<Event>`, message).
pub type Warn = Arc<dyn Fn(String, String) + Send + Sync>;

/// Whether project code may start now: what it runs is as trusted as
/// when the project was trusted (the host's `TrustGate`, which tells the
/// user once when it is not).
pub trait Gate: Send + Sync {
    /// `Err(why)` when it may not.
    fn check(&self) -> BoxFuture<'_, Result<(), String>>;
}

/// What an ecosystem's participants are made from when a host starts or
/// reloads.
pub struct Joining<'a> {
    /// The host's configuration, with the project's trust as it is now.
    pub config: &'a HostConfig,
    /// Checks a trusted project's pins before each start of project code.
    pub gate: Arc<dyn Gate>,
    /// Warnings while the host runs: each is news to the user.
    pub warn: Warn,
    /// Whether a load-time warning is new in this run, noting it (so a
    /// reload does not say it again).
    pub first: &'a (dyn Fn(&str, &str) -> bool + Sync),
}

/// The session facts a participant's requests carry, as they are when it is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFacts {
    pub session_id: String,
    /// The file the conversation is written to, if any.
    pub transcript: Option<PathBuf>,
    /// Plan mode is on (only read-only tools are offered).
    pub plan: bool,
    /// Tool calls are confirmed by the user (`--no-yolo`), rather than run
    /// without asking.
    pub confirms: bool,
}

/// One participant at the hook points.
pub trait Participant: Send + Sync {
    /// The name a refusal is attributed to (`hook`).
    fn name(&self) -> &str;

    /// Whether it takes part at `point` now (so the host builds a request
    /// only when someone will read it).
    fn takes_part(&self, point: HookPoint) -> bool;

    /// Tells it what happened; returns once it has heard.
    fn observe<'a>(&'a self, facts: &'a SessionFacts, hook: &'a Hook) -> BoxFuture<'a, ()>;

    /// Its verdicts on `ask`, in its own order: a participant may be many
    /// hooks, and one hook may say several things (deny, add context, stop).
    fn intercept<'a>(
        &'a self,
        facts: &'a SessionFacts,
        ask: &'a Ask,
    ) -> BoxFuture<'a, Vec<Verdict>>;
}
