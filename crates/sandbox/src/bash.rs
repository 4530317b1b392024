//! The bash tool's sandbox (`--sandbox`): what its commands may write and
//! whether they have a network, as a [`Resolved`] scope for [`crate::prepare`].

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::resolve::{DEVICES_RW, Resolved};
use crate::scope::Net;

/// How the bash tool's commands are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// As the user, unconfined (the default).
    #[default]
    Off,
    /// Read what the user can read; write only the private temporary
    /// directory.
    ReadOnly,
    /// Also write the working directory, its git top-level, `/tmp`,
    /// `$TMPDIR` and `/dev/shm`.
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

    /// What a command run in `cwd` may touch, with `tmp` its private
    /// temporary directory ([`private_tmp`]); `None` when the sandbox is off.
    /// `read-only` writes only `tmp`, so a project that lies under `/tmp`
    /// stays read-only; `workspace` keeps `/tmp` (tools expect it).
    pub fn resolve(self, cwd: &Path, tmp: &Path) -> Option<Resolved> {
        let mut write: Vec<PathBuf> = vec![tmp.to_path_buf()];
        match self.mode {
            SandboxMode::Off => return None,
            SandboxMode::ReadOnly => {}
            SandboxMode::Workspace => {
                write.extend(["/tmp".into(), "/dev/shm".into()]);
                if let Some(dir) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
                    write.push(PathBuf::from(dir));
                }
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

/// The bash tool's private temporary directory while this zot runs.
static PRIVATE_TMP: Mutex<Option<tempfile::TempDir>> = Mutex::new(None);

/// The private temporary directory of sandboxed bash commands (mode 0700,
/// a new name under the system's temporary directory), created on first
/// use and again if it was removed; set as `TMPDIR`, `TMP` and `TEMP`.
pub fn private_tmp() -> io::Result<PathBuf> {
    let mut tmp = PRIVATE_TMP.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(dir) = tmp.as_ref().filter(|d| d.path().is_dir()) {
        return Ok(dir.path().to_path_buf());
    }
    let dir = tempfile::Builder::new()
        .prefix("zot-bash-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()?;
    let path = dir.path().to_path_buf();
    *tmp = Some(dir);
    Ok(path)
}

/// Removes [`private_tmp`] with what is in it (the session ends).
pub fn remove_private_tmp() {
    PRIVATE_TMP
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
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
        let tmp = private_tmp().unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&tmp).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o700);
        let off = BashSandbox::default();
        assert!(off.resolve(&sub, &tmp).is_none());
        let workspace = BashSandbox {
            mode: SandboxMode::Workspace,
            net: false,
        };
        let resolved = workspace.resolve(&sub, &tmp).unwrap();
        assert!(resolved.write.contains(&PathBuf::from("/tmp")));
        assert!(resolved.write.contains(&sub));
        assert!(resolved.write.contains(&dir.path().to_path_buf()));
        assert!(resolved.net.isolated());
        let read_only = BashSandbox {
            mode: SandboxMode::ReadOnly,
            net: true,
        };
        let resolved = read_only.resolve(&sub, &tmp).unwrap();
        assert_eq!(resolved.write, std::slice::from_ref(&tmp));
        assert_eq!(resolved.net, Net::All);
        assert_eq!(read_only.describe(), "read-only + network");
        remove_private_tmp();
        assert!(!tmp.exists());
    }
}
