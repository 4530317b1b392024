//! What this kernel can enforce, probed once per zot process: the Landlock
//! ABI, whether zot may create a user and network namespace, whether it may
//! give a child a read-only mount namespace, and whether seccomp filters are
//! available.

use std::sync::OnceLock;

/// Test hook: a comma-separated list of kernel features to treat as absent
/// (`landlock`, `landlock-net`, `landlock-scope`, `userns`, `mountns`,
/// `seccomp`), so
/// the strict error and best-effort fallbacks can be exercised on a kernel
/// that has everything. It can only take protection away from what the
/// kernel offers, and the strict default then refuses to start anything
/// it would weaken.
pub const PRETEND_MISSING_ENV: &str = "ZOT_SANDBOX_PRETEND_MISSING";

/// The first Landlock ABI with TCP port rules (Linux 6.7).
pub(crate) const LANDLOCK_NET_ABI: u32 = 4;

/// The first Landlock ABI with signal and abstract-socket scoping (Linux 6.12).
pub(crate) const LANDLOCK_SCOPE_ABI: u32 = 6;

/// The first Landlock ABI that controls truncation (Linux 6.2).
pub(crate) const LANDLOCK_TRUNCATE_ABI: u32 = 3;

/// What the running kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    /// The Landlock ABI version; 0 without Landlock.
    pub landlock_abi: u32,
    /// Whether zot can give a child a network namespace of its own (for an
    /// unprivileged user: a user namespace with it).
    pub userns: bool,
    /// Whether zot can give a child a mount namespace of its own in which
    /// every mount but its writable paths is read-only (for an unprivileged
    /// user: inside a user namespace).
    pub mount_ns: bool,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether zot runs as root, which needs no user namespace for a
    /// network namespace.
    pub root: bool,
}

impl Kernel {
    /// The probed features (once per process), less what
    /// [`PRETEND_MISSING_ENV`] asks to pretend is missing.
    pub fn get() -> Self {
        static KERNEL: OnceLock<Kernel> = OnceLock::new();
        *KERNEL.get_or_init(|| {
            let mut kernel = Self::probe();
            if let Ok(missing) = std::env::var(PRETEND_MISSING_ENV) {
                kernel.pretend_missing(&missing);
            }
            kernel
        })
    }

    fn pretend_missing(&mut self, list: &str) {
        for item in list.split(',').map(str::trim) {
            match item {
                "landlock" => self.landlock_abi = 0,
                "landlock-net" => self.landlock_abi = self.landlock_abi.min(LANDLOCK_NET_ABI - 1),
                "landlock-scope" => {
                    self.landlock_abi = self.landlock_abi.min(LANDLOCK_SCOPE_ABI - 1);
                }
                "userns" => self.userns = false,
                "mountns" => self.mount_ns = false,
                "seccomp" => self.seccomp = false,
                _ => {}
            }
        }
    }

    #[cfg(target_os = "linux")]
    fn probe() -> Self {
        // SAFETY: plain syscalls without pointers we own.
        let root = unsafe { libc::geteuid() } == 0;
        Self {
            landlock_abi: landlock_abi(),
            userns: can_unshare(root),
            mount_ns: crate::mounts::available(root),
            seccomp: seccomp_filters(),
            root,
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn probe() -> Self {
        Self {
            landlock_abi: 0,
            userns: false,
            mount_ns: false,
            seccomp: false,
            root: false,
        }
    }

    /// One line for `doctor`.
    pub fn summary(&self) -> String {
        let landlock = match self.landlock_abi {
            0 => "Landlock: no".to_owned(),
            abi => format!("Landlock ABI {abi}"),
        };
        let yes = |b: bool| if b { "yes" } else { "no" };
        format!(
            "{landlock}, user namespaces: {}, read-only mounts: {}, seccomp: {}",
            yes(self.userns),
            yes(self.mount_ns),
            yes(self.seccomp)
        )
    }

    /// The features as JSON, for `doctor --json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "landlock_abi": self.landlock_abi,
            "user_namespaces": self.userns,
            "read_only_mounts": self.mount_ns,
            "seccomp": self.seccomp,
        })
    }
}

#[cfg(target_os = "linux")]
fn landlock_abi() -> u32 {
    /// `LANDLOCK_CREATE_RULESET_VERSION`: ask for the ABI version.
    const VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: a null attribute, size 0.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            VERSION,
        )
    };
    u32::try_from(v).unwrap_or(0)
}

/// Whether a child can unshare the namespaces a `net: none` scope needs,
/// tried in a forked child (unsharing a user namespace needs a
/// single-threaded process). Distributions restrict unprivileged user
/// namespaces in several ways (sysctls, AppArmor); trying covers them all.
#[cfg(target_os = "linux")]
fn can_unshare(root: bool) -> bool {
    let flags = if root {
        libc::CLONE_NEWNET
    } else {
        libc::CLONE_NEWUSER | libc::CLONE_NEWNET
    };
    // SAFETY: a system call without pointers.
    crate::fork_try::in_child(move || unsafe { libc::unshare(flags) } == 0)
}

/// Whether seccomp filters can be installed: the kernel knows seccomp and
/// lists the errno action among the filter actions.
#[cfg(target_os = "linux")]
fn seccomp_filters() -> bool {
    // SAFETY: a query without arguments.
    let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    mode >= 0
        && std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail")
            .is_ok_and(|actions| actions.split_whitespace().any(|a| a == "errno"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretending_only_takes_away() {
        let mut kernel = Kernel {
            landlock_abi: 7,
            userns: true,
            mount_ns: true,
            seccomp: true,
            root: false,
        };
        kernel.pretend_missing("landlock-scope, seccomp, bogus");
        assert_eq!(kernel.landlock_abi, 5);
        assert!(!kernel.seccomp && kernel.userns);
        kernel.pretend_missing("landlock-net");
        assert_eq!(kernel.landlock_abi, 3);
        assert!(kernel.mount_ns);
        kernel.pretend_missing("landlock,userns,mountns");
        assert_eq!(kernel.landlock_abi, 0);
        assert!(!kernel.userns && !kernel.mount_ns);
        assert!(kernel.summary().contains("Landlock: no"));
    }
}
