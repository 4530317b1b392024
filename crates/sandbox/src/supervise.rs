//! The supervisor between zot and every child it starts for extensions,
//! hooks and the bash tool, so that nothing zot started outlives it,
//! however zot ends (a SIGKILL included) and however the child hides its
//! descendants (`setsid`, double forks).
//!
//! Between fork and exec the child forks once more: the grandchild goes on
//! to exec the command, and the child stays behind as its supervisor, a
//! copy of zot that runs no code but the loop below. It is a child
//! subreaper, so every process the command leaves behind is re-parented to
//! it; it holds the read end of zot's *lifeline*, a pipe whose write end only
//! zot holds, and sees it close when zot is gone; and it exits with the
//! command's status, so zot waits for it as it would for the command.
//!
//! When the command exits, or zot is gone, the supervisor ends whatever is
//! left below it: SIGTERM, [`LEFTOVER_GRACE`], SIGKILL.
//!
//! The process group the child was given (its pid is the group's id, which
//! zot signals to stop the command) keeps the command and what it starts;
//! the supervisor moves to zot's own group, so a stop signal reaches the
//! command alone and the supervisor still sees it end, ends what it left
//! behind and reports its status. It ignores the signals a terminal sends
//! zot's group (it follows zot through the lifeline instead).
//!
//! The supervisor is a fork of a multi-threaded process: it makes system
//! calls only, on memory it does not allocate. Its death signal would fire
//! when the zot *thread* that forked it ends (runtime threads come and go),
//! so it watches the lifeline instead; the command's own death signal is
//! the supervisor's, which has one thread.

use std::time::Duration;

/// How long the processes a command leaves behind (or everything, once
/// zot is gone) get between SIGTERM and SIGKILL to clean up. Shorter than
/// the bash tool's grace before it kills the whole group, so the
/// supervisor is done before that.
pub const LEFTOVER_GRACE: Duration = Duration::from_secs(1);

/// How often the supervisor looks at what is left while it ends it.
const SWEEP_PAUSE: Duration = Duration::from_millis(10);

/// Without `pidfd_open` (Linux < 5.3) the supervisor polls for the
/// command's exit this often.
const EXIT_POLL_MS: libc::c_int = 50;

/// Makes `command`'s child a supervisor and the command its child (see the
/// module documentation). Install it before any step that confines the
/// command (the sandbox), so the supervisor itself stays unconfined and the
/// command alone is held.
#[cfg(target_os = "linux")]
pub fn supervise(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let lifeline = linux::lifeline();
    // SAFETY: the step makes only async-signal-safe system calls on stack
    // memory; the supervisor branch never returns into std.
    unsafe {
        command.pre_exec(move || linux::split(lifeline));
    }
}

