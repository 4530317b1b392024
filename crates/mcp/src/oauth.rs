//! OAuth for remote MCP servers, on `rmcp`'s auth support: `zot mcp login`
//! runs the authorization-code flow with PKCE (discovery of the
//! authorization server, dynamic client registration when it offers it, a
//! loopback redirect), and the tokens it gets are kept per server under
//! `$ZOT_HOME/mcp-oauth/` (0600, written atomically), bound to the server's
//! URL, and refreshed by `rmcp` when they expire.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
    StoredCredentials,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// The directory of stored tokens inside `$ZOT_HOME`, one file per server.
pub const TOKEN_DIR: &str = "mcp-oauth";

/// How long `zot mcp login` waits for the browser to come back to the
/// loopback redirect: a person reads a consent page and may have to sign in
/// first; after this the login fails instead of listening forever.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Longest request line plus headers read from the browser on the loopback
/// redirect: a redirect with a code and state is well under 8 KiB.
const MAX_CALLBACK_BYTES: usize = 16 * 1024;

/// The client name sent with dynamic client registration.
const CLIENT_NAME: &str = "zot";

#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("mcp:{server}: {message}")]
    Auth { server: String, message: String },
    #[error("mcp:{server}: {path}: {error}")]
    Store {
        server: String,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "mcp:{server}: no login completed within {} s (the browser never came back to {redirect})",
        LOGIN_TIMEOUT.as_secs()
    )]
    Timeout { server: String, redirect: String },
}

/// The token file of `server`.
pub fn token_path(zot_home: &Path, server: &str) -> PathBuf {
    zot_home.join(TOKEN_DIR).join(format!("{server}.json"))
}

/// What a token file holds: the credentials and the URL they were obtained
/// for, so a changed URL in the config never receives the old server's token.
#[derive(Serialize, Deserialize)]
struct TokenFile {
    url: String,
    credentials: StoredCredentials,
}

/// `rmcp`'s credential store over one server's token file.
pub struct FileTokenStore {
    path: PathBuf,
    url: String,
}

impl FileTokenStore {
    pub fn new(zot_home: &Path, server: &str, url: &str) -> Self {
        Self {
            path: token_path(zot_home, server),
            url: url.to_owned(),
        }
    }

    fn read(&self) -> std::io::Result<Option<StoredCredentials>> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let file: TokenFile = serde_json::from_str(&text).map_err(std::io::Error::other)?;
        // Tokens obtained for another URL are not this server's.
        Ok((file.url == self.url).then_some(file.credentials))
    }

    fn write(&self, credentials: StoredCredentials) -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        if let Some(dir) = self.path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let file = TokenFile {
            url: self.url.clone(),
            credentials,
        };
        let mut text = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
        text.push(b'\n');
        zot_extensions::atomic_file::write_private(&self.path, &text)
    }
}

fn store_error(path: &Path, e: std::io::Error) -> AuthError {
    AuthError::CredentialStoreError(format!("{}: {e}", path.display()))
}

#[async_trait::async_trait]
impl CredentialStore for FileTokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(|e| store_error(&self.path, e))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials)
            .map_err(|e| store_error(&self.path, e))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(store_error(&self.path, e)),
        }
    }
}

/// The error of a server that answered 401 to a request without a login.
pub fn login_needed(server: &str, url: &str) -> String {
    format!(
        "mcp:{server}: {url} answered 401 Unauthorized: the server needs a login; run `zot mcp login {server}`"
    )
}

/// Whether `zot mcp login` stored tokens for `server` at `url`.
pub fn has_login(zot_home: &Path, server: &str, url: &str) -> bool {
    matches!(FileTokenStore::new(zot_home, server, url).read(), Ok(Some(c)) if c.token_response.is_some())
}

/// Forgets `server`'s tokens; returns whether there were any.
pub fn logout(zot_home: &Path, server: &str) -> Result<bool, OAuthError> {
    let path = token_path(zot_home, server);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(OAuthError::Store {
            server: server.to_owned(),
            path,
            error,
        }),
    }
}

fn auth_error(server: &str) -> impl Fn(AuthError) -> OAuthError + '_ {
    move |e| OAuthError::Auth {
        server: server.to_owned(),
        message: e.to_string(),
    }
}

/// The authorization manager of a server `zot mcp login` signed in to, ready
/// to hand out (and refresh) access tokens; `None` without a stored login.
pub async fn authorized(
    zot_home: &Path,
    server: &str,
    url: &str,
) -> Result<Option<AuthorizationManager>, OAuthError> {
    if !has_login(zot_home, server, url) {
        return Ok(None);
    }
    // rmcp builds its own reqwest clients, which need the TLS provider.
    zot_http::install_tls_provider();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(auth_error(server))?;
    manager.set_credential_store(FileTokenStore::new(zot_home, server, url));
    if !manager
        .initialize_from_store()
        .await
        .map_err(auth_error(server))?
    {
        return Ok(None);
    }
    Ok(Some(manager))
}

