//! The SDK's WebSocket server (feature `websocket`): the `remote-guard`
//! example runs as a real server on a loopback port and zot's host loads it
//! by `url`, twice in a row (one session at a time, then the next).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use serde_json::json;
use zot_extensions::{Outcome, Readiness};

use super::support::{Env, SECS5, example_bin, loaded};

/// The running example; killed and reaped when the test ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `remote-guard` on a free loopback port and returns it with the
/// URL it printed.
fn start_remote_guard() -> (Server, String) {
    let mut child = Command::new(example_bin("remote-guard"))
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let url = rx.recv_timeout(SECS5).expect("remote-guard printed no URL");
    (server, url.trim().to_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_guard_over_websocket_blocks_dangerous_bash_for_each_session() {
    let (_server, url) = start_remote_guard();
    assert!(url.starts_with("ws://127.0.0.1:"), "{url}");
    let env = Env::new();
    let dir = env.scratch.join("remote-guard");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({"name": "remote-guard", "version": "1.0.0", "url": url});
    std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();

    for session in 0..2 {
        let (host, _rx) = env.start(&[&dir]).await;
        let info = loaded(&host, "remote-guard");
        assert_eq!(info.readiness, Readiness::Ready, "session {session}");
        assert_eq!(info.intercepts, ["tool_call"]);
        assert_eq!(
            host.intercept_tool_call("1", "bash", &json!({"command": "rm  -rf /"}))
                .await,
            Outcome::Block {
                extension: "remote-guard".into(),
                reason: "refused by the team guard: matches \"rm -rf\"".into()
            }
        );
        assert_eq!(
            host.intercept_tool_call("2", "bash", &json!({"command": "ls"}))
                .await,
            Outcome::Allow(None)
        );
        host.shutdown().await;
    }
}
