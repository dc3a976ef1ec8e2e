//! The loopback OpenAI-shaped model: every request on its own connection, served at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The `read_file` arguments, in the fragments the mock streams (as `bench/acp_bench.py`).
const ARG_FRAGMENTS: [&str; 6] = [r#"{"file"#, r#"_path""#, r#": ""#, "notes", ".txt", r#""}"#];
/// The pause before each argument fragment and before the finish chunk.
const FRAGMENT_GAP: Duration = Duration::from_millis(2);

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

impl Mock {
    pub async fn start() -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let flushes = Arc::new(Mutex::new(Flushes::default()));
        let shared = flushes.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(respond(stream, shared.clone()));
            }
        });
        Ok(Self { port, flushes })
    }

    pub fn take_flushes(&self) -> Flushes {
        std::mem::take(&mut *self.flushes.lock().unwrap())
    }
}

/// Serves one request on its own connection (the body ends when the connection closes).
async fn respond(mut stream: TcpStream, flushes: Arc<Mutex<Flushes>>) -> std::io::Result<()> {
    // Each chunk leaves when written, so the timestamp after `write_all` is its flush.
    stream.set_nodelay(true)?;
    let (method, body) = read_request(&mut stream).await?;
    if method != "POST" {
        // The model list each session asks for: none here.
        let missing = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        return stream.write_all(missing).await;
    }
    stream
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
        )
        .await?;
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let messages = request["messages"].as_array().map(Vec::as_slice);
    if messages
        .unwrap_or_default()
        .iter()
        .any(|m| m["role"] == "tool")
    {
        let answer = [
            sse(json!({"content": "done"}), None),
            sse(json!({}), Some("stop")),
        ];
        stream.write_all(answer.concat().as_bytes()).await?;
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
        stream.write_all(first.as_bytes()).await?;
        let at = Instant::now();
        flushes
            .lock()
            .unwrap()
            .first_chunk
            .insert(call_id.clone(), at);
        for fragment in ARG_FRAGMENTS {
            tokio::time::sleep(FRAGMENT_GAP).await;
            let delta = json!({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]});
            stream.write_all(sse(delta, None).as_bytes()).await?;
        }
        tokio::time::sleep(FRAGMENT_GAP).await;
        stream
            .write_all(sse(json!({}), Some("tool_calls")).as_bytes())
            .await?;
        let at = Instant::now();
        flushes.lock().unwrap().finish.insert(call_id, at);
    }
    stream.write_all(b"data: [DONE]\n\n").await?;
    stream.shutdown().await
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
