//! `extension.json`: reading and validating a manifest. Every error names the
//! file and, where one is at fault, the field.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::adapted::Adapted;

/// The manifest file name inside an extension directory.
pub const MANIFEST_FILE: &str = "extension.json";

/// A valid manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The manifest file.
    pub path: PathBuf,
    /// The extension directory (absolute when the path given to [`Manifest::load`] was).
    pub dir: PathBuf,
    pub name: String,
    pub version: Option<String>,
    pub language: Option<String>,
    pub description: Option<String>,
    /// Skill directories or `SKILL.md` paths, relative to the manifest.
    pub skills: Vec<String>,
    pub enabled: bool,
    pub launch: Launch,
    /// The `permissions` field: the scope the extension asks to run in
    /// (`None`: absent, which means full user privileges unless the
    /// user's policy says otherwise).
    pub permissions: Option<zot_sandbox::Scope>,
    /// What this extension's interceptors decide while it cannot answer.
    pub on_failure: OnFailure,
    /// Things worth telling the user that do not make the manifest invalid.
    pub warnings: Vec<String>,
}

/// Which protocol an extension speaks, decided by its manifest (never by
/// waiting for a first frame: a nimlet extension waits for the host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `exec` string: the extension speaks first (`hello`).
    Zot,
    /// `command` array: the host speaks first (`initialize`).
    Nimlet,
    /// Spoken by an installed ecosystem's own adapter, by its kind label
    /// (`crate::ecosystem`): configured in the ecosystem's files, no manifest.
    Adapted(&'static str),
}

impl Dialect {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Zot => "zot",
            Self::Nimlet => "nimlet",
            Self::Adapted(kind) => kind,
        }
    }
}

/// What an interceptor decides when its extension cannot answer (it is
/// down, reconnecting, crashed, timed out or replied nonsense): the
/// manifest's `on_failure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Go on as if it allowed, with a warning (the default, fail-open).
    #[default]
    Allow,
    /// Refuse what it was asked about (a guard that must never be skipped).
    Block,
}

impl OnFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Block => "block",
        }
    }
}

/// An extension served over the network: the manifest's `url` and
/// `headers` as written (`${VAR}` expanded only when connecting, see
/// [`crate::remote`]) and the protocol spoken over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub url: String,
    /// Header names and values, in manifest order.
    pub headers: Vec<(String, String)>,
    pub protocol: Dialect,
    /// nimlet's reply timeout (`None`: wait forever); unused for zot.
    pub timeout: Option<Duration>,
}

/// Default nimlet `response_timeout_seconds` (nimlet spec, "The manifest").
pub const NIMLET_DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How an extension runs, if at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// A zot-protocol subprocess.
    Process { exec: String, args: Vec<String> },
    /// A nimlet-protocol subprocess: argv, and the reply timeout (`None`: wait forever).
    Nimlet {
        command: Vec<String>,
        timeout: Option<Duration>,
    },
    /// An entry of an installed ecosystem, run through its adapter.
    Adapted(Adapted),
    /// A zot or nimlet extension reached over WebSocket or HTTP.
    Remote(Remote),
    /// Ships `theme.json` or `themes/theme.json` only; never spawned.
    ThemeBundle,
    /// Ships `skills` only; never spawned.
    SkillBundle,
}

impl Manifest {
    /// Whether this manifest asks for a running extension: a subprocess,
    /// or a remote one (both have a log and a connection).
    pub fn is_process(&self) -> bool {
        matches!(
            self.launch,
            Launch::Process { .. } | Launch::Nimlet { .. } | Launch::Adapted(_) | Launch::Remote(_)
        )
    }

    /// The remote extension's settings, when it has a `url`.
    pub fn remote(&self) -> Option<&Remote> {
        match &self.launch {
            Launch::Remote(remote) => Some(remote),
            _ => None,
        }
    }

    /// The URL of an extension reached over the network (a remote zot or
    /// nimlet extension, an ecosystem's over HTTP): the host reconnects
    /// these when they drop, where a lost process waits for a reload.
    pub fn network_url(&self) -> Option<&str> {
        match &self.launch {
            Launch::Remote(remote) => Some(&remote.url),
            Launch::Adapted(adapted) => adapted.url.as_deref(),
            _ => None,
        }
    }

    /// The program to start and its arguments, resolved against `dir` (the
    /// extension directory) as the manifest's protocol says; `None` for
    /// bundles and for an empty `command`.
    pub fn program(&self, dir: &Path) -> Option<(PathBuf, &[String])> {
        match &self.launch {
            Launch::Process { exec, args } => Some((resolve_exec(dir, exec), args.as_slice())),
            Launch::Nimlet { command, .. } => command
                .split_first()
                .map(|(first, rest)| (resolve_nimlet(dir, first), rest)),
            Launch::Adapted(_) | Launch::Remote(_) | Launch::ThemeBundle | Launch::SkillBundle => {
                None
            }
        }
    }

