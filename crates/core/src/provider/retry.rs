//! Sending one provider request with retries before the first byte, and
//! turning error responses into `ProviderError`s. Once a success status has
//! arrived nothing is retried: a half-streamed answer cannot be replayed.

use std::error::Error;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

use zot_http::error_chain;

use super::call::ProviderError;

/// How long to wait before each retry of a connection failure or a 502/503/504,
/// as the agent issue asks: two retries, 250 ms then 750 ms.
pub const BACKOFF: [Duration; 2] = [Duration::from_millis(250), Duration::from_millis(750)];

/// The wait after a 429 without a usable `retry-after` header (the agent issue).
pub(crate) const RATE_LIMIT_DEFAULT_WAIT: Duration = Duration::from_secs(1);

/// The longest a 429's `retry-after` is honoured (the agent issue): a server
/// asking for minutes is better reported than silently waited out.
pub(crate) const RATE_LIMIT_MAX_WAIT: Duration = Duration::from_secs(10);

/// How much of an error body ends up in the error message.
const MAX_ERROR_CHARS: usize = 500;

/// Sends the request `build` makes until it gets a success status, retrying
/// what is worth retrying. `build` is called once per attempt because a
/// `RequestBuilder` is consumed by sending.
pub(crate) async fn send(
    provider: &'static str,
    url: &str,
    build: impl Fn() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, ProviderError> {
    let mut retries = 0;
    loop {
        let wait = match build().send().await {
            Ok(response) if response.status().is_success() => return Ok(response),
            Ok(response) => {
                let status = response.status();
                match retry_wait(status, response.headers(), retries) {
                    Some(wait) => wait,
                    None => return Err(status_error(provider, response).await),
                }
            }
            // The server took the request and sat on it: asking again
            // would only wait as long once more.
            Err(err) if err.is_timeout() => {
                return Err(ProviderError::Stream {
                    provider,
                    message: format!("no answer from {url}: {}", zot_http::idle_message()),
                });
            }
            Err(err) => match BACKOFF.get(retries) {
                // A builder error (a malformed URL, say) fails the same way every time.
                Some(wait) if !err.is_builder() => *wait,
                _ => {
                    return Err(ProviderError::Connect {
                        provider,
                        url: url.to_owned(),
                        // reqwest's top message only repeats the URL.
                        message: err.source().map_or_else(|| err.to_string(), error_chain),
                    });
                }
            },
        };
        retries += 1;
        tokio::time::sleep(wait).await;
    }
}

/// How long to wait before retrying a response with `status`, or `None` when
/// it is final.
fn retry_wait(status: StatusCode, headers: &HeaderMap, retries: usize) -> Option<Duration> {
    match status.as_u16() {
        502..=504 => BACKOFF.get(retries).copied(),
        429 if retries < BACKOFF.len() => Some(retry_after(headers)),
        _ => None,
    }
}

/// The `retry-after` delay in seconds, capped; HTTP dates are rare on model
/// APIs and fall back to the default.
fn retry_after(headers: &HeaderMap) -> Duration {
    headers
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<f64>().ok())
        .filter(|secs| secs.is_finite() && *secs >= 0.0)
        .map_or(RATE_LIMIT_DEFAULT_WAIT, |secs| {
            Duration::from_secs_f64(secs.min(RATE_LIMIT_MAX_WAIT.as_secs_f64()))
        })
}

async fn status_error(provider: &'static str, response: reqwest::Response) -> ProviderError {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let mut message = error_message(&body);
    if message.is_empty() {
        message = status
            .canonical_reason()
            .unwrap_or("no error message")
            .to_owned();
    }
    ProviderError::Status {
        provider,
        status: status.as_u16(),
        message,
    }
}

/// The provider's own words from an error body: `{"error":{"message":..}}`
/// (Anthropic, OpenAI), `{"error":".."}` (ollama), else the body itself.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|json| {
        let error = json.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
    });
    truncate(from_json.unwrap_or(body).trim())
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn with_retry_after(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        assert_eq!(retry_after(&with_retry_after("0")), Duration::ZERO);
        assert_eq!(retry_after(&with_retry_after("3")), Duration::from_secs(3));
        assert_eq!(retry_after(&with_retry_after("3600")), RATE_LIMIT_MAX_WAIT);
        assert_eq!(
            retry_after(&with_retry_after("soon")),
            RATE_LIMIT_DEFAULT_WAIT
        );
        assert_eq!(retry_after(&HeaderMap::new()), RATE_LIMIT_DEFAULT_WAIT);
    }

    #[test]
    fn only_transient_statuses_are_retried_twice() {
        let none = HeaderMap::new();
        for code in [502, 503, 504] {
            let status = StatusCode::from_u16(code).unwrap();
            assert_eq!(retry_wait(status, &none, 0), Some(BACKOFF[0]));
            assert_eq!(retry_wait(status, &none, 1), Some(BACKOFF[1]));
            assert_eq!(retry_wait(status, &none, 2), None);
        }
        assert_eq!(
            retry_wait(StatusCode::TOO_MANY_REQUESTS, &none, 1),
            Some(RATE_LIMIT_DEFAULT_WAIT)
        );
        assert_eq!(retry_wait(StatusCode::TOO_MANY_REQUESTS, &none, 2), None);
        for code in [400, 401, 403, 404, 500] {
            assert_eq!(
                retry_wait(StatusCode::from_u16(code).unwrap(), &none, 0),
                None
            );
        }
    }

    #[test]
    fn error_messages_come_from_the_body() {
        assert_eq!(
            error_message(r#"{"type":"error","error":{"type":"x","message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message("  plain text\n"), "plain text");
        let long = "é".repeat(600);
        assert_eq!(error_message(&long).chars().count(), MAX_ERROR_CHARS + 1);
    }
}
