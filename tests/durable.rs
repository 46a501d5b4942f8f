//! Durable runs across processes: `codemode-durable-host` processes on one state store.
//!
//! - kill test: a SQLite file; the host is killed with SIGKILL after `exec` answered `waiting`;
//!   a new process on the same file completes the run; the side effect happened once.
//! - crash during a call: killed between a side-effecting call's `started` and settled
//!   receipts, the replay tells the guest the outcome is unknown and never runs it again.
//! - two hosts: two processes share a Postgres (`CODEMODE_TEST_POSTGRES_URL`, which `cargo
//!   xtask ci` provides); `exec` on one, `wait` on the other.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

struct Host {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Host {
    fn start(state: &str, side_file: &Path) -> Host {
        let mut child = Command::new(env!("CARGO_BIN_EXE_codemode-durable-host"))
            .arg(state)
            .arg(side_file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the durable host starts");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut ready = String::new();
        stdout.read_line(&mut ready).expect("the host says ready");
        assert_eq!(ready.trim(), "ready");
        Host {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, command: Value) -> Value {
        writeln!(self.stdin, "{command}").expect("the host reads");
        self.stdin.flush().expect("flush");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("the host answers");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    /// SIGKILL: no destructor, no flush, nothing graceful.
    fn kill(mut self) {
        self.child.kill().expect("kill");
        let _ = self.child.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "codemode-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

const APPEND_THEN_SLOW: &str = r#"
    const appended = await tools.append({ line: 'side effect' });
    const slow = await tools.slow({ ms: 2000 });
    return { appended, slow };
"#;

/// exec -> waiting on the first host; `wait` on the second completes the run.
fn exec_kill_wait(first_state: &str, second_state: &str, dir: &Path) {
    let side = dir.join("side.txt");
    let mut first = Host::start(first_state, &side);
    let waiting = first.send(json!({ "exec": APPEND_THEN_SLOW }));
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    let run_id = waiting["runId"].as_str().expect("runId").to_owned();
    first.kill();
    let mut second = Host::start(second_state, &side);
    let done = second.send(json!({ "wait": run_id }));
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(
        done["value"]["appended"],
        json!({ "appended": "side effect" })
    );
    assert_eq!(done["value"]["slow"], json!({ "slept": 2000 }));
    assert_eq!(lines(&side), vec!["side effect".to_owned()]);
}

#[test]
fn a_killed_host_s_run_completes_in_a_new_process_and_its_side_effect_happens_once() {
    let dir = temp_dir("kill");
    let state = format!("sqlite:{}", dir.join("state.db").display());
    exec_kill_wait(&state, &state, &dir);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn killed_between_started_and_settled_the_guest_sees_an_unknown_outcome() {
    let dir = temp_dir("crash");
    let state = format!("sqlite:{}", dir.join("state.db").display());
    let side = dir.join("side.txt");
    let mut first = Host::start(&state, &side);
    let code = r#"
        let held;
        try { held = await tools.hold({ line: 'held' }); } catch (error) { held = error.message; }
        const slow = await tools.slow({ ms: 10 });
        return { held, slow };
    "#;
    let waiting = first.send(json!({ "exec": code }));
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    let run_id = waiting["runId"].as_str().expect("runId").to_owned();
    // The side-effecting call started (its effect is in the file), then the host dies.
    assert_eq!(lines(&side), vec!["held".to_owned()]);
    first.kill();
    let mut second = Host::start(&state, &side);
    let done = second.send(json!({ "wait": run_id }));
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(
        done["value"]["held"],
        codemode_core::messages::OUTCOME_UNKNOWN
    );
    assert_eq!(done["value"]["slow"], json!({ "slept": 10 }));
    assert_eq!(lines(&side), vec!["held".to_owned()], "not run again");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
#[allow(clippy::print_stderr, reason = "a skipped test says why")]
fn two_hosts_share_one_postgres() {
    let Ok(url) = std::env::var("CODEMODE_TEST_POSTGRES_URL") else {
        eprintln!(
            "skipped: CODEMODE_TEST_POSTGRES_URL is not set (`cargo xtask ci` starts a Postgres and sets it)"
        );
        return;
    };
    let dir = temp_dir("postgres");
    // Two live processes this time: the first is not killed before the second waits.
    let side = dir.join("side.txt");
    let mut first = Host::start(&url, &side);
    let mut second = Host::start(&url, &side);
    let waiting = first.send(json!({ "exec": APPEND_THEN_SLOW }));
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    let run_id = waiting["runId"].as_str().expect("runId").to_owned();
    let done = second.send(json!({ "wait": run_id }));
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(lines(&side), vec!["side effect".to_owned()]);
    // The run is finished for the first host too.
    let gone = first.send(json!({ "wait": run_id }));
    assert_eq!(gone["status"], "failed", "{gone:#}");
    first.kill();
    second.kill();
    // And a kill across hosts on Postgres, with a side file of its own.
    let kill_dir = dir.join("kill");
    std::fs::create_dir_all(&kill_dir).expect("temp dir");
    exec_kill_wait(&url, &url, &kill_dir);
    let _ = std::fs::remove_dir_all(dir);
}
