//! npm packages the tests run unmodified (the MCP reference server), pinned
//! by a fixture (`fixtures/<name>/package.json` + `package-lock.json`) and
//! installed with `npm ci` once per lockfile hash, under a file lock so
//! parallel tests (and test binaries) share one install.

use std::io::{BufRead as _, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How long one `npm ci` of a fixture may take: a cold cache downloads about
/// a hundred packages; minutes, not hours.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// How long the reference server may take to say it listens: a cold `node`
/// start loading the SDK and express takes a second or two; this is the backstop.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(60);

/// Ports to try before giving up: another process may take the free port
/// between our probe and the server's bind.
const PORT_ATTEMPTS: usize = 5;

/// The fixture directory `name` inside this crate.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// Where installs are cached: beside the build, so `cargo clean` clears them.
fn cache_root() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
        .join("npm-fixtures")
}

/// Installs fixture `name` (once per hash of its package.json and lockfile)
/// and returns the directory holding its `node_modules`.
pub fn install(name: &str) -> Result<PathBuf, String> {
    let src = fixture(name);
    let read = |file: &str| {
        std::fs::read(src.join(file)).map_err(|e| format!("{}: {e}", src.join(file).display()))
    };
    let (manifest, lock) = (read("package.json")?, read("package-lock.json")?);
    let mut hasher = Sha256::new();
    hasher.update(&manifest);
    hasher.update(&lock);
    let hash: String = hasher
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    let root = cache_root();
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let dest = root.join(format!("{name}-{hash}"));
    let done = |dir: &Path| dir.join("node_modules/.package-lock.json").is_file();
    if done(&dest) {
        return Ok(dest);
    }
    let lock_path = root.join(format!("{name}-{hash}.lock"));
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    let _guard = nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("cannot lock {}: {e}", lock_path.display()))?;
    if done(&dest) {
        return Ok(dest);
    }
    // Install beside and rename, so a killed install never looks finished.
    let staging = root.join(format!("{name}-{hash}.staging"));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    std::fs::write(staging.join("package.json"), &manifest).map_err(|e| e.to_string())?;
    std::fs::write(staging.join("package-lock.json"), &lock).map_err(|e| e.to_string())?;
    let mut child = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
        .current_dir(&staging)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run npm (Node.js is needed for this test): {e}"))?;
    let stderr = child.stderr.take();
    let collected = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        }
        text
    });
    let status = wait_until(&mut child, Instant::now() + INSTALL_TIMEOUT)
        .ok_or_else(|| format!("npm ci in {} took too long", staging.display()))?;
    let stderr = collected.join().unwrap_or_default();
    if !status.success() || !done(&staging) {
        return Err(format!("npm ci failed ({status}):\n{stderr}"));
    }
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&staging, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    Ok(dest)
}

/// Waits for `child` until `deadline`; kills it past that.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<std::process::ExitStatus> {
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `@modelcontextprotocol/server-everything`, run unmodified over HTTP on
/// a free loopback port; killed on drop.
pub struct EverythingServer {
    child: Child,
    pub port: u16,
    /// What it printed so far (its log, on stdout and stderr), line by line.
    lines: mpsc::Receiver<String>,
    log: Vec<String>,
}

impl EverythingServer {
    /// The installed server's entry point (`node <this> stdio` runs it over stdio).
    pub fn script() -> Result<PathBuf, String> {
        Ok(install("mcp-everything")?
            .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
    }

    /// Starts it in `mode` (`sse` or `streamableHttp`) with `PORT` set to a
    /// free port, retrying on another port when that one is taken meanwhile.
    pub fn start(mode: &str) -> Result<Self, String> {
        let script = Self::script()?;
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| e.to_string())?
                .port();
            let mut child = Command::new("node")
                .arg(&script)
                .arg(mode)
                .env("PORT", port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot run node: {e}"))?;
            // It logs on both: requests on stdout, its start on stderr.
            let (tx, lines) = mpsc::channel();
            let out = child
                .stdout
                .take()
                .map(|o| Box::new(o) as Box<dyn Read + Send>);
            let err = child
                .stderr
                .take()
                .map(|e| Box::new(e) as Box<dyn Read + Send>);
            for stream in [out, err].into_iter().flatten() {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for line in BufReader::new(stream).lines().map_while(Result::ok) {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            let mut server = Self {
                child,
                port,
                lines,
                log: Vec::new(),
            };
            let listening = format!("port {port}");
            if server.wait_for_line(LISTEN_TIMEOUT, |l| l.contains(&listening)) {
                return Ok(server);
            }
            last = server.log().join("\n");
        }
        Err(format!(
            "server-everything {mode} did not start after {PORT_ATTEMPTS} attempts:\n{last}"
        ))
    }

    /// Waits up to `limit` for a log line matching `pred` (earlier lines count).
    pub fn wait_for_line(&mut self, limit: Duration, pred: impl Fn(&str) -> bool) -> bool {
        if self.log.iter().any(|l| pred(l)) {
            return true;
        }
        let deadline = Instant::now() + limit;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let hit = pred(&line);
                    self.log.push(line);
                    if hit {
                        return true;
                    }
                }
                Err(_) => return false,
            }
        }
        false
    }

    /// Its log so far.
    pub fn log(&mut self) -> &[String] {
        while let Ok(line) = self.lines.try_recv() {
            self.log.push(line);
        }
        &self.log
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for EverythingServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
