//! MCP servers as an ecosystem of the host: found in `.mcp.json` and
//! `$ZOT_HOME/mcp.json`, each an entry named `mcp:<name>` run through the
//! MCP adapter; the project file is gated by trust with what it runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{self, FileError, McpConfig, McpServer, ServerStatus, process_env};
use crate::names::{LIST_RESOURCES, READ_RESOURCE};
use zot_extensions::Adapted;
use zot_extensions::Scope;
use zot_extensions::adapter::{Adapter, LaunchSpec};
use zot_extensions::config::HostConfig;
use zot_extensions::context::HostContext;
use zot_extensions::ecosystem::Ecosystem;
use zot_extensions::manage::{ManageError, Which};
use zot_extensions::manifest::{Dialect, Launch, Manifest, ManifestError, OnFailure};
use zot_extensions::{Found, FoundStatus};

/// The kind label of MCP servers: `mcp:<name>`, and the protocol in reports.
pub const KIND: &str = "mcp";

/// MCP servers, as the host's [`Ecosystem`].
pub struct McpServers;

/// The one instance the binary installs.
pub static MCP: McpServers = McpServers;

/// Makes the host run MCP servers (once per process; later calls do nothing).
pub fn install() {
    zot_extensions::ecosystem::install(&MCP);
}

impl Ecosystem for McpServers {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn label(&self) -> &'static str {
        "MCP"
    }

    fn noun(&self) -> &'static str {
        "MCP server"
    }

    fn add_hint(&self) -> &'static str {
        "add one with `zot mcp add`, see docs/mcp.md"
    }

    /// Without `mcp__<server>__`.
    fn tool_label<'a>(&self, name: &str, tool: &'a str) -> &'a str {
        let own = server_name(name).unwrap_or(name);
        tool.strip_prefix(&format!("{}{own}__", crate::names::PREFIX))
            .unwrap_or(tool)
    }

    /// The MCP servers of both config files, as discovery entries: project
    /// servers first (they win a name), each file's in file order.
    fn discover(&self, config: &HostConfig) -> Vec<Found> {
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
                    FileError::Read { path, .. }
                    | FileError::TooLarge { path }
                    | FileError::Syntax { path, .. }
                    | FileError::Shape { path, .. } => path.clone(),
                };
                let error = ManifestError::new(&path, None, e.to_string());
                invalid(scope_of(&path), &path, error)
            })
            .collect();
        out.extend(loaded.server_errors.iter().map(|e| {
            let field = format!("mcpServers.{}", e.server);
            let error = ManifestError::new(&e.path, Some(&field), e.message.clone());
            invalid(scope_of(&e.path), &e.path, error)
        }));
        out.extend(loaded.servers.into_iter().map(|(server, status)| {
            let scope = server.scope;
            let manifest = manifest(server);
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
                dialect: Dialect::Adapted(KIND),
            }
        }));
        out
    }

    fn launch(
        &self,
        entry: &Adapted,
        cx: &Arc<HostContext>,
    ) -> Result<(Box<dyn Adapter>, LaunchSpec), String> {
        let server = entry
            .entry::<McpServer>()
            .ok_or_else(|| "not an MCP server's entry".to_owned())?;
        Ok(crate::adapter::launch(server, cx))
    }

    fn gated_files(&self) -> &'static [&'static str] {
        &[config::PROJECT_FILE]
    }

    fn files_run(&self, file: &Path, project: &Path) -> Vec<PathBuf> {
        config::project_files_run(file, project)
    }

    fn is_shared_tool(&self, name: &str) -> bool {
        name == LIST_RESOURCES || name == READ_RESOURCE
    }

    fn is_valid_name(&self, name: &str) -> bool {
        server_name(name).is_some_and(|s| config::check_name(s).is_ok())
    }

    /// Flips `disabled` in the MCP config file that defines the server (the
    /// project's `.mcp.json` wins when both do).
    fn set_enabled(
        &self,
        host: &HostConfig,
        name: &str,
        which: Which,
        enabled: bool,
    ) -> Result<(Scope, PathBuf), ManageError> {
        let server = server_name(name).unwrap_or(name);
        let files = [
            (Scope::Project, config::project_path(&host.cwd)),
            (Scope::Global, config::user_path(&host.zot_home)),
        ];
        let found = files
            .into_iter()
            .filter(|(s, _)| match which {
                Which::Project => *s == Scope::Project,
                Which::Global => *s == Scope::Global,
                Which::Either => true,
            })
            .find(|(_, path)| {
                config::read(path)
                    .ok()
                    .flatten()
                    .is_some_and(|f| f.mcp_servers.contains_key(server))
            });
        let Some((scope, path)) = found else {
            return Err(ManageError::Ecosystem(format!(
                "no MCP server {server:?} in {} or {}",
                config::project_path(&host.cwd).display(),
                config::user_path(&host.zot_home).display()
            )));
        };
        config::set_enabled(&path, server, enabled)
            .map_err(|e| ManageError::Ecosystem(e.to_string()))?;
        Ok((scope, path))
    }

    fn remove_advice(&self, name: &str) -> String {
        let server = server_name(name).unwrap_or(name);
        format!("{name} is an MCP server: remove it with `zot mcp remove {server}`")
    }
}

/// The server's own name in `mcp:<name>`.
fn server_name(name: &str) -> Option<&str> {
    zot_extensions::ecosystem::own_name(KIND, name)
}

/// The entry for an MCP server: named `mcp:<name>`, "found" in the
/// directory of the file that configures it.
pub fn manifest(server: McpServer) -> Manifest {
    let dir = server
        .source
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Manifest {
        path: server.source.clone(),
        dir,
        name: server.ext_name(),
        version: None,
        language: None,
        description: None,
        skills: Vec::new(),
        enabled: server.enabled,
        launch: Launch::Adapted(Adapted {
            kind: KIND,
            url: server.transport.url().map(str::to_owned),
            startup_timeout: server.startup_timeout,
            entry: Arc::new(server),
        }),
        // An MCP server's scope is the user's policy's (permissions.json).
        permissions: None,
        // MCP servers have no intercepts.
        on_failure: OnFailure::Allow,
        warnings: Vec::new(),
    }
}

fn invalid(scope: Scope, path: &Path, error: ManifestError) -> Found {
    Found {
        scope,
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        status: FoundStatus::Invalid(error),
        dialect: Dialect::Adapted(KIND),
    }
}
