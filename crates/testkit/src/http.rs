//! Just enough HTTP/1.1 for the mock: reading one request (headers and a
//! `Content-Length` body) and writing plain or chunked responses. A test's
//! server closes the connection after every response, so there is no
//! keep-alive to get wrong; the measuring server keeps it open
//! ([`MockModel::start_for_bench`](crate::MockModel::start_for_bench)).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Requests larger than this are refused rather than buffered.
const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug)]
pub(crate) struct RawRequest {
    pub method: String,
    pub path: String,
    /// Names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Reads one request; `Ok(None)` when the client closed before sending one.
pub(crate) async fn read_request(
    socket: &mut (impl AsyncRead + Unpin),
) -> Result<Option<RawRequest>, String> {
    let mut buf = Vec::new();
    let header_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_REQUEST_BYTES {
            return Err("request headers too large".into());
        }
        let mut chunk = [0u8; 8192];
        let n = socket.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err("truncated request head".into())
            };
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let mut body = buf.split_off(header_end + 4);
    let head = std::str::from_utf8(&buf[..header_end]).map_err(|_| "request head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("malformed request line {request_line:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported protocol {version:?}"));
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("malformed header line {line:?}"));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        return Err("chunked request bodies are not supported by the mock".into());
    }
    let length: usize = match header("content-length") {
        Some(value) => value
            .parse()
            .map_err(|_| format!("bad content-length {value:?}"))?,
        None => 0,
    };
    if length > MAX_REQUEST_BYTES {
        return Err("request body too large".into());
    }
    // Read straight into the body's room: a long session's request is large,
    // and the server's time per request is part of what a client waits.
    body.reserve(length.saturating_sub(body.len()));
    while body.len() < length {
        let n = (&mut *socket)
            .take((length - body.len()) as u64)
            .read_buf(&mut body)
            .await
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("truncated request body".into());
        }
    }
    body.truncate(length);
    Ok(Some(RawRequest {
        method: method.to_owned(),
        path: path.to_owned(),
        headers,
        body,
    }))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Writes a whole response with a `Content-Length` body.
pub(crate) async fn write_plain(
    socket: &mut (impl AsyncWrite + Unpin),
    code: u16,
    headers: &[(String, String)],
    body: &str,
    keep_alive: bool,
) -> std::io::Result<()> {
    let content_type = if serde_json::from_str::<serde_json::Value>(body).is_ok() {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    let mut head = format!(
        "HTTP/1.1 {code} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{}",
        reason(code),
        body.len(),
        connection(keep_alive)
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await?;
    socket.flush().await?;
    end(socket, keep_alive).await
}

/// The `connection` header: `close` unless the connection stays open.
fn connection(keep_alive: bool) -> &'static str {
    if keep_alive {
        ""
    } else {
        "connection: close\r\n"
    }
}

/// After a response: the write side is shut unless the connection stays open.
async fn end(socket: &mut (impl AsyncWrite + Unpin), keep_alive: bool) -> std::io::Result<()> {
    if keep_alive {
        Ok(())
    } else {
        socket.shutdown().await
    }
}

/// Starts a chunked `text/event-stream` response, as the real APIs send.
pub(crate) async fn write_stream_head(
    socket: &mut (impl AsyncWrite + Unpin),
    keep_alive: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
         transfer-encoding: chunked\r\n{}\r\n",
        connection(keep_alive)
    );
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await
}

/// Sends one chunk and flushes it, so the client sees events one by one.
pub(crate) async fn write_chunk(
    socket: &mut (impl AsyncWrite + Unpin),
    data: &str,
) -> std::io::Result<()> {
    if data.is_empty() {
        // An empty chunk would end the body.
        return Ok(());
    }
    socket
        .write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
        .await?;
    socket.flush().await
}

pub(crate) async fn finish_chunked(
    socket: &mut (impl AsyncWrite + Unpin),
    keep_alive: bool,
) -> std::io::Result<()> {
    socket.write_all(b"0\r\n\r\n").await?;
    socket.flush().await?;
    end(socket, keep_alive).await
}

/// Waits until the client closes its side (or the connection breaks).
pub(crate) async fn wait_for_close(socket: &mut (impl AsyncRead + Unpin)) {
    let mut buf = [0u8; 1024];
    while let Ok(n) = socket.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}
