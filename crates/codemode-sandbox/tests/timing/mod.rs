//! The switch for the timing tests: assertions on wall time, which a loaded machine can break
//! without anything being wrong. They run only with `CODEMODE_SLOW_TESTS=1` (`cargo xtask test
//! --slow`, and the separate step of `cargo xtask ci` after the normal tests); without it, a test
//! still checks what happened and skips only how long it took, saying so.

/// The variable that turns the timing assertions on.
const SLOW_TESTS_VAR: &str = "CODEMODE_SLOW_TESTS";

/// Whether wall-time assertions run (`CODEMODE_SLOW_TESTS=1`). When they do not, prints that
/// `test`'s wall-time check is skipped.
pub(crate) fn wall_time_checked(test: &str) -> bool {
    let on = std::env::var(SLOW_TESTS_VAR).is_ok_and(|value| value == "1");
    if !on {
        #[allow(clippy::print_stderr, reason = "a skipped check says why")]
        {
            eprintln!("{test}: wall time not checked (set {SLOW_TESTS_VAR}=1 to check it)");
        }
    }
    on
}
