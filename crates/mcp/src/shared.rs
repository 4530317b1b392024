//! What the MCP adapter and its `rmcp` client handler share about one
//! server: its peer, its names, listing and refreshing what it offers, and
//! how a dropped remote session is signalled.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rmcp::model::ClientRequest;
use rmcp::service::RoleClient;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use zot_protocol::ui::{CommandInfo, CommandOrigin};

use crate::config::McpServer;
use crate::directory::Directory;
use zot_extensions::adapter::Attachment;
use zot_extensions::adapter::ProgressSink;
use zot_extensions::context::HostContext;
use zot_extensions::ext_log::ExtLog;
use zot_extensions::model::{Effect, Registration, ToolInfo};
use zot_extensions::transport::RequestError;

use crate::names::{LIST_RESOURCES, READ_RESOURCE, qualified_name};

/// Most pages of `tools/list` read from one server: one that keeps
/// answering with a next cursor would otherwise keep zot listing forever
/// (at the 100-odd tools a page usually holds, far more than any model can
/// be offered).
const MAX_LIST_PAGES: usize = 100;

/// Ends a remote server's session once it is found dropped (its event
/// stream cannot be resumed, a request cannot reach it), keeping the first
/// reason: the host then sees the session's end, reports it once and
/// reconnects with backoff.
#[derive(Clone)]
pub(crate) struct DropSignal {
    pub(super) shared: std::sync::Weak<Shared>,
    pub(super) cancel: CancellationToken,
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

/// What the adapter and the `rmcp` client handler share.
pub(super) struct Shared {
    pub(super) cx: Arc<HostContext>,
    pub(super) server: McpServer,
    /// `mcp:<name>`.
    pub(super) ext: String,
    pub(super) log: OnceLock<Arc<ExtLog>>,
    pub(super) attached: OnceLock<Box<dyn Attachment>>,
    pub(super) peer: Mutex<Option<rmcp::Peer<RoleClient>>>,
    /// zot tool name → the server's tool name.
    pub(super) tools: Mutex<HashMap<String, String>>,
    /// zot command name → the server's prompt.
    pub(super) prompts: Mutex<HashMap<String, PromptDef>>,
    /// Progress token → where a running call's progress goes.
    pub(super) progress: Mutex<HashMap<String, ProgressSink>>,
    /// The negotiated protocol version.
    pub(super) version: Mutex<Option<String>>,
    /// Resource URIs as listed at start (for reports).
    pub(super) resources: Mutex<Vec<String>>,
    pub(super) gone: AtomicBool,
    /// Why a remote server counts as dropped, once it does.
    pub(super) dropped: Mutex<Option<String>>,
    /// A `list_changed` came that no refresh has answered yet.
    pub(super) stale: AtomicBool,
}

#[derive(Debug, Clone)]
pub(super) struct PromptDef {
    pub(super) name: String,
    /// Argument names in order, with whether each is required.
    pub(super) arguments: Vec<(String, bool)>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(super) fn log(&self, line: impl std::fmt::Display) {
        if let Some(log) = self.log.get() {
            log.line(line);
        }
    }

    pub(super) fn peer(&self) -> Result<rmcp::Peer<RoleClient>, RequestError> {
        lock(&self.peer)
            .clone()
            .ok_or_else(|| RequestError::Disconnected(format!("{} is not connected", self.ext)))
    }

    /// A warning for the user: through the host once attached, else the log.
    pub(super) fn warn(&self, message: String) {
        let sent = self
            .attached
            .get()
            .and_then(|host| host.with(|link| link.warn(message.clone())));
        if sent.is_none() {
            self.log(&message);
        }
    }

    pub(super) fn effect(&self, effect: Effect) -> bool {
        self.attached
            .get()
            .and_then(|host| host.with(|link| link.effect(effect)))
            .is_some()
    }

    /// Everything the server offers, as registrations (tools replace the
    /// known ones); warnings go to `warn`.
    pub(super) async fn list(
        &self,
        peer: &rmcp::Peer<RoleClient>,
        warn: &(dyn Fn(String) + Sync),
    ) -> Listing {
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
    pub(super) async fn list_tools(
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

    pub(super) fn tool_infos(
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

    pub(super) fn prompt_commands(
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
    pub(super) fn changed(self: &Arc<Self>) {
        self.stale.store(true, Ordering::SeqCst);
        if self.attached.get().is_some() {
            self.refresh_if_stale();
        }
    }

    pub(super) fn refresh_if_stale(self: &Arc<Self>) {
        if self.stale.swap(false, Ordering::SeqCst) {
            tokio::spawn(Arc::clone(self).refresh());
        }
    }

    /// Lists again and replaces the host's tools and commands of this server,
    /// each in one step, so no model request or call sees half a list.
    pub(super) async fn refresh(self: Arc<Self>) {
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

    pub(super) fn publish_resources(&self, peer: &rmcp::Peer<RoleClient>, has: bool) {
        let directory = self.cx.slot::<Directory>();
        let mut directory = directory.lock();
        if has && !self.gone.load(Ordering::Acquire) {
            directory.insert(self.server.name.clone(), peer.clone());
        } else {
            directory.remove(&self.server.name);
        }
    }
}

#[derive(Default)]
pub(super) struct Listing {
    pub(super) tools: Vec<ToolInfo>,
    pub(super) commands: Vec<CommandInfo>,
    pub(super) resources: bool,
}

pub(super) fn resource_tools(ext: &str) -> [ToolInfo; 2] {
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

/// A progress token as the key of [`Shared::progress`].
pub(super) fn token_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}
