//! The end-to-end plan as a test: every one of the 16 steps must pass.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_to_end_plan() {
    let reports = codemode_tests::plan::run_plan().await;
    let failures: Vec<String> = reports
        .iter()
        .filter_map(|r| {
            r.outcome
                .as_ref()
                .err()
                .map(|e| format!("step {} ({}): {e}", r.number, r.name))
        })
        .collect();
    assert_eq!(reports.len(), 16);
    assert!(
        failures.is_empty(),
        "failed steps:\n{}",
        failures.join("\n")
    );
}
