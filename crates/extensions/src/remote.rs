//! Remote extensions, before any frame moves: what a manifest's `url` and
//! `headers` become when connecting (`${VAR}` expansion from
//! `placeholders.rs`, the loopback rule for plain `ws://`/`http://`), the
//! TLS client configuration both remote transports share, and the reconnect
//! backoff. The transports themselves are `transport/ws.rs` and
//! `transport/http.rs`.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};

use crate::manifest::Remote;
use crate::placeholders::expand;

/// First delay before reconnecting after a lost connection (remote
/// extensions issue: "0.5 s doubling to 30 s, with jitter").
pub const BACKOFF_START: Duration = Duration::from_millis(500);

/// The longest delay between reconnect attempts (same issue).
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Each delay is moved by up to this share of itself, up or down, so that
/// every zot of a team does not reconnect in the same instant after the
/// server restarts. The host's own choice.
const JITTER: f64 = 0.2;

/// How long a TCP connect, TLS and WebSocket/HTTP handshake may take
/// before the attempt fails: the same bound as the hello deadline
/// (`limits::HELLO_TIMEOUT`), which starts once connected.
pub const CONNECT_TIMEOUT: Duration = crate::limits::HELLO_TIMEOUT;

/// How the frames travel: decided by the URL's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    WebSocket,
    Http,
}

/// A remote extension's address as it is connected to: variables
/// expanded, the scheme checked, the headers parsed.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) url: Url,
    pub(crate) wire: Wire,
    pub(crate) tls: bool,
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
}

/// Resolves a manifest's remote settings with the process environment.
pub(crate) fn resolve(remote: &Remote) -> Result<Target, String> {
    resolve_with(remote, |name| std::env::var(name).ok())
}

/// [`resolve`] with the environment given (for tests).
pub(crate) fn resolve_with(
    remote: &Remote,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Target, String> {
    let text = expand(&remote.url, &env).map_err(|why| format!("url {why}"))?;
    let url = Url::parse(&text).map_err(|e| format!("url {:?} is not valid: {e}", remote.url))?;
    let (wire, tls) = match url.scheme() {
        "ws" => (Wire::WebSocket, false),
        "wss" => (Wire::WebSocket, true),
        "http" => (Wire::Http, false),
        "https" => (Wire::Http, true),
        other => {
            return Err(format!(
                "url scheme {other:?} is not ws, wss, http or https"
            ));
        }
    };
    let Some(host) = url.host_str() else {
        return Err(format!("url {:?} has no host", remote.url));
    };
    if !tls && !is_loopback(host) {
        return Err(format!(
            "{}:// is plain text and allowed only to this machine (localhost, 127.0.0.0/8, ::1); {host} needs {}s://",
            url.scheme(),
            url.scheme()
        ));
    }
    let mut headers = Vec::with_capacity(remote.headers.len());
    for (name, value) in &remote.headers {
        let value = expand(value, &env).map_err(|why| format!("header {name}: {why}"))?;
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{name:?} is not a valid header name"))?;
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            format!("header {name}: the value has characters a header cannot carry")
        })?;
        // Keeps credentials out of any debug output of the request.
        value.set_sensitive(true);
        headers.push((name, value));
    }
    Ok(Target {
        url,
        wire,
        tls,
        headers,
    })
}

pub(crate) use zot_http::is_loopback;

/// The TLS client configuration of both remote transports: rustls with
/// ring and the platform verifier (the system's roots; on Linux
/// `SSL_CERT_FILE` and `SSL_CERT_DIR` replace them), as reqwest uses for
/// the model APIs. Built per connection attempt, so a changed certificate
/// store is picked up on reconnect.
pub(crate) fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(Arc::clone(&provider))
        .map_err(|e| format!("cannot load the system's certificates: {e}"))?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The delay before reconnect attempt `attempt` (1-based): [`BACKOFF_START`]
