//! `web_fetch` through the built binary against a loopback web server: the
//! address check (loopback refused, a name resolved first, a redirect to a
//! metadata address refused through a proxy), pages as Markdown, text or
//! HTML once private addresses are allowed, caps, non-HTML types, and no
//! run where nobody can be asked (`--no-yolo` in `-p`) or the sandbox has no
//! network.

use std::process::Command;

use zot_testkit::web::{Page, WebServer};
use zot_testkit::{MockModel, anthropic};

use super::support::{Event, Run, World, first, text, typed_events};

const PROXY_VARS: &[&str] = &[
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

const HTML: &str = "<html><head><title>T</title><script>evil()</script></head><body>\
    <h1>Title</h1><p>Some <b>bold</b> words and <a href=\"https://example.org/x\">a link</a>.</p>\
    </body></html>";

/// `zot --json` in `w` against `model`, with no proxy variables but `env`.
fn run(w: &World, model: &MockModel, args: &[&str], env: &[(&str, String)]) -> Run {
    let mut cmd: Command = w.against(model, "anthropic", args);
    for var in PROXY_VARS {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.output().unwrap().into()
}

/// The result of call `id`: its text and whether it is an error.
fn result(events: &[Event], id: &str) -> (String, bool) {
    let (content, is_error) = first!(
        events,
        Event::ToolResult { id: of, content, is_error } if of == id => (content, *is_error)
    );
    (text(&content[0]).to_owned(), is_error)
}

fn fetch(id: &str, args: &str) -> (String, String) {
    (id.to_owned(), args.to_owned())
}

fn calls(list: &[(String, String)]) -> zot_testkit::Response {
    list.iter()
        .fold(anthropic::Script::new(), |script, (id, args)| {
            script.tool_call(id, "web_fetch", args)
        })
        .build()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_guard_refuses_loopback_names_that_resolve_to_it_and_private_redirects() {
    let w = World::new();
    let web = WebServer::start(vec![
        ("/page", Page::ok("text/html", HTML)),
        (
            "/start",
            Page::redirect("http://169.254.169.254/latest/meta-data/"),
        ),
    ])
    .await;
    let port = web.port();
    let model = MockModel::start([
        calls(&[
            fetch("loop", &format!(r#"{{"url":"{}"}}"#, web.url("/page"))),
            fetch(
                "name",
                &format!(r#"{{"url":"http://localhost:{port}/page"}}"#),
            ),
            fetch("hop", r#"{"url":"http://93.184.216.34/start"}"#),
            fetch("ftp", r#"{"url":"ftp://example.org/file"}"#),
            fetch("fmt", r#"{"url":"https://example.org/","format":"pdf"}"#),
        ]),
        anthropic::text("refused"),
    ])
    .await;
    // The web server doubles as the proxy for plain http (the model's
    // loopback server is reached directly).
    let proxy = vec![
        ("HTTP_PROXY", format!("http://127.0.0.1:{port}")),
        ("NO_PROXY", "127.0.0.1,localhost".to_owned()),
    ];
    let out = run(&w, &model, &["--json", "--no-session", "fetch"], &proxy);
    assert_eq!(out.code, 0, "{out:?}");
    let evs = typed_events(&out);
    let (loopback, is_error) = result(&evs, "loop");
    assert!(is_error, "{loopback}");
    assert!(
        loopback.contains("127.0.0.1 is a loopback address")
            && loopback.contains("\"web_fetch.allow_private\": true"),
        "{loopback}"
    );
    let (name, _) = result(&evs, "name");
    assert!(name.contains("is a loopback address"), "{name}");
    let (hop, is_error) = result(&evs, "hop");
    assert!(is_error, "{hop}");
    assert!(
        hop.contains("169.254.169.254 is a link-local address"),
        "{hop}"
    );
    let (ftp, _) = result(&evs, "ftp");
    assert!(ftp.contains("http and https URLs only, not ftp:"), "{ftp}");
    let (fmt, _) = result(&evs, "fmt");
    assert!(
        fmt.contains("`format` must be markdown, text or html"),
        "{fmt}"
    );
    // Only the public hop went out (through the proxy); nothing reached the
    // loopback page.
    assert_eq!(web.requests(), ["http://93.184.216.34/start"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn allowed_private_pages_come_back_as_markdown_text_html_and_capped() {
    let w = World::new();
    std::fs::write(
        w.home.join("config.json"),
        r#"{"web_fetch.allow_private": true}"#,
    )
    .unwrap();
    let big = "x".repeat(6 * 1024 * 1024);
    let web = WebServer::start(vec![
        ("/old", Page::redirect("/page")),
        ("/page", Page::ok("text/html; charset=utf-8", HTML)),
        ("/data.json", Page::ok("application/json", r#"{"a":1}"#)),
        ("/big", Page::ok("text/plain", big)),
        (
            "/logo.png",
            Page::ok("image/png", b"\x89PNG\r\n\x1a\n\0\0".to_vec()),
        ),
        // Not UTF-8: the header's charset, then a <meta> one.
        (
            "/latin1",
            Page::ok("text/plain; charset=ISO-8859-1", b"caf\xe9".to_vec()),
        ),
        (
            "/cyrillic",
            Page::ok(
                "text/html",
                b"<html><head><meta charset=\"windows-1251\"></head><body><p>\xf9\xe8</p></body></html>"
                    .to_vec(),
            ),
        ),
    ])
    .await;
    let url = |path: &str| web.url(path);
    let model = MockModel::start([
        calls(&[
            fetch("md", &format!(r#"{{"url":"{}"}}"#, url("/old"))),
            fetch(
                "txt",
                &format!(r#"{{"url":"{}","format":"text"}}"#, url("/page")),
            ),
            fetch(
                "raw",
                &format!(r#"{{"url":"{}","format":"html"}}"#, url("/page")),
            ),
            fetch("json", &format!(r#"{{"url":"{}"}}"#, url("/data.json"))),
            fetch(
                "big",
                &format!(r#"{{"url":"{}","max_bytes":100}}"#, url("/big")),
            ),
            fetch("png", &format!(r#"{{"url":"{}"}}"#, url("/logo.png"))),
            fetch("gone", &format!(r#"{{"url":"{}"}}"#, url("/missing"))),
            fetch("latin1", &format!(r#"{{"url":"{}"}}"#, url("/latin1"))),
            fetch("cyrillic", &format!(r#"{{"url":"{}"}}"#, url("/cyrillic"))),
        ]),
        anthropic::text("fetched"),
    ])
    .await;
    let out = run(&w, &model, &["--json", "--no-session", "fetch"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let evs = typed_events(&out);

    let (md, is_error) = result(&evs, "md");
    assert!(!is_error, "{md}");
    assert_eq!(
        md,
        format!(
            "URL: {}\nContent-Type: text/html; charset=utf-8\n\n# Title\n\nSome **bold** words \
             and [a link](https://example.org/x).",
            url("/page")
        )
    );
    let (txt, _) = result(&evs, "txt");
    assert!(
        txt.ends_with("\n\nTitle\nSome bold words and a link."),
        "{txt}"
    );
    let (raw, _) = result(&evs, "raw");
    assert!(raw.ends_with(HTML), "{raw}");
    let (json, _) = result(&evs, "json");
    assert!(
        json.ends_with("Content-Type: application/json\n\n{\"a\":1}"),
        "{json}"
    );
    let (big, _) = result(&evs, "big");
    assert!(
        big.contains("Note: the page is larger than 5242880 bytes; only its start was downloaded")
            && big.contains("Note: 100 of 5242880 bytes shown; raise max_bytes to see more")
            && big.ends_with(&format!("\n\n{}", "x".repeat(100))),
        "{big}"
    );
    let (png, _) = result(&evs, "png");
    assert!(
        png.ends_with("[binary content, 10 bytes, not shown]"),
        "{png}"
    );
    let (gone, is_error) = result(&evs, "gone");
    assert!(is_error && gone.contains("Status: 404 Not Found"), "{gone}");
    assert!(gone.ends_with("no such page"), "{gone}");
    let (latin1, _) = result(&evs, "latin1");
    assert!(latin1.ends_with("\n\ncafé"), "{latin1}");
    let (cyrillic, _) = result(&evs, "cyrillic");
    assert!(cyrillic.ends_with("\n\nщи"), "{cyrillic}");
}

#[tokio::test(flavor = "multi_thread")]
async fn no_yolo_without_a_user_and_a_sandbox_without_network_refuse_it() {
    let w = World::new();
    std::fs::write(
        w.home.join("config.json"),
        r#"{"web_fetch.allow_private": true}"#,
    )
    .unwrap();
    let web = WebServer::start(vec![("/page", Page::ok("text/plain", "hello"))]).await;
    let args = format!(r#"{{"url":"{}"}}"#, web.url("/page"));
    let model = MockModel::start([
        anthropic::tool_call("a", "web_fetch", &args),
        anthropic::text("went on"),
        anthropic::tool_call("b", "web_fetch", &args),
        anthropic::text("went on again"),
    ])
    .await;
    let asked = run(
        &w,
        &model,
        &["--json", "--no-session", "--no-yolo", "go"],
        &[],
    );
    assert_eq!(asked.code, 0, "{asked:?}");
    let evs = typed_events(&asked);
    let (text, is_error) = result(&evs, "a");
    assert!(
        is_error
            && text.contains("web_fetch reaches the network")
            && text.contains("nobody can answer"),
        "{text}"
    );
    assert!(asked.stdout.contains("went on"), "the turn goes on");
    let sandboxed = run(
        &w,
        &model,
        &["--json", "--no-session", "--sandbox", "workspace", "go"],
        &[],
    );
    let evs = typed_events(&sandboxed);
    let (text, is_error) = result(&evs, "b");
    assert!(is_error && text.contains("has no network"), "{text}");
    assert!(web.requests().is_empty(), "{:?}", web.requests());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_asks_before_web_fetch_under_no_yolo() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::tool_call("f", "web_fetch", r#"{"url":"https://example.org/doc"}"#),
        anthropic::text("not fetched"),
    ])
    .await;
    let tmux = super::tui::Tmux::against(&w, "webfetch-ask", &model, &["--no-yolo"]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("read the doc");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Run this tool?");
    assert!(screen.contains("https://example.org/doc"), "{screen}");
    tmux.type_text("n");
    // The refusal stops the turn; the next prompt follows it.
    tmux.wait_for("type what to do instead");
    tmux.type_text("never mind");
    tmux.keys(&["Enter"]);
    tmux.wait_for("not fetched");
    let second = model.requests()[1].body.to_string();
    assert!(second.contains("tool call refused by user"), "{second}");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}
