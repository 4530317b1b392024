//! Named providers through the built binary: `providers` in the user's
//! config.json serving the chat, Responses and Anthropic APIs from a
//! loopback server, their keys (an environment variable, or one stored for
//! a base URL and sent nowhere else), headers, models and prices, the
//! rules (built-in names, https, a project cannot set them) and masking.

use std::io::Write;
use std::process::Stdio;

use serde_json::{Value, json};
use zot_testkit::{MockModel, anthropic, openai, responses};

use super::rpc::Rpc;
use super::support::{Event, Run, World, first_cost};

fn write_config(w: &World, config: &Value) {
    std::fs::write(w.home.join("config.json"), config.to_string()).unwrap();
}

/// `echo KEY | zot auth login NAME`.
fn login(w: &World, name: &str, key: &str) -> Run {
    let mut child = w
        .cmd(&["auth", "login", name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{key}").unwrap();
    child.wait_with_output().unwrap().into()
}

fn run_with(w: &World, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut cmd = w.cmd(args);
    cmd.envs(env.iter().copied());
    cmd.output().unwrap().into()
}

#[tokio::test(flavor = "multi_thread")]
async fn named_providers_speak_chat_responses_and_anthropic_with_their_keys_headers_and_models() {
    let w = World::new();
    let model = MockModel::start([
        openai::Script::new()
            .text("from chat")
            .usage(1000, 500, 0)
            .build(),
        responses::Script::new().text("from responses").build(),
        anthropic::text("from messages"),
    ])
    .await;
    let url = model.url();
    write_config(
        &w,
        &json!({"providers": {
            "chatty": {"base_url": format!("{url}/v1"), "api": "chat", "api_key_env": "CHATTY_KEY",
                       "headers": {"X-Org": "acme"},
                       "models": [{"id": "c1", "context_window": 50000, "max_output": 3000,
                                   "price": {"input": 1.0, "output": 2.0}}]},
            "resp": {"base_url": url, "api": "responses", "api_key_env": "RESP_KEY"},
            "claudish": {"base_url": url, "api": "anthropic", "api_key_env": "CL_KEY"},
            "remote": {"base_url": "https://remote.example/v1", "api_key_env": "REMOTE_KEY"},
        }}),
    );
    let env = [
        ("CHATTY_KEY", "sk-chatty"),
        ("RESP_KEY", "sk-resp"),
        ("CL_KEY", "sk-claudish"),
    ];
    // Its first model is the default; its price is what a call costs.
    let run = run_with(
        &w,
        &env,
        &["--json", "--no-session", "--provider", "chatty", "hi"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let cost = (1000.0 * 1.0 + 500.0 * 2.0) / 1e6;
    assert!((first_cost(&run) - cost).abs() < 1e-12, "{run:?}");
    let chat = &model.requests()[0];
    assert_eq!(chat.path, "/v1/chat/completions");
    assert_eq!(chat.header("authorization"), Some("Bearer sk-chatty"));
    assert_eq!(chat.header("x-org"), Some("acme"));
    assert_eq!(chat.body["model"], "c1");
    assert_eq!(chat.body["max_tokens"], 3000);

    // PROVIDER:ID picks a named provider; ids keep their slashes.
    let args = ["-p", "--no-session", "--model", "resp:vendor/r-1", "hi"];
    let run = run_with(&w, &env, &args);
    assert_eq!(run.stdout, "from responses\n", "{run:?}");
    let sent = &model.requests()[1];
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.body["model"], "vendor/r-1");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-resp"));
    let args = [
        "-p",
        "--no-session",
        "--model",
        "claudish:claude-sonnet-5-5",
        "hi",
    ];
    let run = run_with(&w, &env, &args);
    assert_eq!(run.stdout, "from messages\n", "{run:?}");
    let sent = &model.requests()[2];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-claudish"));
    assert_eq!(sent.header("authorization"), None);

    // `zot models` lists its models beside what it serves, with the headers.
    model.serve_models(&["c1", "c2"]);
    let run = run_with(&w, &env, &["models", "--json", "--provider", "chatty"]);
    assert_eq!(run.code, 0, "{run:?}");
    let listing: Value = serde_json::from_str(&run.stdout).unwrap();
    let ids: Vec<(&str, &Value)> = listing["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), &m["in_table"]))
        .collect();
    assert_eq!(
        ids,
        [("c1", &json!(true)), ("c2", &json!(false))],
        "{listing}"
    );
    assert_eq!(listing["providers"][0]["provider"], "chatty");
    let asked = model.requests().pop().unwrap();
    assert_eq!(asked.path, "/v1/models");
    assert_eq!(asked.header("x-org"), Some("acme"));
    // Every configured provider is listed; one on another machine is not
    // asked without its key.
    let run = w.zot(&["models"]);
    assert!(run.stdout.contains("# chatty ("), "{run:?}");
    assert!(
        run.stdout
            .contains("# remote: not asked: no API key for remote: set REMOTE_KEY"),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stored_key_goes_only_to_the_base_url_it_was_stored_for() {
    let w = World::new();
    let first = MockModel::start([openai::text("keyed")]).await;
    let other = MockModel::start([openai::text("no key here")]).await;
    let config = |url: &str| json!({"providers": {"work": {"base_url": url}}});
    write_config(&w, &config(&first.url()));
    let run = login(&w, "work", "sk-work-0123456789");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains(&format!("sent only to {}", first.url())),
        "{run:?}"
    );
    let auth: Value =
        serde_json::from_str(&std::fs::read_to_string(w.home.join("auth.json")).unwrap()).unwrap();
    assert_eq!(auth["work"]["base_url"], first.url());
    let run = w.zot(&[
        "-p",
        "--no-session",
        "--provider",
        "work",
        "--model",
        "m",
        "hi",
    ]);
    assert_eq!(run.stdout, "keyed\n", "{run:?}");
    assert_eq!(
        first.requests()[0].header("authorization"),
        Some("Bearer sk-work-0123456789")
    );

    // --base-url elsewhere, then the provider moved: the key stays home.
    let base = ["-p", "--no-session", "--provider", "work", "--model", "m"];
    let other_url = other.url();
    let run = w.zot(&[&base[..], &["--base-url", &other_url, "hi"]].concat());
    assert_eq!(run.stdout, "no key here\n", "{run:?}");
    other.push(openai::text("moved"));
    write_config(&w, &config(&other_url));
    let run = w.zot(&[&base[..], &["hi"]].concat());
    assert_eq!(run.stdout, "moved\n", "{run:?}");
    let sent = other.requests();
    assert_eq!(sent.len(), 2);
    assert!(
        sent.iter().all(|r| r.header("authorization").is_none()),
        "{sent:?}"
    );
    let run = w.zot(&["doctor"]);
    assert!(
        run.stdout.contains(&format!(
            "the key stored for work was stored for {}, not {}",
            first.url(),
            other.url()
        )),
        "{run:?}"
    );
    let run = w.zot(&["auth", "logout", "work"]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rules_masking_presets_and_what_a_project_may_not_set() {
    let w = World::new();
    let model =
        MockModel::start([openai::text("local"), openai::text("project model ignored")]).await;
    let url = model.url();
    for (providers, why) in [
        (
            json!({"openai": {"base_url": "https://x.example"}}),
            "built in and cannot be redefined",
        ),
        (
            json!({"x": {"base_url": "http://example.com/v1"}}),
            "must be https unless it is this machine",
        ),
        (json!({"x": {"api": "chat"}}), "needs a base_url"),
    ] {
        write_config(&w, &json!({"providers": providers}));
        let run = w.zot(&["-p", "hi"]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains(why), "{why}: {run:?}");
    }
    let secret = "Bearer sk-header-0123456789abcdef";
    write_config(
        &w,
        &json!({"providers": {
            "lmstudio": {"base_url": format!("{url}/v1")},
            "gw": {"base_url": "https://gw.example/v1", "api_key_env": "GW_KEY",
                   "headers": {"Authorization": secret}},
        }}),
    );
    // A preset named, its URL overridden to the loopback server: no key needed.
    let run = w.zot(&[
        "-p",
        "--no-session",
        "--provider",
        "lmstudio",
        "--model",
        "qwen",
        "hi",
    ]);
    assert_eq!(run.stdout, "local\n", "{run:?}");
    assert_eq!(model.requests()[0].header("authorization"), None);
    // A preset not configured needs its vendor's key variable.
    let run = w.zot(&[
        "-p",
        "--no-session",
        "--provider",
        "groq",
        "--model",
        "m",
        "hi",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("GROQ_API_KEY"), "{run:?}");

    // Keys and header values are masked.
    let env = [("GW_KEY", "sk-gwkey-0123456789abcdef")];
    for args in [
        vec!["config", "list"],
        vec!["doctor", "--json"],
        vec!["doctor"],
    ] {
        let run = run_with(&w, &env, &args);
        for leaked in ["0123456789abcdef", "sk-gwkey"] {
            assert!(!run.stdout.contains(leaked), "{args:?}: {run:?}");
        }
    }
    let doctor: Value =
        serde_json::from_str(&run_with(&w, &env, &["doctor", "--json"]).stdout).unwrap();
    assert_eq!(doctor["credentials"]["gw"]["found"], true, "{doctor}");
    assert_eq!(
        doctor["credentials"]["gw"]["from"], "env GW_KEY",
        "{doctor}"
    );
    assert_eq!(
        doctor["credentials"]["lmstudio"]["needed"], false,
        "{doctor}"
    );
    // The chosen named provider's endpoint is checked at its own URL.
    let run = w.zot(&[
        "--provider",
        "lmstudio",
        "--model",
        "qwen",
        "doctor",
        "--json",
    ]);
    let doctor: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        doctor["endpoint"]["url"],
        format!("{url}/v1/models"),
        "{doctor}"
    );
    assert_eq!(doctor["endpoint"]["ok"], true, "{doctor}");
    assert_eq!(
        doctor["config"]["provider"]["value"], "lmstudio",
        "{doctor}"
    );

    let run = w.zot(&["config", "set", "provider", "gw"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = w.zot(&["config", "set", "provider", "nowhere"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("unknown provider \"nowhere\""),
        "{run:?}"
    );
    let run = w.zot(&["config", "unset", "provider"]);
    assert_eq!(run.code, 0, "{run:?}");

    // A project cannot set providers, and its model never picks one.
    std::fs::create_dir_all(w.project.join(".zot")).unwrap();
    std::fs::write(
        w.project.join(".zot/config.json"),
        json!({"providers": {"evil": {"base_url": "https://evil.example"}},
               "model": "lmstudio:qwen"})
        .to_string(),
    )
    .unwrap();
    let run = w.zot(&[
        "-p",
        "--no-session",
        "--provider",
        "openai",
        "--api-key",
        "k",
        "--base-url",
        &url,
        "hi",
    ]);
    assert_eq!(run.stdout, "project model ignored\n", "{run:?}");
    assert!(run.stderr.contains("\"providers\" is ignored"), "{run:?}");
    assert!(run.stderr.contains("names a provider"), "{run:?}");
    let last = model.requests().pop().unwrap();
    assert_eq!(last.body["model"], "gpt-6.2-sol");
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_set_model_switches_provider_keeping_the_transcript_without_its_thinking() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::Script::new()
            .thinking("pondering", "sig-from-anthropic")
            .text("first answer")
            .build(),
        anthropic::text("second answer"),
        anthropic::text("third answer"),
    ])
    .await;
    let url = model.url();
    write_config(
        &w,
        &json!({"providers": {"claudish": {"base_url": url, "api": "anthropic",
            "models": [{"id": "k2", "context_window": 100000, "max_output": 2000,
                        "price": {"input": 0.5, "output": 1.5}}]}}}),
    );
    assert_eq!(login(&w, "claudish", "sk-claudish-stored").code, 0);
    // What it served at its last listing is offered too.
    model.serve_models(&["k2", "k3"]);
    assert_eq!(w.zot(&["models", "--provider", "claudish"]).code, 0);
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["--no-session"], None);
    rpc.send(r#"{"type":"prompt","message":"one"}"#);
    rpc.done();
    rpc.send(r#"{"type":"get_models"}"#);
    let listed = rpc.response("get_models")["data"]["models"].clone();
    let k2 = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["provider"] == "claudish" && m["id"] == "k2")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(k2["price"]["input"], 0.5, "{k2}");
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["provider"] == "claudish" && m["id"] == "k3"),
        "{listed}"
    );
    rpc.send(r#"{"type":"set_model","model":"k2","provider":"claudish"}"#);
    let set = rpc.response("set_model");
    assert_eq!(set["data"]["provider"], "claudish", "{set}");
    assert_eq!(set["data"]["known"], true, "{set}");
    rpc.send(r#"{"type":"get_state"}"#);
    assert_eq!(rpc.response("get_state")["data"]["provider"], "claudish");
    rpc.send(r#"{"type":"prompt","message":"two"}"#);
    rpc.done();
    rpc.send(r#"{"type":"set_model","model":"m","provider":"nowhere"}"#);
    let refused = rpc.response("set_model");
    assert_eq!(refused["success"], false, "{refused}");
    // Back to the provider it started with, with the key its flags gave.
    rpc.send(r#"{"type":"set_model","model":"claude-haiku-4-5","provider":"anthropic"}"#);
    assert_eq!(rpc.response("set_model")["data"]["provider"], "anthropic");
    rpc.send(r#"{"type":"prompt","message":"three"}"#);
    rpc.done();
    assert_eq!(rpc.close(), 0);
    let third = model.requests().pop().unwrap();
    assert_eq!(third.header("x-api-key"), Some("test-key"));
    assert_eq!(third.body["model"], "claude-haiku-4-5");

    let second = &model.requests()[2];
    assert_eq!(second.header("x-api-key"), Some("sk-claudish-stored"));
    assert_eq!(second.body["model"], "k2");
    assert_eq!(second.body["max_tokens"], 2000);
    let sent = second.body["messages"].to_string();
    assert!(
        sent.contains("first answer") && sent.contains("\"one\""),
        "{sent}"
    );
    assert!(!sent.contains("sig-from-anthropic"), "{sent}");
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_without_a_key_switches_to_a_named_provider_that_has_one_and_back() {
    let w = World::new();
    let model = MockModel::start([openai::text("served by local")]).await;
    write_config(
        &w,
        &json!({"providers": {"local": {"base_url": format!("{}/v1", model.url())}}}),
    );
    let mut cmd = w.cmd(&["rpc", "--no-session"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut rpc = Rpc::from_command(cmd);
    rpc.send(r#"{"type":"set_model","model":"qwen","provider":"local"}"#);
    assert_eq!(rpc.response("set_model")["data"]["provider"], "local");
    rpc.send(r#"{"type":"prompt","message":"hi"}"#);
    let end = rpc.until_event(|e| matches!(e, Event::Done | Event::Error { .. }));
    assert_eq!(end, Event::Done, "{end:?}");
    assert_eq!(model.requests()[0].body["model"], "qwen");
    // The provider it started with still has no key, and says so.
    rpc.send(r#"{"type":"set_model","model":"claude-sonnet-5-5","provider":"anthropic"}"#);
    assert_eq!(rpc.response("set_model")["data"]["provider"], "anthropic");
    rpc.send(r#"{"type":"prompt","message":"hi again"}"#);
    match rpc.until_event(|e| matches!(e, Event::Error { .. })) {
        Event::Error { message } => assert!(message.contains("ANTHROPIC_API_KEY"), "{message}"),
        other => unreachable!("until_event returned {other:?}"),
    }
    assert_eq!(rpc.close(), 0);
    assert_eq!(model.requests().len(), 1);
}