/// doubling up to [`BACKOFF_MAX`], moved by up to ±[`JITTER`].
pub(crate) fn backoff(attempt: u32) -> Duration {
    let doublings = attempt.saturating_sub(1).min(16);
    let base = BACKOFF_START
        .saturating_mul(1 << doublings)
        .min(BACKOFF_MAX);
    let spread = (unit_random() * 2.0 - 1.0) * JITTER;
    base.mul_f64(1.0 + spread).min(BACKOFF_MAX)
}

/// A number in [0, 1) that differs between calls and processes (std's
/// randomly keyed hasher over the time): enough for jitter, which needs no
/// cryptographic quality.
fn unit_random() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(now);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Dialect;
    use crate::placeholders::{check_header_text, check_url_text};

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            "PORT" => Some("9000".into()),
            _ => None,
        }
    }

    fn remote(url: &str, headers: &[(&str, &str)]) -> Remote {
        Remote {
            url: url.into(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            protocol: Dialect::Zot,
            timeout: None,
        }
    }

    #[test]
    fn variables_expand_with_defaults_as_a_shell_does() {
        assert_eq!(expand("a ${TOKEN} b", env).unwrap(), "a s3cret b");
        assert_eq!(expand("${MISSING:-x}", env).unwrap(), "x");
        assert_eq!(expand("${EMPTY:-fallback}", env).unwrap(), "fallback");
        assert_eq!(expand("${MISSING:-}", env).unwrap(), "");
        assert_eq!(expand("$TOKEN and $", env).unwrap(), "$TOKEN and $");
        let missing = expand("Bearer ${MISSING}", env).unwrap_err();
        assert!(missing.contains("MISSING is not set"), "{missing}");
        assert!(expand("${TOKEN", env).unwrap_err().contains("closing"));
        assert!(expand("${1X}", env).unwrap_err().contains("not ${NAME}"));
    }

    #[test]
    fn plain_text_is_only_for_loopback() {
        for ok in [
            "ws://127.0.0.1:${PORT}/x",
            "http://localhost/x",
            "ws://[::1]:1/",
            "wss://guard.example.com/zot",
            "https://guard.example.com/zot",
        ] {
            resolve_with(&remote(ok, &[]), env).unwrap();
        }
        let err = resolve_with(&remote("ws://guard.example.com/zot", &[]), env).unwrap_err();
        assert!(err.contains("needs wss://"), "{err}");
        let err = resolve_with(&remote("http://10.0.0.1/zot", &[]), env).unwrap_err();
        assert!(err.contains("needs https://"), "{err}");
    }

    #[test]
    fn headers_expand_and_never_show_their_values() {
        let target = resolve_with(
            &remote("wss://h/x", &[("Authorization", "Bearer ${TOKEN}")]),
            env,
        )
        .unwrap();
        assert_eq!(target.headers[0].1.to_str().unwrap(), "Bearer s3cret");
        assert!(target.headers[0].1.is_sensitive());
        let err = resolve_with(
            &remote("wss://h/x", &[("Authorization", "Bearer ${NOPE}")]),
            env,
        )
        .unwrap_err();
        assert!(
            err.contains("header Authorization") && err.contains("NOPE"),
            "{err}"
        );
    }

    #[test]
    fn the_manifest_text_is_checked_before_any_variable_is_known() {
        check_url_text("wss://x/${HOST:-a}").unwrap();
        assert!(
            check_url_text("ftp://x")
                .unwrap_err()
                .contains("must start with")
        );
        assert!(check_header_text("Bad Name", "v").is_err());
        assert!(check_header_text("X-Token", "${oops").is_err());
    }

    #[test]
    fn backoff_doubles_to_the_cap_with_bounded_jitter() {
        for attempt in 1..40 {
            let base = BACKOFF_START
                .saturating_mul(1 << (attempt.min(17) - 1))
                .min(BACKOFF_MAX);
            let got = backoff(attempt);
            assert!(got <= BACKOFF_MAX);
            assert!(got >= base.mul_f64(1.0 - JITTER), "{attempt}: {got:?}");
            assert!(got <= base.mul_f64(1.0 + JITTER), "{attempt}: {got:?}");
        }
    }
}
