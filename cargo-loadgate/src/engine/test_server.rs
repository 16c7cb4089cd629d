//! A tiny HTTP/1.1 server for the engine's tests: keep-alive, content-length bodies, a handler
//! that picks the delay, status and body of each answer, and a log of every request received.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One request as the server received it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Logged {
    pub method: String,
    pub path: String,
    pub body: String,
}

/// What the server answers.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    pub delay: Duration,
    pub status: u16,
    pub body: String,
}

impl Reply {
    pub fn ok(body: &str) -> Self {
        Self {
            delay: Duration::ZERO,
            status: 200,
            body: body.to_owned(),
        }
    }
}

type Handler = Arc<dyn Fn(&Logged) -> Reply + Send + Sync>;

/// A server on 127.0.0.1 running on a thread of its own; stopped when dropped.
pub(crate) struct TestServer {
    pub url: String,
    log: Arc<Mutex<Vec<Logged>>>,
    connections: Arc<std::sync::atomic::AtomicU64>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    pub fn start(handler: impl Fn(&Logged) -> Reply + Send + Sync + 'static) -> Self {
        let handler: Handler = Arc::new(handler);
        let log = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (shutdown, mut shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let server_log = Arc::clone(&log);
        let connections = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let accepted_count = Arc::clone(&connections);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
                addr_tx
                    .send(listener.local_addr().expect("addr"))
                    .expect("send addr");
                loop {
                    tokio::select! {
                        _ = &mut shutdown_rx => break,
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            accepted_count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let handler = Arc::clone(&handler);
                            let log = Arc::clone(&server_log);
                            tokio::spawn(async move {
                                let _ = serve(stream, handler, log).await;
                            });
                        }
                    }
                }
            });
        });
        let addr = addr_rx.recv().expect("server address");
        Self {
            url: format!("http://{addr}"),
            log,
            connections,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every request received so far, sorted.
    pub fn sorted_log(&self) -> Vec<Logged> {
        let mut log = self.log.lock().expect("log").clone();
        log.sort();
        log
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    stream: tokio::net::TcpStream,
    handler: Handler,
    log: Arc<Mutex<Vec<Logged>>>,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let path = parts.next().unwrap_or_default().to_owned();
        let mut content_length = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                content_length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; content_length];
        reader.read_exact(&mut body).await?;
        let request = Logged {
            method,
            path,
            body: String::from_utf8_lossy(&body).into_owned(),
        };
        let reply = handler(&request);
        log.lock().expect("log").push(request);
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        let head = format!(
            "HTTP/1.1 {} X\r\ncontent-length: {}\r\n\r\n",
            reply.status,
            reply.body.len()
        );
        write.write_all(head.as_bytes()).await?;
        write.write_all(reply.body.as_bytes()).await?;
    }
}
