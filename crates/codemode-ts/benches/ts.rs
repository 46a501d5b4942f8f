//! Transform benchmarks (`cargo bench -p codemode-ts`).

fn main() {
    divan::main();
}

/// The ~50-line realistic cell of the snapshot tests (enum, namespace,
/// parameter properties, generics, `import type`, top-level await/return).
const CELL: &str = include_str!("../tests/ts/cell.ts");

#[divan::bench(sample_count = 20, sample_size = 10)]
fn transform_50_line_cell() -> String {
    codemode_ts::transform(divan::black_box(CELL)).unwrap_or_default()
}

#[divan::bench(sample_count = 20, sample_size = 10)]
fn reject_100k_parens() -> bool {
    let hostile = "(".repeat(100_000);
    codemode_ts::transform(divan::black_box(&hostile)).is_err()
}

/// A one-line cell: mostly the round trip to the transform thread (a pool
/// thread now; a freshly spawned 64 MiB thread before).
#[divan::bench(sample_count = 50, sample_size = 20)]
fn transform_one_line_cell() -> String {
    codemode_ts::transform(divan::black_box("return 1 as number;")).unwrap_or_default()
}

/// Worst case of the nesting bound: 1 MiB where every `/` has two readings,
/// 240 brackets deep, refused only at its very end.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn reject_1mib_of_ambiguous_slashes() -> bool {
    let hostile = format!(
        "{}{}{}",
        "(".repeat(240),
        "of/x/;".repeat(170_000),
        "(".repeat(300)
    );
    codemode_ts::transform(divan::black_box(&hostile)).is_err()
}
