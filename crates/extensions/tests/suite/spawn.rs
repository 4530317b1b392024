//! Items 3 and 4: how extensions are spawned, and that they start concurrently.

use std::path::Path;
use std::time::Duration;

use zot_extensions::{ExtensionHost, LoadErrorKind, ReportStatus};

use super::support::{
    Env, PY_PRELUDE, Root, SECS5, eventually, is_running, read_pid, registers, write_exec,
};

const REPORTS_ITSELF: &str = r#"
sys.stderr.write("to stderr from the extension\n")
sys.stderr.flush()
json.dump({"cwd": os.getcwd(), "argv": sys.argv[1:], "pgid": os.getpgid(0), "pid": os.getpid(),
           "ppid": os.getppid(), "apart_from_supervisor": os.getpgid(os.getppid()) != os.getpgid(0)},
          open("self.json", "w"))
"#;

fn self_report(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("self.json")).unwrap()).unwrap()
}

#[tokio::test]
async fn cwd_args_process_group_and_stderr_log() {
    let env = Env::new();
    let dir = env.manifest(
        Root::Global,
        "selfie",
        r#"{"name":"selfie","version":"2.1.0","exec":"./ext.py","args":["--mode","daemon"]}"#,
    );
    write_exec(
        &dir.join("ext.py"),
        &format!(
            "{PY_PRELUDE}\n{REPORTS_ITSELF}\nNAME='selfie'\n{}",
            registers("[]")
        ),
    );
    let (host, _rx) = env.start(&[]).await;
    let me = self_report(&dir);
    assert_eq!(me["cwd"], dir.canonicalize().unwrap().display().to_string());
    assert_eq!(me["argv"], serde_json::json!(["--mode", "daemon"]));
    // Its group is the one its supervisor (its parent) was started with,
    // apart from zot's, which the supervisor is in.
    assert_eq!(me["pgid"], me["ppid"], "not the group it was started with");
    assert_eq!(
        me["apart_from_supervisor"], true,
        "in its supervisor's group"
    );

    let log = env.log("selfie");
    let marker = log.find("[zot] starting selfie/2.1.0 at ").expect(&log);
    let stderr = log.find("to stderr from the extension").expect(&log);
    assert!(marker < stderr, "{log}");
    host.shutdown().await;

    // A second run appends after a new marker.
    let (host, _rx) = env.start(&[]).await;
    host.shutdown().await;
    assert_eq!(
        env.log("selfie")
            .matches("[zot] starting selfie/2.1.0")
            .count(),
        2
    );
}

#[tokio::test]
async fn exec_resolution() {
    let env = Env::new();
    // A path with a separator but no "./" is relative to the extension dir.
    let nested = env.manifest(
        Root::Global,
        "nested",
        r#"{"name":"nested","exec":"bin/run"}"#,
    );
    std::fs::create_dir_all(nested.join("bin")).unwrap();
    write_exec(
        &nested.join("bin/run"),
        &format!("{PY_PRELUDE}\nNAME='nested'\n{}", registers("[]")),
    );
    // "../" is relative to the extension dir too.
    let parent = env.manifest(
        Root::Global,
        "parent",
        r#"{"name":"parent","exec":"../shared/parent.py"}"#,
    );
    std::fs::create_dir_all(env.root(Root::Global).join("shared")).unwrap();
    write_exec(
        &env.root(Root::Global).join("shared/parent.py"),
        &format!("{PY_PRELUDE}\nNAME='parent'\n{}", registers("[]")),
    );
    // A bare name is looked up on PATH; args follow.
    let bare = env.manifest(
        Root::Global,
        "bare",
        r#"{"name":"bare","exec":"python3","args":["ext.py"]}"#,
    );
    std::fs::write(
        bare.join("ext.py"),
        format!("{PY_PRELUDE}\nNAME='bare'\n{}", registers("[]")),
    )
    .unwrap();
    // An absolute path is used as is.
    let abs_script = env.scratch.join("abs.py");
    write_exec(
        &abs_script,
        &format!("{PY_PRELUDE}\nNAME='abs'\n{}", registers("[]")),
    );
    env.manifest(
        Root::Global,
        "abs",
        &format!(
            r#"{{"name":"abs","exec":{:?}}}"#,
            abs_script.display().to_string()
        ),
    );

    let (host, _rx) = env.start(&[]).await;
    let loaded: Vec<_> = host
        .report()
        .iter()
        .filter(|r| matches!(r.status, ReportStatus::Loaded(_)))
        .map(|r| r.name.clone().unwrap())
        .collect();
    assert_eq!(
        loaded,
        ["abs", "bare", "nested", "parent"],
        "{:?}",
        host.report()
    );
    let _ = (nested, parent);
    host.shutdown().await;
}

