//! One running extension: its process, connection, log and registrations,
//! the reader task that drives its registration window and runtime, and
//! how it is stopped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::watch;
use tokio::time::Instant;
use zot_protocol::zot::HostFrame;

use crate::connection::{Connection, FrameReader, ReadError};
use crate::dialect;
use crate::ext_log::ExtLog;
use crate::host::{HostEvent, Inner};
use crate::limits::Limits;
use crate::manifest::Dialect;
use crate::registry::Registrations;
use crate::supervisor::{Process, describe};

/// How an extension's registration window ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Still registering.
    Pending,
    /// Sent `ready`.
    Ready,
    /// Went quiet without `ready` (legacy SDK).
    AutoReady,
    /// Kept talking past the ready deadline without `ready`.
    TimedOut,
    /// Exited before its window ended.
    Exited,
}

pub(crate) struct Extension {
    pub(crate) name: String,
    /// Position in load order; lower wins name conflicts.
    pub(crate) order: usize,
    pub(crate) dialect: Dialect,
    /// nimlet reply timeout (`None`: wait forever); zot uses the host's limits.
    pub(crate) timeout: Option<std::time::Duration>,
    pub(crate) log: Arc<ExtLog>,
    pub(crate) conn: Connection,
    pub(crate) process: Process,
    regs: Mutex<Registrations>,
    readiness: watch::Sender<Readiness>,
    alive: AtomicBool,
    /// Set when the host stops it on purpose, so its exit is not reported as a crash.
    stopping: AtomicBool,
}

impl Extension {
    pub(crate) fn new(
        name: String,
        order: usize,
        log: Arc<ExtLog>,
        conn: Connection,
        process: Process,
        dialect: Dialect,
        timeout: Option<std::time::Duration>,
    ) -> Self {
        Self {
            name,
            order,
            dialect,
            timeout,
            log,
            conn,
            process,
            regs: Mutex::default(),
            readiness: watch::channel(Readiness::Pending).0,
            alive: AtomicBool::new(true),
            stopping: AtomicBool::new(false),
        }
    }

    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    pub(crate) fn registrations(&self) -> MutexGuard<'_, Registrations> {
        self.regs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn readiness(&self) -> Readiness {
        *self.readiness.borrow()
    }

    pub(crate) fn is_ready(&self) -> bool {
        !matches!(self.readiness(), Readiness::Pending)
    }

    /// Ends the registration window (only the first call counts).
    pub(crate) fn set_readiness(&self, to: Readiness) {
        self.readiness.send_if_modified(|r| {
            let change = *r == Readiness::Pending;
            if change {
                *r = to;
            }
            change
        });
    }

    /// Waits until the registration window has ended.
    pub(crate) async fn wait_ready(&self) -> Readiness {
        let mut rx = self.readiness.subscribe();
        let result = rx.wait_for(|r| *r != Readiness::Pending).await.map(|r| *r);
        result.unwrap_or(Readiness::Exited)
    }

    pub(crate) fn subscribes(&self, event: &str) -> bool {
        self.is_alive() && self.registrations().events.contains(event)
    }

    pub(crate) fn intercepts(&self, event: &str) -> bool {
        self.is_alive() && self.registrations().intercepts.contains(event)
    }

    /// Graceful stop: queued frames, then `shutdown`, then stdin closed; wait
    /// until `deadline`, SIGTERM, `term_grace`, SIGKILL (all to the group).
    pub(crate) async fn stop(&self, deadline: Instant, limits: &Limits) {
        self.stopping.store(true, Ordering::Release);
        match self.dialect {
            Dialect::Zot => self.conn.send(&HostFrame::Shutdown),
            Dialect::Nimlet => self.conn.send(&zot_protocol::nimlet::HostFrame::Shutdown),
        }
        self.conn.close_input();
        let status = self.process.stop(deadline, limits.term_grace).await;
        self.alive.store(false, Ordering::Release);
        self.conn.fail_all("extension stopped");
        self.log
            .line(format_args!("stopped ({})", describe(status)));
    }
}

