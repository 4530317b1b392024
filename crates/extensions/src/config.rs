//! What the host needs to know to start: where `$ZOT_HOME` and the project
//! are, which extensions to load, what to tell them in `hello_ack`, and the
//! names the host keeps for itself.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::limits::Limits;

/// Tools built into the agent (core's list); an extension tool of the same
/// name is shadowed.
pub use zot_protocol::ui::BUILTIN_TOOLS;

#[derive(Debug, Clone)]
pub struct HostConfig {
    /// `$ZOT_HOME`: holds `extensions/` (global scope) and `logs/`.
    pub zot_home: PathBuf,
    /// The user's project directory: holds `.zot/extensions/` and is `cwd` in `hello_ack`.
    pub cwd: PathBuf,
    /// `--ext` directories, loaded first and remembered across reloads.
    pub explicit: Vec<PathBuf>,
    /// `false` with `--no-ext`: skip the project and global roots (`--ext` still loads).
    pub discover: bool,
    /// Whether project extensions may run (see `trust.rs`). Untrusted ones
    /// are listed, never spawned.
    pub project_trusted: bool,
    /// What a project trusted for this run only (`--trust`) was trusted
    /// with: its pinned files at the start. `None`: the trust store's entry.
    pub trusted_pins: Option<crate::pins::Pins>,
    /// The user's home: `~/.agents/extensions` (extensions shared with other
    /// agents) is searched after the zot roots. `None` skips it.
    pub user_home: Option<PathBuf>,
    /// The agent's session id, carried by handshakes and event payloads of
    /// protocols that name the session.
    pub session_id: String,
    pub zot_version: String,
    pub provider: String,
    pub model: String,
    pub builtin_tools: Vec<String>,
    pub limits: Limits,
    /// Command hooks run (`false` with `--no-hooks` or the config key `hooks: false`).
    pub hooks: bool,
    /// Extensions of installed ecosystems (`crate::ecosystem`) start in the
    /// background: [`start`](crate::ExtensionHost::start) returns without
    /// waiting for their handshakes (the TUI opens at once and a prompt waits
    /// through [`wait_started`](crate::ExtensionHost::wait_started)).
    pub adapted_in_background: bool,
}

impl HostConfig {
    pub fn new(zot_home: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            zot_home: zot_home.into(),
            cwd: cwd.into(),
            explicit: Vec::new(),
            discover: true,
            project_trusted: false,
            trusted_pins: None,
            user_home: None,
            session_id: format!("zot-{}", std::process::id()),
            zot_version: env!("CARGO_PKG_VERSION").to_owned(),
            provider: String::new(),
            model: String::new(),
            builtin_tools: BUILTIN_TOOLS.iter().map(|s| (*s).to_owned()).collect(),
            limits: Limits::default(),
            hooks: true,
            adapted_in_background: false,
        }
    }

    /// `$ZOT_HOME/extensions`, the global root.
    pub fn global_root(&self) -> PathBuf {
        self.zot_home.join("extensions")
    }

    /// `<cwd>/.zot/extensions`, the project root.
    pub fn project_root(&self) -> PathBuf {
        self.cwd.join(".zot").join("extensions")
    }

    /// `~/.agents/extensions`, the portable global root.
    pub fn agents_global_root(&self) -> Option<PathBuf> {
        self.user_home
            .as_ref()
            .map(|home| home.join(".agents").join("extensions"))
    }

    /// `<cwd>/.agents/extensions`, the portable project root.
    pub fn agents_project_root(&self) -> PathBuf {
        self.cwd.join(".agents").join("extensions")
    }

    /// `$ZOT_HOME/logs/ext-<name>.log`.
    pub fn log_path(&self, name: &str) -> PathBuf {
        log_path(&self.zot_home, name)
    }

    /// `$ZOT_HOME/data/<project-hash>/<name>`: the `data_dir` of project
    /// extension `name`. Outside the project, so what it writes there does
    /// not change the project's trust fingerprint or end up in the repository.
    pub fn project_data_dir(&self, name: &str) -> PathBuf {
        self.zot_home
            .join("data")
            .join(project_hash(&self.cwd))
            .join(name)
    }
}

/// The first 16 hex digits of the SHA-256 of the project's canonical path.
pub fn project_hash(project: &Path) -> String {
    use sha2::{Digest, Sha256};
    let path = project
        .canonicalize()
        .or_else(|_| std::path::absolute(project))
        .unwrap_or_else(|_| project.to_path_buf());
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// `<zot_home>/logs/ext-<name>.log`.
pub fn log_path(zot_home: &Path, name: &str) -> PathBuf {
    zot_home.join("logs").join(format!("ext-{name}.log"))
}

/// `$ZOT_HOME` from the process environment (see [`zot_home_from`]).
pub fn default_zot_home() -> Option<PathBuf> {
    zot_home_from(|key| std::env::var_os(key))
}

/// `$ZOT_HOME` as the spec defines it ("Layout & discovery"): `ZOT_HOME`, else
/// `$XDG_STATE_HOME/zot` on any platform, else `~/Library/Application Support/zot`
/// on macOS, `%LOCALAPPDATA%\zot` on Windows and `~/.local/state/zot` elsewhere.
/// Empty variables count as unset. `None` when no home directory is known.
pub fn zot_home_from(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let var = |key: &str| env(key).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(home) = var("ZOT_HOME") {
        return Some(home);
    }
    if let Some(state) = var("XDG_STATE_HOME") {
        return Some(state.join("zot"));
    }
    if cfg!(windows) {
        return var("LOCALAPPDATA").map(|dir| dir.join("zot"));
    }
    let home = var("HOME")?;
    if cfg!(target_os = "macos") {
        Some(home.join("Library").join("Application Support").join("zot"))
    } else {
        Some(home.join(".local").join("state").join("zot"))
    }
}
