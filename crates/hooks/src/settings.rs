//! Where command hooks are configured and how those files read: Claude
//! Code's settings files and zot's own `hooks.json`, all in one schema
//! (`{"hooks": {"<Event>": [{"matcher": "...", "hooks": [{"type": "command",
//! "command": "...", "timeout": 30}]}]}, "disableAllHooks": false}`).
//! Parsing never fails on a shape it does not know: such an entry is listed
//! as unsupported, or skipped with a note, so one odd hook does not take
//! the others down.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// The events zot runs hooks for, by their Claude Code names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Event {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    SessionStart,
    SessionEnd,
    Stop,
    SubagentStop,
    PreCompact,
    Notification,
}

impl Event {
    pub const ALL: [Event; 9] = [
        Self::PreToolUse,
        Self::PostToolUse,
        Self::UserPromptSubmit,
        Self::SessionStart,
        Self::SessionEnd,
        Self::Stop,
        Self::SubagentStop,
        Self::PreCompact,
        Self::Notification,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::Stop => "Stop",
            Self::SubagentStop => "SubagentStop",
            Self::PreCompact => "PreCompact",
            Self::Notification => "Notification",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether the matcher applies (tool events match the tool name,
    /// SessionStart its source, PreCompact its trigger, SessionEnd its reason).
    pub fn matches_on_subject(self) -> bool {
        !matches!(
            self,
            Self::UserPromptSubmit | Self::Stop | Self::SubagentStop | Self::Notification
        )
    }
}

/// Whose file a hook comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookScope {
    /// `~/.claude/settings.json` or `$ZOT_HOME/hooks.json`: the user put it there.
    User,
    /// A file in the project: runs only in a trusted project.
    Project,
}

impl HookScope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
        }
    }
}

/// Longest per-hook `timeout` accepted, in seconds (a day); larger values
/// are taken as this, so no duration overflows.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// One configured hook, supported or not.
#[derive(Debug, Clone, PartialEq)]
pub struct HookSpec {
    pub source: PathBuf,
    pub scope: HookScope,
    /// The event name as written.
    pub event: String,
    /// `""` matches everything, like `"*"`.
    pub matcher: String,
    /// The handler type as written (`command`, `http`, `prompt`, `agent`…).
    pub kind: String,
    /// The command line (`""` for other handler types).
    pub command: String,
    /// Its own `timeout`, when it set one.
    pub timeout: Option<Duration>,
    /// `"onFailure": "block"`: a timeout or crash blocks instead of failing open.
    pub block_on_failure: bool,
}

impl HookSpec {
    /// The event, when zot runs hooks for it.
    pub fn known_event(&self) -> Option<Event> {
        Event::parse(&self.event)
    }

    /// Whether zot runs it: a `command` hook of an event zot knows.
    pub fn supported(&self) -> bool {
        self.kind == "command" && self.known_event().is_some() && !self.command.trim().is_empty()
    }
}

/// One settings file, read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SettingsFile {
    pub hooks: Vec<HookSpec>,
    /// `disableAllHooks: true`.
    pub disable_all: bool,
    /// Entries skipped because their shape is wrong, one line each.
    pub problems: Vec<String>,
}

/// Reads one settings file's text. `Err` only when the text is not a JSON
/// object at all (then nothing of it is used); anything wrong inside is a
/// problem noted beside the hooks that did read.
pub fn parse(text: &str, source: &Path, scope: HookScope) -> Result<SettingsFile, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(top) = value else {
        return Err("not a JSON object".to_owned());
    };
    let mut file = SettingsFile::default();
    match top.get("disableAllHooks") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => file.disable_all = *b,
        Some(other) => file.problems.push(format!(
            "disableAllHooks must be true or false, not {other}"
        )),
    }
    let events = match top.get("hooks") {
        None | Some(Value::Null) => return Ok(file),
        Some(Value::Object(events)) => events,
        Some(_) => {
            file.problems
                .push("\"hooks\" must be an object of events".to_owned());
            return Ok(file);
        }
    };
    for (event, groups) in events {
        let Value::Array(groups) = groups else {
            file.problems
                .push(format!("hooks.{event} must be an array of matcher groups"));
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let Value::Object(group) = group else {
                file.problems
                    .push(format!("hooks.{event}[{g}] must be an object"));
                continue;
            };
            let matcher = match group.get("matcher") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(m)) => m.clone(),
                Some(_) => {
                    file.problems
                        .push(format!("hooks.{event}[{g}].matcher must be a string"));
                    continue;
                }
            };
            let Some(Value::Array(handlers)) = group.get("hooks") else {
                file.problems
                    .push(format!("hooks.{event}[{g}].hooks must be an array"));
                continue;
            };
            for (h, handler) in handlers.iter().enumerate() {
                let at = format!("hooks.{event}[{g}].hooks[{h}]");
                match handler_spec(handler, &at) {
                    Ok((kind, command, timeout, block_on_failure)) => file.hooks.push(HookSpec {
                        source: source.to_path_buf(),
                        scope,
                        event: event.clone(),
                        matcher: matcher.clone(),
                        kind,
                        command,
                        timeout,
                        block_on_failure,
                    }),
                    Err(problem) => file.problems.push(problem),
                }
            }
        }
    }
    Ok(file)
}

