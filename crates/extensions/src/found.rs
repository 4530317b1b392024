//! What discovery found: one extension directory or configured entry, with
//! whether it may run. A leaf below discovery and the ecosystems that add
//! entries of their own.

use std::path::PathBuf;

use crate::manifest::{Dialect, Manifest, ManifestError};
use crate::scope::Scope;

/// One extension directory that discovery looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub scope: Scope,
    pub dir: PathBuf,
    pub status: FoundStatus,
    /// The protocol: the manifest's, or (for an invalid one) its root's.
    pub dialect: Dialect,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoundStatus {
    /// Enabled and not shadowed: a subprocess to start.
    Load(Manifest),
    /// A theme- or skill-only bundle: claims its name, never spawned.
    Bundle(Manifest),
    /// `enabled: false`: listed, not spawned, claims no name.
    Disabled(Manifest),
    /// A project extension in a project the user has not trusted: listed,
    /// not spawned, claims no name.
    Untrusted(Manifest),
    /// An earlier extension (by precedence) has the same manifest name.
    Shadowed {
        manifest: Manifest,
        by: PathBuf,
    },
    Invalid(ManifestError),
}

impl Found {
    pub fn manifest(&self) -> Option<&Manifest> {
        match &self.status {
            FoundStatus::Load(m)
            | FoundStatus::Bundle(m)
            | FoundStatus::Disabled(m)
            | FoundStatus::Untrusted(m)
            | FoundStatus::Shadowed { manifest: m, .. } => Some(m),
            FoundStatus::Invalid(_) => None,
        }
    }
}
