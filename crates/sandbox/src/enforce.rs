//! Holding a process to its scope. [`prepare`] decides what this kernel can
//! enforce and builds everything that allocates (the Landlock ruleset, the
//! seccomp program, the uid/gid map lines) before the fork; [`Prepared::apply`]
//! installs a `pre_exec` step that only makes async-signal-safe syscalls:
//! giving up the terminal, `unshare`, writing the maps, making every mount
//! but the writable paths read-only, dropping every capability,
//! `prctl(PR_SET_NO_NEW_PRIVS)`, `seccomp` and `landlock_restrict_self`.

use std::fmt;

#[cfg(not(target_os = "linux"))]
use crate::policy::Enforce;
use crate::probe::Kernel;
use crate::resolve::Resolved;

/// Why a scoped process cannot start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxError {
    /// Strict enforcement, and the kernel lacks what the scope needs.
    Unsupported { missing: Vec<String> },
    /// Building the ruleset or filter failed.
    Setup(String),
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported { missing } => write!(
                f,
                "this kernel cannot enforce the permission scope (missing: {}); \
                 set \"enforce\": \"best-effort\" in permissions.json to run it with what can be enforced",
                missing.join(", ")
            ),
            Self::Setup(e) => write!(f, "cannot set up the sandbox: {e}"),
        }
    }
}

impl std::error::Error for SandboxError {}

/// What the scope needs that this kernel lacks, in words for the user.
pub fn missing(resolved: &Resolved, kernel: &Kernel) -> Vec<String> {
    use crate::probe::{LANDLOCK_NET_ABI, LANDLOCK_SCOPE_ABI, LANDLOCK_TRUNCATE_ABI};
    let abi = kernel.landlock_abi;
    let mut missing = Vec::new();
    if abi == 0 {
        missing.push("Landlock (file access rules)".to_owned());
    } else if abi < LANDLOCK_TRUNCATE_ABI {
        missing.push("truncation control (Landlock ABI 3)".to_owned());
    }
    let isolated = resolved.net.isolated();
    if isolated && !kernel.userns {
        missing.push("a private network namespace (user namespaces)".to_owned());
    }
    let tcp_rules = resolved.net.tcp_ports().is_some() && !(isolated && kernel.userns);
    if tcp_rules && abi < LANDLOCK_NET_ABI {
        missing.push("TCP port rules (Landlock ABI 4)".to_owned());
    }
    if abi < LANDLOCK_SCOPE_ABI {
        missing.push("signal and abstract-socket scoping (Landlock ABI 6)".to_owned());
    }
    if !resolved.net.unix() && !kernel.seccomp {
        missing.push("the Unix-socket filter (seccomp)".to_owned());
    }
    if !kernel.seccomp {
        missing.push("the terminal-injection filter (seccomp)".to_owned());
    }
    let all_writable = resolved
        .write
        .iter()
        .any(|p| p == std::path::Path::new("/"));
    if !kernel.mount_ns && !all_writable {
        missing.push(
            "read-only file metadata outside the writable paths (a mount namespace)".to_owned(),
        );
    }
    missing
}

