//! `$ZOT_HOME/config.json`, the project's `.zot/config.json`, the
//! environment and the flags, through the built binary; `zot config …`.

use std::io::Write;
use std::process::Stdio;

use serde_json::{Map, Value, json};
use zot_testkit::{MockModel, anthropic, openai};

use super::support::{Run, World};

fn write(path: &std::path::Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

fn user_file(w: &World) -> std::path::PathBuf {
    w.home.join("config.json")
}

fn project_file(w: &World) -> std::path::PathBuf {
    w.project.join(".zot").join("config.json")
}

fn read(path: &std::path::Path) -> Map<String, Value> {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn flags_beat_env_beat_project_beat_user() {
    let w = World::new();
    let model = MockModel::start((0..4).map(|_| anthropic::text("ok"))).await;
    write(&user_file(&w), &json!({"model": "user-m", "max_steps": 9}));
    let run_with = |env: Option<&str>, flag: Option<&str>| -> Run {
        let mut args = vec!["-p", "--no-session", "hi"];
        if let Some(flag) = flag {
            args.extend(["--model", flag]);
        }
        let mut cmd = w.against(&model, "anthropic", &args);
        if let Some(env) = env {
            cmd.env("ZOT_MODEL", env);
        }
        cmd.output().unwrap().into()
    };
    let run = run_with(None, None);
    assert_eq!(run.code, 0, "{run:?}");
    write(&project_file(&w), &json!({"model": "proj-m"}));
    let run = run_with(None, None);
    assert_eq!(run.code, 0, "{run:?}");
    let run = run_with(Some("env-m"), None);
    assert_eq!(run.code, 0, "{run:?}");
    let run = run_with(Some("env-m"), Some("flag-m"));
    assert_eq!(run.code, 0, "{run:?}");
    let models: Vec<Value> = model
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, ["user-m", "proj-m", "env-m", "flag-m"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_user_config_picks_provider_and_base_url_a_project_cannot() {
    let w = World::new();
    let model = MockModel::start([openai::text("from openai")]).await;
    write(
        &user_file(&w),
        &json!({"provider": "openai", "base_url": model.url(), "model": "o4-mini"}),
    );
    write(
        &project_file(&w),
        &json!({"base_url": "http://127.0.0.1:9", "provider": "anthropic", "reasoning": "high"}),
    );
    let run: Run = w
        .cmd(&["-p", "--no-session", "hi"])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "from openai\n");
    let request = &model.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.body["reasoning_effort"], "high",
        "reasoning is allowed"
    );
    let project = project_file(&w).display().to_string();
    for key in ["base_url", "provider"] {
        assert!(
            run.stderr
                .lines()
                .any(|l| l.contains(&project) && l.contains(&format!("\"{key}\" is ignored"))),
            "{key}: {run:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_keys_are_warned_about_and_kept_in_order() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("ok")]).await;
    std::fs::write(
        user_file(&w),
        r#"{"zeta": 1, "model": "claude-sonnet-4-5", "hooks_v0": {"net": false}}"#,
    )
    .unwrap();
    let run: Run = w
        .against(&model, "anthropic", &["-p", "--no-session", "hi"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    for key in ["zeta", "hooks_v0"] {
        assert!(
            run.stderr.contains(&format!("unknown key \"{key}\"")),
            "{run:?}"
        );
    }
    let run = w.zot(&["config", "set", "max_steps", "12"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = w.zot(&["config", "set", "model", "claude-haiku-4-5"]);
    assert_eq!(run.code, 0, "{run:?}");
    let file = read(&user_file(&w));
    let keys: Vec<&String> = file.keys().collect();
    assert_eq!(keys, ["zeta", "model", "hooks_v0", "max_steps"]);
    assert_eq!(file["model"], "claude-haiku-4-5");
    assert_eq!(file["max_steps"], 12);
    assert_eq!(file["hooks_v0"], json!({"net": false}));
}

#[test]
fn a_malformed_user_config_names_file_line_and_column_and_can_be_repaired() {
    let w = World::new();
    std::fs::write(
        user_file(&w),
        "{\n  \"model\": \"m\"\n  \"yolo\": true\n}\n",
    )
    .unwrap();
    let run = w.zot(&["-p", "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    let path = user_file(&w).display().to_string();
    assert!(run.stderr.contains(&path), "{run:?}");
    assert!(run.stderr.contains("line 3, column 3"), "{run:?}");
    let run = w.zot(&["config", "list"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("line 3, column 3"), "{run:?}");
    let run = w.zot(&["config", "path"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.trim(), path);
    // `unset` drops the broken line when that makes the file parse again.
    let run = w.zot(&["config", "unset", "theme"]);
    assert_eq!(run.code, 1, "nothing to drop: {run:?}");
    assert!(run.stderr.contains("line 3, column 3"), "{run:?}");
    let run = w.zot(&["config", "unset", "yolo"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        read(&user_file(&w)),
        *json!({"model": "m"}).as_object().unwrap()
    );

    // A wrong value is named too, and `unset` repairs it.
    std::fs::write(user_file(&w), r#"{"max_steps": "lots", "model": "m"}"#).unwrap();
    let run = w.zot(&["-p", "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("\"max_steps\" must be a positive integer"),
        "{run:?}"
    );
    let run = w.zot(&["config", "unset", "max_steps"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        read(&user_file(&w)),
        *json!({"model": "m"}).as_object().unwrap()
    );
    let run = w.zot(&["config", "get", "model"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "m\n"), "{run:?}");

    // A malformed project file is only a warning.
    std::fs::create_dir_all(w.project.join(".zot")).unwrap();
    std::fs::write(project_file(&w), "{\"model\": ").unwrap();
    let run = w.zot(&["config", "get", "model"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "m\n"), "{run:?}");
}

#[test]
fn config_verbs() {
    let w = World::new();
    let run = w.zot(&["config", "path"]);
    assert_eq!(run.stdout.trim(), user_file(&w).display().to_string());
    let run = w.zot(&["config", "path", "--project"]);
    assert_eq!(run.stdout.trim(), project_file(&w).display().to_string());

    let run = w.zot(&["config", "get", "theme"]);
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "unset: {run:?}");
    assert!(run.stderr.contains("theme is unset"), "{run:?}");
    for (key, value) in [
        ("provider", "openai"),
        ("model", "gpt-4.1"),
        ("auto_compact", "false"),
        ("yolo", "false"),
        ("reasoning", "\"low\""),
    ] {
        let run = w.zot(&["config", "set", key, value]);
        assert_eq!(run.code, 0, "{key}: {run:?}");
    }
    assert_eq!(
        Value::Object(read(&user_file(&w))),
        json!({"provider": "openai", "model": "gpt-4.1", "auto_compact": false, "yolo": false, "reasoning": "low"})
    );
    for (key, value, why) in [
        ("max_steps", "0", "positive integer"),
        (
            "provider",
            "acme",
            "unknown provider \"acme\" (use anthropic, openai, ollama",
        ),
        ("colour", "red", "unknown key"),
        ("auto_compact", "101", "percentage"),
        (
            "base_url",
            "localhost:11434",
            "\"base_url\" must be an http or https URL, not \"localhost:11434\"",
        ),
    ] {
        let run = w.zot(&["config", "set", key, value]);
        assert_eq!(run.code, 1, "{key}: {run:?}");
        assert!(run.stderr.contains(why), "{key}: {run:?}");
    }
    let run = w.zot(&["config", "get", "yolo"]);
    assert_eq!(run.stdout, "false\n");
    let run = w.zot(&["config", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("model = gpt-4.1  # user "), "{run:?}");
    assert!(run.stdout.contains("theme  # unset"), "{run:?}");
    let run: Run = w
        .cmd(&["config", "list"])
        .env("ZOT_MODEL", "o3")
        .output()
        .unwrap()
        .into();
    assert!(
        run.stdout.contains("model = o3  # env ZOT_MODEL"),
        "{run:?}"
    );
    let run = w.zot(&["config", "unset", "yolo"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!read(&user_file(&w)).contains_key("yolo"));

    // The project file takes only its four keys.
    let run = w.zot(&["config", "set", "--project", "base_url", "http://x"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("cannot be set in a project config"),
        "{run:?}"
    );
    assert!(!project_file(&w).exists());
    let run = w.zot(&["config", "set", "--project", "max_steps", "4"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        Value::Object(read(&project_file(&w))),
        json!({"max_steps": 4})
    );
    let run = w.zot(&["config", "get", "max_steps"]);
    assert_eq!(run.stdout, "4\n", "the project wins over the user");
    let run = w.zot(&["config", "list", "--project"]);
    assert_eq!(run.stdout, "max_steps = 4\n");
    let run = w.zot(&["config", "unset", "--project", "max_steps"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(Value::Object(read(&project_file(&w))), json!({}));
}

#[test]
fn config_and_doctor_agree_on_every_value_and_its_source() {
    let w = World::new();
    let run = w.zot(&["config", "get", "provider"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "anthropic\n"),
        "{run:?}"
    );
    let run = w.zot(&["config", "get", "model"]);
    assert_eq!(run.stdout, "claude-sonnet-5-5\n", "{run:?}");
    let list = w.zot(&["config", "list"]).stdout;
    let doctor: Value = serde_json::from_str(&w.zot(&["doctor", "--json"]).stdout).unwrap();
    for (key, entry) in doctor["config"].as_object().unwrap() {
        let line = list
            .lines()
            .find(|l| l.split([' ', '=']).next() == Some(key.as_str()))
            .unwrap_or_else(|| panic!("{key} not listed: {list}"));
        match &entry["value"] {
            Value::Null => assert_eq!(line, format!("{key}  # unset")),
            value => {
                let shown = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                assert!(
                    line.starts_with(&format!(
                        "{key} = {shown}  # {}",
                        entry["source"].as_str().unwrap()
                    )),
                    "{line} vs {entry}"
                );
            }
        }
    }
    // With a key for OpenAI only, both pick OpenAI.
    let run: Run = w
        .cmd(&["config", "get", "provider"])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.stdout, "openai\n", "{run:?}");
}

/// Serves `requests` to `zot rpc` against `model`; every line out.
fn rpc(w: &World, model: &MockModel, requests: &[&str]) -> Vec<Value> {
    let mut cmd = w.against(model, "anthropic", &["rpc"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for line in requests {
            writeln!(stdin, "{line}").unwrap();
        }
    }
    let run: Run = child.wait_with_output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_set_model_saves_only_when_asked() {
    let w = World::new();
    let model = MockModel::start([]).await;
    write(&user_file(&w), &json!({"theme": "dark"}));
    let lines = rpc(
        &w,
        &model,
        &[r#"{"id":1,"type":"set_model","model":"claude-haiku-4-5"}"#],
    );
    assert_eq!(lines[0]["success"], true, "{lines:?}");
    assert_eq!(
        Value::Object(read(&user_file(&w))),
        json!({"theme": "dark"})
    );

    let lines = rpc(
        &w,
        &model,
        &[
            r#"{"id":1,"type":"set_model","model":"claude-haiku-4-5","save":true}"#,
            r#"{"id":2,"type":"get_state"}"#,
        ],
    );
    assert_eq!(lines[0]["success"], true, "{lines:?}");
    assert_eq!(lines[1]["data"]["model"], "claude-haiku-4-5");
    assert_eq!(
        Value::Object(read(&user_file(&w))),
        json!({"theme": "dark", "model": "claude-haiku-4-5"})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_timeout_sets_how_long_a_command_without_its_own_timeout_runs() {
    let w = World::new();
    let refused = w.zot(&["config", "set", "bash_timeout", "3601"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("\"bash_timeout\" must be a number of seconds from 1 to 3600"),
        "{refused:?}"
    );
    let set = w.zot(&["config", "set", "bash_timeout", "1"]);
    assert_eq!(set.code, 0, "{set:?}");
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"sleep 30"}"#),
        anthropic::text("gave up"),
    ])
    .await;
    let run: Run = w
        .against(&model, "anthropic", &["-p", "--no-session", "wait"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let sent = model.requests()[1].body.to_string();
    assert!(sent.contains("[timed out after 1s]"), "{sent}");
}
