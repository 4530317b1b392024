//! Permission scopes held by the real kernel: extensions in python3, node
//! and sh probe what their scope allows before their handshake and write
//! each outcome to stderr (their log); `zot ext doctor` starts them as zot
//! would. Also the policy, the strict error, and what the CLI reports.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::support::{Run, World, json};

/// The probes of the python extension; each prints `PROBE <name> ok|denied`.
const PY_PROBES: &str = r##"#!/usr/bin/env python3
import json, os, signal, socket, sys
here = os.path.dirname(os.path.abspath(__file__))
cfg = json.load(open(os.path.join(here, "probes.json")))
def probe(name, fn):
    try:
        fn()
        result = "ok"
    except Exception as e:
        result = "denied"
        print(f"({name}: {e})", file=sys.stderr)
    print(f"PROBE {name} {result}", file=sys.stderr, flush=True)
def write(path):
    with open(path, "w") as f:
        f.write("x")
def connect(port):
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
probe("ssh", lambda: open(cfg["ssh"]).read())
probe("outside", lambda: write(cfg["outside"]))
probe("data", lambda: write(os.path.join(cfg["data"], "state")))
probe("tmp", lambda: write(os.path.join(os.environ["TMPDIR"], "t")))
probe("self", lambda: open(os.path.abspath(__file__), "a").write("#"))
def change_metadata(path):
    os.chmod(path, 0o644)
    os.utime(path, (0, 0))
    os.chown(path, os.getuid(), os.getgid())
def own_file():
    path = os.path.join(cfg["data"], "mode")
    write(path)
    change_metadata(path)
probe("meta_ssh", lambda: change_metadata(cfg["ssh"]))
probe("meta_data", own_file)
probe("tcp_listed", lambda: connect(cfg["listed"]))
probe("tcp_other", lambda: connect(cfg["other"]))
probe("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.1", 9)))
probe("unix", lambda: socket.socket(socket.AF_UNIX).close())
probe("socketpair", lambda: socket.socketpair())
if cfg["kill"] == "yes":
    probe("kill", lambda: os.kill(os.getppid(), signal.SIGTERM))
print("ENV key " + ("present" if "ANTHROPIC_API_KEY" in os.environ else "absent"), file=sys.stderr)
nnp = [l.split()[1] for l in open("/proc/self/status") if l.startswith("NoNewPrivs")]
print("NNP " + nnp[0], file=sys.stderr, flush=True)
name = cfg["name"]
sys.stdout.write(json.dumps({"type": "hello", "name": name, "version": "1.0.0"}) + "\n")
sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello_ack":
        print(json.dumps({"type": "ready"}), flush=True)
    elif msg["type"] == "shutdown":
        print(json.dumps({"type": "shutdown_ack"}), flush=True)
        break
"##;

/// The node extension's probes (files, Unix sockets, environment).
const NODE_PROBES: &str = r##"#!/usr/bin/env node
const fs = require("fs"), net = require("net"), path = require("path"), readline = require("readline");
const cfg = JSON.parse(fs.readFileSync(path.join(__dirname, "probes.json"), "utf8"));
function probe(name, fn) {
  let result = "ok";
  try { fn(); } catch (e) { result = "denied"; process.stderr.write(`(${name}: ${e.message})\n`); }
  process.stderr.write(`PROBE ${name} ${result}\n`);
}
probe("ssh", () => fs.readFileSync(cfg.ssh));
probe("outside", () => fs.writeFileSync(cfg.outside, "x"));
probe("data", () => fs.writeFileSync(path.join(cfg.data, "state"), "x"));
probe("self", () => fs.appendFileSync(__filename, "//"));
process.stderr.write("ENV key " + ("ANTHROPIC_API_KEY" in process.env ? "present" : "absent") + "\n");
const nnp = fs.readFileSync("/proc/self/status", "utf8").split("\n").find(l => l.startsWith("NoNewPrivs"));
process.stderr.write("NNP " + nnp.split(/\s+/)[1] + "\n");
const server = net.createServer();
server.on("error", (e) => { process.stderr.write(`(unix: ${e.message})\nPROBE unix denied\n`); start(); });
server.listen(path.join(cfg.data, "sock"), () => { process.stderr.write("PROBE unix ok\n"); server.close(); start(); });
function start() {
  const send = (o) => process.stdout.write(JSON.stringify(o) + "\n");
  send({ type: "hello", name: cfg.name, version: "1.0.0" });
  readline.createInterface({ input: process.stdin }).on("line", (line) => {
    const msg = JSON.parse(line);
    if (msg.type === "hello_ack") send({ type: "ready" });
    if (msg.type === "shutdown") { send({ type: "shutdown_ack" }); process.exit(0); }
  });
}
"##;