#[tokio::test]
async fn missing_executable_is_a_clear_load_error() {
    let env = Env::new();
    env.manifest(Root::Global, "ghost", r#"{"name":"ghost","exec":"./nope"}"#);
    let (host, _rx) = env.start(&[]).await;
    let errors = host.errors();
    assert_eq!(errors.len(), 1);
    let err = &errors[0];
    assert!(
        matches!(&err.kind, LoadErrorKind::Spawn { program, .. } if program.ends_with("ghost/./nope"))
    );
    let shown = err.to_string();
    assert!(shown.contains("No such file"), "{shown}");
    assert!(shown.contains("ext-ghost.log"), "{shown}");
    assert!(env.log("ghost").contains("spawn"), "{}", env.log("ghost"));
}

/// The kernel's "No such file" for a script that exists says its `#!`
/// interpreter is missing; for a bare name, that it is not on `PATH`.
#[tokio::test]
async fn a_missing_interpreter_or_command_is_named() {
    let env = Env::new();
    let dir = env.manifest(Root::Global, "old", r#"{"name":"old","exec":"./run"}"#);
    zot_testkit::write_exec(&dir.join("run"), "#!/nonexistent/python9 -u\nprint(1)\n");
    env.manifest(
        Root::Global,
        "gone",
        r#"{"name":"gone","exec":"no-such-command-zot-test"}"#,
    );
    let (host, _rx) = env.start(&[]).await;
    let shown: Vec<String> = host.errors().iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(
        shown.iter().any(|e| e.contains(
            "run: its interpreter /nonexistent/python9 (the script's #! line) was not found"
        )),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e.contains("spawn no-such-command-zot-test: not found on PATH")),
        "{shown:?}"
    );
}

/// Each extension waits at a barrier until all three have started before it
/// says hello: a host that started them one at a time would never see a hello.
#[tokio::test]
async fn extensions_start_concurrently() {
    let env = Env::new();
    let barrier = env.scratch.join("barrier");
    std::fs::create_dir_all(&barrier).unwrap();
    let body = format!(
        r#"
barrier = {:?}
open(os.path.join(barrier, NAME), "w").close()
deadline = time.time() + 8
while len(os.listdir(barrier)) < 3:
    if time.time() > deadline:
        sys.exit(9)
    time.sleep(0.01)
{}"#,
        barrier.display().to_string(),
        registers("[]")
    );
    for name in ["one", "two", "three"] {
        env.py(Root::Global, name, name, &body);
    }
    let mut config = env.config(&[]);
    config.limits.hello_timeout = Duration::from_secs(10);
    let (host, _rx) = ExtensionHost::start(config).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    assert_eq!(
        host.report()
            .iter()
            .filter(|r| matches!(r.status, ReportStatus::Loaded(_)))
            .count(),
        3
    );
    host.shutdown().await;
}

const CHILD_ENV: &str = "ZOT_TEST_CHILD_HOST";

/// Not a test on its own: the host process that
/// `sigkilled_host_takes_its_extensions_with_it` starts and then kills.
#[tokio::test]
#[ignore = "helper process, run by sigkilled_host_takes_its_extensions_with_it"]
async fn child_host() {
    let Some(spec) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let spec: serde_json::Value = serde_json::from_str(spec.to_str().unwrap()).unwrap();
    let mut config = zot_extensions::HostConfig::new(
        spec["home"].as_str().unwrap(),
        spec["project"].as_str().unwrap(),
    );
    config.explicit = vec![spec["ext"].as_str().unwrap().into()];
    let (host, _rx) = ExtensionHost::start(config).await;
    assert!(host.errors().is_empty());
    std::future::pending::<()>().await;
}

#[tokio::test]
async fn sigkilled_host_takes_its_extensions_with_it() {
    let env = Env::new();
    let ext = env.ext(
        "orphan-check",
        &format!(
            "open('pid', 'w').write(str(os.getpid()))\n{}",
            registers("[]")
        ),
    );
    let spec = serde_json::json!({
        "home": env.home, "project": env.project, "ext": ext,
    });
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "suite::spawn::child_host",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ENV, spec.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = read_pid(&ext, "pid").await;
    assert!(is_running(pid));
    child.kill().unwrap(); // SIGKILL: no chance to shut anything down
    child.wait().unwrap();
    assert!(
        eventually(SECS5, || !is_running(pid)).await,
        "extension {pid} outlived its SIGKILLed host"
    );
}
