//! The scope a process is held to: what it may read and write, which network
//! it may use, which environment variables it sees. Parsed from a manifest's
//! `permissions` object (or a policy entry), narrowed by the user's policy,
//! and printed back as the same JSON.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value, json};

/// A place a scope names in `read` or `write`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Place {
    /// `project`: the user's project directory.
    Project,
    /// `data`: the extension's own data directory.
    Data,
    /// `tmp`: a private temporary directory, set as `TMPDIR`.
    Tmp,
    /// `home`: the user's home directory.
    Home,
    /// Any other path, as written (`~` expands when it is resolved).
    Path(String),
}

impl Place {
    fn parse(text: &str) -> Self {
        match text {
            "project" => Self::Project,
            "data" => Self::Data,
            "tmp" => Self::Tmp,
            "home" => Self::Home,
            other => Self::Path(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Project => "project",
            Self::Data => "data",
            Self::Tmp => "tmp",
            Self::Home => "home",
            Self::Path(p) => p,
        }
    }
}

/// What network a scoped process may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Net {
    /// `"none"`: a fresh network namespace (loopback to itself only), no
    /// TCP, no Unix-domain sockets.
    None,
    /// `"all"`: the network as the user has it.
    All,
    /// A list: outbound TCP to these ports (any host), and Unix-domain
    /// sockets when `unix` is listed. Without a `tcp:` entry the process
    /// still gets a fresh network namespace; with one, UDP is not restricted.
    Some { tcp: BTreeSet<u16>, unix: bool },
}

impl Net {
    /// Whether the process runs in a network namespace of its own.
    pub fn isolated(&self) -> bool {
        match self {
            Self::None => true,
            Self::All => false,
            Self::Some { tcp, .. } => tcp.is_empty(),
        }
    }

    /// Whether creating Unix-domain sockets is allowed.
    pub fn unix(&self) -> bool {
        match self {
            Self::None => false,
            Self::All => true,
            Self::Some { unix, .. } => *unix,
        }
    }

    /// The TCP ports it may connect to; `None` means any.
    pub fn tcp_ports(&self) -> Option<BTreeSet<u16>> {
        match self {
            Self::None => Some(BTreeSet::new()),
            Self::All => None,
            Self::Some { tcp, .. } => Some(tcp.clone()),
        }
    }

    /// What both allow.
    fn narrow(&self, policy: &Self) -> Self {
        match (self, policy) {
            (Self::All, other) | (other, Self::All) => other.clone(),
            (Self::None, _) | (_, Self::None) => Self::None,
            (Self::Some { tcp: a, unix: ua }, Self::Some { tcp: b, unix: ub }) => Self::Some {
                tcp: a.intersection(b).copied().collect(),
                unix: *ua && *ub,
            },
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Self::None => json!("none"),
            Self::All => json!("all"),
            Self::Some { tcp, unix } => {
                let mut items: Vec<Value> = tcp.iter().map(|p| json!(format!("tcp:{p}"))).collect();
                if *unix {
                    items.push(json!("unix"));
                }
                Value::Array(items)
            }
        }
    }
}

/// A permission scope (a manifest's `permissions`, or a policy's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub read: Vec<Place>,
    /// Write implies read.
    pub write: Vec<Place>,
    pub net: Net,
    /// Environment variables passed through beyond the safe base.
    pub env: Vec<String>,
}

/// What a process runs with: full user privileges, or a scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    Unrestricted,
    Scoped(Scope),
}

impl Grant {
    /// `"unrestricted"` or a scope.
    pub fn parse(value: &Value) -> Result<Self, ScopeError> {
        match value {
            Value::String(s) if s == "unrestricted" => Ok(Self::Unrestricted),
            other => Scope::parse(other).map(Self::Scoped),
        }
    }

    pub fn scope(&self) -> Option<&Scope> {
        match self {
            Self::Unrestricted => None,
            Self::Scoped(scope) => Some(scope),
        }
    }

    /// `"unrestricted"` or the scope's JSON.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Unrestricted => json!("unrestricted"),
            Self::Scoped(scope) => scope.to_json(),
        }
    }
}

/// Why a scope is invalid: the field at fault and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeError {
    /// `read`, `write`, `net`, `env`, or empty for the whole object.
    pub field: String,
    pub message: String,
}

