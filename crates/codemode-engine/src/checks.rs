//! The checks run on a program before it is compiled: [`check_body`], [`check_program`] and
//! [`check_module_access`](crate::check_module_access), over what
//! [`codemode_jslex::Verdict`] read of it.
//!
//! The sandbox compiles a program with `new AsyncFunction(program)`; QuickJS then evaluates the
//! text `(async function anonymous(\n) {\n` + program + `\n})`. The tokenizer reads the program
//! every way its `/` can be read (see [`codemode_jslex::script`] for the rules), and a program
//! is refused when any reading finds module access or a bracket closing the wrapper.

use codemode_jslex::{Refusal, Verdict};

use crate::RunError;

pub use codemode_jslex::{MAX_NESTING, MAX_READINGS};

/// Refuses a program that could close the async function it is compiled into.
///
/// The sandbox compiles a program as the body of `(async function anonymous(\n) {\n` + program +
/// `\n})`. This check refuses:
/// - a `)`, `]` or `}` that closes no opener of the program (it would close the wrapper, and the
///   code after it would run while the program is compiled), or closes an opener of another kind
///   (`(]`, a syntax error anyway);
/// - a program ending inside a template literal or a block comment, or containing an
///   unterminated string or regular expression literal (these could swallow the wrapper's end);
/// - a program nesting brackets deeper than [`MAX_NESTING`], or too ambiguous to tokenize within
///   [`MAX_READINGS`] readings.
///
/// It is not a parser: brackets left open at the end are left for QuickJS to report, and any
/// other syntax error too. It runs in time linear in the program's length, without recursion.
///
/// # Errors
/// [`RunError::Syntax`] with a message such as ``SyntaxError: unexpected `}` closes the code mode
/// function body (line 1, column 1)``.
///
/// # Example
/// ```
/// use codemode_engine::{RunError, check_body};
///
/// assert!(check_body("const o = { a: [1, 2] }; return `${o.a.map((x) => x / 2)}`;").is_ok());
/// let error = check_body("}); while (true) {} (async function () {").unwrap_err();
/// assert_eq!(
///     error,
///     RunError::Syntax(
///         "SyntaxError: unexpected `}` closes the code mode function body (line 1, column 1)".into()
///     )
/// );
/// ```
pub fn check_body(program: &str) -> Result<(), RunError> {
    let verdict = Verdict::of(program);
    limits(&verdict, program)?;
    body(&verdict, program)
}

/// [`check_module_access`](crate::check_module_access) and [`check_body`] in one pass over the
/// program, and the bound on its names ([`MAX_PROGRAM_NAMES`]): what the sandbox runs before it
/// compiles a program.
///
/// # Errors
/// [`RunError::ModuleAccess`] first, then the [`RunError::Syntax`] errors of [`check_body`], then
/// [`RunError::ProgramTooComplex`].
///
/// # Example
/// ```
/// use codemode_engine::{RunError, check_program};
///
/// assert!(check_program("return [1, 2].map((x) => x / 2);").is_ok());
/// assert_eq!(check_program("a++ / import('fs') / 1"), Err(RunError::ModuleAccess));
/// assert!(matches!(check_program("})(); (async function () {"), Err(RunError::Syntax(_))));
/// ```
pub fn check_program(program: &str) -> Result<(), RunError> {
    let verdict = Verdict::of(program);
    limits(&verdict, program)?;
    module_access(&verdict)?;
    body(&verdict, program)?;
    if verdict.names > MAX_PROGRAM_NAMES {
        return Err(RunError::ProgramTooComplex {
            names: verdict.names,
            limit: MAX_PROGRAM_NAMES,
        });
    }
    Ok(())
}

/// Whether any reading of `program` contains module access; the errors of the readings' limits
/// (too deep, too ambiguous) come first, since then the program was not fully checked.
pub(crate) fn check_module_access_only(program: &str) -> Result<(), RunError> {
    let verdict = Verdict::of(program);
    limits(&verdict, program)?;
    module_access(&verdict)
}

/// Most names (declarations and references, keywords included) a program may hold.
///
/// QuickJS resolves each name by walking the declarations of its scopes, and checks each new
/// declaration against the others of its scope, so compiling costs up to the square of the
/// number of names, and the compiler cannot be interrupted. 20,000 names (far more than any cell
/// written to orchestrate tools) compile in well under the deadline grace; a program of 80,000
/// `let` lines took seconds.
pub const MAX_PROGRAM_NAMES: usize = 20_000;

fn syntax(refusal: &Refusal, program: &str) -> RunError {
    RunError::Syntax(format!("SyntaxError: {}", refusal.message(program)))
}

fn limits(verdict: &Verdict, program: &str) -> Result<(), RunError> {
    verdict
        .limit
        .as_ref()
        .map_or(Ok(()), |refusal| Err(syntax(refusal, program)))
}

fn module_access(verdict: &Verdict) -> Result<(), RunError> {
    match verdict.module_access {
        Some(_) => Err(RunError::ModuleAccess),
        None => Ok(()),
    }
}

fn body(verdict: &Verdict, program: &str) -> Result<(), RunError> {
    verdict
        .body()
        .map_or(Ok(()), |refusal| Err(syntax(refusal, program)))
}
