//! Many ACP sessions in one `corvid --acp`, each streaming a tool turn at once (issue 16 item 4):
//! chunk → preparing and finish → `in_progress` p50/p99, and RSS.
//!
//! `cargo bench -p corvid-cli --bench acp_sessions [-- --sessions 100 --runs 3 --binary PATH]`
//! (`--binary` runs another build; `--perf FILE` records a `perf` profile of corvid during the
//! turns only, call graphs by DWARF, for `perf report -i FILE`; the shipped release build is
//! stripped, so pair it with `--binary $PWD/target/release-debug/corvid`; `--keep-alive` makes
//! the mock keep connections open as real providers do, instead of one connection per request;
//! `--timeline` prints the latencies by when each session's stream started).
//!
//! A loopback HTTP/1.1 SSE mock on a tokio listener ([`mock`]) serves every session at once (one
//! `read_file` call: the id+name chunk, six argument fragments 2 ms apart, the finish chunk,
//! `[DONE]`; the answer to the tool result is "done"), and a plain thread reads corvid's stdout
//! ([`agent`]). Both timestamps of a latency are `Instant`s of this one process: the mock's is
//! taken right after the chunk's `write` returned, the client's right after the `read` that
//! completed the frame's line. It replaces the `sessions` mode of `bench/acp_stream_bench.py`,
//! whose server's listen backlog of 5 let only a few sessions stream at once (BENCHMARKS.md).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

mod agent;
mod mock;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;

use agent::{Agent, Perf, Usage, result, usage_of};
use mock::Mock;

/// How long a run may take before the bench gives up.
const RUN_LIMIT: Duration = Duration::from_secs(120);

fn main() -> Result<()> {
    let options = options()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mock = Mock::start(options.keep_alive).await?;
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
    /// `--keep-alive`: the mock keeps connections open, as real providers do.
    keep_alive: bool,
    /// `--timeline`: the latencies by when each session's first chunk left, in tenths.
    timeline: bool,
}

/// `--sessions N`, `--runs N`, `--binary PATH`, `--perf FILE`, `--keep-alive`, `--timeline`;
/// anything else
/// cargo passes (`--bench`) is ignored.
fn options() -> Result<Options> {
    let mut options = Options {
        sessions: 100,
        runs: 3,
        binary: env!("CARGO_BIN_EXE_corvid").into(),
        perf: None,
        keep_alive: false,
        timeline: false,
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
            "--keep-alive" => {
                options.keep_alive = true;
                continue;
            }
            "--timeline" => {
                options.timeline = true;
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
    agent: Usage,
    /// This bench's own threads (the mock and the client) during the turns, on the same cores.
    bench: Usage,
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

    let usage0 = agent.usage()?;
    let bench0 = usage_of(std::process::id())?;
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
    let usage = agent.usage()? - usage0;
    let bench = usage_of(std::process::id())? - bench0;
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
    if options.timeline {
        print_timeline(&flushes, &preparing, &in_progress, prompted);
    }
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
        agent: usage,
        bench,
        threads,
    })
}

/// The sessions in tenths by when the mock sent their first chunk (from the prompts): when, and
/// the mean and worst latency of each tenth, to tell a burst's early sessions from its late ones.
fn print_timeline(
    flushes: &mock::Flushes,
    preparing: &HashMap<String, Instant>,
    in_progress: &HashMap<String, Instant>,
    prompted: Instant,
) {
    struct Row {
        first_chunk: f64,
        preparing: f64,
        finish: f64,
        in_progress: f64,
    }
    let since = |at: Instant, from: Instant| ms(at.saturating_duration_since(from));
    let mut rows: Vec<Row> = flushes
        .first_chunk
        .iter()
        .filter_map(|(call, &sent)| {
            let finish = *flushes.finish.get(call)?;
            Some(Row {
                first_chunk: since(sent, prompted),
                preparing: since(*preparing.get(call)?, sent),
                finish: since(finish, prompted),
                in_progress: since(*in_progress.get(call)?, finish),
            })
        })
        .collect();
    rows.sort_by(|a, b| a.first_chunk.total_cmp(&b.first_chunk));
    for tenth in rows.chunks(rows.len().div_ceil(10).max(1)) {
        let mean = |f: fn(&Row) -> f64| tenth.iter().map(f).sum::<f64>() / tenth.len() as f64;
        let worst = |f: fn(&Row) -> f64| tenth.iter().map(f).fold(0.0, f64::max);
        println!(
            "    first chunks {:5.1}-{:5.1} ms: preparing mean {:.2}, max {:.2} ms; finishes from \
             {:5.1} ms: in_progress mean {:.2}, max {:.2} ms",
            tenth[0].first_chunk,
            tenth[tenth.len() - 1].first_chunk,
            mean(|r| r.preparing),
            worst(|r| r.preparing),
            tenth[0].finish,
            mean(|r| r.in_progress),
            worst(|r| r.in_progress),
        );
    }
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
             session, {:.1} thread wake-ups a session; the bench's own {:.0} ms); all {sessions} first \
             model requests in {:.1} ms; {} threads after",
            self.rss_one_kib as f64 / 1024.0,
            self.rss_all_kib as f64 / 1024.0,
            self.peak_kib as f64 / 1024.0,
            self.agent.cpu_seconds * 1000.0,
            self.agent.cpu_seconds * 1000.0 / sessions as f64,
            self.agent.slices as f64 / sessions as f64,
            self.bench.cpu_seconds * 1000.0,
            self.requests_ms,
            self.threads,
        );
    }
}
