//! `zot mcp add|list|get|remove|import`: edits the MCP server lists in
//! `$ZOT_HOME/mcp.json` (user scope) and `./.mcp.json` (project scope, the
//! file Claude Code reads). Edits keep the files' key order and every key zot
//! does not know; writes are atomic. Env and header values are never printed:
//! they are where tokens live.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::{Map, Value, json};
use zot_mcp::config::{
    self, McpConfig, McpTransport as Transport, PROJECT_FILE, ServerEntry, ServerStatus,
    TransportKind,
};
use zot_mcp::oauth;

use crate::args::{McpAddArgs, McpCommand, McpScope, McpTransport};
use crate::context::{Context, display};
use crate::ext_cmd::{print_table, repin};

/// The key holding the servers in either file.
const SERVERS_KEY: &str = "mcpServers";

pub fn run(ctx: &Context, command: &McpCommand) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::Add(args) => add(ctx, args),
        McpCommand::List { json } => list(ctx, *json),
        McpCommand::Get { name, json } => get(ctx, name, *json),
        McpCommand::Remove { name, scope } => remove(ctx, name, *scope),
        McpCommand::Import { names, all, scope } => import(ctx, names, *all, *scope),
        McpCommand::Login { name } => login(ctx, name),
        McpCommand::Logout { name } => logout(ctx, name),
    }
}

fn scope_name(scope: McpScope) -> &'static str {
    match scope {
        McpScope::User => "user",
        McpScope::Project => "project",
    }
}

/// One of the two config files, parsed, ready to edit and save.
struct ServerFile {
    scope: McpScope,
    path: PathBuf,
    /// The whole document; its `mcpServers` value stands in `servers` until [`ServerFile::save`].
    doc: Map<String, Value>,
    servers: Map<String, Value>,
}

impl ServerFile {
    fn path_of(ctx: &Context, scope: McpScope) -> PathBuf {
        match scope {
            McpScope::User => config::user_path(&ctx.zot_home),
            McpScope::Project => config::project_path(&ctx.project),
        }
    }

    /// The file of `scope`; a missing one is empty.
    fn load(ctx: &Context, scope: McpScope) -> anyhow::Result<Self> {
        let path = Self::path_of(ctx, scope);
        let mut doc = config::read_object(&path)?.unwrap_or_default();
        // `take` leaves the key in its place, so saving keeps the file's key order.
        let servers = match doc.get_mut(SERVERS_KEY).map(Value::take) {
            None => Map::new(),
            Some(Value::Object(servers)) => servers,
            Some(_) => bail!("{}: `{SERVERS_KEY}` is not an object", path.display()),
        };
        Ok(Self {
            scope,
            path,
            doc,
            servers,
        })
    }

    fn servers(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.servers.iter()
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.servers.get(name)
    }

    /// Writes the file atomically (a new one readable by the user alone),
    /// then keeps a trusted project trusted: zot wrote this change itself.
    fn save(&self, ctx: &Context) -> anyhow::Result<()> {
        let mut doc = self.doc.clone();
        doc.insert(SERVERS_KEY.into(), Value::Object(self.servers.clone()));
        config::write_object(&self.path, &doc)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        if self.scope == McpScope::Project {
            repin(ctx, std::slice::from_ref(&self.path))?;
        }
        Ok(())
    }
}

