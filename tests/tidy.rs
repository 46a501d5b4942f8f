//! Invariants of the workspace as tests (rust-analyzer's `tidy`): which crate may depend on
//! which outside dependency, that the crates keep their layers (`codemode-host` at the bottom,
//! with its four dependencies, `codemode-core` above every library), that every library says what it is, that each crate has one
//! integration-test binary, and that the documented limit defaults are the ones in the code. Each check is a function over plain data, so the unit
//! tests at the bottom show it failing on a deliberately broken case.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests package lives in the workspace root")
        .to_path_buf()
}

/// Outside dependencies owned by exactly the listed workspace crates (matched by prefix, so
/// `swc_` covers every swc crate).
const OWNED_DEPENDENCIES: &[(&str, &[&str])] = &[
    // The engine: its bindings are ours (`codemode-quickjs`, `codemode-quickjs-sys`), and so is
    // upstream's `rquickjs`, which only the outside crate (not a member) links beside it. The
    // sandbox's tests compare its runs with a plain VM; the sandbox itself ships without it
    // (`crates_keep_their_layers_and_dependency_owners`).
    (
        "codemode-quickjs",
        &["codemode-engine", "codemode-sandbox", "codemode-quickjs"],
    ),
    ("rquickjs", &[]),
    // The worker process's system-call filter.
    ("seccompiler", &["codemode-worker"]),
    ("swc_", &["codemode-ts"]),
    // The client adapter, and the server that serves code mode over MCP.
    ("rmcp", &["codemode-mcp", "codemode-mcp-server"]),
    // The state store of durable runs.
    ("sqlx", &["codemode-journal"]),
    // OpenTelemetry: its API, SDK, OTLP exporter and protocol messages, the bridge from
    // `tracing`, and the protobuf codec of the test receiver. Everyone else reaches it through
    // codemode-telemetry (codemode-core behind its `otel` feature).
    ("opentelemetry", &["codemode-telemetry"]),
    ("tracing-opentelemetry", &["codemode-telemetry"]),
    ("prost", &["codemode-telemetry"]),
];

/// The bottom layer: the seam a host implements. It depends on no other crate of ours, and its
/// `[dependencies]` are among [`HOST_DEPENDENCIES`].
const BOTTOM: &str = "codemode-host";

/// Everything [`BOTTOM`] may depend on outside its dev-dependencies: a tool crate that depends
/// on the seam alone compiles these and nothing else of ours (tokio-util for its
/// `CancellationToken`, which needs no runtime).
const HOST_DEPENDENCIES: &[&str] = &["serde", "serde_json", "async-trait", "tokio-util"];

/// The leaves next to the bottom layer: lists, lexical rules and the config contract, which
/// know no other crate of ours (the crates that share them learn nothing about each other
/// through them).
const LEAVES: &[&str] = &["codemode-guest-names", "codemode-jslex", "codemode-config"];

/// The crates below `codemode-core`: none of them may depend on it.
const BELOW_CORE: &[&str] = &[
    "codemode-host",
    "codemode-guest-names",
    "codemode-jslex",
    "codemode-ts",
    "codemode-catalog",
    "codemode-engine",
    "codemode-worker",
    "codemode-sandbox",
    "codemode-mcp-decls",
    "codemode-namespaces",
    "codemode-mcp",
    "codemode-journal",
    "codemode-telemetry",
    "codemode-config",
    "codemode-durable",
];

/// `(crate, dependency)` pairs of the workspace members, from `cargo metadata`.
fn workspace_dependencies(metadata: &Value) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let Some(name) = package["name"].as_str() else {
            continue;
        };
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            if let Some(dependency) = dependency["name"].as_str() {
                pairs.push((name.to_owned(), dependency.to_owned()));
            }
        }
    }
    pairs
}

/// Every dependency edge that breaks an ownership or layering rule.
fn layering_violations(pairs: &[(String, String)]) -> Vec<String> {
    let mut violations = Vec::new();
    for (krate, dependency) in pairs {
        for (prefix, owners) in OWNED_DEPENDENCIES {
            if dependency.starts_with(prefix) && !owners.contains(&krate.as_str()) {
                violations.push(format!(
                    "{krate} depends on {dependency}, owned by {owners:?}"
                ));
            }
        }
        if dependency == "codemode-core" && BELOW_CORE.contains(&krate.as_str()) {
            violations.push(format!("{krate} is below codemode-core but depends on it"));
        }
        if krate == BOTTOM && dependency.starts_with("codemode-") {
            violations.push(format!(
                "{krate} is the bottom layer but depends on {dependency}"
            ));
        }
        if LEAVES.contains(&krate.as_str()) && dependency.starts_with("codemode-") {
            violations.push(format!("{krate} is a leaf but depends on {dependency}"));
        }
    }
    violations
}

