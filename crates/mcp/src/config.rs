//! The single source of MCP server configuration: the serde types of
//! `.mcp.json` (project) and `$ZOT_HOME/mcp.json` (user), `${VAR}` expansion,
//! validation, and the resolved [`McpServer`] the adapter starts. Anything
//! that reads or writes these files (the host, `zot mcp ...`) goes through here.
//!
//! The file format is the one Claude Code reads, so a user's existing file
//! works unmodified; the options Codex users know (`enabled_tools`,
//! `startup_timeout_sec`, ...) are accepted per server beside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use zot_extensions::Scope;

/// The project file: `<project>/.mcp.json`, the name Claude Code uses.
pub const PROJECT_FILE: &str = ".mcp.json";
/// The user file: `$ZOT_HOME/mcp.json`.
pub const USER_FILE: &str = "mcp.json";

/// Default `startup_timeout_sec`: `npx`/`uvx` cold starts download
/// packages and routinely take longer than 10 s.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `tool_timeout_sec`: the budget of one whole tool call;
/// progress notifications do not reset it.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest timeout a file may ask for (one day): anything longer is a typo,
/// and `Duration` must not overflow when the agent adds it to `Instant::now()`.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);
/// Largest config file read (4 MiB): these files hold a few servers; a bigger
/// one is a mistake, and reading it whole must not exhaust memory.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Longest server name: it becomes part of tool names (`mcp__<server>__<tool>`,
/// which providers cap at 64 characters) and of a log file name.
pub const MAX_NAME_LEN: usize = 64;

/// A whole `mcp.json` / `.mcp.json` file. Keys other than `mcpServers` are
/// kept, so a tool that rewrites the file (`zot mcp add`) loses nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct McpFile {
    /// Server name → entry, in file order (later servers lose name collisions).
    #[serde(rename = "mcpServers", default)]
    pub mcp_servers: IndexMap<String, serde_json::Value>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// How a server is reached: the `type` field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// A subprocess speaking newline-delimited JSON-RPC on stdin/stdout (the default).
    #[default]
    Stdio,
    /// Streamable HTTP (MCP 2025-03-26 and later).
    #[serde(
        alias = "streamable-http",
        alias = "streamable_http",
        alias = "streamableHttp"
    )]
    Http,
    /// The legacy HTTP+SSE transport (MCP 2024-11-05).
    Sse,
}

impl TransportKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
            Self::Sse => "sse",
        }
    }
}

/// One server entry as written in the file, before expansion and validation.
/// Flat like the file: which fields apply depends on `type`. Unknown fields
/// (other tools' options) are kept in `other` and ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerEntry {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<TransportKind>,
    // stdio
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    // http / sse
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    // every transport
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_sec: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout_sec: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<bool>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

impl ServerEntry {
    /// The transport, `stdio` when `type` is absent.
    pub fn transport_kind(&self) -> TransportKind {
        self.kind.unwrap_or_default()
    }

    /// `disabled: true` or `enabled: false` turns a server off; either wins.
    pub fn is_enabled(&self) -> bool {
        self.disabled != Some(true) && self.enabled != Some(false)
    }
}

/// A server ready to start: variables expanded, paths absolute, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub name: String,
    /// `Global` for `$ZOT_HOME/mcp.json`, `Project` for `.mcp.json`.
    pub scope: Scope,
    /// The file it came from.
    pub source: PathBuf,
    pub transport: McpTransport,
    pub enabled: bool,
    pub tools: ToolFilter,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Whether `sampling/createMessage` may reach the model (after the user agrees).
    pub sampling: bool,
}

impl McpServer {
    /// `mcp:<name>`: how `zot ext list|doctor|logs|enable|disable` name it.
    pub fn ext_name(&self) -> String {
        ext_name(&self.name)
    }
}

/// `mcp:<name>`, the extension name of MCP server `name`.
pub fn ext_name(server: &str) -> String {
    zot_extensions::ecosystem::ext_name(crate::KIND, server)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to (not replacing) the environment the child inherits.
        env: BTreeMap<String, String>,
        /// Absolute; `None` runs it in the project directory.
        cwd: Option<PathBuf>,
    },
    Http(Remote),
    Sse(Remote),
}

impl McpTransport {
    pub fn kind(&self) -> TransportKind {
        match self {
            Self::Stdio { .. } => TransportKind::Stdio,
            Self::Http(_) => TransportKind::Http,
            Self::Sse(_) => TransportKind::Sse,
        }
    }

