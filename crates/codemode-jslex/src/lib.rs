//! The one tokenizer of code mode: it reads a JavaScript or TypeScript program token by token,
//! *every* way its `/` can be read (a regular expression or a division), and answers the
//! questions asked of a program before anything parses or runs it:
//!
//! - [`Verdict::of`]: whether a JavaScript program, compiled as the body of the sandbox's async
//!   function, could close that function or reach module syntax (`import`, `require(`), and how
//!   many names it holds (the sandbox's pre-checks);
//! - [`check_nesting`]: an upper bound of how deeply a parser recurses over a TypeScript (or
//!   JavaScript) program, refused before parsing when it crosses a limit (the TypeScript
//!   transform's nesting bound).
//!
//! Both walk the text with the same lexical rules ([`scan`]: whitespace and line terminators,
//! comments, strings, templates, regular expressions, numbers), the same forking driver (readings
//! stepped furthest behind first, merged when they meet in the same state) and the same limits:
//! programs of at most [`DEFAULT_MAX_SOURCE_BYTES`], at most [`MAX_READINGS`] readings at once.
//! They run in time linear in the program's length, without recursion.
//!
//! This crate must not know an engine, a parser or a sandbox: it depends on nothing (std only),
//! holds no QuickJS or swc type, and says nothing about what a caller does with its answers.
//! What it knows of them is the grammar they implement (ECMAScript, TypeScript) and, where the
//! grammar leaves a choice to the implementation (HTML-like comments, the white space set), what
//! QuickJS and swc chose.
//!
//! ```
//! use codemode_jslex::{Verdict, check_nesting};
//!
//! // `/ import` divides after a value; after `await` it could be a regular expression too.
//! assert_eq!(Verdict::of("a / import('fs') / 1").module_access, Some(4));
//! assert_eq!(Verdict::of("await /import('fs')/g").module_access, Some(7));
//! assert!(Verdict::of("return `${o.a.map((x) => x / 2)}`;").body().is_none());
//! assert!(check_nesting("let x: Array<Array<number>> = [[1]];", 40).is_ok());
//! assert!(check_nesting(&"(".repeat(100), 40).is_err());
//! ```
#![forbid(unsafe_code)]

pub mod nesting;
mod readings;
pub mod scan;
pub mod script;

pub use nesting::check_nesting;
pub use script::{MAX_NESTING, Reason, Refusal, Slash, Verdict, slash_readings};

/// The largest program accepted, in UTF-8 bytes (1 MiB), JavaScript or TypeScript alike: the
/// default of the sandbox's and the TypeScript transform's source limits.
pub const DEFAULT_MAX_SOURCE_BYTES: usize = 1024 * 1024;

/// How many readings of one program are followed at once at most. Each `/` whose meaning a
/// tokenizer cannot know forks a reading, and readings that reach the same state merge again; a
/// program needing more is refused (by [`Verdict::limit`] or [`check_nesting`]'s error).
pub const MAX_READINGS: usize = 16;