impl ScopeError {
    fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "\"{}\" {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ScopeError {}

/// The keys a scope object may have.
const KEYS: &[&str] = &["read", "write", "net", "env"];

impl Scope {
    /// The scope of `"permissions": {}`: nothing beyond what every scoped
    /// process gets, and no network.
    pub fn empty() -> Self {
        Self {
            read: Vec::new(),
            write: Vec::new(),
            net: Net::None,
            env: Vec::new(),
        }
    }

    /// Parses a `permissions` object. Unknown keys are errors: a misspelt
    /// `wirte` must not silently grant less than the author meant, nor be
    /// mistaken for a grant the reader thinks exists.
    pub fn parse(value: &Value) -> Result<Self, ScopeError> {
        let Value::Object(map) = value else {
            return Err(ScopeError::new("", "must be an object"));
        };
        if let Some(key) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(ScopeError::new(
                key,
                "is not a permission (read, write, net, env)",
            ));
        }
        let read = places(map, "read")?;
        let write = places(map, "write")?;
        let net = match map.get("net") {
            None | Some(Value::Null) => Net::None,
            Some(Value::String(s)) if s == "none" => Net::None,
            Some(Value::String(s)) if s == "all" => Net::All,
            Some(Value::Array(items)) => net_list(items)?,
            Some(_) => {
                return Err(ScopeError::new(
                    "net",
                    "must be \"none\", \"all\" or a list of \"tcp:PORT\" and \"unix\"",
                ));
            }
        };
        let env = strings(map, "env")?;
        for name in &env {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(ScopeError::new(
                    "env",
                    format!("{name:?} is not a variable name"),
                ));
            }
        }
        Ok(Self {
            read,
            write,
            net,
            env,
        })
    }

    /// The scope as the JSON it was parsed from (normalised).
    pub fn to_json(&self) -> Value {
        let list =
            |places: &[Place]| -> Value { places.iter().map(|p| json!(p.as_str())).collect() };
        json!({
            "read": list(&self.read),
            "write": list(&self.write),
            "net": self.net.to_json(),
            "env": self.env,
        })
    }

    /// Whether `place` is named for reading or writing.
    pub fn names(&self, place: &Place) -> bool {
        self.read.contains(place) || self.write.contains(place)
    }

    /// This scope cut down to what `policy` allows. A path is kept when it
    /// lies under one of the policy's paths of the same kind (a write under
    /// a policy read becomes a read); `under` decides "lies under" (it
    /// resolves both places). Network and environment keep what both allow.
    pub fn narrow(&self, policy: &Self, under: impl Fn(&Place, &Place) -> bool) -> Self {
        let within = |place: &Place, list: &[Place]| list.iter().any(|p| under(place, p));
        let policy_readable: Vec<Place> =
            policy.read.iter().chain(&policy.write).cloned().collect();
        let mut read: Vec<Place> = Vec::new();
        let mut write: Vec<Place> = Vec::new();
        for place in &self.write {
            if within(place, &policy.write) {
                write.push(place.clone());
            } else if within(place, &policy_readable) {
                read.push(place.clone());
            }
        }
        for place in &self.read {
            if within(place, &policy_readable) && !read.contains(place) {
                read.push(place.clone());
            }
        }
        Self {
            read,
            write,
            net: self.net.narrow(&policy.net),
            env: self
                .env
                .iter()
                .filter(|name| policy.env.contains(name))
                .cloned()
                .collect(),
        }
    }
}

fn strings(map: &Map<String, Value>, field: &str) -> Result<Vec<String>, ScopeError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(ScopeError::new(field, format!("item {i} must be a string"))),
            })
            .collect(),
        Some(_) => Err(ScopeError::new(field, "must be an array of strings")),
    }
}

fn places(map: &Map<String, Value>, field: &str) -> Result<Vec<Place>, ScopeError> {
    let mut out: Vec<Place> = Vec::new();
    for text in strings(map, field)? {
        if text.trim().is_empty() {
            return Err(ScopeError::new(field, "has an empty path"));
        }
        if text.contains('\0') {
            return Err(ScopeError::new(field, "has a path with a NUL byte"));
        }
        let place = Place::parse(&text);
        if let Place::Path(p) = &place
            && !(p.starts_with('/') || p == "~" || p.starts_with("~/"))
        {
            return Err(ScopeError::new(
                field,
                format!(
                    "{p:?} must be project, data, tmp, home, an absolute path or a path starting with ~/"
                ),
            ));
        }
        if !out.contains(&place) {
            out.push(place);
        }
    }
    Ok(out)
}

