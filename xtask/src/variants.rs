//! One benchmark binary built in variants (an engine patch undone, a feature left out), run in
//! turns, several rounds, keeping each row's fastest sample over all rounds: the figure a busy
//! moment of the machine disturbs least, and the turns make every variant meet the same moments.
//! `cargo xtask bench patches` and `cargo xtask bench otel` are built on it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::bench::parse_divan;
use super::cargo;

/// Rounds of every variant in turn.
pub(crate) const ROUNDS: usize = 5;

/// How one variant of a bench target is built.
pub(crate) struct Build<'a> {
    pub(crate) package: &'static str,
    pub(crate) bench: &'static str,
    pub(crate) features: &'a [&'a str],
    /// Variables the build sees (the engine's build script reads its patch switches there).
    pub(crate) env: &'a [(&'a str, &'a str)],
    /// A target directory of its own, for a variant whose build would evict the shipped one.
    pub(crate) target_dir: Option<PathBuf>,
}

impl Build<'_> {
    /// Builds the benchmark binary and returns its path, copied to `keep_as` (another build in
    /// the same target directory overwrites it) when given.
    pub(crate) fn run(&self, root: &Path, keep_as: Option<&Path>) -> Result<PathBuf> {
        let mut command = cargo();
        command
            .current_dir(root)
            .args(["bench", "-p", self.package, "--bench", self.bench])
            .args(["--no-run", "--message-format=json"])
            .stderr(Stdio::inherit());
        if !self.features.is_empty() {
            command.args(["--features", &self.features.join(",")]);
        }
        command.envs(self.env.iter().copied());
        if let Some(dir) = &self.target_dir {
            command.env("CARGO_TARGET_DIR", dir);
        }
        eprintln!("$ {command:?}");
        let output = command
            .output()
            .with_context(|| format!("building the {} benchmarks", self.package))?;
        if !output.status.success() {
            bail!("building the {} benchmarks failed", self.package);
        }
        // The artifact line of the bench target names its executable.
        let built = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|line| line.contains(r#""kind":["bench"]"#))
            .find_map(|line| {
                let start = line.find(r#""executable":""#)? + r#""executable":""#.len();
                let end = start + line[start..].find('"')?;
                Some(PathBuf::from(&line[start..end]))
            })
            .context("cargo named no benchmark executable")?;
        let Some(copy) = keep_as else {
            return Ok(built);
        };
        if let Some(dir) = copy.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::copy(&built, copy).with_context(|| format!("copying {}", built.display()))?;
        Ok(copy.to_owned())
    }
}

/// Runs the divan benchmarks of `binary` that `filters` name, once (`env` set for the run), and
/// answers the fastest sample of each of `rows` (divan's row names, `bench/arg`) in nanoseconds,
/// with the binary's whole standard output.
pub(crate) fn run_rows(
    binary: &Path,
    package: &'static str,
    filters: &[&str],
    rows: &[&str],
    env: &[(&str, &str)],
) -> Result<(Vec<Option<f64>>, String)> {
    let output = Command::new(binary)
        .arg("--bench")
        .args(filters)
        .args(["--sample-count", "200"])
        .envs(env.iter().copied())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    if !output.status.success() {
        bail!("{} failed", binary.display());
    }
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let parsed = parse_divan(package, &stdout);
    let fastest = rows
        .iter()
        .map(|name| {
            parsed
                .iter()
                .find(|row| row.name == *name)
                .and_then(|row| nanos(&row.fastest))
        })
        .collect();
    Ok((fastest, stdout))
}

/// Keeps, figure by figure, the smaller of `best` and `sample` (a missing figure is no figure).
pub(crate) fn keep_best(best: &mut Vec<Option<f64>>, sample: &[Option<f64>]) {
    if best.is_empty() {
        *best = sample.to_vec();
        return;
    }
    for (mine, theirs) in best.iter_mut().zip(sample) {
        *mine = match (*mine, *theirs) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// A divan time (`190.9 µs`, `1.336 ms`, `950 ns`) in nanoseconds.
pub(crate) fn nanos(text: &str) -> Option<f64> {
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
