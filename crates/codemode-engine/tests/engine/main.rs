//! Integration tests of codemode-engine: one test binary, one module per area. Runs of whole
//! programs are tested through `codemode-sandbox` (its `Run`), in its test binary.

mod lexer;
