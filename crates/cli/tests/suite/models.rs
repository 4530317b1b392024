//! `zot models` through the built binary: the model table beside what
//! loopback providers serve (`GET /v1/models`, ollama's `/api/tags`), the
//! day-long cache and `--refresh`, and a provider that cannot be reached.

use serde_json::{Value, json};
use zot_testkit::{MockModel, anthropic, openai};

use super::support::World;

/// `zot --base-url URL [extra…] models --json …`, parsed.
fn models(w: &World, url: &str, extra: &[&str], sub: &[&str]) -> Value {
    let mut args = vec!["--base-url", url];
    args.extend_from_slice(extra);
    args.extend(["models", "--json"]);
    args.extend_from_slice(sub);
    let run = w.zot(&args);
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap()
}

fn entry<'a>(listing: &'a Value, id: &str) -> &'a Value {
    listing["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed: {listing}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_table_is_marked_with_what_anthropic_serves_and_the_list_is_cached() {
    let w = World::new();
    let model = MockModel::start([]).await;
    model.serve_models(&[
        "claude-sonnet-5-5",
        "claude-haiku-4-5-20251001",
        "claude-next-6",
    ]);
    let key = ["--provider", "anthropic", "--api-key", "sk-test"];
    let listing = models(&w, &model.url(), &key, &[]);
    let sonnet = entry(&listing, "claude-sonnet-5-5");
    assert_eq!(sonnet["served"], true);
    assert_eq!(sonnet["in_table"], true);
    assert_eq!(sonnet["context_window"], 1_000_000);
    assert_eq!(sonnet["price"]["input"], 2.0);
    // Served under its dated alias.
    assert_eq!(entry(&listing, "claude-haiku-4-5")["served"], true);
    assert_eq!(entry(&listing, "claude-opus-4-1")["served"], false);
    let new = entry(&listing, "claude-next-6");
    assert_eq!(
        (&new["in_table"], &new["served"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
    assert!(new["price"].is_null());
    assert!(
        listing["models"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["provider"] == "anthropic")
    );
    let asked = &model.requests()[0];
    assert_eq!(asked.path, "/v1/models?limit=1000");
    assert_eq!(asked.header("x-api-key"), Some("sk-test"));

    // A day-old list is reused; --refresh asks again.
    model.serve_models(&["claude-opus-4-1"]);
    let again = models(&w, &model.url(), &key, &[]);
    assert_eq!(again["providers"][0]["cached"], true);
    assert_eq!(entry(&again, "claude-opus-4-1")["served"], false);
    assert_eq!(model.requests().len(), 1);
    let fresh = models(&w, &model.url(), &key, &["--refresh"]);
    assert_eq!(entry(&fresh, "claude-opus-4-1")["served"], true);
    assert_eq!(model.requests().len(), 2);
    assert!(w.home.join("cache").read_dir().unwrap().count() >= 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_compatible_servers_and_ollama_list_theirs_and_an_unreachable_one_is_named() {
    let w = World::new();
    let model = MockModel::start([]).await;
    model.serve_models(&["gpt-6.2-sol", "my-local-model"]);
    let url = format!("{}/v1", model.url());
    let openai = ["--provider", "openai", "--api-key", "sk-test"];
    let listing = models(&w, &url, &openai, &[]);
    assert_eq!(entry(&listing, "gpt-6.2-sol")["served"], true);
    assert_eq!(entry(&listing, "gpt-4.1")["served"], false);
    assert_eq!(entry(&listing, "my-local-model")["in_table"], false);
    assert_eq!(model.requests()[0].path, "/v1/models");
    assert_eq!(
        model.requests()[0].header("authorization"),
        Some("Bearer sk-test")
    );

    // ollama needs no key: its tags are its models.
    let listing = models(&w, &model.url(), &["--provider", "ollama"], &[]);
    assert_eq!(entry(&listing, "my-local-model")["served"], true);
    assert_eq!(model.requests()[1].path, "/api/tags");

    // Nothing listens on port 1: named, not waited for, and the table still lists.
    let run = w.zot(&[
        "--base-url",
        "http://127.0.0.1:1",
        "--provider",
        "openai",
        "--api-key",
        "k",
        "models",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("# openai: cannot reach http://127.0.0.1:1"),
        "{run:?}"
    );
    assert!(run.stdout.contains("openai\tgpt-6.2-sol\t"), "{run:?}");
    // Without a key a provider is not asked at all.
    let run = w.zot(&["models", "--provider", "anthropic"]);
    assert!(
        run.stdout
            .contains("# anthropic: not asked: no key (ANTHROPIC_API_KEY)"),
        "{run:?}"
    );
    let run = w.zot(&["models", "--provider", "nope"]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("unknown provider \"nope\""), "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_given_as_provider_colon_id_chooses_both() {
    let w = World::new();
    let model = MockModel::start([openai::text("from openai"), openai::text("tagged")]).await;
    let url = model.url();
    let base = [
        "--api-key",
        "k",
        "--base-url",
        url.as_str(),
        "-p",
        "--no-session",
    ];
    let mut args = base.to_vec();
    args.extend(["--model", "openai:gpt-4.1", "hi"]);
    let run = w.zot(&args);
    assert_eq!(run.stdout, "from openai\n", "{run:?}");
    assert_eq!(model.requests()[0].path, "/v1/chat/completions");
    assert_eq!(model.requests()[0].body["model"], "gpt-4.1");
    // An id whose prefix is no provider stays whole (an ollama tag).
    let mut args = base.to_vec();
    args.extend(["--provider", "ollama", "--model", "llama3.2:8b", "hi"]);
    let run = w.zot(&args);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(model.requests()[1].body["model"], "llama3.2:8b");

    let mut args = base.to_vec();
    args.extend(["--provider", "anthropic", "--model", "openai:gpt-4.1", "hi"]);
    let run = w.zot(&args);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("the model openai:gpt-4.1 is openai's, but the provider is anthropic (--model or ZOT_MODEL"),
        "{run:?}"
    );
    // A project may not pick the provider through its model.
    std::fs::create_dir_all(w.project.join(".zot")).unwrap();
    std::fs::write(
        w.project.join(".zot/config.json"),
        r#"{"model": "openai:gpt-4.1"}"#,
    )
    .unwrap();
    model.push(anthropic::text("default model"));
    let mut args = base.to_vec();
    args.push("hi");
    let run = w.zot(&args);
    assert_eq!(run.stdout, "default model\n", "{run:?}");
    assert!(run.stderr.contains("names a provider"), "{run:?}");
    assert_eq!(model.requests()[2].body["model"], "claude-sonnet-5-5");
}

#[tokio::test(flavor = "multi_thread")]
async fn models_json_adds_and_overrides_models_and_a_broken_one_is_only_a_warning() {
    let w = World::new();
    std::fs::create_dir_all(&w.home).unwrap();
    std::fs::write(
        w.home.join("models.json"),
        r#"{"models": [
            {"id": "my-tuned", "provider": "openai", "context_window": 64000, "max_output": 4000,
             "price": {"input": 1.0, "output": 2.0, "cache_write": 1.0, "cache_read": 0.5}},
            {"id": "gpt-4.1", "provider": "openai", "context_window": 500000, "max_output": 16000,
             "price": {"input": 2.0, "output": 8.0}, "in_table": true, "served": null}
        ]}"#,
    )
    .unwrap();
    let run = w.zot(&["models", "--provider", "openai", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.is_empty(), "{run:?}");
    let listing: Value = serde_json::from_str(&run.stdout).unwrap();
    // The file and the listing's entries both follow the documented schema.
    let schema = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/models.schema.json"),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&serde_json::from_str(&schema).unwrap()).unwrap();
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(w.home.join("models.json")).unwrap())
            .unwrap();
    assert!(validator.is_valid(&file));
    assert!(
        validator.is_valid(&json!({"models": listing["models"]})),
        "{listing}"
    );
    let tuned = entry(&listing, "my-tuned");
    assert_eq!(tuned["context_window"], 64000);
    assert_eq!(tuned["price"]["output"], 2.0);
    assert_eq!(entry(&listing, "gpt-4.1")["context_window"], 500000);

    // Its price is what a call costs, and its output limit what is asked for.
    let model =
        MockModel::start([openai::Script::new().text("ok").usage(1000, 500, 0).build()]).await;
    let run: super::support::Run = w
        .against(
            &model,
            "openai",
            &["--json", "--no-session", "--model", "my-tuned", "hi"],
        )
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let cost = (1000.0 * 1.0 + 500.0 * 2.0) / 1e6;
    assert!(
        (super::support::first_cost(&run) - cost).abs() < 1e-12,
        "{run:?}"
    );
    assert_eq!(model.requests()[0].body["max_tokens"], 4000);

    std::fs::write(
        w.home.join("models.json"),
        "{\"models\": [\n  {\"id\": 1}\n]}",
    )
    .unwrap();
    let run = w.zot(&["models", "--provider", "openai"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("models.json: invalid type"), "{run:?}");
    assert!(run.stderr.contains("line 2 column"), "{run:?}");
    assert!(
        run.stdout.contains("openai\tgpt-4.1\tcontext 1047576"),
        "{run:?}"
    );
}
