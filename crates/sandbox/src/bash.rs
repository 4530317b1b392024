//! The bash tool's sandbox (`--sandbox`): what its commands may write and
//! whether they have a network, as a [`Resolved`] scope for [`crate::prepare`].

use std::path::{Path, PathBuf};

use crate::resolve::{DEVICES_RW, Resolved};
use crate::scope::Net;

/// How the bash tool's commands are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// As the user, unconfined (the default).
    #[default]
    Off,
    /// Read what the user can read; write only `/tmp`, `$TMPDIR` and `/dev/shm`.
    ReadOnly,
    /// Also write the working directory and its git top-level.
    Workspace,
}

impl SandboxMode {
    /// `off`, `read-only` or `workspace`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "off" => Some(Self::Off),
            "read-only" => Some(Self::ReadOnly),
            "workspace" => Some(Self::Workspace),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::ReadOnly => "read-only",
            Self::Workspace => "workspace",
        }
    }
}

/// The bash tool's sandbox: the mode, and whether commands keep the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BashSandbox {
    pub mode: SandboxMode,
    /// `--sandbox-net`: keep the network (otherwise a private network
    /// namespace with loopback only, and no Unix-domain sockets).
    pub net: bool,
}

impl BashSandbox {
    /// `workspace`, `workspace + network`, `off`…, for status lines.
    pub fn describe(self) -> String {
        match (self.mode, self.net) {
            (SandboxMode::Off, _) => "off".to_owned(),
            (mode, true) => format!("{} + network", mode.as_str()),
            (mode, false) => format!("{}, no network", mode.as_str()),
        }
    }

    /// What a command run in `cwd` may touch; `None` when the sandbox is off.
    pub fn resolve(self, cwd: &Path) -> Option<Resolved> {
        let mut write: Vec<PathBuf> = vec!["/tmp".into(), "/dev/shm".into()];
        if let Some(tmp) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
            write.push(PathBuf::from(tmp));
        }
        match self.mode {
            SandboxMode::Off => return None,
            SandboxMode::ReadOnly => {}
            SandboxMode::Workspace => {
                write.push(cwd.to_path_buf());
                write.extend(git_top_level(cwd));
            }
        }
        write.retain(|p| p.is_absolute() && p.exists());
        write.sort();
        write.dedup();
        let mut devices: Vec<PathBuf> = DEVICES_RW.iter().map(PathBuf::from).collect();
        devices.retain(|p| p.exists());
        Some(Resolved {
            read: vec![PathBuf::from("/")],
            write,
            devices,
            net: if self.net { Net::All } else { Net::None },
        })
    }
}

/// The directory holding `.git` (a directory, or a file for a worktree) at
/// or above `cwd`.
fn git_top_level(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_resolve() {
        for mode in [
            SandboxMode::Off,
            SandboxMode::ReadOnly,
            SandboxMode::Workspace,
        ] {
            assert_eq!(SandboxMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(SandboxMode::parse("on"), None);
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let off = BashSandbox::default();
        assert!(off.resolve(&sub).is_none());
        let workspace = BashSandbox {
            mode: SandboxMode::Workspace,
            net: false,
        };
        let resolved = workspace.resolve(&sub).unwrap();
        assert!(resolved.write.contains(&sub));
        assert!(resolved.write.contains(&dir.path().to_path_buf()));
        assert!(resolved.net.isolated());
        let read_only = BashSandbox {
            mode: SandboxMode::ReadOnly,
            net: true,
        };
        let resolved = read_only.resolve(&sub).unwrap();
        assert!(!resolved.write.contains(&sub));
        assert_eq!(resolved.net, Net::All);
        assert_eq!(read_only.describe(), "read-only + network");
    }
}
