//! A raw JSON-RPC client of `corvid --acp` that timestamps every line it reads, and `perf`.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A raw JSON-RPC client of `corvid --acp`.
pub struct Agent {
    pub child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<(Instant, Vec<u8>)>,
    next_id: u64,
}

impl Agent {
    pub fn spawn(binary: &Path, port: u16, work: &Path) -> Result<Self> {
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

    pub fn request(&mut self, method: &str, params: Value) -> Result<u64> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// The next message that is not a request to the client (those are answered: allow),
    /// leaving out updates that are neither preparing nor `in_progress` cards unparsed: this
    /// client shares the two cores with corvid.
    pub async fn next(&mut self) -> Result<(Instant, Value)> {
        loop {
            let (at, line) = self.lines.recv().await.context("corvid exited")?;
            if !line_may_matter(&line) {
                continue;
            }
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
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.request(method, params)?;
        loop {
            let (_, message) = self.next().await?;
            if message["id"] == id {
                return result(message);
            }
        }
    }

    /// A number of `/proc/PID/status` (sizes are in KiB).
    pub fn status_kib(&self, key: &str) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'));
        let value = line.and_then(|l| l.split_whitespace().next()?.parse().ok());
        value.with_context(|| format!("no {key} in /proc/PID/status"))
    }

    /// CPU time of all corvid's threads so far and how often they were scheduled.
    pub fn usage(&self) -> Result<Usage> {
        usage_of(self.child.id())
    }

    pub fn close(mut self) -> Result<()> {
        drop(self.stdin);
        self.child.wait()?;
        Ok(())
    }
}

/// Whether a line from corvid may be a response, a request, or a preparing or `in_progress`
/// card; any other session update is not needed here.
fn line_may_matter(line: &[u8]) -> bool {
    use memchr::memmem::find;
    let update = find(&line[..line.len().min(64)], br#""method":"session/update""#).is_some();
    !update || find(line, b"preparing").is_some() || find(line, b"in_progress").is_some()
}

/// CPU time of all a process's threads so far and how often they were scheduled
/// (`/proc/PID/task/*/schedstat`: run time in ns, wait time, time slices).
pub fn usage_of(pid: u32) -> Result<Usage> {
    let mut usage = Usage::default();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        // A thread that ended meanwhile has no file any more; its time is not counted.
        let Ok(stat) = std::fs::read_to_string(task?.path().join("schedstat")) else {
            continue;
        };
        let fields: Vec<u64> = stat
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()?;
        usage.cpu_seconds += *fields.first().unwrap_or(&0) as f64 / 1e9;
        usage.slices += *fields.get(2).unwrap_or(&0);
    }
    Ok(usage)
}

/// What a process's threads used so far.
#[derive(Default, Clone, Copy)]
pub struct Usage {
    pub cpu_seconds: f64,
    /// Times a thread was put on a CPU: each wake-up of a sleeping thread counts.
    pub slices: u64,
}

impl std::ops::Sub for Usage {
    type Output = Usage;
    fn sub(self, earlier: Usage) -> Usage {
        Usage {
            cpu_seconds: self.cpu_seconds - earlier.cpu_seconds,
            slices: self.slices.saturating_sub(earlier.slices),
        }
    }
}

pub fn result(message: Value) -> Result<Value> {
    match message.get("error") {
        Some(error) => bail!("corvid answered with an error: {error}"),
        None => Ok(message["result"].clone()),
    }
}

/// `perf record` attached to corvid while the turns run.
pub struct Perf(Child);

impl Perf {
    pub async fn attach(pid: u32, file: &Path) -> Result<Self> {
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
    pub fn stop(mut self) -> Result<()> {
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
