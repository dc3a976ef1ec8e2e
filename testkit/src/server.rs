//! The loopback HTTP/1.1 server that serves scripted responses and records requests.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::Stream;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::response::{Chunk, Ending, Framing, ScriptedResponse};

/// How long `wait_for_requests` waits before failing the test.
const WAIT_LIMIT: Duration = Duration::from_secs(10);

type Predicate = Box<dyn Fn(&RecordedRequest) -> bool + Send + Sync>;
type ResponseBody = UnsyncBoxBody<Bytes, io::Error>;

/// One request the server received, kept so tests can assert on outbound traffic.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// The path without the query string (`/chat/completions`).
    pub path: String,
    /// Header names are lowercase; values that are not UTF-8 are converted lossily.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON, or `Null` when it is not JSON.
    pub body: serde_json::Value,
    pub raw_body: Vec<u8>,
    pub received_at: Instant,
}

impl RecordedRequest {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct Queued {
    predicate: Option<Predicate>,
    response: ScriptedResponse,
}

#[derive(Default)]
struct State {
    queue: Vec<Queued>,
    requests: Vec<RecordedRequest>,
    lookups: Vec<RecordedRequest>,
}

struct Shared {
    state: Mutex<State>,
    /// Number of requests received, so waiters can await a count instead of polling.
    received: watch::Sender<usize>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking predicate must not hide every later request from the test.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A mock LLM provider on 127.0.0.1 with a random port; stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept_task: JoinHandle<()>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl MockServer {
    /// Binds 127.0.0.1:0 and starts serving on the current tokio runtime.
    pub async fn start() -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("corvid-testkit: cannot bind 127.0.0.1:0: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("corvid-testkit: no local address: {e}"));
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            received: watch::Sender::new(0),
        });
        let accept_task = tokio::spawn(accept_loop(listener, shared.clone()));
        MockServer {
            addr,
            shared,
            accept_task,
        }
    }

    /// The base URL, `http://127.0.0.1:PORT` without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues a response served to the next model request (not a `GET` lookup) that no
    /// earlier queued response matches.
    pub fn push(&self, resp: ScriptedResponse) {
        self.shared.lock().queue.push(Queued {
            predicate: None,
            response: resp,
        });
    }

    /// Queues a response served only to a request for which `pred` holds.
    pub fn push_matching(
        &self,
        pred: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        resp: ScriptedResponse,
    ) {
        self.shared.lock().queue.push(Queued {
            predicate: Some(Box::new(pred)),
            response: resp,
        });
    }

    /// Every model request (anything but `GET`) received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Every `GET` (model list lookups) received so far, in arrival order. Only responses
    /// queued with [`Self::push_matching`] answer them; others get a 404.
    pub fn lookups(&self) -> Vec<RecordedRequest> {
        self.shared.lock().lookups.clone()
    }

    /// Resolves once at least `n` requests arrived; panics after 10 s so tests fail clearly.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<RecordedRequest> {
        let mut rx = self.shared.received.subscribe();
        if tokio::time::timeout(WAIT_LIMIT, rx.wait_for(|count| *count >= n))
            .await
            .is_err()
        {
            let got = self.requests();
            panic!(
                "corvid-testkit: expected {n} requests within {WAIT_LIMIT:?}, got {}: {:?}",
                got.len(),
                got.iter()
                    .map(|r| format!("{} {}", r.method, r.path))
                    .collect::<Vec<_>>()
            );
        }
        self.requests()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every open connection.
        self.accept_task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Accept errors (e.g. too many open files) are transient: keep serving.
            Err(_) => continue,
        };
        let shared = shared.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(shared.clone(), req));
            // Errors here are cut connections (scripted or by the client): nothing to report.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<ResponseBody>, Infallible> {
    let (parts, body) = req.into_parts();
    let raw_body = match body.collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(e) => {
            return Ok(plain(
                500,
                format!("corvid-testkit: reading the body failed: {e}"),
            ));
        }
    };
    let recorded = RecordedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&raw_body).unwrap_or(serde_json::Value::Null),
        raw_body,
        received_at: Instant::now(),
    };
    // Lookups (`GET /models`) are answered only by responses queued for them, so a client's
    // background lookup never takes a model request's response.
    if recorded.method == "GET" {
        let scripted = {
            let mut state = shared.lock();
            let position = state.queue.iter().position(|q| {
                q.predicate
                    .as_ref()
                    .is_some_and(|predicate| predicate(&recorded))
            });
            let scripted = position.map(|i| state.queue.remove(i).response);
            state.lookups.push(recorded);
            scripted
        };
        return Ok(match scripted {
            Some(scripted) => build(scripted),
            None => plain(404, "corvid-testkit: no lookup response queued".to_owned()),
        });
    }
    let (scripted, count) = {
        let mut state = shared.lock();
        let position = state.queue.iter().position(|q| {
            q.predicate
                .as_ref()
                .is_none_or(|predicate| predicate(&recorded))
        });
        let scripted = position.map(|i| state.queue.remove(i).response);
        let describe = format!(
            "request #{} {} {}",
            state.requests.len() + 1,
            recorded.method,
            recorded.path
        );
        state.requests.push(recorded);
        (scripted.ok_or(describe), state.requests.len())
    };
    shared.received.send_replace(count);
    Ok(match scripted {
        Ok(scripted) => build(scripted),
        Err(describe) => plain(
            500,
            format!("corvid-testkit: no scripted response queued that matches {describe}"),
        ),
    })
}

