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

/// Writes `text` to stdout or stderr. A reader that stops early (`zot -p …
/// | head`) is not an error: what it did not take is dropped quietly, where
/// `println!` would panic. Any other failure to write stdout is said once on
/// stderr.
pub fn write(to_stdout: bool, text: &str) {
    use std::io::Write as _;
    let written = if to_stdout {
        std::io::stdout().lock().write_all(text.as_bytes())
    } else {
        std::io::stderr().lock().write_all(text.as_bytes())
    };
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if let Err(e) = written
        && to_stdout
        && e.kind() != std::io::ErrorKind::BrokenPipe
        && !SAID.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        write(false, &format!("zot: cannot write to stdout: {e}\n"));
    }
}

/// `println!`, without control sequences when stdout is a terminal, and
/// without a panic when its reader has gone ([`write`]).
macro_rules! outln {
    () => {
        $crate::term::write(true, "\n")
    };
    ($($arg:tt)*) => {
        $crate::term::write(true, &format!("{}\n", $crate::term::for_stdout(&format!($($arg)*))))
    };
}

/// `eprintln!`, without control sequences when stderr is a terminal, and
/// without a panic when its reader has gone.
macro_rules! errln {
    () => {
        $crate::term::write(false, "\n")
    };
    ($($arg:tt)*) => {
        $crate::term::write(false, &format!("{}\n", $crate::term::for_stderr(&format!($($arg)*))))
    };
}

/// `eprint!` (a question before an answer is read), without control
/// sequences when stderr is a terminal.
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::term::write(false, &$crate::term::for_stderr(&format!($($arg)*)))
    };
}
