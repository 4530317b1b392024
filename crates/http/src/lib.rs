//! HTTP as zot's agent (model APIs, `web_fetch`) and extension host (MCP
//! over HTTP, OAuth, remote extensions) both speak it: one TLS provider,
//! one way to set up a client, one reader of server-sent event streams.

use std::error::Error;

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
