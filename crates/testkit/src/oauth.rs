//! A loopback OAuth authorization server guarding a legacy HTTP+SSE MCP
//! endpoint (`fixtures/oauth_mcp_server.py`), for the `zot mcp login` tests.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long [`OAuthServer::saw`] waits for a line: the server flushes each
/// line as it handles the request, but the thread that reads them may be
/// scheduled late on a loaded machine; this only bounds a real absence.
const LOG_WAIT: Duration = Duration::from_secs(30);

/// The running server; killed on drop.
pub struct OAuthServer {
    child: Child,
    pub port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl OAuthServer {
    /// Starts it; access tokens from the code grant live `expires` seconds
    /// (0: expired at once, so their first use must refresh).
    pub fn start(expires: u64) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/oauth_mcp_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(["--expires", &expires.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        // The script prints its port first thing, or exits (closing stdout).
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let port = first.trim().parse().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Self { child, port, log }
    }

    /// The protected MCP endpoint (legacy SSE).
    pub fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }

    /// The protected MCP endpoint (Streamable HTTP).
    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Whether it logged a line containing `needle` so far. Lines reach the
    /// test through a reader thread, so a line the server just wrote may not
    /// be here yet: to check that something happened, use [`Self::saw`].
    pub fn logged(&self, needle: &str) -> bool {
        self.log.lock().unwrap().iter().any(|l| l.contains(needle))
    }

    /// Whether it logs a line containing `needle` within [`LOG_WAIT`]
    /// (earlier lines count).
    pub fn saw(&self, needle: &str) -> bool {
        let deadline = Instant::now() + LOG_WAIT;
        loop {
            if self.logged(needle) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
