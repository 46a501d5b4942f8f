//! `cargo xtask e2e`: runs the 16-step end-to-end plan and prints each step with pass/fail.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, reason = "a command-line report")]

use std::process::ExitCode;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            println!("cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let reports = runtime.block_on(codemode_tests::plan::run_plan());
    let mut failed = 0;
    for report in &reports {
        match &report.outcome {
            Ok(()) => println!("step {:>2} PASS  {}", report.number, report.name),
            Err(error) => {
                failed += 1;
                println!(
                    "step {:>2} FAIL  {}\n         {error}",
                    report.number, report.name
                );
            }
        }
    }
    println!("{} passed, {failed} failed", reports.len() - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