type Handler = (String, String, Option<Duration>, bool);

fn handler_spec(handler: &Value, at: &str) -> Result<Handler, String> {
    let Value::Object(handler) = handler else {
        return Err(format!("{at} must be an object"));
    };
    let kind = match handler.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        _ => return Err(format!("{at}.type must be a string")),
    };
    let command = match handler.get("command") {
        Some(Value::String(command)) => command.clone(),
        None | Some(Value::Null) if kind != "command" => String::new(),
        _ if kind == "command" => return Err(format!("{at}.command must be a string")),
        _ => String::new(),
    };
    let timeout = timeout(handler, at)?;
    let block_on_failure = match handler.get("onFailure") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) if s == "block" => true,
        Some(Value::String(s)) if s == "allow" || s == "continue" || s == "ignore" => false,
        Some(other) => return Err(format!("{at}.onFailure must be \"block\", not {other}")),
    };
    Ok((kind, command, timeout, block_on_failure))
}

fn timeout(handler: &Map<String, Value>, at: &str) -> Result<Option<Duration>, String> {
    match handler.get("timeout") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(secs) if secs > 0.0 && secs.is_finite() => {
                Ok(Some(Duration::from_secs_f64(secs.min(MAX_TIMEOUT_SECS))))
            }
            _ => Err(format!("{at}.timeout must be a positive number of seconds")),
        },
        Some(_) => Err(format!("{at}.timeout must be a number of seconds")),
    }
}

/// Where hooks are read from, and whether the project's files may run.
#[derive(Debug, Clone)]
pub struct HookSources {
    /// The user's home (for `~/.claude/settings.json`); `None` skips it.
    pub user_home: Option<PathBuf>,
    pub zot_home: PathBuf,
    pub project: PathBuf,
    pub project_trusted: bool,
}

/// Claude Code's settings file, under the user's home or a project.
pub const CLAUDE_SETTINGS: &str = ".claude/settings.json";
/// Claude Code's per-machine settings file of a project.
pub const CLAUDE_LOCAL_SETTINGS: &str = ".claude/settings.local.json";

/// The project's hook files, relative to it, in configuration order.
pub const PROJECT_FILES: &[&str] = &[CLAUDE_SETTINGS, CLAUDE_LOCAL_SETTINGS, ".zot/hooks.json"];

impl HookSources {
    /// Every file hooks may come from, in configuration order: the user's
    /// files, then the project's.
    pub fn files(&self) -> Vec<(PathBuf, HookScope)> {
        let mut files = Vec::new();
        if let Some(home) = &self.user_home {
            files.push((home.join(CLAUDE_SETTINGS), HookScope::User));
        }
        files.push((self.zot_home.join("hooks.json"), HookScope::User));
        for rel in PROJECT_FILES {
            files.push((self.project.join(rel), HookScope::Project));
        }
        files
    }
}

/// Every hook file that exists, read.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// In configuration order.
    pub files: Vec<(PathBuf, HookScope, SettingsFile)>,
    /// Files that exist but could not be read or parsed, with why.
    pub errors: Vec<(PathBuf, String)>,
    pub project_trusted: bool,
}

/// Reads every hook file of `sources` (a missing file is no error).
pub fn load(sources: &HookSources) -> Loaded {
    let mut loaded = Loaded {
        project_trusted: sources.project_trusted,
        ..Loaded::default()
    };
    for (path, scope) in sources.files() {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                loaded.errors.push((path, e.to_string()));
                continue;
            }
        };
        match parse(&text, &path, scope) {
            Ok(file) => loaded.files.push((path, scope, file)),
            Err(e) => loaded.errors.push((path, e)),
        }
    }
    loaded
}

/// One row of `zot hooks list`.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub spec: HookSpec,
    /// Its file may run (user scope, or a trusted project).
    pub trusted: bool,
    /// Turned off by `disableAllHooks`.
    pub disabled: bool,
}

