//! What zot prints for people. Names and text from outside zot (a project's
//! `.mcp.json` server names, Markdown command file names, extension and
//! model text) reach stdout and stderr; on a terminal they are printed
//! without control sequences, so they cannot move the cursor, retitle the
//! window or write the clipboard (OSC 52). A pipe or a file gets the text
//! as it is, for programs that read it. [`outln!`] and [`errln!`] are `println!` and
//! `eprintln!` with this rule; every human-readable line of the binary goes
//! through them.

use std::borrow::Cow;
use std::io::IsTerminal as _;
use std::sync::OnceLock;

use zot_extensions::zot_protocol::ui::strip_controls;

/// Whether stdout is a terminal, asked once.
fn stdout_is_terminal() -> bool {
    static TERMINAL: OnceLock<bool> = OnceLock::new();
    *TERMINAL.get_or_init(|| std::io::stdout().is_terminal())
}

/// Whether stderr is a terminal, asked once.
fn stderr_is_terminal() -> bool {
    static TERMINAL: OnceLock<bool> = OnceLock::new();
    *TERMINAL.get_or_init(|| std::io::stderr().is_terminal())
}

/// `text` as it may be written to stdout.
pub fn for_stdout(text: &str) -> Cow<'_, str> {
    if stdout_is_terminal() {
        strip_controls(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// `text` as it may be written to stderr.
pub fn for_stderr(text: &str) -> Cow<'_, str> {
    if stderr_is_terminal() {
        strip_controls(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// Writes `text` (and a newline after it when `newline`) to stdout or
/// stderr, without control sequences when that is a terminal. A reader that
/// stops early (`zot -p … | head`) is not an error: what it did not take is
/// dropped quietly, where `println!` would panic. Any other failure to write
/// stdout is said once on stderr. One function behind [`outln!`],
/// [`errln!`] and [`err!`], so each of their many uses is only a call.
pub fn write(to_stdout: bool, text: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write as _;
    let text = std::fmt::format(text);
    let end: &[u8] = if newline { b"\n" } else { b"" };
    let written = if to_stdout {
        let mut out = std::io::stdout().lock();
        out.write_all(for_stdout(&text).as_bytes())
            .and_then(|()| out.write_all(end))
    } else {
        let mut out = std::io::stderr().lock();
        out.write_all(for_stderr(&text).as_bytes())
            .and_then(|()| out.write_all(end))
    };
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if let Err(e) = written
        && to_stdout
        && e.kind() != std::io::ErrorKind::BrokenPipe
        && !SAID.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        write(
            false,
            format_args!("zot: cannot write to stdout: {e}"),
            true,
        );
    }
}

/// `println!`, without control sequences when stdout is a terminal, and
/// without a panic when its reader has gone ([`write`]).
macro_rules! outln {
    () => {
        $crate::term::write(true, format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::term::write(true, format_args!($($arg)*), true)
    };
}

/// `eprintln!`, without control sequences when stderr is a terminal, and
/// without a panic when its reader has gone.
macro_rules! errln {
    () => {
        $crate::term::write(false, format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::term::write(false, format_args!($($arg)*), true)
    };
}

/// `eprint!` (a question before an answer is read), without control
/// sequences when stderr is a terminal.
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::term::write(false, format_args!($($arg)*), false)
    };
}
