//! What a run found: the totals of each engine, the regressions and improvements, checked
//! against the listed deviations.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::suite::Mode;

/// One test in one mode on both engines: `Ok` when it passed, else the failure's message.
pub(crate) struct RunResult {
    pub(crate) path: String,
    pub(crate) mode: Mode,
    pub(crate) upstream: Result<(), String>,
    pub(crate) sandbox: Result<(), String>,
}

/// Tests selected, and those skipped on both engines by reason.
#[derive(Default)]
pub(crate) struct Totals {
    pub(crate) tests: usize,
    pub(crate) skipped: BTreeMap<&'static str, usize>,
}

/// `deviations.txt`: the tests known to fail in the sandbox and pass upstream, one test262 path
/// (under `test/`) a line; `#` starts a comment (the reason), blank lines are ignored.
pub(crate) struct Deviations {
    paths: BTreeSet<String>,
}

impl Deviations {
    pub(crate) fn read(path: &Path) -> std::io::Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            std::io::Error::new(error.kind(), format!("{}: {error}", path.display()))
        })?;
        Ok(Self::parse(&text))
    }

    fn parse(text: &str) -> Self {
        let paths = text
            .lines()
            .map(|line| line.split('#').next().unwrap_or_default().trim())
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect();
        Self { paths }
    }

    fn lists(&self, path: &str) -> bool {
        self.paths.contains(path)
    }
}

