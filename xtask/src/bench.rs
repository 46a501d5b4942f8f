//! `cargo xtask bench`: runs the divan benchmarks and collates their rows into one table.

use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, Result, bail};

use crate::{POSTGRES_URL_VAR, cargo, otel, patches, sched, test_postgres};

/// Packages whose benchmarks `cargo xtask bench` runs, with their bench target.
const BENCHES: &[(&str, &str)] = &[
    ("codemode-catalog", "catalog"),
    ("codemode-ts", "ts"),
    ("codemode-sandbox", "sandbox"),
    ("codemode-mcp-decls", "decls"),
    ("codemode-journal", "journal"),
    ("codemode-core", "core"),
    ("codemode-mcp-server", "serve_load"),
];

/// Features a package's benchmarks turn on: codemode-core's rows run with OpenTelemetry compiled
/// in (and off, but for the rows that say they turn it on), the build the `codemode` command
/// ships.
const BENCH_FEATURES: &[(&str, &str)] = &[("codemode-core", "otel")];

/// One collated benchmark row.
pub(crate) struct Row {
    package: &'static str,
    pub(crate) name: String,
    pub(crate) fastest: String,
    median: String,
    mean: String,
}

/// `cargo xtask bench [PACKAGE] [-- FILTER...]`: every benchmark, or one package's with divan's
/// name filters (then without the host-memory rows and the engine patches' rows);
/// `cargo xtask bench patches`: only what each speed patch of the engine gains;
/// `cargo xtask bench otel`: only what OpenTelemetry compiled in and off costs;
/// `cargo xtask bench sched`: only what each scheduling mechanism of the VM threads gains.
pub(crate) fn bench(root: &Path, args: &[String]) -> Result<()> {
    let split = args.iter().position(|arg| arg == "--");
    let (named, filters) = match split {
        Some(at) => (&args[..at], &args[at + 1..]),
        None => (args, &[][..]),
    };
    let only = named.first();
    if only.is_some_and(|only| only == "patches") {
        return patches::bench_patches(root);
    }
    if only.is_some_and(|only| only == "otel") {
        return otel::bench_otel(root);
    }
    if only.is_some_and(|only| only == "sched") {
        return sched::bench_sched(root);
    }
    // The journal benchmarks measure Postgres on loopback too when there is one.
    let (postgres_url, _postgres) = test_postgres(root, false)?;
    let mut rows = Vec::new();
    let mut printed = Vec::new();
    for (package, target) in BENCHES {
        if only.is_some_and(|only| only != package) {
            continue;
        }
        eprintln!(
            "$ cargo bench -p {package} --bench {target} -- {}",
            filters.join(" ")
        );
        let mut command = cargo();
        if let Some(url) = &postgres_url {
            command.env(POSTGRES_URL_VAR, url);
        }
        command.args(["bench", "-p", package, "--bench", target]);
        if let Some((_, features)) = BENCH_FEATURES.iter().find(|(name, _)| name == package) {
            command.args(["--features", features]);
        }
        let output = command
            .arg("--")
            .args(filters)
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("running the {package} benchmarks"))?;
        if !output.status.success() {
            bail!("the {package} benchmarks failed");
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        rows.extend(parse_divan(package, &stdout));
        printed.extend(printed_rows(package, &stdout));
    }
    // Peak host bytes of the hostile cells of the host-memory test (a counting allocator cannot
    // live in a timed benchmark binary).
    if only.is_some() {
        return print_bench_table(rows, printed);
    }
    eprintln!("$ cargo test --release -p codemode-core --test host_memory -- --nocapture");
    let output = cargo()
        .args([
            "test",
            "--release",
            "-p",
            "codemode-core",
            "--test",
            "host_memory",
        ])
        .args(["--", "--nocapture"])
        .stderr(Stdio::inherit())
        .output()
        .context("running the host memory test")?;
    if !output.status.success() {
        bail!("the host memory test failed");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in stdout.lines() {
        if let Some(cells) = line.strip_prefix("peak host bytes per cell: ") {
            printed.extend(
                cells
                    .split("; ")
                    .map(|cell| format!("codemode-core: peak host bytes, {cell}")),
            );
        }
    }
    print_bench_table(rows, printed)?;
    patches::bench_patches(root)?;
    otel::bench_otel(root)
}

fn print_bench_table(rows: Vec<Row>, printed: Vec<String>) -> Result<()> {
    let width = rows
        .iter()
        .map(|r| r.package.len() + r.name.len() + 2)
        .max()
        .unwrap_or(10);
    println!("{:<width$}  {:>12}  {:>12}", "benchmark", "median", "mean");
    for row in rows {
        let name = format!("{}: {}", row.package, row.name);
        println!("{name:<width$}  {:>12}  {:>12}", row.median, row.mean);
    }
    if !printed.is_empty() {
        println!();
        println!("measured (not timed by divan)");
        for row in printed {
            println!("{row}");
        }
    }
    Ok(())
}

/// Rows a benchmark binary prints itself, as `row: <name>: <figures>`.
fn printed_rows(package: &str, stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("row: "))
        .map(|row| format!("{package}: {row}"))
        .collect()
}

