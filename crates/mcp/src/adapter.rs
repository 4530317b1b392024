//! The MCP adapter: one MCP server as one more extension. The protocol is
//! the official SDK's (`rmcp`); this module maps it onto the neutral model:
//! tools as `mcp__<server>__<tool>`, prompts as slash commands, resources
//! behind two shared tools, and the server's own requests (roots,
//! elicitation, sampling, ping) answered for the user.
//!
//! A stdio server runs through zot's child-process transport (process
//! group, parent-death signal, stderr to its log, the host's stop
//! sequence); its frames reach `rmcp` through [`HostPipe`]. An HTTP server's
//! session is opened here with `rmcp`'s Streamable HTTP client; any other
//! `rmcp` transport plugs in through [`Mcp::open`].

// Roots and logging are deprecated only for MCP 2026-07-28 (SEP-2577);
// zot speaks 2025-11-25 and earlier, where both are current.
#![allow(deprecated)]

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientNotification, ClientRequest,
    GetPromptRequestParams, Notification, Request, ServerResult,
};
use rmcp::service::{
    PeerRequestOptions, RoleClient, RunningService, RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::IntoTransport;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use zot_protocol::ui::CommandOutcome;

use crate::config::{McpServer, McpTransport, Remote};
use zot_extensions::adapter::{
    Adapter, Attachment, CommandAnswer, HandshakeError, LaunchSpec, Link, ProcessSpec,
    ProgressSink, ToolAnswer,
};
use zot_extensions::context::HostContext;
use zot_extensions::model::{Ask, Hook, HookPoint, Mode, Registration, Semantics, Verdict};
use zot_extensions::transport::remote::{self, RemoteHandle};
use zot_extensions::transport::{FrameReader, Peer, ReadError, RequestError, Sender};

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::AuthClient;

use crate::client::Client;
use crate::content::{
    error_answer, list_resources, map_tool_result, prompt_text, read_resource, split_args,
};
use crate::directory::Directory;
use crate::names::{LIST_RESOURCES, READ_RESOURCE};
use crate::remote::RetryDelay;
use crate::shared::{DropSignal, Shared, lock, token_key};

/// Versions a server may answer `initialize` with. zot speaks 2025-11-25
/// and negotiates down to 2025-06-18 and 2025-03-26 for servers built on
/// older SDKs; 2024-11-05
/// is what servers behind the legacy HTTP+SSE transport speak.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The adapter and launch of one configured server.
pub(crate) fn launch(server: &McpServer, cx: &Arc<HostContext>) -> (Box<dyn Adapter>, LaunchSpec) {
    let shared = Arc::new(Shared {
        cx: Arc::clone(cx),
        server: server.clone(),
        ext: server.ext_name(),
        log: OnceLock::new(),
        attached: OnceLock::new(),
        peer: Mutex::new(None),
        tools: Mutex::new(HashMap::new()),
        prompts: Mutex::new(HashMap::new()),
        progress: Mutex::new(HashMap::new()),
        version: Mutex::new(None),
        resources: Mutex::new(Vec::new()),
        gone: AtomicBool::new(false),
        dropped: Mutex::new(None),
        stale: AtomicBool::new(false),
    });
    let (spec, remote) = match &server.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let spec = ProcessSpec {
                program: command.into(),
                args: args.clone(),
                cwd: cwd.clone().unwrap_or_else(|| cx.cwd()),
                env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            };
            (LaunchSpec::Process(spec), None)
        }
        McpTransport::Http(_) | McpTransport::Sse(_) => {
            let (session, handle) = remote::pair();
            (LaunchSpec::Remote(session), Some(handle))
        }
    };
    let cancel = remote
        .as_ref()
        .map_or_else(CancellationToken::new, |r| r.cancel.clone());
    let adapter = Mcp {
        shared,
        remote: remote.map(Arc::new),
        incoming: Mutex::new(None),
        cancel,
    };
    (Box::new(adapter), spec)
}

