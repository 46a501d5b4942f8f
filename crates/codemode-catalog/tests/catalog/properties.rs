//! Invariants of the catalog under arbitrary tool sets (proptest).

use std::collections::{HashMap, HashSet};

use codemode_catalog::{
    Catalog, CatalogEntry, RESERVED_CONVENIENCE_NAMES, SearchLimits, Source, ToolDescriptor,
    ToolOrigin,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Short strings from a small alphabet, so that owners, names and ids
/// collide often and both valid and invalid identifiers show up.
fn small_text() -> BoxedStrategy<String> {
    "[a-bA_$0-9:. -]{0,3}".boxed()
}

/// Strings sharing 13- to 16-byte prefixes (and NUL bytes), of lengths
/// around the 14- and 15-byte prefix keys the sort starts with, so that
/// catalog order must look past those keys.
fn long_prefix_text() -> BoxedStrategy<String> {
    "(0123456789abc|0123456789abcdef){0,2}[ab\\x00]{0,3}".boxed()
}

/// Any text: unicode, control characters, empty, occasionally large.
fn any_text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => small_text(),
        4 => "\\PC{0,12}",
        2 => any::<String>(),
        1 => prop::collection::vec(any::<char>(), 0..4096).prop_map(String::from_iter),
    ]
    .boxed()
}

fn origin(text: BoxedStrategy<String>) -> impl Strategy<Value = ToolOrigin> {
    prop_oneof![
        Just(ToolOrigin::Core),
        text.clone().prop_map(ToolOrigin::BundledPlugin),
        text.clone().prop_map(ToolOrigin::ExternalPlugin),
        text.clone().prop_map(ToolOrigin::Mcp),
        text.prop_map(ToolOrigin::Client),
    ]
}

fn descriptor(text: BoxedStrategy<String>) -> impl Strategy<Value = ToolDescriptor> {
    let control_or_text = prop_oneof![
        8 => text.clone(),
        1 => prop::sample::select(vec!["exec", "wait", "tool_search", "tool_call", "search", "then"])
            .prop_map(str::to_owned),
    ];
    (
        origin(text.clone()),
        control_or_text,
        prop::option::of(text.clone()),
        text,
        prop::option::of(Just(json!({"type": "object"}))),
        prop::bool::weighted(0.1),
        any::<bool>(),
    )
        .prop_map(
            |(origin, name, label, description, parameters, direct_only, read_only)| {
                ToolDescriptor {
                    origin,
                    name,
                    label,
                    description,
                    parameters,
                    direct_only,
                    read_only,
                }
            },
        )
}

fn tool_set(text: BoxedStrategy<String>) -> impl Strategy<Value = Vec<ToolDescriptor>> {
    prop::collection::vec(descriptor(text), 0..40)
}

/// Keep the first descriptor of each (origin, name): an "equivalent set".
fn unique_keys(tools: Vec<ToolDescriptor>) -> Vec<ToolDescriptor> {
    let mut seen = HashSet::new();
    tools
        .into_iter()
        .filter(|tool| seen.insert((tool.origin.clone(), tool.name.clone())))
        .collect()
}

fn ids(catalog: &Catalog) -> Vec<&str> {
    catalog.entries().iter().map(|e| e.id.as_str()).collect()
}

/// `^[A-Za-z_$][A-Za-z0-9_$]*$`, spelled out independently of the crate.
fn is_identifier(name: &str) -> bool {
    let bytes = name.as_bytes();
    let head_ok = |b: u8| b.is_ascii_alphabetic() || b == b'_' || b == b'$';
    match bytes.split_first() {
        Some((&head, tail)) => {
            head_ok(head) && tail.iter().all(|&b| head_ok(b) || b.is_ascii_digit())
        }
        None => false,
    }
}

/// Reference scoring: lower-cases fields at query time, no shared code.
fn reference_score(entry: &CatalogEntry, query: &str) -> u32 {
    let query = query.to_lowercase();
    let terms: Vec<&str> = query
        .split(|c: char| !matches!(c, 'a'..='z' | '0'..='9' | '_' | '.' | '/' | ':' | '-'))
        .filter(|t| !t.is_empty())
        .collect();
    if terms.is_empty() {
        return 1;
    }
    let name = entry.name.to_lowercase();
    let id = entry.id.to_lowercase();
    let label = entry
        .label
        .as_deref()
        .map(str::to_lowercase)
        .unwrap_or_default();
    let description = entry.description.to_lowercase();
    let mut score = 0;
    for term in terms {
        if name == term || id == term {
            score += 20;
        }
        if name.contains(term) {
            score += 8;
        }
        if id.contains(term) {
            score += 6;
        }
        if entry.label.is_some() && label.contains(term) {
            score += 4;
        }
        if description.contains(term) {
            score += 2;
        }
    }
    score
}

