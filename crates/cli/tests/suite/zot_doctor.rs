//! `zot doctor`: config with sources, masked credentials, the endpoint,
//! `$ZOT_HOME`, sessions, and the extension report, through the binary.

use serde_json::json;
use zot_testkit::MockModel;

use super::support::{Run, World, json};

fn doctor(w: &World, model: &MockModel, key: Option<&str>, extra: &[&str]) -> Run {
    let url = model.url();
    let mut args = vec!["--base-url", url.as_str()];
    if let Some(key) = key {
        args.extend(["--provider", "anthropic", "--api-key", key]);
    }
    args.extend_from_slice(extra);
    args.extend(["doctor", "--json"]);
    w.zot(&args)
}

#[tokio::test(flavor = "multi_thread")]
async fn with_credentials_everything_is_reported_and_ok() {
    let w = World::new();
    let model = MockModel::start([]).await;
    std::fs::write(
        w.home.join("config.json"),
        r#"{"model": "claude-haiku-4-5"}"#,
    )
    .unwrap();
    let dir = w.ext(&w.scratch, "hello", &[]);
    let run = doctor(
        &w,
        &model,
        Some("sk-ant-test-0123456789"),
        &["--ext", dir.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let doc = json(&run);
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    for key in [
        "ok",
        "config",
        "credentials",
        "endpoint",
        "home",
        "sessions_bytes",
        "sandbox",
        "extensions",
    ] {
        assert!(keys.contains(&&key.to_owned()), "{key}: {doc:#}");
    }
    assert_eq!(doc["ok"], true, "{doc:#}");
    assert_eq!(
        doc["config"]["provider"],
        json!({"value": "anthropic", "source": "flag"})
    );
    let user_file = w.home.join("config.json").display().to_string();
    assert_eq!(
        doc["config"]["model"],
        json!({"value": "claude-haiku-4-5", "source": "user", "from": user_file})
    );
    assert_eq!(doc["config"]["auto_compact"]["source"], "default");
    let anthropic = &doc["credentials"]["anthropic"];
    assert_eq!(anthropic["found"], true);
    assert_eq!(anthropic["key"], "sk-a…6789");
    assert!(!run.stdout.contains("0123456789"), "the key never shows");
    assert_eq!(doc["credentials"]["openai"]["found"], false);
    assert_eq!(doc["endpoint"]["ok"], true, "{doc:#}");
    assert!(doc["endpoint"]["status"].is_u64());
    let probe = &model.requests()[0];
    assert_eq!(probe.path, "/v1/models");
    assert_eq!(probe.header("x-api-key"), Some("sk-ant-test-0123456789"));
    assert_eq!(doc["home"]["path"], w.home.display().to_string());
    assert_eq!(doc["home"]["exists"], true);
    assert!(doc["sessions_bytes"].is_u64());
    assert!(
        doc["sandbox"]["landlock_abi"].is_u64(),
        "{}",
        doc["sandbox"]
    );
    assert_eq!(doc["extensions"]["ok"], true);
    assert_eq!(doc["extensions"]["extensions"][0]["name"], "hello");
    assert_eq!(doc["extensions"]["extensions"][0]["state"], "ready");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_credentials_it_is_broken_and_says_why() {
    let w = World::new();
    let model = MockModel::start([]).await;
    let run = doctor(&w, &model, None, &[]);
    assert_eq!(run.code, 1, "{run:?}");
    let doc = json(&run);
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["credentials"]["anthropic"]["found"], false);
    assert_eq!(
        doc["credentials"]["anthropic"]["variable"],
        "ANTHROPIC_API_KEY"
    );
    let problems = doc["problems"].to_string();
    assert!(problems.contains("ANTHROPIC_API_KEY"), "{problems}");
    assert!(problems.contains("zot auth login"), "{problems}");
    // The endpoint is still checked, without a key.
    assert_eq!(doc["endpoint"]["ok"], true, "{doc:#}");
    assert_eq!(model.requests()[0].header("x-api-key"), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_endpoint_and_a_broken_extension_are_broken() {
    let w = World::new();
    let model = MockModel::start([]).await;
    // Nothing listens on the port of a dropped server.
    let url = {
        let gone = MockModel::start([]).await;
        gone.url()
    };
    let run = w.zot(&[
        "--provider",
        "openai",
        "--api-key",
        "k",
        "--base-url",
        &url,
        "doctor",
        "--json",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    let doc = json(&run);
    assert_eq!(doc["endpoint"]["ok"], false);
    assert!(
        doc["endpoint"]["error"]
            .as_str()
            .unwrap()
            .contains("cannot connect"),
        "{doc:#}"
    );

    let bad = w.ext_in(
        &w.scratch,
        "bad",
        r#"{"name":"bad","version":"1.0.0","exec":"./ext.sh","language":"sh"}"#,
        "#!/bin/sh\nexit 3\n",
    );
    let run = doctor(&w, &model, Some("k"), &["--ext", bad.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    let doc = json(&run);
    assert_eq!(doc["endpoint"]["ok"], true);
    assert_eq!(doc["extensions"]["ok"], false);
    assert_eq!(doc["ok"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_text_report_has_every_section() {
    let w = World::new();
    let model = MockModel::start([]).await;
    let url = model.url();
    let run = w.zot(&[
        "--provider",
        "anthropic",
        "--api-key",
        "k",
        "--base-url",
        &url,
        "doctor",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    for section in [
        "config",
        "credentials",
        "endpoint",
        "home",
        "sessions",
        "extensions",
        "all good",
    ] {
        assert!(run.stdout.contains(section), "{section}: {run:?}");
    }
    assert!(run.stdout.contains("0 extension(s)"), "{run:?}");
}
