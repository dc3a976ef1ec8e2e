//! Many ACP sessions in one `corvid --acp`, each streaming a tool turn at once (issue 16 item 4):
//! chunk → preparing and finish → `in_progress` p50/p99, and RSS.
//!
//! `cargo bench -p corvid-cli --bench acp_sessions [-- --sessions 100 --runs 3 --binary PATH]`
//! (`--binary` runs another build; `--perf FILE` records a `perf` profile of corvid during the
//! turns only, call graphs by DWARF, for `perf report -i FILE`).
//!
//! The same load as `bench/acp_stream_bench.py --only sessions`, without Python: a loopback
//! HTTP/1.1 SSE mock on a tokio listener serves every session at once (one `read_file` call: the
//! id+name chunk, six argument fragments 2 ms apart, the finish chunk, `[DONE]`; the answer to
//! the tool result is "done"), and a plain thread reads corvid's stdout, timestamping each read.
//! Both timestamps of a latency are `Instant`s of this one process: the mock's is taken right
//! after the chunk's `write` returned, the client's right after the `read` that completed the
//! frame's line. The Python harness ran 100 mock threads and its reader under one GIL on the
//! same two cores as corvid, and its scheduling showed up in the p99.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// The `read_file` arguments, in the fragments the mock streams (as `bench/acp_bench.py`).
const ARG_FRAGMENTS: [&str; 6] = [r#"{"file"#, r#"_path""#, r#": ""#, "notes", ".txt", r#""}"#];
/// The pause before each argument fragment and before the finish chunk.
const FRAGMENT_GAP: Duration = Duration::from_millis(2);
/// How long a run may take before the bench gives up.
const RUN_LIMIT: Duration = Duration::from_secs(120);

fn main() -> Result<()> {
    let options = options()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mock = Mock::start().await?;
        for run in 1..=options.runs {
            let load = std::fs::read_to_string("/proc/loadavg")?;
            let load = load
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ");
            println!("run {run}/{} (load average {load}):", options.runs);
            measure(&mock, &options).await?.print(options.sessions);
        }
        Ok(())
    })
}

struct Options {
    sessions: usize,
    runs: usize,
    binary: PathBuf,
    perf: Option<PathBuf>,
}

/// `--sessions N`, `--runs N`, `--binary PATH`, `--perf FILE`; anything else cargo passes (`--bench`) is ignored.
fn options() -> Result<Options> {
    let mut options = Options {
        sessions: 100,
        runs: 3,
        binary: env!("CARGO_BIN_EXE_corvid").into(),
        perf: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let number = match arg.as_str() {
            "--sessions" => &mut options.sessions,
            "--runs" => &mut options.runs,
            "--binary" => {
                options.binary = args.next().context("a path after --binary")?.into();
                continue;
            }
            "--perf" => {
                options.perf = Some(args.next().context("a path after --perf")?.into());
                continue;
            }
            _ => continue,
        };
        *number = args
            .next()
            .context("a number after the option")?
            .parse()
            .with_context(|| format!("{arg} takes a number"))?;
    }
    if options.sessions < 2 {
        bail!("--sessions must be at least 2");
    }
    Ok(options)
}

/// When the mock flushed each call's first and finish chunks, by call id.
#[derive(Default)]
struct Flushes {
    calls: usize,
    /// When the last first-turn request arrived.
    last_request: Option<Instant>,
    first_chunk: HashMap<String, Instant>,
    finish: HashMap<String, Instant>,
}

/// The loopback OpenAI-shaped model.
struct Mock {
    port: u16,
    flushes: Arc<Mutex<Flushes>>,
}

