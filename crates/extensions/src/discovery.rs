//! Finding extensions: `--ext` paths, then `./.zot/extensions/<dir>/`, then
//! `$ZOT_HOME/extensions/<dir>/` (each root sorted by directory name), and
//! deciding which of them may run; then each installed ecosystem's entries
//! from its own config files, named `<kind>:<name>`. Reads manifests and
//! config files only; spawns nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::config::HostConfig;
use crate::manifest::{Dialect, MANIFEST_FILE, Manifest};
use crate::scope::Scope;

pub use crate::found::{Found, FoundStatus};

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
    let mut found: Vec<Found> = candidates
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
        .collect();
    if config.discover {
        for ecosystem in crate::ecosystem::installed() {
            found.extend(ecosystem.discover(config));
        }
    }
    found
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