    /// The server's URL when it is reached over HTTP.
    pub fn url(&self) -> Option<&str> {
        match self {
            Self::Stdio { .. } => None,
            Self::Http(remote) | Self::Sse(remote) => Some(&remote.url),
        }
    }
}

/// An HTTP server (Streamable HTTP or legacy SSE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub url: String,
    /// Sent with every request, in file order.
    pub headers: Vec<(String, String)>,
    /// The environment variable holding a bearer token, read when connecting
    /// (so the token itself is never part of the configuration).
    pub bearer_token_env_var: Option<String>,
}

/// Which of a server's tools the agent sees: `enabled_tools` (when given) is
/// an allow list, `disabled_tools` a deny list applied after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    pub enabled: Option<Vec<String>>,
    pub disabled: Vec<String>,
}

impl ToolFilter {
    /// Whether the server's tool `name` (its own name, before prefixing) is offered.
    pub fn allows(&self, name: &str) -> bool {
        self.enabled
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == name))
            && !self.disabled.iter().any(|t| t == name)
    }
}

/// A whole file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path} is larger than {MAX_FILE_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("{path} is not valid JSON: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Shape { path: PathBuf, message: String },
}

/// One server entry that could not be used; the other servers still load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mcp:{server} ({path}): {message}")]
pub struct ServerError {
    pub server: String,
    pub path: PathBuf,
    pub message: String,
}

/// What loading one file gave: its servers in file order, and the entries that failed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    pub servers: Vec<McpServer>,
    pub errors: Vec<ServerError>,
}

/// Parses a file's text. Only the top level is checked here; each entry is
/// checked by [`resolve`], so one bad server does not hide the others.
pub fn parse(text: &str) -> Result<McpFile, serde_json::Error> {
    serde_json::from_str(text)
}

/// Reads `path` (size-capped). A missing file is `Ok(None)`.
pub fn read(path: &Path) -> Result<Option<McpFile>, FileError> {
    let Some(doc) = read_object(path)? else {
        return Ok(None);
    };
    serde_json::from_value(serde_json::Value::Object(doc))
        .map(Some)
        .map_err(|e| FileError::Shape {
            path: path.to_path_buf(),
            message: format!("`mcpServers` must be an object of server entries ({e})"),
        })
}

/// Reads `path` (size-capped) as the JSON object it holds, in file order, for
/// editors that must keep every key where it was (`zot mcp add|remove`).
/// A missing file is `Ok(None)`; an empty one is an empty object.
pub fn read_object(
    path: &Path,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, FileError> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(FileError::Read {
                path: path.to_path_buf(),
                message: e.to_string(),
            });
        }
    };
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| FileError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    if text.trim().is_empty() {
        return Ok(Some(serde_json::Map::new()));
    }
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| FileError::Syntax {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    match value {
        serde_json::Value::Object(doc) => Ok(Some(doc)),
        _ => Err(FileError::Shape {
            path: path.to_path_buf(),
            message: "the file must hold a JSON object".to_owned(),
        }),
    }
}

/// Writes `file` to `path` atomically (temp file + rename), pretty-printed.
pub fn write(path: &Path, file: &McpFile) -> std::io::Result<()> {
    match serde_json::to_value(file).map_err(std::io::Error::other)? {
        serde_json::Value::Object(doc) => write_object(path, &doc),
        _ => Err(std::io::Error::other("an McpFile serialises to an object")),
    }
}

/// Writes `doc` to `path` atomically (temp file + rename), pretty-printed,
/// keys in the map's order.
pub fn write_object(
    path: &Path,
    doc: &serde_json::Map<String, serde_json::Value>,
) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(doc).map_err(std::io::Error::other)?;
    text.push('\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    zot_extensions::atomic_file::write_atomically(path, text.as_bytes())
}

