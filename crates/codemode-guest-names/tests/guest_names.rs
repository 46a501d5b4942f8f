//! The reserved-word lists against the ECMAScript specification's own lists.

use codemode_guest_names::{
    CODE_MODE_GLOBALS, RESERVED_WORDS, RESTRICTED_BINDINGS, STRICT_MODE_RESERVED_WORDS,
    has_internal_prefix, is_code_mode_global, is_reserved_word,
};

/// ECMA-262, §12.7.2 "Keywords and Reserved Words", *ReservedWord*, as the specification prints
/// it (await and yield included).
const SPEC_RESERVED_WORDS: &str = "await break case catch class const continue debugger default \
    delete do else enum export extends false finally for function if import in instanceof new \
    null return super switch this throw true try typeof var void while with yield";

/// The same section: reserved in strict-mode code.
const SPEC_STRICT_MODE_RESERVED_WORDS: &str =
    "implements interface let package private protected public static";

fn sorted(words: impl IntoIterator<Item = &'static str>) -> Vec<&'static str> {
    let mut words: Vec<&str> = words.into_iter().collect();
    words.sort_unstable();
    words
}

#[test]
fn reserved_words_are_exactly_the_specification_s() {
    assert_eq!(
        sorted(RESERVED_WORDS.iter().copied()),
        sorted(SPEC_RESERVED_WORDS.split_whitespace())
    );
    assert_eq!(
        sorted(STRICT_MODE_RESERVED_WORDS.iter().copied()),
        sorted(SPEC_STRICT_MODE_RESERVED_WORDS.split_whitespace())
    );
    assert_eq!(RESTRICTED_BINDINGS, ["arguments", "eval"]);
}

#[test]
fn every_listed_word_is_reserved_and_nothing_else_is() {
    let spec = SPEC_RESERVED_WORDS
        .split_whitespace()
        .chain(SPEC_STRICT_MODE_RESERVED_WORDS.split_whitespace())
        .chain(["arguments", "eval"]);
    for word in spec {
        assert!(is_reserved_word(word), "{word}");
    }
    // Global properties and contextual keywords that may name a binding are not reserved words.
    for word in [
        "undefined",
        "NaN",
        "Infinity",
        "async",
        "of",
        "get",
        "set",
        "from",
        "as",
        "target",
        "Class",
        "classes",
        "",
    ] {
        assert!(!is_reserved_word(word), "{word}");
    }
}

#[test]
fn code_mode_globals_and_the_internal_prefix() {
    for name in CODE_MODE_GLOBALS {
        assert!(is_code_mode_global(name), "{name}");
        assert!(!is_reserved_word(name), "{name}");
    }
    for name in [
        "__openclaw",
        "__openclawBridge",
        "__OPENCLAW_x",
        "__OpenClaw",
    ] {
        assert!(has_internal_prefix(name), "{name}");
        assert!(is_code_mode_global(name), "{name}");
    }
    for name in [
        "__opencla",
        "_openclaw",
        "openclaw",
        "Tools",
        "mcp",
        "é__openclaw",
    ] {
        assert!(!is_code_mode_global(name), "{name}");
    }
}
