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

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientCapabilities, ClientNotification,
    ClientRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData,
    GetPromptRequestParams, Implementation, InitializeRequestParams, ListRootsResult,
    LoggingMessageNotificationParam, Notification, ProgressNotificationParam, ProtocolVersion,
    ReadResourceRequestParams, Request, Root, ServerResult,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RoleClient, RunningService,
    RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::IntoTransport;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use zot_protocol::ui::{
    CommandInfo, CommandOrigin, CommandOutcome, FieldKind, Form, FormAnswer, FormField, FormReply,
    QuestionReply,
};
use zot_protocol::zot::ContentBlock;

use super::config::{McpServer, McpTransport, Remote};
use crate::adapter::{
    Adapter, CommandAnswer, HandshakeError, LaunchSpec, Link, ProcessSpec, ProgressSink, ToolAnswer,
};
use crate::context::HostContext;
use crate::ext_log::ExtLog;
use crate::host::Attached;
use crate::model::{
    Ask, Effect, Hook, HookPoint, Mode, Registration, Semantics, ToolInfo, Verdict,
};
use crate::sampling::SampleRequest;
use crate::transport::remote::{self, RemoteHandle};
use crate::transport::{FrameReader, Peer, ReadError, RequestError, Sender};

/// The protocol version zot asks for (issue 15).
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// Most pages of `tools/list` read from one server: one that keeps
/// answering with a next cursor would otherwise keep zot listing forever
/// (issue 26; at the 100-odd tools a page usually holds, far more than any
/// model can be offered).
const MAX_LIST_PAGES: usize = 100;

/// Versions a server may answer `initialize` with. zot speaks 2025-11-25
/// and negotiates down to 2025-06-18 and 2025-03-26 (issue 15); 2024-11-05
/// is what servers behind the legacy HTTP+SSE transport speak.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The shared resource tools, offered while any server has resources.
pub const LIST_RESOURCES: &str = "mcp_list_resources";
pub const READ_RESOURCE: &str = "mcp_read_resource";

/// The longest tool name providers accept (the `mcp__` names must fit).
const MAX_NAME: usize = crate::adapter::MAX_TOOL_NAME;
/// How much of an over-long name is kept before `_` and the hash (issue 15:
/// 55 + 1 + 8 = 64).
const KEPT_PREFIX: usize = 55;
/// Hex digits of the SHA-256 that make a shortened name unique (issue 15).
const HASH_DIGITS: usize = 8;

/// Whether `name` is one of the resource tools every MCP server with
/// resources registers (only the first counts; the others are no clash).
pub(crate) fn is_shared_tool(name: &str) -> bool {
    name == LIST_RESOURCES || name == READ_RESOURCE
}

/// `mcp__<server>__<item>` made valid for every provider: characters
/// outside `[A-Za-z0-9_-]` become `_`; a name over 64 characters keeps its
/// first 55, then `_` and 8 hex digits of the SHA-256 of the full name.
pub fn qualified_name(server: &str, item: &str) -> String {
    use sha2::{Digest, Sha256};
    let full = format!("mcp__{server}__{item}");
    let clean: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_NAME {
        return clean;
    }
    let digest = Sha256::digest(full.as_bytes());
    let hash: String = digest
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .chars()
        .take(HASH_DIGITS)
        .collect();
    // `clean` is ASCII, so any byte index is a character boundary.
    format!("{}_{hash}", &clean[..KEPT_PREFIX])
}

/// The servers with resources, for the shared resource tools.
#[derive(Default)]
pub(crate) struct Directory(Mutex<BTreeMap<String, rmcp::Peer<RoleClient>>>);

impl Directory {
    pub(crate) fn lock(&self) -> MutexGuard<'_, BTreeMap<String, rmcp::Peer<RoleClient>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Ends a remote server's session once it is found dropped (its event
/// stream cannot be resumed, a request cannot reach it), keeping the first
/// reason: the host then sees the session's end, reports it once and
/// reconnects with backoff.
#[derive(Clone)]
pub(crate) struct DropSignal {
    shared: std::sync::Weak<Shared>,
    cancel: CancellationToken,
}

impl DropSignal {
    pub(crate) fn fire(&self, why: &str) {
        if self.cancel.is_cancelled() {
            return;
        }
        if let Some(shared) = self.shared.upgrade() {
            let first = {
                let mut dropped = lock(&shared.dropped);
                let first = dropped.is_none();
                if first {
                    *dropped = Some(why.to_owned());
                }
                first
            };
            if first {
                shared.log(format_args!("the server dropped: {why}"));
            }
        }
        self.cancel.cancel();
    }
}

impl std::fmt::Debug for DropSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DropSignal").finish_non_exhaustive()
    }
}

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

