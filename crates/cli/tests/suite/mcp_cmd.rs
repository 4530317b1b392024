//! `zot mcp add|list|get|remove|import` through the built binary: both
//! scopes, the `list --json` shape, files edited in place, secrets never shown.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use super::support::{Run, World, json};

const SECRET_ENV: &str = "env-secret-5a1b";
const SECRET_HEADER: &str = "header-secret-9c2d";

fn ok(run: Run) -> Run {
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        !run.stdout.contains(SECRET_ENV) && !run.stderr.contains(SECRET_ENV),
        "an env value was printed: {run:?}"
    );
    assert!(
        !run.stdout.contains(SECRET_HEADER) && !run.stderr.contains(SECRET_HEADER),
        "a header value was printed: {run:?}"
    );
    run
}

fn read(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn add_list_get_remove_round_trip_on_both_scopes() {
    let w = World::new();
    // A user file with keys zot does not know, which an edit must keep in place.
    let user_file = w.home.join("mcp.json");
    std::fs::write(
        &user_file,
        r#"{"z_first": 1, "mcpServers": {"keep": {"command": "keep-me", "x_custom": [1, 2]}}, "a_last": {"b": 2, "a": 1}}"#,
    )
    .unwrap();

    let env = format!("TOKEN={SECRET_ENV}");
    ok(w.zot(&[
        "mcp",
        "add",
        "-e",
        &env,
        "--env",
        "MODE=fast",
        "fs",
        "--",
        "npx",
        "-y",
        "server-fs",
        "-e",
        "/tmp",
    ]));
    let header = format!("Authorization: Bearer {SECRET_HEADER}");
    ok(w.zot(&[
        "mcp",
        "add",
        "--scope",
        "project",
        "--transport",
        "http",
        "remote",
        "https://mcp.example.com/mcp",
        "--header",
        &header,
    ]));
    ok(w.zot(&[
        "mcp",
        "add",
        "--scope",
        "global",
        "--transport",
        "sse",
        "legacy",
        "http://127.0.0.1:9/sse",
    ]));

    let saved = read(&user_file);
    let keys: Vec<&String> = saved.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["z_first", "mcpServers", "a_last"], "key order kept");
    assert_eq!(saved["a_last"], json!({"b": 2, "a": 1}));
    let servers: Vec<&String> = saved["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(servers, ["keep", "fs", "legacy"]);
    assert_eq!(saved["mcpServers"]["keep"]["x_custom"], json!([1, 2]));
    assert_eq!(
        saved["mcpServers"]["fs"],
        json!({"command": "npx", "args": ["-y", "server-fs", "-e", "/tmp"],
               "env": {"TOKEN": SECRET_ENV, "MODE": "fast"}}),
        "-e after `--` belongs to the command"
    );
    assert_eq!(
        saved["mcpServers"]["legacy"],
        json!({"type": "sse", "url": "http://127.0.0.1:9/sse"})
    );
    let project = read(&w.project.join(".mcp.json"));
    assert_eq!(
        project,
        json!({"mcpServers": {"remote": {"type": "http", "url": "https://mcp.example.com/mcp",
               "headers": {"Authorization": format!("Bearer {SECRET_HEADER}")}}}})
    );
    let mode = std::fs::metadata(w.project.join(".mcp.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "a new file is the user's alone");

    let listed = json(&ok(w.zot(&["mcp", "list", "--json"])));
    assert_eq!(
        listed,
        json!([
            {"name": "keep", "scope": "user", "transport": "stdio", "command": "keep-me",
             "enabled": true, "state": "ok"},
            {"name": "fs", "scope": "user", "transport": "stdio", "command": "npx",
             "args": ["-y", "server-fs", "-e", "/tmp"], "enabled": true, "state": "ok"},
            {"name": "legacy", "scope": "user", "transport": "sse",
             "url": "http://127.0.0.1:9/sse", "enabled": true, "state": "ok"},
            {"name": "remote", "scope": "project", "transport": "http",
             "url": "https://mcp.example.com/mcp", "enabled": true, "state": "untrusted"},
        ])
    );
    let table = ok(w.zot(&["mcp", "list"]));
    assert!(
        table.stdout.contains("npx -y server-fs -e /tmp"),
        "{table:?}"
    );

    let got = ok(w.zot(&["mcp", "get", "fs"]));
    assert!(
        got.stdout.contains("TOKEN, MODE (values hidden)"),
        "{got:?}"
    );
    let got = json(&ok(w.zot(&["mcp", "get", "remote", "--json"])));
    assert_eq!(got[0]["header_names"], json!(["Authorization"]));
    assert_eq!(got[0]["state"], "untrusted");
    let got = ok(w.zot(&["mcp", "get", "remote"]));
    assert!(
        got.stdout.contains("Authorization (values hidden)"),
        "{got:?}"
    );

    // A name already taken in that file is refused, naming the way out.
    let again = w.zot(&["mcp", "add", "fs", "--", "other"]);
    assert_ne!(again.code, 0);
    assert!(again.stderr.contains("zot mcp remove fs"), "{again:?}");

    ok(w.zot(&["mcp", "remove", "fs"]));
    ok(w.zot(&["mcp", "remove", "remote", "--scope", "project"]));
    let missing = w.zot(&["mcp", "remove", "remote"]);
    assert_ne!(missing.code, 0);
    assert!(
        missing.stderr.contains("no MCP server named"),
        "{missing:?}"
    );
    let names: Vec<Value> = json(&ok(w.zot(&["mcp", "list", "--json"])))
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].clone())
        .collect();
    assert_eq!(names, [json!("keep"), json!("legacy")]);
    let saved = read(&user_file);
    let keys: Vec<&String> = saved.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["z_first", "mcpServers", "a_last"]);
    assert_eq!(
        read(&w.project.join(".mcp.json")),
        json!({"mcpServers": {}})
    );
}

