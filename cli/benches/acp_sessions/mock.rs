//! The loopback OpenAI-shaped model, serving every session at once: each request on its own
//! connection (the body ends when it closes), or with `keep_alive` as real providers do, on
//! connections kept open with chunked bodies, so the client reuses them.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The `read_file` arguments, in the fragments the mock streams (as `bench/acp_bench.py`).
const ARG_FRAGMENTS: [&str; 6] = [r#"{"file"#, r#"_path""#, r#": ""#, "notes", ".txt", r#""}"#];
/// The pause before each argument fragment and before the finish chunk.
const FRAGMENT_GAP: Duration = Duration::from_millis(2);
/// The argument fragments' SSE events, written once: the mock shares the cores with corvid.
static FRAGMENT_CHUNKS: LazyLock<Vec<String>> = LazyLock::new(|| {
    ARG_FRAGMENTS
        .iter()
        .map(|fragment| {
            let delta = json!({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]});
            sse(delta, None)
        })
        .collect()
});

/// When the mock flushed each call's first and finish chunks, by call id.
#[derive(Default)]
pub struct Flushes {
    calls: usize,
    /// When the last first-turn request arrived.
    pub last_request: Option<Instant>,
    pub first_chunk: HashMap<String, Instant>,
    pub finish: HashMap<String, Instant>,
}

/// The loopback OpenAI-shaped model.
pub struct Mock {
    pub port: u16,
    flushes: Arc<Mutex<Flushes>>,
}

/// How the mock frames its answers.
#[derive(Clone, Copy)]
struct Framing {
    /// Chunked bodies on a connection kept open, else one body per connection.
    keep_alive: bool,
}

impl Mock {
    pub async fn start(keep_alive: bool) -> anyhow::Result<Self> {
        let framing = Framing { keep_alive };
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let flushes = Arc::new(Mutex::new(Flushes::default()));
        let shared = flushes.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone(), framing));
            }
        });
        Ok(Self { port, flushes })
    }

    pub fn take_flushes(&self) -> Flushes {
        std::mem::take(&mut *self.flushes.lock().unwrap())
    }
}

/// Serves the connection's requests: one, or with keep-alive as many as the client sends.
async fn serve(
    mut stream: TcpStream,
    flushes: Arc<Mutex<Flushes>>,
    framing: Framing,
) -> std::io::Result<()> {
    // Each chunk leaves when written, so the timestamp after `write_all` is its flush.
    stream.set_nodelay(true)?;
    loop {
        let (method, body) = match read_request(&mut stream).await {
            Ok(request) => request,
            // The client closed a kept-alive connection between requests.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        };
        respond(&mut stream, &method, &body, &flushes, framing).await?;
        if !framing.keep_alive {
            return stream.shutdown().await;
        }
    }
}

/// Writes `data` as part of a body: as is, or as one HTTP chunk.
async fn send(stream: &mut TcpStream, data: &[u8], framing: Framing) -> std::io::Result<()> {
    if framing.keep_alive {
        let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
        chunk.extend_from_slice(data);
        chunk.extend_from_slice(b"\r\n");
        stream.write_all(&chunk).await
    } else {
        stream.write_all(data).await
    }
}

/// Answers one request.
async fn respond(
    stream: &mut TcpStream,
    method: &str,
    body: &[u8],
    flushes: &Mutex<Flushes>,
    framing: Framing,
) -> std::io::Result<()> {
    let connection = if framing.keep_alive {
        "keep-alive"
    } else {
        "close"
    };
    if method != "POST" {
        // The model list each session asks for: none here.
        let missing = format!(
            "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: {connection}\r\n\r\n"
        );
        return stream.write_all(missing.as_bytes()).await;
    }
    let framing_header = if framing.keep_alive {
        "transfer-encoding: chunked\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n{framing_header}connection: {connection}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await?;
    if answers_a_tool(body) {
        let answer = [
            sse(json!({"content": "done"}), None),
            sse(json!({}), Some("stop")),
        ];
        send(stream, answer.concat().as_bytes(), framing).await?;
    } else {
        let call_id = {
            let mut flushes = flushes.lock().unwrap();
            flushes.calls += 1;
            flushes.last_request = Some(Instant::now());
            format!("call_{}", flushes.calls - 1)
        };
        let call = json!({"index": 0, "id": call_id, "type": "function",
            "function": {"name": "read_file", "arguments": ""}});
        let first = sse(json!({"role": "assistant", "tool_calls": [call]}), None);
        send(stream, first.as_bytes(), framing).await?;
        let at = Instant::now();
        flushes
            .lock()
            .unwrap()
            .first_chunk
            .insert(call_id.clone(), at);
        for fragment in &*FRAGMENT_CHUNKS {
            tokio::time::sleep(FRAGMENT_GAP).await;
            send(stream, fragment.as_bytes(), framing).await?;
        }
        tokio::time::sleep(FRAGMENT_GAP).await;
        send(
            stream,
            sse(json!({}), Some("tool_calls")).as_bytes(),
            framing,
        )
        .await?;
        let at = Instant::now();
        flushes.lock().unwrap().finish.insert(call_id, at);
    }
    send(stream, b"data: [DONE]\n\n", framing).await?;
    if framing.keep_alive {
        stream.write_all(b"0\r\n\r\n").await?;
    }
    Ok(())
}

/// Whether the request carries a tool result. A byte search, not a parse: the mock shares the
/// two cores with corvid, and parsing 200 request bodies of ~30 KB into JSON trees cost the
/// bench CPU that corvid's frames then waited behind.
fn answers_a_tool(body: &[u8]) -> bool {
    memchr::memmem::find(body, br#""role":"tool""#).is_some()
}

/// One `chat.completion.chunk` event with this delta and finish reason.
fn sse(delta: Value, finish_reason: Option<&str>) -> String {
    let chunk = json!({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]});
    format!("data: {chunk}\n\n")
}

/// The request's method and body (by `content-length`).
async fn read_request(stream: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut buf = [0; 8192];
    let head_end = loop {
        if let Some(pos) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let length = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = data.split_off(head_end);
    while body.len() < length {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        body.extend_from_slice(&buf[..n]);
    }
    let method = head
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    Ok((method, body))
}