/// Elsewhere the child is the command, as before.
#[cfg(not(target_os = "linux"))]
pub fn supervise(_command: &mut std::process::Command) {}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::sync::OnceLock;

    use super::{EXIT_POLL_MS, LEFTOVER_GRACE, SWEEP_PAUSE};

    /// The read end of zot's lifeline (-1 if the pipe could not be made:
    /// the supervisor then only follows its command). zot keeps both ends
    /// open until it exits; both are close-on-exec, so only supervisors,
    /// which never exec, hold a read end beyond the fork.
    pub(super) fn lifeline() -> libc::c_int {
        static LIFELINE: OnceLock<Option<(OwnedFd, OwnedFd)>> = OnceLock::new();
        LIFELINE
            .get_or_init(|| {
                let mut fds = [0; 2];
                // SAFETY: pipe2 fills the array it is given.
                if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                    return None;
                }
                // SAFETY: both descriptors were just opened and are ours.
                Some(unsafe {
                    use std::os::fd::FromRawFd;
                    (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
                })
            })
            .as_ref()
            .map_or(-1, |(read, _)| read.as_raw_fd())
    }

    /// In the child, between fork and exec: forks the command, which
    /// returns to be exec'd; the child becomes its supervisor and never
    /// returns.
    pub(super) fn split(lifeline: libc::c_int) -> io::Result<()> {
        // SAFETY (whole function): system calls on values on the stack.
        unsafe {
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // A plain fork: glibc's `fork` would run its atfork handlers,
            // which take locks another zot thread may have held at the
            // first fork.
            let flags = libc::c_ulong::try_from(libc::SIGCHLD).unwrap_or_default();
            let pid = libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize);
            if pid < 0 {
                return Err(io::Error::last_os_error());
            }
            if pid == 0 {
                // The command: it dies with its supervisor (which has one
                // thread, so the signal means what it says).
                let supervisor = libc::getppid();
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if supervisor == 1 {
                    return Err(io::Error::other("the supervisor exited during spawn"));
                }
                return Ok(());
            }
            let pid = libc::pid_t::try_from(pid).unwrap_or(-1);
            if libc::getpgid(0) == libc::getpid() {
                libc::setpgid(0, libc::getpgid(libc::getppid()));
            }
            for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_IGN);
            }
            run(pid, lifeline)
        }
    }

    /// The supervisor of `command`: waits for its exit or zot's, ends what
    /// is left, and exits as the command did.
    fn run(command: libc::pid_t, lifeline: libc::c_int) -> ! {
        // SAFETY (whole function): system calls on stack memory.
        unsafe {
            // Hold nothing of the command's or zot's: its pipes must close
            // when the command exits, and spawn's error pipe when it execs.
            close_all_but(lifeline);
            let pidfd = libc::syscall(libc::SYS_pidfd_open, command, 0);
            let pidfd = libc::c_int::try_from(pidfd).unwrap_or(-1);
            let mut status = 0;
            loop {
                let mut fds = [poll_fd(lifeline), poll_fd(pidfd)];
                let timeout = if pidfd < 0 { EXIT_POLL_MS } else { -1 };
                libc::poll(fds.as_mut_ptr(), 2, timeout);
                if libc::waitpid(command, &mut status, libc::WNOHANG) == command {
                    break;
                }
                if fds[0].revents != 0 {
                    // zot is gone: so is everything it started.
                    end_all();
                    libc::_exit(1);
                }
                // Adopted orphans that exited on their own.
                while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
            }
            end_all();
            exit_as(status)
        }
    }

    fn poll_fd(fd: libc::c_int) -> libc::pollfd {
        libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }
    }

    /// Closes every descriptor but `keep` (which may be -1).
    unsafe fn close_all_but(keep: libc::c_int) {
        // SAFETY: closing descriptors this process owns.
        unsafe {
            let range = |from: libc::c_uint, to: libc::c_uint| {
                from > to || libc::syscall(libc::SYS_close_range, from, to, 0u32) == 0
            };
            let closed = match libc::c_uint::try_from(keep) {
                Ok(keep) => (keep == 0 || range(0, keep - 1)) && range(keep + 1, libc::c_uint::MAX),
                Err(_) => range(0, libc::c_uint::MAX),
            };
            if !closed {
                // Before Linux 5.9: one by one, up to the descriptor limit.
                let mut limit: libc::rlimit = std::mem::zeroed();
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
                let top = libc::c_int::try_from(limit.rlim_cur.min(65_536)).unwrap_or(1024);
                for fd in (0..top).filter(|fd| *fd != keep) {
                    libc::close(fd);
                }
            }
        }
    }

    /// Ends every process below the supervisor: SIGTERM, then SIGKILL once
    /// [`LEFTOVER_GRACE`] has passed; each round reaps the dead, whose
    /// orphans are re-parented here and signalled in the next round.
    fn end_all() {
        let grace_ns = u64::try_from(LEFTOVER_GRACE.as_nanos()).unwrap_or(u64::MAX);
        let start = now_ns();
        let mut signal = libc::SIGTERM;
        loop {
            // SAFETY: reaping our own children.
            while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
            if signal == libc::SIGTERM && now_ns().saturating_sub(start) >= grace_ns {
                signal = libc::SIGKILL;
            }
            let mut any = false;
            for_each_child(|pid| {
                any = true;
                // SAFETY: signalling our own child.
                unsafe { libc::kill(pid, signal) };
            });
            if !any {
                // SAFETY: nothing is left to wait for unless ECHILD says so.
                let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
                if r < 0 {
                    return;
                }
            }
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: libc::c_long::try_from(SWEEP_PAUSE.as_nanos()).unwrap_or(10_000_000),
            };
            // SAFETY: sleeping on a stack value.
            unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
        }
    }

    fn now_ns() -> u64 {
        // SAFETY: clock_gettime fills the struct it is given.
        let mut t: libc::timespec = unsafe { std::mem::zeroed() };
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
        let secs = u64::try_from(t.tv_sec).unwrap_or(0);
        let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
        secs.saturating_mul(1_000_000_000).saturating_add(nanos)
    }

    /// Calls `f` with the pid of each live or dead child, read from
    /// `/proc/thread-self/children` (the supervisor has one thread).
    fn for_each_child(mut f: impl FnMut(libc::pid_t)) {
        const PATH: &[u8] = b"/proc/thread-self/children\0";
        // SAFETY: a NUL-terminated path; reads into a stack buffer.
        unsafe {
            let fd = libc::open(PATH.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return;
            }
            let mut buf = [0u8; 512];
            let mut pid: libc::pid_t = 0;
            loop {
                let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                let Ok(n) = usize::try_from(n) else { break };
                if n == 0 {
                    break;
                }
                for &b in &buf[..n] {
                    if b.is_ascii_digit() {
                        pid = pid
                            .saturating_mul(10)
                            .saturating_add(libc::pid_t::from(b - b'0'));
                    } else if pid > 0 {
                        f(pid);
                        pid = 0;
                    }
                }
            }
            if pid > 0 {
                f(pid);
            }
            libc::close(fd);
        }
    }

    /// Exits with the command's wait status: its code, or its signal
    /// raised again (128 + the signal if that does not end it).
    fn exit_as(status: libc::c_int) -> ! {
        // SAFETY: ending this process.
        unsafe {
            if libc::WIFSIGNALED(status) {
                let signal = libc::WTERMSIG(status);
                libc::signal(signal, libc::SIG_DFL);
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, signal);
                libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                libc::kill(libc::getpid(), signal);
                libc::_exit(128 + signal);
            }
            libc::_exit(libc::WEXITSTATUS(status))
        }
    }
}
