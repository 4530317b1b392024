//! remote-guard: a team guard served over WebSocket with the Rust SDK's
//! `websocket` feature. It refuses dangerous `bash` commands for every zot
//! that loads it by URL. Usage: `remote-guard [ADDR]` (default
//! 127.0.0.1:7878); it prints the URL to put in the manifest on stdout.

use std::io::Write;

use zot_ext::serde_json::Value;
use zot_ext::{Extension, ToolCallDecision, WebSocketServer};

/// Where the server listens without an argument.
const DEFAULT_ADDR: &str = "127.0.0.1:7878";

/// Commands containing any of these are refused.
const DANGER_PATTERNS: &[&str] = &["rm -rf", "rm -fr", "mkfs", "dd if=", ":(){"];

fn main() -> Result<(), zot_ext::Error> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| DEFAULT_ADDR.to_owned());
    let server = WebSocketServer::bind(addr.as_str())?;
    let url = format!("ws://{}/zot", server.local_addr()?);
    // stdout is not the protocol here: the socket is.
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{url}").and_then(|()| stdout.flush());
    server.serve(guard)
}

fn guard() -> Extension {
    Extension::new("remote-guard", "1.0.0").intercept_tool_call(|call, host| {
        let command = call.args.get("command").and_then(Value::as_str);
        let Some(command) = command.filter(|_| call.name == "bash") else {
            return ToolCallDecision::Allow;
        };
        let normal = command.split_whitespace().collect::<Vec<_>>().join(" ");
        match DANGER_PATTERNS.iter().find(|p| normal.contains(*p)) {
            Some(pattern) => {
                host.log(format_args!("refused: {normal}"));
                ToolCallDecision::block(format!("refused by the team guard: matches \"{pattern}\""))
            }
            None => ToolCallDecision::Allow,
        }
    })
}