fn net_list(items: &[Value]) -> Result<Net, ScopeError> {
    let mut tcp = BTreeSet::new();
    let mut unix = false;
    for item in items {
        let text = item.as_str().unwrap_or_default();
        if text == "unix" {
            unix = true;
        } else if let Some(port) = text.strip_prefix("tcp:") {
            match port.parse::<u16>() {
                Ok(port) if port > 0 => {
                    tcp.insert(port);
                }
                _ => {
                    return Err(ScopeError::new(
                        "net",
                        format!("{text:?}: the port must be 1 to 65535"),
                    ));
                }
            }
        } else {
            return Err(ScopeError::new(
                "net",
                format!("{item}: entries are \"tcp:PORT\" or \"unix\""),
            ));
        }
    }
    Ok(Net::Some { tcp, unix })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn scope(value: Value) -> Scope {
        Scope::parse(&value).unwrap()
    }

    #[test]
    fn parses_the_issue_example() {
        let s = scope(json!({
            "read": ["project", "~/.config/myext"],
            "write": ["tmp"],
            "net": ["tcp:443"],
            "env": ["GITHUB_TOKEN"]
        }));
        assert_eq!(
            s.read,
            vec![Place::Project, Place::Path("~/.config/myext".into())]
        );
        assert_eq!(s.write, vec![Place::Tmp]);
        assert_eq!(
            s.net,
            Net::Some {
                tcp: [443].into(),
                unix: false
            }
        );
        assert!(!s.net.isolated());
        assert_eq!(s.env, vec!["GITHUB_TOKEN"]);
        assert_eq!(Scope::parse(&s.to_json()).unwrap(), s);
    }

    #[test]
    fn net_defaults_to_none_and_bad_fields_are_named() {
        assert_eq!(scope(json!({})).net, Net::None);
        assert!(scope(json!({"net": ["unix"]})).net.isolated());
        for (value, field) in [
            (json!({"wirte": ["tmp"]}), "wirte"),
            (json!({"read": "project"}), "read"),
            (json!({"read": ["relative/path"]}), "read"),
            (json!({"net": ["tcp:0"]}), "net"),
            (json!({"net": ["udp:53"]}), "net"),
            (json!({"net": 5}), "net"),
            (json!({"env": ["A=B"]}), "env"),
        ] {
            assert_eq!(Scope::parse(&value).unwrap_err().field, field, "{value}");
        }
        assert_eq!(
            Grant::parse(&json!("unrestricted")).unwrap(),
            Grant::Unrestricted
        );
        assert!(Grant::parse(&json!("everything")).is_err());
    }

    #[test]
    fn narrowing_keeps_what_lies_under_the_policy() {
        let manifest = scope(json!({
            "read": ["/a/b", "/c"],
            "write": ["/a/x", "/d"],
            "net": ["tcp:443", "tcp:80", "unix"],
            "env": ["K", "L"]
        }));
        let policy = scope(json!({
            "read": ["/a"],
            "write": ["/d"],
            "net": ["tcp:443"],
            "env": ["L"]
        }));
        let under = |p: &Place, q: &Place| std::path::Path::new(p.as_str()).starts_with(q.as_str());
        let narrowed = manifest.narrow(&policy, under);
        assert_eq!(
            narrowed.read,
            vec![Place::Path("/a/x".into()), Place::Path("/a/b".into())]
        );
        assert_eq!(narrowed.write, vec![Place::Path("/d".into())]);
        assert_eq!(
            narrowed.net,
            Net::Some {
                tcp: [443].into(),
                unix: false
            }
        );
        assert_eq!(narrowed.env, vec!["L"]);
        let all = scope(json!({"net": "all"}));
        assert_eq!(all.narrow(&policy, under).net, policy.net);
        assert_eq!(manifest.narrow(&scope(json!({})), under).net, Net::None);
    }

    proptest! {
        /// Any JSON value: a scope or an error, never a panic; a scope
        /// survives a round trip through its JSON.
        #[test]
        fn any_value_parses_or_fails_cleanly(text in "\\PC{0,80}") {
            if let Ok(value) = serde_json::from_str::<Value>(&text)
                && let Ok(s) = Scope::parse(&value)
            {
                prop_assert_eq!(Scope::parse(&s.to_json()).unwrap(), s);
            }
        }
    }
}
