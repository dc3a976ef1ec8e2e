//! Checkpoint costs on a synthetic repository (BENCHMARKS.md "Checkpoints"): a snapshot when
//! nothing changed (warm stat cache), the bytes a turn that changed 10 files adds to the
//! store, and the preview and restore of a turn that touched 100 files.
//!
//! `cargo bench -p corvid-checkpoint` (10k files / 200 MB); `CHECKPOINT_BENCH_FILES` and
//! `CHECKPOINT_BENCH_MB` change the tree's size, `CHECKPOINT_BENCH_DIR` where it is built.
//! `CHECKPOINT_BENCH_PROFILE_LOOPS=N` runs N more unchanged snapshots after the warm ones and
//! stops, for a profiler (`perf record`) to see mostly the unchanged snapshot;
//! `CHECKPOINT_BENCH_OPENCODE=0` leaves out opencode's design.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use corvid_checkpoint::Store;
use std::path::Path;
use std::process::Command;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Deterministic incompressible bytes for file `i`, version `v`.
fn content(i: usize, v: u64, len: usize) -> Vec<u8> {
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ v.wrapping_mul(0xD1B5_4A32_D192_ED03)
        | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn rel(i: usize) -> String {
    format!("src/m{:03}/f{i:05}.rs", i % 100)
}

/// CPU time the process has run, on all its threads (the walker's included, finished ones
/// too): independent of how many other processes share the machine, unlike wall time.
fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec.try_into().unwrap(), t.tv_nsec.try_into().unwrap())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let files = env_or("CHECKPOINT_BENCH_FILES", 10_000);
    let mb = env_or("CHECKPOINT_BENCH_MB", 200);
    let per_file = mb * 1024 * 1024 / files;
    let base = std::env::var_os("CHECKPOINT_BENCH_DIR");
    let scratch = match &base {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let ws = scratch.path().join("ws");
    let home = scratch.path().join("home");
    println!(
        "tree: {files} files x {per_file} bytes = {mb} MB in {}",
        ws.display()
    );
    for i in 0..files {
        let path = ws.join(rel(i));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content(i, 0, per_file)).unwrap();
    }
    std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
    // Files changed in the last 2 s are always re-read (racy-clean rule): let the tree settle.
    std::thread::sleep(Duration::from_millis(2100));

    let mut store = Store::open(&home, "bench").unwrap();
    let t = Instant::now();
    let first = store.snapshot(&ws).unwrap();
    let cold = t.elapsed();
    let stored = store.stored_bytes().unwrap();
    println!(
        "first snapshot (hash + store everything): {}; store {} MB",
        ms(cold),
        stored / (1 << 20)
    );

    let mut warm = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..21 {
        let (t, c) = (Instant::now(), process_cpu());
        assert_eq!(store.snapshot(&ws).unwrap(), first);
        warm.push(t.elapsed());
        cpu.push(process_cpu() - c);
    }
    if let Ok(n) = std::env::var("CHECKPOINT_BENCH_PROFILE_LOOPS") {
        for _ in 0..n.parse::<usize>().unwrap() {
            store.snapshot(&ws).unwrap();
        }
        return;
    }
    let best = *warm.iter().min().unwrap();
    println!(
        "unchanged snapshot, warm (store open): median {}, best {}; CPU time median {}",
        ms(median(warm)),
        ms(best),
        ms(median(cpu))
    );
    let mut reopened = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut s = Store::open(&home, "bench").unwrap();
        assert_eq!(s.snapshot(&ws).unwrap(), first);
        reopened.push(t.elapsed());
    }
    println!(
        "unchanged snapshot after Store::open (index read from disk): median {}",
        ms(median(reopened))
    );

    // A turn that changes 10 files.
    let before_bytes = store.stored_bytes().unwrap();
    // Each in a different folder (the worst case for the trees written).
    for i in (0..10).map(|k| k * (files / 10) + k) {
        std::fs::write(ws.join(rel(i)), content(i, 1, per_file)).unwrap();
    }
    let t = Instant::now();
    let after10 = store.snapshot(&ws).unwrap();
    let snap10 = t.elapsed();
    let added = store.stored_bytes().unwrap() - before_bytes;
    let changed = 10 * per_file;
    println!(
        "turn changing 10 files ({changed} bytes of content): snapshot {}, store grew {added} bytes ({} bytes beyond the new contents)",
        ms(snap10),
        added as i64 - changed as i64
    );

    // A turn that touches 100 files, then its undo.
    let before = after10;
    for i in (0..100).map(|k| k * (files / 100) + k) {
        std::fs::write(ws.join(rel(i)), content(i, 2, per_file)).unwrap();
    }
    let after = store.snapshot(&ws).unwrap();
    let (t, c) = (Instant::now(), process_cpu());
    let plan = store.preview(&ws, before, after).unwrap();
    let (preview, preview_cpu) = (t.elapsed(), process_cpu() - c);
    assert_eq!(plan.changes.len(), 100);
    let (t, c) = (Instant::now(), process_cpu());
    store.restore(&plan, false).unwrap();
    let (restore, restore_cpu) = (t.elapsed(), process_cpu() - c);
    println!(
        "undo of a turn that touched 100 files: preview {}, restore {} (total {}); CPU time preview {}, restore {}",
        ms(preview),
        ms(restore),
        ms(preview + restore),
        ms(preview_cpu),
        ms(restore_cpu)
    );
    // File 0 was changed by both turns: the undo puts back the first turn's version.
    assert_eq!(
        std::fs::read(ws.join(rel(0))).unwrap(),
        content(0, 1, per_file)
    );

    if std::env::var("CHECKPOINT_BENCH_OPENCODE").as_deref() != Ok("0") {
        opencode_design(&ws, &scratch.path().join("opencode-git"), files, per_file);
    }
}