#[cfg(target_os = "linux")]
pub use linux::Prepared;

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;
    use std::ffi::CString;
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::sync::Arc;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr,
        path_beneath_rules,
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::{SandboxError, missing};
    use crate::mounts::ReadOnly;
    use crate::policy::Enforce;
    use crate::probe::{Kernel, LANDLOCK_NET_ABI, LANDLOCK_SCOPE_ABI};
    use crate::resolve::Resolved;

    /// The user and group map lines of a fresh user namespace, and where
    /// they go, built before the fork.
    #[derive(Debug)]
    struct Maps {
        setgroups: CString,
        uid_map: CString,
        gid_map: CString,
        uid_line: Vec<u8>,
        gid_line: Vec<u8>,
    }

    /// Everything a scoped child needs, built; apply it to any number of commands.
    #[derive(Debug, Clone)]
    pub struct Prepared {
        landlock: Option<Arc<OwnedFd>>,
        filters: Option<Arc<Vec<BpfProgram>>>,
        /// `unshare` flags for the network and mount namespaces (0: none).
        unshare: libc::c_int,
        maps: Option<Arc<Maps>>,
        /// What stays writable in its mount namespace (`None`: no namespace).
        read_only: Option<Arc<ReadOnly>>,
        unenforced: Vec<String>,
    }

    impl Prepared {
        /// What the scope asks for that is not enforced (best-effort only).
        pub fn unenforced(&self) -> &[String] {
            &self.unenforced
        }

        /// Makes `command`'s child enter its sandbox between fork and exec.
        pub fn apply(&self, command: &mut std::process::Command) {
            use std::os::unix::process::CommandExt;
            let this = self.clone();
            // Room for the mount clones, made before the fork.
            let mut clones = Vec::with_capacity(self.read_only.as_ref().map_or(0, |r| r.len()));
            // SAFETY: the closure only makes async-signal-safe syscalls and
            // allocates nothing: everything it uses was built before the fork.
            unsafe {
                command.pre_exec(move || this.enter(&mut clones));
            }
        }

        /// In the child: no controlling terminal, namespaces, read-only
        /// mounts, no capabilities, no_new_privs, seccomp, Landlock, in that
        /// order (the maps must be written before Landlock hides
        /// `/proc/self`'s writable files, and they and the mounts while it
        /// still has the capabilities of its user namespace; seccomp and
        /// Landlock both need no_new_privs).
        fn enter(&self, clones: &mut Vec<libc::c_int>) -> io::Result<()> {
            // SAFETY (all blocks below): syscalls on memory this struct owns.
            give_up_terminal()?;
            if self.unshare != 0 {
                if self.maps.is_some() {
                    // zot is not dumpable, and so neither is this copy of it
                    // until it execs; its `/proc/self` files belong to root
                    // until it is dumpable again, and it must write its maps.
                    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) } != 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                if unsafe { libc::unshare(self.unshare) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                if let Some(maps) = &self.maps {
                    write_file(&maps.setgroups, b"deny")?;
                    write_file(&maps.uid_map, &maps.uid_line)?;
                    write_file(&maps.gid_map, &maps.gid_line)?;
                }
                if self.unshare & libc::CLONE_NEWNET != 0 {
                    loopback_up()?;
                }
                if let Some(read_only) = &self.read_only {
                    read_only.enter(clones)?;
                }
            }
            drop_capabilities()?;
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(io::Error::last_os_error());
            }
            for filter in self.filters.iter().flat_map(|f| f.iter()) {
                install_filter(filter)?;
            }
            if let Some(fd) = &self.landlock
                && unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0) }
                    != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        }
    }

    /// Gives up the controlling terminal, if there is one: no `/dev/tty`
    /// to type into the shell that started zot, or zot's own TUI, and none
    /// for what the process starts. (Not a session of its own: it stays in
    /// the process group zot stops it by.) `open`, `ioctl`, `close`:
    /// async-signal-safe.
    fn give_up_terminal() -> io::Result<()> {
        // SAFETY: a NUL-terminated path; an ioctl without an argument.
        unsafe {
            let fd = libc::open(
                c"/dev/tty".as_ptr(),
                libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                // ENXIO: no controlling terminal to give up.
                return Ok(());
            }
            let r = libc::ioctl(fd, libc::TIOCNOTTY);
            libc::close(fd);
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Drops every capability, from the bounding set too, so that neither
    /// root (which has them all without a user namespace) nor a process in
    /// its own user namespace keeps any, or regains them by exec. Without
    /// `CAP_SETPCAP` (an unprivileged user outside a user namespace) the
    /// bounding set stays: such a process has no capabilities, and with
    /// no_new_privs an exec grants none. `prctl`, `capset`: async-signal-safe.
    fn drop_capabilities() -> io::Result<()> {
        /// `_LINUX_CAPABILITY_VERSION_3` (linux/capability.h): two data words.
        const VERSION_3: u32 = 0x2008_0522;
        #[repr(C)]
        struct Header {
            version: u32,
            pid: libc::c_int,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        // SAFETY: prctl and capset on values on the stack.
        unsafe {
            for cap in 0..64 {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                    // EINVAL: past the last capability; EPERM: see above.
                    match io::Error::last_os_error().raw_os_error() {
                        Some(libc::EINVAL | libc::EPERM) => break,
                        _ => return Err(io::Error::last_os_error()),
                    }
                }
            }
            // Ambient capabilities (Linux 4.3); EINVAL before.
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            );
            let header = Header {
                version: VERSION_3,
                pid: 0,
            };
            let none = [Data {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            }; 2];
            if libc::syscall(libc::SYS_capset, &header, none.as_ptr()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Installs one seccomp program with `SECCOMP_FILTER_FLAG_SPEC_ALLOW`:
    /// by default the kernel also turns on the speculative-store-bypass
    /// mitigation for a filtered task, which slows every program started
    /// in it by milliseconds and protects nothing here (the filter is not
    /// a boundary between code in the same process). `seccomp`:
    /// async-signal-safe; the header lives on the stack.
    fn install_filter(filter: &BpfProgram) -> io::Result<()> {
        /// `SECCOMP_FILTER_FLAG_SPEC_ALLOW` (linux/seccomp.h, since 4.17).
        const SPEC_ALLOW: libc::c_ulong = 1 << 2;
        let program = libc::sock_fprog {
            len: u16::try_from(filter.len())
                .map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
            filter: filter.as_ptr().cast_mut().cast(),
        };
        // SAFETY: `program` points into `filter`, which outlives the call;
        // the kernel copies it.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                SPEC_ALLOW,
                &program as *const libc::sock_fprog,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Brings up `lo` in the fresh network namespace (it starts down), so
    /// the process can still talk to itself over loopback. `socket`,
    /// `ioctl`, `close`: async-signal-safe; the request lives on the stack.
    fn loopback_up() -> io::Result<()> {
        // SAFETY: a zeroed `ifreq` is valid; the name fits its 16 bytes.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let mut request: libc::ifreq = std::mem::zeroed();
            for (dst, src) in request.ifr_name.iter_mut().zip(b"lo") {
                *dst = libc::c_char::from_ne_bytes([*src]);
            }
            request.ifr_ifru.ifru_flags = libc::c_short::try_from(libc::IFF_UP).unwrap_or_default();
            let r = libc::ioctl(fd, libc::SIOCSIFFLAGS, &request);
            libc::close(fd);
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// `open`, `write`, `close`: async-signal-safe.
    fn write_file(path: &CString, bytes: &[u8]) -> io::Result<()> {
        // SAFETY: `path` is NUL-terminated and `bytes` outlives the call.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            libc::close(fd);
            if usize::try_from(n).ok() != Some(bytes.len()) {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Builds the sandbox of `resolved` for this kernel. Strict: an error
    /// naming what is missing; best-effort: what can be enforced, with the
    /// rest listed as unenforced.
    pub fn prepare(
        resolved: &Resolved,
        kernel: &Kernel,
        enforce: Enforce,
    ) -> Result<Prepared, SandboxError> {
        let missing = missing(resolved, kernel);
        if enforce == Enforce::Strict && !missing.is_empty() {
            return Err(SandboxError::Unsupported { missing });
        }
        let setup = |e: &dyn std::fmt::Display| SandboxError::Setup(e.to_string());
        let isolated = resolved.net.isolated() && kernel.userns;
        let read_only = kernel
            .mount_ns
            .then(|| ReadOnly::new(&resolved.write))
            .flatten()
            .map(Arc::new);
        let mut unshare = 0;
        if isolated {
            unshare |= libc::CLONE_NEWNET;
        }
        if read_only.is_some() {
            unshare |= libc::CLONE_NEWNS;
        }
        // Root needs no user namespace for these; anyone else does.
        let maps = if unshare != 0 && !kernel.root {
            unshare |= libc::CLONE_NEWUSER;
            Some(Arc::new(maps()?))
        } else {
            None
        };
        let landlock = if kernel.landlock_abi > 0 {
            // A port list, or no network without a namespace to hold it.
            let tcp = resolved.net.tcp_ports().filter(|_| !isolated);
            Some(Arc::new(
                ruleset(resolved, kernel, tcp.as_ref()).map_err(|e| setup(&e))?,
            ))
        } else {
            None
        };
        let filters = if kernel.seccomp {
            Some(Arc::new(
                seccomp_filters(!resolved.net.unix()).map_err(|e| setup(&e))?,
            ))
        } else {
            None
        };
        Ok(Prepared {
            landlock,
            filters,
            unshare,
            maps,
            read_only,
            unenforced: missing,
        })
    }

    fn maps() -> Result<Maps, SandboxError> {
        let cstr = |s: &str| CString::new(s).map_err(|e| SandboxError::Setup(e.to_string()));
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        Ok(Maps {
            setgroups: cstr("/proc/self/setgroups")?,
            uid_map: cstr("/proc/self/uid_map")?,
            gid_map: cstr("/proc/self/gid_map")?,
            // The same ids inside as outside: files keep their owners.
            uid_line: format!("{uid} {uid} 1\n").into_bytes(),
            gid_line: format!("{gid} {gid} 1\n").into_bytes(),
        })
    }

    /// The Landlock ruleset: every file access handled, the granted paths
    /// allowed, TCP connect/bind handled when `tcp` is a port list (connect
    /// allowed to those ports), signals and abstract sockets scoped.
    fn ruleset(
        resolved: &Resolved,
        kernel: &Kernel,
        tcp: Option<&std::collections::BTreeSet<u16>>,
    ) -> Result<OwnedFd, landlock::RulesetError> {
        let version = i32::try_from(kernel.landlock_abi).unwrap_or(i32::MAX);
        let abi = ABI::from(version);
        let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(abi))?;
        if tcp.is_some() && kernel.landlock_abi >= LANDLOCK_NET_ABI {
            ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
        }
        if kernel.landlock_abi >= LANDLOCK_SCOPE_ABI {
            ruleset =
                ruleset.scope(landlock::Scope::AbstractUnixSocket | landlock::Scope::Signal)?;
        }
        let mut created = ruleset
            .create()?
            .add_rules(path_beneath_rules(&resolved.read, AccessFs::from_read(abi)))?
            .add_rules(path_beneath_rules(&resolved.write, AccessFs::from_all(abi)))?
            .add_rules(path_beneath_rules(
                &resolved.devices,
                AccessFs::from_all(abi),
            ))?;
        if let Some(ports) = tcp
            && kernel.landlock_abi >= LANDLOCK_NET_ABI
        {
            for port in ports {
                created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
            }
        }
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or_else(|| {
            landlock::RulesetError::from(landlock::CreateRulesetError::MissingHandledAccess)
        })
    }

    /// The `ioctl`s `TIOCSTI` (push input into a terminal as if typed) and
    /// `TIOCLINUX` (which can do the same with the console's selection)
    /// fail with `EPERM`, always: a confined process must not type commands
    /// into a terminal it can reach. The request is compared on its low 32
    /// bits, as the kernel reads it.
    ///
    /// Without Unix sockets (`no_unix`): `socket(AF_UNIX, …)` fails with
    /// `EACCES` (Landlock does not mediate connecting to a socket path, so
    /// the Docker socket, the ssh agent and D-Bus would otherwise be
    /// reachable); `socketpair` stays allowed. `io_uring_setup` fails with
    /// `EPERM`, because io_uring can create sockets without the `socket`
    /// syscall; programs fall back to plain syscalls (container runtimes
    /// refuse it the same way).
    fn seccomp_filters(no_unix: bool) -> Result<Vec<BpfProgram>, seccompiler::Error> {
        let arch = TargetArch::try_from(std::env::consts::ARCH)?;
        let arg_is = |index: u8, value: u64| -> Result<SeccompRule, seccompiler::Error> {
            SeccompRule::new(vec![SeccompCondition::new(
                index,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                value,
            )?])
            .map_err(seccompiler::Error::from)
        };
        let errno = |e: libc::c_int| u32::try_from(e).unwrap_or_default();
        let mut refused = BTreeMap::from([(
            libc::SYS_ioctl,
            vec![arg_is(1, TIOCSTI)?, arg_is(1, TIOCLINUX)?],
        )]);
        if no_unix {
            refused.insert(libc::SYS_io_uring_setup, vec![]);
        }
        let eperm = SeccompFilter::new(
            refused,
            SeccompAction::Allow,
            SeccompAction::Errno(errno(libc::EPERM)),
            arch,
        )?;
        let mut programs = vec![eperm.try_into()?];
        if no_unix {
            let af_unix = u64::try_from(libc::AF_UNIX).unwrap_or_default();
            let socket = SeccompFilter::new(
                BTreeMap::from([(libc::SYS_socket, vec![arg_is(0, af_unix)?])]),
                SeccompAction::Allow,
                SeccompAction::Errno(errno(libc::EACCES)),
                arch,
            )?;
            // seccompiler gives one match action per filter; the kernel runs
            // every installed filter, so these are installed one after the other.
            programs.push(socket.try_into()?);
        }
        Ok(programs)
    }

    /// `TIOCSTI` and `TIOCLINUX` (asm-generic/ioctls.h: x86, Arm, RISC-V).
    const TIOCSTI: u64 = 0x5412;
    const TIOCLINUX: u64 = 0x541C;
}

#[cfg(target_os = "linux")]
pub use linux::prepare;

/// Off Linux nothing is enforced yet (see docs/permissions.md): strict
/// refuses to start a scoped process; best-effort starts it as is.
#[cfg(not(target_os = "linux"))]
#[derive(Debug, Clone)]
pub struct Prepared {
    unenforced: Vec<String>,
}

#[cfg(not(target_os = "linux"))]
impl Prepared {
    pub fn unenforced(&self) -> &[String] {
        &self.unenforced
    }

    pub fn apply(&self, _command: &mut std::process::Command) {}
}

#[cfg(not(target_os = "linux"))]
pub fn prepare(
    _resolved: &Resolved,
    _kernel: &Kernel,
    enforce: Enforce,
) -> Result<Prepared, SandboxError> {
    let missing = vec!["process sandboxing on this platform".to_owned()];
    match enforce {
        Enforce::Strict => Err(SandboxError::Unsupported { missing }),
        Enforce::BestEffort => Ok(Prepared {
            unenforced: missing,
        }),
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use std::process::Command;

    use serde_json::json;

    use super::*;
    use crate::policy::Enforce;
    use crate::resolve::{Places, resolve};
    use crate::scope::Scope;

    /// Runs `sh -c script` under `scope` (places in a temporary directory);
    /// returns its exit code and output.
    fn run(scope: serde_json::Value, script: &str) -> (i32, String) {
        let root = tempfile::tempdir().unwrap();
        let places = Places {
            project: root.path().join("project"),
            data: root.path().join("data"),
            tmp: root.path().join("tmp"),
            home: root.path().join("home"),
        };
        for dir in [&places.project, &places.data, &places.tmp, &places.home] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(places.home.join("secret"), "s3cret").unwrap();
        let scope = Scope::parse(&scope).unwrap();
        let resolved = resolve(&scope, &places, "/bin/sh".as_ref(), None, None);
        let prepared = prepare(&resolved, &Kernel::get(), Enforce::Strict).unwrap();
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg(script).current_dir(root.path());
        command.env("H", &places.home).env("D", &places.data);
        prepared.apply(&mut command);
        let out = command.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap_or(-1), text)
    }

    #[test]
    fn files_outside_the_scope_are_denied_and_inside_allowed() {
        let (code, out) = run(json!({}), "cat \"$H/secret\"");
        assert_ne!(code, 0, "{out}");
        assert!(out.contains("Permission denied"), "{out}");
        let (code, out) = run(json!({"read": ["home"]}), "cat \"$H/secret\"");
        assert_eq!((code, out.as_str()), (0, "s3cret"));
        let (code, out) = run(json!({}), "echo x > \"$D/f\" && cat \"$D/f\"");
        assert_eq!((code, out.trim()), (0, "x"));
        let (code, out) = run(json!({}), "grep NoNewPrivs /proc/self/status");
        assert_eq!(code, 0);
        assert!(out.contains('1'), "{out}");
    }

    #[test]
    fn metadata_changes_outside_the_writable_paths_fail_and_inside_work() {
        // Each change on a file outside (the home directory, not even
        // readable here) and one inside (the data directory): its outcome
        // as `where op ok|ERRNO`.
        let probe = r#"echo x > "$D/f" && /usr/bin/python3 -c '
import errno, os, sys
for where, path in (("out", sys.argv[1]), ("in", sys.argv[2])):
    for op, change in (("chmod", lambda: os.chmod(path, 0o600)),
                       ("chown", lambda: os.chown(path, os.getuid(), os.getgid())),
                       ("utime", lambda: os.utime(path, (0, 0))),
                       ("setxattr", lambda: os.setxattr(path, "user.zot", b"1"))):
        try:
            change()
            print(where, op, "ok")
        except OSError as e:
            print(where, op, errno.errorcode[e.errno])
' "$H/secret" "$D/f""#;
        let root_mount = || {
            let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
            let line = mounts
                .lines()
                .find(|l| l.split_whitespace().nth(4) == Some("/"));
            line.map(|l| l.split_whitespace().nth(5).unwrap_or_default().to_owned())
        };
        let before = root_mount();
        for scope in [json!({}), json!({"read": ["home"], "net": "all"})] {
            let (code, out) = run(scope.clone(), probe);
            assert_eq!(code, 0, "{scope}: {out}");
            for op in ["chmod", "chown", "utime", "setxattr"] {
                assert!(out.contains(&format!("out {op} EROFS\n")), "{scope}: {out}");
            }
            for op in ["chmod", "chown", "utime"] {
                assert!(out.contains(&format!("in {op} ok\n")), "{scope}: {out}");
            }
            // Where the file system keeps user attributes at all.
            assert!(
                out.contains("in setxattr ok\n") || out.contains("in setxattr EOPNOTSUPP\n"),
                "{scope}: {out}"
            );
        }
        // The read-only mounts were the child's alone: zot's `/` keeps its
        // flags (a remount of the file system itself would have made it
        // read-only for the whole machine).
        assert_eq!(root_mount(), before);
    }

    #[test]
    fn a_confined_child_has_no_capabilities() {
        for scope in [json!({}), json!({"net": "all"})] {
            let (code, out) = run(
                scope.clone(),
                "grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status",
            );
            assert_eq!(code, 0, "{out}");
            assert_eq!(
                out.matches("\t0000000000000000").count(),
                4,
                "{scope}: {out}"
            );
        }
        // The bounding set too, wherever there was one to drop (root, or a
        // user namespace); an unprivileged process outside one has nothing
        // an exec could grant under no_new_privs.
        let (_, out) = run(json!({}), "grep CapBnd /proc/self/status");
        if Kernel::get().userns || Kernel::get().root {
            assert!(out.contains("\t0000000000000000"), "{out}");
        }
    }

    #[test]
    fn a_confined_child_cannot_type_into_a_terminal() {
        let resolved = resolve(
            &Scope::empty(),
            &Places {
                project: "/nonexistent".into(),
                data: "/nonexistent".into(),
                tmp: "/nonexistent".into(),
                home: "/nonexistent".into(),
            },
            "/usr/bin/python3".as_ref(),
            None,
            None,
        );
        let prepared = prepare(&resolved, &Kernel::get(), Enforce::Strict).unwrap();
        // The terminal is the controlling terminal of the process that
        // starts the confined one, as a shell's is of the zot it starts.
        let mut command = Command::new("/usr/bin/python3");
        let script = "import fcntl, os, termios\n\
                      def sti(name, fd):\n\
                      \x20   try:\n\
                      \x20       fcntl.ioctl(fd(), termios.TIOCSTI, b'#'); print(name, 'injected')\n\
                      \x20   except OSError as e:\n\
                      \x20       print(name, 'refused', e.errno)\n\
                      sti('tty', lambda: os.open('/dev/tty', os.O_RDONLY))\n\
                      sti('stdin', lambda: 0)\n\
                      print('ctty', open('/proc/self/stat').read().rsplit(')', 1)[1].split()[4])\n";
        command.arg("-c").arg(script);
        let _master = zot_testkit::terminal::with_terminal(&mut command);
        crate::supervise(&mut command);
        prepared.apply(&mut command);
        let out = command.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        // No controlling terminal (and no access to `/dev/tty`); on the
        // terminal it still holds open, the ioctl is refused (EPERM).
        assert!(text.contains("ctty 0\n"), "{text}");
        assert!(text.contains("tty refused"), "{text}");
        assert!(text.contains("stdin refused 1"), "{text}");
    }

    #[test]
    fn what_a_weak_kernel_lacks_is_named() {
        let scope = Scope::parse(&json!({"net": ["tcp:443"]})).unwrap();
        let places = Places {
            project: "/p".into(),
            data: "/d".into(),
            tmp: "/t".into(),
            home: "/h".into(),
        };
        let resolved = resolve(&scope, &places, "/bin/sh".as_ref(), None, None);
        let weak = Kernel {
            landlock_abi: 3,
            userns: false,
            mount_ns: false,
            seccomp: false,
            root: false,
        };
        let lacking = missing(&resolved, &weak);
        assert_eq!(
            lacking,
            [
                "TCP port rules (Landlock ABI 4)",
                "signal and abstract-socket scoping (Landlock ABI 6)",
                "the Unix-socket filter (seccomp)",
                "the terminal-injection filter (seccomp)",
                "read-only file metadata outside the writable paths (a mount namespace)"
            ]
        );
        let err = prepare(&resolved, &weak, Enforce::Strict).unwrap_err();
        assert!(err.to_string().contains("TCP port rules"), "{err}");
        let prepared = prepare(&resolved, &weak, Enforce::BestEffort).unwrap();
        assert_eq!(prepared.unenforced(), lacking.as_slice());
    }
}
