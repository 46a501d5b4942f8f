//! The pinned suite on disk: unpacking the tarball, choosing tests, reading a test's frontmatter
//! and building the one function body both engines run.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The directories of section A (`tests/test262/README.md`), under `test/`: all of them with
/// `--full`.
pub(crate) const SECTION_A: &[&str] = &[
    "built-ins/Array/prototype",
    "built-ins/String/prototype",
    "built-ins/TypedArray/prototype/sort",
    "built-ins/TypedArrayConstructors/from",
    "built-ins/JSON",
    "built-ins/BigInt",
    "built-ins/Object",
    "built-ins/Function/prototype/toString",
    "built-ins/Math",
    "built-ins/Number/prototype",
    "built-ins/RegExp/prototype",
    "built-ins/Promise",
    "built-ins/Map",
    "built-ins/Set",
    "built-ins/Date/prototype",
    "built-ins/eval",
    "built-ins/global",
    "language/expressions/template-literal",
    "language/statements/for-of",
];

/// The second group (`--extended` adds it to section A): `Array.from/of`, all of
/// TypedArray, the Function family, Reflect, Proxy, `language/eval-code` and annexB. A test in
/// both groups runs once.
pub(crate) const SECOND_GROUP: &[&str] = &[
    "built-ins/Array/from",
    "built-ins/Array/of",
    "built-ins/TypedArray",
    "built-ins/TypedArrayConstructors",
    "built-ins/Function",
    "built-ins/AsyncFunction",
    "built-ins/GeneratorFunction",
    "built-ins/AsyncGeneratorFunction",
    "built-ins/Reflect",
    "built-ins/Proxy",
    "language/eval-code",
    "annexB",
];

/// The test262 folder (`harness/`, `test/`) holding the pinned suite: `source` itself when it is
/// a folder, else the tarball `source` unpacked under `work` (once: a marker file records a
/// complete unpacking of that tarball).
pub(crate) fn suite_root(source: &Path, work: &Path) -> io::Result<PathBuf> {
    if source.is_dir() {
        return Ok(source.to_path_buf());
    }
    let name = source
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "test262.tar.gz".into());
    let into = work.join(name.trim_end_matches(".tar.gz"));
    let marker = into.join(".unpacked");
    let root = into.join("test262");
    if marker.exists() {
        return Ok(root);
    }
    if into.exists() {
        fs::remove_dir_all(&into)?;
    }
    fs::create_dir_all(&into)?;
    let gzip = flate2::read::GzDecoder::new(fs::File::open(source)?);
    tar::Archive::new(gzip).unpack(&into)?;
    fs::write(&marker, b"")?;
    Ok(root)
}

/// Every test file (`.js`, not a `_FIXTURE`) under `test/<prefix>` for each prefix (a folder or
/// one file), as paths relative to `test/`, sorted and without duplicates.
pub(crate) fn select(root: &Path, prefixes: &[String]) -> io::Result<Vec<String>> {
    let tests = root.join("test");
    let mut found = Vec::new();
    for prefix in prefixes {
        let start = tests.join(prefix);
        if !start.exists() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no test262 folder or file test/{prefix}"),
            ));
        }
        walk(&tests, &start, &mut found)?;
    }
    found.sort();
    found.dedup();
    Ok(found)
}

fn walk(tests: &Path, at: &Path, found: &mut Vec<String>) -> io::Result<()> {
    if at.is_dir() {
        for entry in fs::read_dir(at)? {
            walk(tests, &entry?.path(), found)?;
        }
        return Ok(());
    }
    let name = at.to_string_lossy();
    if name.ends_with(".js")
        && !name.contains("_FIXTURE")
        && let Ok(relative) = at.strip_prefix(tests)
    {
        found.push(relative.to_string_lossy().replace('\\', "/"));
    }
    Ok(())
}

