//! Supervising a loaded extension: its frames, its end, stopping it.

use std::sync::{Arc, Weak};

use futures_util::future::join_all;
use tokio::time::Instant;
use zot_protocol::ui::HostEvent;

use crate::extension::{Extension, Readiness};
use crate::limits::Limits;
use crate::transport::{FrameReader, ReadError, describe, preview};

use super::state::{Bound, Inner};

impl Inner {
    /// Stops `running` together under one grace period; returns how many.
    pub(super) async fn stop(&self, running: &[Arc<Extension>]) -> usize {
        let deadline = Instant::now() + self.cx.config.limits.shutdown_grace;
        join_all(
            running
                .iter()
                .map(|ext| ext.stop(deadline, &self.cx.config.limits)),
        )
        .await;
        running.len()
    }
}

/// Drives one extension after its handshake: the registration window
/// (ready / auto-ready after silence / ready deadline), then every frame
/// until its connection closes, then the clean-up of a gone extension.
pub(super) async fn drive(
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
                        ext.peer.log.line("timed out waiting for ready frame; proceeding");
                        ext.set_readiness(Readiness::TimedOut);
                    } else {
                        ext.peer.log.line("no ready frame; auto-readying after idle (legacy SDK?)");
                        ext.set_readiness(Readiness::AutoReady);
                    }
                    continue;
                }
            }
        };
        last_frame = Instant::now();
        match next {
            Some(Ok(line)) => match host.upgrade() {
                Some(inner) => {
                    tracing::debug!(extension = %ext.name(), frame = %preview(&line), "frame in");
                    let link = Bound {
                        inner: &inner,
                        ext: &ext,
                    };
                    ext.adapter.on_frame(&ext.peer, &link, &line);
                }
                None => break Gone::HostDropped,
            },
            Some(Err(ReadError::TooLong)) => break Gone::FrameTooLong,
            Some(Err(ReadError::Io(e))) => break Gone::ReadError(e.to_string()),
            None => break Gone::Eof,
        }
    };
    let host = host.upgrade();
    disconnected(&ext, host.as_deref(), end, &limits).await;
    // A lost remote extension is connected again, unless the host stopped it.
    if let (Some(host), Some((scope, manifest))) = (host, &ext.origin)
        && !ext.is_stopping()
    {
        host.reconnect_later(ext.order, *scope, manifest.clone());
    }
}

pub(super) enum Gone {
    Eof,
    FrameTooLong,
    ReadError(String),
    HostDropped,
}

pub(super) async fn disconnected(
    ext: &Extension,
    host: Option<&Inner>,
    why: Gone,
    limits: &Limits,
) {
    let stopping = ext.is_stopping();
    ext.mark_gone();
    let name = ext.name();
    let status = match why {
        Gone::FrameTooLong => {
            ext.peer.log.line(format_args!(
                "frame exceeds the {} byte limit; disconnecting and killing the extension",
                limits.max_frame_bytes
            ));
            ext.endpoint.kill().await
        }
        _ => match ext
            .endpoint
            .wait_until(Instant::now() + limits.exit_reap_grace)
            .await
        {
            Some(status) => Some(status),
            None => ext.endpoint.kill().await,
        },
    };
    let status = describe(status.as_deref());
    let reason = match (&why, ext.is_remote()) {
        (Gone::FrameTooLong, false) => format!(
            "{name} sent a frame over the {} byte limit and was killed ({status})",
            limits.max_frame_bytes,
        ),
        (Gone::FrameTooLong, true) => format!(
            "{name} sent a message over the {} byte limit and was disconnected ({status})",
            limits.max_frame_bytes,
        ),
        (Gone::ReadError(e), false) => format!("{name}: reading stdout failed: {e} ({status})"),
        (Gone::ReadError(e), true) => format!("{name}: reading failed: {e} ({status})"),
        (Gone::Eof | Gone::HostDropped, false) => format!("{name} exited ({status})"),
        (Gone::Eof | Gone::HostDropped, true) => format!("{name} disconnected ({status})"),
    };
    ext.peer.conn.fail_all(&reason);
    ext.adapter.disconnected();
    ext.set_readiness(Readiness::Exited);
    if stopping {
        return;
    }
    ext.peer.log.line(&reason);
    tracing::warn!(extension = %name, %reason, "extension gone");
    if let Some(host) = host {
        let (had_commands, had_tools) = {
            let regs = ext.registrations();
            (!regs.commands.is_empty(), !regs.tools.is_empty())
        };
        host.emit(HostEvent::Exited {
            extension: name.to_owned(),
            reason: reason.clone(),
        });
        let gone = if ext.is_remote() {
            "its commands and tools are gone until zot reconnects"
        } else {
            "its commands and tools are gone"
        };
        host.emit(HostEvent::Warning {
            extension: name.to_owned(),
            message: format!("{reason}; {gone} (log: {})", ext.peer.log.path().display()),
        });
        if had_commands {
            host.emit(HostEvent::CommandsChanged);
        }
        if had_tools {
            host.emit(HostEvent::ToolsChanged);
        }
    }
}
