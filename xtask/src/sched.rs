//! `cargo xtask bench sched`: what each scheduling mechanism of the sandbox's VM threads gains
//! against the plain alternative, in one sitting (issue 32: a mechanism that wins less than 10%
//! on no row that matters goes).
//!
//! The mechanisms are switched off at run time (`CODEMODE_PLAIN_SCHEDULING`, read once by the
//! sandbox's VM threads), so one build of each benchmark binary serves every variant: all on,
//! each one off, and all off (a plain queue whose every submission wakes a sleeping thread
//! through its condvar). The variants run in turns, several rounds, and each figure keeps its
//! best sample (`variants.rs`). Prebuilt VMs are compared by the core benchmark's own pair of
//! rows, with and without them.
//!
//! The rows: a warm `exec("return 1")`, with and without prebuilt VMs; a cell calling one tool;
//! 100 parallel calls; the p99 of a trivial exec beside two CPU-bound cells; and over HTTP, 32
//! sessions' throughput and the p99 of a trivial exec beside two CPU-bound sessions.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::variants::{self, Build};

/// Rounds of every variant in turn (each round runs every row of every variant once).
const ROUNDS: usize = 3;

/// The variable the VM threads read their switched-off mechanisms from.
const PLAIN_VAR: &str = "CODEMODE_PLAIN_SCHEDULING";

/// Each variant's name and what it switches off.
const VARIANTS: &[(&str, &str)] = &[
    ("all on (shipped)", ""),
    ("no looking role", "looking"),
    ("no caller spin", "caller-spin"),
    ("no brief-teardown rule", "brief-teardown"),
    ("no demotion", "demotion"),
    ("plain queue and condvar", "all"),
];

/// The core benchmark's divan rows, as filters and as row names.
const CORE_FILTERS: &[&str] = &[
    "exec_return_1_with_tools",
    "exec_return_1_with_prebuilt_vms",
    "exec_calling_one_tool_function",
    "exec_100_parallel_calls_behind_the_default_cap",
];
const CORE_ROWS: &[&str] = &[
    "exec_return_1_with_tools/1",
    "exec_return_1_with_prebuilt_vms/1",
    "exec_calling_one_tool_function/1",
    "exec_100_parallel_calls_behind_the_default_cap",
];

/// The figures after the divan rows, each read off a printed `row:` line.
const PRINTED_ROWS: &[&str] = &[
    "p99 of a trivial exec beside 2 CPU-bound cells",
    "HTTP, 32 sessions: time per exec (1/throughput)",
    "HTTP, 32 sessions + 2 CPU-bound: p99 of return 1",
    "HTTP, 1 session + 2 CPU-bound: p99 of return 1",
];

pub(crate) fn bench_sched(root: &Path) -> Result<()> {
    let build = |package, bench| {
        Build {
            package,
            bench,
            features: &[],
            env: &[],
            target_dir: None,
        }
        .run(root, None)
    };
    let core = build("codemode-core", "core")?;
    let serve = build("codemode-mcp-server", "serve_load")?;
    let mut best: Vec<Vec<Option<f64>>> = vec![Vec::new(); VARIANTS.len()];
    for round in 0..ROUNDS {
        for ((name, plain), best) in VARIANTS.iter().zip(&mut best) {
            eprintln!("round {}/{ROUNDS}: {name}", round + 1);
            let (mut figures, _) = variants::run_rows(
                &core,
                "codemode-core",
                CORE_FILTERS,
                CORE_ROWS,
                &[("CODEMODE_BENCH_ROWS_ONLY", "1"), (PLAIN_VAR, plain)],
            )?;
            let beside = printed(
                &core,
                &[
                    ("CODEMODE_BENCH_BESIDE_CPU_BOUND_ONLY", "1"),
                    (PLAIN_VAR, plain),
                ],
            )?;
            figures.push(find_after(
                &beside,
                "trivial_exec_beside_2_cpu_bound_cells:",
                "p99 ",
            ));
            let http = printed(
                &serve,
                &[("CODEMODE_BENCH_LOAD_SECONDS", "1"), (PLAIN_VAR, plain)],
            )?;
            figures.push(http_time_per_exec(&http));
            figures.push(find_after(
                &http,
                "32 sessions + 2 CPU-bound, return 1:",
                "p99 ",
            ));
            figures.push(find_after(
                &http,
                "1 session + 2 CPU-bound, return 1:",
                "p99 ",
            ));
            variants::keep_best(best, &figures);
        }
    }
    print_table(&best);
    Ok(())
}

