//! Loading one extension: its data directory, log, launch (spawn or
//! connect), handshake, and joining the live set; a batch's outcomes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::join_all;
use tokio::time::Instant;
use zot_protocol::ui::HostEvent;

use crate::adapter::select::for_manifest;
use crate::adapter::{Adapter, HandshakeError, LaunchSpec, Link, ProcessSpec};
use crate::discovery::{Found, FoundStatus};
use crate::ext_log::ExtLog;
use crate::extension::{Extension, Readiness};
use crate::limits::Limits;
use crate::manifest::{Launch, Manifest, Remote};
use crate::model::{Effect, Registration};
use crate::permissions::{self, Permissions};
use crate::remote::{self, Wire};
use crate::scope::Scope;
use crate::transport::{Connection, Endpoint, FrameReader, Peer, describe, http, stdio, ws};

use super::report::{LoadError, LoadErrorKind, LoadOutcome, ReloadStats, retried};
use super::state::{Attached, Inner};
use super::supervise::drive;

/// The link during a handshake, before the extension joins the live set:
/// registrations wait for the host to apply them, the rest goes out at once.
struct Handshaking<'a> {
    inner: &'a Inner,
    peer: &'a Peer,
    registrations: Mutex<Vec<Registration>>,
}

impl Link for Handshaking<'_> {
    fn register(&self, registration: Registration) {
        self.registrations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(registration);
    }

    fn effect(&self, effect: Effect) {
        self.inner.effect(&self.peer.name, effect);
    }

    fn warn(&self, message: String) {
        self.peer.log.line(&message);
        self.inner.emit(HostEvent::Warning {
            extension: self.peer.name.clone(),
            message,
        });
    }
}

impl Inner {
    pub(super) async fn load_found(self: &Arc<Self>, found: Vec<Found>) -> ReloadStats {
        let off = {
            let mut state = self.state();
            state.found = found.iter().map(|f| (f.clone(), None)).collect();
            state.off.clone()
        };
        let background = self.cx.config.adapted_in_background;
        let mut loads = Vec::new();
        for (order, f) in found.iter().enumerate() {
            let FoundStatus::Load(manifest) = &f.status else {
                continue;
            };
            if off.contains(&manifest.name) {
                continue;
            }
            match &manifest.launch {
                Launch::Adapted(adapted) if background => {
                    self.start_in_background(order, f.scope, manifest, adapted.startup_timeout);
                }
                _ => loads.push(self.load_one(order, f.scope, manifest)),
            }
        }
        let outcomes = join_all(loads).await;
        self.record_outcomes(outcomes)
    }

    /// Stores load outcomes in their discovery slots and counts them.
    pub(super) fn record_outcomes(&self, outcomes: Vec<(usize, LoadOutcome)>) -> ReloadStats {
        let mut stats = ReloadStats::default();
        let mut state = self.state();
        for (order, outcome) in outcomes {
            match &outcome {
                Ok(ext) => {
                    stats.loaded += 1;
                    if matches!(ext.readiness(), Readiness::Ready | Readiness::AutoReady) {
                        stats.ready += 1;
                    }
                }
                Err(e) => stats.errors.push(e.clone()),
            }
            if let Some(slot) = state.found.get_mut(order) {
                // A remote extension may already have been reconnected in
                // the background while others were still loading.
                if !(outcome.is_err() && matches!(slot.1, Some(Ok(_)))) {
                    slot.1 = Some(outcome);
                }
            }
        }
        stats
    }

    /// Spawns, handshakes and waits out the registration window of one extension.
    pub(super) async fn load_one(
        self: &Arc<Self>,
        order: usize,
        scope: Scope,
        manifest: &Manifest,
    ) -> (usize, LoadOutcome) {
        (order, self.try_load(order, scope, manifest).await)
    }

