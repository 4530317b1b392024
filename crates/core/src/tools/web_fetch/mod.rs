//! The `web_fetch` tool: one web page for the model, as Markdown, text or
//! HTML. http(s) only; redirects followed by hand (each hop checked again);
//! a whole-call deadline; the download capped after decoding. Unless the user
//! allows it (`web_fetch.allow_private`), an address on the user's machine or
//! network is refused after DNS resolution and the connection goes to the
//! addresses that were checked (`guard`). Through a proxy (the `*_PROXY`
//! variables, by the rules reqwest follows) the check is of the URL's host.

mod convert;
mod guard;

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, LOCATION};
use serde_json::{Value, json};

use super::args::{args_object, optional_count, optional_str, required_str};
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

pub use guard::refused;

/// Redirects followed at most (the issue: 5).
pub const MAX_REDIRECTS: usize = 5;

/// The whole call, every hop and the body included (the issue: 30 s).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Most bytes downloaded (the issue: 5 MB); the rest of a larger page is
/// not read.
pub const MAX_DOWNLOAD_BYTES: usize = 5 * 1024 * 1024;

/// Bytes of the converted page returned when the call names no `max_bytes`,
/// the same as one `read` of a file.
pub const DEFAULT_RESULT_BYTES: usize = 51_200;

/// What the server is told zot is.
const USER_AGENT: &str = concat!("zot/", env!("CARGO_PKG_VERSION"), " (web_fetch)");

pub struct WebFetchTool {
    /// `web_fetch.allow_private`: the address check is off.
    allow_private: bool,
}

impl WebFetchTool {
    pub fn new(allow_private: bool) -> Self {
        Self { allow_private }
    }
}

impl Tool for WebFetchTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_fetch".into(),
            description: format!(
                "Fetch a web page (http or https) and return it as Markdown (default), plain text \
                 or the raw HTML, with its final URL and content type. Other text types (JSON, \
                 plain text, XML) come back as they are; binary content is not returned. Follows \
                 up to {MAX_REDIRECTS} redirects, gives up after {} s, downloads at most {} MB and \
                 returns at most max_bytes (default {DEFAULT_RESULT_BYTES}). Public addresses only.",
                FETCH_TIMEOUT.as_secs(),
                MAX_DOWNLOAD_BYTES / (1024 * 1024)
            ),
            schema: json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "The http:// or https:// URL to fetch."},
                    "format": {"type": "string", "enum": ["markdown", "text", "html"], "description": "How to return an HTML page (default markdown)."},
                    "max_bytes": {"type": "integer", "minimum": 1, "maximum": MAX_DOWNLOAD_BYTES, "description": "Most bytes of the page to return."}
                },
                "required": ["url"]
            }).into(),
            // It changes nothing locally: offered in plan mode, runs in parallel.
            read_only: true,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let request = match Request::parse(&args) {
                Ok(request) => request,
                Err(output) => return output,
            };
            if ctx.sandbox.mode != zot_sandbox::SandboxMode::Off && !ctx.sandbox.net {
                return ToolOutput::error(format!(
                    "the sandbox ({}) has no network, and web_fetch counts as network; \
                     --sandbox-net (or sandbox_net: true) allows it",
                    ctx.sandbox.describe()
                ));
            }
            let fetch = tokio::time::timeout(FETCH_TIMEOUT, self.fetch(request.url.clone()));
            let page = tokio::select! {
                () = ctx.cancel.cancelled() => return ToolOutput::error("aborted"),
                page = fetch => match page {
                    Ok(Ok(page)) => page,
                    Ok(Err(why)) => return ToolOutput::error(why),
                    Err(_) => return ToolOutput::error(format!(
                        "{} did not answer within {} s", request.url, FETCH_TIMEOUT.as_secs()
                    )),
                },
            };
            page.render(request.format, request.max_bytes)
        })
    }

    fn checks_own_arguments(&self) -> bool {
        true
    }

    fn reaches_network(&self) -> bool {
        true
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Markdown,
    Text,
    Html,
}

struct Request {
    url: Url,
    format: Format,
    max_bytes: usize,
}

impl Request {
    fn parse(args: &Value) -> Result<Self, ToolOutput> {
        let obj = args_object(args)?;
        let text = required_str(obj, "url")?;
        let url = Url::parse(text.trim())
            .map_err(|e| ToolOutput::error(format!("invalid URL {text:?}: {e}")))?;
        check_scheme(&url).map_err(ToolOutput::error)?;
        let format = match optional_str(obj, "format")? {
            None | Some("markdown") => Format::Markdown,
            Some("text") => Format::Text,
            Some("html") => Format::Html,
            Some(other) => {
                return Err(ToolOutput::error(format!(
                    "argument `format` must be markdown, text or html, got {other:?}"
                )));
            }
        };
        let max_bytes = optional_count(obj, "max_bytes", 1, MAX_DOWNLOAD_BYTES)?
            .unwrap_or(DEFAULT_RESULT_BYTES);
        Ok(Self {
            url,
            format,
            max_bytes,
        })
    }
}

fn check_scheme(url: &Url) -> Result<(), String> {
    match url.scheme() {
        "http" | "https" if url.host_str().is_some() => Ok(()),
        "http" | "https" => Err(format!("{url} has no host")),
        other => Err(format!(
            "web_fetch fetches http and https URLs only, not {other}:"
        )),
    }
}

