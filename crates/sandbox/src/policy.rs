//! The user's policy, `$ZOT_HOME/permissions.json`: how strictly scopes are
//! enforced, the default scopes, and per-extension overrides. It decides the
//! effective grant of every process from what its manifest declares.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::scope::{Grant, Place, Scope, ScopeError};

/// The policy's file name under `$ZOT_HOME`.
pub const POLICY_FILE: &str = "permissions.json";

/// What happens when the kernel cannot enforce a scope in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Enforce {
    /// The process does not start; the error names what is missing.
    #[default]
    Strict,
    /// The process starts with what can be enforced; the rest is reported
    /// as unenforced.
    BestEffort,
}

impl Enforce {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Strict => "strict",
            Self::BestEffort => "best-effort",
        }
    }
}

/// Where the process was configured: the policy's `project_default`
/// applies to anything a project file starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A project extension, a project's `.mcp.json` server, a project hook.
    Project,
    /// Everything else (global extensions, `--ext`, user configuration).
    User,
}

/// `$ZOT_HOME/permissions.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    pub enforce: Enforce,
    /// Narrows (or, for a process that declares nothing, becomes) the scope
    /// of everything not started from a project file.
    pub default: Option<Grant>,
    /// The same for anything started from a project file.
    pub project_default: Option<Grant>,
    /// Per-name grants that replace whatever the manifest declares.
    pub extensions: BTreeMap<String, Grant>,
}

/// Why the policy file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    pub path: PathBuf,
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for PolicyError {}

impl Policy {
    /// Reads `<zot_home>/permissions.json`; a missing file is the default
    /// policy (strict, no defaults, no overrides).
    pub fn load(zot_home: &Path) -> Result<Self, PolicyError> {
        let path = zot_home.join(POLICY_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => {
                return Err(PolicyError {
                    path,
                    message: format!("cannot read: {e}"),
                });
            }
        };
        Self::parse(&text).map_err(|message| PolicyError { path, message })
    }

    /// Parses the policy's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
        let Value::Object(map) = value else {
            return Err("must be a JSON object".into());
        };
        let field = |key: &str, e: ScopeError| format!("\"{key}\": {e}");
        let mut policy = Self::default();
        for (key, value) in &map {
            match key.as_str() {
                "enforce" => {
                    policy.enforce = match value.as_str() {
                        Some("strict") => Enforce::Strict,
                        Some("best-effort") => Enforce::BestEffort,
                        _ => return Err("\"enforce\" must be \"strict\" or \"best-effort\"".into()),
                    }
                }
                "default" => {
                    policy.default = Some(Grant::parse(value).map_err(|e| field(key, e))?);
                }
                "project_default" => {
                    policy.project_default = Some(Grant::parse(value).map_err(|e| field(key, e))?);
                }
                "extensions" => {
                    let Value::Object(entries) = value else {
                        return Err("\"extensions\" must be an object of name → scope".into());
                    };
                    for (name, grant) in entries {
                        let grant = Grant::parse(grant)
                            .map_err(|e| format!("\"extensions\".\"{name}\": {e}"))?;
                        policy.extensions.insert(name.clone(), grant);
                    }
                }
                other => {
                    return Err(format!(
                        "unknown key \"{other}\" (enforce, default, project_default, extensions)"
                    ));
                }
            }
        }
        Ok(policy)
    }

    /// The effective grant of `name`, which declares `declared` (`None`: no
    /// `permissions` field) and was started from a file of `origin`:
    /// the policy's entry for the name when there is one; otherwise the
    /// declared scope narrowed by the default for its origin (which a
    /// process that declares nothing gets as is); unrestricted when neither
    /// says anything. `under(a, b)` tells whether place `a` lies under `b`.
    pub fn effective(
        &self,
        name: &str,
        declared: Option<&Scope>,
        origin: Origin,
        under: impl Fn(&Place, &Place) -> bool,
    ) -> Grant {
        if let Some(grant) = self.extensions.get(name) {
            return grant.clone();
        }
        let default = match origin {
            Origin::Project => self.project_default.as_ref(),
            Origin::User => self.default.as_ref(),
        };
        match (declared, default.and_then(Grant::scope)) {
            (Some(declared), Some(policy)) => Grant::Scoped(declared.narrow(policy, under)),
            (Some(declared), None) => Grant::Scoped(declared.clone()),
            (None, Some(policy)) => Grant::Scoped(policy.clone()),
            (None, None) => Grant::Unrestricted,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn under(a: &Place, b: &Place) -> bool {
        a == b || Path::new(a.as_str()).starts_with(b.as_str())
    }

    #[test]
    fn the_effective_grant_follows_the_issue() {
        let policy = Policy::parse(
            &json!({
                "enforce": "best-effort",
                "default": "unrestricted",
                "project_default": {"read": ["project"], "net": "none"},
                "extensions": {"pinned": {"read": ["/x"]}, "free": "unrestricted"}
            })
            .to_string(),
        )
        .unwrap();
        assert_eq!(policy.enforce, Enforce::BestEffort);
        let declared = Scope::parse(&json!({"read": ["project", "home"], "net": "all"})).unwrap();
        // An entry wins over anything declared.
        assert_eq!(
            policy
                .effective("pinned", Some(&declared), Origin::Project, under)
                .to_json()["read"],
            json!(["/x"])
        );
        assert_eq!(
            policy.effective("free", Some(&declared), Origin::Project, under),
            Grant::Unrestricted
        );
        // Project: narrowed by project_default.
        let narrowed = policy.effective("p", Some(&declared), Origin::Project, under);
        assert_eq!(narrowed.to_json()["read"], json!(["project"]));
        assert_eq!(narrowed.to_json()["net"], json!("none"));
        // A project extension that declares nothing gets project_default.
        assert_eq!(
            policy
                .effective("p", None, Origin::Project, under)
                .to_json()["read"],
            json!(["project"])
        );
        // User: "unrestricted" default narrows nothing.
        assert_eq!(
            policy.effective("u", Some(&declared), Origin::User, under),
            Grant::Scoped(declared)
        );
        assert_eq!(
            policy.effective("u", None, Origin::User, under),
            Grant::Unrestricted
        );
    }

    #[test]
    fn bad_policies_say_where() {
        for (text, needle) in [
            ("[]", "JSON object"),
            (r#"{"enforce":"lax"}"#, "enforce"),
            (r#"{"default":{"read":"x"}}"#, "\"default\": \"read\""),
            (r#"{"extensions":{"a":{"net":7}}}"#, "\"a\""),
            (r#"{"extra":1}"#, "unknown key"),
        ] {
            let e = Policy::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Policy::load(dir.path()).unwrap(), Policy::default());
    }
}
