//! A loopback web server for the `web_fetch` tests: fixed pages by path,
//! every request target recorded. Requests in absolute form (a proxy's
//! `GET http://host/path`) are served by their path too, so the same server
//! stands in for a forward proxy.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::http::read_request;

/// One page: status, headers and body.
#[derive(Debug, Clone)]
pub struct Page {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Page {
    /// A 200 page of `content_type`.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
        }
    }

    /// A 302 to `location`.
    pub fn redirect(location: &str) -> Self {
        Self {
            status: 302,
            headers: vec![("location".into(), location.into())],
            body: Vec::new(),
        }
    }
}

/// The running server; stops when dropped.
pub struct WebServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl WebServer {
    /// Serves `pages` (path, page) on a fresh loopback port; other paths get 404.
    pub async fn start(pages: Vec<(&str, Page)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let pages: Arc<Vec<(String, Page)>> = Arc::new(
            pages
                .into_iter()
                .map(|(path, page)| (path.to_owned(), page))
                .collect(),
        );
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let pages = Arc::clone(&pages);
                let seen = Arc::clone(&seen);
                tokio::spawn(async move {
                    let Ok(Some(request)) = read_request(&mut socket).await else {
                        return;
                    };
                    seen.lock().unwrap().push(request.path.clone());
                    let path = match request.path.split_once("://") {
                        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]).to_owned(),
                        None => request.path.clone(),
                    };
                    let page = pages
                        .iter()
                        .find(|(p, _)| *p == path)
                        .map(|(_, page)| page.clone())
                        .unwrap_or_else(|| Page {
                            status: 404,
                            headers: vec![("content-type".into(), "text/plain".into())],
                            body: b"no such page".to_vec(),
                        });
                    let mut head = format!(
                        "HTTP/1.1 {} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                        page.status,
                        page.body.len()
                    );
                    for (name, value) in &page.headers {
                        head.push_str(&format!("{name}: {value}\r\n"));
                    }
                    head.push_str("\r\n");
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(&page.body).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self {
            addr,
            requests,
            task,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.addr.port())
    }

    /// The request targets received so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
