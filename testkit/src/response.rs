//! Scripted responses: what the mock server answers, chunk by chunk.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// A point in a scripted body where the server stops until the test opens it, so a test
/// can observe a client while the rest of the body is held back.
#[derive(Clone, Debug)]
pub struct Gate {
    inner: Arc<GateInner>,
}

#[derive(Debug)]
struct GateInner {
    open: watch::Sender<bool>,
    reached: watch::Sender<bool>,
}

impl Gate {
    /// A closed gate nobody has reached yet.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(GateInner {
                open: watch::Sender::new(false),
                reached: watch::Sender::new(false),
            }),
        }
    }

    /// Lets the server send the chunk waiting at this gate (and every later one).
    pub fn open(&self) {
        self.inner.open.send_replace(true);
    }

    /// Resolves once the server waits at this gate, after every earlier chunk was flushed.
    pub async fn wait_reached(&self) {
        let mut rx = self.inner.reached.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = rx.wait_for(|reached| *reached).await;
    }

    pub(crate) fn mark_reached(&self) {
        self.inner.reached.send_replace(true);
    }

    pub(crate) async fn wait_open(&self) {
        let mut rx = self.inner.open.subscribe();
        let _ = rx.wait_for(|open| *open).await;
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

/// One piece of a response body, sent (and flushed) on its own.
#[derive(Clone, Debug)]
pub struct Chunk {
    pub(crate) bytes: Vec<u8>,
    pub(crate) delay: Option<Duration>,
    pub(crate) gate: Option<Gate>,
}

impl Chunk {
    /// A chunk sent as soon as the previous one was.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            bytes: bytes.into(),
            delay: None,
            gate: None,
        }
    }

    /// The bytes this chunk sends, for feeding a decoder directly.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Waits this long (real time) before sending the chunk; after the gate, if any.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Holds the chunk back until `gate` is opened.
    pub fn gate(mut self, gate: &Gate) -> Self {
        self.gate = Some(gate.clone());
        self
    }
}

/// One SSE event carrying `data` (`data: {data}\n\n`).
pub fn sse_event(data: &str) -> Chunk {
    Chunk::new(format!("data: {data}\n\n"))
}

/// How a response body ends after its last chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The body is finished properly.
    Finish,
    /// The connection is aborted mid-body (no terminating chunk).
    Cut,
    /// The connection stays open until the client goes away.
    Hang,
    /// The last chunk is sent again and again until the client goes away.
    Endless,
}

/// How the body is framed on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `transfer-encoding: chunked`, one frame per chunk.
    Chunked,
    /// One body with a `content-length`, unless a cut or hang forces chunked framing.
    Fixed,
}

/// A response the mock server serves to one request.
#[derive(Clone, Debug)]
pub struct ScriptedResponse {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) chunks: Vec<Chunk>,
    pub(crate) framing: Framing,
    pub(crate) ending: Ending,
}

impl ScriptedResponse {
    fn base(status: u16, content_type: &str, chunks: Vec<Chunk>, framing: Framing) -> Self {
        Self {
            status,
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            chunks,
            framing,
            ending: Ending::Finish,
        }
    }

    /// A 200 `text/event-stream` body sent chunk by chunk.
    pub fn sse(chunks: Vec<Chunk>) -> Self {
        Self::base(200, "text/event-stream", chunks, Framing::Chunked)
    }

    /// A 200 `text/event-stream` body sent as one chunk.
    pub fn sse_body(bytes: impl Into<Vec<u8>>) -> Self {
        Self::sse(vec![Chunk::new(bytes)])
    }

    /// A JSON body with this status.
    pub fn json(status: u16, body: serde_json::Value) -> Self {
        Self::base(
            status,
            "application/json",
            vec![Chunk::new(body.to_string())],
            Framing::Fixed,
        )
    }

    /// An error status with this body (`application/json` when it parses as JSON, else text).
    pub fn error(status: u16, body: impl Into<Vec<u8>>) -> Self {
        let body = body.into();
        let content_type = if serde_json::from_slice::<serde_json::Value>(&body).is_ok() {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        };
        Self::base(status, content_type, vec![Chunk::new(body)], Framing::Fixed)
    }

    /// Sets a header, replacing any earlier value of the same name (case-insensitive).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// After the last chunk, aborts the connection without finishing the body.
    pub fn cut(mut self) -> Self {
        self.ending = Ending::Cut;
        self
    }

    /// After the last chunk, keeps the connection open until the client goes away.
    pub fn hang(mut self) -> Self {
        self.ending = Ending::Hang;
        self
    }

    /// Repeats the last chunk without end (a hostile server's body that never stops), until
    /// the client goes away; without chunks it behaves like [`ScriptedResponse::hang`].
    pub fn endless(mut self) -> Self {
        self.ending = Ending::Endless;
        self
    }
}