/// What the adapter and the `rmcp` client handler share.
struct Shared {
    cx: Arc<HostContext>,
    server: McpServer,
    /// `mcp:<name>`.
    ext: String,
    log: OnceLock<Arc<ExtLog>>,
    attached: OnceLock<Attached>,
    peer: Mutex<Option<rmcp::Peer<RoleClient>>>,
    /// zot tool name → the server's tool name.
    tools: Mutex<HashMap<String, String>>,
    /// zot command name → the server's prompt.
    prompts: Mutex<HashMap<String, PromptDef>>,
    /// Progress token → where a running call's progress goes.
    progress: Mutex<HashMap<String, ProgressSink>>,
    /// The negotiated protocol version.
    version: Mutex<Option<String>>,
    /// Resource URIs as listed at start (for reports).
    resources: Mutex<Vec<String>>,
    gone: AtomicBool,
    /// Why a remote server counts as dropped, once it does.
    dropped: Mutex<Option<String>>,
    /// A `list_changed` came that no refresh has answered yet.
    stale: AtomicBool,
}

#[derive(Debug, Clone)]
struct PromptDef {
    name: String,
    /// Argument names in order, with whether each is required.
    arguments: Vec<(String, bool)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn log(&self, line: impl std::fmt::Display) {
        if let Some(log) = self.log.get() {
            log.line(line);
        }
    }

    fn peer(&self) -> Result<rmcp::Peer<RoleClient>, RequestError> {
        lock(&self.peer)
            .clone()
            .ok_or_else(|| RequestError::Disconnected(format!("{} is not connected", self.ext)))
    }

    /// A warning for the user: through the host once attached, else the log.
    fn warn(&self, message: String) {
        let sent = self
            .attached
            .get()
            .and_then(|host| host.with(|link| link.warn(message.clone())));
        if sent.is_none() {
            self.log(&message);
        }
    }

    fn effect(&self, effect: Effect) -> bool {
        self.attached
            .get()
            .and_then(|host| host.with(|link| link.effect(effect)))
            .is_some()
    }

    /// Everything the server offers, as registrations (tools replace the
    /// known ones); warnings go to `warn`.
    async fn list(&self, peer: &rmcp::Peer<RoleClient>, warn: &(dyn Fn(String) + Sync)) -> Listing {
        let caps = peer
            .peer_info()
            .map(|info| serde_json::to_value(&info.capabilities).unwrap_or_default())
            .unwrap_or_default();
        let has = |key: &str| caps.get(key).is_some_and(|v| !v.is_null());
        let mut listing = Listing::default();
        if has("tools") {
            match self.list_tools(peer, warn).await {
                Ok(tools) => listing.tools = self.tool_infos(tools, warn),
                Err(e) => warn(format!("{}: tools/list failed: {e}", self.ext)),
            }
        }
        if has("prompts") {
            match peer.list_all_prompts().await {
                Ok(prompts) => listing.commands = self.prompt_commands(prompts, warn),
                Err(e) => warn(format!("{}: prompts/list failed: {e}", self.ext)),
            }
        }
        listing.resources = has("resources");
        if listing.resources {
            listing.tools.extend(resource_tools(&self.ext));
            match peer.list_all_resources().await {
                Ok(resources) => {
                    *lock(&self.resources) = resources.iter().map(|r| r.uri.clone()).collect();
                }
                Err(e) => warn(format!("{}: resources/list failed: {e}", self.ext)),
            }
        }
        listing
    }

