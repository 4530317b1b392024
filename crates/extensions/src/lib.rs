//! The zot extension host: finds extensions, runs each as a supervised
//! subprocess speaking newline-delimited JSON over stdio, keeps what they
//! register, and calls into them for commands, tools, events and intercepts.
//!
//! Start with [`ExtensionHost::start`]; front ends consume the
//! [`HostEvent`] stream it returns. Unix only (process groups, signals).

pub mod config;
mod connection;
mod dialect;
pub mod discovery;
mod dispatch;
mod ext_log;
mod extension;
mod host;
pub mod limits;
pub mod manage;
pub mod manifest;
mod registry;
mod supervisor;
pub mod trust;

pub use config::{HostConfig, default_zot_home, zot_home_from};
pub use connection::RequestError;
pub use dialect::zot::HandshakeError;
pub use discovery::{Found, FoundStatus, Scope, discover};
pub use dispatch::{
    Cancelled, CommandOutcome, CommandReply, CompactDecision, DispatchError, MessageVerdict,
    PreparedPrompt, ToolCallVerdict, ToolReply, TurnVerdict,
};
pub use extension::Readiness;
pub use host::{
    ExtensionHost, ExtensionReport, HostEvent, LoadError, LoadErrorKind, LoadedInfo, QuestionReply,
    ReloadStats, ReportStatus,
};
pub use limits::Limits;
pub use manifest::{Dialect, Launch, Manifest, ManifestError};
pub use registry::{CommandInfo, Conflict, NameKind, Owner, ToolInfo};
pub use tokio_util::sync::CancellationToken;
pub use trust::{TrustEntry, TrustError, TrustStatus, TrustStore};
pub use zot_protocol;
