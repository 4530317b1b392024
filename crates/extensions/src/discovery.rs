//! Finding extensions: `--ext` paths, then `./.zot/extensions/<dir>/`, then
//! `$ZOT_HOME/extensions/<dir>/` (each root sorted by directory name), and
//! deciding which of them may run; then the MCP servers of `.mcp.json` and
//! `$ZOT_HOME/mcp.json`, each as one more entry named `mcp:<name>`. Reads
//! manifests and config files only; spawns nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::config::HostConfig;
use crate::manifest::{Dialect, MANIFEST_FILE, Manifest, ManifestError};
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
        found.extend(mcp_servers(config));
    }
    found
}

/// The MCP servers of both config files, as discovery entries: project
/// servers first (they win a name), each file's in file order.
fn mcp_servers(config: &HostConfig) -> Vec<Found> {
    use crate::mcp::config::{McpConfig, ServerStatus, process_env};
    let loaded = McpConfig::load(
        &config.zot_home,
        &config.cwd,
        config.project_trusted,
        &process_env,
    );
    let scope_of = |path: &Path| {
        if path.starts_with(&config.zot_home) {
            Scope::Global
        } else {
            Scope::Project
        }
    };
    let mut out: Vec<Found> = loaded
        .file_errors
        .iter()
        .map(|e| {
            let path = match e {
                crate::mcp::config::FileError::Read { path, .. }
                | crate::mcp::config::FileError::TooLarge { path }
                | crate::mcp::config::FileError::Syntax { path, .. }
                | crate::mcp::config::FileError::Shape { path, .. } => path.clone(),
            };
            let error = ManifestError::new(&path, None, e.to_string());
            invalid_mcp(scope_of(&path), &path, error)
        })
        .collect();
    out.extend(loaded.server_errors.iter().map(|e| {
        let field = format!("mcpServers.{}", e.server);
        let error = ManifestError::new(&e.path, Some(&field), e.message.clone());
        invalid_mcp(scope_of(&e.path), &e.path, error)
    }));
    out.extend(loaded.servers.into_iter().map(|(server, status)| {
        let scope = server.scope;
        let manifest = Manifest::for_mcp(server);
        let dir = manifest.dir.clone();
        let status = match status {
            ServerStatus::Load => FoundStatus::Load(manifest),
            ServerStatus::Disabled => FoundStatus::Disabled(manifest),
            ServerStatus::Untrusted => FoundStatus::Untrusted(manifest),
            ServerStatus::Shadowed { by } => FoundStatus::Shadowed { manifest, by },
        };
        Found {
            scope,
            dir,
            status,
            dialect: Dialect::Mcp,
        }
    }));
    out
}

fn invalid_mcp(scope: Scope, path: &Path, error: ManifestError) -> Found {
    Found {
        scope,
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        status: FoundStatus::Invalid(error),
        dialect: Dialect::Mcp,
    }
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