    /// Every page of `tools/list`, read entry by entry: `rmcp`'s typed list
    /// fails as a whole on one malformed entry, which would cost the
    /// server all its tools; here it costs only that entry (a warning).
    async fn list_tools(
        &self,
        peer: &rmcp::Peer<RoleClient>,
        warn: &(dyn Fn(String) + Sync),
    ) -> Result<Vec<rmcp::model::Tool>, String> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let params = cursor.take().map(|c| json!({ "cursor": c }));
            let request =
                ClientRequest::CustomRequest(rmcp::model::CustomRequest::new("tools/list", params));
            let answer = peer
                .send_request(request)
                .await
                .map_err(|e| e.to_string())?;
            // Whichever shape `rmcp` read the answer as, its JSON is the page.
            let page = serde_json::to_value(&answer).map_err(|e| e.to_string())?;
            let Some(entries) = page.get("tools").and_then(Value::as_array) else {
                return Err("the answer has no `tools` list".to_owned());
            };
            for (i, entry) in entries.iter().enumerate() {
                match serde_json::from_value::<rmcp::model::Tool>(entry.clone()) {
                    Ok(tool) => tools.push(tool),
                    Err(e) => {
                        let name = entry.get("name").and_then(Value::as_str).unwrap_or("?");
                        warn(format!(
                            "{}: tools/list entry {i} (\"{name}\") dropped: {e}",
                            self.ext
                        ));
                    }
                }
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(tools),
            }
        }
        warn(format!(
            "{}: tools/list still had more after {MAX_LIST_PAGES} pages; the rest is left out",
            self.ext
        ));
        Ok(tools)
    }

    fn tool_infos(
        &self,
        tools: Vec<rmcp::model::Tool>,
        warn: &(dyn Fn(String) + Sync),
    ) -> Vec<ToolInfo> {
        let mut map: HashMap<String, String> = HashMap::new();
        let mut infos = Vec::new();
        for tool in tools {
            let value = serde_json::to_value(&tool).unwrap_or_default();
            let own = tool.name.to_string();
            if !self.server.tools.allows(&own) {
                continue;
            }
            let name = qualified_name(&self.server.name, &own);
            if let Some(first) = map.get(&name) {
                warn(format!(
                    "{}: tools \"{first}\" and \"{own}\" both become {name}; \"{own}\" is dropped",
                    self.ext
                ));
                continue;
            }
            let read_only = value
                .pointer("/annotations/readOnlyHint")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let description = value
                .get("description")
                .or_else(|| value.get("title"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let schema = value
                .get("inputSchema")
                .filter(|s| s.is_object())
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            map.insert(name.clone(), own);
            infos.push(ToolInfo {
                name,
                description,
                schema,
                deferred: false,
                extension: self.ext.clone(),
                read_only,
            });
        }
        *lock(&self.tools) = map;
        infos
    }

    fn prompt_commands(
        &self,
        prompts: Vec<rmcp::model::Prompt>,
        warn: &(dyn Fn(String) + Sync),
    ) -> Vec<CommandInfo> {
        let mut map: HashMap<String, PromptDef> = HashMap::new();
        let mut commands = Vec::new();
        for prompt in prompts {
            let value = serde_json::to_value(&prompt).unwrap_or_default();
            let own = prompt.name.clone();
            let name = qualified_name(&self.server.name, &own);
            if let Some(first) = map.get(&name) {
                warn(format!(
                    "{}: prompts \"{}\" and \"{own}\" both become /{name}; \"{own}\" is dropped",
                    self.ext, first.name
                ));
                continue;
            }
            let arguments = value
                .get("arguments")
                .and_then(Value::as_array)
                .map(|args| {
                    args.iter()
                        .filter_map(|a| {
                            let name = a.get("name")?.as_str()?.to_owned();
                            let required = a.get("required").and_then(Value::as_bool) == Some(true);
                            Some((name, required))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let usage: Vec<String> = match &arguments {
                args if Vec::is_empty(args) => Vec::new(),
                args => args
                    .iter()
                    .map(|(n, required): &(String, bool)| {
                        if *required {
                            format!("<{n}>")
                        } else {
                            format!("[{n}]")
                        }
                    })
                    .collect(),
            };
            let description = value
                .get("description")
                .or_else(|| value.get("title"))
                .and_then(Value::as_str)
                .unwrap_or("MCP prompt")
                .to_owned();
            map.insert(
                name.clone(),
                PromptDef {
                    name: own,
                    arguments,
                },
            );
            commands.push(CommandInfo {
                name,
                description: Some(description),
                argument_hint: (!usage.is_empty()).then(|| usage.join(" ")),
                extension: self.ext.clone(),
                origin: CommandOrigin::Extension,
            });
        }
        *lock(&self.prompts) = map;
        commands
    }

    /// A list changed on the server: fetch them again, now when the host
    /// has this server, else as soon as it does (a `list_changed` sent
    /// during the handshake, like the reference server's right after
    /// `initialized`, must not be lost).
    fn changed(self: &Arc<Self>) {
        self.stale.store(true, Ordering::SeqCst);
        if self.attached.get().is_some() {
            self.refresh_if_stale();
        }
    }

    fn refresh_if_stale(self: &Arc<Self>) {
        if self.stale.swap(false, Ordering::SeqCst) {
            tokio::spawn(Arc::clone(self).refresh());
        }
    }

    /// Lists again and replaces the host's tools and commands of this server,
    /// each in one step, so no model request or call sees half a list.
    async fn refresh(self: Arc<Self>) {
        let Ok(peer) = self.peer() else {
            return;
        };
        // A session that ends meanwhile is reported by the host, not as list failures.
        let warn = |m: String| {
            if !self.gone.load(Ordering::Acquire) {
                self.warn(m);
            }
        };
        let listing = self.list(&peer, &warn).await;
        if self.gone.load(Ordering::Acquire) {
            return;
        }
        self.publish_resources(&peer, listing.resources);
        let sent = self.attached.get().and_then(|host| {
            host.with(|link| {
                link.register(Registration::ReplaceTools(listing.tools));
                link.register(Registration::ReplaceCommands(listing.commands));
            })
        });
        if sent.is_some() {
            self.log("lists refreshed after list_changed");
        }
    }

    fn publish_resources(&self, peer: &rmcp::Peer<RoleClient>, has: bool) {
        let mut directory = self.cx.mcp.lock();
        if has && !self.gone.load(Ordering::Acquire) {
            directory.insert(self.server.name.clone(), peer.clone());
        } else {
            directory.remove(&self.server.name);
        }
    }
}

#[derive(Default)]
struct Listing {
    tools: Vec<ToolInfo>,
    commands: Vec<CommandInfo>,
    resources: bool,
}

fn resource_tools(ext: &str) -> [ToolInfo; 2] {
    [
        ToolInfo {
            name: LIST_RESOURCES.to_owned(),
            description: Some(
                "List the resources (files, records, documents) that connected MCP servers offer. Read one with mcp_read_resource."
                    .to_owned(),
            ),
            schema: json!({
                "type": "object",
                "properties": {"server": {"type": "string", "description": "Only this server's resources"}},
            }),
            deferred: false,
            extension: ext.to_owned(),
            read_only: true,
        },
        ToolInfo {
            name: READ_RESOURCE.to_owned(),
            description: Some("Read one resource of an MCP server by its URI.".to_owned()),
            schema: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The server (as mcp_list_resources names it)"},
                    "uri": {"type": "string", "description": "The resource URI"},
                },
                "required": ["server", "uri"],
            }),
            deferred: false,
            extension: ext.to_owned(),
            read_only: true,
        },
    ]
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
                    HandshakeError::LoginNeeded(super::oauth::login_needed(
                        &self.shared.server.name,
                        &remote.url,
                    ))
                }
                _ => HandshakeError::Mcp(format!("initialize failed: {e}")),
            })?;
        let version = running
            .peer()
            .peer_info()
            .and_then(|info| serde_json::to_value(&info.protocol_version).ok())
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        if !SUPPORTED_VERSIONS.contains(&version.as_str()) {
            self.cancel.cancel();
            return Err(HandshakeError::Mcp(format!(
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
            shared.cx.mcp.lock().remove(&shared.server.name);
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
                        return Err(HandshakeError::Mcp(
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
            super::oauth::authorized(&self.shared.cx.config.zot_home, &server.name, &remote.url)
                .await
                .map_err(|e| HandshakeError::Mcp(e.to_string()))?;
        if streamable {
            super::remote::open_streamable_http(self, server, remote, auth, link).await
        } else {
            super::remote::open_sse(self, server, remote, auth, link).await
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
                crate::transport::preview(line)
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

fn token_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

fn error_answer(text: String) -> ToolAnswer {
    ToolAnswer {
        content: vec![ContentBlock::Text { text }],
        is_error: true,
        activate: Vec::new(),
    }
}

/// A `tools/call` result as zot content: text; images as image blocks;
/// audio as a note; resource links and embedded resources as text;
/// `structuredContent` as JSON text when there is no text; `isError` kept.
pub(crate) fn map_tool_result(result: &Value) -> ToolAnswer {
    let mut content: Vec<ContentBlock> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().filter_map(map_block).collect())
        .unwrap_or_default();
    let has_text = content
        .iter()
        .any(|b| matches!(b, ContentBlock::Text { .. }));
    if !has_text && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        content.push(ContentBlock::Text {
            text: structured.to_string(),
        });
    }
    ToolAnswer {
        content,
        is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
        activate: Vec::new(),
    }
}

fn map_block(block: &Value) -> Option<ContentBlock> {
    let str_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    let text = match str_of("type") {
        "text" => {
            let text = str_of("text");
            if text.is_empty() {
                return None;
            }
            text.to_owned()
        }
        "image" => {
            return Some(ContentBlock::Image {
                mime_type: str_of("mimeType").to_owned(),
                data: str_of("data").to_owned(),
            });
        }
        "audio" => format!(
            "[audio from the tool ({}, {} bytes of base64); zot does not pass audio to the model]",
            str_of("mimeType"),
            str_of("data").len()
        ),
        "resource_link" => {
            let mut text = format!("[resource link] {} <{}>", str_of("name"), str_of("uri"));
            if let Some(d) = block.get("description").and_then(Value::as_str) {
                text.push_str(&format!(": {d}"));
            }
            text
        }
        "resource" => resource_text(block.get("resource").unwrap_or(&Value::Null)),
        other => format!("[content of type {other:?} not shown]"),
    };
    Some(ContentBlock::Text { text })
}

/// Resource contents (embedded or read) as text.
fn resource_text(resource: &Value) -> String {
    let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
    let mime = resource
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("unknown type");
    match (
        resource.get("text").and_then(Value::as_str),
        resource.get("blob").and_then(Value::as_str),
    ) {
        (Some(text), _) => format!("[resource {uri}]\n{text}"),
        (None, Some(blob)) => {
            format!(
                "[resource {uri}: {mime}, {} bytes of base64 not shown]",
                blob.len()
            )
        }
        (None, None) => format!("[resource {uri}: no contents]"),
    }
}

/// A `prompts/get` result as the text of one user prompt.
fn prompt_text(result: &Value) -> String {
    let Some(messages) = result.get("messages").and_then(Value::as_array) else {
        return String::new();
    };
    let only_user = messages
        .iter()
        .all(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    let parts: Vec<String> = messages
        .iter()
        .filter_map(|m| {
            let block = m.get("content")?;
            let text = match map_block(block)? {
                ContentBlock::Text { text } => text,
                ContentBlock::Image { mime_type, .. } => format!("[image: {mime_type}]"),
                ContentBlock::Unsupported => return None,
            };
            let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
            Some(if only_user {
                text
            } else {
                format!("{role}: {text}")
            })
        })
        .collect();
    parts.join("\n\n")
}

/// Splits slash-command arguments on whitespace; double quotes group words.
fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut started = false;
    for c in args.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out
}

async fn list_resources(cx: &HostContext, args: &Value) -> ToolAnswer {
    let only = args.get("server").and_then(Value::as_str);
    let servers: Vec<(String, rmcp::Peer<RoleClient>)> = cx
        .mcp
        .lock()
        .iter()
        .filter(|(name, _)| only.is_none_or(|o| o == name.as_str()))
        .map(|(n, p)| (n.clone(), p.clone()))
        .collect();
    if servers.is_empty() {
        return error_answer(match only {
            Some(server) => format!("no connected MCP server {server:?} has resources"),
            None => "no connected MCP server has resources".to_owned(),
        });
    }
    let mut lines = Vec::new();
    for (server, peer) in servers {
        match peer.list_all_resources().await {
            Ok(resources) => {
                for resource in resources {
                    let v = serde_json::to_value(&resource).unwrap_or_default();
                    let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
                    let mut line = format!("{server}\t{}\t{}", field("uri"), field("name"));
                    if !field("mimeType").is_empty() {
                        line.push_str(&format!("\t{}", field("mimeType")));
                    }
                    if !field("description").is_empty() {
                        line.push_str(&format!("\t{}", field("description")));
                    }
                    lines.push(line);
                }
            }
            Err(e) => lines.push(format!("{server}\t(resources/list failed: {e})")),
        }
    }
    if lines.is_empty() {
        lines.push("(no resources)".to_owned());
    }
    ToolAnswer {
        content: vec![ContentBlock::Text {
            text: format!(
                "server\turi\tname\tmime type\tdescription\n{}",
                lines.join("\n")
            ),
        }],
        is_error: false,
        activate: Vec::new(),
    }
}

async fn read_resource(cx: &HostContext, args: &Value) -> ToolAnswer {
    let (Some(server), Some(uri)) = (
        args.get("server").and_then(Value::as_str),
        args.get("uri").and_then(Value::as_str),
    ) else {
        return error_answer("mcp_read_resource needs `server` and `uri`".to_owned());
    };
    let Some(peer) = cx.mcp.lock().get(server).cloned() else {
        return error_answer(format!("no connected MCP server {server:?} has resources"));
    };
    let request = ClientRequest::ReadResourceRequest(Request::new(ReadResourceRequestParams::new(
        uri.to_owned(),
    )));
    match peer.send_request(request).await {
        Ok(ServerResult::ReadResourceResult(result)) => {
            let value = serde_json::to_value(&result).unwrap_or_default();
            let content: Vec<ContentBlock> = value
                .get("contents")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|item| {
                            let mime = item.get("mimeType").and_then(Value::as_str);
                            match (mime, item.get("blob").and_then(Value::as_str)) {
                                (Some(mime), Some(blob)) if mime.starts_with("image/") => {
                                    ContentBlock::Image {
                                        mime_type: mime.to_owned(),
                                        data: blob.to_owned(),
                                    }
                                }
                                _ => ContentBlock::Text {
                                    text: resource_text(item),
                                },
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            ToolAnswer {
                content,
                is_error: false,
                activate: Vec::new(),
            }
        }
        Ok(_) => error_answer(format!(
            "{server} answered resources/read with something else"
        )),
        Err(rmcp::ServiceError::McpError(e)) => {
            error_answer(format!("{server}: reading {uri} failed: {}", e.message))
        }
        Err(e) => error_answer(format!("{server}: reading {uri} failed: {e}")),
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
        self.shared.cx.mcp.lock().remove(&self.shared.server.name);
        if self.remote.is_some() {
            self.cancel.cancel();
        }
    }

    fn attach(&self, host: Attached) {
        let _ = self.shared.attached.set(host);
        self.shared.refresh_if_stale();
    }

    fn disconnected(&self) {
        self.shared.gone.store(true, Ordering::Release);
        self.shared.cx.mcp.lock().remove(&self.shared.server.name);
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

/// The `rmcp` client handler: what zot answers to the server's requests
/// and does on its notifications.
pub(crate) struct Client {
    shared: Arc<Shared>,
}

impl Client {
    /// Asks the user through the front end; `None` when nobody can answer
    /// (print, JSON and RPC modes dismiss questions).
    async fn ask(&self, prompt: String, options: Vec<String>) -> Option<String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let reply = QuestionReply::new(move |answer| {
            let _ = tx.send(answer);
        });
        let asked = self.shared.effect(Effect::Question {
            prompt,
            options,
            reply,
        });
        if !asked {
            return None;
        }
        rx.await.ok().flatten()
    }

    async fn elicit(&self, request: ElicitRequestParams) -> ElicitResult {
        let decline = ElicitResult::new(ElicitationAction::Decline);
        let value = serde_json::to_value(&request).unwrap_or_default();
        let message = value
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let ext = &self.shared.ext;
        if let Some(url) = value.get("url").and_then(Value::as_str) {
            let prompt = format!("{ext} asks you to open {url}\n{message}");
            let options = vec!["Open".to_owned(), "Decline".to_owned(), "Cancel".to_owned()];
            return match self.ask(prompt, options).await.as_deref() {
                Some("Open") => {
                    open_url(url, &self.shared);
                    ElicitResult::new(ElicitationAction::Accept)
                }
                Some("Cancel") => ElicitResult::new(ElicitationAction::Cancel),
                _ => decline,
            };
        }
        let schema = value.get("requestedSchema").cloned().unwrap_or_default();
        let fields = match form_fields(&schema) {
            Ok(fields) => fields,
            Err(why) => {
                self.shared.log(format_args!("elicitation declined: {why}"));
                return decline;
            }
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let reply = FormReply::new(move |answer| {
            let _ = tx.send(answer);
        });
        let form = Form {
            message: message.clone(),
            fields,
            schema,
        };
        if !self.shared.effect(Effect::Form { form, reply }) {
            return decline;
        }
        match rx.await.ok().flatten() {
            Some(FormAnswer::Accept(content)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            Some(FormAnswer::Cancel) => ElicitResult::new(ElicitationAction::Cancel),
            // Declined, or nobody to ask (print, JSON and RPC modes).
            Some(FormAnswer::Decline) | None => {
                self.shared
                    .log(format_args!("elicitation declined: {message}"));
                decline
            }
        }
    }
}

/// An elicitation's `requestedSchema` as form fields: a flat object of
/// strings (enums as choices), numbers, integers, booleans and lists of
/// enum values, as the MCP spec allows. A field of any other type makes
/// the form unreadable.
fn form_fields(schema: &Value) -> Result<Vec<FormField>, String> {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("the schema has no properties")?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // Required fields first; otherwise the schema's order (which `rmcp`
    // keeps sorted by name).
    let mut ordered: Vec<(&String, &Value)> = properties.iter().collect();
    ordered.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    ordered
        .into_iter()
        .map(|(name, def)| {
            let kind = match def.get("type").and_then(Value::as_str).unwrap_or("string") {
                "string" => match choices(def) {
                    Some((values, labels)) => FieldKind::Choice { values, labels },
                    None => FieldKind::Text,
                },
                "array" => {
                    let items = def.get("items").unwrap_or(&Value::Null);
                    match choices(items) {
                        Some((values, labels)) => FieldKind::MultiChoice { values, labels },
                        None => return Err(format!("field {name} is a list of free values")),
                    }
                }
                "number" => FieldKind::Number,
                "integer" => FieldKind::Integer,
                "boolean" => FieldKind::Boolean,
                other => return Err(format!("field {name} has type {other:?}")),
            };
            Ok(FormField {
                name: name.clone(),
                title: def
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_owned(),
                description: def
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                kind,
                required: required.contains(&name.as_str()),
                default: def.get("default").filter(|d| !d.is_null()).cloned(),
            })
        })
        .collect()
}

/// An enum's values and their labels: `enum` (with the older
/// `enumNames`), or `oneOf`/`anyOf` of `{const, title}`.
fn choices(def: &Value) -> Option<(Vec<String>, Vec<String>)> {
    if let Some(values) = def.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let names: Vec<String> = def
            .get("enumNames")
            .and_then(Value::as_array)
            .map(|n| {
                n.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let labels = if names.len() == values.len() {
            names
        } else {
            values.clone()
        };
        return Some((values, labels));
    }
    let options = def
        .get("oneOf")
        .or_else(|| def.get("anyOf"))
        .and_then(Value::as_array)?;
    let pairs: Vec<(String, String)> = options
        .iter()
        .filter_map(|o| {
            let value = o.get("const")?.as_str()?.to_owned();
            let label = o
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or(&value)
                .to_owned();
            Some((value, label))
        })
        .collect();
    Some(pairs.into_iter().unzip())
}

/// How much of a sampling request's last message the user sees when asked.
/// A dialog's worth of text: enough to judge it, not a wall.
const SAMPLING_PREVIEW_CHARS: usize = 400;

/// A `sampling/createMessage` request in neutral terms: the text of each
/// message (other content described), the system prompt, the token cap.
fn sample_request(params: &Value) -> SampleRequest {
    let text_of = |block: &Value| match block.get("type").and_then(Value::as_str) {
        Some("text") => block
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        Some(other) => format!("[{other} content not passed on]"),
        None => String::new(),
    };
    let messages = params
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    let user = m.get("role").and_then(Value::as_str) != Some("assistant");
                    let text = match m.get("content") {
                        Some(Value::Array(blocks)) => {
                            blocks.iter().map(text_of).collect::<Vec<_>>().join("\n")
                        }
                        Some(block) => text_of(block),
                        None => String::new(),
                    };
                    (user, text)
                })
                .collect()
        })
        .unwrap_or_default();
    SampleRequest {
        system: params
            .get("systemPrompt")
            .and_then(Value::as_str)
            .map(str::to_owned),
        messages,
        max_tokens: params
            .get("maxTokens")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(u32::MAX),
    }
}

/// Opens `url` with `$BROWSER` when set; otherwise (or when it cannot run)
/// shows it to the user.
fn open_url(url: &str, shared: &Shared) {
    let message = match super::oauth::open_with_browser(url) {
        Ok(Some(browser)) => {
            shared.log(format_args!("opened {url} with {browser}"));
            return;
        }
        Ok(None) => format!("{} asks you to open {url}", shared.ext),
        Err(e) => format!("{} asks you to open {url} ({e})", shared.ext),
    };
    shared.effect(Effect::Notify {
        level: zot_protocol::zot::NotifyLevel::Info,
        message,
    });
}

/// `file://` URI of a directory, percent-encoding what a URI path may not hold.
fn file_uri(path: &std::path::Path) -> String {
    let mut out = String::from("file://");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(*byte));
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

impl rmcp::ClientHandler for Client {
    fn get_info(&self) -> InitializeRequestParams {
        let mut declared = json!({
            "roots": {"listChanged": false},
            "elicitation": {"form": {}, "url": {}},
        });
        // Declared only to servers allowed to ask (each ask still needs the user).
        if self.shared.server.sampling {
            declared["sampling"] = json!({});
        }
        let capabilities: ClientCapabilities = serde_json::from_value(declared).unwrap_or_default();
        InitializeRequestParams::new(
            capabilities,
            Implementation::new("zot", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(PROTOCOL_VERSION)
    }

    fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> impl Future<Output = Result<ListRootsResult, ErrorData>> + Send + '_ {
        let cwd = self.shared.cx.cwd();
        let mut root = Root::new(file_uri(&cwd));
        root.name = cwd.file_name().map(|n| n.to_string_lossy().into_owned());
        std::future::ready(Ok(ListRootsResult::new(vec![root])))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.elicit(request).await)
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let refuse = |why: String| {
            self.shared
                .log(format_args!("sampling/createMessage refused: {why}"));
            ErrorData::invalid_request(why, None)
        };
        if !self.shared.server.sampling {
            return Err(refuse(format!(
                "{} may not ask for sampling (its config has no \"sampling\": true)",
                self.shared.ext
            )));
        }
        let Some(sampler) = self.shared.cx.sampler() else {
            return Err(refuse(
                "sampling needs a user to agree, and nobody can be asked here".to_owned(),
            ));
        };
        let request = sample_request(&serde_json::to_value(&params).unwrap_or_default());
        let model = self.shared.cx.facts().model.clone();
        let last = request
            .messages
            .last()
            .map(|(_, text)| text.as_str())
            .unwrap_or_default();
        let preview: String = last.chars().take(SAMPLING_PREVIEW_CHARS).collect();
        let prompt = format!(
            "{} asks to send {} message(s) to {model} (up to {} tokens). The last one:\n{preview}",
            self.shared.ext,
            request.messages.len(),
            request.max_tokens
        );
        let options = vec!["Send".to_owned(), "Refuse".to_owned()];
        if self.ask(prompt, options).await.as_deref() != Some("Send") {
            return Err(refuse("the user refused".to_owned()));
        }
        let result = sampler
            .sample(&model, request)
            .await
            .map_err(|e| refuse(format!("the model call failed: {e}")))?;
        self.shared.log(format_args!(
            "sampling/createMessage answered by {}",
            result.model
        ));
        let stop = if result.truncated {
            rmcp::model::CreateMessageResult::STOP_REASON_END_MAX_TOKEN
        } else {
            rmcp::model::CreateMessageResult::STOP_REASON_END_TURN
        };
        Ok(rmcp::model::CreateMessageResult::new(
            rmcp::model::SamplingMessage::assistant_text(result.text),
            result.model,
        )
        .with_stop_reason(stop))
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let sink = lock(&self.shared.progress)
            .get(&token_key(&params.progress_token))
            .cloned();
        if let Some(sink) = sink {
            let figures = match params.total {
                Some(total) => format!("{}/{total}", params.progress),
                None => format!("{}", params.progress),
            };
            let text = match &params.message {
                Some(message) => format!("{message} ({figures})\n"),
                None => format!("progress {figures}\n"),
            };
            sink(&text);
        }
        std::future::ready(())
    }

    fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let level = serde_json::to_value(params.level).unwrap_or_default();
        let data = match &params.data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.shared.log(format_args!(
            "[{}{}] {data}",
            level.as_str().unwrap_or("log"),
            params
                .logger
                .as_deref()
                .map(|l| format!(" {l}"))
                .unwrap_or_default()
        ));
        std::future::ready(())
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.shared.changed();
        std::future::ready(())
    }

    fn on_prompt_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.shared.changed();
        std::future::ready(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_shortened_with_a_hash() {
        assert_eq!(qualified_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(qualified_name("my.srv", "a.b c"), "mcp__my_srv__a_b_c");
        let long = qualified_name("server", &"x".repeat(80));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__server__xxx"));
        assert_eq!(&long[55..56], "_");
        assert!(long[56..].chars().all(|c| c.is_ascii_hexdigit()));
        // Two long names that share their first 55 characters still differ.
        let other = qualified_name("server", &format!("{}y", "x".repeat(80)));
        assert_ne!(long, other);
        assert!(crate::adapter::valid_tool_name(&qualified_name("ü", "ß")));
    }

    #[test]
    fn results_map_every_content_type() {
        let result = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "mimeType": "image/png", "data": "iVBOR"},
                {"type": "audio", "mimeType": "audio/wav", "data": "UklGR"},
                {"type": "resource_link", "uri": "test://1", "name": "one", "description": "first"},
                {"type": "resource", "resource": {"uri": "test://2", "text": "body"}},
                {"type": "resource", "resource": {"uri": "test://3", "mimeType": "application/octet-stream", "blob": "AAAA"}},
            ],
            "isError": true,
        });
        let answer = map_tool_result(&result);
        assert!(answer.is_error);
        let texts: Vec<String> = answer
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => text.clone(),
                ContentBlock::Image { mime_type, .. } => format!("image {mime_type}"),
                ContentBlock::Unsupported => "?".into(),
            })
            .collect();
        assert_eq!(texts[0], "hello");
        assert_eq!(texts[1], "image image/png");
        assert!(texts[2].starts_with("[audio"));
        assert_eq!(texts[3], "[resource link] one <test://1>: first");
        assert_eq!(texts[4], "[resource test://2]\nbody");
        assert!(texts[5].contains("4 bytes of base64"));

        let structured = map_tool_result(&json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(
            structured.content,
            vec![ContentBlock::Text {
                text: r#"{"sum":3}"#.into()
            }]
        );
        assert!(!structured.is_error);
    }

    #[test]
    fn prompt_arguments_split_like_a_shell_line() {
        assert_eq!(split_args(r#"a "b c"  d"#), ["a", "b c", "d"]);
        assert_eq!(split_args(r#""""#), [""]);
        assert!(split_args("   ").is_empty());
    }

    #[test]
    fn roots_are_file_uris() {
        assert_eq!(
            file_uri(std::path::Path::new("/a b/ü")),
            "file:///a%20b/%C3%BC"
        );
    }
}
