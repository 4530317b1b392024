//! One running extension: the peer its adapter talks over, the adapter,
//! the endpoint the host supervises, its registrations and readiness, and
//! how it is stopped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;
use tokio::time::Instant;

use std::collections::BTreeSet;

use zot_protocol::ui::CommandInfo;

use crate::adapter::Adapter;
use crate::limits::Limits;
use crate::manifest::OnFailure;
use crate::model::{HookPoint, Mode, ToolInfo};
use crate::transport::{Endpoint, Peer, describe};

/// What one extension has registered so far (registrations accumulate).
#[derive(Debug, Clone, Default)]
pub(crate) struct Registrations {
    pub(crate) commands: Vec<CommandInfo>,
    pub(crate) tools: Vec<ToolInfo>,
    /// The hook points it observes or intercepts.
    pub(crate) hooks: BTreeSet<(HookPoint, Mode)>,
    /// Commands and tools refused because it already had the most allowed.
    pub(crate) refused_commands: usize,
    pub(crate) refused_tools: usize,
}

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
    pub(crate) peer: Peer,
    /// Position in load order; lower wins name conflicts.
    pub(crate) order: usize,
    pub(crate) adapter: Box<dyn Adapter>,
    pub(crate) endpoint: Box<dyn Endpoint>,
    regs: Mutex<Registrations>,
    readiness: watch::Sender<Readiness>,
    alive: AtomicBool,
    /// Set when the host stops it on purpose, so its exit is not reported as a crash.
    stopping: AtomicBool,
    /// What its interceptors decide while it cannot answer.
    pub(crate) on_failure: OnFailure,
    /// For a remote extension, the manifest's `url` as written (no
    /// variables expanded, so no secret is shown).
    pub(crate) url: Option<String>,
    /// For a remote extension, where its manifest was found and what it
    /// said, so the host can connect it again when the connection is lost.
    pub(crate) origin: Option<(crate::scope::Scope, crate::manifest::Manifest)>,
}

impl Extension {
    pub(crate) fn new(
        peer: Peer,
        order: usize,
        adapter: Box<dyn Adapter>,
        endpoint: Box<dyn Endpoint>,
    ) -> Self {
        Self {
            peer,
            order,
            adapter,
            endpoint,
            regs: Mutex::default(),
            readiness: watch::channel(Readiness::Pending).0,
            alive: AtomicBool::new(true),
            stopping: AtomicBool::new(false),
            on_failure: OnFailure::default(),
            url: None,
            origin: None,
        }
    }

    /// Takes what the manifest says about failures and where it is served.
    pub(crate) fn with_manifest(mut self, manifest: &crate::manifest::Manifest) -> Self {
        self.on_failure = manifest.on_failure;
        self.url = manifest.network_url().map(str::to_owned);
        self
    }

    /// Whether it is reached over the network (and so reconnected when lost).
    pub(crate) fn is_remote(&self) -> bool {
        self.url.is_some()
    }

    pub(crate) fn name(&self) -> &str {
        &self.peer.name
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

    /// Whether it takes part at `point` in `mode` now.
    pub(crate) fn hooks(&self, point: HookPoint, mode: Mode) -> bool {
        self.is_alive() && self.registrations().hooks.contains(&(point, mode))
    }

    /// Whether it was stopped on purpose (its exit is not a crash).
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    pub(crate) fn mark_gone(&self) {
        self.alive.store(false, Ordering::Release);
    }

    /// Graceful stop: queued frames, then the protocol's shutdown, then the
    /// connection closed; wait until `deadline`, then escalate (a process
    /// gets SIGTERM, `term_grace`, SIGKILL, all to its group).
    pub(crate) async fn stop(&self, deadline: Instant, limits: &Limits) {
        self.stopping.store(true, Ordering::Release);
        self.adapter.shutdown(&self.peer);
        self.peer.conn.close_input();
        let status = self.endpoint.stop(deadline, limits.term_grace).await;
        self.mark_gone();
        self.peer.conn.fail_all("extension stopped");
        self.peer
            .log
            .line(format_args!("stopped ({})", describe(status.as_deref())));
    }
}
