//! The mount namespace of a confined process: every mount read-only but
//! its writable paths. Landlock does not mediate changes to a file's
//! metadata (`chmod`, `chown`, `utimes`, `setxattr`), and the seccomp filter
//! cannot see the paths they name; a read-only mount refuses them all
//! (`EROFS`), so outside its writable paths a confined process cannot change
//! a file's mode, owner, times or extended attributes, while inside them
//! (`chmod +x` of a project script) it still can.
//!
//! In the child, in a fresh mount namespace (`unshare(CLONE_NEWNS)`, inside
//! a user namespace unless zot runs as root): every mount is made a slave,
//! so nothing done here reaches zot's namespace; each writable path is
//! cloned (`open_tree`, its submounts included, writable as they were);
//! every mount is made read-only (`mount_setattr`, recursive: per-mount
//! flags only, the file systems themselves stay writable for everyone
//! else); the clones are put back over their paths (`move_mount`); and the
//! working directory is entered again by its path, so it is the clone where
//! the directory is writable. A confined process cannot undo this: it has
//! no capabilities, Landlock forbids it to change mounts, and in any user
//! namespace it makes the kernel locks the read-only flag.

#![cfg(target_os = "linux")]

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What stays writable in a confined process's mount namespace.
#[derive(Debug)]
pub(crate) struct ReadOnly {
    /// Canonical, none under another (it is writable with its parent).
    keep: Vec<CString>,
}

impl ReadOnly {
    /// Everything read-only but `write` (paths that do not exist are left
    /// out); `None` when `/` itself is writable: then there is nothing to
    /// make read-only.
    pub(crate) fn new(write: &[PathBuf]) -> Option<Self> {
        let mut paths: Vec<PathBuf> = write.iter().filter_map(|p| p.canonicalize().ok()).collect();
        if paths.iter().any(|p| p == Path::new("/")) {
            return None;
        }
        paths.sort();
        paths.dedup();
        let outer: Vec<PathBuf> = paths
            .iter()
            .filter(|p| !paths.iter().any(|q| q != *p && p.starts_with(q)))
            .cloned()
            .collect();
        let keep = outer
            .iter()
            .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
            .collect();
        Some(Self { keep })
    }

    /// How many clones [`ReadOnly::enter`] holds at once.
    pub(crate) fn len(&self) -> usize {
        self.keep.len()
    }

    /// In the child, just after it entered its mount namespace (see the
    /// module documentation). `clones` holds the clones' descriptors; it
    /// comes with room for [`ReadOnly::len`] of them and is never grown, so
    /// nothing allocates. `mount`, `open_tree`, `mount_setattr`,
    /// `move_mount`, `close`, `getcwd`, `chdir`: system calls only.
    pub(crate) fn enter(&self, clones: &mut Vec<libc::c_int>) -> io::Result<()> {
        let fail = || Err(io::Error::last_os_error());
        clones.clear();
        if !make_slaves() {
            return fail();
        }
        for path in &self.keep {
            if clones.len() == clones.capacity() {
                return Err(io::Error::from_raw_os_error(libc::E2BIG));
            }
            match clone_tree(path) {
                Some(fd) => clones.push(fd),
                // Gone since the sandbox was prepared: nothing to keep.
                None if io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) => {
                    clones.push(-1);
                }
                None => return fail(),
            }
        }
        if !make_all_read_only() {
            return fail();
        }
        for (path, fd) in self.keep.iter().zip(clones.iter()) {
            if *fd < 0 {
                continue;
            }
            // SAFETY: a descriptor this process opened, a NUL-terminated
            // path this struct owns, a static empty string.
            let r = unsafe {
                let r = libc::syscall(
                    libc::SYS_move_mount,
                    *fd,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    libc::MOVE_MOUNT_F_EMPTY_PATH,
                );
                libc::close(*fd);
                r
            };
            if r != 0 {
                return fail();
            }
        }
        // The working directory still names the mount beneath a clone.
        let mut cwd = [0u8; 4096];
        // SAFETY: getcwd fills the stack buffer it is given, NUL-terminated.
        let n = unsafe { libc::syscall(libc::SYS_getcwd, cwd.as_mut_ptr(), cwd.len()) };
        if n > 0 && cwd[0] == b'/' && unsafe { libc::chdir(cwd.as_ptr().cast()) } != 0 {
            return fail();
        }
        Ok(())
    }
}

/// Makes every mount of this namespace a slave of zot's (recursively), so
/// that nothing mounted here propagates back.
fn make_slaves() -> bool {
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: a static path and null pointers the call accepts.
    unsafe {
        libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ) == 0
    }
}

/// A detached copy of the mount tree at `path`, its submounts included
/// (`None`: see errno).
fn clone_tree(path: &CStr) -> Option<libc::c_int> {
    let recursive = libc::c_uint::try_from(libc::AT_RECURSIVE).unwrap_or_default();
    let flags = libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC | recursive;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) };
    libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)
}

/// Sets the read-only flag of every mount of this namespace (the mounts'
/// own flag: the file systems stay writable elsewhere).
fn make_all_read_only() -> bool {
    let read_only = libc::mount_attr {
        attr_set: libc::MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a static path and a struct on the stack of the size given.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c"/".as_ptr(),
            libc::AT_RECURSIVE,
            &read_only as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        ) == 0
    }
}

/// Whether this kernel lets zot give a child the mount namespace above:
/// tried in a forked child, which makes its own namespace read-only and
/// exits. (Containers and security modules restrict these calls in ways
/// that only trying reveals.)
pub(crate) fn available(root: bool) -> bool {
    let flags = if root {
        libc::CLONE_NEWNS
    } else {
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS
    };
    crate::fork_try::in_child(move || {
        // SAFETY: a system call without pointers.
        let unshared = unsafe { libc::unshare(flags) } == 0;
        // Each step runs only if the namespace was made (`&&`), so nothing
        // here touches zot's own mounts.
        unshared && make_slaves() && clone_tree(c"/").is_some() && make_all_read_only()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_missing_paths_are_left_out_and_root_makes_nothing_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        std::fs::create_dir_all(top.join("a-b")).unwrap();
        let write = [
            top.join("a/b"),
            top.join("a"),
            top.join("a-b"),
            top.join("a/../a"),
            top.join("missing"),
        ];
        let read_only = ReadOnly::new(&write).unwrap();
        let kept: Vec<&[u8]> = read_only.keep.iter().map(|c| c.as_bytes()).collect();
        let want = [top.join("a"), top.join("a-b")];
        let want: Vec<&[u8]> = want.iter().map(|p| p.as_os_str().as_bytes()).collect();
        assert_eq!(kept, want);
        assert_eq!(read_only.len(), 2);
        assert!(ReadOnly::new(&[top.join("a"), PathBuf::from("/")]).is_none());
    }
}