fn limit_value() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        (-3i64..80).prop_map(|n| Some(json!(n))),
        (-3.0f64..80.0).prop_map(|f| Some(json!(f))),
        any::<String>().prop_map(|s| Some(json!(s))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Equivalent tool sets in any order give the identical catalog.
    #[test]
    fn any_permutation_gives_identical_ids_and_order(
        (tools, shuffled) in tool_set(small_text())
            .prop_map(unique_keys)
            .prop_flat_map(|tools| (Just(tools.clone()), Just(tools).prop_shuffle()))
    ) {
        let a = Catalog::build(tools);
        let b = Catalog::build(shuffled);
        prop_assert_eq!(a.entries(), b.entries());
        prop_assert!(a.convenience_names().eq(b.convenience_names()));
        prop_assert_eq!(a.duplicates(), b.duplicates());
        prop_assert_eq!(a.direct_only(), b.direct_only());
        prop_assert_eq!(a.excluded_controls(), b.excluded_controls());
        prop_assert_eq!(a.all_tools_json(), b.all_tools_json());
        prop_assert_eq!(
            a.search("a b", None, SearchLimits::default()),
            b.search("a b", None, SearchLimits::default())
        );
    }

    /// Catalog order is the full (class, owner, name) order even for names
    /// and owners that share their first 16 bytes.
    #[test]
    fn order_is_full_string_order_past_long_prefixes(
        (tools, shuffled) in tool_set(long_prefix_text())
            .prop_map(unique_keys)
            .prop_flat_map(|tools| (Just(tools.clone()), Just(tools).prop_shuffle()))
    ) {
        let a = Catalog::build(tools);
        let b = Catalog::build(shuffled);
        prop_assert_eq!(a.entries(), b.entries());
        let class = |origin: &ToolOrigin| match origin {
            ToolOrigin::Core => 0,
            ToolOrigin::BundledPlugin(_) => 1,
            ToolOrigin::ExternalPlugin(_) => 2,
            ToolOrigin::Mcp(_) => 3,
            ToolOrigin::Client(_) => 4,
        };
        let key = |entry: &CatalogEntry| {
            (class(&entry.origin), entry.source_name.clone().unwrap_or_default(), entry.name.clone())
        };
        for pair in a.entries().windows(2) {
            prop_assert!(key(&pair[0]) <= key(&pair[1]), "{:?} before {:?}", pair[0].id, pair[1].id);
        }
    }

    /// Even with same-key duplicates of different content, the ids and their
    /// order do not depend on the input order.
    #[test]
    fn ids_do_not_depend_on_input_order_even_with_duplicates(
        (tools, shuffled) in tool_set(small_text())
            .prop_flat_map(|tools| (Just(tools.clone()), Just(tools).prop_shuffle()))
    ) {
        let a = Catalog::build(tools);
        let b = Catalog::build(shuffled);
        prop_assert_eq!(ids(&a), ids(&b));
        let mut dups_a = a.duplicates().to_vec();
        let mut dups_b = b.duplicates().to_vec();
        dups_a.sort();
        dups_b.sort();
        prop_assert_eq!(dups_a, dups_b);
    }

    /// Ids are unique, well formed and in class order; nothing is lost.
    #[test]
    fn catalog_structure(tools in tool_set(small_text())) {
        let given = tools.len();
        let catalog = Catalog::build(tools.clone());
        let unique: HashSet<&str> = ids(&catalog).into_iter().collect();
        prop_assert_eq!(unique.len(), catalog.len());
        prop_assert_eq!(
            catalog.len() + catalog.duplicates().len() + catalog.direct_only().len()
                + catalog.excluded_controls().len(),
            given
        );
        let class = |origin: &ToolOrigin| match origin {
            ToolOrigin::Core => 0,
            ToolOrigin::BundledPlugin(_) => 1,
            ToolOrigin::ExternalPlugin(_) => 2,
            ToolOrigin::Mcp(_) => 3,
            ToolOrigin::Client(_) => 4,
        };
        for pair in catalog.entries().windows(2) {
            prop_assert!(class(&pair[0].origin) <= class(&pair[1].origin));
        }
        for entry in catalog.entries() {
            let owner = entry.source_name.as_deref().unwrap_or("core");
            prop_assert_eq!(&entry.id, &format!("{}:{}:{}", entry.source, owner, entry.name));
            prop_assert_eq!(entry.source_name.is_none(), entry.origin == ToolOrigin::Core);
            prop_assert!(!codemode_catalog::TOOL_SEARCH_CONTROL_NAMES.contains(&entry.name.as_str())
                || entry.source != Source::Openclaw);
            prop_assert!(catalog.get(&entry.id) == Some(entry));
        }
        prop_assert_eq!(catalog.source_counts().total(), catalog.len());
        prop_assert!(catalog.direct_only().iter().all(|tool| tool.direct_only));
    }

    /// Every installed convenience name is a safe identifier, unique, and
    /// every entry that qualifies gets one.
    #[test]
    fn convenience_names_are_valid_unique_identifiers(tools in tool_set(small_text())) {
        let catalog = Catalog::build(tools);
        let mut guest_names: HashMap<&str, usize> = HashMap::new();
        for entry in catalog.guest_entries() {
            *guest_names.entry(entry.name.as_str()).or_default() += 1;
        }
        let mut installed = HashSet::new();
        for (name, id) in catalog.convenience_names() {
            prop_assert!(is_identifier(name), "{:?} is not an identifier", name);
            prop_assert!(!RESERVED_CONVENIENCE_NAMES.contains(&name));
            prop_assert!(installed.insert(name), "{:?} installed twice", name);
            prop_assert_eq!(guest_names.get(name), Some(&1));
            let entry = catalog.lookup(name);
            prop_assert!(entry.is_ok());
            prop_assert_eq!(entry.map(|e| e.id.as_str()).ok(), Some(id));
        }
        for entry in catalog.guest_entries() {
            let qualifies = is_identifier(&entry.name)
                && !RESERVED_CONVENIENCE_NAMES.contains(&entry.name.as_str())
                && guest_names.get(entry.name.as_str()) == Some(&1);
            prop_assert_eq!(qualifies, installed.contains(entry.name.as_str()), "{:?}", entry.name);
        }
    }

    /// Search returns the reference ranking: scores, order and limit.
    #[test]
    fn search_matches_the_reference_ranking(
        tools in tool_set(small_text()),
        query in prop_oneof!["[a-bA0-9:. -]{0,6}", "\\PC{0,8}"],
        limit in limit_value(),
    ) {
        let catalog = Catalog::build(tools);
        let limits = SearchLimits::new(5, 12);
        let found = catalog.search_hits(&query, limit.as_ref(), limits);
        let Ok(expected_limit) = limits.resolve(limit.as_ref()) else {
            prop_assert!(found.is_err());
            return Ok(());
        };
        let mut expected: Vec<(u32, &str)> = catalog
            .entries()
            .iter()
            .filter(|entry| entry.source != Source::Mcp)
            .map(|entry| (reference_score(entry, &query), entry.id.as_str()))
            .filter(|(score, _)| *score > 0)
            .collect();
        expected.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        expected.truncate(expected_limit);
        let found: Vec<(u32, &str)> = found
            .map_err(|e| TestCaseError::fail(e.to_string()))?
            .iter()
            .map(|hit| (hit.score, hit.entry.id.as_str()))
            .collect();
        prop_assert_eq!(found, expected);
    }

    /// Arbitrary names, descriptions, queries and lookups never panic, and
    /// the guest views keep their promises.
    #[test]
    fn hostile_text_never_panics(
        tools in prop::collection::vec(descriptor(any_text()), 0..12),
        query in any_text(),
        probe in any_text(),
        limit in limit_value(),
    ) {
        let catalog = Catalog::build(tools);
        let all_tools = catalog.all_tools_json();
        let listed = all_tools.as_array().map(Vec::len);
        prop_assert_eq!(listed, Some(catalog.guest_entries().count()));
        for entry in catalog.entries() {
            let described = entry.describe_json();
            prop_assert!(described.get("parameters").is_some());
            match catalog.lookup(&entry.id) {
                // An MCP id can still match a guest entry *named* like it.
                Ok(found) => prop_assert!(
                    found.source != Source::Mcp && (found.id == entry.id || found.name == entry.id)
                ),
                Err(_) => prop_assert_eq!(entry.source, Source::Mcp),
            }
        }
        if let Ok(hits) = catalog.search(&query, limit.as_ref(), SearchLimits::default()) {
            prop_assert!(hits.len() <= SearchLimits::default().max_limit());
            prop_assert!(hits.iter().all(|entry| entry.source != Source::Mcp));
        }
        match catalog.lookup(&probe) {
            Ok(entry) => prop_assert!(entry.id == probe || entry.name == probe),
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }
}
