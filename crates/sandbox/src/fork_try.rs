//! Trying a system call in a forked child, which exits at once: some of
//! what a kernel allows (namespaces, read-only mounts) only shows by trying,
//! and trying must not change zot's own process. Both the kernel probe and
//! the mount-namespace check use it.

#![cfg(target_os = "linux")]

/// Whether `attempt` returns true in a forked child, which exits at once.
/// `attempt` must only make async-signal-safe calls (zot may have threads).
pub(crate) fn in_child(attempt: impl FnOnce() -> bool) -> bool {
    // SAFETY: the child only runs `attempt` (async-signal-safe, as required
    // above) and `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let ok = attempt();
        // SAFETY: as above.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    if pid < 0 {
        return false;
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for the child forked above.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
}
