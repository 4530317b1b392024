//! The extension's side of the conversation with zot: [`HostInfo`] from
//! `hello_ack`, and [`Host`], the cheap cloneable handle every handler gets
//! for pushing one-way frames. It owns the one writer of stdout.

use std::fmt::Display;
use std::io::{ErrorKind, Write};
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, OnceLock, PoisonError};

use zot_protocol::zot::{ExtFrame, HelloAck, Notify, NotifyLevel, PanelClose, Submit, to_line};

use crate::response::Panel;

/// What zot told the extension in `hello_ack`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostInfo {
    pub protocol_version: u32,
    pub zot_version: String,
    pub provider: String,
    pub model: String,
    /// The user's project directory. The extension itself runs in its own
    /// directory, so this, not the process's cwd, is where the user works.
    pub cwd: PathBuf,
    /// The directory holding the extension's manifest.
    pub extension_dir: PathBuf,
    /// Where the extension should keep its own state.
    pub data_dir: PathBuf,
}

impl From<HelloAck> for HostInfo {
    fn from(ack: HelloAck) -> Self {
        Self {
            protocol_version: ack.protocol_version,
            zot_version: ack.zot_version,
            provider: ack.provider,
            model: ack.model,
            cwd: ack.cwd.into(),
            extension_dir: ack.extension_dir.into(),
            data_dir: ack.data_dir.into(),
        }
    }
}

/// A handle on zot for handlers (and any thread they start): notes,
/// prompts, panels and logging. Cloning is cheap; every clone writes through
/// the same single writer, so frames never interleave.
#[derive(Clone)]
pub struct Host {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    info: OnceLock<HostInfo>,
    /// `None` before `run` starts, after shutdown, and once a write failed
    /// (the host is gone; the read loop will see EOF).
    out: Mutex<Option<Box<dyn Write + Send>>>,
}

/// What `Host::info` gives before `hello_ack` arrived.
static NO_INFO: LazyLock<HostInfo> = LazyLock::new(HostInfo::default);

impl Host {
    pub(crate) fn new(name: String) -> Self {
        Self {
            shared: Arc::new(Shared {
                name,
                info: OnceLock::new(),
                out: Mutex::new(None),
            }),
        }
    }

    /// The extension's name, as sent in `hello`.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// What `hello_ack` said; all empty until it has arrived (handlers
    /// and `on_hello` hooks always run after it).
    pub fn info(&self) -> &HostInfo {
        self.shared.info.get().unwrap_or(&NO_INFO)
    }

    /// A one-shot note below the transcript, with the extension's name.
    pub fn notify(&self, level: NotifyLevel, message: impl Into<String>) {
        self.send(&ExtFrame::Notify(Notify {
            level,
            message: message.into(),
        }));
    }

    /// Removes every note this extension pushed (with `notify` or a `display` answer).
    pub fn clear_notes(&self) {
        self.send(&ExtFrame::ClearNotes);
    }

    /// Submits `text` as a user prompt (queued behind a running turn).
    /// zot ignores it outside the interactive mode and when it is blank.
    pub fn submit(&self, text: impl Into<String>) {
        self.send(&ExtFrame::Submit(Submit { text: text.into() }));
    }

    /// Redraws an open panel.
    pub fn render_panel(&self, panel: &Panel) {
        self.send(&ExtFrame::PanelRender(panel.to_render()));
    }

    /// Closes a panel this extension opened.
    pub fn close_panel(&self, panel_id: impl Into<String>) {
        self.send(&ExtFrame::PanelClose(PanelClose {
            panel_id: panel_id.into(),
        }));
    }

    /// Logs a line to stderr, which zot keeps in `$ZOT_HOME/logs/ext-<name>.log`.
    /// (stdout is the protocol: never print there.)
    pub fn log(&self, message: impl Display) {
        log(&self.shared.name, message);
    }

    pub(crate) fn set_info(&self, info: HostInfo) {
        let _ = self.shared.info.set(info);
    }

    /// Installs the writer and sends `first` through it, in one step so no
    /// other thread can slip a frame in before it.
    pub(crate) fn attach(
        &self,
        out: Box<dyn Write + Send>,
        first: &ExtFrame,
    ) -> std::io::Result<()> {
        let mut slot = self.out();
        let out = slot.insert(out);
        let result = write_frame(out.as_mut(), first);
        if result.is_err() {
            *slot = None;
        }
        result
    }

    /// Sends `last` and stops writing: later frames are dropped.
    pub(crate) fn detach(&self, last: Option<&ExtFrame>) -> std::io::Result<()> {
        let Some(mut out) = self.out().take() else {
            return Ok(());
        };
        match last {
            Some(frame) => write_frame(out.as_mut(), frame),
            None => out.flush(),
        }
    }

    /// Writes one whole frame; a failure is logged (once: writing stops).
    pub(crate) fn send(&self, frame: &ExtFrame) {
        if let Err(e) = self.try_send(frame)
            && e.kind() != ErrorKind::NotConnected
        {
            self.log(format_args!(
                "writing {} to zot failed ({e}); no more frames will be sent",
                frame.type_name()
            ));
        }
    }

    /// Writes one whole frame. A failed write means zot is gone, so writing
    /// stops; later calls fail with `NotConnected`.
    pub(crate) fn try_send(&self, frame: &ExtFrame) -> std::io::Result<()> {
        let mut slot = self.out();
        let Some(out) = slot.as_mut() else {
            return Err(std::io::Error::new(
                ErrorKind::NotConnected,
                "not connected to zot",
            ));
        };
        let result = write_frame(out.as_mut(), frame);
        if result.is_err() {
            *slot = None;
        }
        result
    }

    fn out(&self) -> MutexGuard<'_, Option<Box<dyn Write + Send>>> {
        // A panic while holding the lock cannot leave a half-written frame
        // behind a later one: each write is one `write_all` of a whole line.
        self.shared
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("name", &self.shared.name)
            .field("info", &self.shared.info.get())
            .finish_non_exhaustive()
    }
}

fn write_frame(out: &mut dyn Write, frame: &ExtFrame) -> std::io::Result<()> {
    let line = to_line(frame).map_err(std::io::Error::other)?;
    out.write_all(&line)?;
    out.flush()
}

/// One stderr line, `[name] message`. Never panics (unlike `eprintln!`)
/// when stderr is gone.
pub(crate) fn log(name: &str, message: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "[{name}] {message}");
}
