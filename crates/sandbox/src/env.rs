//! The environment of every process zot starts: extensions, MCP stdio
//! servers, hook commands and the bash tool all get theirs from
//! [`child_env`], so what leaks into a child is decided in one place.

use std::ffi::{OsStr, OsString};

use crate::scope::Scope;

/// The environment variable that holds `zot rpc`'s client token: never
/// passed to any child.
pub const RPC_TOKEN_ENV: &str = "ZOTCORE_RPC_TOKEN";

/// The variables a scoped process always gets (when zot has them): what
/// ordinary programs need to find tools, speak the user's language and
/// draw on the terminal; none of them is a secret. `LC_*` also passes.
pub const SAFE_BASE: &[&str] = &[
    "PATH", "HOME", "LANG", "TERM", "TZ", "TMPDIR", "USER", "SHELL",
];

/// The variables that hold model API keys: never passed to a sandboxed bash
/// command (a scoped process gets them only when its scope lists them).
/// Keep in step with the providers' key variables.
pub const MODEL_KEY_ENV: &[&str] = &["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// The variables that name the temporary directory; a confined process
/// gets its private one in all three.
pub const TMP_ENV: &[&str] = &["TMPDIR", "TMP", "TEMP"];

/// The variable naming the user's project, passed to scoped processes too.
pub const PROJECT_DIR_ENV: &str = "ZOT_PROJECT_DIR";

/// The environment for a child process, from `inherited` (zot's own,
/// normally `std::env::vars_os()`):
/// - always without [`RPC_TOKEN_ENV`];
/// - unscoped (`scope` is `None`): everything else as inherited;
/// - scoped: only [`SAFE_BASE`], `LC_*`, `ZOT_PROJECT_DIR` and the names the
///   scope lists in `env`, so API keys are withheld unless listed.
///
/// `own` (the variables set in the process's own configuration, such as an
/// MCP server's `env`, or a private `TMPDIR`) is added last and wins.
pub fn child_env(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    scope: Option<&Scope>,
    own: &[(String, String)],
) -> Vec<(OsString, OsString)> {
    let keep = |name: &OsStr| -> bool {
        if name == RPC_TOKEN_ENV {
            return false;
        }
        let Some(scope) = scope else {
            return true;
        };
        let Some(name) = name.to_str() else {
            return false;
        };
        SAFE_BASE.contains(&name)
            || name.starts_with("LC_")
            || name == PROJECT_DIR_ENV
            || scope.env.iter().any(|listed| listed == name)
    };
    let mut env: Vec<(OsString, OsString)> = inherited
        .into_iter()
        .filter(|(name, _)| keep(name))
        .filter(|(name, _)| !own.iter().any(|(k, _)| OsStr::new(k) == name))
        .collect();
    env.extend(
        own.iter()
            .filter(|(k, _)| k != RPC_TOKEN_ENV)
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    env
}

/// Replaces `command`'s environment with [`child_env`] of zot's own.
pub fn set_child_env(
    command: &mut std::process::Command,
    scope: Option<&Scope>,
    own: &[(String, String)],
) {
    let env = child_env(std::env::vars_os(), scope, own);
    command.env_clear().envs(env);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<&str> {
        env.iter().filter_map(|(k, _)| k.to_str()).collect()
    }

    const ZOT: &[(&str, &str)] = &[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("LC_ALL", "C"),
        ("ANTHROPIC_API_KEY", "sk"),
        ("GITHUB_TOKEN", "gh"),
        ("ZOTCORE_RPC_TOKEN", "secret"),
    ];

    #[test]
    fn unscoped_children_keep_everything_but_the_rpc_token() {
        let env = child_env(vars(ZOT), None, &[]);
        assert_eq!(
            names(&env),
            [
                "PATH",
                "HOME",
                "LC_ALL",
                "ANTHROPIC_API_KEY",
                "GITHUB_TOKEN"
            ]
        );
    }

    #[test]
    fn scoped_children_get_the_safe_base_the_listed_names_and_their_own() {
        let scope = Scope::parse(&json!({"env": ["GITHUB_TOKEN"]})).unwrap();
        let own = [
            ("TMPDIR".to_owned(), "/priv".to_owned()),
            ("ZOTCORE_RPC_TOKEN".to_owned(), "x".to_owned()),
        ];
        let env = child_env(vars(ZOT), Some(&scope), &own);
        assert_eq!(
            names(&env),
            ["PATH", "HOME", "LC_ALL", "GITHUB_TOKEN", "TMPDIR"]
        );
        assert_eq!(env[4].1, "/priv");
    }
}
