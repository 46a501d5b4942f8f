//! Integration tests of codemode-core: one test binary, one module per area.

mod config;
mod durable;
mod exec;
mod support;
mod wait;