    /// Loads one extension; a remote one that could not be reached (or
    /// failed its handshake) is tried again in the background.
    pub(super) async fn try_load(
        self: &Arc<Self>,
        order: usize,
        scope: Scope,
        manifest: &Manifest,
    ) -> Result<Arc<Extension>, LoadError> {
        let outcome = self.load_attempt(order, scope, manifest).await;
        if let Err(e) = &outcome
            && manifest.network_url().is_some()
            && retried(&e.kind)
        {
            self.reconnect_later(order, scope, manifest.clone());
        }
        outcome
    }

    /// Spawns (or connects), handshakes and waits out the registration
    /// window; the extension then joins the live set in its load-order place.
    pub(super) async fn load_attempt(
        self: &Arc<Self>,
        order: usize,
        scope: Scope,
        manifest: &Manifest,
    ) -> Result<Arc<Extension>, LoadError> {
        let attempt = Attempt::new(&self.cx.config.log_path(&manifest.name), manifest, scope);
        let policy = zot_sandbox::Policy::load(&self.cx.config.zot_home)
            .map_err(|e| attempt.error(LoadErrorKind::Sandbox(e.to_string()), None))?;
        let permissions = Permissions::of(&self.cx.config, &policy, manifest, scope);
        let data_dir = self
            .data_dir(&attempt, &permissions)
            .map_err(|kind| attempt.error(kind, None))?;
        let (adapter, launch) =
            for_manifest(manifest, &attempt.dir, &data_dir, &self.cx).map_err(|e| {
                let kind = LoadErrorKind::Spawn {
                    program: String::new(),
                    error: e,
                };
                attempt.error(kind, None)
            })?;
        let log = self
            .open_log(&attempt)
            .map_err(|kind| attempt.error(kind, None))?;
        let (process, conn, mut reader) = match launch {
            LaunchSpec::Process(launch) => {
                if scope == Scope::Project {
                    self.gate
                        .check()
                        .await
                        .map_err(|why| attempt.logged(&log, LoadErrorKind::Changed(why)))?;
                }
                self.spawn(&attempt, &log, &policy, &permissions, &launch)
                    .map_err(|kind| attempt.logged(&log, kind))?
            }
            // The adapter opens the session itself during its handshake.
            LaunchSpec::Remote(session) => (
                Box::new(session.endpoint) as Box<dyn Endpoint>,
                Connection::new().0,
                session.reader,
            ),
            LaunchSpec::Connect(settings) => self
                .connect(&attempt, &log, &settings)
                .await
                .map_err(|kind| attempt.logged(&log, kind))?,
        };
        let peer = Peer {
            name: manifest.name.clone(),
            log: Arc::clone(&log),
            conn,
        };
        let registrations = match self.handshake(&*adapter, &peer, &mut reader).await {
            Ok(registrations) => registrations,
            Err(e) => {
                adapter.disconnected();
                return Err(attempt
                    .failed(e, &*process, &log, &self.cx.config.limits)
                    .await);
            }
        };
        let mut ext = Extension::new(peer, order, adapter, process).with_manifest(manifest);
        if manifest.network_url().is_some() {
            ext.origin = Some((scope, manifest.clone()));
        }
        let ext = self.join(Arc::new(ext), registrations, reader);
        ext.wait_ready().await;
        Ok(ext)
    }

    /// Where the extension keeps its state, created. A project extension
    /// keeps it outside the project, so that what it writes neither
    /// changes the trust fingerprint nor lands in the repository; a scoped
    /// one may not write its own directory, and a remote one has no
    /// directory of its own on this machine, so their state goes under
    /// $ZOT_HOME/data too; the others keep it in their own directory.
    fn data_dir(
        &self,
        attempt: &Attempt<'_>,
        permissions: &Permissions,
    ) -> Result<PathBuf, LoadErrorKind> {
        let manifest = attempt.manifest;
        if permissions.unrestricted()
            && attempt.scope != Scope::Project
            && manifest.remote().is_none()
        {
            return Ok(attempt.dir.clone());
        }
        let data_dir = permissions::scoped_data_dir(&self.cx.config, &manifest.name, attempt.scope);
        private_dir(&data_dir)
            .map_err(|e| LoadErrorKind::DataDir(format!("{}: {e}", data_dir.display())))?;
        Ok(data_dir)
    }