/// What a test expects to go wrong, from its `negative:` frontmatter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Negative {
    /// `parse`, `resolution` or `runtime`.
    pub(crate) phase: String,
    /// The constructor name of the expected error, e.g. `SyntaxError`.
    pub(crate) kind: String,
}

/// The frontmatter of one test, the parts a runner acts on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Frontmatter {
    pub(crate) includes: Vec<String>,
    pub(crate) flags: Vec<String>,
    pub(crate) negative: Option<Negative>,
}

impl Frontmatter {
    /// Reads the YAML block between `/*---` and `---*/`, the subset test262 uses: the flow lists
    /// `includes: [a.js]` and `flags: [async]`, block lists (`- a.js`) and `negative:` with
    /// indented `phase:` and `type:`.
    pub(crate) fn parse(source: &str) -> Self {
        let mut frontmatter = Self::default();
        let Some(start) = source.find("/*---") else {
            return frontmatter;
        };
        let rest = &source[start + 5..];
        let block = rest.find("---*/").map_or(rest, |end| &rest[..end]);
        let mut key = String::new();
        let (mut phase, mut kind) = (None, None);
        for line in block.lines() {
            let indented = line.starts_with(' ') || line.starts_with('\t');
            let trimmed = line.trim();
            if !indented {
                if let Some((name, value)) = trimmed.split_once(':') {
                    key = name.trim().to_owned();
                    let items = flow_list(value);
                    match key.as_str() {
                        "includes" => frontmatter.includes.extend(items),
                        "flags" => frontmatter.flags.extend(items),
                        _ => {}
                    }
                }
                continue;
            }
            if let Some(item) = trimmed.strip_prefix("- ") {
                match key.as_str() {
                    "includes" => frontmatter.includes.push(item.trim().to_owned()),
                    "flags" => frontmatter.flags.push(item.trim().to_owned()),
                    _ => {}
                }
            } else if key == "negative"
                && let Some((name, value)) = trimmed.split_once(':')
            {
                let value = Some(value.trim().to_owned());
                match name.trim() {
                    "phase" => phase = value,
                    "type" => kind = value,
                    _ => {}
                }
            }
        }
        if let (Some(phase), Some(kind)) = (phase, kind) {
            frontmatter.negative = Some(Negative { phase, kind });
        }
        frontmatter
    }

    pub(crate) fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Why this test cannot run as the body of an async function on either engine, if it
    /// cannot: the same answer for both, so both count it as skipped.
    pub(crate) fn skip_reason(&self) -> Option<&'static str> {
        if self.has_flag("module") {
            Some("module")
        } else if self.has_flag("raw") {
            Some("raw")
        } else if self.has_flag("CanBlockIsTrue") || self.has_flag("CanBlockIsFalse") {
            Some("CanBlock")
        } else if self
            .negative
            .as_ref()
            .is_some_and(|negative| negative.phase == "resolution")
        {
            Some("module")
        } else {
            None
        }
    }

    /// The modes the test runs in: strict, non-strict, or both (INTERPRETING.md, "Strict Mode").
    pub(crate) fn modes(&self) -> &'static [Mode] {
        if self.has_flag("onlyStrict") {
            &[Mode::Strict]
        } else if self.has_flag("noStrict") {
            &[Mode::Sloppy]
        } else {
            &[Mode::Sloppy, Mode::Strict]
        }
    }
}

/// Reads `[a, b]` (a YAML flow list); anything else is no items.
fn flow_list(value: &str) -> Vec<String> {
    let value = value.trim();
    match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        Some(inner) => inner
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect(),
        None => Vec::new(),
    }
}

/// Strict or non-strict code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Mode {
    Sloppy,
    Strict,
}

impl Mode {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Mode::Sloppy => "non-strict",
            Mode::Strict => "strict",
        }
    }
}

