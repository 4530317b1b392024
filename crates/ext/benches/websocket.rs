//! Tool-call round trip through zot's extension host to the same Rust SDK
//! echo extension, served over stdio (this binary re-run as the extension
//! process) and over loopback WebSocket (`WebSocketServer` on a thread).
//! Figures go into BENCHMARKS.md.
//!
//! Run: `cargo bench -p zot-ext --features websocket --bench websocket`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use zot_ext::{Extension, ToolResult, WebSocketServer};
use zot_extensions::{ExtensionHost, HostConfig};
use zot_testkit::bench::Stats;

const ROUND_TRIPS: usize = 3000;
const WARMUP: usize = 300;
/// The argument that makes this binary the stdio extension.
const STDIO_ARG: &str = "--stdio-echo";

fn echo() -> Extension {
    Extension::new("echo", "1.0.0").raw_tool(
        "echo",
        "Returns its arguments as text.",
        json!({"type": "object"}),
        |args, _host| ToolResult::text(args.to_string()),
    )
}

fn main() {
    if std::env::args().any(|a| a == STDIO_ARG) {
        echo().run().unwrap();
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let stdio = manifest(
        tmp.path(),
        "stdio",
        json!({"name": "echo", "exec": exe, "args": [STDIO_ARG]}),
    );
    let server = WebSocketServer::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/echo", server.local_addr().unwrap());
    std::thread::spawn(move || server.serve(echo));
    let ws = manifest(tmp.path(), "ws", json!({"name": "echo", "url": url}));

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let over_stdio = rt.block_on(round_trips(tmp.path(), stdio));
    let over_ws = rt.block_on(round_trips(tmp.path(), ws));
    println!("## tool-call round trip ({ROUND_TRIPS} calls, Rust SDK echo extension)");
    println!("over stdio:               {}", Stats::of(&over_stdio));
    println!("over loopback WebSocket:  {}", Stats::of(&over_ws));
    println!(
        "websocket/stdio (median): {:.2}",
        Stats::of(&over_ws).median.as_secs_f64() / Stats::of(&over_stdio).median.as_secs_f64()
    );
}

fn manifest(root: &Path, dir: &str, manifest: serde_json::Value) -> PathBuf {
    let dir = root.join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    dir
}

async fn round_trips(home: &Path, dir: PathBuf) -> Vec<Duration> {
    let mut config = HostConfig::new(home, home);
    config.explicit = vec![dir];
    config.discover = false;
    let (host, _rx) = ExtensionHost::start(config).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    let mut times = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..WARMUP + ROUND_TRIPS {
        let started = Instant::now();
        let reply = host.call_tool("echo", json!({"n": i})).await.unwrap();
        assert!(!reply.is_error);
        if i >= WARMUP {
            times.push(started.elapsed());
        }
    }
    host.shutdown().await;
    times
}