    /// Opens the extension's log and writes its manifest's warnings to it
    /// (and, once per run, to the user).
    fn open_log(&self, attempt: &Attempt<'_>) -> Result<Arc<ExtLog>, LoadErrorKind> {
        let manifest = attempt.manifest;
        let log = ExtLog::open(
            &attempt.log_path,
            &manifest.name,
            manifest.version.as_deref(),
            self.cx.config.limits.max_log_bytes,
        )
        .map(Arc::new)
        .map_err(|e| LoadErrorKind::Log(e.to_string()))?;
        for warning in &manifest.warnings {
            log.line(warning);
            self.warn_once(&manifest.name, warning.clone());
        }
        Ok(log)
    }

    /// Starts the extension's process under its permission scope.
    fn spawn(
        &self,
        attempt: &Attempt<'_>,
        log: &Arc<ExtLog>,
        policy: &zot_sandbox::Policy,
        permissions: &Permissions,
        launch: &ProcessSpec,
    ) -> Result<Launched, LoadErrorKind> {
        let name = &attempt.manifest.name;
        let mut confinement = permissions::confine(
            &self.cx.config,
            policy.enforce,
            &permissions.effective,
            name,
            attempt.scope,
            &launch.program,
            &attempt.dir,
        )
        .map_err(LoadErrorKind::Sandbox)?;
        if let Some(sandbox) = &confinement.sandbox
            && !sandbox.unenforced().is_empty()
        {
            let message = format!(
                "runs with its permission scope partly enforced (best-effort); not enforced: {}",
                sandbox.unenforced().join(", ")
            );
            log.line(&message);
            self.warn_once(name, message);
        }
        // The launch's own variables (a configured server's `env`) first,
        // so the sandbox's (a private TMPDIR) win a clash.
        let sandbox_env = std::mem::replace(&mut confinement.env, launch.env.clone());
        confinement.env.extend(sandbox_env);
        let spawned = stdio::spawn(
            name,
            &launch.program,
            &launch.args,
            &launch.cwd,
            log,
            self.cx.config.limits.max_frame_bytes,
            confinement,
        )
        .map_err(|e| LoadErrorKind::Spawn {
            program: launch.program.display().to_string(),
            error: spawn_error(&launch.program, &e),
        })?;
        Ok((Box::new(spawned.process), spawned.conn, spawned.reader))
    }

    /// Connects to a zot or nimlet extension served over the network.
    async fn connect(
        &self,
        attempt: &Attempt<'_>,
        log: &Arc<ExtLog>,
        settings: &Remote,
    ) -> Result<Launched, LoadErrorKind> {
        let name = &attempt.manifest.name;
        let limits = &self.cx.config.limits;
        let target = remote::resolve(settings).map_err(LoadErrorKind::Remote)?;
        let connected = match target.wire {
            Wire::WebSocket => ws::connect(name, &target, log, limits).await,
            Wire::Http => http::connect(name, &target, log, limits.max_frame_bytes).await,
        }
        .map_err(|error| LoadErrorKind::Connect {
            url: settings.url.clone(),
            error,
        })?;
        log.line(format_args!("connected to {}", settings.url));
        Ok((Box::new(connected.link), connected.conn, connected.reader))
    }

    /// The adapter's handshake; registrations made during it (through the
    /// link) come first, then those it returns.
    async fn handshake(
        &self,
        adapter: &dyn Adapter,
        peer: &Peer,
        reader: &mut FrameReader,
    ) -> Result<Vec<Registration>, HandshakeError> {
        let early = Handshaking {
            inner: self,
            peer,
            registrations: Mutex::new(Vec::new()),
        };
        let more = adapter.handshake(peer, &early, reader).await?;
        let mut registrations = early
            .registrations
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        registrations.extend(more);
        Ok(registrations)
    }