/// A fetched page.
struct Page {
    url: Url,
    status: reqwest::StatusCode,
    content_type: String,
    body: Vec<u8>,
    /// The page was longer than [`MAX_DOWNLOAD_BYTES`].
    cut: bool,
}

impl WebFetchTool {
    /// GETs `url`, following redirects, each hop checked and connected to
    /// the addresses checked.
    async fn fetch(&self, mut url: Url) -> Result<Page, String> {
        let proxies = hyper_util::client::proxy::matcher::Matcher::from_env();
        for hop in 0..=MAX_REDIRECTS {
            check_scheme(&url)?;
            let client = self.client_for(&url, &proxies).await?;
            let mut response = client
                .get(url.clone())
                .header(
                    ACCEPT,
                    "text/html, text/markdown;q=0.9, text/plain;q=0.8, */*;q=0.5",
                )
                .header(ACCEPT_ENCODING, "identity")
                .send()
                .await
                .map_err(|e| format!("cannot fetch {url}: {}", error_chain(&e)))?;
            if response.status().is_redirection()
                && let Some(location) = response.headers().get(LOCATION)
            {
                if hop == MAX_REDIRECTS {
                    return Err(format!(
                        "{url} redirects again after {MAX_REDIRECTS} redirects; giving up"
                    ));
                }
                let location = location
                    .to_str()
                    .map_err(|_| format!("{url} redirects to an unreadable Location"))?;
                url = url
                    .join(location)
                    .map_err(|e| format!("{url} redirects to {location:?}: {e}"))?;
                continue;
            }
            if let Some(encoding) = response.headers().get(CONTENT_ENCODING)
                && !encoding.as_bytes().eq_ignore_ascii_case(b"identity")
            {
                return Err(format!(
                    "{url} was sent compressed ({}) although web_fetch asked for no compression",
                    String::from_utf8_lossy(encoding.as_bytes())
                ));
            }
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_default();
            let mut body = Vec::new();
            let mut cut = false;
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| format!("reading {url}: {}", error_chain(&e)))?
            {
                let room = MAX_DOWNLOAD_BYTES - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    cut = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            return Ok(Page {
                status: response.status(),
                url,
                content_type,
                body,
                cut,
            });
        }
        Err(format!("more than {MAX_REDIRECTS} redirects"))
    }

    /// A client for one hop to `url`: straight to the checked addresses, or
    /// through the proxy the environment names for it (the URL's host then
    /// checked instead).
    async fn client_for(
        &self,
        url: &Url,
        proxies: &hyper_util::client::proxy::matcher::Matcher,
    ) -> Result<reqwest::Client, String> {
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(80);
        let uri: http::Uri = url
            .as_str()
            .parse()
            .map_err(|e| format!("invalid URL {url}: {e}"))?;
        let proxied = proxies.intercept(&uri).is_some();
        let mut builder = crate::provider::http_client(url.as_str())
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT);
        if !proxied {
            builder = builder.no_proxy();
        }
        if !self.allow_private {
            let addrs = guard::resolve(host, port).await?;
            let literal = host
                .trim_start_matches('[')
                .parse::<std::net::IpAddr>()
                .is_ok()
                || host.starts_with('[');
            if !proxied && !literal {
                builder = builder.resolve_to_addrs(host, &addrs);
            }
        }
        builder
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {e}"))
    }
}

impl Page {
    fn render(self, format: Format, max_bytes: usize) -> ToolOutput {
        let media = convert::media_type(&self.content_type);
        let shown_type = match self.content_type.as_str() {
            "" => "(none)",
            t => t,
        };
        let mut head = format!("URL: {}\nContent-Type: {shown_type}\n", self.url);
        if !self.status.is_success() {
            head.push_str(&format!("Status: {}\n", self.status));
        }
        if !convert::is_text(&media, &self.body) {
            head.push_str(&format!(
                "\n[binary content, {} bytes, not shown]",
                self.body.len()
            ));
            return ToolOutput {
                is_error: !self.status.is_success(),
                ..ToolOutput::text(head)
            };
        }
        let html = convert::is_html(&media);
        let raw = convert::decode(&self.body, &self.content_type, html);
        let content = match (html, format) {
            (true, Format::Markdown) => convert::markdown(&raw),
            (true, Format::Text) => convert::text(&raw),
            _ => raw,
        };
        // Notes go first: the agent's own cap keeps a result's start.
        let total = content.len();
        let mut end = total.min(max_bytes);
        while !content.is_char_boundary(end) {
            end -= 1;
        }
        let mut out = head;
        if self.cut {
            out.push_str(&format!(
                "Note: the page is larger than {MAX_DOWNLOAD_BYTES} bytes; only its start was \
                 downloaded\n"
            ));
        }
        if end < total {
            out.push_str(&format!(
                "Note: {end} of {total} bytes shown; raise max_bytes to see more\n"
            ));
        }
        out.push('\n');
        out.push_str(&content[..end]);
        ToolOutput {
            is_error: !self.status.is_success(),
            ..ToolOutput::text(out)
        }
    }
}

/// An error with its causes (reqwest's own message is often just "error
/// sending request").
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
