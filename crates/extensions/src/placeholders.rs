//! `${VAR}` placeholders in a remote extension's `url` and `headers`:
//! checked as text when the manifest is read, expanded when connecting.
//! A leaf, so the manifest and the remote transports can both use it.

use reqwest::header::HeaderName;

const SCHEMES: [&str; 4] = ["ws://", "wss://", "http://", "https://"];

/// Checks `url` as written in a manifest: a literal ws/wss/http/https
/// scheme and well-formed `${…}` placeholders. The rest is checked when
/// connecting, once the variables are known.
pub(crate) fn check_url_text(url: &str) -> Result<(), String> {
    let lower = url.to_ascii_lowercase();
    if !SCHEMES.iter().any(|s| lower.starts_with(s)) {
        return Err(format!(
            "must start with ws://, wss://, http:// or https:// (got {:?})",
            url.chars().take(40).collect::<String>()
        ));
    }
    expand(url, |_| Some("x".to_owned())).map(drop)
}

/// Checks one manifest header: a plain header name (no placeholders) and a
/// value whose placeholders are well-formed. Values are never printed.
pub(crate) fn check_header_text(name: &str, value: &str) -> Result<(), String> {
    HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} is not a valid header name"))?;
    expand(value, |_| Some("x".to_owned()))
        .map(drop)
        .map_err(|why| format!("header {name}: {why}"))
}

/// Expands `${VAR}` and `${VAR:-default}` (the default when VAR is unset or
/// empty, as a shell does) from `env`. A `$` not followed by `{` is kept.
/// The error names a variable that is unset without a default, or the
/// placeholder that is malformed.
pub(crate) fn expand(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let inner = &rest[at + 2..];
        let Some(end) = inner.find('}') else {
            return Err("has \"${\" without a closing \"}\"".to_owned());
        };
        let spec = &inner[..end];
        let (name, default) = match spec.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (spec, None),
        };
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "has \"${{{spec}}}\", which is not ${{NAME}} or ${{NAME:-default}}"
            ));
        }
        match (env(name).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "environment variable {name} is not set (write ${{{name}:-default}} to give a default)"
                ));
            }
        }
        rest = &inner[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