impl Mock {
    async fn start() -> Result<Self> {
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

    fn take_flushes(&self) -> Flushes {
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

/// A raw JSON-RPC client of `corvid --acp`.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<(Instant, Vec<u8>)>,
    next_id: u64,
}

impl Agent {
    fn spawn(binary: &Path, port: u16, work: &Path) -> Result<Self> {
        let inherited = std::env::vars().filter(|(name, _)| {
            !["OPENAI_", "ANTHROPIC_", "CORVID_"]
                .iter()
                .any(|prefix| name.starts_with(prefix))
        });
        let mut child = Command::new(binary)
            .arg("--acp")
            .current_dir(work)
            .env_clear()
            .envs(inherited)
            .env("OPENAI_API_KEY", "sk-bench")
            .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
            .env("OPENAI_MODEL", "bench")
            .env("CORVID_HOME", work.join("home"))
            .env("CORVID_EMIT_TOOL_USE_SUMMARIES", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start corvid")?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || read_lines(stdout, &tx));
        Ok(Self {
            child,
            stdin,
            lines,
            next_id: 0,
        })
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        Ok(self.stdin.write_all(&line)?)
    }

    fn request(&mut self, method: &str, params: Value) -> Result<u64> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// The next message that is not a request to the client (those are answered: allow).
    async fn next(&mut self) -> Result<(Instant, Value)> {
        loop {
            let (at, line) = self.lines.recv().await.context("corvid exited")?;
            let message: Value = serde_json::from_slice(&line)?;
            if message.get("method").is_none() || message.get("id").is_none() {
                return Ok((at, message));
            }
            let options = message["params"]["options"].as_array().cloned();
            let allow = options.unwrap_or_default().into_iter().find(|o| {
                o["kind"]
                    .as_str()
                    .is_some_and(|kind| kind.starts_with("allow"))
            });
            let outcome = match allow {
                Some(option) => json!({"outcome": "selected", "optionId": option["optionId"]}),
                None => json!({"outcome": "cancelled"}),
            };
            let answer =
                json!({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}});
            self.send(&answer)?;
        }
    }

    /// Sends a request and waits for its result (nothing else arrives before it here).
    async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.request(method, params)?;
        loop {
            let (_, message) = self.next().await?;
            if message["id"] == id {
                return result(message);
            }
        }
    }

    /// A number of `/proc/PID/status` (sizes are in KiB).
    fn status_kib(&self, key: &str) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'));
        let value = line.and_then(|l| l.split_whitespace().next()?.parse().ok());
        value.with_context(|| format!("no {key} in /proc/PID/status"))
    }

    /// CPU time of all the process's threads so far (`/proc/PID/task/*/schedstat`, in ns).
    fn cpu_seconds(&self) -> Result<f64> {
        let mut ns = 0u64;
        for task in std::fs::read_dir(format!("/proc/{}/task", self.child.id()))? {
            // A thread that ended meanwhile has no file any more; its time is not counted.
            let Ok(stat) = std::fs::read_to_string(task?.path().join("schedstat")) else {
                continue;
            };
            ns += stat
                .split_whitespace()
                .next()
                .unwrap_or("0")
                .parse::<u64>()?;
        }
        Ok(ns as f64 / 1e9)
    }

    fn close(mut self) -> Result<()> {
        drop(self.stdin);
        self.child.wait()?;
        Ok(())
    }
}

fn result(message: Value) -> Result<Value> {
    match message.get("error") {
        Some(error) => bail!("corvid answered with an error: {error}"),
        None => Ok(message["result"].clone()),
    }
}

/// `perf record` attached to corvid while the turns run.
struct Perf(Child);

