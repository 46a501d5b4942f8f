//! `cargo xtask package`: every publishable crate packs, and the engine crates, the tokenizer and
//! the crates that build on them build from their packages alone, as a crate from crates.io
//! would.
//!
//! The verification must see only what this checkout packs. Cargo verifies a crate whose
//! dependencies are packed in the same run through a temporary local registry
//! (`<target>/package/tmp-registry`), and reuses two things of earlier runs at the same path
//! without looking at their contents:
//!
//! - the sources: it unpacks a registry crate into `$CARGO_HOME/registry/src/-<hash of the
//!   registry's path>/<name>-<version>` once, and takes an unpacked copy of the same name and
//!   version as it is;
//! - the builds: a registry crate's build is fresh while its name and version are.
//!
//! A checkout whose path, target folder and `$CARGO_HOME` outlive a run (as CI's do) thus
//! verified an engine against a sys crate of an earlier commit, and failed with E0425 on a
//! constant that commit did not have yet. So the verification builds in a target folder of its
//! own, emptied first, after the unpacked copies of our crates are deleted.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::{cargo, run, target_dir};

/// The crates verified from their packages, dependencies first. The others pack unverified:
/// their verification would build the whole workspace a second time.
const VERIFIED: &[&str] = &[
    "codemode-quickjs-sys",
    "codemode-quickjs",
    "codemode-jslex",
    "codemode-engine",
    "codemode-worker",
    "codemode-sandbox",
];

pub(crate) fn package(root: &Path) -> Result<()> {
    run(cargo().current_dir(root).args([
        "package",
        "--workspace",
        "--allow-dirty",
        "--no-verify",
    ]))?;
    let target = target_dir(root).join("package-verified");
    if target.exists() {
        std::fs::remove_dir_all(&target)
            .with_context(|| format!("removing {}", target.display()))?;
    }
    delete_unpacked_copies(&cargo_home()?)?;
    let mut verify = cargo();
    verify
        .current_dir(root)
        .env("CARGO_TARGET_DIR", &target)
        .args(["package", "--allow-dirty"]);
    for name in VERIFIED {
        verify.args(["-p", name]);
    }
    run(&mut verify)
}

/// Deletes every unpacked copy of a `VERIFIED` crate under `cargo_home`'s registry sources that
/// a local registry left (a local registry's folder name is empty before its hash: `-<hash>`).
/// The crates of named registries (`index.crates.io-<hash>`) stay.
fn delete_unpacked_copies(cargo_home: &Path) -> Result<()> {
    let sources = cargo_home.join("registry").join("src");
    let Ok(registries) = std::fs::read_dir(&sources) else {
        return Ok(());
    };
    for registry in registries {
        let registry = registry?;
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for unpacked in std::fs::read_dir(registry.path())? {
            let unpacked = unpacked?;
            if is_unpacked_copy(&unpacked.file_name().to_string_lossy()) {
                let path = unpacked.path();
                std::fs::remove_dir_all(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// Whether `folder` is `<name>-<version>` for a `VERIFIED` name (`codemode-quickjs-0.1.0`, and
/// not `codemode-quickjs-sys-0.1.0` for `codemode-quickjs`).
fn is_unpacked_copy(folder: &str) -> bool {
    VERIFIED.iter().any(|name| {
        folder
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// `$CARGO_HOME`, or `~/.cargo` when it is not set (cargo's own default).
fn cargo_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        return Ok(PathBuf::from(home));
    }
    let home = std::env::var_os("HOME").context("neither CARGO_HOME nor HOME is set")?;
    Ok(PathBuf::from(home).join(".cargo"))
}

#[cfg(test)]
mod tests {
    use super::is_unpacked_copy;

    #[test]
    fn an_unpacked_copy_is_a_verified_name_and_a_version() {
        assert!(is_unpacked_copy("codemode-quickjs-0.1.0"));
        assert!(is_unpacked_copy("codemode-quickjs-sys-0.1.0"));
        assert!(is_unpacked_copy("codemode-sandbox-12.0.0-rc.1"));
        assert!(!is_unpacked_copy("codemode-quickjs"));
        assert!(!is_unpacked_copy("codemode-core-0.1.0"));
        assert!(!is_unpacked_copy("codemode-quickjs-extra-0.1.0"));
        assert!(!is_unpacked_copy("serde-1.0.0"));
    }
}
