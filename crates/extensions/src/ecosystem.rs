//! Ecosystems the host runs through an adapter of their own: extensions
//! configured outside `extension.json` manifests, each ecosystem in a crate
//! of its own, which the binary installs once at start. zot and nimlet
//! extensions are built in; everything the host core needs to know about
//! another ecosystem goes through [`Ecosystem`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use crate::adapted::Adapted;
use crate::adapter::{Adapter, LaunchSpec};
use crate::config::HostConfig;
use crate::context::HostContext;
use crate::found::Found;
use crate::manage::{ManageError, Which};
use crate::participant::{Joining, Participant};
use crate::scope::Scope;

/// One ecosystem of extensions the host runs through an adapter.
pub trait Ecosystem: Send + Sync + 'static {
    /// Its kind label: the protocol its reports carry
    /// ([`Dialect::Adapted`](crate::Dialect::Adapted)) and the prefix of its
    /// extensions' names (`<kind>:<name>`).
    fn kind(&self) -> &'static str;

    /// Its protocol's name as users know it, for messages.
    fn label(&self) -> &'static str;

    /// What a user calls one of its extensions ("… server"), for messages.
    fn noun(&self) -> &'static str;

    /// How to add one, for a listing that has none.
    fn add_hint(&self) -> &'static str;

    /// Tool `tool` of its extension `name` as a listing shows it: without
    /// what the ecosystem put before the extension's own name for it.
    fn tool_label<'a>(&self, name: &str, tool: &'a str) -> &'a str;

    /// Its extensions, read from its config files (nothing is started),
    /// listed after the manifest roots' in load order. Each `Load` entry's
    /// launch is [`Launch::Adapted`](crate::Launch::Adapted) of this kind.
    fn discover(&self, config: &HostConfig) -> Vec<Found>;

    /// The adapter for one of its entries, and how to reach it.
    /// An error says why it cannot start.
    fn launch(
        &self,
        entry: &Adapted,
        cx: &Arc<HostContext>,
    ) -> Result<(Box<dyn Adapter>, LaunchSpec), String>;

    /// Single project files that can run code or redirect credentials,
    /// relative to the project: gated by trust and pinned whole.
    fn gated_files(&self) -> &'static [&'static str];

    /// The project files that `file` (one of its gated files in `project`)
    /// names to run, pinned with it.
    fn files_run(&self, file: &Path, project: &Path) -> Vec<PathBuf>;

    /// Whether tool `name` is one that several of its extensions register
    /// on purpose (only the first counts; the others are no clash).
    fn is_shared_tool(&self, name: &str) -> bool;

    /// Whether `name` (with its `<kind>:` prefix) is a valid name for one of
    /// its extensions (a log file may be looked for under it).
    fn is_valid_name(&self, name: &str) -> bool;

    /// Turns extension `name` on or off in the config file that defines it,
    /// of `which` scope; returns that file and its scope.
    fn set_enabled(
        &self,
        config: &HostConfig,
        name: &str,
        which: Which,
        enabled: bool,
    ) -> Result<(Scope, PathBuf), ManageError>;

    /// Why `zot ext remove` does not remove extension `name`, and what does.
    fn remove_advice(&self, name: &str) -> String;

    /// What takes part at the hook points for this ecosystem beside its
    /// extensions (command hooks), made when a host starts or reloads.
    fn participants(&self, _joining: &Joining<'_>) -> Vec<Arc<dyn Participant>> {
        Vec::new()
    }

    /// Project files gated by trust in part (a settings file whose hooks
    /// run code, beside settings that do not), relative to the project.
    fn partly_gated_files(&self) -> &'static [&'static str] {
        &[]
    }

    /// The pins of the gated parts of [`partly_gated_files`](Self::partly_gated_files)
    /// in `project` (pin key and hash), and the project files those parts run.
    fn partial_pins(&self, _project: &Path) -> (Vec<(String, String)>, Vec<PathBuf>) {
        (Vec::new(), Vec::new())
    }
}

/// The ecosystems installed in this process. A process-wide list, like the
/// TLS provider: which ecosystems the binary speaks is fixed for its life,
/// and trust pins their files wherever it looks at a project.
static INSTALLED: RwLock<Vec<&'static dyn Ecosystem>> = RwLock::new(Vec::new());

/// Adds `ecosystem`, once per kind (a second install of a kind is ignored).
pub fn install(ecosystem: &'static dyn Ecosystem) {
    let mut installed = INSTALLED.write().unwrap_or_else(PoisonError::into_inner);
    if installed.iter().all(|e| e.kind() != ecosystem.kind()) {
        installed.push(ecosystem);
    }
}

/// The installed ecosystems, in install order.
pub fn installed() -> Vec<&'static dyn Ecosystem> {
    INSTALLED
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// The installed ecosystem of `kind`.
pub fn of_kind(kind: &str) -> Option<&'static dyn Ecosystem> {
    installed().into_iter().find(|e| e.kind() == kind)
}

/// The installed ecosystem whose extensions' names `name` has the prefix of
/// (`<kind>:`).
pub fn owning(name: &str) -> Option<&'static dyn Ecosystem> {
    installed()
        .into_iter()
        .find(|e| own_name(e.kind(), name).is_some())
}

/// The name an extension of ecosystem `kind` goes by, `<kind>:<own>`.
pub fn ext_name(kind: &str, own: &str) -> String {
    format!("{kind}:{own}")
}

/// The extension's own name in `<kind>:<own>`; `None` when `name` is not
/// of that ecosystem.
pub fn own_name<'a>(kind: &str, name: &'a str) -> Option<&'a str> {
    name.strip_prefix(kind)?.strip_prefix(':')
}

/// The project files the installed ecosystems gate by trust.
pub(crate) fn gated_files() -> Vec<(&'static dyn Ecosystem, &'static str)> {
    installed()
        .into_iter()
        .flat_map(|e| e.gated_files().iter().map(move |file| (e, *file)))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn names_carry_their_ecosystem_as_a_prefix() {
        assert_eq!(ext_name("mcp", "github"), "mcp:github");
        assert_eq!(own_name("mcp", "mcp:github"), Some("github"));
        assert_eq!(own_name("mcp", "mcpx:github"), None);
        assert_eq!(own_name("mcp", "github"), None);
    }

    #[test]
    fn entries_compare_by_their_ecosystem_s_own_value() {
        let entry = |server: &str| Adapted {
            kind: "k",
            url: None,
            startup_timeout: Duration::from_secs(1),
            entry: Arc::new(server.to_owned()),
        };
        assert_eq!(entry("a"), entry("a"));
        assert_ne!(entry("a"), entry("b"));
        assert_eq!(entry("a").entry::<String>().map(String::as_str), Some("a"));
        assert_eq!(entry("a").entry::<u32>(), None);
        let other_type = Adapted {
            entry: Arc::new(7_u32),
            ..entry("a")
        };
        assert_ne!(entry("a"), other_type);
    }
}