fn add(ctx: &Context, args: &McpAddArgs) -> anyhow::Result<ExitCode> {
    config::check_name(&args.name).map_err(anyhow::Error::msg)?;
    let mut entry = Map::new();
    match args.transport {
        McpTransport::Stdio => {
            if !args.header.is_empty() {
                bail!("--header is for remote servers (--transport http or sse)");
            }
            let (command, rest) = args
                .target
                .split_first()
                .context("give the server's command after `--`")?;
            if looks_like_url(command) {
                bail!(
                    "{command:?} is a URL: add a remote server with `zot mcp add --transport http {} {command}` (or --transport sse)",
                    args.name
                );
            }
            entry.insert("command".into(), json!(command));
            if !rest.is_empty() {
                entry.insert("args".into(), json!(rest));
            }
            let mut env = Map::new();
            for pair in &args.env {
                let (key, value) = pair
                    .split_once('=')
                    .filter(|(k, _)| !k.is_empty())
                    .with_context(|| format!("--env {pair:?}: expected KEY=VALUE"))?;
                env.insert(key.to_owned(), json!(value));
            }
            if !env.is_empty() {
                entry.insert("env".into(), Value::Object(env));
            }
        }
        McpTransport::Http | McpTransport::Sse => {
            if !args.env.is_empty() {
                bail!("-e/--env is for stdio servers; a remote server takes --header");
            }
            let [url] = args.target.as_slice() else {
                bail!("a remote server takes exactly one URL after its name");
            };
            let parsed =
                reqwest::Url::parse(url).with_context(|| format!("invalid URL {url:?}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                bail!("{url:?}: the URL must start with http:// or https://");
            }
            let kind = if args.transport == McpTransport::Http {
                "http"
            } else {
                "sse"
            };
            entry.insert("type".into(), json!(kind));
            entry.insert("url".into(), json!(url));
            let mut headers = Map::new();
            for header in &args.header {
                let (name, value) = parse_header(header)?;
                headers.insert(name.to_owned(), json!(value));
            }
            if !headers.is_empty() {
                entry.insert("headers".into(), Value::Object(headers));
            }
        }
    }
    let mut file = ServerFile::load(ctx, args.scope)?;
    if file.get(&args.name).is_some() {
        bail!(
            "{} already has a server named {:?}; remove it first with `zot mcp remove {}{}`",
            file.path.display(),
            args.name,
            args.name,
            scope_flag(args.scope),
        );
    }
    let transport = transport_of(&entry).map_or("stdio", TransportKind::as_str);
    file.servers.insert(args.name.clone(), Value::Object(entry));
    file.save(ctx)?;
    errln!(
        "added {transport} server {} to {}",
        args.name,
        file.path.display()
    );
    note_untrusted(ctx, args.scope);
    Ok(ExitCode::SUCCESS)
}

fn scope_flag(scope: McpScope) -> &'static str {
    match scope {
        McpScope::User => " --scope user",
        McpScope::Project => " --scope project",
    }
}

fn note_untrusted(ctx: &Context, scope: McpScope) {
    if scope == McpScope::Project && !ctx.config.project_trusted {
        errln!("note: servers in {PROJECT_FILE} start once you trust this project (`zot trust`)");
    }
}

fn looks_like_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}

/// `"Name: value"` → (`Name`, `value`), checking the name is an HTTP token.
fn parse_header(header: &str) -> anyhow::Result<(&str, &str)> {
    let (name, value) = header
        .split_once(':')
        .with_context(|| format!("--header {:?}: expected \"Name: value\"", redact(header)))?;
    let name = name.trim();
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        bail!("--header: invalid header name {name:?}");
    }
    Ok((name, value.trim()))
}

/// What of a malformed header may be shown: nothing past its first few
/// characters, in case it is a bare token.
fn redact(text: &str) -> String {
    let shown: String = text.chars().take(4).collect();
    if shown.len() < text.len() {
        format!("{shown}…")
    } else {
        shown
    }
}

/// The transport of a usable entry (a stdio one with a `command`, a remote
/// one with a `url`), `None` for one zot cannot start as written.
fn transport_of(entry: &Map<String, Value>) -> Option<TransportKind> {
    let entry: ServerEntry = serde_json::from_value(Value::Object(entry.clone())).ok()?;
    let kind = entry.transport_kind();
    let usable = match kind {
        TransportKind::Stdio => entry.command.is_some(),
        TransportKind::Http | TransportKind::Sse => entry.url.is_some(),
    };
    usable.then_some(kind)
}

/// One configured server as `list` and `get` show it.
struct Listed<'a> {
    name: &'a str,
    scope: McpScope,
    path: &'a Path,
    entry: &'a Value,
    state: &'static str,
    reason: Option<String>,
}

