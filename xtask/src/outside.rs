//! The crates outside the workspace (`tests/outside`), which depend on ours as another
//! repository would.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::{cargo, run, target_dir};

/// The folder (relative to the workspace root) of the crates outside the workspace.
pub(crate) const OUTSIDE: &str = "tests/outside";

/// The crates outside the workspace (`tests/outside`), built with a target directory of their
/// own, as another repository would build them: the embedding guide's host
/// (`tests/outside/host`, on codemode-core with its default features), run against the
/// repository's own rmcp test server, built first; then the two-engines binary
/// (`tests/outside/engines`: codemode-sandbox beside upstream rquickjs), and the crate of tools
/// on codemode-host alone (`tests/outside/tool`). Each checks what it prints and exits non-zero
/// when a result is not what `docs/embedding.md` promises; before they run, the dependency trees
/// of the host and of the tool crate are checked for crates they must not compile.
pub(crate) fn outside_crates(root: &Path) -> Result<()> {
    run(cargo().args([
        "build",
        "-p",
        "codemode-mcp",
        "--bin",
        "codemode-mcp-test-server",
    ]))?;
    let target = target_dir(root);
    let server = target.join("debug").join(format!(
        "codemode-mcp-test-server{}",
        std::env::consts::EXE_SUFFIX
    ));
    let outside = |package: &str| {
        let mut command = cargo();
        command
            .current_dir(root.join(OUTSIDE))
            .env("CARGO_TARGET_DIR", root.join(OUTSIDE).join("target"))
            .args(["run", "--locked", "-p", package, "--"]);
        command
    };
    // A host on codemode-core's default features compiles no database, no swc and no
    // OpenTelemetry; a crate of tools on codemode-host alone compiles no engine, no catalog, no
    // MCP client and no async runtime (tokio comes in for tokio-util's `CancellationToken`,
    // with its `sync` feature and not its runtime).
    refuse_in_tree(
        root,
        "codemode-outside-host",
        FORBIDDEN_IN_A_PLAIN_HOST,
        "a host on codemode-core's defaults",
    )?;
    refuse_in_tree(
        root,
        "codemode-outside-tool",
        FORBIDDEN_IN_A_TOOL_CRATE,
        "a tool crate on codemode-host alone",
    )?;
    run(outside("codemode-outside-host").arg(&server))?;
    run(&mut outside("codemode-outside-engines"))?;
    run(&mut outside("codemode-outside-tool"))
}

/// Fails when the normal dependency tree of `package`, an outside crate, holds a line (a crate,
/// or a crate's feature: `tokio feature "rt"`) that starts with one of `forbidden`.
fn refuse_in_tree(root: &Path, package: &str, forbidden: &[&str], what: &str) -> Result<()> {
    let tree = cargo()
        .current_dir(root.join(OUTSIDE))
        .args(["tree", "--locked", "-p", package, "-e", "normal,features"])
        .args(["--prefix", "none"])
        .output()
        .with_context(|| format!("cargo tree of {package}"))?;
    if !tree.status.success() {
        bail!("cargo tree of {package} failed");
    }
    let tree = String::from_utf8_lossy(&tree.stdout);
    let found = forbidden_lines(&tree, forbidden);
    if !found.is_empty() {
        bail!("{what} compiles {found:?}");
    }
    Ok(())
}

/// The distinct lines of a `cargo tree --prefix none` listing that start with one of
/// `forbidden`, sorted.
fn forbidden_lines<'a>(tree: &'a str, forbidden: &[&str]) -> Vec<&'a str> {
    let mut found: Vec<&str> = tree
        .lines()
        .filter(|line| forbidden.iter().any(|name| line.starts_with(name)))
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// Crates a host on codemode-core's default features must not compile: the stores' databases,
/// swc and OpenTelemetry (each behind a feature).
const FORBIDDEN_IN_A_PLAIN_HOST: &[&str] = &[
    "sqlx",
    "rusqlite",
    "libsqlite3-sys",
    "swc_",
    "codemode-telemetry",
    "opentelemetry",
    "tracing-opentelemetry",
];

/// Crates (and features) a crate of tools on codemode-host alone must not compile: any other
/// crate of ours, the engine, swc, the databases, an MCP client, OpenTelemetry, and tokio's
/// runtime (its `rt` and `rt-multi-thread` features).
const FORBIDDEN_IN_A_TOOL_CRATE: &[&str] = &[
    "codemode-core",
    "codemode-config",
    "codemode-durable",
    "codemode-catalog",
    "codemode-sandbox",
    "codemode-engine",
    "codemode-worker",
    "codemode-quickjs",
    "codemode-ts",
    "codemode-journal",
    "codemode-mcp",
    "codemode-telemetry",
    "rquickjs",
    "swc_",
    "sqlx",
    "rusqlite",
    "libsqlite3-sys",
    "rmcp",
    "opentelemetry",
    "tokio feature \"rt",
];

#[cfg(test)]
mod tests {
    #[test]
    fn finds_forbidden_crates_and_features_in_a_tree() {
        let tree = "codemode-outside-tool v0.0.0 (/x/tool)\ncodemode-host v0.1.0 (/x/host)\n\
                    tokio feature \"sync\"\ntokio v1.54.1\ntokio feature \"rt-multi-thread\"\n\
                    tokio feature \"rt\"\ntokio feature \"rt\"\ncodemode-catalog v0.1.0 (/x/c)\n";
        assert_eq!(
            super::forbidden_lines(tree, super::FORBIDDEN_IN_A_TOOL_CRATE),
            [
                "codemode-catalog v0.1.0 (/x/c)",
                "tokio feature \"rt\"",
                "tokio feature \"rt-multi-thread\""
            ]
        );
        assert!(super::forbidden_lines(tree, &["swc_"]).is_empty());
    }
}
