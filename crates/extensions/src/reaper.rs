//! Descendants that escape their extension's process group. An extension
//! stopped by the host takes its whole process group with it, but a daemon
//! that forks twice and calls `setsid` leaves the group and, before, would
//! outlive zot. On Linux the host makes zot a child subreaper, so such
//! orphans are re-parented to zot instead of to init; zot then reaps them
//! when they exit and, at shutdown, kills the ones still running.
//!
//! Only *adopted* children are touched, and always by their own pid (never
//! `waitpid(-1)`), so no exit status that tokio or `std::process` waits for
//! is stolen. A child counts as adopted when the host did not spawn it
//! ([`own`]) and it does not look like any child zot spawns itself: those
//! are either in zot's own process group (`std::process::Command` without a
//! group) or lead a process group of their own in zot's session (tokio
//! children started with `process_group(0)`: extensions, the bash tool,
//! hook commands and a Markdown command's `` !`cmd` ``).

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

/// Children the host spawned and tokio reaps.
static OWNED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// The host spawned `pid` and waits for it itself.
pub(crate) fn own(pid: i32) {
    OWNED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(pid);
}

/// `pid` was reaped by its owner.
pub(crate) fn disown(pid: i32) {
    OWNED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&pid);
}

fn owned(pid: i32) -> bool {
    OWNED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&pid)
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::{BTreeMap, BTreeSet};
    use std::time::{Duration, Instant};

    use nix::sys::signal::{Signal, kill};
    use nix::sys::wait::{WaitPidFlag, waitpid};
    use nix::unistd::{Pid, getpgrp, getpid, getsid};

    /// How long a shutdown sweep may take at most.
    const SWEEP_LIMIT: Duration = Duration::from_secs(2);
    /// Pause between sweep rounds (killed processes become zombies, their
    /// orphaned children are re-parented to zot).
    const SWEEP_ROUND: Duration = Duration::from_millis(20);

    /// One line of `/proc/<pid>/stat`, the fields that matter here.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Proc {
        pub(super) pid: i32,
        pub(super) ppid: i32,
        pub(super) pgid: i32,
        pub(super) sid: i32,
        pub(super) zombie: bool,
    }

    /// Parses `/proc/<pid>/stat`: `pid (comm) state ppid pgrp session …`;
    /// `comm` may hold spaces and parentheses, so fields count from the last `)`.
    pub(super) fn parse_stat(text: &str) -> Option<Proc> {
        let (head, rest) = text.rsplit_once(')')?;
        let pid = head.split_whitespace().next()?.parse().ok()?;
        let mut fields = rest.split_whitespace();
        let state = fields.next()?;
        let mut number = || fields.next()?.parse::<i32>().ok();
        Some(Proc {
            pid,
            ppid: number()?,
            pgid: number()?,
            sid: number()?,
            zombie: state == "Z",
        })
    }

    /// Every process that `/proc` shows.
    fn processes() -> Vec<Proc> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            })
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter_map(|text| parse_stat(&text))
            .collect()
    }

    /// zot's children that it adopted (see the module documentation).
    fn adopted(all: &[Proc]) -> Vec<Proc> {
        let me = getpid().as_raw();
        let group = getpgrp().as_raw();
        let session = getsid(None).map(Pid::as_raw).unwrap_or(-1);
        all.iter()
            .filter(|p| p.ppid == me && p.pid != me)
            .filter(|p| p.pgid != group && !(p.sid == session && p.pgid == p.pid))
            .filter(|p| !super::owned(p.pid))
            .copied()
            .collect()
    }

    /// `roots` and everything below them.
    fn with_descendants(all: &[Proc], roots: &[Proc]) -> BTreeSet<i32> {
        let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for p in all {
            children.entry(p.ppid).or_default().push(p.pid);
        }
        let mut out = BTreeSet::new();
        let mut todo: Vec<i32> = roots.iter().map(|p| p.pid).collect();
        while let Some(pid) = todo.pop() {
            if out.insert(pid) {
                todo.extend(children.get(&pid).into_iter().flatten());
            }
        }
        out
    }

    pub(super) fn become_subreaper() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
                tracing::warn!(error = %e, "cannot become a child subreaper");
            }
        });
    }

    pub(super) fn reap_exited() {
        for orphan in adopted(&processes()).iter().filter(|p| p.zombie) {
            let _ = waitpid(Pid::from_raw(orphan.pid), Some(WaitPidFlag::WNOHANG));
        }
    }

    pub(super) fn sweep() -> usize {
        let deadline = Instant::now() + SWEEP_LIMIT;
        let mut killed = BTreeSet::new();
        loop {
            let all = processes();
            let orphans = adopted(&all);
            if orphans.is_empty() {
                break;
            }
            for pid in with_descendants(&all, &orphans) {
                if killed.insert(pid) || all.iter().any(|p| p.pid == pid && !p.zombie) {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
            for orphan in &orphans {
                let _ = waitpid(Pid::from_raw(orphan.pid), Some(WaitPidFlag::WNOHANG));
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(SWEEP_ROUND);
        }
        if !killed.is_empty() {
            tracing::info!(
                count = killed.len(),
                "killed processes that outlived their extension"
            );
        }
        killed.len()
    }
}

/// Makes zot a child subreaper (Linux; once per process), so descendants
/// orphaned by an extension's exit come back to zot rather than to init.
pub(crate) fn become_subreaper() {
    #[cfg(target_os = "linux")]
    linux::become_subreaper();
}

/// Reaps adopted orphans that have exited (zombies). Waits for nothing.
pub(crate) fn reap_exited() {
    #[cfg(target_os = "linux")]
    linux::reap_exited();
}

/// Kills every adopted orphan and everything below it, and reaps them;
/// returns how many processes got SIGKILL. Blocks for at most about two seconds.
pub(crate) fn sweep() -> usize {
    #[cfg(target_os = "linux")]
    return linux::sweep();
    #[cfg(not(target_os = "linux"))]
    0
}

/// Starts the task that reaps adopted orphans whenever a child exits
/// (SIGCHLD); `None` without a runtime that can hear signals.
pub(crate) fn spawn_reaper() -> Option<tokio::task::AbortHandle> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let mut signals = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok()?;
    let task = tokio::spawn(async move {
        while signals.recv().await.is_some() {
            reap_exited();
        }
    });
    Some(task.abort_handle())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::linux::parse_stat;

    #[test]
    fn stat_lines_parse_whatever_the_command_name_holds() {
        let p = parse_stat("4242 (we ird) (x)) Z 17 4242 4242 0 -1 4194560").unwrap();
        assert_eq!(
            (p.pid, p.ppid, p.pgid, p.sid, p.zombie),
            (4242, 17, 4242, 4242, true)
        );
        let p = parse_stat("7 (sh) S 1 7 3 34816").unwrap();
        assert_eq!((p.ppid, p.pgid, p.sid, p.zombie), (1, 7, 3, false));
        assert!(parse_stat("garbage").is_none());
    }
}