/// Whether starting the session failed because the server wants a login
/// (a 401 without one, or a stored login that can no longer be refreshed).
fn needs_login(error: &rmcp::service::ClientInitializeError) -> bool {
    let rmcp::service::ClientInitializeError::TransportError { error, .. } = error else {
        return false;
    };
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(err) = current {
        if err.is::<rmcp::transport::streamable_http_client::AuthRequiredError>()
            || matches!(
                err.downcast_ref::<rmcp::transport::auth::AuthError>(),
                Some(rmcp::transport::auth::AuthError::AuthorizationRequired)
            )
        {
            return true;
        }
        current = err.source();
    }
    false
}

/// One MCP server, as the host drives it.
pub(crate) struct Mcp {
    shared: Arc<Shared>,
    /// Set for HTTP servers: the host's view of the session.
    remote: Option<Arc<RemoteHandle>>,
    /// stdio: where frames read from the server go (to `rmcp`).
    incoming: Mutex<Option<mpsc::UnboundedSender<RxJsonRpcMessage<RoleClient>>>>,
    /// Ends the `rmcp` session.
    cancel: CancellationToken,
}

/// `rmcp`'s transport over zot's child-process connection: frames out go
/// through the connection's queue (so writes stay ordered and a stop closes
/// stdin), frames in are what the host reads from stdout.
pub struct HostPipe {
    out: Sender,
    incoming: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
}

impl rmcp::transport::Transport<RoleClient> for HostPipe {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sent = self.out.try_send(&item);
        async move {
            if sent {
                Ok(())
            } else {
                Err(std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the server's stdin is closed",
                ))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}

impl Mcp {
    /// Opens the MCP session over `transport` (any `rmcp` client
    /// transport), checks the version, and lists what the server offers.
    /// The seam for transports zot does not build itself.
    pub(crate) async fn open<T, E, A>(
        &self,
        transport: T,
        link: &dyn Link,
    ) -> Result<Vec<Registration>, HandshakeError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let client = Client {
            shared: Arc::clone(&self.shared),
        };
        let running = rmcp::service::serve_client_with_ct(client, transport, self.cancel.clone())
            .await
            .map_err(|e| match &self.shared.server.transport {
                McpTransport::Http(remote) | McpTransport::Sse(remote) if needs_login(&e) => {
                    HandshakeError::LoginNeeded(crate::oauth::login_needed(
                        &self.shared.server.name,
                        &remote.url,
                    ))
                }
                _ => HandshakeError::Session(format!("initialize failed: {e}")),
            })?;
        let version = running
            .peer()
            .peer_info()
            .and_then(|info| serde_json::to_value(&info.protocol_version).ok())
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        if !SUPPORTED_VERSIONS.contains(&version.as_str()) {
            self.cancel.cancel();
            return Err(HandshakeError::Session(format!(
                "the server speaks MCP {version:?}; zot speaks {}",
                SUPPORTED_VERSIONS.join(", ")
            )));
        }
        self.shared.log(format_args!("initialized: MCP {version}"));
        *lock(&self.shared.version) = Some(version);
        let peer = running.peer().clone();
        *lock(&self.shared.peer) = Some(peer.clone());
        self.watch(running);
        let warn = |m: String| link.warn(m);
        let listing = self.shared.list(&peer, &warn).await;
        self.shared.publish_resources(&peer, listing.resources);
        let mut out: Vec<Registration> = Vec::new();
        out.extend(listing.tools.into_iter().map(Registration::Tool));
        out.extend(listing.commands.into_iter().map(Registration::Command));
        out.push(Registration::Ready);
        Ok(out)
    }

    /// Waits for the session to end in the background, then tells the host
    /// (for HTTP; a stdio server's end is its stdout closing).
    fn watch(&self, running: RunningService<RoleClient, Client>) {
        let shared = Arc::clone(&self.shared);
        let remote = self.remote.clone();
        tokio::spawn(async move {
            let quit = running.waiting().await;
            shared.gone.store(true, Ordering::Release);
            shared
                .cx
                .slot::<Directory>()
                .lock()
                .remove(&shared.server.name);
            lock(&shared.peer).take();
            let dropped = lock(&shared.dropped).clone();
            let why = match (dropped, quit) {
                (Some(why), _) => format!("the server dropped: {why}"),
                (None, Ok(reason)) => format!("session ended ({reason:?})"),
                (None, Err(e)) => format!("session task failed: {e}"),
            };
            shared.log(&why);
            if let Some(remote) = remote {
                remote.ended(&why);
            }
        });
    }

