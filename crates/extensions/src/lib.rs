//! The zot extension host: finds extensions, runs each as a supervised
//! subprocess speaking newline-delimited JSON over stdio (or connects to it
//! over WebSocket or HTTP), keeps what they register, and calls into them
//! for commands, tools, events and intercepts.
//!
//! Start with [`ExtensionHost::start`]; front ends consume the
//! [`HostEvent`] stream it returns. Unix only (process groups, signals).

mod adapted;
pub mod adapter;
pub mod atomic_file;
pub mod config;
pub mod context;
mod decide;
pub mod discovery;
mod dispatch;
pub mod ecosystem;
pub mod ext_log;
mod extension;
mod found;
mod host;
pub mod limits;
pub mod manage;
pub mod manifest;
pub mod model;
pub mod participant;
pub mod permissions;
pub mod pins;
mod placeholders;
mod reaper;
mod registry;
pub mod remote;
pub mod sampling;
mod scope;
mod tool_schema;
pub mod transport;
pub mod trust;
pub mod trust_gate;

pub use adapted::{Adapted, Entry};
pub use adapter::{HandshakeError, ProgressSink};
pub use config::{HostConfig, default_zot_home, zot_home_from};
pub use decide::{Permission, PermissionDecision, PromptDecision, Refusal, ResultDecision};
pub use discovery::discover;
pub use dispatch::{Cancelled, CompactDecision, DispatchError, Outcome, PreparedPrompt, ToolReply};
pub use ecosystem::Ecosystem;
pub use extension::Readiness;
pub use found::{Found, FoundStatus};
pub use host::{
    Connectivity, ExtensionHost, ExtensionReport, LoadError, LoadErrorKind, LoadedInfo,
    ReloadStats, ReportStatus,
};
pub use limits::Limits;
pub use manifest::{Dialect, Launch, Manifest, ManifestError, OnFailure, Remote};
pub use model::{CustomSummary, Hook, HookPoint, ToolInfo};
pub use participant::{Participant, SessionFacts};
pub use permissions::Permissions;
pub use registry::{Conflict, NameKind, Owner};
pub use scope::Scope;
pub use tokio_util::sync::CancellationToken;
pub use transport::RequestError;
pub use trust::{
    ChangeKind, FileChange, Repin, TrustCheck, TrustEntry, TrustError, TrustStatus, TrustStore,
};
pub use zot_protocol;
pub use zot_protocol::ui::{
    CommandInfo, CommandOutcome, CommandReply, HostEvent, QuestionReply, ReloadSummary,
};