/// Bytes of the files under `dir`.
fn du(dir: &Path) -> u64 {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        n += if meta.is_dir() {
            du(&entry.path())
        } else {
            meta.len()
        };
    }
    n
}

/// opencode's design, measured on the same tree: a separate git dir, `git add -A` +
/// `git write-tree` per snapshot, `git checkout <tree> -- <files>` to revert.
fn opencode_design(ws: &Path, git_dir: &Path, files: usize, per_file: usize) {
    let git = |args: &[&str]| -> String {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(git_dir)
            .arg("--work-tree")
            .arg(ws)
            .args(["-c", "core.autocrlf=false", "-c", "gc.auto=0"])
            .args(args)
            .current_dir(ws)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    git(&["init", "-q"]);
    let snapshot = || {
        git(&["add", "-A", "."]);
        git(&["write-tree"])
    };
    let t = Instant::now();
    snapshot();
    println!(
        "opencode design: first snapshot {}; git dir {} MB",
        ms(t.elapsed()),
        du(git_dir) >> 20
    );
    let mut warm = Vec::new();
    for _ in 0..11 {
        let t = Instant::now();
        snapshot();
        warm.push(t.elapsed());
    }
    println!(
        "opencode design: unchanged snapshot: median {}",
        ms(median(warm))
    );
    let before_bytes = du(git_dir);
    for i in (0..10).map(|k| k * (files / 10) + k) {
        std::fs::write(ws.join(rel(i)), content(i, 3, per_file)).unwrap();
    }
    let t = Instant::now();
    let before = snapshot();
    let snap10 = t.elapsed();
    println!(
        "opencode design: turn changing 10 files: snapshot {}, git dir grew {} bytes",
        ms(snap10),
        du(git_dir) - before_bytes
    );
    let paths: Vec<String> = (0..100).map(|k| rel(k * (files / 100) + k)).collect();
    for (k, p) in paths.iter().enumerate() {
        std::fs::write(ws.join(p), content(k, 4, per_file)).unwrap();
    }
    snapshot();
    let t = Instant::now();
    let mut args = vec!["checkout", before.as_str(), "--"];
    args.extend(paths.iter().map(String::as_str));
    git(&args);
    println!(
        "opencode design: revert of 100 files (git checkout <tree> -- files): {}",
        ms(t.elapsed())
    );
}