/// The `[dependencies]` and `[build-dependencies]` of `krate` (not its dev-dependencies), from
/// `cargo metadata`.
fn shipped_dependencies(metadata: &Value, krate: &str) -> Vec<String> {
    metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|package| package["name"] == krate)
        .flat_map(|package| package["dependencies"].as_array().into_iter().flatten())
        .filter(|dependency| dependency["kind"] != "dev")
        .filter_map(|dependency| dependency["name"].as_str().map(str::to_owned))
        .collect()
}

/// The dependencies of the host crate that are not among [`HOST_DEPENDENCIES`].
fn host_dependency_violations(dependencies: &[String]) -> Vec<String> {
    dependencies
        .iter()
        .filter(|dependency| !HOST_DEPENDENCIES.contains(&dependency.as_str()))
        .map(|dependency| format!("{BOTTOM} depends on {dependency}, not in {HOST_DEPENDENCIES:?}"))
        .collect()
}

/// Whether a `lib.rs` opens with a `//!` paragraph (comments and blank lines aside).
fn opens_with_crate_docs(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .is_some_and(|line| line.starts_with("//!"))
}

/// The rows of the markdown table under `heading` as cells (header and rule rows skipped).
fn table_rows(markdown: &str, heading: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut in_section = false;
    for line in markdown.lines() {
        if line.starts_with('#') {
            in_section = line.trim_start_matches('#').trim() == heading;
            continue;
        }
        if !in_section || !line.starts_with('|') {
            continue;
        }
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|cell| cell.trim().to_owned())
            .collect();
        if cells
            .iter()
            .all(|cell| cell.chars().all(|c| c == '-' || c == ':'))
        {
            continue;
        }
        rows.push(cells);
    }
    rows.into_iter().skip(1).collect()
}

/// Rows whose config key (column `key_column`, in backticks) has a default (column
/// `default_column`) that differs from the code's default config.
fn default_mismatches(
    rows: &[Vec<String>],
    key_column: usize,
    default_column: usize,
    defaults: &Value,
) -> Vec<String> {
    let mut mismatches = Vec::new();
    for row in rows {
        let (Some(key), Some(documented)) = (row.get(key_column), row.get(default_column)) else {
            continue;
        };
        let key = key.trim_matches('`');
        let Some(actual) = defaults.get(key) else {
            continue;
        };
        // The first word is the value; a note in parentheses may follow (`67108864 (64 MiB)`).
        let documented = documented
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .trim_matches('`');
        let matches = match actual {
            Value::Number(number) => number.to_string() == documented.replace(',', ""),
            Value::Bool(flag) => flag.to_string() == documented,
            other => other.to_string().replace(' ', "") == documented.replace(' ', ""),
        };
        if !matches {
            mismatches.push(format!("{key}: documented {documented}, code {actual}"));
        }
    }
    mismatches
}

