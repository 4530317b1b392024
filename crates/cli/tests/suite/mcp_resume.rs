//! Streamable HTTP resumption through the built binary: a small MCP server
//! the test writes (Python's `http.server`, speaking the real wire) breaks
//! the event stream of a tool call after its first events, once by closing
//! it (the server-initiated disconnect of MCP 2025-11-25) and once by
//! dropping the connection mid-body, and answers only on the resumed
//! stream. The pinned reference server cannot be used here: its event store
//! answers a resume with the wrong stream, so nothing arrives after one.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use zot_testkit::{MockModel, anthropic};

use super::mcp::zot;
use super::mcp_tui::last_result;
use super::support::World;

/// The `retry` (milliseconds) the server sends before breaking a stream.
/// Long enough that a reconnect which ignored it would come well before it
/// ends (the server notes such a reconnect as early), short enough to keep
/// the test quick.
const RETRY_MS: u64 = 1500;

/// How long the server may take to print its port: a cold `python3` start
/// on a loaded machine; the backstop that turns a hang into a failure.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(60);

/// A Streamable HTTP MCP server (protocol 2025-11-25) with two tools,
/// `poll` and `cut`. Both answer on an event stream whose first event
/// primes resumption (an id, the `retry` delay, empty data) and whose
/// second is a log notification; then `poll` ends the stream cleanly and
/// `cut` drops the connection in the middle of a chunked body. The result
/// is the stream's third event, sent only to a `GET` carrying
/// `Last-Event-ID` (every event after that id is replayed). Every request
/// without the session id is refused; the log (first argument) records
/// the calls, each resume (with whether it came before the `retry` delay
/// was over) and the `DELETE`. Prints `port N` once listening.
const RESUME_SERVER: &str = r#"
import json, socket, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG, RETRY_MS = sys.argv[1], int(sys.argv[2])
SESSION = "resume-session-1"
lock = threading.Lock()
streams = {}

def log(line):
    with lock, open(LOG, "a") as f:
        f.write(line + "\n")

def event(eid, data, retry=None):
    out = "id: %s\n" % eid
    if retry is not None:
        out += "retry: %d\n" % retry
    return (out + "data: %s\n\n" % data).encode()

def number(eid):
    return int(eid.rpartition("-")[2])

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, body=None, headers=()):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def in_session(self):
        if self.headers.get("Mcp-Session-Id") == SESSION:
            return True
        log("%s without the session id" % self.command)
        self.reply(400, {"error": "no session"})
        return False

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"],
                      "capabilities": {"tools": {}, "logging": {}},
                      "serverInfo": {"name": "resume", "version": "1.0.0"}}
            self.reply(200, {"jsonrpc": "2.0", "id": mid, "result": result},
                       [("Mcp-Session-Id", SESSION)])
        elif not self.in_session():
            pass
        elif method is None or mid is None:
            self.reply(202)
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"message": {"type": "string"}}}
            tools = [{"name": "poll", "description": "closes its stream, then answers on the resumed one",
                      "inputSchema": schema},
                     {"name": "cut", "description": "drops its connection, then answers on the resumed one",
                      "inputSchema": schema}]
            self.reply(200, {"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}})
        elif method == "tools/call":
            self.call(mid, msg["params"])
        else:
            self.reply(200, {"jsonrpc": "2.0", "id": mid, "result": {}})

    def call(self, mid, params):
        name = params["name"]
        sid = "call%s" % mid
        text = "%s answered: %s" % (name, params.get("arguments", {}).get("message", ""))
        note = {"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "logger": "resume", "data": "%s is working" % name}}
        result = {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}}
        events = [("%s-1" % sid, ""), ("%s-2" % sid, json.dumps(note)), ("%s-3" % sid, json.dumps(result))]
        with lock:
            streams[sid] = {"events": events, "ended": None}
        log("call %s on stream %s" % (name, sid))
        first = event(events[0][0], "", RETRY_MS) + event(*events[1])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if name == "cut":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(first), first))
        else:
            # The body ends when the connection does: a clean end of stream.
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(first)
        self.wfile.flush()
        with lock:
            streams[sid]["ended"] = time.monotonic()
        if name == "cut":
            # No last chunk: the client sees the body break off.
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def do_GET(self):
        if not self.in_session():
            return
        last = self.headers.get("Last-Event-ID")
        if last is None:
            # No stream of its own for server messages outside a request.
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with lock:
            stream = streams.get(last.rpartition("-")[0])
        if stream is None or stream["ended"] is None:
            log("resume of unknown %s" % last)
            self.reply(404, {"error": "unknown event id"})
            return
        waited = (time.monotonic() - stream["ended"]) * 1000
        log("resume after %s %s" % (last, "early" if waited < RETRY_MS else "once the retry delay was over"))
        later = b"".join(event(eid, data) for eid, data in stream["events"] if number(eid) > number(last))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(later)
        self.wfile.flush()
        self.close_connection = True

    def do_DELETE(self):
        if self.in_session():
            log("DELETE of the session")
            self.reply(200)

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print("port %d" % server.server_address[1], flush=True)
server.serve_forever()
"#;

