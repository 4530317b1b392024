//! OAuth for remote MCP servers: the authorization-code flow with PKCE and
//! dynamic registration against a loopback authorization server, the token
//! file, the refresh of an expired token, and the legacy SSE transport using
//! the login (and refusing clearly without one).

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use zot_mcp::legacy_sse::{LegacySseError, LegacySseTransport};
use zot_mcp::oauth;
use zot_testkit::oauth::OAuthServer;

/// The backstop for the whole login (discovery, registration, a `curl`
/// "browser", the code exchange): seconds normally, much more on a machine
/// shared by parallel builds; it only turns a hang into a failure.
const STEP: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_then_the_transport_uses_and_refreshes_the_token() {
    let server = tokio::task::spawn_blocking(|| OAuthServer::start(0))
        .await
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let url = server.mcp_url();

    // No login yet: a clear error naming the way out.
    let err = LegacySseTransport::connect("secure", &url, Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, LegacySseError::Unauthorized { .. }), "{err}");
    assert!(err.to_string().contains("`zot mcp login secure`"), "{err}");
    assert!(
        oauth::authorized(home.path(), "secure", &url)
            .await
            .unwrap()
            .is_none()
    );

    // The "browser" follows the authorization URL and its redirect back to zot.
    let browser = std::sync::Mutex::new(None);
    tokio::time::timeout(
        STEP,
        oauth::login(home.path(), "secure", &url, |auth_url| {
            assert!(
                auth_url.contains("code_challenge_method=S256"),
                "{auth_url}"
            );
            let child = std::process::Command::new("curl")
                .args(["-sf", "-L", "-o", "/dev/null", auth_url])
                .spawn()
                .unwrap();
            *browser.lock().unwrap() = Some(child);
        }),
    )
    .await
    .unwrap()
    .unwrap();
    let status = browser.lock().unwrap().take().unwrap().wait().unwrap();
    assert!(status.success(), "the redirect page answered 200");
    assert!(server.saw("REGISTERED client-1 zot"), "{:?}", server.log());
    assert!(server.saw("PKCE-OK"), "{:?}", server.log());

    let path = oauth::token_path(home.path(), "secure");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let dir_mode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    assert!(std::fs::read_to_string(&path).unwrap().contains("\"at-"));
    assert!(!server.logged("REFRESHED"));

    // The token from the code grant is expired already: the first use refreshes it.
    let manager = oauth::authorized(home.path(), "secure", &url)
        .await
        .unwrap()
        .unwrap();
    let mut transport = LegacySseTransport::connect_authorized(
        "secure",
        &url,
        Default::default(),
        Some(std::sync::Arc::new(manager)),
    )
    .await
    .unwrap();
    assert!(server.saw("REFRESHED"), "{:?}", server.log());
    let reply = super::legacy_sse::ping_round_trip(&mut transport, 1).await;
    assert_eq!(reply["id"], 1);

    // The same file under another URL is not this server's login.
    assert!(
        oauth::authorized(home.path(), "secure", "http://127.0.0.1:9/other")
            .await
            .unwrap()
            .is_none()
    );
    assert!(oauth::logout(home.path(), "secure").unwrap());
    assert!(!path.exists());
    assert!(!oauth::logout(home.path(), "secure").unwrap());
}