/// The sh extension's probes (files, signals, environment).
const SH_PROBES: &str = r##"#!/bin/sh
here=$(dirname "$0")
field() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" "$here/probes.json"; }
probe() { if eval "$2" 2>/dev/null; then echo "PROBE $1 ok" >&2; else echo "PROBE $1 denied" >&2; fi; }
probe ssh 'cat "$(field ssh)" >/dev/null'
probe outside 'echo x > "$(field outside)"'
probe data 'echo x > "$(field data)/state"'
probe self 'echo "#" >> "$0"'
[ "$(field kill)" = yes ] && probe kill 'kill -TERM $PPID'
if [ -n "${ANTHROPIC_API_KEY:-}" ]; then echo "ENV key present" >&2; else echo "ENV key absent" >&2; fi
echo "NNP $(sed -n 's/^NoNewPrivs:[[:space:]]*//p' /proc/self/status)" >&2
name=$(field name)
echo "{\"type\":\"hello\",\"name\":\"$name\",\"version\":\"1.0.0\"}"
while read -r line; do
  case "$line" in
    *hello_ack*) echo '{"type":"ready"}' ;;
    *shutdown*) echo '{"type":"shutdown_ack"}'; exit 0 ;;
  esac
done
"##;

/// A probing extension `name` in `parent`, in `lang` (`py`, `node`, `sh`),
/// with `permissions` (none when `Null`).
fn probe_ext(
    w: &World,
    parent: &Path,
    name: &str,
    lang: &str,
    permissions: Value,
    ports: (u16, u16),
    data: &Path,
) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let (file, script) = match lang {
        "py" => ("ext.py", PY_PROBES),
        "node" => ("ext.js", NODE_PROBES),
        _ => ("ext.sh", SH_PROBES),
    };
    let mut manifest = json!({"name": name, "version": "1.0.0", "exec": format!("./{file}")});
    if !permissions.is_null() {
        manifest["permissions"] = permissions;
    }
    std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    zot_testkit::write_exec(&dir.join(file), script);
    let cfg = json!({
        "name": name,
        "ssh": w.scratch.join(".ssh/id_rsa"),
        "outside": w.scratch.join(format!("{name}-outside")),
        "data": data,
        "listed": ports.0,
        "other": ports.1,
        // Only a scoped extension tries to kill zot: an unscoped one would succeed.
        "kill": if manifest.get("permissions").is_some() { "yes" } else { "no" },
    });
    std::fs::write(dir.join("probes.json"), cfg.to_string()).unwrap();
    dir
}

/// A fake private key under the temporary `HOME`.
fn fake_ssh_key(w: &World) {
    std::fs::create_dir_all(w.scratch.join(".ssh")).unwrap();
    let key = w.scratch.join(".ssh/id_rsa");
    std::fs::write(&key, "-----BEGIN FAKE KEY-----").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The permission bits of `path`.
fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The `PROBE` outcomes and `ENV`/`NNP` lines an extension logged.
fn outcomes(w: &World, name: &str) -> BTreeMap<String, String> {
    w.log(name)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            match words.next()? {
                "PROBE" => Some((words.next()?.to_owned(), words.next()?.to_owned())),
                "ENV" => Some(("env".to_owned(), words.nth(1)?.to_owned())),
                "NNP" => Some(("nnp".to_owned(), words.next()?.to_owned())),
                _ => None,
            }
        })
        .collect()
}

fn expect(w: &World, name: &str, want: &[(&str, &str)]) {
    let got = outcomes(w, name);
    for (probe, outcome) in want {
        assert_eq!(
            got.get(*probe).map(String::as_str),
            Some(*outcome),
            "{name}: {probe}\nlog:\n{}",
            w.log(name)
        );
    }
}

/// `zot ext doctor --json` with `ANTHROPIC_API_KEY` in zot's environment.
fn doctor(w: &World, extra_env: &[(&str, &str)]) -> (Run, Value) {
    let mut cmd = w.cmd(&["ext", "doctor", "--json"]);
    cmd.env("ANTHROPIC_API_KEY", "sk-test-secret");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let run: Run = cmd.output().unwrap().into();
    let doc = json(&run);
    (run, doc)
}

fn entry<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {doc:#}"))
}

fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

