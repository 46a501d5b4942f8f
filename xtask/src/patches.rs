//! `cargo xtask bench patches`: what each speed patch of the engine gains, in one sitting.
//!
//! The sandbox's benchmark binary is built once as it ships and once per speed patch (today
//! only patch 5 of `crates/codemode-quickjs-sys/PATCHES.md`) with that patch's upstream behaviour
//! (`CODEMODE_QUICKJS_PLAIN_PATCHES=N`, read by the engine's build script), in a target
//! directory of its own. The binaries then run in turns, several rounds, and each row keeps its
//! fastest sample over all rounds: the figure a busy moment of the machine disturbs least, and
//! the turns make every variant meet the same moments. A patch pays when one row is at least
//! [`PAYS`] better with it than without.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::{cargo, parse_divan};

/// The speed patches: each one's number and what it changes.
/// (4, 6, 7 and 8 were removed: each gained under 10%.)
const PATCHES: &[(&str, &str)] = &[("5", "runtime globals deferred to first use")];

/// The timed rows compared (a VM's whole life: build, bootstrap, run, teardown).
const ROWS: &[&str] = &["fresh_vm_trivial_program", "fresh_vm_touching_built_ins"];

/// The printed row with a parked run's bytes.
const PARKED_ROW: &str = "row: memory_of_a_parked_trivial_run: ";

/// Rounds of every binary in turn.
const ROUNDS: usize = 5;

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
    let shipped = build(root, None)?;
    let mut binaries = vec![("shipped".to_owned(), shipped)];
    for (patch, _) in PATCHES {
        let built = build(root, Some(patch))?;
        // Each build overwrites the last one's binary: keep a copy under the patch's name.
        let copy = root
            .join("target")
            .join("plain-patches")
            .join(format!("sandbox-plain-{patch}"));
        std::fs::copy(&built, &copy).with_context(|| format!("copying {}", built.display()))?;
        binaries.push((format!("plain {patch}"), copy));
    }
    let mut figures = vec![Figures::default(); binaries.len()];
    for round in 0..ROUNDS {
        for ((name, binary), best) in binaries.iter().zip(&mut figures) {
            eprintln!("round {}/{ROUNDS}: {name}", round + 1);
            best.keep_best(&measure(binary)?);
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

impl Figures {
    fn keep_best(&mut self, other: &Figures) {
        if self.fastest.is_empty() {
            *self = other.clone();
            return;
        }
        for (mine, theirs) in self.fastest.iter_mut().zip(&other.fastest) {
            *mine = min(*mine, *theirs);
        }
        self.parked_bytes = min(self.parked_bytes, other.parked_bytes);
    }
}

fn min(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Builds the sandbox's benchmark binary, shipped or with `plain`'s upstream behaviour, and
/// returns its path.
fn build(root: &Path, plain: Option<&str>) -> Result<PathBuf> {
    let mut command = cargo();
    command
        .current_dir(root)
        .args(["bench", "-p", "codemode-sandbox", "--bench", "sandbox"])
        .args(["--no-run", "--message-format=json"])
        .stderr(Stdio::inherit());
    if let Some(patch) = plain {
        command.env("CODEMODE_QUICKJS_PLAIN_PATCHES", patch).env(
            "CARGO_TARGET_DIR",
            root.join("target").join("plain-patches"),
        );
    }
    eprintln!("$ {command:?}");
    let output = command
        .output()
        .context("building the sandbox benchmarks")?;
    if !output.status.success() {
        bail!("building the sandbox benchmarks failed");
    }
    // The artifact line of the bench target names its executable.
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.contains(r#""kind":["bench"]"#))
        .find_map(|line| {
            let start = line.find(r#""executable":""#)? + r#""executable":""#.len();
            let end = start + line[start..].find('"')?;
            Some(PathBuf::from(&line[start..end]))
        })
        .context("cargo named no benchmark executable")
}

/// Runs the compared rows of one binary once.
fn measure(binary: &Path) -> Result<Figures> {
    let output = Command::new(binary)
        .arg("--bench")
        .args(ROWS)
        .args(["--sample-count", "200"])
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    if !output.status.success() {
        bail!("{} failed", binary.display());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let rows = parse_divan("codemode-sandbox", &stdout);
    let fastest = ROWS
        .iter()
        .map(|name| {
            rows.iter()
                .find(|row| row.name == *name)
                .and_then(|row| nanos(&row.fastest))
        })
        .collect();
    let parked_bytes = stdout.lines().find_map(|line| {
        line.strip_prefix(PARKED_ROW)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    });
    Ok(Figures {
        fastest,
        parked_bytes,
    })
}

/// A divan time (`190.9 µs`, `1.336 ms`, `950 ns`) in nanoseconds.
fn nanos(text: &str) -> Option<f64> {
    let (number, unit) = text.trim().split_once(' ')?;
    let number: f64 = number.parse().ok()?;
    let scale = match unit {
        "ns" => 1.0,
        "µs" | "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(number * scale)
}

#[cfg(test)]
mod tests {
    #[test]
    fn divan_times_read_as_nanoseconds() {
        assert_eq!(super::nanos("190.9 µs"), Some(190_900.0));
        assert_eq!(super::nanos("1.5 ms"), Some(1_500_000.0));
        assert_eq!(super::nanos("950 ns"), Some(950.0));
        assert_eq!(super::nanos("fast"), None);
    }
}