fn plain(status: u16, text: String) -> Response<ResponseBody> {
    let mut resp = Response::new(full(text.into_bytes()));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp
}

fn full(bytes: Vec<u8>) -> ResponseBody {
    Full::new(Bytes::from(bytes))
        .map_err(|never| match never {})
        .boxed_unsync()
}

fn build(scripted: ScriptedResponse) -> Response<ResponseBody> {
    let fixed = scripted.framing == Framing::Fixed && scripted.ending == Ending::Finish;
    let body = if fixed {
        full(scripted.chunks.into_iter().flat_map(|c| c.bytes).collect())
    } else {
        BodyExt::boxed_unsync(StreamBody::new(body_stream(
            scripted.chunks,
            scripted.ending,
        )))
    };
    let mut builder = Response::builder().status(scripted.status);
    for (name, value) in &scripted.headers {
        builder = builder.header(name, value);
    }
    builder.body(body).unwrap_or_else(|e| {
        plain(
            500,
            format!("corvid-testkit: invalid scripted status or header: {e}"),
        )
    })
}

struct BodyState {
    chunks: std::vec::IntoIter<Chunk>,
    ending: Ending,
    done: bool,
    /// The last chunk sent, kept for an endless ending.
    last: Option<Bytes>,
}

fn body_stream(
    chunks: Vec<Chunk>,
    ending: Ending,
) -> impl Stream<Item = Result<Frame<Bytes>, io::Error>> + Send + 'static {
    let state = BodyState {
        chunks: chunks.into_iter(),
        ending,
        done: false,
        last: None,
    };
    futures::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        // Returning `Pending` once makes hyper flush what it buffered, so every chunk
        // reaches the socket on its own and a gate is only reached after a flush.
        tokio::task::yield_now().await;
        match state.chunks.next() {
            Some(chunk) => {
                if let Some(gate) = &chunk.gate {
                    gate.mark_reached();
                    gate.wait_open().await;
                }
                if let Some(delay) = chunk.delay {
                    tokio::time::sleep(delay).await;
                }
                let bytes = Bytes::from(chunk.bytes);
                if state.ending == Ending::Endless {
                    state.last = Some(bytes.clone());
                }
                Some((Ok(Frame::data(bytes)), state))
            }
            None => match state.ending {
                Ending::Finish => None,
                Ending::Cut => {
                    state.done = true;
                    let cut = io::Error::new(io::ErrorKind::ConnectionAborted, "scripted cut");
                    Some((Err(cut), state))
                }
                Ending::Endless if state.last.is_some() => {
                    let again = state.last.clone().unwrap_or_default();
                    Some((Ok(Frame::data(again)), state))
                }
                Ending::Hang | Ending::Endless => {
                    // hyper drops the body (and this future) when the client disconnects.
                    futures::future::pending::<()>().await;
                    None
                }
            },
        }
    })
}