impl Listed<'_> {
    fn object(&self) -> Option<&Map<String, Value>> {
        self.entry.as_object()
    }

    fn enabled(&self) -> bool {
        serde_json::from_value::<ServerEntry>(self.entry.clone())
            .is_ok_and(|entry| entry.is_enabled())
    }

    fn transport(&self) -> Option<&'static str> {
        self.object()
            .and_then(transport_of)
            .map(TransportKind::as_str)
    }

    /// The `list --json` shape: `{name, scope, transport, command?, args?, url?, enabled, state}`.
    fn summary(&self) -> Value {
        let mut out = json!({
            "name": self.name,
            "scope": scope_name(self.scope),
            "transport": self.transport(),
        });
        if let (Some(entry), Value::Object(out)) = (self.object(), &mut out) {
            for key in ["command", "args", "url"] {
                if let Some(value) = entry.get(key) {
                    out.insert(key.into(), value.clone());
                }
            }
            out.insert("enabled".into(), json!(self.enabled()));
            out.insert("state".into(), json!(self.state));
        }
        out
    }

    /// `get --json`: the summary plus where it lives, the names (only) of
    /// its env variables and headers, and its other settings.
    fn details(&self) -> Value {
        let mut out = self.summary();
        let (Some(entry), Value::Object(map)) = (self.object(), &mut out) else {
            return out;
        };
        map.insert("file".into(), json!(display(self.path)));
        if let Some(reason) = &self.reason {
            map.insert("reason".into(), json!(reason));
        }
        for (key, shown) in [("env", "env_keys"), ("headers", "header_names")] {
            if let Some(Value::Object(values)) = entry.get(key) {
                map.insert(shown.into(), json!(values.keys().collect::<Vec<_>>()));
            }
        }
        for key in SHOWN_OPTIONS {
            if let Some(value) = entry.get(*key) {
                map.insert((*key).into(), value.clone());
            }
        }
        out
    }
}

/// The per-server settings `get` shows besides command, args and URL:
/// none of them holds a secret (`bearer_token_env_var` names a variable).
const SHOWN_OPTIONS: &[&str] = &[
    "cwd",
    "startup_timeout_sec",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "bearer_token_env_var",
    "sampling",
];

/// Every server of both files, the user's then the project's, each with
/// the state the host gives it (the shared loader decides: expansion,
/// validation, trust, shadowing), shown with its entry as written.
fn listed<'a>(ctx: &Context, files: &'a [ServerFile]) -> Vec<Listed<'a>> {
    let merged = McpConfig::load(
        &ctx.zot_home,
        &ctx.project,
        ctx.config.project_trusted,
        &config::process_env,
    );
    let mut out = Vec::new();
    for file in files {
        for (name, entry) in file.servers() {
            let status = merged
                .servers
                .iter()
                .find(|(server, _)| &server.name == name && server.source == file.path)
                .map(|(_, status)| status);
            let (state, reason) = match status {
                Some(ServerStatus::Load) => ("ok", None),
                Some(ServerStatus::Disabled) => ("disabled", None),
                Some(ServerStatus::Untrusted) => {
                    ("untrusted", Some("run `zot trust` to allow it".to_owned()))
                }
                Some(ServerStatus::Shadowed { by }) => {
                    ("shadowed", Some(format!("by {}", by.display())))
                }
                None => {
                    let error = merged
                        .server_errors
                        .iter()
                        .find(|e| &e.server == name && e.path == file.path);
                    ("invalid", error.map(|e| e.message.clone()))
                }
            };
            out.push(Listed {
                name,
                scope: file.scope,
                path: &file.path,
                entry,
                state,
                reason,
            });
        }
    }
    out
}

fn both_files(ctx: &Context) -> anyhow::Result<Vec<ServerFile>> {
    Ok(vec![
        ServerFile::load(ctx, McpScope::User)?,
        ServerFile::load(ctx, McpScope::Project)?,
    ])
}