    async fn handshake_stdio(
        &self,
        peer: &Peer,
        link: &dyn Link,
        reader: &mut FrameReader,
    ) -> Result<Vec<Registration>, HandshakeError> {
        let (tx, rx) = mpsc::unbounded_channel();
        *lock(&self.incoming) = Some(tx);
        let pipe = HostPipe {
            out: peer.conn.sender(),
            incoming: rx,
        };
        // Frames arrive on the reader the host hands over only after the
        // handshake, so until then they are read here.
        let open = self.open(pipe, link);
        tokio::pin!(open);
        loop {
            tokio::select! {
                result = &mut open => return result,
                frame = reader.next() => match frame {
                    Some(Ok(line)) => self.feed(&line),
                    Some(Err(ReadError::TooLong)) => return Err(HandshakeError::FrameTooLong),
                    Some(Err(ReadError::Io(e))) => return Err(HandshakeError::Io(e.to_string())),
                    None => {
                        return Err(HandshakeError::Session(
                            "exited before answering initialize".to_owned(),
                        ));
                    }
                },
            }
        }
    }

    async fn handshake_remote(
        &self,
        remote: &Remote,
        streamable: bool,
        link: &dyn Link,
    ) -> Result<Vec<Registration>, HandshakeError> {
        let server = &self.shared.server;
        let auth =
            crate::oauth::authorized(&self.shared.cx.config.zot_home, &server.name, &remote.url)
                .await
                .map_err(|e| HandshakeError::Session(e.to_string()))?;
        if !streamable {
            let transport = crate::remote::legacy_sse(server, remote, auth).await?;
            return self.open(transport, link).await;
        }
        let (config, client) = crate::remote::streamable_http(server, remote, self.on_drop())?;
        match auth {
            Some(manager) => {
                let client = RetryDelay::new(AuthClient::new(client, manager));
                let transport = StreamableHttpClientTransport::with_client(client, config);
                self.open(transport, link).await
            }
            None => {
                let client = RetryDelay::new(client);
                let transport = StreamableHttpClientTransport::with_client(client, config);
                self.open(transport, link).await
            }
        }
    }

