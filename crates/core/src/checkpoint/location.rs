//! Where checkpoint stores live: the root under `$ZOT_HOME` and each
//! project's folder under it.

use std::path::{Path, PathBuf};

/// `$ZOT_HOME/checkpoints`.
pub fn root(zot_home: &Path) -> PathBuf {
    zot_home.join("checkpoints")
}

/// `<root>/<first 8 bytes of sha256(project path), hex>`, as sessions.
pub(super) fn project_dir(root: &Path, project: &Path) -> PathBuf {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(project.display().to_string().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    root.join(hex)
}