/// Reads divan's tree table: `├─ name  fastest │ slowest │ median │ mean │ samples │ iters`.
/// Rows without timings (group headers) give their name as a prefix for their children.
pub(crate) fn parse_divan(package: &'static str, stdout: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut groups: Vec<(usize, String)> = Vec::new();
    for line in stdout.lines().skip(1) {
        let columns: Vec<&str> = line.split(" │ ").collect();
        let Some(first) = columns.first() else {
            continue;
        };
        // The name starts after divan's tree drawing (`│`, `├─`, `╰─` and spaces).
        let Some(name_start) = first.find(|c: char| !matches!(c, '│' | '├' | '╰' | '─' | ' '))
        else {
            continue;
        };
        let mut parts = first[name_start..].splitn(2, "  ");
        let name = parts.next().unwrap_or("").trim().to_owned();
        let fastest = parts.next().unwrap_or("").trim();
        if name.is_empty() {
            continue;
        }
        groups.retain(|(depth, _)| *depth < name_start);
        let full = groups
            .iter()
            .map(|(_, g)| g.as_str())
            .chain([name.as_str()])
            .collect::<Vec<_>>()
            .join("/");
        // The header row ("name  fastest │ slowest │ median │ …") of each bench binary.
        if columns.get(2).is_some_and(|c| c.trim() == "median") {
            continue;
        }
        if fastest.is_empty() || columns.len() < 4 {
            groups.push((name_start, name));
            continue;
        }
        rows.push(Row {
            package,
            name: full,
            fastest: fastest.to_owned(),
            median: columns
                .get(2)
                .map(|c| c.trim().to_owned())
                .unwrap_or_default(),
            mean: columns
                .get(3)
                .map(|c| c.trim().to_owned())
                .unwrap_or_default(),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_divan_tables_with_groups() {
        let stdout = r#"catalog          fastest │ slowest │ median │ mean │ samples │ iters
├─ build                  │         │        │      │         │
│  ├─ 100       1 µs      │ 2 µs    │ 3 µs   │ 4 µs │ 10      │ 10
│  ╰─ 1000      5 µs      │ 6 µs    │ 7 µs   │ 8 µs │ 10      │ 10
╰─ search                 │         │        │      │         │
   ╰─ read file  9 µs     │ 9 µs    │ 10 µs  │ 11 µs │ 10     │ 10
"#;
        let rows: Vec<(String, String)> = super::parse_divan("codemode-catalog", stdout)
            .into_iter()
            .map(|r| (r.name, r.median))
            .collect();
        assert_eq!(
            rows,
            [
                ("build/100".into(), "3 µs".into()),
                ("build/1000".into(), "7 µs".into()),
                ("search/read file".into(), "10 µs".into())
            ]
        );
    }
}