    /// The extension joins the live set in its load-order place, with its
    /// registrations applied; its frames are read from now on.
    fn join(
        self: &Arc<Self>,
        ext: Arc<Extension>,
        registrations: Vec<Registration>,
        reader: FrameReader,
    ) -> Arc<Extension> {
        let order = ext.order;
        {
            let mut state = self.state();
            // A reconnected extension takes the place of its lost record.
            state.extensions.retain(|e| e.order != order);
            let at = state.extensions.partition_point(|e| e.order < order);
            state.extensions.insert(at, Arc::clone(&ext));
        }
        for registration in registrations {
            self.apply(&ext, registration);
        }
        ext.adapter.attach(Box::new(Attached {
            inner: Arc::downgrade(self),
            ext: Arc::downgrade(&ext),
        }));
        tokio::spawn(drive(
            Arc::clone(&ext),
            Arc::downgrade(self),
            reader,
            self.cx.config.limits,
        ));
        ext
    }
}

/// What a launch gives the host: the endpoint it supervises and stops, the
/// connection frames go out on, and the reader frames come in from.
type Launched = (Box<dyn Endpoint>, Connection, FrameReader);

/// One load attempt of one extension: what its errors name.
struct Attempt<'a> {
    manifest: &'a Manifest,
    scope: Scope,
    /// The extension's directory, absolute.
    dir: PathBuf,
    log_path: PathBuf,
}

impl<'a> Attempt<'a> {
    fn new(log_path: &std::path::Path, manifest: &'a Manifest, scope: Scope) -> Self {
        Self {
            manifest,
            scope,
            dir: std::path::absolute(&manifest.dir).unwrap_or_else(|_| manifest.dir.clone()),
            log_path: log_path.to_owned(),
        }
    }

    fn error(&self, kind: LoadErrorKind, status: Option<String>) -> LoadError {
        LoadError {
            extension: self.manifest.name.clone(),
            dir: self.dir.clone(),
            kind,
            status,
            log: self.log_path.clone(),
        }
    }

    /// [`error`](Self::error), written to the extension's log first.
    fn logged(&self, log: &ExtLog, kind: LoadErrorKind) -> LoadError {
        log.line(&kind);
        self.error(kind, None)
    }

    /// A failed handshake: the process is reaped (given a moment when it
    /// exited by itself) or killed, and the failure logged.
    async fn failed(
        &self,
        e: HandshakeError,
        process: &dyn Endpoint,
        log: &ExtLog,
        limits: &Limits,
    ) -> LoadError {
        let status = match e {
            HandshakeError::ExitedBeforeHello => {
                match process
                    .wait_until(Instant::now() + limits.exit_reap_grace)
                    .await
                {
                    Some(status) => Some(status),
                    None => process.kill().await,
                }
            }
            _ => process.kill().await,
        };
        let err = self.error(e.into(), Some(describe(status.as_deref())));
        tracing::warn!(extension = %self.manifest.name, error = %err, "extension failed to load");
        log.line(format_args!("failed to load: {}", err.kind));
        let what = if self.manifest.network_url().is_some() {
            "connection"
        } else {
            "process"
        };
        log.line(format_args!("{what}: {}", describe(status.as_deref())));
        err
    }
}

/// Creates `dir` (and missing parents) readable by the user alone.
pub(super) fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Why `program` did not start, as the user can act on it: the kernel's "No
/// such file" is also its answer for a script whose `#!` interpreter is
/// missing, and for a bare name that is not on `PATH`.
fn spawn_error(program: &Path, error: &std::io::Error) -> String {
    if error.kind() != std::io::ErrorKind::NotFound {
        return error.to_string();
    }
    if program.components().count() == 1 {
        return "not found on PATH".to_owned();
    }
    let mut first = [0; 256];
    let read =
        std::fs::File::open(program).and_then(|mut f| std::io::Read::read(&mut f, &mut first));
    match read {
        Ok(n) if first[..n].starts_with(b"#!") => {
            let line = first[2..n]
                .split(|b| *b == b'\n')
                .next()
                .unwrap_or_default();
            let interpreter = String::from_utf8_lossy(line);
            let interpreter = interpreter.split_whitespace().next().unwrap_or_default();
            format!("its interpreter {interpreter} (the script's #! line) was not found")
        }
        _ => error.to_string(),
    }
}