    /// Hands one frame read from a stdio server to `rmcp`.
    fn feed(&self, line: &[u8]) {
        match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
            Ok(message) => {
                if let Some(tx) = lock(&self.incoming).as_ref() {
                    let _ = tx.send(message);
                }
            }
            Err(e) => self.shared.log(format_args!(
                "ignored a frame that is not MCP JSON-RPC ({e}): {}",
                zot_extensions::transport::preview(line)
            )),
        }
    }

    /// What ends this session when the server is found dropped.
    pub(crate) fn on_drop(&self) -> DropSignal {
        DropSignal {
            shared: Arc::downgrade(&self.shared),
            cancel: self.cancel.clone(),
        }
    }

    /// A request that failed in the transport: for a remote server, the
    /// session is gone (the server stopped or lost it), so it is ended and
    /// reconnected; a stdio server's exit is seen by the host already.
    fn failed(&self, error: rmcp::ServiceError) -> RequestError {
        if self.remote.is_some()
            && matches!(
                error,
                rmcp::ServiceError::TransportSend(_) | rmcp::ServiceError::TransportClosed
            )
        {
            self.on_drop()
                .fire(&format!("a request could not reach it: {error}"));
        }
        RequestError::Disconnected(error.to_string())
    }

    async fn call(
        &self,
        name: &str,
        args: Value,
        progress: Option<ProgressSink>,
    ) -> Result<ToolAnswer, RequestError> {
        match name {
            LIST_RESOURCES => return Ok(list_resources(&self.shared.cx, &args).await),
            READ_RESOURCE => return Ok(read_resource(&self.shared.cx, &args).await),
            _ => {}
        }
        let peer = self.shared.peer()?;
        let Some(own) = lock(&self.shared.tools).get(name).cloned() else {
            return Ok(error_answer(format!(
                "{} has no tool {name} (any more)",
                self.shared.ext
            )));
        };
        let arguments = match args {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let params = CallToolRequestParams::new(own.clone()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.failed(e))?;
        let token = token_key(&handle.progress_token);
        if let Some(progress) = progress {
            lock(&self.shared.progress).insert(token.clone(), progress);
        }
        let _route = Unroute {
            shared: &self.shared,
            token,
        };
        // Whoever drops this call (an abort) tells the server.
        let mut cancel = CancelOnDrop {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
            reason: "the user aborted the call",
        };
        let timeout = self.shared.server.tool_timeout;
        let outcome = tokio::time::timeout(timeout, handle.await_response()).await;
        let result = match outcome {
            Err(_) => {
                cancel.reason = "tool_timeout_sec elapsed";
                return Ok(error_answer(format!(
                    "{} tool {own} timed out after {} s (tool_timeout_sec)",
                    self.shared.ext,
                    timeout.as_secs_f64()
                )));
            }
            Ok(result) => {
                cancel.id = None;
                result
            }
        };
        match result {
            Ok(ServerResult::CallToolResult(result)) => Ok(map_tool_result(
                &serde_json::to_value(&result).unwrap_or_default(),
            )),
            Ok(other) => Err(RequestError::Malformed(format!(
                "tools/call answered with {}",
                serde_json::to_string(&other).unwrap_or_default()
            ))),
            Err(rmcp::ServiceError::McpError(e)) => Ok(error_answer(format!(
                "{} tool {own} failed: {}",
                self.shared.ext, e.message
            ))),
            Err(e) => Err(self.failed(e)),
        }
    }

    async fn prompt(&self, name: &str, args: &str) -> Result<CommandAnswer, RequestError> {
        let peer = self.shared.peer()?;
        let Some(def) = lock(&self.shared.prompts).get(name).cloned() else {
            return Ok((
                CommandOutcome::Noop,
                Some(format!(
                    "{} has no prompt /{name} (any more)",
                    self.shared.ext
                )),
            ));
        };
        let words = split_args(args);
        let mut arguments = Map::new();
        let mut missing = Vec::new();
        let count = def.arguments.len();
        for (i, (arg, required)) in def.arguments.iter().enumerate() {
            // The last argument takes the rest of the line.
            let value = if i + 1 == count && words.len() > count {
                Some(words[i..].join(" "))
            } else {
                words.get(i).cloned()
            };
            match value {
                Some(v) => {
                    arguments.insert(arg.clone(), Value::String(v));
                }
                None if *required => missing.push(arg.clone()),
                None => {}
            }
        }
        if !missing.is_empty() {
            return Ok((
                CommandOutcome::Noop,
                Some(format!(
                    "/{name} needs {}: /{name} {}",
                    missing.join(", "),
                    def.arguments
                        .iter()
                        .map(|(n, r)| if *r {
                            format!("<{n}>")
                        } else {
                            format!("[{n}]")
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                )),
            ));
        }
        let mut params = GetPromptRequestParams::new(def.name.clone());
        if !arguments.is_empty() {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::GetPromptRequest(Request::new(params));
        let timeout = self.shared.server.tool_timeout;
        let result = match tokio::time::timeout(timeout, peer.send_request(request)).await {
            Err(_) => return Err(RequestError::Timeout(timeout)),
            Ok(Ok(result)) => result,
            Ok(Err(rmcp::ServiceError::McpError(e))) => {
                return Ok((CommandOutcome::Noop, Some(e.message.to_string())));
            }
            Ok(Err(e)) => return Err(self.failed(e)),
        };
        let value = serde_json::to_value(&result).unwrap_or_default();
        let text = prompt_text(&value);
        if text.trim().is_empty() {
            return Ok((
                CommandOutcome::Noop,
                Some(format!("/{name} gave no messages")),
            ));
        }
        Ok((CommandOutcome::Prompt(text), None))
    }
}

/// Forgets a call's progress route when the call ends, however it ends.
struct Unroute<'a> {
    shared: &'a Shared,
    token: String,
}

impl Drop for Unroute<'_> {
    fn drop(&mut self) {
        lock(&self.shared.progress).remove(&self.token);
    }
}

/// Sends `notifications/cancelled` for a request still armed when dropped.
struct CancelOnDrop {
    peer: rmcp::Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
    reason: &'static str,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        let reason = self.reason.to_owned();
        let notification = ClientNotification::CancelledNotification(Notification::new(
            CancelledNotificationParam::new(Some(id), Some(reason)),
        ));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.send_notification(notification).await;
            });
        }
    }
}

