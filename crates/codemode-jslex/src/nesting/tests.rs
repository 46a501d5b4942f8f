//! Tests of the nesting estimate.

use super::check_nesting;

fn depth_ok(source: &str, limit: usize) -> bool {
    check_nesting(source, limit).is_ok()
}

#[test]
fn ordinary_code_is_far_below_the_default() {
    let cell = "const r = await tools.call('a:b:c', { q: [1, 2, 3], s: `x${y.z}` });\n\
                if (r.ok) { return r.items.map((i) => i.name).join(', '); }\n\
                const half = r.total / 2; // a / b\n\
                const re = /a\\/b[/]/g.test(s) ? a / b / c : (x + y) / 2;\n";
    assert!(depth_ok(cell, 40));
}

#[test]
fn bracket_depth_is_counted() {
    assert!(depth_ok(
        &format!("{}1{}", "(".repeat(10), ")".repeat(10)),
        40
    ));
    // Each `(` adds two: one to the enclosing chain, one level of its own.
    assert_eq!(check_nesting(&"(".repeat(100), 40), Err(20));
}

#[test]
fn unbracketed_chains_are_counted() {
    for hostile in [
        format!("x = {}y", "!".repeat(100)),
        format!("x = {}y", "-+".repeat(50)),
        format!("x = 1{}", "+1".repeat(100)),
        format!("a{}", ".b".repeat(100)),
        format!("a{}", "()".repeat(100)),
        format!("{}x", "if (a) ".repeat(100)),
        format!("let x: {}number", "Array<".repeat(100)),
        format!("x = {}0", "a => ".repeat(100)),
        format!("x = {}y", "typeof ".repeat(100)),
        format!("x = {}y", "await ".repeat(100)),
        format!("x = {}y", "new ".repeat(100)),
        format!("x = a{}", " ? b".repeat(100)),
        format!("x = a{}", "`t`".repeat(100)),
        format!("if (a) x;{}", " else if (b) x;".repeat(100)),
        format!("{}x", "l: ".repeat(100)),
    ] {
        assert!(!depth_ok(&hostile, 64), "{hostile:.40}");
    }
}

#[test]
fn statements_restart_the_chain() {
    let with_semicolons = "x = a + b;\n".repeat(200);
    let without = "x = a + b\n".repeat(200);
    let calls = "log(a, b, c)\n".repeat(200);
    let blocks = "if (a) { b() } else { c() }\n".repeat(200);
    let comparisons = "ok = a < b\n".repeat(200);
    let array = format!("[{}]", "1, ".repeat(1000));
    for text in [with_semicolons, without, calls, blocks, comparisons, array] {
        assert!(depth_ok(&text, 16), "{text:.40}");
    }
}

#[test]
fn commas_keep_the_statement_prefix() {
    let prefix = "if (a) ".repeat(20);
    let chain = "-".repeat(30);
    assert!(!depth_ok(&format!("{prefix}x, {chain}y"), 64));
    assert!(!depth_ok(
        &format!("{}x{}", "A<".repeat(20), ", A<".repeat(30)),
        64
    ));
}

#[test]
fn literals_and_comments_hide_their_brackets() {
    let cell = format!(
        "const s = '{0}'; const t = \"{0}\"; // {0}\n/* {0} */ const r = /a\\(b[(]/; const u = `{0}`;",
        "(".repeat(100)
    );
    assert!(depth_ok(&cell, 16));
}