#[test]
fn the_same_name_in_both_scopes_needs_a_scope_to_remove_and_shadows_once_trusted() {
    let w = World::new();
    ok(w.zot(&["mcp", "add", "dup", "--", "user-cmd"]));
    ok(w.zot(&[
        "mcp",
        "add",
        "--scope",
        "project",
        "dup",
        "--",
        "project-cmd",
    ]));
    let listed = json(&ok(w.zot(&["mcp", "list", "--json", "--trust"])));
    assert_eq!(listed[0]["state"], "shadowed", "{listed}");
    assert_eq!(listed[1]["state"], "ok", "{listed}");
    let both = w.zot(&["mcp", "remove", "dup"]);
    assert_ne!(both.code, 0);
    assert!(both.stderr.contains("--scope"), "{both:?}");
    ok(w.zot(&["mcp", "remove", "dup", "--scope", "user"]));
    let listed = json(&ok(w.zot(&["mcp", "list", "--json"])));
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["scope"], "project");
}

#[test]
fn bad_input_is_a_clear_error() {
    let w = World::new();
    for (args, says) in [
        (
            vec!["mcp", "add", "x", "--", "https://a.example/mcp"],
            "--transport http",
        ),
        (
            vec!["mcp", "add", "--transport", "http", "x", "ftp://a"],
            "http://",
        ),
        (
            vec!["mcp", "add", "--transport", "http", "x", "not a url"],
            "invalid URL",
        ),
        (
            vec!["mcp", "add", "-e", "NOEQUALS", "x", "--", "cmd"],
            "KEY=VALUE",
        ),
        (
            vec!["mcp", "add", "--header", "A: b", "x", "--", "cmd"],
            "remote servers",
        ),
        (
            vec![
                "mcp",
                "add",
                "--transport",
                "sse",
                "x",
                "http://a",
                "--header",
                "no-colon",
            ],
            "Name: value",
        ),
        (
            vec!["mcp", "add", "bad name", "--", "cmd"],
            "invalid server name",
        ),
        (vec!["mcp", "get", "nothing"], "no MCP server named"),
    ] {
        let run = w.zot(&args);
        assert_ne!(run.code, 0, "{args:?}: {run:?}");
        assert!(run.stderr.contains(says), "{args:?}: {run:?}");
    }
    std::fs::write(w.home.join("mcp.json"), "{not json").unwrap();
    let run = w.zot(&["mcp", "list"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("mcp.json is not valid JSON"), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(w.home.join("mcp.json")).unwrap(),
        "{not json",
        "a broken file is left alone"
    );
}

/// `~/.claude.json` (user and per-project servers) and `~/.codex/config.toml`
/// as those tools write them. `HOME` is the world's scratch dir.
fn write_samples(w: &World) {
    std::fs::write(
        w.scratch.join(".claude.json"),
        json!({
            "numStartups": 3,
            "mcpServers": {
                "claude-stdio": {"type": "stdio", "command": "node", "args": ["server.js"],
                                 "env": {"KEY": SECRET_ENV}},
                "shared": {"type": "http", "url": "https://claude.example/mcp"}
            },
            "projects": {
                "/some/project": {"mcpServers": {
                    "claude-sse": {"type": "sse", "url": "https://sse.example/sse",
                                   "headers": {"X-Api-Key": SECRET_HEADER}}
                }}
            }
        })
        .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(w.scratch.join(".codex")).unwrap();
    std::fs::write(
        w.scratch.join(".codex/config.toml"),
        format!(
            r#"model = "o3"

[mcp_servers.codex-stdio]
command = "uvx"
args = ["mcp-server-git"]
env = {{ GIT_TOKEN = "{SECRET_ENV}" }}
startup_timeout_ms = 20500
enabled_tools = ["status"]

[mcp_servers.codex-http]
url = "https://codex.example/mcp"
bearer_token_env_var = "CODEX_TOKEN"
http_headers = {{ "X-Team" = "{SECRET_HEADER}" }}
env_http_headers = {{ "X-Key" = "KEY_VAR" }}
enabled = false

[mcp_servers.shared]
command = "never-imported"
"#
        ),
    )
    .unwrap();
}

#[test]
fn import_from_claude_code_and_codex() {
    let w = World::new();
    write_samples(&w);
    ok(w.zot(&["mcp", "add", "claude-stdio", "--", "mine"]));

    // Without a terminal, a choice must be given.
    let run = w.zot(&["mcp", "import"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("--all"), "{run:?}");
    assert!(
        run.stderr.contains("codex-http (http, from Codex)"),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("claude-sse (sse, from Claude Code (project /some/project))"),
        "{run:?}"
    );

    let run = ok(w.zot(&["mcp", "import", "codex-stdio", "--scope", "project"]));
    assert!(
        run.stderr.contains("imported codex-stdio from Codex"),
        "{run:?}"
    );
    assert_eq!(
        read(&w.project.join(".mcp.json"))["mcpServers"]["codex-stdio"],
        json!({"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_TOKEN": SECRET_ENV},
               "startup_timeout_sec": 21, "enabled_tools": ["status"]})
    );

    let run = ok(w.zot(&["mcp", "import", "--all"]));
    assert!(
        run.stderr.contains("skipped claude-stdio from Claude Code (user): a server of that name is already configured"),
        "{run:?}"
    );
    assert!(run.stderr.contains("skipped codex-stdio"), "{run:?}");
    assert!(
        run.stderr.contains("skipped shared from Codex"),
        "the second `shared` is a duplicate: {run:?}"
    );
    let servers = &read(&w.home.join("mcp.json"))["mcpServers"];
    assert_eq!(servers["claude-stdio"], json!({"command": "mine"}), "kept");
    assert_eq!(
        servers["shared"],
        json!({"type": "http", "url": "https://claude.example/mcp"})
    );
    assert_eq!(
        servers["claude-sse"],
        json!({"type": "sse", "url": "https://sse.example/sse", "headers": {"X-Api-Key": SECRET_HEADER}})
    );
    assert_eq!(
        servers["codex-http"],
        json!({"type": "http", "url": "https://codex.example/mcp",
               "headers": {"X-Team": SECRET_HEADER, "X-Key": "${KEY_VAR}"},
               "disabled": true, "bearer_token_env_var": "CODEX_TOKEN"})
    );
    // The state is the host's: `${KEY_VAR}` must be set for the entry to load.
    let mut cmd = w.cmd(&["mcp", "list", "--json"]);
    let listed = json(&ok(cmd.env("KEY_VAR", "x").output().unwrap().into()));
    let codex_http = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "codex-http")
        .unwrap();
    assert_eq!(codex_http["enabled"], false);
    assert_eq!(codex_http["state"], "disabled");
    let got = ok(w.zot(&["mcp", "get", "codex-http"]));
    assert!(
        got.stdout.contains("state:                invalid"),
        "{got:?}"
    );
    assert!(got.stdout.contains("KEY_VAR is not set"), "{got:?}");

    let run = w.zot(&["mcp", "import", "nope"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("no server named \"nope\""), "{run:?}");
}

#[test]
fn import_asks_on_a_terminal() {
    let w = World::new();
    write_samples(&w);
    // `script` gives zot a pseudo-terminal for stdin; the answer is typed into it.
    let mut cmd = std::process::Command::new("script");
    cmd.args([
        "-qec",
        &format!("{} mcp import", super::support::ZOT),
        "/dev/null",
    ]);
    w.place(&mut cmd);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"1 3\n").unwrap();
    }
    let run: Run = child.wait_with_output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("import which?"), "{run:?}");
    let servers = read(&w.home.join("mcp.json"))["mcpServers"].clone();
    let names: Vec<&String> = servers.as_object().unwrap().keys().collect();
    assert_eq!(names, ["claude-stdio", "claude-sse"]);
}

