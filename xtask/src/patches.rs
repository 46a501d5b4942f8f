//! `cargo xtask bench patches`: what each speed patch of the engine gains, in one sitting.
//!
//! The sandbox's benchmark binary is built once as it ships and once per speed patch (patches 5,
//! 12 and 15 of `crates/codemode-quickjs-sys/PATCHES.md`) with that patch's upstream behaviour
//! (`CODEMODE_QUICKJS_PLAIN_PATCHES=N`, read by the engine's build script), in a target
//! directory of its own, then run in turns (`variants.rs`). A patch pays when one row is at
//! least [`PAYS`] better with it than without.

use std::path::Path;

use anyhow::Result;

use crate::variants::{self, Build, ROUNDS};

/// The speed patches: each one's number and what it changes.
/// (4, 6, 7 and 8 were removed: each gained under 10%.)
const PATCHES: &[(&str, &str)] = &[
    ("5", "runtime globals deferred to first use"),
    ("12", "eight families of built-ins made on first use"),
    ("15", "a runtime torn down in bulk"),
];

/// The timed rows compared (a VM's whole life: build, bootstrap, run, teardown).
const ROWS: &[&str] = &["fresh_vm_trivial_program", "fresh_vm_touching_built_ins"];

/// The printed row with a parked run's bytes.
const PARKED_ROW: &str = "row: memory_of_a_parked_trivial_run: ";

/// The least gain, on one row, for which a patch pays for itself (issue 28: 10%).
const PAYS: f64 = 0.10;

/// One binary's best figures: each timed row's fastest sample in nanoseconds, and the parked
/// run's bytes.
#[derive(Debug, Clone, Default)]
struct Figures {
    fastest: Vec<Option<f64>>,
    parked_bytes: Option<f64>,
}

pub(crate) fn bench_patches(root: &Path) -> Result<()> {
    let build = |env: &[(&str, &str)], target_dir, keep_as: Option<&Path>| {
        Build {
            package: "codemode-sandbox",
            bench: "sandbox",
            features: &[],
            env,
            target_dir,
        }
        .run(root, keep_as)
    };
    let shipped = build(&[], None, None)?;
    let mut binaries = vec![("shipped".to_owned(), shipped)];
    let plain_dir = root.join("target").join("plain-patches");
    for (patch, _) in PATCHES {
        // Each build overwrites the last one's binary: keep a copy under the patch's name.
        let copy = plain_dir.join(format!("sandbox-plain-{patch}"));
        let built = build(
            &[("CODEMODE_QUICKJS_PLAIN_PATCHES", patch)],
            Some(plain_dir.clone()),
            Some(&copy),
        )?;
        binaries.push((format!("plain {patch}"), built));
    }
    let mut figures = vec![Figures::default(); binaries.len()];
    for round in 0..ROUNDS {
        for ((name, binary), best) in binaries.iter().zip(&mut figures) {
            eprintln!("round {}/{ROUNDS}: {name}", round + 1);
            let (fastest, stdout) =
                variants::run_rows(binary, "codemode-sandbox", ROWS, ROWS, &[])?;
            variants::keep_best(&mut best.fastest, &fastest);
            let parked = stdout.lines().find_map(|line| {
                line.strip_prefix(PARKED_ROW)?
                    .split_whitespace()
                    .next()?
                    .parse::<f64>()
                    .ok()
            });
            best.parked_bytes = match (best.parked_bytes, parked) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }
    let shipped = &figures[0];
    for ((patch, what), plain) in PATCHES.iter().zip(&figures[1..]) {
        let mut gains = Vec::new();
        for (row, (with, without)) in ROWS.iter().zip(shipped.fastest.iter().zip(&plain.fastest)) {
            if let (Some(with), Some(without)) = (with, without) {
                let gain = 1.0 - with / without;
                println!(
                    "row: patch {patch} ({what}): {row}: {:.1} µs with, {:.1} µs without ({:+.1}%)",
                    with / 1000.0,
                    without / 1000.0,
                    -gain * 100.0
                );
                gains.push(gain);
            }
        }
        if let (Some(with), Some(without)) = (shipped.parked_bytes, plain.parked_bytes) {
            let gain = 1.0 - with / without;
            println!(
                "row: patch {patch} ({what}): a parked trivial run: {:.1} KiB with, {:.1} KiB \
                 without ({:+.1}%)",
                with / 1024.0,
                without / 1024.0,
                -gain * 100.0
            );
            gains.push(gain);
        }
        let best = gains.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        println!(
            "row: patch {patch}: {} (best gain {:.1}%, needs {:.0}%)",
            if best >= PAYS { "pays" } else { "does not pay" },
            best * 100.0,
            PAYS * 100.0
        );
    }
    Ok(())
}