    /// The protocol of a process or remote manifest.
    pub fn dialect(&self) -> Option<Dialect> {
        match &self.launch {
            Launch::Process { .. } => Some(Dialect::Zot),
            Launch::Nimlet { .. } => Some(Dialect::Nimlet),
            Launch::Adapted(adapted) => Some(Dialect::Adapted(adapted.kind)),
            Launch::Remote(remote) => Some(remote.protocol),
            _ => None,
        }
    }

    /// Reads `<dir>/extension.json` found under a zot root.
    pub fn load(dir: &Path) -> Result<Self, ManifestError> {
        Self::load_in(dir, Dialect::Zot)
    }

    /// Reads `<dir>/extension.json` found under a root of `root` dialect,
    /// which decides a manifest that has both `exec` and `command`, and
    /// which error a manifest with neither gets.
    pub fn load_in(dir: &Path, root: Dialect) -> Result<Self, ManifestError> {
        let path = dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ManifestError::new(&path, None, format!("cannot read: {e}")))?;
        Self::parse_in(dir, &path, &text, root)
    }

    /// Validates manifest text read from `path` (in extension directory `dir`) under a zot root.
    pub fn parse(dir: &Path, path: &Path, text: &str) -> Result<Self, ManifestError> {
        Self::parse_in(dir, path, text, Dialect::Zot)
    }

    /// Validates manifest text read from `path` under a root of `root` dialect.
    pub fn parse_in(
        dir: &Path,
        path: &Path,
        text: &str,
        root: Dialect,
    ) -> Result<Self, ManifestError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| ManifestError::new(path, None, format!("invalid JSON: {e}")))?;
        let Value::Object(map) = value else {
            return Err(ManifestError::new(path, None, "must be a JSON object"));
        };
        let fields = Fields { path, map: &map };

        let mut warnings = Vec::new();
        let has_exec = map.contains_key("exec");
        let has_command = map.contains_key("command");
        if map.contains_key("url") {
            return remote_manifest(dir, &fields, root);
        }
        for field in ["headers", "protocol"] {
            if map.contains_key(field) {
                return Err(
                    fields.error(field, "is only for a remote extension (one with \"url\")")
                );
            }
        }
        let on_failure = on_failure(&fields)?;
        let dialect = match (has_exec, has_command) {
            (true, true) => {
                warnings.push(format!(
                    "{}: has both \"exec\" (zot) and \"command\" (nimlet); treated as {} because of where it was found",
                    path.display(),
                    root.as_str()
                ));
                root
            }
            (false, true) => Dialect::Nimlet,
            (true, false) => Dialect::Zot,
            (false, false) => root,
        };
        let name = match (dialect, map.get("name")) {
            // nimlet trims the name and reports any non-string as missing (research E2).
            (Dialect::Nimlet, Some(Value::String(n))) if !n.trim().is_empty() => {
                n.trim().to_owned()
            }
            (Dialect::Nimlet, _) => return Err(fields.error("name", "missing name")),
            (Dialect::Zot | Dialect::Adapted(_), _) => fields
                .string("name")?
                .ok_or_else(|| fields.error("name", "is required"))?,
        };
        validate_name(&name).map_err(|why| fields.error("name", why))?;
        let exec = fields.string("exec")?;
        let args = fields.strings("args")?;
        let skills = fields.strings("skills")?;
        let enabled = match map.get("enabled") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(fields.error("enabled", "must be true or false")),
        };

        let launch = match exec {
            _ if dialect == Dialect::Nimlet && (has_command || !has_theme(dir)) => {
                nimlet_launch(&fields)?
            }
            Some(exec) if exec.trim().is_empty() => {
                return Err(fields.error("exec", "must not be empty"));
            }
            Some(exec) => Launch::Process {
                exec,
                args: args.unwrap_or_default(),
            },
            None if has_theme(dir) => Launch::ThemeBundle,
            None if skills.as_ref().is_some_and(|s| !s.is_empty()) => Launch::SkillBundle,
            None => {
                return Err(fields.error(
                    "exec",
                    "is required (unless the directory only ships theme.json or skills)",
                ));
            }
        };

        let permissions = match map.get("permissions") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                zot_sandbox::Scope::parse(value)
                    .map_err(|e| fields.error("permissions", e.to_string()))?,
            ),
        };

        Ok(Self {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
            name,
            version: fields.string("version")?,
            language: fields.string("language")?,
            description: fields.string("description")?,
            skills: skills.unwrap_or_default(),
            enabled,
            launch,
            permissions,
            on_failure,
            warnings,
        })
    }
}