/// Drives one extension after its handshake: the registration window
/// (ready / auto-ready after silence / ready deadline), then every frame until
/// its stdout closes, then the clean-up of a gone extension.
pub(crate) async fn run_reader(
    ext: Arc<Extension>,
    host: Weak<Inner>,
    mut reader: FrameReader,
    limits: Limits,
) {
    let window_end = Instant::now() + limits.ready_timeout;
    let mut last_frame = Instant::now();
    let end = loop {
        let next = if ext.is_ready() {
            reader.next().await
        } else {
            let idle_at = (last_frame + limits.auto_ready_idle).min(window_end);
            tokio::select! {
                next = reader.next() => next,
                () = tokio::time::sleep_until(idle_at) => {
                    if Instant::now() >= window_end {
                        ext.log.line("timed out waiting for ready frame; proceeding");
                        ext.set_readiness(Readiness::TimedOut);
                    } else {
                        ext.log.line("no ready frame; auto-readying after idle (legacy SDK?)");
                        ext.set_readiness(Readiness::AutoReady);
                    }
                    continue;
                }
            }
        };
        last_frame = Instant::now();
        match next {
            Some(Ok(line)) => match host.upgrade() {
                Some(inner) => match ext.dialect {
                    Dialect::Zot => dialect::zot::handle_line(&inner, &ext, &line),
                    Dialect::Nimlet => dialect::nimlet::handle_line(&inner, &ext, &line),
                },
                None => break Gone::HostDropped,
            },
            Some(Err(ReadError::TooLong)) => break Gone::FrameTooLong,
            Some(Err(ReadError::Io(e))) => break Gone::ReadError(e.to_string()),
            None => break Gone::Eof,
        }
    };
    disconnected(&ext, host.upgrade().as_deref(), end, &limits).await;
}

enum Gone {
    Eof,
    FrameTooLong,
    ReadError(String),
    HostDropped,
}

async fn disconnected(ext: &Extension, host: Option<&Inner>, why: Gone, limits: &Limits) {
    let stopping = ext.stopping.load(Ordering::Acquire);
    ext.alive.store(false, Ordering::Release);
    let status = match why {
        Gone::FrameTooLong => {
            ext.log.line(format_args!(
                "frame exceeds the {} byte limit; disconnecting and killing the extension",
                limits.max_frame_bytes
            ));
            ext.process.kill().await
        }
        _ => match ext
            .process
            .wait_until(Instant::now() + limits.exit_reap_grace)
            .await
        {
            Some(status) => Some(status),
            None => ext.process.kill().await,
        },
    };
    let reason = match &why {
        Gone::FrameTooLong => format!(
            "{} sent a frame over the {} byte limit and was killed ({})",
            ext.name,
            limits.max_frame_bytes,
            describe(status)
        ),
        Gone::ReadError(e) => format!(
            "{}: reading stdout failed: {e} ({})",
            ext.name,
            describe(status)
        ),
        Gone::Eof | Gone::HostDropped => format!("{} exited ({})", ext.name, describe(status)),
    };
    ext.conn.fail_all(&reason);
    ext.set_readiness(Readiness::Exited);
    if stopping {
        return;
    }
    ext.log.line(&reason);
    if let Some(host) = host {
        let (had_commands, had_tools) = {
            let regs = ext.registrations();
            (!regs.commands.is_empty(), !regs.tools.is_empty())
        };
        host.emit(HostEvent::Exited {
            extension: ext.name.clone(),
            reason: reason.clone(),
        });
        host.emit(HostEvent::Warning {
            extension: ext.name.clone(),
            message: format!(
                "{reason}; its commands and tools are gone (log: {})",
                ext.log.path().display()
            ),
        });
        if had_commands {
            host.emit(HostEvent::CommandsChanged);
        }
        if had_tools {
            host.emit(HostEvent::ToolsChanged);
        }
    }
}