/// Runs `binary` with `env` and answers its standard output.
fn printed(binary: &Path, env: &[(&str, &str)]) -> Result<String> {
    let output = Command::new(binary)
        .envs(env.iter().copied())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    if !output.status.success() {
        bail!("{} failed", binary.display());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The duration that follows `key` on the `row:` line holding `line_mark`, in nanoseconds. Reads
/// both `1.23 ms` (the serve benchmark's) and Rust's `Debug` of a `Duration` (`1.23ms`).
fn find_after(stdout: &str, line_mark: &str, key: &str) -> Option<f64> {
    let line = stdout
        .lines()
        .find(|line| line.starts_with("row:") && line.contains(line_mark))?;
    let after = &line[line.find(line_mark)? + line_mark.len()..];
    let text = &after[after.find(key)? + key.len()..];
    let end = text.find(',').unwrap_or(text.len());
    duration_nanos(text[..end].trim())
}

/// `1.23 ms`, `1.23ms`, `950µs`, `12ns` or `1.5s` in nanoseconds.
fn duration_nanos(text: &str) -> Option<f64> {
    if let Some(nanos) = variants::nanos(text) {
        return Some(nanos);
    }
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    variants::nanos(&format!("{} {}", &text[..split], &text[split..]))
}

/// The HTTP row `32 sessions: N exec/s`, as nanoseconds per exec (smaller is better, as every
/// other figure here).
fn http_time_per_exec(stdout: &str) -> Option<f64> {
    const MARK: &str = "row: serve over HTTP, 32 sessions:";
    let line = stdout.lines().find(|line| line.starts_with(MARK))?;
    let rate: f64 = line[MARK.len()..].split_whitespace().next()?.parse().ok()?;
    (rate > 0.0).then(|| 1e9 / rate)
}

fn print_table(best: &[Vec<Option<f64>>]) {
    let names = CORE_ROWS.iter().chain(PRINTED_ROWS);
    let shipped = &best[0];
    for (row, name) in names.enumerate() {
        let Some(Some(on)) = shipped.get(row) else {
            println!("row: sched: {name}: no figure");
            continue;
        };
        let others: Vec<String> = VARIANTS
            .iter()
            .zip(best)
            .skip(1)
            .map(
                |((variant, _), figures)| match figures.get(row).copied().flatten() {
                    Some(figure) => format!(
                        "{variant} {:.1} µs ({:+.0}%)",
                        figure / 1000.0,
                        (figure / on - 1.0) * 100.0
                    ),
                    None => format!("{variant}: no figure"),
                },
            )
            .collect();
        println!(
            "row: sched: {name}: shipped {:.1} µs; {}",
            on / 1000.0,
            others.join("; ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_printed_rows() {
        let core = "row: trivial_exec_beside_2_cpu_bound_cells: p50 180.2µs, p99 1.53ms, max 4ms \
                    (500 samples, 2 tokio workers)";
        assert_eq!(
            find_after(core, "trivial_exec_beside_2_cpu_bound_cells:", "p99 "),
            Some(1_530_000.0)
        );
        let http = "row: serve over HTTP, 32 sessions: 2000 exec/s (1280 execs in 0.64 s)\n\
                    row: serve over HTTP, 32 sessions + 2 CPU-bound, return 1: p50 3.10 ms, p99 9.00 ms\n\
                    row: serve over HTTP, 1 session + 2 CPU-bound, return 1: p50 0.50 ms, p99 2.25 ms";
        assert_eq!(http_time_per_exec(http), Some(500_000.0));
        assert_eq!(
            find_after(http, "32 sessions + 2 CPU-bound, return 1:", "p99 "),
            Some(9_000_000.0)
        );
        assert_eq!(
            find_after(http, "1 session + 2 CPU-bound, return 1:", "p99 "),
            Some(2_250_000.0)
        );
        assert_eq!(find_after(http, "no such row", "p99 "), None);
    }
}
