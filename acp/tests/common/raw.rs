//! A client speaking raw JSON-RPC lines to corvid's real line transport.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

use super::{ScriptedProvider, TestFactory};

/// A client speaking raw lines to corvid's server.
pub struct RawClient {
    write: WriteHalf<DuplexStream>,
    read: BufReader<ReadHalf<DuplexStream>>,
}

impl RawClient {
    /// Starts the server on a pipe that buffers `pipe_bytes` in each direction.
    pub fn start(pipe_bytes: usize, provider: std::sync::Arc<ScriptedProvider>) -> Self {
        let (agent_io, client_io) = tokio::io::duplex(pipe_bytes);
        let (agent_read, agent_write) = tokio::io::split(agent_io);
        tokio::spawn(corvid_acp::serve(
            TestFactory::new(provider),
            corvid_acp::line_transport(agent_read, agent_write).unwrap(),
        ));
        let (read, write) = tokio::io::split(client_io);
        Self {
            write,
            read: BufReader::new(read),
        }
    }

    pub async fn send_bytes(&mut self, line: &[u8]) {
        self.write.write_all(line).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    pub async fn send(&mut self, message: Value) {
        self.send_bytes(message.to_string().as_bytes()).await;
    }

    /// The next line the server wrote, as JSON.
    pub async fn next(&mut self) -> Value {
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(20), self.read.read_line(&mut line))
            .await
            .expect("the server went silent")
            .unwrap();
        assert!(read > 0, "the server closed the connection");
        serde_json::from_str(&line).unwrap()
    }

    /// Reads lines until an answer (anything but a notification or a request).
    pub async fn answer(&mut self) -> Value {
        loop {
            let message = self.next().await;
            if message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Reads lines until the response to request `id`.
    pub async fn response(&mut self, id: u64) -> Value {
        loop {
            let message = self.next().await;
            if message["id"] == json!(id) && message.get("method").is_none() {
                return message;
            }
        }
    }

    pub async fn initialize(&mut self) {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 1}}))
            .await;
        assert_eq!(
            self.response(0).await["result"]["protocolVersion"],
            json!(1)
        );
    }

    pub async fn new_session(&mut self, id: u64, cwd: &std::path::Path) -> String {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "session/new",
            "params": {"cwd": cwd, "mcpServers": []}}))
            .await;
        let response = self.response(id).await;
        response["result"]["sessionId"].as_str().unwrap().to_owned()
    }
}