/// The longest of `roots` that `path` lies under (the directory a regression is counted in).
fn directory<'a>(roots: &'a [String], path: &'a str) -> &'a str {
    roots
        .iter()
        .filter(|root| {
            path == root.as_str()
                || path
                    .strip_prefix(root.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
        .max_by_key(|root| root.len())
        .map_or(path, String::as_str)
}

/// One line of a message: the first line, at most 300 characters.
fn one_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default();
    match line.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// What the results say against the deviations: the runs that regressed and improved, the
/// regressions no deviation lists, and the listed tests that ran and regress no more.
struct Findings<'a> {
    regressions: Vec<&'a RunResult>,
    improvements: Vec<&'a RunResult>,
    unlisted: Vec<&'a RunResult>,
    regressed_tests: BTreeSet<&'a str>,
    now_passing: Vec<&'a str>,
}

impl<'a> Findings<'a> {
    fn new(results: &'a [RunResult], deviations: &'a Deviations) -> Self {
        let regressions: Vec<&RunResult> = results
            .iter()
            .filter(|r| r.upstream.is_ok() && r.sandbox.is_err())
            .collect();
        let improvements = results
            .iter()
            .filter(|r| r.upstream.is_err() && r.sandbox.is_ok())
            .collect();
        let unlisted = regressions
            .iter()
            .copied()
            .filter(|r| !deviations.lists(&r.path))
            .collect();
        let regressed_tests: BTreeSet<&str> = regressions.iter().map(|r| r.path.as_str()).collect();
        let ran: BTreeSet<&str> = results.iter().map(|r| r.path.as_str()).collect();
        let now_passing = deviations
            .paths
            .iter()
            .map(String::as_str)
            .filter(|path| ran.contains(path) && !regressed_tests.contains(path))
            .collect();
        Self {
            regressions,
            improvements,
            unlisted,
            regressed_tests,
            now_passing,
        }
    }
}

/// Prints the report; `false` when a regression is not a listed deviation.
pub(crate) fn print(
    roots: &[String],
    totals: &Totals,
    results: &[RunResult],
    deviations: &Deviations,
) -> bool {
    let skipped: usize = totals.skipped.values().sum();
    let reasons: Vec<String> = totals
        .skipped
        .iter()
        .map(|(reason, count)| format!("{reason} {count}"))
        .collect();
    println!(
        "tests: {}, of which {skipped} skipped on both engines ({}); runs: {} (a test without \
         onlyStrict/noStrict runs twice)",
        totals.tests,
        if reasons.is_empty() {
            "none".to_owned()
        } else {
            reasons.join(", ")
        },
        results.len()
    );
    let count = |engine: fn(&RunResult) -> &Result<(), String>| {
        results.iter().filter(|r| engine(r).is_ok()).count()
    };
    let upstream_passed = count(|r| &r.upstream);
    let sandbox_passed = count(|r| &r.sandbox);
    println!(
        "upstream rquickjs 0.14: {upstream_passed} passed, {} failed",
        results.len() - upstream_passed
    );
    println!(
        "codemode-sandbox:       {sandbox_passed} passed, {} failed",
        results.len() - sandbox_passed
    );

    let Findings {
        regressions,
        improvements,
        unlisted,
        regressed_tests,
        now_passing,
    } = Findings::new(results, deviations);

    println!(
        "\nregressions (pass upstream, fail in the sandbox): {} runs of {} tests, {} runs not \
         listed in deviations.txt",
        regressions.len(),
        regressed_tests.len(),
        unlisted.len()
    );
    let mut by_directory: BTreeMap<&str, usize> = BTreeMap::new();
    for regression in &regressions {
        *by_directory
            .entry(directory(roots, &regression.path))
            .or_default() += 1;
    }
    for (directory, runs) in &by_directory {
        println!("  {runs:>5}  {directory}");
    }
    for regression in &regressions {
        let listed = if deviations.lists(&regression.path) {
            "listed"
        } else {
            "NEW"
        };
        let message = regression.sandbox.as_ref().err().map_or("", String::as_str);
        println!(
            "  [{listed}] {} ({}): {}",
            regression.path,
            regression.mode.label(),
            one_line(message)
        );
    }

    println!(
        "\nimprovements (fail upstream, pass in the sandbox): {} runs",
        improvements.len()
    );
    for improvement in &improvements {
        let message = improvement
            .upstream
            .as_ref()
            .err()
            .map_or("", String::as_str);
        println!(
            "  {} ({}): upstream: {}",
            improvement.path,
            improvement.mode.label(),
            one_line(message)
        );
    }

    for path in &now_passing {
        println!("warning: {path} is listed in deviations.txt but no longer regresses");
    }
    if unlisted.is_empty() {
        println!("\nno regression outside deviations.txt");
        true
    } else {
        println!(
            "\nFAILED: {} regressions not listed in deviations.txt (marked NEW above)",
            unlisted.len()
        );
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deviations_are_paths_with_comments() {
        let deviations = Deviations::parse(
            "# why\nbuilt-ins/a.js # Proxy refused\n\n  built-ins/b.js\n#built-ins/c.js\n",
        );
        assert!(deviations.lists("built-ins/a.js"));
        assert!(deviations.lists("built-ins/b.js"));
        assert!(!deviations.lists("built-ins/c.js"));
    }

    fn result(path: &str, upstream: bool, sandbox: bool) -> RunResult {
        let outcome = |passed: bool| {
            if passed {
                Ok(())
            } else {
                Err("failed".to_owned())
            }
        };
        RunResult {
            path: path.into(),
            mode: Mode::Strict,
            upstream: outcome(upstream),
            sandbox: outcome(sandbox),
        }
    }

    #[test]
    fn only_an_unlisted_regression_fails_the_run() {
        let deviations = Deviations::parse("listed.js # why\nfixed.js # why\nnot-run.js # why\n");
        let results = [
            result("listed.js", true, false),
            result("new.js", true, false),
            result("fixed.js", true, true),
            result("both-fail.js", false, false),
            result("better.js", false, true),
        ];
        let findings = Findings::new(&results, &deviations);
        let paths = |runs: &[&RunResult]| runs.iter().map(|r| r.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&findings.regressions), ["listed.js", "new.js"]);
        assert_eq!(paths(&findings.unlisted), ["new.js"]);
        assert_eq!(paths(&findings.improvements), ["better.js"]);
        assert_eq!(findings.now_passing, ["fixed.js"]);
        assert!(!print(&[], &Totals::default(), &results, &deviations));
        assert!(print(&[], &Totals::default(), &results[..1], &deviations));
    }

    #[test]
    fn a_regression_counts_in_its_deepest_directory() {
        let roots = vec![
            "built-ins/Array".to_owned(),
            "built-ins/Array/prototype".to_owned(),
        ];
        assert_eq!(
            directory(&roots, "built-ins/Array/prototype/at/x.js"),
            "built-ins/Array/prototype"
        );
        assert_eq!(
            directory(&roots, "built-ins/Array/from/x.js"),
            "built-ins/Array"
        );
        assert_eq!(
            directory(&roots, "built-ins/ArrayBuffer/x.js"),
            "built-ins/ArrayBuffer/x.js"
        );
    }
}
