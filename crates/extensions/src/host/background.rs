//! Starting extensions in the background (`HostConfig::adapted_in_background`)
//! and ending those starts.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zot_protocol::ui::HostEvent;

use crate::manifest::Manifest;
use crate::scope::Scope;

use super::state::{Inner, STARTING_GRACE, Starting};

impl Inner {
    /// Loads one extension in a task of its own; when it is done, its
    /// tools and commands join and a failure is reported
    /// (`HostEvent::LoadFailed`).
    pub(super) fn start_in_background(
        self: &Arc<Self>,
        order: usize,
        scope: Scope,
        manifest: &Manifest,
        startup_timeout: Duration,
    ) {
        let cancel = CancellationToken::new();
        {
            let mut state = self.state();
            state.starting.push(Starting {
                order,
                name: manifest.name.clone(),
                deadline: Instant::now() + startup_timeout + STARTING_GRACE,
                cancel: cancel.clone(),
                task: None,
            });
            self.starting_count.send_replace(state.starting.len());
        }
        let inner = Arc::clone(self);
        let manifest = manifest.clone();
        let task = tokio::spawn(async move {
            let outcome = tokio::select! {
                () = cancel.cancelled() => return,
                (_, outcome) = inner.load_one(order, scope, &manifest) => outcome,
            };
            let failed = outcome.as_ref().err().map(ToString::to_string);
            inner.record_outcomes(vec![(order, outcome)]);
            {
                let mut state = inner.state();
                state.starting.retain(|s| s.order != order);
                inner.starting_count.send_replace(state.starting.len());
            }
            if let Some(error) = failed {
                inner.emit(HostEvent::LoadFailed {
                    extension: manifest.name.clone(),
                    error,
                });
            }
            inner.emit(HostEvent::ToolsChanged);
            inner.emit(HostEvent::CommandsChanged);
        });
        if let Some(entry) = self.state().starting.iter_mut().find(|s| s.order == order) {
            entry.task = Some(task);
        }
    }

    /// Ends every background start (a reload or shutdown is next).
    pub(super) async fn stop_starting(&self) {
        self.stop_starting_where(|_| true).await;
    }

    /// Ends the background starts `which` picks and waits for their tasks,
    /// so that none of them joins the live set afterwards. A start cut
    /// short kills what it spawned (dropping a process record kills it).
    pub(super) async fn stop_starting_where(&self, which: impl Fn(&Starting) -> bool) {
        let stopped: Vec<Starting> = {
            let mut state = self.state();
            let (stopped, kept) = std::mem::take(&mut state.starting)
                .into_iter()
                .partition(|s| which(s));
            state.starting = kept;
            self.starting_count.send_replace(state.starting.len());
            stopped
        };
        for entry in &stopped {
            entry.cancel.cancel();
        }
        for task in stopped.into_iter().filter_map(|s| s.task) {
            let _ = task.await;
        }
    }
}
