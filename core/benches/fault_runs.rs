//! Runs the randomized fault model of `tests/common/fault_model.rs` for many cases, on every
//! core, and reports the violations and the slowest case (issue 33). CI runs a few hundred
//! cases as `tests/fault_injection.rs`; this is the long run:
//!
//! `cargo bench -p corvid-core --bench fault_runs -- --cases 10000 [--seed N] [--jobs N]
//! [--only I] [--real]`
//!
//! The cases come from one seeded generator, so `--seed S --only I` runs case `I` of a run
//! alone (its interleaving is part of the case: on the paused clock it replays exactly).
//! `--real` runs them on worker threads with real, scaled-down waits instead.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // a bench binary: it reports on stdout; a bad argument may panic

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/common/fault_model.rs"]
mod fault_model;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fault_model::{Case, Clock, case, run_case_with};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

struct Args {
    cases: usize,
    seed: u64,
    jobs: usize,
    only: Option<usize>,
    clock: Clock,
}

fn args() -> Args {
    let mut args = Args {
        cases: 1000,
        seed: 0,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        only: None,
        clock: Clock::Paused,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .expect("a value after the flag")
                .parse::<usize>()
                .unwrap()
        };
        match arg.as_str() {
            "--cases" => args.cases = value(),
            "--seed" => args.seed = value() as u64,
            "--jobs" => args.jobs = value().max(1),
            "--only" => args.only = Some(value()),
            "--real" => args.clock = Clock::Real,
            // `cargo bench` passes `--bench`; other harness flags do not apply.
            _ => {}
        }
    }
    args
}

/// The cases of a run: the same seed gives the same cases.
fn cases(count: usize, seed: u64) -> Vec<Case> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = case();
    (0..count)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect()
}

/// What one case did.
struct Outcome {
    index: usize,
    took: Duration,
    violation: Option<String>,
}

fn main() {
    let args = args();
    let all = cases(args.cases, args.seed);
    let picked: Vec<usize> = match args.only {
        Some(i) => vec![i],
        None => (0..all.len()).collect(),
    };
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(Vec::with_capacity(picked.len()));
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..args.jobs.min(picked.len()) {
            scope.spawn(|| {
                while let Some(&index) = picked.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let case = &all[index];
                    let t = Instant::now();
                    let result = std::panic::catch_unwind(|| run_case_with(case, args.clock));
                    let violation = match result {
                        Ok(Ok(_)) => None,
                        Ok(Err(violation)) => Some(violation),
                        Err(_) => Some("the case panicked".to_owned()),
                    };
                    outcomes.lock().unwrap().push(Outcome {
                        index,
                        took: t.elapsed(),
                        violation,
                    });
                }
            });
        }
    });
    let wall = started.elapsed();
    let outcomes = outcomes.into_inner().unwrap();
    let violations: Vec<&Outcome> = outcomes.iter().filter(|o| o.violation.is_some()).collect();
    println!(
        "fault runs: {} cases (seed {}, {} jobs, {} clock) in {:.1} s wall, {:.2} ms a case",
        outcomes.len(),
        args.seed,
        args.jobs,
        if args.clock == Clock::Paused {
            "paused"
        } else {
            "real"
        },
        wall.as_secs_f64(),
        wall.as_secs_f64() * 1000.0 / outcomes.len().max(1) as f64,
    );
    println!("violations: {}", violations.len());
    for outcome in &violations {
        println!(
            "  case {} ({}): {}\n    {:?}",
            outcome.index,
            replay(&args, outcome.index),
            outcome.violation.as_deref().unwrap_or_default(),
            all[outcome.index],
        );
    }
    if let Some(slowest) = outcomes.iter().max_by_key(|o| o.took) {
        println!(
            "slowest case: {} in {:.1} ms ({})\n    {:?}",
            slowest.index,
            slowest.took.as_secs_f64() * 1000.0,
            replay(&args, slowest.index),
            all[slowest.index],
        );
    }
    if !violations.is_empty() {
        std::process::exit(1);
    }
}

/// The command that runs case `index` alone.
fn replay(args: &Args, index: usize) -> String {
    format!(
        "--cases {} --seed {} --only {index}{}",
        args.cases,
        args.seed,
        if args.clock == Clock::Real {
            " --real"
        } else {
            ""
        }
    )
}
