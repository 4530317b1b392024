//! Items 5 and 6: the hello handshake, its failures, and hello_ack.

use std::time::Duration;

use zot_extensions::{ExtensionHost, HandshakeError, LoadError, LoadErrorKind, ReportStatus};

use super::support::{Env, SECS5, eventually, is_running, read_pid, received_of, registers};

const WRITES_PID: &str = "open('pid', 'w').write(str(os.getpid()))\n";

/// Starts one `--ext` extension with `body` and returns its load error.
async fn failing(env: &Env, name: &str, body: &str, hello_timeout: Duration) -> (LoadError, i32) {
    let dir = env.ext(name, &format!("{WRITES_PID}{body}"));
    let mut config = env.config(&[&dir]);
    config.limits.hello_timeout = hello_timeout;
    let (host, _rx) = ExtensionHost::start(config).await;
    let errors = host.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(host.commands().is_empty());
    let pid = read_pid(&dir, "pid").await;
    (errors[0].clone(), pid)
}

fn assert_reports(err: &LoadError, env: &Env, name: &str, status: &str) {
    let shown = err.to_string();
    let log = env.home.join("logs").join(format!("ext-{name}.log"));
    assert!(
        shown.contains(&log.display().to_string()),
        "no log path in: {shown}"
    );
    assert_eq!(err.status.as_deref(), Some(status), "{shown}");
    assert!(shown.contains(status), "{shown}");
    let logged = env.log(name);
    assert!(logged.contains("failed to load"), "{logged}");
}

#[tokio::test]
async fn first_frame_not_hello() {
    let env = Env::new();
    let (err, pid) = failing(
        &env,
        "early",
        "emit({'type':'ready'})\ntime.sleep(60)\n",
        SECS5,
    )
    .await;
    assert_eq!(
        err.kind,
        LoadErrorKind::Handshake(HandshakeError::NotHello("\"ready\"".into()))
    );
    assert!(
        err.to_string()
            .contains("first frame must be hello (got \"ready\")"),
        "{err}"
    );
    assert_reports(&err, &env, "early", "signal: 9 (SIGKILL)");
    assert!(!is_running(pid), "the failed extension was left running");
}

#[tokio::test]
async fn first_frame_bad_json() {
    let env = Env::new();
    let body = "sys.stdout.write('{not json\\n'); sys.stdout.flush()\ntime.sleep(60)\n";
    let (err, pid) = failing(&env, "garbled", body, SECS5).await;
    assert!(
        matches!(
            err.kind,
            LoadErrorKind::Handshake(HandshakeError::BadJson(_))
        ),
        "{err}"
    );
    assert!(err.to_string().contains("not valid JSON"), "{err}");
    assert_reports(&err, &env, "garbled", "signal: 9 (SIGKILL)");
    assert!(!is_running(pid));
}

#[tokio::test]
async fn hello_name_must_match_manifest() {
    let env = Env::new();
    let body = "emit({'type':'hello','name':'impostor'})\ntime.sleep(60)\n";
    let (err, pid) = failing(&env, "honest", body, SECS5).await;
    assert_eq!(
        err.kind,
        LoadErrorKind::Handshake(HandshakeError::NameMismatch {
            got: "impostor".into(),
            want: "honest".into()
        })
    );
    assert!(
        err.to_string().contains("does not match the manifest name"),
        "{err}"
    );
    assert!(!is_running(pid));
}

#[tokio::test]
async fn exit_before_hello_reports_the_exit_status() {
    let env = Env::new();
    let (err, _) = failing(&env, "quitter", "sys.exit(3)\n", SECS5).await;
    assert_eq!(
        err.kind,
        LoadErrorKind::Handshake(HandshakeError::ExitedBeforeHello)
    );
    assert_reports(&err, &env, "quitter", "exit status: 3");
}

#[tokio::test]
async fn death_by_signal_before_hello_names_the_signal() {
    let env = Env::new();
    let (err, _) = failing(
        &env,
        "zapped",
        "os.kill(os.getpid(), signal.SIGTERM)\n",
        SECS5,
    )
    .await;
    assert_eq!(
        err.kind,
        LoadErrorKind::Handshake(HandshakeError::ExitedBeforeHello)
    );
    assert_reports(&err, &env, "zapped", "signal: 15 (SIGTERM)");
}

#[tokio::test]
async fn silent_extension_times_out_and_is_killed() {
    let env = Env::new();
    // sh, not python: it writes its pid within the short deadline even on a loaded machine.
    let dir = env.manifest(
        super::support::Root::Scratch,
        "mute",
        r#"{"name":"mute","version":"1.0.0","exec":"./ext.sh"}"#,
    );
    super::support::write_exec(
        &dir.join("ext.sh"),
        "#!/bin/sh\necho $$ > pid.tmp && mv pid.tmp pid\nexec sleep 60\n",
    );
    let mut config = env.config(&[&dir]);
    config.limits.hello_timeout = Duration::from_millis(400);
    let (host, _rx) = ExtensionHost::start(config).await;
    let errors = host.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (err, pid) = (errors[0].clone(), read_pid(&dir, "pid").await);
    assert_eq!(
        err.kind,
        LoadErrorKind::Handshake(HandshakeError::Timeout(Duration::from_millis(400)))
    );
    assert!(err.to_string().contains("no hello within"), "{err}");
    assert_reports(&err, &env, "mute", "signal: 9 (SIGKILL)");
    assert!(!is_running(pid));
}

#[tokio::test]
async fn hello_timeout_defaults_to_ten_seconds() {
    assert_eq!(
        zot_extensions::limits::HELLO_TIMEOUT,
        Duration::from_secs(10)
    );
    assert_eq!(
        zot_extensions::Limits::default().hello_timeout,
        Duration::from_secs(10)
    );
}

#[tokio::test]
async fn hello_ack_carries_host_metadata() {
    let env = Env::new();
    let dir = env.ext("acked", &registers("[]"));
    let (host, _rx) = env.start(&[&dir]).await;
    assert!(matches!(host.report()[0].status, ReportStatus::Loaded(_)));
    let acks = received_of(&dir, "hello_ack");
    assert_eq!(acks.len(), 1);
    let ack = &acks[0];
    let abs = std::path::absolute(&dir).unwrap().display().to_string();
    assert_eq!(
        *ack,
        serde_json::json!({
            "type": "hello_ack", "protocol_version": 1, "zot_version": "9.9.9",
            "provider": "anthropic", "model": "test-model",
            "cwd": env.project.display().to_string(),
            "extension_dir": abs, "data_dir": abs,
        })
    );
    assert!(std::path::Path::new(ack["data_dir"].as_str().unwrap()).is_absolute());
    host.shutdown().await;
}

#[tokio::test]
async fn hello_ack_follows_model_changes_on_reload() {
    let env = Env::new();
    let dir = env.ext("follower", &registers("[]"));
    let (host, _rx) = env.start(&[&dir]).await;
    host.set_model("openai", "gpt-x");
    host.reload().await;
    assert!(eventually(SECS5, || received_of(&dir, "hello_ack").len() == 2).await);
    let acks = received_of(&dir, "hello_ack");
    assert_eq!(acks[1]["provider"], "openai");
    assert_eq!(acks[1]["model"], "gpt-x");
    host.shutdown().await;
}