/// Turns server `name` of the file at `path` on or off: `disabled: true`
/// when off, neither `disabled` nor `enabled: false` when on. Everything
/// else in the file is kept. Errors when the file has no such server.
pub fn set_enabled(path: &Path, name: &str, enabled: bool) -> Result<(), FileError> {
    let shape = |message: String| FileError::Shape {
        path: path.to_path_buf(),
        message,
    };
    let mut file = read(path)?.ok_or_else(|| shape(format!("has no server {name:?}")))?;
    let entry = file
        .mcp_servers
        .get_mut(name)
        .ok_or_else(|| shape(format!("has no server {name:?}")))?;
    let map = entry
        .as_object_mut()
        .ok_or_else(|| shape(format!("server {name:?} is not an object")))?;
    map.remove("enabled");
    if enabled {
        map.remove("disabled");
    } else {
        map.insert("disabled".to_owned(), serde_json::Value::Bool(true));
    }
    write(path, &file).map_err(|e| FileError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Loads `path` as a file of `scope`, expanding variables with `env`.
pub fn load(
    path: &Path,
    scope: Scope,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Loaded, FileError> {
    let Some(file) = read(path)? else {
        return Ok(Loaded::default());
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let mut loaded = Loaded::default();
    for (name, value) in &file.mcp_servers {
        match resolve(name, value, scope, path, base, env) {
            Ok(server) => loaded.servers.push(server),
            Err(message) => loaded.errors.push(ServerError {
                server: name.clone(),
                path: path.to_path_buf(),
                message,
            }),
        }
    }
    Ok(loaded)
}

/// Checks and resolves one entry. `base` is the directory relative `cwd`s are
/// taken from (the file's). The error is a message for the user.
pub fn resolve(
    name: &str,
    value: &serde_json::Value,
    scope: Scope,
    source: &Path,
    base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<McpServer, String> {
    check_name(name)?;
    let entry: ServerEntry = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    let field = |what: &str, text: &str| -> Result<String, String> {
        expand(text, env).map_err(|e| format!("{what}: {e}"))
    };
    let transport = match entry.transport_kind() {
        TransportKind::Stdio => {
            let command = entry
                .command
                .as_deref()
                .ok_or("a stdio server needs `command` (or set `type` to `http` or `sse`)")?;
            let command = field("command", command)?;
            if command.trim().is_empty() {
                return Err("`command` is empty".to_owned());
            }
            let args = entry
                .args
                .iter()
                .enumerate()
                .map(|(i, arg)| field(&format!("args[{i}]"), arg))
                .collect::<Result<_, _>>()?;
            let env_vars = entry
                .env
                .iter()
                .map(|(key, value)| Ok((key.clone(), field(&format!("env.{key}"), value)?)))
                .collect::<Result<_, String>>()?;
            let cwd = match &entry.cwd {
                None => None,
                Some(dir) => Some(base.join(field("cwd", dir)?)),
            };
            McpTransport::Stdio {
                command,
                args,
                env: env_vars,
                cwd,
            }
        }
        kind @ (TransportKind::Http | TransportKind::Sse) => {
            let url = entry
                .url
                .as_deref()
                .ok_or_else(|| format!("a {} server needs `url`", kind.as_str()))?;
            let url = field("url", url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("`url` must start with http:// or https://: {url}"));
            }
            let headers = entry
                .headers
                .iter()
                .map(|(key, value)| Ok((key.clone(), field(&format!("headers.{key}"), value)?)))
                .collect::<Result<_, String>>()?;
            let remote = Remote {
                url,
                headers,
                bearer_token_env_var: entry.bearer_token_env_var.clone(),
            };
            if kind == TransportKind::Http {
                McpTransport::Http(remote)
            } else {
                McpTransport::Sse(remote)
            }
        }
    };
    Ok(McpServer {
        name: name.to_owned(),
        scope,
        source: source.to_path_buf(),
        transport,
        enabled: entry.is_enabled(),
        tools: ToolFilter {
            enabled: entry.enabled_tools.clone(),
            disabled: entry.disabled_tools.clone(),
        },
        startup_timeout: timeout(
            "startup_timeout_sec",
            entry.startup_timeout_sec,
            DEFAULT_STARTUP_TIMEOUT,
        )?,
        tool_timeout: timeout(
            "tool_timeout_sec",
            entry.tool_timeout_sec,
            DEFAULT_TOOL_TIMEOUT,
        )?,
        sampling: entry.sampling == Some(true),
    })
}

/// Server names: 1 to [`MAX_NAME_LEN`] characters of `[A-Za-z0-9_.-]`, not
/// starting with a dot: they become part of tool names and of a log file name.
pub fn check_name(name: &str) -> Result<(), String> {
    let valid_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if name.is_empty() || name.len() > MAX_NAME_LEN || !valid_chars || name.starts_with('.') {
        return Err(format!(
            "invalid server name {name:?}: use 1 to {MAX_NAME_LEN} letters, digits, `_`, `-` or `.`"
        ));
    }
    Ok(())
}

fn timeout(field: &str, secs: Option<f64>, default: Duration) -> Result<Duration, String> {
    let Some(secs) = secs else {
        return Ok(default);
    };
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() && d <= MAX_TIMEOUT => Ok(d),
        _ => Err(format!(
            "`{field}` must be a number of seconds above 0 and at most {}, not {secs}",
            MAX_TIMEOUT.as_secs()
        )),
    }
}

/// A `${...}` that could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error("environment variable {0} is not set (write ${{{0}:-default}} to give a default)")]
    Missing(String),
    #[error("unterminated `${{` at byte {0}")]
    Unterminated(usize),
    #[error("invalid variable name {0:?} in `${{...}}`")]
    BadName(String),
}

/// Expands `${VAR}` and `${VAR:-default}` (the default is used when VAR is
/// unset or empty, as in the shell). Everything else, `$VAR` included, is literal.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut offset = 0;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let body_start = start + 2;
        let Some(len) = rest[body_start..].find('}') else {
            return Err(ExpandError::Unterminated(offset + start));
        };
        let body = &rest[body_start..body_start + len];
        let (var, default) = match body.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (body, None),
        };
        let valid = !var.is_empty()
            && !var.starts_with(|c: char| c.is_ascii_digit())
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ExpandError::BadName(var.to_owned()));
        }
        match (env(var).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Missing(var.to_owned())),
        }
        let consumed = body_start + len + 1;
        offset += consumed;
        rest = &rest[consumed..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The process environment as [`expand`] wants it.
pub fn process_env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// `$ZOT_HOME/mcp.json`.
pub fn user_path(zot_home: &Path) -> PathBuf {
    zot_home.join(USER_FILE)
}

/// `<project>/.mcp.json`.
pub fn project_path(project: &Path) -> PathBuf {
    project.join(PROJECT_FILE)
}

/// The project files a `.mcp.json` names to run (a `command` or argument that
/// is a file in the project, like `node ./tools/server.js`, and the module
/// of `python3 -m srv`), for the trust
/// fingerprint: changing them changes what a trusted file runs. Read raw,
/// without expansion, so the fingerprint never depends on the environment.
pub fn project_files_run(path: &Path, project: &Path) -> Vec<PathBuf> {
    let Ok(Some(file)) = read(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for value in file.mcp_servers.values() {
        let Ok(entry) = serde_json::from_value::<ServerEntry>(value.clone()) else {
            continue;
        };
        let base = entry
            .cwd
            .as_deref()
            .map_or_else(|| project.to_path_buf(), |cwd| project.join(cwd));
        let words = entry.command.iter().chain(&entry.args);
        let unexpanded = words.map(String::as_str).filter(|w| !w.contains("${"));
        out.extend(zot_extensions::pins::named(unexpanded, &base));
    }
    out
}

/// Where a server of the merged configuration stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerStatus {
    /// Enabled, trusted and not shadowed: to be started.
    Load,
    /// `disabled: true` / `enabled: false`.
    Disabled,
    /// From `.mcp.json` in a project the user has not trusted: listed, never started.
    Untrusted,
    /// A project server of the same name replaces this user one.
    Shadowed { by: PathBuf },
}

/// Both files merged: project servers first (they win a name), then the
/// user's; each with its status, plus every error met on the way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpConfig {
    pub servers: Vec<(McpServer, ServerStatus)>,
    pub file_errors: Vec<FileError>,
    pub server_errors: Vec<ServerError>,
}

