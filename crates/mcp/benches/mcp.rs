//! MCP tool round trip over stdio against a zot extension's (what the MCP
//! adapter costs over zot's own protocol; figures go into BENCHMARKS.md). Both servers are minimal python3 echo
//! programs, so the difference is the protocol and its adapter: the zot
//! frames and the host's own table of pending requests, against `rmcp`'s
//! JSON-RPC client over the same child-process transport.
//!
//! Run: `cargo bench -p zot-extensions --bench mcp`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use zot_extensions::{ExtensionHost, HostConfig};
use zot_testkit::bench::Stats;

const ROUND_TRIPS: usize = 3000;
const WARMUP: usize = 300;

/// A minimal MCP server: answers initialize (with the client's version),
/// tools/list (one `echo` tool) and tools/call (the arguments as text).
const MCP_ECHO: &str = r#"#!/usr/bin/env python3
import json, sys
out = sys.stdout
def reply(id, result):
    out.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    out.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, id = msg.get("method"), msg.get("id")
    if method == "initialize":
        reply(id, {"protocolVersion": msg["params"]["protocolVersion"],
                   "capabilities": {"tools": {}},
                   "serverInfo": {"name": "echo", "version": "1"}})
    elif method == "tools/list":
        reply(id, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
    elif method == "tools/call":
        reply(id, {"content": [{"type": "text", "text": json.dumps(msg["params"].get("arguments"))}]})
    elif id is not None:
        reply(id, {})
"#;

/// The same echo as a zot extension.
const ZOT_ECHO: &str = r#"#!/usr/bin/env python3
import json, sys
out = sys.stdout
out.write(json.dumps({"type": "hello", "name": "echo"}) + "\n")
out.flush()
for line in sys.stdin:
    msg = json.loads(line)
    t = msg["type"]
    if t == "hello_ack":
        out.write(json.dumps({"type": "register_tool", "name": "echo", "schema": {"type": "object"}}) + "\n")
        out.write('{"type":"ready"}\n')
    elif t == "tool_call":
        out.write(json.dumps({"type": "tool_result", "id": msg["id"],
                              "content": [{"type": "text", "text": json.dumps(msg["args"])}]}) + "\n")
    elif t == "shutdown":
        break
    out.flush()
"#;

fn executable(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    zot_testkit::write_exec(&path, text);
    path
}

async fn round_trips(config: HostConfig, tool: &str) -> Vec<Duration> {
    let (host, _rx) = ExtensionHost::start(config).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    let mut times = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..WARMUP + ROUND_TRIPS {
        let started = Instant::now();
        let reply = host.call_tool(tool, json!({"n": i})).await.unwrap();
        assert!(!reply.is_error, "{reply:?}");
        if i >= WARMUP {
            times.push(started.elapsed());
        }
    }
    host.shutdown().await;
    times
}

fn main() {
    zot_mcp::install();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    // The zot extension, loaded with --ext; nothing discovered.
    let ext = root.join("zot-echo");
    std::fs::create_dir_all(&ext).unwrap();
    let script = executable(&ext, "echo.py", ZOT_ECHO);
    let manifest = json!({"name": "echo", "exec": script});
    std::fs::write(ext.join("extension.json"), manifest.to_string()).unwrap();
    let zot_home = root.join("zot-home");
    std::fs::create_dir_all(&zot_home).unwrap();
    let mut config = HostConfig::new(&zot_home, &zot_home);
    config.explicit = vec![ext];
    config.discover = false;
    let zot = runtime.block_on(round_trips(config, "echo"));

    // The MCP server, from $ZOT_HOME/mcp.json (discovery on, nothing else there).
    let mcp_home = root.join("mcp-home");
    std::fs::create_dir_all(&mcp_home).unwrap();
    let server = executable(root, "mcp_echo.py", MCP_ECHO);
    let config_file = json!({"mcpServers": {"bench": {"command": server}}});
    std::fs::write(mcp_home.join("mcp.json"), config_file.to_string()).unwrap();
    let config = HostConfig::new(&mcp_home, &mcp_home);
    let mcp = runtime.block_on(round_trips(config, "mcp__bench__echo"));

    let (zot, mcp) = (Stats::of(&zot), Stats::of(&mcp));
    println!("## tool round trip through the host ({ROUND_TRIPS} calls, python3 echo over stdio)");
    println!("zot extension: {zot}");
    println!("MCP server:    {mcp}");
    println!(
        "mcp/zot (median): {:.2}",
        mcp.median.as_secs_f64() / zot.median.as_secs_f64()
    );
}
