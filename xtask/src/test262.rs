//! `cargo xtask test262 [--full] [--extended] [FILTER...]`: the pinned test262 subset
//! (`tests/test262/`) run differentially on codemode-sandbox and on upstream rquickjs 0.14, by
//! the runner crate `tests/test262/runner`. That crate is outside the workspace because it links
//! upstream rquickjs, which no member may depend on; it is built in release, `--locked`, with a
//! target directory of its own (`tests/test262/target`, where the tarball is unpacked too).
//!
//! Without arguments the runner takes its fixed sample, one test in two of both groups of
//! directories (`tests/test262/README.md`); `--full` takes all of section A, `--full
//! --extended` both groups, and FILTERs (paths under test262's `test/`) every test under them.
//! It fails on a regression (passes upstream, fails in the sandbox) that
//! `tests/test262/deviations.txt` does not list.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::{cargo, run};

/// The folder (relative to the workspace root) of the pinned suite, its deviations and runner.
const TEST262: &str = "tests/test262";

/// The pinned suite, as the repository carries it.
const TARBALL: &str = "test262-be13516f.tar.gz";

/// The runner crate's manifest.
pub(crate) fn runner_manifest(root: &Path) -> PathBuf {
    root.join(TEST262).join("runner").join("Cargo.toml")
}

/// Builds the runner (and its unit tests, with `unit_tests`) and runs it with `args`.
pub(crate) fn test262(root: &Path, args: &[String], unit_tests: bool) -> Result<()> {
    let folder = root.join(TEST262);
    let target = folder.join("target");
    let manifest = runner_manifest(root);
    let runner_cargo = |verb: &str| {
        let mut command = cargo();
        command
            .env("CARGO_TARGET_DIR", &target)
            .args([verb, "--release", "--locked", "--manifest-path"])
            .arg(&manifest);
        command
    };
    if unit_tests {
        run(&mut runner_cargo("test"))?;
    }
    run(&mut runner_cargo("build"))?;
    let binary = target
        .join("release")
        .join(format!("codemode-test262{}", std::env::consts::EXE_SUFFIX));
    run(std::process::Command::new(binary)
        .arg("--suite")
        .arg(folder.join(TARBALL))
        .arg("--work")
        .arg(&target)
        .arg("--deviations")
        .arg(folder.join("deviations.txt"))
        .args(args))
}