/// The running server; killed on drop.
struct ResumeServer {
    child: Child,
    port: u16,
}

impl ResumeServer {
    fn start(w: &World, log: &Path) -> Self {
        let script = w.scratch.join("resume_server.py");
        std::fs::write(&script, RESUME_SERVER).unwrap();
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(log)
            .arg(RETRY_MS.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(LISTEN_TIMEOUT).unwrap_or_default();
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the server did not start: {line:?}"));
        Self { child, port }
    }
}

impl Drop for ResumeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_event_stream_resumes_with_last_event_id_after_the_servers_retry() {
    let w = World::new();
    let server_log = w.scratch.join("server.log");
    let server = ResumeServer::start(&w, &server_log);
    std::fs::write(
        w.home.join("mcp.json"),
        json!({"mcpServers": {"resume": {
            "type": "http",
            "url": format!("http://127.0.0.1:{}/mcp", server.port),
        }}})
        .to_string(),
    )
    .unwrap();
    let model = MockModel::start([
        anthropic::tool_call("p", "mcp__resume__poll", r#"{"message":"closed"}"#),
        anthropic::tool_call("c", "mcp__resume__cut", r#"{"message":"dropped"}"#),
        anthropic::text("done"),
    ])
    .await;
    let run = zot(&w, &model, "anthropic", &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "done\n", "{run:?}");

    // Each result, sent only on the resumed stream, reached the model.
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "{run:?}");
    let polled = last_result(&requests[1].body);
    assert!(polled.contains("poll answered: closed"), "{polled}");
    assert!(!polled.contains("is_error\":true"), "{polled}");
    let cut = last_result(&requests[2].body);
    assert!(cut.contains("cut answered: dropped"), "{cut}");
    assert!(!cut.contains("is_error\":true"), "{cut}");

    // The server saw each stream resumed after its last event, within the
    // session, once its retry delay was over; and the session ended.
    let log = std::fs::read_to_string(&server_log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let streams: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("call "))
        .filter_map(|l| l.split(" on stream ").nth(1))
        .collect();
    assert_eq!(streams.len(), 2, "{log}");
    for stream in &streams {
        let resumed = format!("resume after {stream}-2 once the retry delay was over");
        assert!(lines.contains(&resumed.as_str()), "{resumed}\n{log}");
    }
    assert!(!log.contains("early"), "{log}");
    assert!(!log.contains("without the session id"), "{log}");
    assert!(log.contains("DELETE of the session"), "{log}");
    // The notifications sent before the breaks are in zot's log of the server.
    let zot_log = w.log("mcp:resume");
    assert!(
        zot_log.contains("poll is working") && zot_log.contains("cut is working"),
        "{zot_log}"
    );
    assert!(!zot_log.contains("dropped"), "{zot_log}");
}