/// A manifest with `url`: exactly one of `exec`/`command` and `url`; the
/// protocol is `protocol` or the root's.
fn remote_manifest(
    dir: &Path,
    fields: &Fields<'_>,
    root: Dialect,
) -> Result<Manifest, ManifestError> {
    let map = fields.map;
    for field in ["exec", "command"] {
        if map.contains_key(field) {
            return Err(fields.error(
                field,
                "cannot be given with \"url\": an extension is either started here (exec/command) or reached at a url",
            ));
        }
    }
    if map.contains_key("permissions") {
        return Err(fields.error(
            "permissions",
            "is only for an extension zot starts (exec/command); a remote one runs on its server",
        ));
    }
    let name = fields
        .string("name")?
        .ok_or_else(|| fields.error("name", "is required"))?;
    validate_name(&name).map_err(|why| fields.error("name", why))?;
    let protocol = match fields.string("protocol")?.as_deref() {
        None if root == Dialect::Nimlet => Dialect::Nimlet,
        None => Dialect::Zot,
        Some("zot") => Dialect::Zot,
        Some("nimlet") => Dialect::Nimlet,
        Some(other) => {
            return Err(fields.error(
                "protocol",
                format!("must be \"zot\" or \"nimlet\" (got {other:?})"),
            ));
        }
    };
    let url = fields
        .string("url")?
        .ok_or_else(|| fields.error("url", "must be a string"))?;
    crate::placeholders::check_url_text(&url).map_err(|why| fields.error("url", why))?;
    let headers = match map.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(items)) => items
            .iter()
            .map(|(name, value)| match value {
                Value::String(value) => {
                    crate::placeholders::check_header_text(name, value)
                        .map_err(|why| fields.error("headers", why))?;
                    Ok((name.clone(), value.clone()))
                }
                _ => Err(fields.error("headers", format!("value of {name:?} must be a string"))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(fields.error("headers", "must be an object of strings")),
    };
    let timeout = match protocol {
        Dialect::Nimlet => nimlet_timeout(fields)?,
        Dialect::Zot | Dialect::Adapted(_) => None,
    };
    let enabled = match map.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(fields.error("enabled", "must be true or false")),
    };
    Ok(Manifest {
        path: fields.path.to_path_buf(),
        dir: dir.to_path_buf(),
        name,
        version: fields.string("version")?,
        language: fields.string("language")?,
        description: fields.string("description")?,
        skills: fields.strings("skills")?.unwrap_or_default(),
        enabled,
        launch: Launch::Remote(Remote {
            url,
            headers,
            protocol,
            timeout,
        }),
        permissions: None,
        on_failure: on_failure(fields)?,
        warnings: Vec::new(),
    })
}

/// `on_failure`: `"allow"` (default) or `"block"`.
fn on_failure(fields: &Fields<'_>) -> Result<OnFailure, ManifestError> {
    match fields.string("on_failure")?.as_deref() {
        None | Some("allow") => Ok(OnFailure::Allow),
        Some("block") => Ok(OnFailure::Block),
        Some(other) => Err(fields.error(
            "on_failure",
            format!("must be \"allow\" or \"block\" (got {other:?})"),
        )),
    }
}

/// `command` and `response_timeout_seconds` with nimlet's exact messages (research E2).
fn nimlet_launch(fields: &Fields<'_>) -> Result<Launch, ManifestError> {
    let Some(Value::Array(items)) = fields.map.get("command") else {
        return Err(fields.error("command", "command must be an array"));
    };
    let command: Vec<String> = items
        .iter()
        .map(|item| match item {
            Value::String(s) if !s.is_empty() => Ok(s.clone()),
            _ => Err(fields.error("command", "command entries must be strings")),
        })
        .collect::<Result<_, _>>()?;
    if command.is_empty() {
        return Err(fields.error("command", "command must not be empty"));
    }
    let timeout = nimlet_timeout(fields)?;
    Ok(Launch::Nimlet { command, timeout })
}

/// `response_timeout_seconds` with nimlet's exact message (research E2).
fn nimlet_timeout(fields: &Fields<'_>) -> Result<Option<Duration>, ManifestError> {
    Ok(match fields.map.get("response_timeout_seconds") {
        None => Some(NIMLET_DEFAULT_TIMEOUT),
        Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v > 0) => {
            n.as_u64().map(Duration::from_secs)
        }
        Some(_) => {
            return Err(fields.error(
                "response_timeout_seconds",
                "response_timeout_seconds must be a positive integer or null",
            ));
        }
    })
}

/// The longest manifest name, in characters. The name becomes a file name
/// (`ext-<name>.log`, a data directory) and is printed in tables, so it is kept short.
pub const MAX_NAME_CHARS: usize = 64;