/// A fresh access token from `manager` (refreshed when it expired); a login
/// that can no longer be refreshed is the error naming `zot mcp login`.
pub async fn access_token(
    manager: &AuthorizationManager,
    server: &str,
) -> Result<String, OAuthError> {
    manager.get_access_token().await.map_err(|e| match e {
        AuthError::AuthorizationRequired => OAuthError::Auth {
            server: server.to_owned(),
            message: format!("the stored login has expired; run `zot mcp login {server}` again"),
        },
        other => auth_error(server)(other),
    })
}

/// Runs the authorization-code flow with PKCE for `server` at `url`:
/// discovery, registration, `open(authorization URL)` (the caller opens a
/// browser or prints it), then the loopback redirect, the code exchange,
/// and the tokens saved.
pub async fn login(
    zot_home: &Path,
    server: &str,
    url: &str,
    open: impl FnOnce(&str),
) -> Result<(), OAuthError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| OAuthError::Auth {
            server: server.to_owned(),
            message: format!("cannot listen on a loopback port for the redirect: {e}"),
        })?;
    let port = listener
        .local_addr()
        .map_err(|e| OAuthError::Auth {
            server: server.to_owned(),
            message: e.to_string(),
        })?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");

    // rmcp builds its own reqwest clients, which need the TLS provider.
    zot_http::install_tls_provider();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(auth_error(server))?;
    manager.set_credential_store(FileTokenStore::new(zot_home, server, url));
    let resolution = manager
        .resolve_metadata()
        .await
        .map_err(|e| OAuthError::Auth {
            server: server.to_owned(),
            message: format!("cannot find the server's authorization server: {e}"),
        })?;
    manager.set_metadata(resolution.metadata);
    let request = AuthorizationRequest::new(redirect.clone()).with_client_name(CLIENT_NAME);
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| auth_error(server)(e))?;
    open(session.get_authorization_url());

    let callback = tokio::time::timeout(LOGIN_TIMEOUT, wait_for_redirect(&listener, port))
        .await
        .map_err(|_| OAuthError::Timeout {
            server: server.to_owned(),
            redirect: redirect.clone(),
        })?
        .map_err(|message| OAuthError::Auth {
            server: server.to_owned(),
            message,
        })?;
    session
        .handle_callback_url(&callback)
        .await
        .map_err(auth_error(server))?;
    Ok(())
}

/// Answers requests on the loopback listener until one is the redirect
/// (`/callback?...`); returns its full URL. The page tells the person to go
/// back to the terminal.
async fn wait_for_redirect(listener: &TcpListener, port: u16) -> Result<String, String> {
    loop {
        let (stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut stream = BufReader::new(stream);
        let mut head = String::new();
        // Only the request line matters; the rest is read to keep the browser happy.
        let mut line = String::new();
        loop {
            line.clear();
            let read = (&mut stream)
                .take(MAX_CALLBACK_BYTES as u64)
                .read_line(&mut line)
                .await
                .map_err(|e| e.to_string())?;
            head.push_str(&line);
            if read == 0 || line.trim().is_empty() || head.len() > MAX_CALLBACK_BYTES {
                break;
            }
        }
        let target = head
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("")
            .to_owned();
        let is_callback = target.starts_with("/callback?");
        let (status, body) = if is_callback && target.contains("error=") {
            (
                "400 Bad Request",
                "zot: the authorization server refused the login. You can close this tab.",
            )
        } else if is_callback {
            (
                "200 OK",
                "zot: signed in. You can close this tab and go back to the terminal.",
            )
        } else {
            (
                "404 Not Found",
                "zot: waiting for the authorization redirect.",
            )
        };
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.get_mut().write_all(response.as_bytes()).await;
        let _ = stream.get_mut().shutdown().await;
        if is_callback {
            let full = format!("http://127.0.0.1:{port}{target}");
            if let Some(error) = query_value(&full, "error") {
                let detail = query_value(&full, "error_description").unwrap_or_default();
                return Err(
                    format!("the authorization server refused: {error} {detail}")
                        .trim()
                        .to_owned(),
                );
            }
            return Ok(full);
        }
    }
}

fn query_value(url: &str, key: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// Opens `url` with `$BROWSER` (the first of a `:`-separated list; `%s`
/// stands for the URL, else the URL is its last argument). `Ok(None)` when
/// `$BROWSER` is not set; the browser runs on its own (reaped by a thread).
pub fn open_with_browser(url: &str) -> Result<Option<String>, String> {
    let Some(browser) = std::env::var("BROWSER")
        .ok()
        .and_then(|b| b.split(':').next().map(str::to_owned))
        .filter(|b| !b.trim().is_empty())
    else {
        return Ok(None);
    };
    // The URL is passed as "$1", never spliced into the shell text.
    let script = if browser.contains("%s") {
        browser.replace("%s", "\"$1\"")
    } else {
        format!("{browser} \"$1\"")
    };
    let mut child = std::process::Command::new("sh")
        .args(["-c", &script, "sh", url])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run $BROWSER ({browser}): {e}"))?;
    std::thread::spawn(move || child.wait());
    Ok(Some(browser))
}
