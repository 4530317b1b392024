//! HTTP as zot's agent (model APIs, `web_fetch`) and extension host (MCP
//! over HTTP, OAuth, remote extensions) both speak it: one TLS provider,
//! one way to set up a client, one reader of server-sent event streams.

use std::error::Error;
use std::time::Duration;

pub mod sse;

pub use sse::MAX_SSE_EVENT_BYTES;

/// Makes ring the process's TLS crypto provider (reqwest is built without
/// one: ring is a fraction of aws-lc-rs's size in the binary, and the
/// performance issue budgets the binary). Idempotent.
pub fn install_tls_provider() {
    // `Err` only says a provider is installed already, which is the point.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client builder for talking to `base_url`. A plain `http://` URL
/// (ollama, a local proxy, the loopback test server) never makes a TLS
/// connection, so it gets no root certificates: loading and parsing the
/// system's roots is most of a bare run's start-up CPU and a good part of
/// its memory (see BENCHMARKS.md). An `https://` URL gets the platform's.
pub fn http_client(base_url: &str) -> reqwest::ClientBuilder {
    install_tls_provider();
    let builder = reqwest::Client::builder();
    let plain = base_url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    if plain {
        builder.tls_certs_only(std::iter::empty())
    } else {
        builder
    }
}

/// Whether `host` (as a URL gives it; IPv6 in brackets) is this machine:
/// the one place plain `http://` may carry a key or a session.
pub fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.eq_ignore_ascii_case("localhost") || bare.eq_ignore_ascii_case("localhost."),
    }
}

/// An error with its causes, as one line. reqwest's own message is only
/// "error sending request"; the cause (connection refused, dns failure) is
/// further down the chain.
pub fn error_chain(err: &dyn Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// How long a model's server may send nothing (no answer, or no byte of
/// its stream) before the call fails: a stalled server or connection would
/// otherwise hold the prompt for good. Providers send keep-alive events well
/// within it.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// [`IDLE_TIMEOUT`], or `ZOT_IDLE_TIMEOUT` (seconds) for a server slower to
/// start answering (a local model loading from a slow disk).
pub fn idle_timeout() -> Result<Duration, String> {
    let Ok(value) = std::env::var("ZOT_IDLE_TIMEOUT") else {
        return Ok(IDLE_TIMEOUT);
    };
    value
        .trim()
        .parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            format!("ZOT_IDLE_TIMEOUT must be a number of seconds above 0, not {value:?}")
        })
}

/// Whether `err` is a request's read timeout ([`idle_timeout`]): the server
/// sent nothing for that long.
pub fn timed_out(err: &(dyn Error + 'static)) -> bool {
    err.downcast_ref::<reqwest::Error>()
        .is_some_and(reqwest::Error::is_timeout)
}

/// What a read timeout means, for the user.
pub fn idle_message() -> String {
    let waited = idle_timeout().unwrap_or(IDLE_TIMEOUT);
    format!(
        "the server sent nothing for {} s and was given up on (ZOT_IDLE_TIMEOUT sets how long to wait)",
        waited.as_secs_f64()
    )
}
