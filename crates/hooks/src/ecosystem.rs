//! Command hooks as an ecosystem the binary installs: they have no
//! extensions of their own for the host to discover and launch; they take
//! part at the hook points as one participant per host generation, and
//! their settings files are gated by trust in part (the hooks in them).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use zot_extensions::adapter::{Adapter, LaunchSpec};
use zot_extensions::config::HostConfig;
use zot_extensions::context::HostContext;
use zot_extensions::manage::{ManageError, Which};
use zot_extensions::participant::{Joining, Participant};
use zot_extensions::{Adapted, Ecosystem, Found, Scope};

use crate::settings::{self, HookSources, Listed};
use crate::{CommandHooks, ProjectScope, load_warnings};

/// The kind label of command hooks: the source of their warnings
/// (`hook:<Event>`) starts with it.
const KIND: &str = "hook";

/// Claude-style command hooks, as the host runs them.
pub struct CommandHookFiles;

/// The one instance [`install`] hands the host.
pub static HOOKS: CommandHookFiles = CommandHookFiles;

/// Makes the host run command hooks (once per process; later calls do nothing).
pub fn install() {
    zot_extensions::ecosystem::install(&HOOKS);
}

/// Where command hooks are read from for `config`, with the project trusted or not.
pub fn sources(config: &HostConfig, project_trusted: bool) -> HookSources {
    HookSources {
        user_home: config.user_home.clone(),
        zot_home: config.zot_home.clone(),
        project: std::path::absolute(&config.cwd).unwrap_or_else(|_| config.cwd.clone()),
        project_trusted,
    }
}

/// Every configured hook as the files say now, with the project's trust
/// `project_trusted` (for listings).
pub fn listed(config: &HostConfig, project_trusted: bool) -> Vec<Listed> {
    settings::load(&sources(config, project_trusted)).listed()
}

impl Ecosystem for CommandHookFiles {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn label(&self) -> &'static str {
        "Claude Code hooks"
    }

    fn noun(&self) -> &'static str {
        "command hook"
    }

    fn add_hint(&self) -> &'static str {
        "add one to $ZOT_HOME/hooks.json or .claude/settings.json, see docs/hooks.md"
    }

    /// Hooks register no tools: a name is shown as it is.
    fn tool_label<'a>(&self, _name: &str, tool: &'a str) -> &'a str {
        tool
    }

    /// Hooks are not extensions the host starts: there is nothing to discover.
    fn discover(&self, _config: &HostConfig) -> Vec<Found> {
        Vec::new()
    }

    fn launch(
        &self,
        _entry: &Adapted,
        _cx: &Arc<HostContext>,
    ) -> Result<(Box<dyn Adapter>, LaunchSpec), String> {
        Err("command hooks run one process per call, not as an extension".to_owned())
    }

    /// Their settings files are gated in part ([`partly_gated_files`](Ecosystem::partly_gated_files)).
    fn gated_files(&self) -> &'static [&'static str] {
        &[]
    }

    fn files_run(&self, _file: &Path, _project: &Path) -> Vec<PathBuf> {
        Vec::new()
    }

    fn is_shared_tool(&self, _name: &str) -> bool {
        false
    }

    fn is_valid_name(&self, _name: &str) -> bool {
        false
    }

    fn set_enabled(
        &self,
        _config: &HostConfig,
        name: &str,
        _which: Which,
        _enabled: bool,
    ) -> Result<(Scope, PathBuf), ManageError> {
        Err(ManageError::Ecosystem(format!(
            "{name} is not an extension: command hooks are turned off with `disableAllHooks` in their settings file, or `--no-hooks`"
        )))
    }

    fn remove_advice(&self, name: &str) -> String {
        format!(
            "{name} is not an extension: command hooks live in their settings files (`zot hooks list` shows where)"
        )
    }

    /// The hooks `joining.config` asks for (none with `hooks: false`), as one
    /// participant; what is wrong with their files is said once per run.
    fn participants(&self, joining: &Joining<'_>) -> Vec<Arc<dyn Participant>> {
        let config = joining.config;
        if !config.hooks {
            return Vec::new();
        }
        let loaded = settings::load(&sources(config, config.project_trusted));
        for (source, message) in load_warnings(&loaded) {
            if (joining.first)(&source, &message) {
                (joining.warn)(source, message);
            }
        }
        let project = std::path::absolute(&config.cwd).unwrap_or_else(|_| config.cwd.clone());
        // As for extensions, a policy that cannot be read runs nothing it would confine.
        let policy = zot_sandbox::Policy::load(&config.zot_home).map_err(|e| e.to_string());
        let hooks = CommandHooks::new(&loaded, &project, Arc::clone(&joining.warn)).with_scope(
            ProjectScope {
                config: config.clone(),
                policy,
                gate: Arc::clone(&joining.gate),
            },
        );
        if hooks.is_empty() {
            return Vec::new();
        }
        vec![Arc::new(hooks)]
    }

    fn partly_gated_files(&self) -> &'static [&'static str] {
        settings::PROJECT_FILES
    }

    fn partial_pins(&self, project: &Path) -> (Vec<(String, String)>, Vec<PathBuf>) {
        settings::project_pins(project)
    }
}