#[test]
fn scoped_extensions_in_python_node_and_sh_are_held_to_their_scope() {
    let w = World::new();
    fake_ssh_key(&w);
    let (_listed, listed) = listener();
    let (_other, other) = listener();
    let root = w.global();
    let data = |name: &str| w.home.join("data/user").join(name);
    let none = json!({"write": ["tmp"], "net": "none"});
    probe_ext(
        &w,
        &root,
        "py-none",
        "py",
        none.clone(),
        (listed, other),
        &data("py-none"),
    );
    probe_ext(
        &w,
        &root,
        "py-open",
        "py",
        json!({"read": ["home"], "write": ["tmp"], "net": [format!("tcp:{listed}")], "env": ["ANTHROPIC_API_KEY"]}),
        (listed, other),
        &data("py-open"),
    );
    probe_ext(
        &w,
        &root,
        "node-none",
        "node",
        none.clone(),
        (listed, other),
        &data("node-none"),
    );
    probe_ext(
        &w,
        &root,
        "sh-none",
        "sh",
        none,
        (listed, other),
        &data("sh-none"),
    );
    // Unscoped, for contrast: it runs as today.
    probe_ext(
        &w,
        &root,
        "sh-free",
        "sh",
        Value::Null,
        (listed, other),
        &w.scratch.join("free"),
    );
    std::fs::create_dir_all(w.scratch.join("free")).unwrap();

    let (run, doc) = doctor(&w, &[]);
    // zot survived every SIGTERM sent to it and every extension started.
    assert_eq!(run.code, 0, "{run:?}");
    for name in ["py-none", "py-open", "node-none", "sh-none", "sh-free"] {
        assert_eq!(
            entry(&doc, name)["state"],
            "ready",
            "{doc:#}\n{}",
            w.log(name)
        );
    }
    assert_eq!(entry(&doc, "py-none")["permissions"], "scoped");
    assert_eq!(entry(&doc, "sh-free")["permissions"], "unrestricted");

    let confined = [
        ("ssh", "denied"),
        ("outside", "denied"),
        ("data", "ok"),
        ("self", "denied"),
        ("env", "absent"),
        ("nnp", "1"),
    ];
    for name in ["py-none", "node-none", "sh-none"] {
        expect(&w, name, &confined);
    }
    expect(
        &w,
        "py-none",
        &[
            ("tmp", "ok"),
            ("meta_ssh", "denied"),
            ("meta_data", "ok"),
            ("tcp_listed", "denied"),
            ("udp", "denied"),
            ("unix", "denied"),
            ("socketpair", "ok"),
            ("kill", "denied"),
        ],
    );
    expect(&w, "node-none", &[("unix", "denied")]);
    expect(&w, "sh-none", &[("kill", "denied")]);
    expect(
        &w,
        "py-open",
        &[
            ("ssh", "ok"),
            ("meta_ssh", "denied"),
            ("tcp_listed", "ok"),
            ("tcp_other", "denied"),
            ("unix", "denied"),
            ("env", "present"),
            ("nnp", "1"),
        ],
    );
    expect(
        &w,
        "sh-free",
        &[
            ("ssh", "ok"),
            ("self", "ok"),
            ("env", "present"),
            ("nnp", "0"),
        ],
    );
    // No scoped extension changed the key's mode, even one that may read it.
    assert_eq!(mode(&w.scratch.join(".ssh/id_rsa")), 0o600);
    // The private temporary directory went with the extension.
    let tmp = w.home.join("tmp");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .map(|d| d.count())
        .into_iter()
        .collect();
    assert!(
        left.iter().all(|n| *n == 0),
        "{left:?} left in {}",
        tmp.display()
    );
}