#[test]
fn crates_keep_their_layers_and_dependency_owners() {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata failed");
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
    let pairs = workspace_dependencies(&metadata);
    assert!(
        pairs
            .iter()
            .any(|(k, d)| k == "codemode-engine" && d == "codemode-quickjs")
    );
    // Only the engine knows rquickjs: the sandbox names it in its dev-dependencies alone.
    let sandbox = shipped_dependencies(&metadata, "codemode-sandbox");
    assert!(
        !sandbox.iter().any(|d| d.starts_with("codemode-quickjs")),
        "codemode-sandbox: {sandbox:?}"
    );
    let violations = layering_violations(&pairs);
    assert!(violations.is_empty(), "{violations:#?}");
    let host = shipped_dependencies(&metadata, BOTTOM);
    assert!(host.iter().any(|d| d == "tokio-util"), "{BOTTOM}: {host:?}");
    let violations = host_dependency_violations(&host);
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn every_library_opens_with_crate_docs() {
    let crates = root().join("crates");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&crates).expect("crates/ exists") {
        let lib = entry.expect("a crate folder").path().join("src/lib.rs");
        if let Ok(text) = std::fs::read_to_string(&lib)
            && !opens_with_crate_docs(&text)
        {
            missing.push(lib.display().to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "lib.rs without a //! paragraph: {missing:?}"
    );
}

#[test]
fn documented_limit_defaults_are_the_codes() {
    let defaults = serde_json::to_value(codemode_core::CodeModeConfig::default())
        .expect("the config serializes");
    let security =
        std::fs::read_to_string(root().join("docs/security.md")).expect("docs/security.md");
    let limits = table_rows(&security, "Limits");
    assert!(limits.len() >= 8, "the limits table was not found");
    let mismatches = default_mismatches(&limits, 1, 2, &defaults);
    assert!(mismatches.is_empty(), "docs/security.md: {mismatches:#?}");
    // The rows without a config key name fixed limits; check those the code exposes.
    let fixed = [
        (
            "parked runs per `CodeMode`",
            codemode_sandbox::MAX_SUSPENDED_RUNS.to_string(),
        ),
        ("program size", codemode_core::MAX_PROGRAM_BYTES.to_string()),
        (
            "guest stack",
            codemode_sandbox::DEFAULT_STACK_BYTES.to_string(),
        ),
        (
            "arguments of one call, as JSON",
            codemode_sandbox::DEFAULT_MAX_CALL_ARGS_BYTES.to_string(),
        ),
        (
            "JSON nesting crossing the bridge",
            codemode_sandbox::MAX_JSON_DEPTH.to_string(),
        ),
        (
            "live worker processes (`isolation: \"process\"`)",
            codemode_sandbox::DEFAULT_MAX_WORKERS.to_string(),
        ),
        (
            "a worker's address space",
            codemode_sandbox::DEFAULT_WORKER_ADDRESS_SPACE_BYTES.to_string(),
        ),
    ];
    for (limit, value) in fixed {
        let row = limits
            .iter()
            .find(|row| row.first().is_some_and(|cell| cell == limit))
            .unwrap_or_else(|| panic!("no row for {limit}"));
        assert_eq!(row.get(2), Some(&value), "docs/security.md row {limit}");
    }
    let reference =
        std::fs::read_to_string(root().join("docs/reference.md")).expect("docs/reference.md");
    let config = table_rows(&reference, "Configuration: `tools.codeMode`");
    assert!(config.len() >= 8, "the config table was not found");
    let mismatches = default_mismatches(&config, 0, 1, &defaults);
    assert!(mismatches.is_empty(), "docs/reference.md: {mismatches:#?}");
    // The clamp ranges, cell by cell, in both tables.
    let mut mismatches = range_mismatches(&limits, 1, 3);
    mismatches.extend(range_mismatches(&config, 0, 2));
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

/// Rows whose config key (column `key_column`) is an integer field whose clamp range (column
/// `range_column`, `100..=60000`, `1 MiB..=1 GiB`, a note in parentheses after it) differs from
/// the code's. Every integer field must have a row.
fn range_mismatches(rows: &[Vec<String>], key_column: usize, range_column: usize) -> Vec<String> {
    let mut mismatches = Vec::new();
    let mut seen = 0;
    for row in rows {
        let (Some(key), Some(cell)) = (row.get(key_column), row.get(range_column)) else {
            continue;
        };
        let key = key.trim_matches('`');
        let Some(range) = codemode_core::CodeModeConfig::clamp_range(key) else {
            continue;
        };
        seen += 1;
        let documented = cell.split(" (").next().unwrap_or_default();
        let Some((low, high)) = documented.split_once("..=") else {
            mismatches.push(format!("{key}: no range in {cell:?}"));
            continue;
        };
        // `1..=`maxSearchLimit``: the upper bound is another field, itself checked.
        let high = match high.trim_matches('`') {
            "maxSearchLimit" => codemode_core::CodeModeConfig::clamp_range("maxSearchLimit")
                .map(|range| *range.end()),
            high => documented_bytes(high),
        };
        if (documented_bytes(low), high) != (Some(*range.start()), Some(*range.end())) {
            mismatches.push(format!("{key}: documented {documented:?}, code {range:?}"));
        }
    }
    if seen < 14 {
        mismatches.push(format!(
            "only {seen} integer fields have a row with a range"
        ));
    }
    mismatches
}

/// A documented number: `1048576`, `1,024`, or with a binary unit, `1 MiB`, `256 MiB`, `1 GiB`.
fn documented_bytes(text: &str) -> Option<u64> {
    let mut words = text.split_whitespace();
    let number: u64 = words.next()?.replace(',', "").parse().ok()?;
    let unit = match words.next() {
        None => 1,
        Some("KiB") => 1 << 10,
        Some("MiB") => 1 << 20,
        Some("GiB") => 1 << 30,
        Some(_) => return None,
    };
    words.next().is_none().then_some(number * unit)
}

/// Test binaries that measure the whole process (its CPU time, its allocator) and so must stay
/// alone in theirs, beside their crate's one integration-test binary.
const MEASURING_TEST_BINARIES: &[&str] = &[
    "crates/codemode-sandbox/tests/hostile.rs",
    "crates/codemode-core/tests/host_memory.rs",
];

/// Crates with more than one integration-test binary (a `tests/*.rs` file or a
/// `tests/<dir>/main.rs`), not counting [`MEASURING_TEST_BINARIES`]. `binaries` are paths
/// relative to the workspace root, grouped per crate by their `crates/<name>/` prefix.
fn crates_with_several_test_binaries(binaries: &[String]) -> Vec<String> {
    let mut per_crate: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for binary in binaries {
        if MEASURING_TEST_BINARIES.contains(&binary.as_str()) {
            continue;
        }
        let krate = binary.split("/tests/").next().unwrap_or(binary);
        per_crate.entry(krate).or_default().push(binary);
    }
    per_crate
        .into_iter()
        .filter(|(_, binaries)| binaries.len() > 1)
        .map(|(krate, binaries)| format!("{krate}: {binaries:?}"))
        .collect()
}

/// Integration-test binaries of the crates under `crates/`, as workspace-relative paths.
fn test_binaries() -> Vec<String> {
    let mut binaries = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).expect("crates/ exists") {
        let krate = entry.expect("a crate folder").path();
        let Ok(tests) = std::fs::read_dir(krate.join("tests")) else {
            continue;
        };
        for test in tests {
            let path = test.expect("a tests/ entry").path();
            let binary = if path.extension().is_some_and(|e| e == "rs") {
                path
            } else if path.join("main.rs").is_file() {
                path.join("main.rs")
            } else {
                continue;
            };
            let relative = binary.strip_prefix(root()).expect("under the root");
            binaries.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    binaries.sort();
    binaries
}

#[test]
fn each_crate_has_one_integration_test_binary() {
    let binaries = test_binaries();
    assert!(
        binaries
            .iter()
            .any(|b| b.ends_with("codemode-core/tests/core/main.rs"))
    );
    let several = crates_with_several_test_binaries(&binaries);
    assert!(
        several.is_empty(),
        "merge these into one binary (tests/<crate>/main.rs with a module each): {several:#?}"
    );
}

#[test]
fn the_checks_fail_on_broken_cases() {
    let pairs = [
        ("codemode-core", "codemode-quickjs"),
        ("codemode-catalog", "swc_ecma_parser"),
        ("codemode-cli", "rmcp"),
        ("codemode-namespaces", "codemode-core"),
        ("codemode-engine", "codemode-quickjs"),
        ("codemode-cli", "codemode-core"),
        ("codemode-core", "opentelemetry_sdk"),
        ("codemode-mcp-server", "tracing-opentelemetry"),
        ("codemode-telemetry", "opentelemetry-otlp"),
        ("codemode-telemetry", "codemode-core"),
        ("codemode-host", "codemode-catalog"),
        ("codemode-catalog", "codemode-host"),
        ("codemode-jslex", "codemode-guest-names"),
        ("codemode-ts", "codemode-jslex"),
        ("codemode-config", "codemode-sandbox"),
        ("codemode-durable", "codemode-core"),
    ]
    .map(|(k, d)| (k.to_owned(), d.to_owned()));
    assert_eq!(layering_violations(&pairs).len(), 11);
    let host = ["serde", "tokio", "tokio-util", "schemars"].map(str::to_owned);
    assert_eq!(host_dependency_violations(&host).len(), 2);
    let metadata = serde_json::json!({ "packages": [{ "name": "codemode-host", "dependencies": [
        { "name": "serde", "kind": null },
        { "name": "tokio", "kind": "dev" },
        { "name": "cc", "kind": "build" },
    ] }] });
    assert_eq!(shipped_dependencies(&metadata, BOTTOM), ["serde", "cc"]);
    assert!(!opens_with_crate_docs(
        "#![forbid(unsafe_code)]\n//! late docs\n"
    ));
    assert!(opens_with_crate_docs("\n//! The crate.\n"));
    let table = "## Limits\n| limit | key | default |\n|---|---|---|\n| time | `timeoutMs` | 999 |\n| heap | `memoryLimitBytes` | 67108864 |\n";
    let defaults = serde_json::json!({ "timeoutMs": 10000, "memoryLimitBytes": 67108864 });
    let mismatches = default_mismatches(&table_rows(table, "Limits"), 1, 2, &defaults);
    assert_eq!(mismatches, ["timeoutMs: documented 999, code 10000"]);
    let binaries = [
        "crates/codemode-core/tests/core/main.rs",
        "crates/codemode-core/tests/host_memory.rs",
        "crates/codemode-ts/tests/ts/main.rs",
        "crates/codemode-ts/tests/extra.rs",
    ]
    .map(str::to_owned);
    assert_eq!(
        crates_with_several_test_binaries(&binaries),
        [
            r#"crates/codemode-ts: ["crates/codemode-ts/tests/ts/main.rs", "crates/codemode-ts/tests/extra.rs"]"#
        ]
    );
}
