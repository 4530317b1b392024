//! What the host reports: load errors, each discovered extension's state
//! (`ExtensionHost::report`), a remote extension's connectivity, reload figures.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use zot_protocol::ui::{CommandInfo, ReloadSummary};

use crate::adapter::HandshakeError;
use crate::config::HostConfig;
use crate::discovery::{Found, FoundStatus};
use crate::extension::{Extension, Readiness};
use crate::manifest::Dialect;
use crate::model::{Mode, ToolInfo};
use crate::scope::Scope;

/// Why an extension could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub extension: String,
    pub dir: PathBuf,
    pub kind: LoadErrorKind,
    /// How the process ended (`exit status: 3`, `signal: 9 (SIGKILL)`), when it ran.
    pub status: Option<String>,
    pub log: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadErrorKind {
    #[error("cannot open log: {0}")]
    Log(String),
    /// Its permission scope cannot be enforced or set up (the message says why).
    #[error("permissions: {0}")]
    Sandbox(String),
    #[error("cannot create its data directory: {0}")]
    DataDir(String),
    #[error("spawn {program}: {error}")]
    Spawn { program: String, error: String },
    /// A file the project runs changed since it was trusted (the message
    /// says which); not started until the user trusts it again.
    #[error("not started: {0}")]
    Changed(String),
    /// The remote settings cannot work as written (a missing variable,
    /// plain text to another machine); not retried.
    #[error("{0}")]
    Remote(String),
    /// The server could not be reached; zot keeps trying in the background.
    #[error("cannot connect to {url}: {error}")]
    Connect { url: String, error: String },
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "extension {}: {}", self.extension, self.kind)?;
        match &self.status {
            // A remote extension's status already says it is a connection.
            Some(status) if status.starts_with("connection") => write!(f, " ({status})")?,
            Some(status) => write!(f, " (process: {status})")?,
            None => {}
        }
        write!(f, "; log: {}", self.log.display())
    }
}

impl std::error::Error for LoadError {}

/// One discovered extension directory and what became of it.
#[derive(Debug, Clone)]
pub struct ExtensionReport {
    pub scope: Scope,
    pub dir: PathBuf,
    /// The manifest name, when the manifest is valid.
    pub name: Option<String>,
    pub version: Option<String>,
    pub log: Option<PathBuf>,
    pub status: ReportStatus,
    /// The protocol its manifest names.
    pub dialect: Dialect,
    /// A remote extension's `url` as written (headers are never reported).
    pub url: Option<String>,
    /// A remote extension's connection, once the host has tried it.
    pub connection: Option<Connectivity>,
}

/// Where a remote extension's connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connectivity {
    Connected,
    /// Lost (or never made): attempt `attempt` comes in `next_in`.
    Reconnecting {
        attempt: u32,
        next_in: Duration,
    },
    /// Cannot work as written (a missing variable, plain text to another
    /// machine): not tried again until a reload; the load error says why.
    Failed,
}

impl std::fmt::Display for Connectivity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connected => f.write_str("connected"),
            Self::Reconnecting { attempt, next_in } => write!(
                f,
                "reconnecting (attempt {attempt}, next in {:.1} s)",
                next_in.as_secs_f64()
            ),
            Self::Failed => f.write_str("failed"),
        }
    }
}

#[derive(Debug, Clone)]
pub enum ReportStatus {
    /// Being spawned or in its handshake right now (a reload is under way,
    /// or an ecosystem's extension starts in the background).
    Starting,
    /// Turned off by the user for this session (`set_enabled`).
    Off,
    Loaded(LoadedInfo),
    Failed(LoadError),
    Disabled,
    /// A project extension in an untrusted project, never spawned.
    Untrusted,
    /// Theme- or skill-only bundle, never spawned.
    Bundle,
    Shadowed {
        by: PathBuf,
    },
    InvalidManifest(crate::manifest::ManifestError),
}

/// A loaded extension as it is now.
#[derive(Debug, Clone)]
pub struct LoadedInfo {
    /// The process id; `None` for a remote extension.
    pub pid: Option<i32>,
    pub readiness: Readiness,
    pub running: bool,
    /// How it ended, once it has.
    pub exit: Option<String>,
    pub commands: Vec<CommandInfo>,
    pub tools: Vec<ToolInfo>,
    pub events: Vec<String>,
    pub intercepts: Vec<String>,
    /// The protocol version negotiated in the handshake, for protocols that negotiate one.
    pub protocol_version: Option<String>,
    /// Resources it offers (resource URIs, as listed at start).
    pub resources: Vec<String>,
}