/// Whether `c` is a bidirectional formatting character (embeddings,
/// overrides, isolates and marks), which make a name print as other text.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// Checks a manifest name (or a name typed for one): not empty, at most
/// [`MAX_NAME_CHARS`], no surrounding whitespace, not a path, no control or
/// bidirectional formatting characters. The name becomes a log file name
/// and a registry key, so it must be a plain word.
pub fn validate_name(name: &str) -> Result<(), &'static str> {
    if name.trim().is_empty() {
        return Err("must not be empty");
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err("must be at most 64 characters long");
    }
    if name != name.trim() {
        return Err("must not start or end with whitespace");
    }
    if name == "." || name == ".." || name.contains(['/', '\\']) {
        return Err("must not be a path (no '/', '\\', '.' or '..')");
    }
    if name.chars().any(char::is_control) {
        return Err("must not contain control characters");
    }
    if name.chars().any(is_bidi_control) {
        return Err("must not contain bidirectional formatting characters");
    }
    Ok(())
}

fn has_theme(dir: &Path) -> bool {
    dir.join("theme.json").is_file() || dir.join("themes").join("theme.json").is_file()
}

struct Fields<'a> {
    path: &'a Path,
    map: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn error(&self, field: &str, message: impl Into<String>) -> ManifestError {
        ManifestError::new(self.path, Some(field), message)
    }

    /// An optional string field; `null` counts as absent.
    fn string(&self, field: &str) -> Result<Option<String>, ManifestError> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.error(field, "must be a string")),
        }
    }

    /// An optional array of strings; `null` counts as absent.
    fn strings(&self, field: &str) -> Result<Option<Vec<String>>, ManifestError> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(self.error(field, format!("item {i} must be a string"))),
                })
                .collect::<Result<_, _>>()
                .map(Some),
            Some(_) => Err(self.error(field, "must be an array of strings")),
        }
    }
}

/// Why a manifest is invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    pub path: PathBuf,
    /// The offending field, when one is at fault.
    pub field: Option<String>,
    pub message: String,
}

impl ManifestError {
    pub fn new(path: &Path, field: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            path: path.to_path_buf(),
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(
                f,
                "{}: field \"{field}\" {}",
                self.path.display(),
                self.message
            ),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for ManifestError {}

/// Resolves `exec` as the reference does (research zot.md §2.1 item 6):
/// absolute as is; anything with a path separator (`./x`, `../x`, `bin/x`,
/// `.`, `..`) relative to the extension directory; a bare name on `$PATH`.
fn resolve_exec(dir: &Path, exec: &str) -> PathBuf {
    let path = Path::new(exec);
    if path.is_absolute() {
        path.to_path_buf()
    } else if exec.contains(std::path::MAIN_SEPARATOR)
        || exec.contains('/')
        || exec == "."
        || exec == ".."
    {
        dir.join(path)
    } else {
        path.to_path_buf()
    }
}

/// Resolves a nimlet `command[0]` (research nimlet.md E3): containing `/`
/// (and not absolute) it is relative to the extension directory; otherwise
/// it is used as is (an absolute path, or a name looked up on `$PATH`).
fn resolve_nimlet(dir: &Path, program: &str) -> PathBuf {
    let path = Path::new(program);
    if !path.is_absolute() && program.contains('/') {
        dir.join(path)
    } else {
        path.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const VALID: &[&str] = &[
        r#"{"name":"weather","version":"1.0.0","exec":"./run","args":["--fast"]}"#,
        r#"{"name":"notes","command":["python3","main.py"],"timeout":30}"#,
        r#"{"name":"theme","theme":"theme.json"}"#,
    ];

    fn parse_both(text: &str) {
        let dir = Path::new("/x/ext");
        let path = dir.join(MANIFEST_FILE);
        for root in [Dialect::Zot, Dialect::Nimlet] {
            match Manifest::parse_in(dir, &path, text, root) {
                Ok(manifest) => {
                    assert!(!manifest.name.is_empty());
                    assert!(manifest.name.chars().count() <= MAX_NAME_CHARS);
                }
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any text: a manifest or an error with a message, never a panic.
        #[test]
        fn any_text_parses_or_fails_cleanly(text in "\\PC{0,200}") {
            parse_both(&text);
        }

        /// Valid manifests with bytes changed, cut or repeated.
        #[test]
        fn mutated_manifests_parse_or_fail_cleanly(
            pick in 0..VALID.len(),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut bytes = VALID[pick].as_bytes().to_vec();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            bytes.truncate(cut.index(bytes.len() + 1).max(1));
            parse_both(&String::from_utf8_lossy(&bytes));
        }

        /// Any JSON value where the name goes.
        #[test]
        fn any_name_is_checked(name in any::<String>()) {
            let text = serde_json::json!({"name": name, "exec": "./run"}).to_string();
            parse_both(&text);
        }
    }
}
