//! The legacy HTTP+SSE client transport: against the real reference server
//! (`@modelcontextprotocol/server-everything sse`), and against small
//! loopback servers for what the reference server never does (401, headers
//! checked on every request, an endpoint on another origin, not SSE at all).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use zot_mcp::legacy_sse::{LegacySseError, LegacySseTransport, header_map};
use zot_testkit::npm::EverythingServer;

/// The deadline of each step against the reference server.
const STEP: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_server_over_legacy_sse_lists_and_calls_tools() {
    let server = tokio::task::spawn_blocking(|| EverythingServer::start("sse"))
        .await
        .unwrap()
        .unwrap();
    let headers = header_map("everything", &[("X-Trace".into(), "t1".into())], None).unwrap();
    let transport = LegacySseTransport::connect("everything", &server.url("/sse"), headers)
        .await
        .unwrap();
    assert_eq!(transport.endpoint().path(), "/message");
    assert!(
        transport
            .endpoint()
            .query()
            .unwrap()
            .starts_with("sessionId=")
    );

    let client = tokio::time::timeout(STEP, ().serve(transport))
        .await
        .unwrap()
        .unwrap();
    let info = client.peer_info().unwrap();
    let server_info = info.server_info.as_ref().unwrap();
    assert!(server_info.name.contains("everything"), "{server_info:?}");
    let tools = tokio::time::timeout(STEP, client.list_all_tools())
        .await
        .unwrap()
        .unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(names.contains(&"get-sum"), "{names:?}");

    let call = |name: &'static str, args: serde_json::Value| {
        let params =
            CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone());
        let call = client.call_tool(params);
        async move {
            let result = tokio::time::timeout(STEP, call).await.unwrap().unwrap();
            serde_json::to_string(&result.content).unwrap()
        }
    };
    let text = call("echo", serde_json::json!({"message": "over legacy sse"})).await;
    assert!(text.contains("Echo: over legacy sse"), "{text}");
    let text = call("get-sum", serde_json::json!({"a": 2, "b": 40})).await;
    assert!(text.contains("42"), "{text}");
    tokio::time::timeout(STEP, client.cancel())
        .await
        .unwrap()
        .unwrap();
}

/// One request a loopback server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

async fn read_request(stream: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut line = String::new();
    stream.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        stream.read_line(&mut line).await.ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':')?;
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0; len];
    stream.read_exact(&mut body).await.ok()?;
    Some(Seen {
        method,
        path,
        headers,
        body: String::from_utf8(body).unwrap(),
    })
}

/// How the loopback server answers `GET /sse`.
#[derive(Clone, Copy)]
enum Behaviour {
    /// A stream whose `endpoint` is `/messages?s=1`; each POST is answered
    /// 202 and echoed back on the stream as a `message` event.
    Echo,
    /// 401 to everything.
    Unauthorized,
    /// A stream whose `endpoint` is on another origin.
    ForeignEndpoint,
    /// A plain HTML page.
    NotSse,
}

/// A loopback legacy-SSE server recording every request.
async fn loopback(behaviour: Behaviour) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sse", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let events_rx = Arc::new(tokio::sync::Mutex::new(events_rx));
    let recorded = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (seen, events_tx, events_rx) =
                (recorded.clone(), events_tx.clone(), events_rx.clone());
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                let Some(request) = read_request(&mut stream).await else {
                    return;
                };
                seen.lock().unwrap().push(request.clone());
                let stream = stream.get_mut();
                match (behaviour, request.method.as_str()) {
                    (Behaviour::Unauthorized, _) => {
                        let _ = stream
                            .write_all(b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\ncontent-length: 0\r\n\r\n")
                            .await;
                    }
                    (Behaviour::NotSse, _) => {
                        let _ = stream
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 6\r\n\r\n<html>")
                            .await;
                    }
                    (Behaviour::ForeignEndpoint, _) => {
                        let _ = stream
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\nevent: endpoint\ndata: http://elsewhere.invalid/messages\n\n")
                            .await;
                    }
                    (Behaviour::Echo, "GET") => {
                        let _ = stream
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n: hello\n\nevent: endpoint\ndata: /messages?s=1\n\n")
                            .await;
                        let mut events = events_rx.lock().await;
                        while let Some(data) = events.recv().await {
                            let frame = format!("event: message\ndata: {data}\n\n");
                            if stream.write_all(frame.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                    }
                    (Behaviour::Echo, _) => {
                        // Answer the request as a server would: a result for its id.
                        let message: serde_json::Value =
                            serde_json::from_str(&request.body).unwrap();
                        let reply = serde_json::json!({
                            "jsonrpc": "2.0", "id": message["id"], "result": {"echoed": message["method"]}
                        });
                        let _ = events_tx.send("not json-rpc".to_owned());
                        let _ = events_tx.send(reply.to_string());
                        let _ = stream
                            .write_all(
                                b"HTTP/1.1 202 Accepted\r\ncontent-length: 8\r\n\r\nAccepted",
                            )
                            .await;
                    }
                }
            });
        }
    });
    (url, seen)
}