impl Perf {
    async fn attach(pid: u32, file: &Path) -> Result<Self> {
        let child = Command::new("perf")
            .args(["record", "-F", "4000", "--call-graph", "dwarf,16384", "-o"])
            .arg(file)
            .args(["-p", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start perf")?;
        // perf needs a moment to attach to every thread.
        tokio::time::sleep(Duration::from_millis(500)).await;
        Ok(Self(child))
    }

    /// Stops recording (perf writes its file on SIGINT).
    fn stop(mut self) -> Result<()> {
        let pid = self.0.id().to_string();
        Command::new("kill").args(["-INT", &pid]).status()?;
        self.0.wait()?;
        Ok(())
    }
}

/// Reads corvid's stdout and passes on each line with the time of the read that completed it.
fn read_lines(mut stdout: ChildStdout, tx: &mpsc::UnboundedSender<(Instant, Vec<u8>)>) {
    let mut buf = vec![0; 1 << 16];
    let mut pending = Vec::new();
    while let Ok(n @ 1..) = stdout.read(&mut buf) {
        let at = Instant::now();
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if tx.send((at, line)).is_err() {
                return;
            }
        }
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// One run's figures.
struct Report {
    /// From the first prompt written to the last session's model request received.
    requests_ms: f64,
    preparing_ms: Vec<f64>,
    in_progress_ms: Vec<f64>,
    rss_one_kib: u64,
    rss_all_kib: u64,
    peak_kib: u64,
    agent_cpu: f64,
    /// corvid's threads once every prompt was answered.
    threads: u64,
}

/// Starts corvid, opens the sessions, prompts them all at once and waits for every answer.
async fn measure(mock: &Mock, options: &Options) -> Result<Report> {
    let sessions = options.sessions;
    let work = tempfile::tempdir()?;
    std::fs::write(work.path().join("notes.txt"), "bench notes\n")?;
    let mut agent = Agent::spawn(&options.binary, mock.port, work.path())?;
    agent
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await?;
    let new_session = json!({"cwd": work.path(), "mcpServers": []});
    let mut ids = Vec::new();
    let mut rss_one_kib = 0;
    for n in 0..sessions {
        let session = agent.call("session/new", new_session.clone()).await?;
        ids.push(session["sessionId"].clone());
        if n == 0 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            rss_one_kib = agent.status_kib("VmRSS")?;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_all_kib = agent.status_kib("VmRSS")?;
    mock.take_flushes();
    let perf = match &options.perf {
        Some(file) => Some(Perf::attach(agent.child.id(), file).await?),
        None => None,
    };

    let agent_cpu0 = agent.cpu_seconds()?;
    let mut prompts = HashSet::new();
    let prompted = Instant::now();
    for id in &ids {
        let prompt = json!({"sessionId": id, "prompt": [{"type": "text", "text": "go"}]});
        prompts.insert(agent.request("session/prompt", prompt)?);
    }
    let (mut preparing, mut in_progress) = (HashMap::new(), HashMap::new());
    tokio::time::timeout(RUN_LIMIT, async {
        while !prompts.is_empty() {
            let (at, message) = agent.next().await?;
            if let Some(id) = message["id"].as_u64() {
                result(message)?;
                prompts.remove(&id);
                continue;
            }
            let update = &message["params"]["update"];
            let Some(call_id) = update["toolCallId"].as_str() else {
                continue;
            };
            if update["sessionUpdate"] == "tool_call" && update["_meta"]["phase"] == "preparing" {
                preparing.entry(call_id.to_owned()).or_insert(at);
            }
            if update["status"] == "in_progress" {
                in_progress.entry(call_id.to_owned()).or_insert(at);
            }
        }
        anyhow::Ok(())
    })
    .await
    .context("the prompts were not all answered in time")??;
    let agent_cpu = agent.cpu_seconds()? - agent_cpu0;
    let peak_kib = agent.status_kib("VmHWM")?;
    let threads = agent.status_kib("Threads")?;
    if let Some(perf) = perf {
        perf.stop()?;
    }
    agent.close()?;

    let flushes = mock.take_flushes();
    let latencies = |read: &HashMap<String, Instant>, flushed: &HashMap<String, Instant>| {
        let ms = flushed.iter().filter_map(|(call, sent)| {
            let at = read.get(call)?;
            Some(ms(at.saturating_duration_since(*sent)))
        });
        ms.collect::<Vec<_>>()
    };
    let preparing_ms = latencies(&preparing, &flushes.first_chunk);
    let in_progress_ms = latencies(&in_progress, &flushes.finish);
    if preparing_ms.len() != sessions || in_progress_ms.len() != sessions {
        bail!(
            "missing frames: {} preparing, {} in_progress of {sessions} sessions",
            preparing_ms.len(),
            in_progress_ms.len()
        );
    }
    let requests_ms = flushes
        .last_request
        .map_or(f64::NAN, |at| ms(at.saturating_duration_since(prompted)));
    Ok(Report {
        requests_ms,
        preparing_ms,
        in_progress_ms,
        rss_one_kib,
        rss_all_kib,
        peak_kib,
        agent_cpu,
        threads,
    })
}

/// The p-th percentile by nearest rank, as the Python benches compute it.
fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

impl Report {
    fn print(&self, sessions: usize) {
        let (prep, inprog) = (&self.preparing_ms, &self.in_progress_ms);
        println!(
            "  {sessions} sessions: chunk -> preparing p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; \
             finish -> in_progress p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            percentile(prep, 50.0),
            percentile(prep, 99.0),
            percentile(prep, 100.0),
            percentile(inprog, 50.0),
            percentile(inprog, 99.0),
            percentile(inprog, 100.0),
        );
        let per_session = self.rss_all_kib.saturating_sub(self.rss_one_kib) / (sessions as u64 - 1);
        println!(
            "  RSS with 1 session {:.1} MiB, with {sessions} idle {:.1} MiB ({per_session} KiB per \
             extra session), peak {:.1} MiB; corvid's CPU during the turns {:.0} ms ({:.2} ms a \
             session); all {sessions} first model requests in {:.1} ms; {} threads after",
            self.rss_one_kib as f64 / 1024.0,
            self.rss_all_kib as f64 / 1024.0,
            self.peak_kib as f64 / 1024.0,
            self.agent_cpu * 1000.0,
            self.agent_cpu * 1000.0 / sessions as f64,
            self.requests_ms,
            self.threads,
        );
    }
}