/// What `reload` did.
#[derive(Debug, Clone, Default)]
pub struct ReloadStats {
    pub stopped: usize,
    pub loaded: usize,
    /// Loaded extensions that sent `ready` or went quiet (auto-ready).
    pub ready: usize,
    pub errors: Vec<LoadError>,
}

impl ReloadStats {
    /// The figures as the front ends report them.
    pub fn summary(&self) -> ReloadSummary {
        ReloadSummary {
            stopped: self.stopped,
            loaded: self.loaded,
            ready: self.ready,
            errors: self.errors.iter().map(ToString::to_string).collect(),
        }
    }
}

pub(crate) type LoadOutcome = Result<Arc<Extension>, LoadError>;

/// Whether a remote extension's failed load is tried again: everything but
/// settings that cannot work as written and local trouble (log, data dir).
pub(super) fn retried(kind: &LoadErrorKind) -> bool {
    matches!(
        kind,
        LoadErrorKind::Connect { .. } | LoadErrorKind::Handshake(_)
    ) && !matches!(
        kind,
        // Trying again cannot sign in: that takes the user.
        LoadErrorKind::Handshake(HandshakeError::LoginNeeded(_))
    )
}

pub(super) fn report_entry(
    config: &HostConfig,
    found: &Found,
    outcome: Option<&LoadOutcome>,
    reconnecting: Option<Connectivity>,
) -> ExtensionReport {
    let manifest = found.manifest();
    let status = match (&found.status, outcome) {
        (FoundStatus::Invalid(e), _) => ReportStatus::InvalidManifest(e.clone()),
        (FoundStatus::Disabled(_), _) => ReportStatus::Disabled,
        (FoundStatus::Untrusted(_), _) => ReportStatus::Untrusted,
        (FoundStatus::Bundle(_), _) => ReportStatus::Bundle,
        (FoundStatus::Shadowed { by, .. }, _) => ReportStatus::Shadowed { by: by.clone() },
        (FoundStatus::Load(_), Some(Err(e))) => ReportStatus::Failed(e.clone()),
        (FoundStatus::Load(_), Some(Ok(ext))) => {
            let regs = ext.registrations();
            let listed = |wanted: Mode| {
                let names: BTreeSet<&str> = regs
                    .hooks
                    .iter()
                    .map(|(point, mode)| ext.adapter.listed_as(*point, *mode))
                    .filter(|(list, _)| *list == wanted)
                    .map(|(_, name)| name)
                    .collect();
                names.into_iter().map(str::to_owned).collect()
            };
            ReportStatus::Loaded(LoadedInfo {
                pid: ext.endpoint.pid(),
                readiness: ext.readiness(),
                running: ext.is_alive(),
                exit: ext.endpoint.exit(),
                commands: regs.commands.clone(),
                tools: regs.tools.clone(),
                events: listed(Mode::Observe),
                intercepts: listed(Mode::Intercept),
                protocol_version: ext.adapter.protocol_version(),
                resources: ext.adapter.resources(),
            })
        }
        (FoundStatus::Load(_), None) => ReportStatus::Starting,
    };
    ExtensionReport {
        scope: found.scope,
        dir: found.dir.clone(),
        name: manifest.map(|m| m.name.clone()),
        version: manifest.and_then(|m| m.version.clone()),
        log: manifest
            .filter(|m| m.is_process())
            .map(|m| config.log_path(&m.name)),
        url: manifest.and_then(|m| m.remote()).map(|r| r.url.clone()),
        connection: match (
            manifest.and_then(|m| m.network_url()),
            reconnecting,
            outcome,
        ) {
            (None, ..) => None,
            (Some(_), Some(reconnecting), _) => Some(reconnecting),
            (Some(_), None, Some(Ok(ext))) if ext.is_alive() => Some(Connectivity::Connected),
            (Some(_), None, Some(Err(e))) if !retried(&e.kind) => Some(Connectivity::Failed),
            (Some(_), None, _) => None,
        },
        status,
        dialect: found.dialect,
    }
}
