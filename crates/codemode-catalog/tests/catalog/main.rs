//! Integration tests of codemode-catalog: one test binary, one module per area.

mod catalog;
mod host_source;
mod properties;
