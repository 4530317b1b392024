//! A loopback TCP proxy whose target the test can change, so a client keeps
//! one address while the server behind it is killed and another started
//! (on whatever port is free: no race for the old one).

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The running proxy; stops accepting on drop.
pub struct TcpProxy {
    port: u16,
    target: Arc<AtomicU16>,
    accept: JoinHandle<()>,
}

impl TcpProxy {
    /// Listens on a free loopback port and forwards each connection to
    /// `127.0.0.1:<target>`. A connection whose target refuses is closed at
    /// once, as a dead server's would be.
    pub async fn start(target: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let target = Arc::new(AtomicU16::new(target));
        let current = Arc::clone(&target);
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let port = current.load(Ordering::SeqCst);
                tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", port)).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Self {
            port,
            target,
            accept,
        }
    }

    /// New connections go to `127.0.0.1:<port>` from now on.
    pub fn set_target(&self, port: u16) {
        self.target.store(port, Ordering::SeqCst);
    }

    /// `http://127.0.0.1:<proxy port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
