//! The pre-evaluation check that rejects module access (`import`, `import()`, `require(`):
//! a guest program has no modules.
//!
//! It runs the JavaScript tokenizer of [`codemode_jslex`] and looks at every identifier token in
//! code: strings, template text, comments and regular-expression literals do not count, and where
//! a tokenizer cannot know whether a `/` starts a regular expression the program is read both
//! ways. The real guarantee is elsewhere (the VM has no module loader and no `require`); this
//! check exists so a program that tries gets the clear `invalid_input` message before it runs.

use crate::RunError;

/// Rejects `import` declarations, dynamic `import()`, `import.meta` and `require(` calls.
///
/// The scan is not fooled by strings, comments, regular-expression literals, template text, or
/// identifiers that merely contain `import` (`important`, `obj.import`, `{ import: 1 }`), and it
/// looks inside `${...}` template substitutions, however deeply nested. It knows where a `/`
/// divides and where it starts a regular expression (`a++ / import('fs') / 1` is refused), and
/// reads a program both ways where that depends on more than tokens (see
/// [`codemode_jslex::script`] for the rules). `import` as a method name (`{ import() {} }`) is refused too.
///
/// # Errors
/// [`RunError::ModuleAccess`] ("code mode module access is disabled.") when module access is
/// found; [`RunError::Syntax`] when the program nests brackets deeper than
/// [`MAX_NESTING`](crate::MAX_NESTING) or is too ambiguous to check
/// ([`MAX_READINGS`](crate::MAX_READINGS)).
///
/// # Example
/// ```
/// use codemode_engine::check_module_access;
///
/// assert!(check_module_access("const important = 'import x from \"y\"'; return important;").is_ok());
/// let error = check_module_access("const fs = await import('fs');").unwrap_err();
/// assert_eq!(error.to_string(), "code mode module access is disabled.");
/// ```
pub fn check_module_access(source: &str) -> Result<(), RunError> {
    crate::checks::check_module_access_only(source)
}

#[cfg(test)]
mod tests {
    use super::check_module_access;

    fn check(source: &str, rejected: bool) {
        assert_eq!(
            check_module_access(source).is_err(),
            rejected,
            "source: {source}"
        );
    }

    #[test]
    fn rejects_every_form_of_module_access() {
        for source in [
            "import fs from 'fs';",
            "import { readFile } from 'fs'",
            "import * as x from 'y'",
            "import 'side-effect'",
            "import\n'side-effect'",
            "const m = await import('fs');",
            "const m = await import /* c */ ('fs');",
            "return import.meta.url",
            "const fs = require('fs')",
            "const fs = require ( 'fs' )",
            "const fs = require/* c */('fs')",
            "`a ${import('fs')} b`",
            "`a ${ `nested ${ import('x') }` } b`",
            "`a ${ {a: 1}.a } ${ require('x') }`",
            "x = a / b; import('y')",
            "if (a) { } import('x')",
            "return (import('x'))",
            "const r = /re/g; import('x')",
            "import",
        ] {
            check(source, true);
        }
    }

    #[test]
    fn is_not_fooled_by_text_that_mentions_modules() {
        for source in [
            "const s = 'import fs from \"fs\"'; return s;",
            "const s = \"require('fs')\";",
            "// import fs from 'fs'\nreturn 1;",
            "/* import('fs') */ return 1;",
            "const important = 1; const reimport = important; return reimport;",
            "const requireAll = 1; return requireAll;",
            "return obj.import('x');",
            "return obj?.import('x');",
            "return obj.require('x');",
            "return { import: 1, require: 2 };",
            "const r = /import\\('x'\\)/; return r.test('x');",
            "const r = /[/]import(/; return 1;",
            "return a / import_count / 2;",
            "`text import('x') require('y')`",
            "`${'import(\"x\")'}`",
            "const require = 1; return require;",
            "return typeof /import/;",
            "return x => x.import;",
            "const requireCount = 3 / 1; return 'require(';",
        ] {
            check(source, false);
        }
    }

    #[test]
    fn survives_truncated_and_binary_input() {
        for source in [
            "'unterminated",
            "`unterminated ${",
            "/* open",
            "/[",
            "\\",
            "a\\",
            "`${`${`${",
            "}}}}",
        ] {
            // Only the absence of a panic matters for these; none contains module access.
            check(source, false);
        }
    }
}
