//! Bounds on generated declarations.

/// Default for [`DeclLimits::max_doc_chars`].
pub const DEFAULT_MAX_DOC_CHARS: usize = 1_500;
/// Default for [`DeclLimits::max_param_doc_chars`].
pub const DEFAULT_MAX_PARAM_DOC_CHARS: usize = 300;
/// Default for [`DeclLimits::max_schema_depth`].
pub const DEFAULT_MAX_SCHEMA_DEPTH: usize = 8;
/// Default for [`DeclLimits::max_type_nodes`].
pub const DEFAULT_MAX_TYPE_NODES: usize = 400;
/// Default for [`DeclLimits::max_object_properties`].
pub const DEFAULT_MAX_OBJECT_PROPERTIES: usize = 100;
/// Default for [`DeclLimits::max_union_members`].
pub const DEFAULT_MAX_UNION_MEMBERS: usize = 64;
/// Default for [`DeclLimits::max_literal_chars`].
pub const DEFAULT_MAX_LITERAL_CHARS: usize = 200;
/// Default for [`DeclLimits::max_ident_chars`].
pub const DEFAULT_MAX_IDENT_CHARS: usize = 64;
/// Default for [`DeclLimits::max_index_tool_names`].
pub const DEFAULT_MAX_INDEX_TOOL_NAMES: usize = 40;

/// Bounds on what [`McpDecls::generate_with`](crate::McpDecls::generate_with) writes for one
/// tool, so hostile or huge schemas yield bounded declarations.
///
/// Every limit bounds *declaration text* only. Calls are not affected: a property left out of a
/// declaration is still accepted and still gets its `default`, and
/// [`McpDecls::api`](crate::McpDecls::api) with `schema: true` returns the schemas unabridged
/// (the sandbox's output limit bounds what the guest can keep). Output grows linearly with the
/// number of servers and tools; no limit caps how many tools a server has.
///
/// ```
/// use codemode_mcp_decls::DeclLimits;
/// let limits = DeclLimits::default().max_doc_chars(200).max_schema_depth(4);
/// assert_ne!(limits, DeclLimits::default());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeclLimits {
    pub(crate) max_doc_chars: usize,
    pub(crate) max_param_doc_chars: usize,
    pub(crate) max_schema_depth: usize,
    pub(crate) max_type_nodes: usize,
    pub(crate) max_object_properties: usize,
    pub(crate) max_union_members: usize,
    pub(crate) max_literal_chars: usize,
    pub(crate) max_ident_chars: usize,
    pub(crate) max_index_tool_names: usize,
}

impl Default for DeclLimits {
    fn default() -> Self {
        Self {
            max_doc_chars: DEFAULT_MAX_DOC_CHARS,
            max_param_doc_chars: DEFAULT_MAX_PARAM_DOC_CHARS,
            max_schema_depth: DEFAULT_MAX_SCHEMA_DEPTH,
            max_type_nodes: DEFAULT_MAX_TYPE_NODES,
            max_object_properties: DEFAULT_MAX_OBJECT_PROPERTIES,
            max_union_members: DEFAULT_MAX_UNION_MEMBERS,
            max_literal_chars: DEFAULT_MAX_LITERAL_CHARS,
            max_ident_chars: DEFAULT_MAX_IDENT_CHARS,
            max_index_tool_names: DEFAULT_MAX_INDEX_TOOL_NAMES,
        }
    }
}

impl DeclLimits {
    /// Characters of a tool description kept in its JSDoc and in `$api` (cut marked with "…").
    pub fn max_doc_chars(mut self, n: usize) -> Self {
        self.max_doc_chars = n;
        self
    }

    /// Characters of a property description kept in its `@param` line.
    pub fn max_param_doc_chars(mut self, n: usize) -> Self {
        self.max_param_doc_chars = n;
        self
    }

    /// Nesting depth of schemas rendered as types (each object, array item, union member or
    /// `$ref` hop is one level); deeper schemas become `unknown`. Also bounds the recursion of
    /// default filling in [`McpDecls::prepare_call`](crate::McpDecls::prepare_call). Values
    /// above 64 act as 64, so no setting can make generation recurse deeply.
    pub fn max_schema_depth(mut self, n: usize) -> Self {
        self.max_schema_depth = n;
        self
    }

    /// Schema nodes rendered per tool signature; once spent, the rest become `unknown`.
    pub fn max_type_nodes(mut self, n: usize) -> Self {
        self.max_type_nodes = n;
        self
    }

    /// Properties written per object type; the rest are covered by `[key: string]: unknown`.
    pub fn max_object_properties(mut self, n: usize) -> Self {
        self.max_object_properties = n;
        self
    }

    /// Members of an enum or `oneOf`/`anyOf` written as a union; more widen the type.
    pub fn max_union_members(mut self, n: usize) -> Self {
        self.max_union_members = n;
        self
    }

    /// Characters of a string literal type or property key; longer enum values widen to
    /// `string`, longer keys are covered by `[key: string]: unknown`.
    pub fn max_literal_chars(mut self, n: usize) -> Self {
        self.max_literal_chars = n;
        self
    }

    /// Characters of a server or tool identifier (before a collision suffix).
    pub fn max_ident_chars(mut self, n: usize) -> Self {
        self.max_ident_chars = n.max(1);
        self
    }

    /// Tool names listed per server in `mcp/index.d.ts` before "and N more".
    pub fn max_index_tool_names(mut self, n: usize) -> Self {
        self.max_index_tool_names = n;
        self
    }
}