impl Loaded {
    /// Whether a user file says `disableAllHooks: true` (every hook off).
    pub fn user_disabled(&self) -> bool {
        self.files
            .iter()
            .any(|(_, scope, f)| *scope == HookScope::User && f.disable_all)
    }

    /// Whether a project file says `disableAllHooks: true` (the project's hooks off).
    pub fn project_disabled(&self) -> bool {
        self.files
            .iter()
            .any(|(_, scope, f)| *scope == HookScope::Project && f.disable_all)
    }

    /// Every configured hook, in configuration order, with whether it may run.
    pub fn listed(&self) -> Vec<Listed> {
        let (user_off, project_off) = (self.user_disabled(), self.project_disabled());
        self.files
            .iter()
            .flat_map(|(_, scope, file)| {
                file.hooks.iter().map(move |spec| Listed {
                    spec: spec.clone(),
                    trusted: *scope == HookScope::User || self.project_trusted,
                    disabled: user_off || (*scope == HookScope::Project && project_off),
                })
            })
            .collect()
    }

    /// The hooks that run: supported, trusted and not disabled, in configuration order.
    pub fn active(&self) -> Vec<HookSpec> {
        self.listed()
            .into_iter()
            .filter(|l| l.trusted && !l.disabled && l.spec.supported())
            .map(|l| l.spec)
            .collect()
    }

    /// Hooks that would run but for their handler type or event, for the one warning.
    pub fn unsupported(&self) -> Vec<HookSpec> {
        self.listed()
            .into_iter()
            .filter(|l| l.trusted && !l.disabled && !l.spec.supported())
            .map(|l| l.spec)
            .collect()
    }
}

