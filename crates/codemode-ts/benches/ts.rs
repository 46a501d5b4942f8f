//! Transform benchmarks (`cargo bench -p codemode-ts`).

fn main() {
    divan::main();
}

/// The ~50-line realistic cell of the snapshot tests (enum, namespace,
/// parameter properties, generics, `import type`, top-level await/return).
const CELL: &str = include_str!("../tests/cell.ts");

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
