//! test262, differentially: every selected test runs on codemode-sandbox and on upstream rquickjs
//! 0.14 (the unmodified quickjs-ng 0.16.2), as the same async function body, and the runner
//! prints what passes on upstream and fails in the sandbox (a *regression*) and the reverse (an
//! *improvement*). It exits 1 on a regression that `deviations.txt` does not list, and warns
//! about a listed test that now passes.
//!
//! ```text
//! codemode-test262 --suite SUITE --work DIR --deviations FILE [--full] [--extended]
//!                  [--every N] [--threads N] [FILTER...]
//! ```
//!
//! - `--suite`: the pinned tarball (unpacked once under `--work`) or an unpacked `test262/`.
//! - No FILTER: the fixed sample, every `--every`-th test of the sorted list of the two groups of
//!   directories (`tests/test262/README.md`), section A and the second group; `--full`: every
//!   test of section A, and with `--extended` of the second group too.
//! - FILTER: paths under `test/` (`built-ins/Array/prototype/push`); every test under them runs.
//!
//! Each run gets a fresh VM in each engine, the sandbox's default `Limits` (64 MiB, 512 KiB of
//! stack) and 10 s (`engines::TIMEOUT`), and a panic of either engine is that run's failure, not
//! the runner's.
#![forbid(unsafe_code)]
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line runner reports on stdout/stderr"
)]

mod engines;
mod report;
mod suite;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use codemode_sandbox::Limits;

use crate::report::{Deviations, RunResult, Totals};
use crate::suite::{Frontmatter, Mode};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The sample CI runs: every `SAMPLE_EVERY`-th test of the sorted list of section A and the second
/// group. Measured on the 2-core development machine, with two other builds running: the full
/// section A takes 46 s, both groups in full 85 s, this sample 45 s; half of the budget of about
/// three minutes leaves room for a slower or busier CI machine.
const SAMPLE_EVERY: usize = 2;

/// Stack of each runner thread: the upstream engine runs on it, with its 512 KiB JavaScript
/// stack limit and the Rust frames around it.
const THREAD_STACK: usize = 8 * 1024 * 1024;

struct Options {
    suite: PathBuf,
    work: PathBuf,
    deviations: PathBuf,
    full: bool,
    extended: bool,
    every: usize,
    threads: usize,
    filters: Vec<String>,
}

fn options() -> Result<Options> {
    let mut options = Options {
        suite: PathBuf::new(),
        work: std::env::temp_dir().join("codemode-test262"),
        deviations: PathBuf::new(),
        full: false,
        extended: false,
        every: SAMPLE_EVERY,
        threads: std::thread::available_parallelism().map_or(2, usize::from),
        filters: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--suite" => options.suite = value("--suite")?.into(),
            "--work" => options.work = value("--work")?.into(),
            "--deviations" => options.deviations = value("--deviations")?.into(),
            "--full" => options.full = true,
            "--extended" => options.extended = true,
            "--every" => options.every = value("--every")?.parse::<usize>()?.max(1),
            "--threads" => options.threads = value("--threads")?.parse::<usize>()?.max(1),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}").into()),
            filter => options.filters.push(filter.trim_matches('/').to_owned()),
        }
    }
    if options.suite.as_os_str().is_empty() || options.deviations.as_os_str().is_empty() {
        return Err(
            "usage: codemode-test262 --suite SUITE --deviations FILE [--work DIR] \
                    [--full] [--extended] [--every N] [--threads N] [FILTER...]"
                .into(),
        );
    }
    if options.extended && !options.full {
        return Err("--extended goes with --full: the sample already spans both groups".into());
    }
    Ok(options)
}

/// One test in one mode, ready to run on both engines.
struct Job {
    path: String,
    mode: Mode,
    frontmatter: Frontmatter,
    body: String,
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(error) => {
            eprintln!("test262: {error}");
            std::process::exit(2);
        }
    }
}

