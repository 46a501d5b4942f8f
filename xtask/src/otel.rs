//! `cargo xtask bench otel`: what OpenTelemetry costs codemode-core's single-run rows when it is
//! compiled in but off (issue 31: at most 2%), in one sitting.
//!
//! The core benchmark binary is built with the `otel` feature, as `codemode` ships it, and
//! without it, in a target directory of its own; both run in turns (`variants.rs`), without the
//! printed reports (`CODEMODE_BENCH_ROWS_ONLY`), and each row keeps its fastest sample. The first
//! exec of a new process is timed by the binary's own child mode, several times a round. What
//! turning it on costs is the core benchmark's own row (`warm exec(..), OpenTelemetry off ..;
//! on ..`), which needs one binary only.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

use crate::variants::{self, Build, ROUNDS};

/// The benchmarks compared, as divan's filters, and the rows read from them.
const FILTERS: &[&str] = &[
    "exec_return_1_with_tools",
    "exec_return_1_with_prebuilt_vms",
    "exec_calling_one_tool_function",
];
const ROWS: &[&str] = &[
    "exec_return_1_with_tools/1",
    "exec_return_1_with_prebuilt_vms/1",
    "exec_calling_one_tool_function/1",
];

/// The core benchmark's child mode that times one first exec and prints its nanoseconds.
const FIRST_EXEC_CHILD: &str = "CODEMODE_BENCH_FIRST_EXEC_CHILD";
/// First execs timed per variant and round.
const FIRST_EXECS: usize = 4;

/// The most a row may lose with OpenTelemetry compiled in and off.
const ALLOWED: f64 = 0.02;

pub(crate) fn bench_otel(root: &Path) -> Result<()> {
    let build = |features: &'static [&'static str], target_dir| {
        Build {
            package: "codemode-core",
            bench: "core",
            features,
            env: &[],
            target_dir,
        }
        .run(root, None)
    };
    let with = build(&["otel"], None)?;
    let without = build(&[], Some(root.join("target").join("without-otel")))?;
    let variants = [("compiled in, off", with), ("not compiled in", without)];
    let mut best: Vec<Vec<Option<f64>>> = vec![Vec::new(); variants.len()];
    for round in 0..ROUNDS {
        for ((name, binary), best) in variants.iter().zip(&mut best) {
            eprintln!("round {}/{ROUNDS}: OpenTelemetry {name}", round + 1);
            let (mut fastest, _) = variants::run_rows(
                binary,
                "codemode-core",
                FILTERS,
                ROWS,
                &[("CODEMODE_BENCH_ROWS_ONLY", "1")],
            )?;
            fastest.push(first_exec(binary)?);
            variants::keep_best(best, &fastest);
        }
    }
    let names = ROWS.iter().copied().chain(["first exec in a new process"]);
    let mut worst = f64::NEG_INFINITY;
    for (row, (on, off)) in names.zip(best[0].iter().zip(&best[1])) {
        if let (Some(with), Some(without)) = (on, off) {
            let loss = with / without - 1.0;
            worst = worst.max(loss);
            println!(
                "row: OpenTelemetry compiled in and off: {row}: {:.1} µs, {:.1} µs without it \
                 ({:+.1}%)",
                with / 1000.0,
                without / 1000.0,
                loss * 100.0
            );
        }
    }
    println!(
        "row: OpenTelemetry compiled in and off: {} (worst row {:+.1}%, allowed {:+.0}%)",
        if worst <= ALLOWED { "within" } else { "over" },
        worst * 100.0,
        ALLOWED * 100.0
    );
    Ok(())
}

/// The fastest of [`FIRST_EXECS`] first execs, each in a new process of `binary`.
fn first_exec(binary: &Path) -> Result<Option<f64>> {
    let mut fastest: Option<f64> = None;
    for _ in 0..FIRST_EXECS {
        let output = Command::new(binary)
            .env(FIRST_EXEC_CHILD, "1")
            .output()
            .with_context(|| format!("running {}", binary.display()))?;
        let nanos = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse::<f64>();
        if let Ok(nanos) = nanos {
            fastest = Some(fastest.map_or(nanos, |best| best.min(nanos)));
        }
    }
    Ok(fastest)
}