/// What both engines get before a test's harness: test262's host-defined `print` and `$262`
/// (INTERPRETING.md, "Host-Defined Functions"), as far as plain JavaScript can define them.
/// `print` settles the promise the wrapper awaits for an async test; `$262.detachArrayBuffer`
/// detaches by `transfer`; `evalScript` is an indirect eval; there is no `createRealm` and no
/// `agent`. `__test262_failure` turns what `doneprintHandle.js` prints for a failed async test
/// (`Test262:AsyncTestFailure:<name>: <message>`) back into an error of that name.
const HOST_DEFINED: &str = r#"var __test262_printed;
var __test262_done = new Promise(function (resolve) { __test262_printed = resolve; });
function print(message) { __test262_printed(String(message)); }
function __test262_failure(printed) {
  var text = printed.replace(/^Test262:AsyncTestFailure:/, "");
  var colon = text.indexOf(": ");
  var error = new Error(colon < 0 ? text : text.slice(colon + 2));
  error.name = colon < 0 ? "Test262Error" : text.slice(0, colon);
  return error;
}
var $262 = {
  global: globalThis,
  gc: function () { throw new Test262Error("no gc in this host"); },
  detachArrayBuffer: function (buffer) { buffer.transfer(); return null; },
  evalScript: function (source) { return (0, eval)(String(source)); },
};
"#;

/// What follows an async test: wait for its `$DONE` (through `doneprintHandle.js` and `print`)
/// and fail as the test reported.
const ASYNC_EPILOGUE: &str = r#"
{
  const __test262_printed_text = await __test262_done;
  if (__test262_printed_text !== "Test262:AsyncTestComplete") {
    throw __test262_failure(__test262_printed_text);
  }
}
"#;

/// The function body both engines run for one test in one mode: the directive of strict mode,
/// the host-defined bindings, the harness (`assert.js`, `sta.js`, `doneprintHandle.js` for an
/// async test, then the test's `includes:`), the test, and for an async test the wait for
/// `$DONE`.
pub(crate) fn body(
    root: &Path,
    source: &str,
    frontmatter: &Frontmatter,
    mode: Mode,
) -> io::Result<String> {
    let mut body = String::new();
    if mode == Mode::Strict {
        body.push_str("\"use strict\";\n");
    }
    body.push_str(HOST_DEFINED);
    let async_test = frontmatter.has_flag("async");
    let mut includes: Vec<&str> = vec!["assert.js", "sta.js"];
    if async_test {
        includes.push("doneprintHandle.js");
    }
    includes.extend(frontmatter.includes.iter().map(String::as_str));
    for include in includes {
        let path = root.join("harness").join(include);
        let text = fs::read_to_string(&path)
            .map_err(|error| io::Error::new(error.kind(), format!("harness/{include}: {error}")))?;
        body.push_str(&text);
        body.push('\n');
    }
    body.push_str(source);
    if async_test {
        body.push_str(ASYNC_EPILOGUE);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_flow_lists_and_negative() {
        let frontmatter = Frontmatter::parse(
            "/*---\nincludes: [compareArray.js, propertyHelper.js]\nflags: [async, noStrict]\n\
             negative:\n  phase: parse\n  type: SyntaxError\n---*/\n$DONOTEVALUATE();",
        );
        assert_eq!(
            frontmatter.includes,
            ["compareArray.js", "propertyHelper.js"]
        );
        assert_eq!(frontmatter.flags, ["async", "noStrict"]);
        assert_eq!(
            frontmatter.negative,
            Some(Negative {
                phase: "parse".into(),
                kind: "SyntaxError".into()
            })
        );
        assert_eq!(frontmatter.modes(), &[Mode::Sloppy]);
    }

    #[test]
    fn reads_block_lists_and_skips_modules() {
        let frontmatter =
            Frontmatter::parse("/*---\nincludes:\n  - a.js\n  - b.js\nflags: [module]\n---*/");
        assert_eq!(frontmatter.includes, ["a.js", "b.js"]);
        assert_eq!(frontmatter.skip_reason(), Some("module"));
        assert_eq!(Frontmatter::parse("x();").modes().len(), 2);
    }
}