/// What trust pins of a project's hook files: per file that has hook
/// settings, the key `<file>#hooks` with the hash of its `hooks` and
/// `disableAllHooks` parts only (Claude Code rewrites other parts, such as
/// `permissions`, on its own), and the project files their commands name.
pub fn project_pins(project: &Path) -> (Vec<(String, String)>, Vec<PathBuf>) {
    use sha2::{Digest, Sha256};
    let digest = |bytes: &[u8]| {
        let hash = Sha256::digest(bytes);
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    };
    let mut parts = Vec::new();
    let mut scripts = Vec::new();
    for rel in PROJECT_FILES {
        let path = project.join(rel);
        let Ok(text) = std::fs::read(&path) else {
            continue;
        };
        let key = format!("{rel}#hooks");
        let Ok(Value::Object(top)) = serde_json::from_slice::<Value>(&text) else {
            // Unreadable as settings: pinned whole, so whatever it turns into counts.
            parts.push((key, format!("unparsed:{}", digest(&text))));
            continue;
        };
        let (hooks, disable) = (top.get("hooks"), top.get("disableAllHooks"));
        if hooks.is_none() && disable.is_none() {
            continue;
        }
        let pinned = serde_json::json!({"hooks": hooks, "disableAllHooks": disable});
        parts.push((key, digest(pinned.to_string().as_bytes())));
        let file =
            parse(&String::from_utf8_lossy(&text), &path, HookScope::Project).unwrap_or_default();
        for hook in &file.hooks {
            scripts.extend(zot_extensions::pins::named_by_shell(&hook.command, project));
        }
    }
    scripts.sort();
    scripts.dedup();
    (parts, scripts)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn read(text: &str) -> SettingsFile {
        parse(
            text,
            Path::new("/p/.claude/settings.json"),
            HookScope::Project,
        )
        .unwrap()
    }

    #[test]
    fn reads_the_claude_shape() {
        let file = read(
            r#"{"permissions": {"allow": ["Bash"]}, "hooks": {"PreToolUse": [{"matcher": "Bash|Write",
               "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30, "onFailure": "block"},
                         {"type": "prompt", "prompt": "is this ok?"}]}],
               "Stop": [{"hooks": [{"type": "command", "command": "make test"}]}]}}"#,
        );
        assert!(file.problems.is_empty(), "{:?}", file.problems);
        assert_eq!(file.hooks.len(), 3);
        let first = &file.hooks[0];
        assert_eq!(
            (
                first.event.as_str(),
                first.matcher.as_str(),
                first.command.as_str()
            ),
            ("PreToolUse", "Bash|Write", "./check.sh")
        );
        assert_eq!(first.timeout, Some(Duration::from_secs(30)));
        assert!(first.block_on_failure && first.supported());
        assert!(!file.hooks[1].supported(), "prompt hooks do not run");
        assert_eq!(file.hooks[2].matcher, "");
    }

    #[test]
    fn odd_entries_are_problems_not_failures() {
        let file = read(
            r#"{"disableAllHooks": "yes", "hooks": {"PreToolUse": [3, {"hooks": [{"type": "command"},
                {"type": "command", "command": "ok", "timeout": -1},
                {"type": "command", "command": "fine", "timeout": 1e300}]}], "Nope": {}}}"#,
        );
        assert_eq!(file.hooks.len(), 1);
        assert_eq!(
            file.hooks[0].timeout,
            Some(Duration::from_secs_f64(MAX_TIMEOUT_SECS))
        );
        assert_eq!(file.problems.len(), 5, "{:?}", file.problems);
        assert!(parse("[]", Path::new("x"), HookScope::User).is_err());
        assert!(parse("{", Path::new("x"), HookScope::User).is_err());
    }

    #[test]
    fn disable_all_hooks_in_a_project_file_spares_the_users() {
        let user = parse(
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "u"}]}]}}"#,
            Path::new("/home/.claude/settings.json"),
            HookScope::User,
        )
        .unwrap();
        let mut project = read(
            r#"{"disableAllHooks": true, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "p"}]}]}}"#,
        );
        let mut loaded = Loaded {
            files: vec![
                (PathBuf::from("u"), HookScope::User, user.clone()),
                (PathBuf::from("p"), HookScope::Project, project.clone()),
            ],
            errors: Vec::new(),
            project_trusted: true,
        };
        let commands = |l: &Loaded| {
            l.active()
                .into_iter()
                .map(|h| h.command)
                .collect::<Vec<_>>()
        };
        assert_eq!(commands(&loaded), ["u"]);
        project.disable_all = false;
        loaded.files[1].2 = project;
        assert_eq!(commands(&loaded), ["u", "p"]);
        loaded.project_trusted = false;
        assert_eq!(
            commands(&loaded),
            ["u"],
            "untrusted project hooks never run"
        );
        loaded.project_trusted = true;
        let mut user = user;
        user.disable_all = true;
        loaded.files[0].2 = user;
        assert!(commands(&loaded).is_empty(), "a user file turns off all");
    }

    #[test]
    fn pins_cover_the_hook_parts_and_the_scripts_they_name() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        std::fs::create_dir_all(project.join(".claude/hooks")).unwrap();
        std::fs::write(project.join(".claude/hooks/check.sh"), "exit 0").unwrap();
        std::fs::write(project.join("fmt.py"), "").unwrap();
        let settings = |permissions: &str, command: &str| {
            std::fs::write(
                project.join(".claude/settings.local.json"),
                format!(
                    r#"{{"permissions": {permissions}, "hooks": {{"PostToolUse": [{{"hooks": [
                    {{"type": "command", "command": "{command}"}}]}}]}}}}"#
                ),
            )
            .unwrap();
        };
        settings(
            "[]",
            r#"\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh && python3 fmt.py"#,
        );
        let (parts, scripts) = project_pins(project);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].0, ".claude/settings.local.json#hooks");
        let existing = scripts.iter().filter(|p| p.exists()).count();
        assert_eq!(existing, 2, "{scripts:?}");
        settings(
            r#"["Bash"]"#,
            r#"\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh && python3 fmt.py"#,
        );
        assert_eq!(project_pins(project).0, parts, "permissions are not pinned");
        settings("[]", "rm -rf /");
        assert_ne!(project_pins(project).0, parts, "the hooks are");
    }

    /// Settings-shaped JSON with any values in the places hooks are read from.
    fn settings_like() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<f64>().prop_map(|f| serde_json::json!(f)),
            any::<i64>().prop_map(|i| serde_json::json!(i)),
            ".{0,12}".prop_map(Value::String),
            Just(Value::String("command".into())),
            Just(Value::String("block".into())),
        ];
        let value = leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("hooks".to_owned()),
                            Just("matcher".to_owned()),
                            Just("type".to_owned()),
                            Just("command".to_owned()),
                            Just("timeout".to_owned()),
                            Just("onFailure".to_owned()),
                            Just("PreToolUse".to_owned()),
                            Just("disableAllHooks".to_owned()),
                            ".{0,6}",
                        ],
                        inner
                    ),
                    0..5
                )
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        });
        value.prop_map(|v| v.to_string())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_text_reads_or_errs_without_panicking(text in ".{0,200}") {
            let _ = parse(&text, Path::new("x"), HookScope::User);
        }

        #[test]
        fn any_settings_shape_reads_without_panicking(text in settings_like()) {
            let file = parse(&text, Path::new("x"), HookScope::Project);
            if let Ok(file) = file {
                for hook in &file.hooks {
                    let _ = hook.supported();
                    prop_assert!(hook.timeout.is_none_or(|t| t.as_secs_f64() <= MAX_TIMEOUT_SECS));
                }
            }
        }
    }
}