impl Adapter for Mcp {
    fn semantics(&self) -> Semantics {
        Semantics {
            joined_blocks: false,
            hooks_in_plan: false,
            restart_on_session_switch: false,
            warn_builtin_tool_clash: true,
            warn_tool_clash: true,
        }
    }

    fn handshake<'a>(
        &'a self,
        peer: &'a Peer,
        link: &'a dyn Link,
        reader: &'a mut FrameReader,
    ) -> BoxFuture<'a, Result<Vec<Registration>, HandshakeError>> {
        async move {
            let _ = self.shared.log.set(Arc::clone(&peer.log));
            let timeout = self.shared.server.startup_timeout;
            let opened = match &self.shared.server.transport {
                McpTransport::Stdio { .. } => {
                    tokio::time::timeout(timeout, self.handshake_stdio(peer, link, reader)).await
                }
                McpTransport::Http(remote) => {
                    tokio::time::timeout(timeout, self.handshake_remote(remote, true, link)).await
                }
                McpTransport::Sse(remote) => {
                    tokio::time::timeout(timeout, self.handshake_remote(remote, false, link)).await
                }
            };
            let result = opened.unwrap_or(Err(HandshakeError::NoInitialize(timeout)));
            if result.is_err() {
                self.cancel.cancel();
            }
            result
        }
        .boxed()
    }

    fn on_frame(&self, _peer: &Peer, _link: &dyn Link, line: &[u8]) {
        self.feed(line);
    }

    fn command<'a>(
        &'a self,
        _peer: &'a Peer,
        _link: &'a dyn Link,
        name: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<CommandAnswer, RequestError>> {
        self.prompt(name, args).boxed()
    }

    fn call_tool<'a>(
        &'a self,
        _peer: &'a Peer,
        name: &'a str,
        args: Value,
        progress: Option<ProgressSink>,
    ) -> BoxFuture<'a, Result<ToolAnswer, RequestError>> {
        self.call(name, args, progress).boxed()
    }

    /// MCP servers do not observe zot's hook points.
    fn observe<'a>(
        &'a self,
        _peer: &'a Peer,
        _link: &'a dyn Link,
        _hook: &'a Hook,
    ) -> BoxFuture<'a, ()> {
        async {}.boxed()
    }

    /// MCP servers do not intercept.
    fn intercept<'a>(
        &'a self,
        _peer: &'a Peer,
        _link: &'a dyn Link,
        _ask: &'a Ask,
    ) -> BoxFuture<'a, Option<Verdict>> {
        async { None }.boxed()
    }

    /// MCP has no shutdown request. stdio: the host next closes stdin,
    /// waits, then SIGTERM and SIGKILL (the MCP spec's order); the session
    /// ends when stdout closes. HTTP: the session is closed (`DELETE`).
    fn shutdown(&self, _peer: &Peer) {
        self.shared.gone.store(true, Ordering::Release);
        self.shared
            .cx
            .slot::<Directory>()
            .lock()
            .remove(&self.shared.server.name);
        if self.remote.is_some() {
            self.cancel.cancel();
        }
    }

    fn attach(&self, host: Box<dyn Attachment>) {
        let _ = self.shared.attached.set(host);
        self.shared.refresh_if_stale();
    }

    fn disconnected(&self) {
        self.shared.gone.store(true, Ordering::Release);
        self.shared
            .cx
            .slot::<Directory>()
            .lock()
            .remove(&self.shared.server.name);
        // Ends the rmcp session: its reads see the end of the stream.
        lock(&self.incoming).take();
        self.cancel.cancel();
    }

    fn listed_as(&self, _point: HookPoint, mode: Mode) -> (Mode, &'static str) {
        (mode, "")
    }

    fn protocol_version(&self) -> Option<String> {
        lock(&self.shared.version).clone()
    }

    fn resources(&self) -> Vec<String> {
        lock(&self.shared.resources).clone()
    }
}
