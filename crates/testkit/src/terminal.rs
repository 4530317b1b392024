//! A terminal for a process under test: a new pseudo-terminal made the
//! controlling terminal (and stdin) of the process a command starts, as a
//! shell's terminal is for the programs started from it.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::libc;

/// Makes a new pseudo-terminal the controlling terminal and stdin of the
/// process `command` starts (in a session of its own). Returns the master
/// side: keep it open while the process runs (closing it hangs the
/// terminal up).
pub fn with_terminal(command: &mut Command) -> File {
    let (master, slave) = pty();
    // SAFETY: between fork and exec: setsid, open, ioctl, dup2, close.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            let fd = libc::open(slave.as_ptr(), libc::O_RDWR);
            if fd < 0
                || libc::ioctl(fd, libc::TIOCSCTTY, 0) != 0
                || libc::dup2(fd, libc::STDIN_FILENO) < 0
            {
                return Err(io::Error::last_os_error());
            }
            libc::close(fd);
            Ok(())
        });
    }
    master
}

/// A new pseudo-terminal: its master, and its slave's path.
fn pty() -> (File, CString) {
    // SAFETY: the documented pty calls on a descriptor opened here.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(master >= 0, "posix_openpt: {}", io::Error::last_os_error());
        assert_eq!(libc::grantpt(master), 0, "{}", io::Error::last_os_error());
        assert_eq!(libc::unlockpt(master), 0, "{}", io::Error::last_os_error());
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
        let slave = std::ffi::CStr::from_ptr(name.as_ptr()).to_owned();
        (File::from_raw_fd(master), slave)
    }
}
