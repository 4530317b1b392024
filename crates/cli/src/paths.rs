//! Where the config files sit. A leaf: everything that reads or writes
//! them (settings, providers, credentials, the `config` commands) builds on it.

use std::path::{Path, PathBuf};

/// `$ZOT_HOME/config.json`.
pub fn user_path(zot_home: &Path) -> PathBuf {
    zot_home.join("config.json")
}

/// `<project>/.zot/config.json`.
pub fn project_path(project: &Path) -> PathBuf {
    project.join(".zot").join("config.json")
}