#[test]
fn the_policy_narrows_an_unrestricted_project_extension() {
    let w = World::new();
    fake_ssh_key(&w);
    let data = w.home.join("data");
    let dir = probe_ext(
        &w,
        &w.project_root(),
        "proj",
        "py",
        Value::Null,
        (1, 1),
        &data,
    );
    assert!(w.zot(&["trust"]).code == 0);
    let list = w.zot(&["ext", "list", "--json"]);
    assert_eq!(
        json(&list)[0]["permissions"]["effective"],
        "unrestricted",
        "{list:?}"
    );
    assert!(w.zot(&["ext", "list"]).stdout.contains("unrestricted"));

    std::fs::write(
        w.home.join("permissions.json"),
        json!({"project_default": {"read": ["project"], "net": "none"}}).to_string(),
    )
    .unwrap();
    let list = json(&w.zot(&["ext", "list", "--json"]));
    let permissions = &list[0]["permissions"];
    assert_eq!(permissions["declared"], Value::Null);
    assert_eq!(permissions["effective"]["read"], json!(["project"]));
    assert_eq!(permissions["effective"]["net"], "none");
    assert_eq!(permissions["unenforced"], json!([]));
    // Its data directory moved out of the project, and its state goes there.
    let (run, doc) = doctor(&w, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(entry(&doc, "proj")["state"], "ready", "{doc:#}");
    expect(
        &w,
        "proj",
        &[("ssh", "denied"), ("self", "denied"), ("env", "absent")],
    );
    let text = w.zot(&["ext", "permissions", "proj"]);
    assert_eq!(text.code, 0, "{text:?}");
    assert!(text.stdout.contains("proj: scoped"), "{text:?}");
    assert!(
        text.stdout.contains("its manifest declares nothing"),
        "{text:?}"
    );
    assert!(text.stdout.contains("enforced in full"), "{text:?}");
    assert!(dir.is_dir());
}

/// Sets `"enforce": "best-effort"` in the policy.
fn best_effort(w: &World) {
    std::fs::write(
        w.home.join("permissions.json"),
        r#"{"enforce": "best-effort"}"#,
    )
    .unwrap();
}

/// `zot ext permissions <name> --json` with the variable `env` set.
fn shown_permissions(w: &World, name: &str, env: (&str, &str)) -> Value {
    let shown = w
        .cmd(&["ext", "permissions", name, "--json"])
        .env(env.0, env.1)
        .output()
        .unwrap();
    serde_json::from_slice(&shown.stdout).unwrap()
}

#[test]
fn a_missing_kernel_feature_gives_the_strict_error_and_best_effort_says_what_is_unenforced() {
    let w = World::new();
    let root = w.global();
    let data = w.home.join("data/user/weak");
    let weak = probe_ext(
        &w,
        &root,
        "weak",
        "sh",
        json!({"net": ["tcp:443"]}),
        (1, 1),
        &data,
    );
    // Hiding ABI 4 hides signal scoping too: then a kill would reach zot.
    let probes = weak.join("probes.json");
    let cfg = std::fs::read_to_string(&probes)
        .unwrap()
        .replace(r#""kill":"yes""#, r#""kill":"no""#);
    std::fs::write(&probes, cfg).unwrap();
    let hide = [("ZOT_SANDBOX_PRETEND_MISSING", "landlock-net")];
    let (run, doc) = doctor(&w, &hide);
    assert_eq!(run.code, 1, "{run:?}");
    let error = entry(&doc, "weak")["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(error.contains("TCP port rules (Landlock ABI 4)"), "{doc:#}");
    assert!(error.contains("best-effort"), "{error}");
    // It never ran.
    assert!(!w.log("weak").contains("PROBE"), "{}", w.log("weak"));
    let shown = shown_permissions(&w, "weak", hide[0]);
    assert_eq!(
        shown["unenforced"],
        json!([
            "TCP port rules (Landlock ABI 4)",
            "signal and abstract-socket scoping (Landlock ABI 6)"
        ])
    );
    assert_eq!(shown["kernel"]["landlock_abi"], 3);

    best_effort(&w);
    let (run, doc) = doctor(&w, &hide);
    assert_eq!(run.code, 0, "{run:?}");
    let weak = entry(&doc, "weak");
    assert_eq!(weak["state"], "ready", "{doc:#}");
    assert_eq!(weak["permissions"], "scoped (partial)");
    assert!(
        weak["warnings"][0]
            .as_str()
            .unwrap_or_default()
            .contains("not enforced: TCP port rules"),
        "{doc:#}"
    );
    expect(&w, "weak", &[("nnp", "1"), ("self", "denied")]);
}

#[test]
fn install_prints_the_requests_and_bad_scopes_name_the_field() {
    let w = World::new();
    let src = probe_ext(
        &w,
        &w.scratch,
        "asks",
        "sh",
        json!({"read": ["project"], "net": ["tcp:443", "unix"], "env": ["GITHUB_TOKEN"]}),
        (1, 1),
        &w.scratch,
    );
    let run = w.zot(&["ext", "install", src.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    for line in [
        "permissions it asks for:",
        "read:  project",
        "net:   tcp:443, unix (UDP is not restricted)",
        "env:   GITHUB_TOKEN",
    ] {
        assert!(run.stderr.contains(line), "{line}: {run:?}");
    }
    let free = probe_ext(
        &w,
        &w.scratch,
        "free",
        "sh",
        Value::Null,
        (1, 1),
        &w.scratch,
    );
    let run = w.zot(&["ext", "install", free.to_str().unwrap()]);
    assert!(run.stderr.contains("runs unrestricted"), "{run:?}");

    let bad = probe_ext(
        &w,
        &w.scratch,
        "bad",
        "sh",
        json!({"wirte": ["tmp"]}),
        (1, 1),
        &w.scratch,
    );
    let run = w.zot(&["ext", "install", bad.to_str().unwrap()]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("field \"permissions\" \"wirte\" is not a permission"),
        "{run:?}"
    );

    std::fs::write(w.home.join("permissions.json"), r#"{"enforce": "lax"}"#).unwrap();
    let run = w.zot(&["ext", "list"]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("permissions.json: \"enforce\" must be"),
        "{run:?}"
    );
}

#[test]
fn without_read_only_mounts_strict_refuses_and_best_effort_names_the_gap() {
    let w = World::new();
    fake_ssh_key(&w);
    let data = w.home.join("data/user/nomounts");
    probe_ext(
        &w,
        &w.global(),
        "nomounts",
        "py",
        json!({"write": ["tmp"], "net": "none"}),
        (1, 1),
        &data,
    );
    let hide = [("ZOT_SANDBOX_PRETEND_MISSING", "mountns")];
    let gap = "read-only file metadata outside the writable paths (a mount namespace)";
    let (run, doc) = doctor(&w, &hide);
    assert_eq!(run.code, 1, "{run:?}");
    let error = entry(&doc, "nomounts")["error"]
        .as_str()
        .unwrap_or_default();
    assert!(error.contains(gap), "{doc:#}");
    assert!(
        !w.log("nomounts").contains("PROBE"),
        "{}",
        w.log("nomounts")
    );

    best_effort(&w);
    let (run, doc) = doctor(&w, &hide);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(entry(&doc, "nomounts")["state"], "ready", "{doc:#}");
    let shown = shown_permissions(&w, "nomounts", hide[0]);
    assert_eq!(shown["unenforced"], json!([gap]));
    assert_eq!(shown["kernel"]["read_only_mounts"], false);
    // The rest of the scope still holds.
    expect(&w, "nomounts", &[("ssh", "denied"), ("outside", "denied")]);
}

#[test]
fn the_skeletons_of_every_language_run_under_a_project_default_scope() {
    let w = World::new();
    fake_ssh_key(&w);
    let root = w.project_root();
    let langs = [("skel-sh", "sh"), ("skel-py", "python"), ("skel-ts", "ts")];
    for (name, lang) in langs {
        let dir = root.join(name);
        let run = w.zot(&[
            "ext",
            "new",
            name,
            "--lang",
            lang,
            "--dir",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(run.code, 0, "{lang}: {run:?}");
    }
    assert_eq!(w.zot(&["trust"]).code, 0);
    // The generated launchers use the SDKs of this checkout, so the policy
    // lets project extensions read them, as it would an installed SDK.
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../sdk")
        .canonicalize()
        .unwrap();
    std::fs::write(
        w.home.join("permissions.json"),
        json!({"project_default": {"read": ["project", sdk], "write": ["tmp"], "net": "none"}})
            .to_string(),
    )
    .unwrap();
    let (run, doc) = doctor(&w, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    for (name, _) in langs {
        let e = entry(&doc, name);
        assert_eq!(e["state"], "ready", "{doc:#}\nlog:\n{}", w.log(name));
        assert_eq!(e["permissions"], "scoped", "{doc:#}");
        assert_eq!(e["commands"][0]["name"], name, "{doc:#}");
    }
}

/// Runs one bash command through the model with `flags`; returns the tool
/// result the model was sent back.
async fn bash_through_zot(w: &World, command: &str, flags: &[&str]) -> String {
    bash_through(
        w,
        command,
        flags,
        |_| {},
        |zot| zot.output().unwrap().into(),
    )
    .await
}

/// [`bash_through_zot`] with the zot command adjusted by `setup` and run by `run`.
async fn bash_through(
    w: &World,
    command: &str,
    flags: &[&str],
    setup: impl FnOnce(&mut std::process::Command),
    run: impl FnOnce(&mut std::process::Command) -> Run,
) -> String {
    use zot_testkit::{MockModel, anthropic};
    let args = json!({ "command": command }).to_string();
    let model = MockModel::start([
        anthropic::tool_call("b1", "bash", &args),
        anthropic::text("done"),
    ])
    .await;
    let mut cli = vec!["-p", "--no-session"];
    cli.extend_from_slice(flags);
    cli.push("run it");
    let mut zot = w.against(&model, "anthropic", &cli);
    setup(&mut zot);
    let run = run(&mut zot);
    assert_eq!(run.code, 0, "{run:?}");
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{run:?}");
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let result = messages.last().unwrap()["content"][0]["content"].clone();
    match result {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// A world outside `/tmp` whose project is a repository of its own, so its
/// git top-level (which `workspace` may write) is the project, not the
/// checkout the test runs in.
fn outside_tmp_repository() -> World {
    let w = World::outside_tmp();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&w.project)
        .status()
        .unwrap();
    assert!(git.success());
    w
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bash_sandbox_confines_writes_and_the_network() {
    let w = outside_tmp_repository();
    let outside = w.scratch.join("outside");
    let touch = format!(
        "touch inside; echo in=$?; touch {}; echo out=$?",
        outside.display()
    );

    let out = bash_through_zot(&w, &touch, &["--sandbox", "workspace"]).await;
    assert!(out.contains("in=0") && out.contains("out=1"), "{out}");
    // Everything outside the writable paths is a read-only mount.
    assert!(out.contains("Read-only file system"), "{out}");
    assert!(w.project.join("inside").exists() && !outside.exists());
    std::fs::remove_file(w.project.join("inside")).unwrap();

    let out = bash_through_zot(&w, &touch, &["--sandbox", "read-only"]).await;
    assert!(out.contains("in=1") && out.contains("out=1"), "{out}");
    assert!(!w.project.join("inside").exists() && !outside.exists());

    // The config key does the same; off (the default) confines nothing.
    std::fs::write(w.home.join("config.json"), r#"{"sandbox": "read-only"}"#).unwrap();
    let out = bash_through_zot(&w, &touch, &[]).await;
    assert!(out.contains("in=1"), "{out}");
    let out = bash_through_zot(&w, &touch, &["--sandbox", "off"]).await;
    assert!(out.contains("in=0") && out.contains("out=0"), "{out}");

    let (_listener, port) = listener();
    let connect = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected', 40 + 2)\""
    );
    let out = bash_through_zot(&w, &connect, &["--sandbox", "workspace"]).await;
    assert!(
        !out.contains("connected 42") && out.contains("refused"),
        "{out}"
    );
    let out = bash_through_zot(&w, &connect, &["--sandbox", "workspace", "--sandbox-net"]).await;
    assert!(out.contains("connected 42"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_command_has_no_terminal_to_type_into() {
    let w = World::outside_tmp();
    // TIOCSTI pushes input into a terminal as if typed: into the shell that
    // started zot, or zot's own TUI.
    let probe = r#"python3 -c "
import fcntl, os, termios
def sti(name, open_it):
    try:
        fcntl.ioctl(open_it(), termios.TIOCSTI, b'#')
        print(name, 'injected')
    except OSError as e:
        print(name, 'refused', e.errno)
sti('tty', lambda: os.open('/dev/tty', os.O_RDONLY))
sti('null', lambda: os.open('/dev/null', os.O_RDONLY))
""#;
    for mode in ["off", "workspace", "read-only"] {
        let mut master = None;
        let out = bash_through(
            &w,
            probe,
            &["--sandbox", mode],
            |zot| master = Some(zot_testkit::terminal::with_terminal(zot)),
            |zot| zot.output().unwrap().into(),
        )
        .await;
        drop(master);
        if mode == "off" {
            // The terminal is there for an unconfined command (the test's own check).
            assert!(out.contains("tty injected"), "{out}");
            continue;
        }
        // No controlling terminal (ENXIO), and the ioctl itself is refused (EPERM).
        assert!(out.contains("tty refused 6"), "{mode}: {out}");
        assert!(out.contains("null refused 1"), "{mode}: {out}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_command_has_no_capabilities_keys_or_view_into_zot() {
    let w = World::outside_tmp();
    // Its parent is its supervisor, a copy of zot; the supervisor's is zot.
    // (The markers are built when it runs: the result repeats the command.)
    let probe = "h=host e=env; grep -E '^Cap(Eff|Bnd)' /proc/self/status; \
                 hostname \"$(hostname)\" 2>/dev/null && echo ${h}name-set; \
                 for p in $PPID $(cut -d' ' -f4 /proc/$PPID/stat); do \
                   cat /proc/$p/environ >/dev/null 2>&1 && echo ${e}iron-read-$p; \
                 done; \
                 echo keys=$(env | grep -c -e ^ANTHROPIC_API_KEY= -e ^OPENAI_API_KEY=)";
    let keys = |zot: &mut std::process::Command| {
        zot.env("ANTHROPIC_API_KEY", "sk-ant-secret")
            .env("OPENAI_API_KEY", "sk-openai-secret");
    };
    let run = |zot: &mut std::process::Command| zot.output().unwrap().into();
    for mode in ["workspace", "read-only"] {
        let out = bash_through(&w, probe, &["--sandbox", mode], keys, run).await;
        // CapEff and CapBnd (the result is JSON text: the tab is escaped).
        assert_eq!(out.matches("0000000000000000").count(), 2, "{mode}: {out}");
        assert!(!out.contains("hostname-set"), "{mode}: {out}");
        assert!(!out.contains("environ-read"), "{mode}: {out}");
        assert!(out.contains("keys=0"), "{mode}: {out}");
    }
    let out = bash_through(&w, probe, &["--sandbox", "off"], keys, run).await;
    assert!(out.contains("keys=2"), "{out}");
}

/// Whether `pid` runs (a zombie does not count).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// The pid written to `path`, once it is there.
fn pid_in(path: &Path, deadline: std::time::Instant) -> i32 {
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Kills what a failed test left running.
struct KillOnDrop(Vec<i32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_zot_started_outlives_it_however_it_ends() {
    use nix::sys::signal::{Signal, kill};
    use std::time::{Duration, Instant};
    use zot_testkit::{MockModel, anthropic};

    for signal in [Signal::SIGKILL, Signal::SIGTERM, Signal::SIGHUP] {
        let w = World::new();
        let dir = w.scratch.display().to_string();
        // An extension that starts a daemon of its own, out of its group.
        let daemon = format!(
            "setsid sh -c 'echo $$ > \"{dir}/ext.pid\"; exec sleep 1003' </dev/null >/dev/null 2>&1 &\n"
        );
        let script = super::support::sh_ext("daemon", &[]).replacen(
            "#!/bin/sh\n",
            &format!("#!/bin/sh\n{daemon}"),
            1,
        );
        let manifest = r#"{"name":"daemon","version":"1.0.0","exec":"./ext.sh","language":"sh"}"#;
        w.ext_in(&w.global(), "daemon", manifest, &script);
        // A bash command that does the same, and waits.
        let command = format!(
            "setsid sh -c 'echo $$ > \"{dir}/bash.pid\"; exec sleep 1002' </dev/null >/dev/null 2>&1 & \
             sleep 1001 & echo $! > \"{dir}/sleep.pid\"; wait"
        );
        let args = json!({ "command": command }).to_string();
        let model = MockModel::start([
            anthropic::tool_call("b1", "bash", &args),
            anthropic::text("done"),
        ])
        .await;
        let mut zot = w
            .against(&model, "anthropic", &["-p", "--no-session", "go"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let pids: Vec<i32> = ["ext.pid", "bash.pid", "sleep.pid"]
            .iter()
            .map(|f| pid_in(&w.scratch.join(f), deadline))
            .collect();
        let _cleanup = KillOnDrop(pids.clone());
        assert!(pids.iter().all(|p| alive(*p)), "{signal}: {pids:?}");
        let zot_pid = nix::unistd::Pid::from_raw(i32::try_from(zot.id()).unwrap());
        kill(zot_pid, signal).unwrap();
        zot.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let left: Vec<&i32> = pids.iter().filter(|p| alive(**p)).collect();
        assert!(left.is_empty(), "{signal}: still running: {left:?}");
    }
}

#[test]
fn a_manifest_path_that_links_out_of_the_project_is_not_granted() {
    let w = World::new();
    fake_ssh_key(&w);
    let project = w.project.canonicalize().unwrap();
    // `keys` under the project is a link to the directory holding the key;
    // `alias` links to a directory that is under the project.
    std::os::unix::fs::symlink(w.scratch.join(".ssh"), project.join("keys")).unwrap();
    std::fs::create_dir(project.join("real")).unwrap();
    std::os::unix::fs::symlink(project.join("real"), project.join("alias")).unwrap();
    let declared = json!({"read": [project.join("keys"), project.join("alias")]});
    probe_ext(
        &w,
        &w.project_root(),
        "linked",
        "py",
        declared,
        (1, 1),
        &w.home.join("data"),
    );
    std::fs::write(
        w.home.join("permissions.json"),
        json!({"project_default": {"read": ["project"], "net": "none"}}).to_string(),
    )
    .unwrap();
    assert!(w.zot(&["trust"]).code == 0);
    let list = json(&w.zot(&["ext", "list", "--json"]));
    let real = project.join("real").display().to_string();
    assert_eq!(
        list[0]["permissions"]["effective"]["read"],
        json!([real]),
        "{list:#}"
    );
    let text = w.zot(&["ext", "permissions", "linked"]);
    let read = text
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("read:"));
    assert_eq!(
        read.map(str::split_whitespace).and_then(|mut w| w.nth(1)),
        Some(real.as_str()),
        "{text:?}"
    );
    let (run, _) = doctor(&w, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    expect(&w, "linked", &[("ssh", "denied")]);
}

#[tokio::test(flavor = "multi_thread")]
async fn sandboxed_commands_get_a_private_temporary_directory() {
    // A project under the system's temporary directory.
    let w = World::new();
    let shared = std::env::temp_dir().join(format!("zot-shared-{}", std::process::id()));
    let probe = format!(
        "touch inside; echo in=$?; touch {shared}; echo shared=$?; \
         touch \"$TMPDIR/t\" && echo private=ok; \
         [ \"$TMP\" = \"$TMPDIR\" ] && [ \"$TEMP\" = \"$TMPDIR\" ] && echo all-three; \
         stat -c 'mode=%a' \"$TMPDIR\"; echo \"dir=$TMPDIR\"",
        shared = shared.display()
    );
    let out = bash_through_zot(&w, &probe, &["--sandbox", "read-only"]).await;
    assert!(out.contains("in=1") && out.contains("shared=1"), "{out}");
    assert!(
        out.contains("private=ok") && out.contains("all-three"),
        "{out}"
    );
    assert!(out.contains("mode=700"), "{out}");
    assert!(!w.project.join("inside").exists() && !shared.exists());
    // It goes when zot exits.
    let dir = out.rsplit("dir=").next().unwrap();
    let dir = dir.split(['\\', '\n', '"']).next().unwrap();
    assert!(dir.contains("zot-bash-"), "{out}");
    assert!(!Path::new(dir).exists(), "{dir} is left");

    // `workspace` keeps /tmp.
    let out = bash_through_zot(&w, &probe, &["--sandbox", "workspace"]).await;
    assert!(out.contains("in=0") && out.contains("shared=0"), "{out}");
    assert!(out.contains("private=ok"), "{out}");
    std::fs::remove_file(&shared).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn sandboxed_commands_change_metadata_only_inside_the_writable_paths() {
    let w = outside_tmp_repository();
    fake_ssh_key(&w);
    let key = w.scratch.join(".ssh/id_rsa");
    let script = w.project.join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho ran-$((40 + 2))\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    // Each change to the key (outside) and to the project's script, with
    // its exit status (the markers are built when it runs: the result
    // repeats the command).
    let probe = format!(
        "k={key}; o=ok; chmod 644 $k; echo key-chmod=$?; touch -d 2001-01-01 $k; echo key-touch=$?; \
         chown $(id -u):$(id -g) $k; echo key-chown=$?; \
         python3 -c \"import os; os.setxattr('$k', 'user.zot', b'1')\" 2>/dev/null; echo key-xattr=$?; \
         chmod +x run.sh && ./run.sh && echo script-chmod=$o; \
         touch -d 2001-01-01 run.sh; echo script-touch=$?",
        key = key.display()
    );
    let out = bash_through_zot(&w, &probe, &["--sandbox", "workspace"]).await;
    for op in ["chmod", "touch", "chown", "xattr"] {
        assert!(out.contains(&format!("key-{op}=1")), "{op}: {out}");
    }
    assert!(out.contains("Read-only file system"), "{out}");
    assert!(
        out.contains("ran-42") && out.contains("script-chmod=ok"),
        "{out}"
    );
    assert!(out.contains("script-touch=0"), "{out}");
    assert_eq!(mode(&key), 0o600);
    assert_eq!(mode(&script), 0o755);

    // read-only: the project too.
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = bash_through_zot(&w, &probe, &["--sandbox", "read-only"]).await;
    assert!(out.contains("key-chmod=1"), "{out}");
    assert!(!out.contains("script-chmod=ok"), "{out}");
    assert!(out.contains("script-touch=1"), "{out}");
    assert_eq!((mode(&key), mode(&script)), (0o600, 0o644));

    // A project under the system's temporary directory stays read-only in
    // read-only mode, though `workspace` may write `/tmp`.
    let under_tmp = World::new();
    let script = under_tmp.project.join("run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let change = "chmod +x run.sh; echo chmod=$?; touch -d 2001-01-01 run.sh; echo touch=$?";
    let out = bash_through_zot(&under_tmp, change, &["--sandbox", "read-only"]).await;
    assert!(out.contains("chmod=1") && out.contains("touch=1"), "{out}");
    assert_eq!(mode(&script), 0o644);

    // Where the kernel cannot give it read-only mounts, the sandbox is not
    // available (strict) and the command does not run.
    let out = bash_through(
        &under_tmp,
        change,
        &["--sandbox", "read-only"],
        |zot| {
            zot.env("ZOT_SANDBOX_PRETEND_MISSING", "mountns");
        },
        |zot| zot.output().unwrap().into(),
    )
    .await;
    assert!(out.contains("not started"), "{out}");
    assert!(
        out.contains("read-only file metadata outside the writable paths"),
        "{out}"
    );
    assert!(!out.contains("chmod=0"), "{out}");
}
