//! Integration tests of codemode-core: one test binary, one module per area.

mod config;
mod embedding;
mod exec;
mod support;
mod wait;