/// `zot mcp login <name>` with `$BROWSER` a script that follows the
/// authorization URL and its redirect back to zot, as a browser would.
fn login(w: &World, name: &str) -> Run {
    let browser = w.scratch.join("browser.sh");
    zot_testkit::write_exec(
        &browser,
        "#!/bin/sh\nexec curl -sf -L -o /dev/null \"$1\"\n",
    );
    let mut cmd = w.cmd(&["mcp", "login", name]);
    cmd.env("BROWSER", &browser).output().unwrap().into()
}

/// A world with server `secure` of `transport` behind a loopback authorization server.
fn protected(transport: &str) -> (World, zot_testkit::oauth::OAuthServer) {
    let w = World::new();
    let server = zot_testkit::oauth::OAuthServer::start(3600);
    let url = match transport {
        "sse" => server.mcp_url(),
        _ => server.http_url(),
    };
    ok(w.zot(&["mcp", "add", "--transport", transport, "secure", &url]));
    (w, server)
}

#[test]
fn login_runs_the_oauth_flow_through_browser_and_logout_forgets_it() {
    let (w, server) = protected("sse");
    let run = login(&w, "secure");
    assert_eq!(run.code, 0, "{run:?}\n{:?}", server.log());
    assert!(run.stderr.contains("to sign in, open this URL"), "{run:?}");
    assert!(run.stderr.contains("signed in to secure"), "{run:?}");
    assert!(
        !run.stderr.contains("at-") && !run.stdout.contains("at-"),
        "no token printed: {run:?}"
    );
    assert!(
        server.saw("REGISTERED") && server.saw("PKCE-OK"),
        "{:?}",
        server.log()
    );
    let tokens = w.home.join("mcp-oauth/secure.json");
    let mode = std::fs::metadata(&tokens).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // Only remote servers sign in; an untrusted project's file cannot pick the URL.
    ok(w.zot(&["mcp", "add", "local", "--", "cmd"]));
    let run = w.zot(&["mcp", "login", "local"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("stdio server"), "{run:?}");
    let theirs = [
        "--scope=project",
        "--transport=http",
        "theirs",
        "http://127.0.0.1:9/mcp",
    ];
    ok(w.zot(&[&["mcp", "add"][..], &theirs].concat()));
    let run = w.zot(&["mcp", "login", "theirs"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("zot trust"), "{run:?}");

    let run = ok(w.zot(&["mcp", "logout", "secure"]));
    assert!(run.stderr.contains("removed the stored login"), "{run:?}");
    assert!(!tokens.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_answering_401_needs_a_login_and_works_after_it() {
    let (w, server) = protected("http");
    // A run goes on without it, saying once what to do.
    let model = zot_testkit::MockModel::start([zot_testkit::anthropic::text("no server")]).await;
    let run: Run = w
        .against(&model, "anthropic", &["-p", "--no-session", "hi"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "no server\n", "{run:?}");
    assert_eq!(
        run.stderr.matches("run `zot mcp login secure`").count(),
        1,
        "{run:?}"
    );

    let doctor = w.zot(&["ext", "doctor", "--json"]);
    let entry = json(&doctor)["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "mcp:secure")
        .cloned()
        .unwrap_or_else(|| panic!("{doctor:?}"));
    let error = entry["error"].to_string();
    assert!(
        error.contains("401 Unauthorized") && error.contains("run `zot mcp login secure`"),
        "{entry}"
    );

    let run = login(&w, "secure");
    assert_eq!(run.code, 0, "{run:?}");

    let doctor = w.zot(&["ext", "doctor", "--json"]);
    assert!(doctor.stdout.contains("mcp__secure__whoami"), "{doctor:?}");
    assert!(server.saw("POST /mcp"), "{:?}", server.log());
}