/// Sends `ping` with `id` and returns the next message from the server.
pub(super) async fn ping_round_trip(
    transport: &mut LegacySseTransport,
    id: u64,
) -> serde_json::Value {
    let ping: ClientJsonRpcMessage =
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .unwrap();
    Transport::<rmcp::RoleClient>::send(transport, ping)
        .await
        .unwrap();
    let reply = tokio::time::timeout(STEP, transport.receive())
        .await
        .unwrap()
        .unwrap();
    serde_json::to_value(&reply).unwrap()
}

#[tokio::test]
async fn headers_go_with_every_request_and_messages_come_back() {
    let (url, seen) = loopback(Behaviour::Echo).await;
    let headers = header_map(
        "loop",
        &[("X-Api-Key".into(), "k-123".into())],
        Some("tok-456"),
    )
    .unwrap();
    let mut transport = LegacySseTransport::connect("loop", &url, headers)
        .await
        .unwrap();
    assert_eq!(
        transport.endpoint().as_str(),
        url.replace("/sse", "/messages?s=1")
    );
    // The line that is not JSON-RPC is skipped; the reply arrives.
    let reply = ping_round_trip(&mut transport, 7).await;
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["result"]["echoed"], "ping");

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", "/sse")
    );
    assert_eq!(seen[0].header("accept"), Some("text/event-stream"));
    assert_eq!(
        (seen[1].method.as_str(), seen[1].path.as_str()),
        ("POST", "/messages?s=1")
    );
    assert_eq!(seen[1].header("content-type"), Some("application/json"));
    for request in &seen {
        assert_eq!(request.header("x-api-key"), Some("k-123"), "{request:?}");
        assert_eq!(
            request.header("authorization"),
            Some("Bearer tok-456"),
            "{request:?}"
        );
    }
    Transport::<rmcp::RoleClient>::close(&mut transport)
        .await
        .unwrap();
    assert!(transport.receive().await.is_none(), "closed");
}

#[tokio::test]
async fn clear_errors() {
    let connect = |url: String| async move {
        LegacySseTransport::connect("srv", &url, Default::default())
            .await
            .unwrap_err()
    };
    let (url, _) = loopback(Behaviour::Unauthorized).await;
    let err = connect(url).await;
    assert!(matches!(err, LegacySseError::Unauthorized { .. }), "{err}");
    assert!(err.to_string().contains("run `zot mcp login srv`"), "{err}");

    let (url, _) = loopback(Behaviour::NotSse).await;
    let err = connect(url).await.to_string();
    assert!(err.contains("is not an SSE endpoint"), "{err}");
    assert!(err.contains("\"type\": \"http\""), "{err}");

    let (url, seen) = loopback(Behaviour::ForeignEndpoint).await;
    let err = connect(url).await.to_string();
    assert!(
        err.contains("http://elsewhere.invalid/messages") && err.contains("own origin"),
        "{err}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "nothing was sent elsewhere");

    // A closed port: the connection error, naming the server; the query
    // (which may hold a token) is not repeated.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = connect(format!("http://127.0.0.1:{port}/sse?key=secret"))
        .await
        .to_string();
    assert!(err.starts_with("mcp:srv: "), "{err}");
    assert!(!err.contains("secret"), "{err}");

    let err = header_map("srv", &[("Bad Name".into(), "v".into())], None).unwrap_err();
    assert!(
        err.to_string()
            .contains("\"Bad Name\" is not a header name"),
        "{err}"
    );
    let err = header_map("srv", &[("X".into(), "line\nbreak".into())], None).unwrap_err();
    assert!(
        !err.to_string().contains("break"),
        "values are never shown: {err}"
    );
}
