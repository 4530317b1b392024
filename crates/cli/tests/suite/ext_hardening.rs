//! One bad extension must not disable zot or leak: tool names and counts
//! it registers, where its state and log go, what it inherits, and what it
//! leaves running.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use zot_testkit::{MockModel, anthropic};

use super::support::{Run, World, json};

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A sh extension `<scratch>/<name>` whose script is `body` (after hello).
fn raw_ext(w: &World, name: &str, body: &str) -> PathBuf {
    let manifest = format!(r#"{{"name":"{name}","version":"1.0.0","exec":"./ext.sh"}}"#);
    let script = format!(
        "#!/bin/sh\necho '{{\"type\":\"hello\",\"name\":\"{name}\"}}'\nread -r ack\n{body}"
    );
    w.ext_in(&w.scratch, name, &manifest, &script)
}

/// Answers `shutdown` and waits for end of input: the rest of a sh extension.
const SERVE: &str = r#"echo '{"type":"ready"}'
while read -r line; do
  case "$line" in
    *shutdown*) echo '{"type":"shutdown_ack"}'; exit 0 ;;
  esac
done
"#;

#[tokio::test(flavor = "multi_thread")]
async fn tool_names_the_providers_reject_are_refused_and_zot_keeps_working() {
    let w = World::new();
    let zot_ext = w.ext(
        &w.scratch,
        "badtools",
        &[
            r#"{"type":"register_tool","name":"bad name!","schema":{"type":"object"}}"#,
            r#"{"type":"register_tool","name":"fine_tool","schema":{"type":"object"}}"#,
        ],
    );
    // The same through nimlet's register line.
    let nimlet = w.scratch.join("nimbad");
    std::fs::create_dir_all(&nimlet).unwrap();
    std::fs::write(
        nimlet.join("extension.json"),
        r#"{"name":"nimbad","command":["./ext.sh"]}"#,
    )
    .unwrap();
    let register = r#"{"type":"register","commands":[],"tools":[{"name":"ü","description":"d","input_schema":{"type":"object"}},{"name":"nim_ok","description":"d","input_schema":{"type":"object"}}]}"#;
    zot_testkit::write_exec(
        &nimlet.join("ext.sh"),
        &format!("#!/bin/sh\nread -r init\necho '{register}'\nwhile read -r line; do :; done\n"),
    );

    let model = MockModel::start([anthropic::text("still here")]).await;
    let run: Run = w
        .against(
            &model,
            "anthropic",
            &[
                "-p",
                "--no-session",
                "--ext",
                zot_ext.to_str().unwrap(),
                "--ext",
                nimlet.to_str().unwrap(),
                "hi",
            ],
        )
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "still here\n");
    assert!(
        run.stderr.contains(
            "zot: warning: extension badtools: tool \"bad name!\" rejected: a tool name must be 1 to 64"
        ),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("zot: warning: extension nimbad: tool \"ü\" rejected"),
        "{run:?}"
    );
    let names = tool_names(&model.requests()[0].body);
    assert!(
        names.contains(&"fine_tool".to_owned()) && names.contains(&"nim_ok".to_owned()),
        "{names:?}"
    );
    assert!(
        names.iter().all(|n| n
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')),
        "{names:?}"
    );
    assert!(
        w.log("badtools").contains("rejected"),
        "{}",
        w.log("badtools")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_whose_schema_is_not_json_schema_are_refused_and_the_others_offered() {
    let w = World::new();
    let ext = w.ext(
        &w.scratch,
        "schemas",
        &[
            r#"{"type":"register_tool","name":"type_seven","schema":{"type":7}}"#,
            r#"{"type":"register_tool","name":"bad_pattern","schema":{"type":"object","properties":{"x":{"type":"string","pattern":"(unclosed"}}}}"#,
            r#"{"type":"register_tool","name":"bad_required","schema":{"type":"object","required":"x"}}"#,
            r#"{"type":"register_tool","name":"an_array","schema":{"type":"array"}}"#,
            r#"{"type":"register_tool","name":"a_string","schema":"nope"}"#,
            r#"{"type":"register_tool","name":"untyped","schema":{"properties":{"x":{"type":"string"}}}}"#,
            r#"{"type":"register_tool","name":"good","schema":{"type":"object","properties":{"x":{"type":"string","pattern":"^[a-z]+$"}},"required":["x"]}}"#,
        ],
    );
    let refused = [
        ("type_seven", "/type: 7 is not a type"),
        ("bad_pattern", "is not a regular expression"),
        ("bad_required", "/required: must be an array of strings"),
        ("an_array", "/type: must be \"object\""),
        ("a_string", "the schema is a string, not a JSON object"),
    ];
    let model = MockModel::start([anthropic::text("fine")]).await;
    let run: Run = w
        .against(
            &model,
            "anthropic",
            &["-p", "--no-session", "--ext", ext.to_str().unwrap(), "hi"],
        )
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "fine\n");
    for (name, why) in refused {
        let warning = format!(
            "zot: warning: extension schemas: tool \"{name}\" rejected: invalid input schema: "
        );
        let line = run.stderr.lines().find(|l| l.starts_with(&warning));
        assert!(line.is_some_and(|l| l.contains(why)), "{name}: {run:?}");
    }
    // The request the model server accepted (it holds every tool's schema to
    // the Messages API's rules): the refused tools left out, the untyped
    // schema given its `"type": "object"`.
    let body = &model.requests()[0].body;
    let names = tool_names(body);
    assert!(names.contains(&"good".to_owned()), "{names:?}");
    for (name, _) in refused {
        assert!(!names.contains(&name.to_owned()), "{names:?}");
    }
    let untyped = body["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "untyped"))
        .expect("the untyped tool is offered");
    assert_eq!(
        untyped["input_schema"],
        serde_json::json!({"properties": {"x": {"type": "string"}}, "type": "object"})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn one_extension_registers_at_most_256_commands_and_256_tools() {
    let w = World::new();
    let flood = r#"i=0
while [ $i -lt 300 ]; do
  echo "{\"type\":\"register_tool\",\"name\":\"t$i\",\"schema\":{\"type\":\"object\"}}"
  echo "{\"type\":\"register_command\",\"name\":\"c$i\"}"
  i=$((i+1))
done
"#;
    let dir = raw_ext(&w, "flood", &format!("{flood}{SERVE}"));
    let model = MockModel::start([anthropic::text("ok")]).await;
    let run: Run = w
        .against(
            &model,
            "anthropic",
            &["-p", "--no-session", "--ext", dir.to_str().unwrap(), "hi"],
        )
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let names = tool_names(&model.requests()[0].body);
    let mine = names
        .iter()
        .filter(|n| {
            n.strip_prefix('t')
                .is_some_and(|i| i.parse::<u32>().is_ok())
        })
        .count();
    assert_eq!(mine, 256, "{names:?}");
    assert!(names.contains(&"t255".to_owned()) && !names.contains(&"t256".to_owned()));
    for what in ["tools", "commands"] {
        let warning = format!(
            "zot: warning: extension flood: registered more than 256 {what}, the most one extension may have"
        );
        assert_eq!(run.stderr.matches(&warning).count(), 1, "{run:?}");
    }
    assert!(
        run.stderr
            .contains("tool \"t256\" and every later one are refused"),
        "{run:?}"
    );

    let doc = json(&w.zot(&["ext", "doctor", "--json", "--ext", dir.to_str().unwrap()]));
    let entry = &doc["extensions"][0];
    assert_eq!(entry["tools"].as_array().unwrap().len(), 256);
    assert_eq!(entry["commands"].as_array().unwrap().len(), 256);
}

/// A sh extension that writes its `hello_ack` into its log and its own
/// state file into `data_dir`.
fn state_ext(w: &World, parent: &Path, name: &str) -> PathBuf {
    let manifest = format!(r#"{{"name":"{name}","version":"1.0.0","exec":"./ext.sh"}}"#);
    let script = format!(
        r#"#!/bin/sh
echo '{{"type":"hello","name":"{name}"}}'
read -r ack
echo "ACK $ack" >&2
data=$(printf '%s\n' "$ack" | sed -n -E 's/.*"data_dir":"([^"]*)".*/\1/p')
echo state > "$data/state.txt"
{SERVE}"#
    );
    w.ext_in(parent, name, &manifest, &script)
}

fn ack(w: &World, name: &str) -> Value {
    let log = w.log(name);
    let line = log
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("ACK "))
        .unwrap_or_else(|| panic!("no ack in the log: {log}"));
    serde_json::from_str(line).unwrap()
}

#[test]
fn project_extensions_keep_their_state_outside_the_project() {
    let w = World::new();
    let dir = state_ext(&w, &w.project_root(), "stateful");
    let global = state_ext(&w, &w.global(), "globalstate");
    assert_eq!(w.zot(&["trust"]).code, 0);

    let run = w.zot(&["ext", "doctor", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let hello = ack(&w, "stateful");
    assert_eq!(hello["extension_dir"], dir.display().to_string());
    let data = PathBuf::from(hello["data_dir"].as_str().unwrap());
    let hash = data.parent().unwrap();
    assert_eq!(hash.parent().unwrap(), w.home.join("data"), "{hello}");
    let hash = hash.file_name().unwrap().to_str().unwrap();
    assert!(
        hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "{hash}"
    );
    assert_eq!(data.file_name().unwrap(), "stateful");
    assert_eq!(
        std::fs::read_to_string(data.join("state.txt")).unwrap(),
        "state\n"
    );
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);

    // What it wrote does not touch the trust fingerprint.
    let listed = json(&w.zot(&["ext", "list", "--json"]));
    assert_eq!(listed[0]["state"], "ok", "{listed}");

    // Global extensions keep the spec's rule: data_dir is extension_dir.
    let hello = ack(&w, "globalstate");
    assert_eq!(hello["data_dir"], global.display().to_string());
    assert_eq!(hello["extension_dir"], global.display().to_string());
}

#[test]
fn extensions_do_not_inherit_the_rpc_token() {
    let w = World::new();
    let dir = raw_ext(
        &w,
        "envy",
        &format!("echo \"TOKEN=[$ZOTCORE_RPC_TOKEN] HOME=[$ZOT_HOME]\" >&2\n{SERVE}"),
    );
    let run: Run = w
        .cmd(&["ext", "doctor", "--ext", dir.to_str().unwrap()])
        .env("ZOTCORE_RPC_TOKEN", "s3cret")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let log = w.log("envy");
    assert!(log.contains("TOKEN=[]"), "{log}");
    assert!(!log.contains("s3cret"), "{log}");
    assert!(
        log.contains(&format!("HOME=[{}]", w.home.display())),
        "{log}"
    );
}

#[test]
fn a_log_at_the_limit_is_rotated_when_the_extension_starts() {
    let w = World::new();
    let dir = w.ext(&w.scratch, "chatty", &[]);
    let logs = w.home.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let big = 10 * 1024 * 1024 + 1;
    std::fs::write(logs.join("ext-chatty.log"), vec![b'x'; big]).unwrap();
    std::fs::write(logs.join("ext-chatty.log.1"), "oldest").unwrap();

    let run = w.zot(&["ext", "doctor", "--ext", dir.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let rotated = std::fs::metadata(logs.join("ext-chatty.log.1")).unwrap();
    assert_eq!(
        rotated.len(),
        big as u64,
        "one old file is kept: the last one"
    );
    let log = w.log("chatty");
    assert!(
        log.len() < 4096 && log.contains("[zot] starting chatty/1.0.0"),
        "{log}"
    );
    assert!(!logs.join("ext-chatty.log.2").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_log_stays_within_twice_the_rotation_size_while_the_extension_runs() {
    let w = World::new();
    // 40 MB of stderr before the handshake is done: written while it runs.
    let ext = raw_ext(
        &w,
        "flood",
        &format!("head -c 40000000 /dev/zero | tr '\\0' e >&2\n{SERVE}"),
    );
    let model = MockModel::start([anthropic::text("fine")]).await;
    let run: Run = w
        .against(
            &model,
            "anthropic",
            &["-p", "--no-session", "--ext", ext.to_str().unwrap(), "hi"],
        )
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let logs = w.home.join("logs");
    let size = |name: &str| std::fs::metadata(logs.join(name)).map_or(0, |m| m.len());
    let limit = 10 * 1024 * 1024;
    assert!(size("ext-flood.log") <= limit, "{}", size("ext-flood.log"));
    assert!(
        size("ext-flood.log.1") <= limit,
        "{}",
        size("ext-flood.log.1")
    );
    assert!(size("ext-flood.log") + size("ext-flood.log.1") > limit);
    let log = w.log("flood");
    assert!(
        log.contains("[zot] log rotated"),
        "{}",
        &log[..200.min(log.len())]
    );
    assert!(log.contains("eeee"));
    assert!(!logs.join("ext-flood.log.2").exists());
}

/// Kills `pid` when dropped, in case the test fails with it still running.
struct Reap(Option<i32>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    }
}

/// Whether `pid` still runs (a zombie does not count).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_daemon_that_leaves_the_process_group_does_not_outlive_zot() {
    let w = World::new();
    let pidfile = w.scratch.join("daemon.pid");
    // Fork twice; the grandchild calls setsid and so leaves the
    // extension's process group and session. Ready once it runs.
    let pid = pidfile.display();
    let daemonize = format!(
        "(setsid sh -c 'echo $$ > {pid}.tmp; mv {pid}.tmp {pid}; exec sleep 300' </dev/null >/dev/null 2>&1 &)\n\
         while [ ! -s {pid} ]; do sleep 0.01; done\n"
    );
    let dir = raw_ext(&w, "daemonic", &format!("{daemonize}{SERVE}"));

    let run = w.zot(&["ext", "doctor", "--ext", dir.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut guard = Reap(Some(pid));
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "daemon {pid} outlived zot");
    guard.0 = None;
}