fn list(ctx: &Context, as_json: bool) -> anyhow::Result<ExitCode> {
    let files = both_files(ctx)?;
    let items = listed(ctx, &files);
    if as_json {
        let doc: Vec<Value> = items.iter().map(Listed::summary).collect();
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    if items.is_empty() {
        errln!("no MCP servers configured");
        errln!(
            "add one with `zot mcp add <name> -- <command> [args...]`, or bring yours over with `zot mcp import`"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 5]> = items
        .iter()
        .map(|item| {
            let target = item
                .object()
                .map(|entry| match (entry.get("url"), entry.get("command")) {
                    (Some(url), _) => text(url),
                    (None, Some(command)) => {
                        let args = entry.get("args").and_then(Value::as_array);
                        std::iter::once(text(command))
                            .chain(args.into_iter().flatten().map(text))
                            .collect::<Vec<_>>()
                            .join(" ")
                    }
                    (None, None) => "-".to_owned(),
                })
                .unwrap_or_else(|| "-".to_owned());
            let state = match &item.reason {
                Some(reason) => format!("{}: {reason}", item.state),
                None => item.state.to_owned(),
            };
            [
                scope_name(item.scope).to_owned(),
                item.name.to_owned(),
                item.transport().unwrap_or("-").to_owned(),
                state,
                target,
            ]
        })
        .collect();
    print_table(
        &["SCOPE", "NAME", "TRANSPORT", "STATE", "COMMAND/URL"],
        &rows,
    );
    Ok(ExitCode::SUCCESS)
}

/// A JSON value as text: strings without their quotes.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn get(ctx: &Context, name: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let files = both_files(ctx)?;
    let items: Vec<Listed> = listed(ctx, &files)
        .into_iter()
        .filter(|item| item.name == name)
        .collect();
    if items.is_empty() {
        bail!("no MCP server named {name:?} (see `zot mcp list`)");
    }
    if as_json {
        let doc: Vec<Value> = items.iter().map(Listed::details).collect();
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            outln!();
        }
        let details = item.details();
        outln!("{name}");
        let line = |label: &str, value: String| outln!("  {label:<22}{value}");
        line(
            "scope:",
            format!("{} ({})", scope_name(item.scope), display(item.path)),
        );
        line("transport:", item.transport().unwrap_or("?").to_owned());
        let state = match &item.reason {
            Some(reason) => format!("{}: {reason}", item.state),
            None => item.state.to_owned(),
        };
        line("state:", state);
        for key in ["command", "url"] {
            if let Some(value) = details.get(key) {
                line(&format!("{key}:"), text(value));
            }
        }
        if let Some(Value::Array(args)) = details.get("args") {
            let args: Vec<String> = args.iter().map(text).collect();
            line("args:", args.join(" "));
        }
        for (key, label) in [("env_keys", "env:"), ("header_names", "headers:")] {
            if let Some(Value::Array(names)) = details.get(key) {
                let names: Vec<String> = names.iter().map(text).collect();
                line(label, format!("{} (values hidden)", names.join(", ")));
            }
        }
        for key in SHOWN_OPTIONS {
            if let Some(value) = details.get(*key) {
                line(&format!("{key}:"), value.to_string());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn remove(ctx: &Context, name: &str, scope: Option<McpScope>) -> anyhow::Result<ExitCode> {
    let mut files: Vec<ServerFile> = both_files(ctx)?
        .into_iter()
        .filter(|f| scope.is_none_or(|s| s == f.scope) && f.get(name).is_some())
        .collect();
    let mut file = match files.len() {
        0 => match scope {
            Some(scope) => bail!(
                "no MCP server named {name:?} in {}",
                ServerFile::path_of(ctx, scope).display()
            ),
            None => bail!("no MCP server named {name:?} (see `zot mcp list`)"),
        },
        1 => files.remove(0),
        _ => bail!(
            "{name:?} is in both {} and {}: say which with --scope user or --scope project",
            files[0].path.display(),
            files[1].path.display()
        ),
    };
    file.servers.shift_remove(name);
    file.save(ctx)?;
    errln!("removed {name} from {}", file.path.display());
    Ok(ExitCode::SUCCESS)
}

/// A server found in another client's configuration.
struct Candidate {
    name: String,
    /// Where it was found, for the user: "Claude Code (user)", "Codex", …
    origin: String,
    entry: Map<String, Value>,
}

/// Claude Code keeps its user servers under `mcpServers` of `~/.claude.json`
/// and each project's under `projects.<path>.mcpServers`, in the same shape
/// as `.mcp.json`.
fn claude_candidates(path: &Path, out: &mut Vec<Candidate>) -> anyhow::Result<()> {
    let Some(text) = read_optional(path)? else {
        return Ok(());
    };
    let doc: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    let mut take = |servers: Option<&Value>, origin: String| {
        for (name, entry) in servers.and_then(Value::as_object).into_iter().flatten() {
            if let Value::Object(entry) = entry {
                out.push(Candidate {
                    name: name.clone(),
                    origin: origin.clone(),
                    entry: entry.clone(),
                });
            }
        }
    };
    take(doc.get(SERVERS_KEY), "Claude Code (user)".to_owned());
    for (project, settings) in doc
        .get("projects")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        take(
            settings.get(SERVERS_KEY),
            format!("Claude Code (project {project})"),
        );
    }
    Ok(())
}

/// Codex keeps its servers as `[mcp_servers.<name>]` tables of
/// `~/.codex/config.toml`; their keys are turned into `.mcp.json`'s.
fn codex_candidates(path: &Path, out: &mut Vec<Candidate>) -> anyhow::Result<()> {
    let Some(text) = read_optional(path)? else {
        return Ok(());
    };
    let doc: toml::Table = text
        .parse()
        .with_context(|| format!("{} is not valid TOML", path.display()))?;
    let Some(toml::Value::Table(servers)) = doc.get("mcp_servers") else {
        return Ok(());
    };
    for (name, server) in servers {
        let toml::Value::Table(server) = server else {
            continue;
        };
        let server = serde_json::to_value(server)?;
        if let Some(entry) = server.as_object().map(codex_entry) {
            out.push(Candidate {
                name: name.clone(),
                origin: "Codex".to_owned(),
                entry,
            });
        }
    }
    Ok(())
}

/// One Codex server table in `.mcp.json` terms.
fn codex_entry(codex: &Map<String, Value>) -> Map<String, Value> {
    let mut entry = Map::new();
    if let Some(url) = codex.get("url") {
        // Codex speaks Streamable HTTP to every URL.
        entry.insert("type".into(), json!("http"));
        entry.insert("url".into(), url.clone());
    }
    for key in ["command", "args", "env", "cwd"] {
        if let Some(value) = codex.get(key) {
            entry.insert(key.into(), value.clone());
        }
    }
    let mut headers = Map::new();
    if let Some(Value::Object(fixed)) = codex.get("http_headers") {
        headers.extend(fixed.clone());
    }
    if let Some(Value::Object(from_env)) = codex.get("env_http_headers") {
        for (header, var) in from_env {
            headers.insert(header.clone(), json!(format!("${{{}}}", text(var))));
        }
    }
    if !headers.is_empty() {
        entry.insert("headers".into(), Value::Object(headers));
    }
    if codex.get("enabled").and_then(Value::as_bool) == Some(false) {
        entry.insert("disabled".into(), json!(true));
    }
    // Older Codex releases took the startup timeout in milliseconds.
    if let Some(ms) = codex.get("startup_timeout_ms").and_then(Value::as_u64)
        && !codex.contains_key("startup_timeout_sec")
    {
        entry.insert("startup_timeout_sec".into(), json!(ms.div_ceil(1000)));
    }
    for key in [
        "startup_timeout_sec",
        "tool_timeout_sec",
        "enabled_tools",
        "disabled_tools",
        "bearer_token_env_var",
    ] {
        if let Some(value) = codex.get(key) {
            entry.insert(key.into(), value.clone());
        }
    }
    entry
}

fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Where Claude Code and Codex keep their settings: `~/.claude.json`, and
/// `$CODEX_HOME/config.toml` (default `~/.codex`).
fn import_sources() -> (Option<PathBuf>, Option<PathBuf>) {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let claude = home.as_ref().map(|h| h.join(".claude.json"));
    let codex = std::env::var_os("CODEX_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".codex")))
        .map(|dir| dir.join("config.toml"));
    (claude, codex)
}

fn import(ctx: &Context, names: &[String], all: bool, scope: McpScope) -> anyhow::Result<ExitCode> {
    let (claude, codex) = import_sources();
    let mut found = Vec::new();
    if let Some(path) = &claude {
        claude_candidates(path, &mut found)?;
    }
    if let Some(path) = &codex {
        codex_candidates(path, &mut found)?;
    }
    if found.is_empty() {
        let looked: Vec<String> = [claude, codex]
            .iter()
            .flatten()
            .map(|p| display(p))
            .collect();
        errln!("no MCP servers found (looked in {})", looked.join(" and "));
        return Ok(ExitCode::SUCCESS);
    }
    let chosen: Vec<usize> = if all {
        (0..found.len()).collect()
    } else if !names.is_empty() {
        let mut chosen = Vec::new();
        for name in names {
            let index = found
                .iter()
                .position(|c| &c.name == name)
                .with_context(|| {
                    format!("no server named {name:?} in Claude Code's or Codex's settings")
                })?;
            chosen.push(index);
        }
        chosen
    } else if std::io::stdin().is_terminal() {
        ask(&found)?
    } else {
        print_candidates(&found);
        bail!("name the servers to import (`zot mcp import <name>...`) or pass --all");
    };
    let existing: Vec<String> = both_files(ctx)?
        .iter()
        .flat_map(|f| f.servers().map(|(n, _)| n.clone()).collect::<Vec<_>>())
        .collect();
    let mut file = ServerFile::load(ctx, scope)?;
    let mut added = Vec::new();
    for index in chosen {
        let candidate = &found[index];
        let name = &candidate.name;
        if existing.contains(name) || added.contains(name) {
            errln!(
                "skipped {name} from {}: a server of that name is already configured",
                candidate.origin
            );
            continue;
        }
        if candidate.entry.is_empty() || transport_of(&candidate.entry).is_none() {
            errln!(
                "skipped {name} from {}: it has neither a command nor a URL zot can use",
                candidate.origin
            );
            continue;
        }
        file.servers
            .insert(name.clone(), Value::Object(candidate.entry.clone()));
        added.push(name.clone());
        errln!("imported {name} from {}", candidate.origin);
    }
    if added.is_empty() {
        errln!("nothing imported");
        return Ok(ExitCode::SUCCESS);
    }
    file.save(ctx)?;
    errln!("added {} server(s) to {}", added.len(), file.path.display());
    note_untrusted(ctx, scope);
    Ok(ExitCode::SUCCESS)
}

fn print_candidates(found: &[Candidate]) {
    errln!("MCP servers found:");
    for (i, candidate) in found.iter().enumerate() {
        let kind = transport_of(&candidate.entry).map_or("?", TransportKind::as_str);
        errln!(
            "  {:>2}. {} ({kind}, from {})",
            i + 1,
            candidate.name,
            candidate.origin
        );
    }
}

/// Lists the servers found and reads the user's choice from the terminal:
/// numbers, `all`, or nothing for none.
fn ask(found: &[Candidate]) -> anyhow::Result<Vec<usize>> {
    print_candidates(found);
    err!("import which? (numbers such as `1 3`, `all`, or Enter for none): ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    let answer = answer.trim();
    if answer.eq_ignore_ascii_case("all") {
        return Ok((0..found.len()).collect());
    }
    answer
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(|word| {
            word.parse::<usize>()
                .ok()
                .filter(|n| (1..=found.len()).contains(n))
                .map(|n| n - 1)
                .with_context(|| format!("{word:?} is not one of the numbers 1 to {}", found.len()))
        })
        .collect()
}

/// The URL of remote server `name` as the host would reach it (variables
/// expanded), refusing a project server of an untrusted project: its file
/// must not choose where zot signs the user in.
fn remote_url(ctx: &Context, name: &str) -> anyhow::Result<String> {
    let merged = McpConfig::load(
        &ctx.zot_home,
        &ctx.project,
        ctx.config.project_trusted,
        &config::process_env,
    );
    if let Some(error) = merged.server_errors.iter().find(|e| e.server == name) {
        bail!("{error}");
    }
    let Some((server, status)) = merged
        .servers
        .iter()
        .find(|(s, status)| s.name == name && !matches!(status, ServerStatus::Shadowed { .. }))
    else {
        bail!("no MCP server named {name:?} (see `zot mcp list`)");
    };
    if *status == ServerStatus::Untrusted {
        bail!(
            "mcp:{name} comes from this project's {PROJECT_FILE}, which is not trusted: run `zot trust` first"
        );
    }
    match &server.transport {
        Transport::Http(remote) | Transport::Sse(remote) => Ok(remote.url.clone()),
        Transport::Stdio { .. } => {
            bail!("mcp:{name} is a stdio server: only remote (http or sse) servers sign in")
        }
    }
}

fn login(ctx: &Context, name: &str) -> anyhow::Result<ExitCode> {
    let url = remote_url(ctx, name)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(oauth::login(&ctx.zot_home, name, &url, open_browser))?;
    errln!(
        "signed in to {name}; the tokens are in {}",
        oauth::token_path(&ctx.zot_home, name).display()
    );
    Ok(ExitCode::SUCCESS)
}

fn logout(ctx: &Context, name: &str) -> anyhow::Result<ExitCode> {
    if oauth::logout(&ctx.zot_home, name)? {
        errln!("removed the stored login of {name}");
    } else {
        errln!("no stored login for {name}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Shows the authorization URL and opens it with `$BROWSER` when that is
/// set. The browser runs on its own; the login waits for the redirect, not
/// for it.
fn open_browser(url: &str) {
    errln!("to sign in, open this URL in a browser:\n\n  {url}\n");
    match zot_mcp::oauth::open_with_browser(url) {
        Ok(Some(_)) => errln!("(opened with $BROWSER; waiting for the sign-in to finish)"),
        Ok(None) => {}
        Err(e) => errln!("zot: warning: {e}"),
    }
}
