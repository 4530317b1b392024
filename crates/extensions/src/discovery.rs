//! Finding extensions: `--ext` paths, then `./.zot/extensions/<dir>/`, then
//! `$ZOT_HOME/extensions/<dir>/` (each root sorted by directory name), and
//! deciding which of them may run. Reads manifests only; spawns nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::config::HostConfig;
use crate::manifest::{Dialect, MANIFEST_FILE, Manifest, ManifestError};

/// Where an extension was found, in precedence order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// `--ext` for this run.
    Explicit,
    /// `./.zot/extensions`.
    Project,
    /// `$ZOT_HOME/extensions`.
    Global,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Explicit => "explicit",
            Self::Project => "project",
            Self::Global => "global",
        }
    }
}

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

/// Every extension directory in load order, each with its status: `--ext`,
/// `./.zot/extensions`, `$ZOT_HOME/extensions`, then the portable nimlet
/// roots `~/.agents/extensions` and `./.agents/extensions`.
pub fn discover(config: &HostConfig) -> Vec<Found> {
    let mut candidates: Vec<(Scope, Dialect, PathBuf)> = config
        .explicit
        .iter()
        .map(|dir| (Scope::Explicit, Dialect::Zot, absolute(dir)))
        .collect();
    if config.discover {
        let mut roots = vec![
            (Scope::Project, Dialect::Zot, config.project_root()),
            (Scope::Global, Dialect::Zot, config.global_root()),
        ];
        if let Some(root) = config.agents_global_root() {
            roots.push((Scope::Global, Dialect::Nimlet, root));
        }
        roots.push((
            Scope::Project,
            Dialect::Nimlet,
            config.agents_project_root(),
        ));
        for (scope, dialect, root) in roots {
            candidates.extend(
                subdirectories(&root)
                    .into_iter()
                    .map(|dir| (scope, dialect, dir)),
            );
        }
    }

    // Name → directory of the first extension (in precedence order) that claimed it.
    let mut claimed: HashMap<String, PathBuf> = HashMap::new();
    candidates
        .into_iter()
        .map(|(scope, dialect, dir)| {
            let status = match Manifest::load_in(&dir, dialect) {
                Err(e) => FoundStatus::Invalid(e),
                Ok(m) if !m.enabled => FoundStatus::Disabled(m),
                Ok(m) if scope == Scope::Project && !config.project_trusted => {
                    FoundStatus::Untrusted(m)
                }
                Ok(m) => match claimed.get(&m.name) {
                    Some(by) => FoundStatus::Shadowed {
                        manifest: m,
                        by: by.clone(),
                    },
                    None => {
                        claimed.insert(m.name.clone(), dir.clone());
                        if m.is_process() {
                            FoundStatus::Load(m)
                        } else {
                            FoundStatus::Bundle(m)
                        }
                    }
                },
            };
            // The manifest's own protocol when it parsed, else its root's.
            let mut found = Found {
                scope,
                dir,
                status,
                dialect,
            };
            if let Some(own) = found.manifest().and_then(Manifest::dialect) {
                found.dialect = own;
            }
            found
        })
        .collect()
}

/// Subdirectories of `root` that hold a manifest file, sorted by name. A
/// missing root is simply empty.
fn subdirectories(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir() && path.join(MANIFEST_FILE).exists())
        .collect();
    dirs.sort();
    dirs
}

/// `--ext` paths are relative to the process working directory, as typed.
fn absolute(dir: &Path) -> PathBuf {
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
}