impl McpConfig {
    /// Loads `<project>/.mcp.json` and `$ZOT_HOME/mcp.json`. A project file
    /// is read even when untrusted (so it can be listed), but none of its
    /// servers gets status [`ServerStatus::Load`] until the project is trusted.
    pub fn load(
        zot_home: &Path,
        project: &Path,
        project_trusted: bool,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Self {
        let mut config = Self::default();
        let mut claimed: BTreeMap<String, PathBuf> = BTreeMap::new();
        let files = [
            (project_path(project), Scope::Project),
            (user_path(zot_home), Scope::Global),
        ];
        for (path, scope) in files {
            let loaded = match load(&path, scope, env) {
                Ok(loaded) => loaded,
                Err(e) => {
                    config.file_errors.push(e);
                    continue;
                }
            };
            config.server_errors.extend(loaded.errors);
            for server in loaded.servers {
                let status = if !server.enabled {
                    ServerStatus::Disabled
                } else if scope == Scope::Project && !project_trusted {
                    ServerStatus::Untrusted
                } else if let Some(by) = claimed.get(&server.name) {
                    ServerStatus::Shadowed { by: by.clone() }
                } else {
                    claimed.insert(server.name.clone(), path.clone());
                    ServerStatus::Load
                };
                config.servers.push((server, status));
            }
        }
        config
    }

    /// The servers to start.
    pub fn to_start(&self) -> impl Iterator<Item = &McpServer> {
        self.servers
            .iter()
            .filter(|(_, status)| *status == ServerStatus::Load)
            .map(|(server, _)| server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn env(key: &str) -> Option<String> {
        match key {
            "HOME_DIR" => Some("/home/u".to_owned()),
            "TOKEN" => Some("secret".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn resolve_json(json: &str) -> Result<McpServer, String> {
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        resolve(
            "srv",
            &value,
            Scope::Global,
            Path::new("/p/mcp.json"),
            Path::new("/p"),
            &env,
        )
    }

    #[test]
    fn expansion_handles_defaults_and_names_missing_variables() {
        assert_eq!(expand("a${HOME_DIR}/b", &env).unwrap(), "a/home/u/b");
        assert_eq!(expand("${NOPE:-x:y}", &env).unwrap(), "x:y");
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(
            expand("$HOME_DIR ${TOKEN}", &env).unwrap(),
            "$HOME_DIR secret"
        );
        assert_eq!(
            expand("${NOPE}", &env),
            Err(ExpandError::Missing("NOPE".to_owned()))
        );
        assert_eq!(expand("x${A", &env), Err(ExpandError::Unterminated(1)));
        assert_eq!(
            expand("${1A}", &env),
            Err(ExpandError::BadName("1A".to_owned()))
        );
    }

    #[test]
    fn stdio_is_the_default_and_fields_are_expanded() {
        let server = resolve_json(
            r#"{"command": "npx", "args": ["-y", "${HOME_DIR}"], "env": {"K": "${TOKEN}"}, "cwd": "sub", "tool_timeout_sec": 5}"#,
        )
        .unwrap();
        assert_eq!(
            server.transport,
            McpTransport::Stdio {
                command: "npx".to_owned(),
                args: vec!["-y".to_owned(), "/home/u".to_owned()],
                env: BTreeMap::from([("K".to_owned(), "secret".to_owned())]),
                cwd: Some(PathBuf::from("/p/sub")),
            }
        );
        assert_eq!(server.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(server.tool_timeout, Duration::from_secs(5));
        assert!(server.enabled && !server.sampling);
    }

    #[test]
    fn remote_servers_and_options() {
        let server = resolve_json(
            r#"{"type": "http", "url": "https://x/${NOPE:-mcp}", "headers": {"Authorization": "Bearer ${TOKEN}"}, "enabled": false, "enabled_tools": ["a", "b"], "disabled_tools": ["b"], "sampling": true}"#,
        )
        .unwrap();
        let McpTransport::Http(remote) = &server.transport else {
            panic!("not http: {server:?}");
        };
        assert_eq!(remote.url, "https://x/mcp");
        assert_eq!(
            remote.headers,
            vec![("Authorization".to_owned(), "Bearer secret".to_owned())]
        );
        assert!(!server.enabled && server.sampling);
        assert!(server.tools.allows("a") && !server.tools.allows("b") && !server.tools.allows("c"));
        let sse = resolve_json(r#"{"type": "sse", "url": "http://h/sse"}"#).unwrap();
        assert_eq!(sse.transport.kind(), TransportKind::Sse);
    }

    #[test]
    fn bad_entries_say_what_is_wrong() {
        let err = resolve_json(r#"{"command": "x", "env": {"A": "${MISSING_VAR}"}}"#).unwrap_err();
        assert!(
            err.contains("env.A") && err.contains("MISSING_VAR"),
            "{err}"
        );
        let err = resolve_json(r#"{"type": "http"}"#).unwrap_err();
        assert!(err.contains("url"), "{err}");
        let err = resolve_json(r#"{"args": []}"#).unwrap_err();
        assert!(err.contains("command"), "{err}");
        let err = resolve_json(r#"{"command": "x", "startup_timeout_sec": -1}"#).unwrap_err();
        assert!(err.contains("startup_timeout_sec"), "{err}");
        let err = resolve_json(r#"{"type": "carrier-pigeon", "url": "x"}"#).unwrap_err();
        assert!(err.contains("carrier-pigeon"), "{err}");
        assert!(
            check_name("a/b").is_err()
                && check_name("").is_err()
                && check_name("ok.name-1").is_ok()
        );
    }

    #[test]
    fn merged_config_gates_the_project_file_and_lets_it_win_names() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        let user = McpFile {
            mcp_servers: IndexMap::from([
                ("shared".to_owned(), serde_json::json!({"command": "u"})),
                (
                    "mine".to_owned(),
                    serde_json::json!({"command": "m", "disabled": true}),
                ),
                (
                    "broken".to_owned(),
                    serde_json::json!({"command": "${NOT_SET_ANYWHERE}"}),
                ),
            ]),
            other: serde_json::Map::new(),
        };
        write(&user_path(&home), &user).unwrap();
        std::fs::write(
            project_path(&project),
            r#"{"mcpServers": {"shared": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}, "extra": 1}"#,
        )
        .unwrap();
        assert_eq!(read(&user_path(&home)).unwrap().unwrap(), user);

        let untrusted = McpConfig::load(&home, &project, false, &env);
        let statuses: Vec<_> = untrusted
            .servers
            .iter()
            .map(|(s, st)| (s.name.as_str(), s.scope, st.clone()))
            .collect();
        assert_eq!(
            statuses,
            vec![
                ("shared", Scope::Project, ServerStatus::Untrusted),
                ("shared", Scope::Global, ServerStatus::Load),
                ("mine", Scope::Global, ServerStatus::Disabled),
            ]
        );
        assert_eq!(untrusted.server_errors.len(), 1);
        assert!(
            untrusted.server_errors[0]
                .to_string()
                .contains("NOT_SET_ANYWHERE")
        );

        let trusted = McpConfig::load(&home, &project, true, &env);
        let started: Vec<_> = trusted.to_start().map(|s| s.scope).collect();
        assert_eq!(started, vec![Scope::Project]);
        assert!(matches!(
            trusted.servers[1].1,
            ServerStatus::Shadowed { .. }
        ));

        set_enabled(&user_path(&home), "mine", true).unwrap();
        set_enabled(&user_path(&home), "shared", false).unwrap();
        let reread = read(&user_path(&home)).unwrap().unwrap();
        assert_eq!(
            reread.mcp_servers["mine"],
            serde_json::json!({"command": "m"})
        );
        assert_eq!(
            reread.mcp_servers["shared"],
            serde_json::json!({"command": "u", "disabled": true})
        );
        assert!(set_enabled(&user_path(&home), "nope", true).is_err());

        std::fs::write(project_path(&project), "{not json").unwrap();
        let broken = McpConfig::load(&home, &project, true, &env);
        assert!(matches!(broken.file_errors[..], [FileError::Syntax { .. }]));
        assert_eq!(broken.to_start().count(), 1);
    }

    proptest! {
        #[test]
        fn expansion_never_panics(text in ".{0,64}") {
            let _ = expand(&text, &env);
        }

        #[test]
        fn parsing_never_panics(text in ".{0,256}") {
            if let Ok(file) = parse(&text) {
                for (name, value) in &file.mcp_servers {
                    let _ = resolve(name, value, Scope::Project, Path::new("/p/.mcp.json"), Path::new("/p"), &env);
                }
            }
        }

        #[test]
        fn any_json_entry_resolves_or_errors_without_panicking(
            value in arb_json(),
            name in "[a-z.:/_-]{0,8}",
        ) {
            let _ = resolve(&name, &value, Scope::Global, Path::new("/p/mcp.json"), Path::new("/p"), &env);
            let file = serde_json::json!({"mcpServers": {name.clone(): value}});
            let _ = parse(&file.to_string());
        }
    }

    /// Arbitrary JSON biased towards the fields a server entry has.
    fn arb_json() -> impl Strategy<Value = serde_json::Value> {
        let key = prop_oneof![
            Just("type".to_owned()),
            Just("command".to_owned()),
            Just("args".to_owned()),
            Just("env".to_owned()),
            Just("url".to_owned()),
            Just("headers".to_owned()),
            Just("cwd".to_owned()),
            Just("startup_timeout_sec".to_owned()),
            Just("tool_timeout_sec".to_owned()),
            Just("enabled_tools".to_owned()),
            Just("disabled".to_owned()),
            "[a-z]{1,4}",
        ];
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            prop_oneof![
                Just("http".to_owned()),
                Just("sse".to_owned()),
                Just("https://h/${X:-y}".to_owned()),
                ".{0,12}"
            ]
            .prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|m| { serde_json::Value::Object(m.into_iter().collect()) }),
            ]
        })
    }
}
