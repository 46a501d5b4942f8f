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
//! constant that commit did not have yet. So the verification runs in a target folder named by
//! a hash of the packages it verifies (`<target>/package-verified/<hash>`): its registry's path,
//! and with it the unpacked copies and the builds, change whenever a package does, and what is
//! reused is what the same packages left. Only the newest such folder is kept. (Deleting the
//! stale copies instead would reach into `$CARGO_HOME`, which other checkouts share.)

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

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
    let packed = target_dir(root).join("package");
    let verifications = target_dir(root).join("package-verified");
    let target = verifications.join(format!("{:016x}", packages_hash(&packed)?));
    remove_all_but(&verifications, &target)?;
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

/// A hash of the `VERIFIED` packages `cargo package` wrote into `packed` (cargo packs the same
/// sources into the same bytes).
fn packages_hash(packed: &Path) -> Result<u64> {
    let mut hasher = DefaultHasher::new();
    for entry in
        std::fs::read_dir(packed).with_context(|| format!("reading {}", packed.display()))?
    {
        let path = entry?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let Some(stem) = name.strip_suffix(".crate") else {
            continue;
        };
        if is_package_of_verified(stem) {
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            (name, bytes).hash(&mut hasher);
        }
    }
    Ok(hasher.finish())
}

/// Removes every entry of `folder` but `kept`.
fn remove_all_but(folder: &Path, kept: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry?.path();
        if path != kept {
            std::fs::remove_dir_all(&path)
                .with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

/// Whether `stem` is `<name>-<version>` for a `VERIFIED` name (`codemode-quickjs-0.1.0`, and
/// not `codemode-quickjs-sys-0.1.0` for `codemode-quickjs`).
fn is_package_of_verified(stem: &str) -> bool {
    VERIFIED.iter().any(|name| {
        stem.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::is_package_of_verified;

    #[test]
    fn a_package_of_verified_is_its_name_and_a_version() {
        assert!(is_package_of_verified("codemode-quickjs-0.1.0"));
        assert!(is_package_of_verified("codemode-quickjs-sys-0.1.0"));
        assert!(is_package_of_verified("codemode-sandbox-12.0.0-rc.1"));
        assert!(!is_package_of_verified("codemode-quickjs"));
        assert!(!is_package_of_verified("codemode-core-0.1.0"));
        assert!(!is_package_of_verified("codemode-quickjs-extra-0.1.0"));
        assert!(!is_package_of_verified("serde-1.0.0"));
    }
}
