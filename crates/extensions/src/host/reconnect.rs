//! Reconnecting a lost or unreachable network extension, with backoff.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zot_protocol::ui::HostEvent;
use zot_protocol::zot::NotifyLevel;

use crate::manifest::Manifest;
use crate::remote::{self};
use crate::scope::Scope;

use super::report::retried;
use super::state::{Inner, Reconnect};

impl Inner {
    /// Tries a remote extension again and again (backing off) until it is
    /// connected, the host reloads or shuts down, or it fails for good.
    pub(super) fn reconnect_later(
        self: &Arc<Self>,
        order: usize,
        scope: Scope,
        manifest: Manifest,
    ) {
        let entry = Arc::new(Reconnect {
            cancel: CancellationToken::new(),
            next: Mutex::new((1, Instant::now())),
        });
        if let Some(old) = self.state().reconnecting.insert(order, Arc::clone(&entry)) {
            old.cancel.cancel();
        }
        let host = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut attempt = 1;
            loop {
                let delay = remote::backoff(attempt);
                *entry.next.lock().unwrap_or_else(PoisonError::into_inner) =
                    (attempt, Instant::now() + delay);
                tokio::select! {
                    () = entry.cancel.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
                let Some(inner) = host.upgrade() else { return };
                let outcome = tokio::select! {
                    () = entry.cancel.cancelled() => return,
                    outcome = inner.load_attempt(order, scope, &manifest) => outcome,
                };
                let done = match &outcome {
                    Ok(_) => true,
                    Err(e) => !retried(&e.kind),
                };
                if !done {
                    attempt += 1;
                    continue;
                }
                let mut state = inner.state();
                if entry.cancel.is_cancelled() {
                    return;
                }
                if state
                    .reconnecting
                    .get(&order)
                    .is_some_and(|e| Arc::ptr_eq(e, &entry))
                {
                    state.reconnecting.remove(&order);
                }
                let reconnected = outcome.is_ok();
                if let Some(slot) = state.found.get_mut(order) {
                    slot.1 = Some(outcome);
                }
                drop(state);
                if reconnected {
                    tracing::info!(extension = %manifest.name, attempt, "extension reconnected");
                    // The loss was one warning; its end is one note, so the
                    // user knows the commands and tools are back.
                    if let Some(url) = manifest.network_url() {
                        inner.emit(HostEvent::Notify {
                            extension: manifest.name.clone(),
                            level: NotifyLevel::Info,
                            message: format!("reconnected to {url}"),
                        });
                    }
                    inner.emit(HostEvent::ToolsChanged);
                    inner.emit(HostEvent::CommandsChanged);
                }
                return;
            }
        });
    }

    /// Ends the reconnect loops of the load orders `which` picks.
    pub(super) fn stop_reconnecting(&self, which: impl Fn(usize) -> bool) {
        self.state().reconnecting.retain(|order, entry| {
            let stop = which(*order);
            if stop {
                entry.cancel.cancel();
            }
            !stop
        });
    }
}