/// Runs the selection; `Ok(false)` when a regression is not a listed deviation.
fn run() -> Result<bool> {
    let options = options()?;
    let started = Instant::now();
    let root = suite::suite_root(&options.suite, &options.work)?;
    let deviations = Deviations::read(&options.deviations)?;
    let section_a = suite::SECTION_A.iter().map(|&s| s.to_owned());
    let second_group = suite::SECOND_GROUP.iter().map(|&s| s.to_owned());
    let (roots, sampled): (Vec<String>, bool) = if !options.filters.is_empty() {
        (options.filters.clone(), false)
    } else if options.full && options.extended {
        (section_a.chain(second_group).collect(), false)
    } else if options.full {
        (section_a.collect(), false)
    } else {
        (section_a.chain(second_group).collect(), true)
    };
    let mut paths = suite::select(&root, &roots)?;
    if sampled {
        paths = paths
            .into_iter()
            .enumerate()
            .filter(|(index, _)| index % options.every == 0)
            .map(|(_, path)| path)
            .collect();
    }

    let mut totals = Totals {
        tests: paths.len(),
        ..Totals::default()
    };
    let mut jobs = Vec::new();
    for path in &paths {
        let bytes = std::fs::read(root.join("test").join(path))?;
        let Ok(source) = String::from_utf8(bytes) else {
            *totals.skipped.entry("not UTF-8").or_default() += 1;
            continue;
        };
        let frontmatter = Frontmatter::parse(&source);
        if let Some(reason) = frontmatter.skip_reason() {
            *totals.skipped.entry(reason).or_default() += 1;
            continue;
        }
        for &mode in frontmatter.modes() {
            jobs.push(Job {
                path: path.clone(),
                mode,
                body: suite::body(&root, &source, &frontmatter, mode)?,
                frontmatter: frontmatter.clone(),
            });
        }
    }
    let selection = if !options.filters.is_empty() {
        "the filters' tests".to_owned()
    } else if sampled {
        format!("one test in {} of the sorted selection", options.every)
    } else {
        "every test of the selection".to_owned()
    };
    eprintln!(
        "test262: {} runs of {} tests ({selection}) on {} threads",
        jobs.len(),
        paths.len(),
        options.threads
    );

    let results = run_all(&jobs, options.threads)?;
    let passed = report::print(&roots, &totals, &results, &deviations);
    println!("time: {:.1} s", started.elapsed().as_secs_f64());
    Ok(passed)
}

/// Runs every job on `threads` threads, each taking the next job in turn, upstream first then
/// the sandbox. The results come back in the jobs' order, whatever the threads' timing.
fn run_all(jobs: &[Job], threads: usize) -> Result<Vec<RunResult>> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<BTreeMap<usize, RunResult>> = Mutex::new(BTreeMap::new());
    let limits = Limits::default();
    std::thread::scope(|scope| -> Result<()> {
        let mut handles = Vec::new();
        for _ in 0..threads {
            let handle = std::thread::Builder::new()
                .stack_size(THREAD_STACK)
                .spawn_scoped(scope, || -> std::io::Result<()> {
                    let mut runtime = tokio_runtime()?;
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(index) else {
                            return Ok(());
                        };
                        let negative = job.frontmatter.negative.as_ref();
                        let upstream = engines::upstream(&job.body, &limits, engines::TIMEOUT)
                            .verdict(negative);
                        let ending =
                            engines::sandbox(&job.body, &limits, engines::TIMEOUT, &runtime);
                        if matches!(ending, engines::Ending::Panicked(_)) {
                            // The runtime that panicked inside `block_on` is not trusted again.
                            runtime = tokio_runtime()?;
                        }
                        let result = RunResult {
                            path: job.path.clone(),
                            mode: job.mode,
                            upstream,
                            sandbox: ending.verdict(negative),
                        };
                        results
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner())
                            .insert(index, result);
                        let done = done.fetch_add(1, Ordering::Relaxed) + 1;
                        if done.is_multiple_of(1000) {
                            eprintln!("test262: {done}/{} runs", jobs.len());
                        }
                    }
                })?;
            handles.push(handle);
        }
        for handle in handles {
            handle
                .join()
                .map_err(|_| "a runner thread panicked outside a test")??;
        }
        Ok(())
    })?;
    let results = results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(results.into_values().collect())
}

fn tokio_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