#[test]
fn an_ambiguous_slash_is_read_both_ways() {
    let chain = "-+".repeat(100);
    for hostile in [
        // Division taken for a regular expression would hide the chain.
        format!("let of = 2;\nreturn of / {chain}1 / 1;"),
        format!("return {{ a: {{}} / {chain}1 / 1 }};"),
        format!("x = a++ / {chain}1 / 1"),
        format!("x = a! / {chain}1 / 1"),
        // A regular expression taken for division: its quote would start
        // a "string" that hides the chain.
        format!("if (a) /\"/.test(s) + {chain}1"),
        format!("function f() {{}}\n/'/.test(s); {chain}1"),
        format!("for (x of /`/g) {chain}1"),
        format!("x = y\n/`/.test(s) + {chain}1"),
        // HTML-like comments, or not.
        format!("x = a <!-- `\n{chain}1\n`"),
        format!("x = a =<!-- `\n{chain}1\n`"),
        format!("x = 1\n--> `\n{chain}1\n`"),
    ] {
        assert!(!depth_ok(&hostile, 64), "{hostile:.60}");
    }
}

#[test]
fn unicode_spaces_and_line_breaks_are_read_as_swc_reads_them() {
    let chain = "-+".repeat(100);
    for hostile in [
        // No-break spaces between keywords: each still counts.
        format!("x = {}y", "typeof\u{a0}".repeat(100)),
        format!("x = {}y", "await\u{3000}".repeat(100)),
        // U+2028 ends a line comment ...
        format!("x = 1 // note\u{2028}{chain}1"),
        // ... and is a line break before `-->`.
        format!("x = 1\u{2028}--> `\n{chain}1\n`"),
        format!("x = 1 /* \u{2029} */ --> `\n{chain}1\n`"),
    ] {
        assert!(!depth_ok(&hostile, 64), "{hostile:.60}");
    }
    assert!(depth_ok(
        "const naïve = 'é' + `ü${ß}`; // …\u{2028}x = 1",
        16
    ));
}

#[test]
fn numbers_are_single_tokens() {
    let chain = "-+".repeat(100);
    for hostile in [
        // `1.` is a number: the `/` after it divides.
        format!("x = 1./ {chain}1 / 2"),
        format!("x = 1./ 2;\n{chain}1"),
        // The member access after a number still counts.
        format!("x = 1.5e+3{}", ".a".repeat(100)),
    ] {
        assert!(!depth_ok(&hostile, 64), "{hostile:.60}");
    }
    assert!(depth_ok(
        "x = [0x1F, 1_000n, .5, 1.e3, 2e-3, 0b1010, 1..toString()];",
        16
    ));
}

#[test]
fn a_wrong_guess_with_unbalanced_brackets_is_dropped() {
    // The regular-expression reading of `a! / (` leaves a `(` open and
    // closes `f(`; its `)` then matches nothing, so it is dropped
    // instead of drifting (and multiplying) for the rest of the text.
    let line = "y = f(a! / (n - 1 / 2));\n";
    assert!(depth_ok(&line.repeat(200), 32));
}

#[test]
fn a_hashbang_line_is_read_both_ways() {
    let chain = "-+".repeat(100);
    assert!(!depth_ok(&format!("#!/usr/bin/env `\n{chain}1\n`"), 64));
    assert!(!depth_ok(&format!("#!/bin/sh\nx = {chain}1"), 64));
    assert!(depth_ok("#!/usr/bin/env node\nreturn 1;", 16));
}

#[test]
fn template_substitutions_nest() {
    let nested = format!("x = {}1{}", "`${".repeat(50), "}`".repeat(50));
    assert!(!depth_ok(&nested, 40));
    assert!(depth_ok("x = `a${`b${c}`}d`", 16));
}

#[test]
fn deep_frames_are_freed_without_recursion() {
    // With an absurd limit, 300,000 open frames (and a fork sharing
    // them) are built and dropped on this test thread's small stack.
    let text = format!("{}}}/x/ + 1", "(".repeat(300_000));
    assert!(check_nesting(&text, usize::MAX).is_ok());
}

#[test]
fn too_many_readings_are_refused() {
    // Every `/` after `of` may divide or start a regular expression that
    // ends at a later one; the readings never meet again on one line.
    let divisions = format!("x = of{}", " / (of".repeat(40));
    assert!(check_nesting(&divisions, 100_000).is_err());
}
