//! Integration tests of codemode-namespaces: one test binary, one module per area.

mod namespaces;
mod scope_properties;
