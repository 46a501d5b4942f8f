//! The built `codemode` binary on the examples and on bad input: JSON lines and exit codes.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// `codemode serve --otlp-endpoint`: spans exported to a receiver in this test (issue 31).
mod otel;
/// `codemode serve` watched from outside: progress and `--metrics` (issue 31).
mod serve_observe;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the binary with `args`. With `stdin: None` the child's stdin is empty (`/dev/null`);
/// with `Some(text)` a thread writes `text` into a pipe while the child runs. A child that exits
/// without reading its stdin (a usage error) closes the pipe first: that `BrokenPipe` is expected,
/// so the outcome never depends on who wins that race.
fn codemode(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(args)
        .current_dir(root())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the codemode binary starts");
    let writer = child.stdin.take().map(|mut pipe| {
        let text = stdin.unwrap_or_default().to_owned();
        // Dropping `pipe` at the end of the thread closes the child's stdin.
        std::thread::spawn(move || pipe.write_all(text.as_bytes()))
    });
    let output = child.wait_with_output().expect("codemode finishes");
    if let Some(writer) = writer {
        match writer.join().expect("the stdin writer does not panic") {
            Ok(()) => {}
            Err(error) if error.kind() == ErrorKind::BrokenPipe => {}
            Err(error) => panic!("writing the child's stdin: {error}"),
        }
    }
    output
}

fn lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

fn check(args: &[&str], stdin: Option<&str>, exit: i32) -> Vec<Value> {
    let output = codemode(args, stdin);
    assert_eq!(
        output.status.code(),
        Some(exit),
        "{args:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    lines(&output)
}

#[test]
fn search_describe_call_example() {
    let results = check(&["run", "examples/search-describe-call.js"], None, 0);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["status"], "completed");
    assert_eq!(results[0]["value"]["viaCall"], json!({ "sum": 5 }));
    assert_eq!(results[0]["value"]["viaName"], json!({ "sum": 42 }));
    assert_eq!(
        results[0]["telemetry"]["visibleTools"],
        json!(["exec", "wait"])
    );
}

#[test]
fn parallel_example() {
    let results = check(&["run", "examples/parallel.js"], None, 0);
    assert_eq!(results[0]["value"], 20);
    assert_eq!(results[0]["output"][0]["type"], "json");
}

#[test]
fn issues_typescript_example_uses_the_namespace() {
    let results = check(&["run", "examples/issues.ts"], None, 0);
    assert_eq!(
        results[0]["value"],
        json!({ "closed": 1, "stillOpen": [1] }),
        "{:#}",
        results[0]
    );
}

#[test]
fn caught_failure_example() {
    let results = check(&["run", "examples/catch-failure.js"], None, 0);
    assert_eq!(results[0]["value"], json!({ "caught": "disk on fire" }));
    assert_eq!(
        results[0]["output"],
        json!([{ "type": "text", "text": "calling the fail tool" }])
    );
}

/// A config in a directory of its own (tests run in parallel in one process), removed on drop.
struct TempConfig {
    dir: PathBuf,
    file: PathBuf,
}

impl TempConfig {
    fn new(test: &str, text: &str) -> TempConfig {
        let dir =
            std::env::temp_dir().join(format!("codemode-cli-test-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.json");
        std::fs::write(&file, text).unwrap();
        TempConfig { dir, file }
    }

    fn path(&self) -> &str {
        self.file.to_str().unwrap()
    }
}

impl Drop for TempConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A budget for one `exec`/`wait` that a loaded 2-core CI machine cannot overrun while
/// starting the cell (`examples/fast-timeout.json`'s 300 ms could be), with tool sleeps at least
/// three seconds beyond it, so `waiting` comes first by construction.
const WAITING_CONFIG: &str =
    r#"{ "tools": { "codeMode": { "enabled": true, "timeoutMs": 1000 } } }"#;

#[test]
fn waiting_then_wait_until_completed() {
    let config = TempConfig::new("waiting", WAITING_CONFIG);
    // Legs last 1 s and follow each other, so they end near 1, 2, 3 s: the answer at 2.5 s
    // comes half a leg from either edge. (At a whole number of seconds it would race the end of
    // a leg, and a guest resumed just before its leg's deadline can run past it.)
    let program =
        "text('start'); const r = await tools.sleep({ ms: 2500 }); text('resumed'); return r";
    let results = check(&["run", "--config", config.path(), "-"], Some(program), 0);
    assert!(results.len() >= 2, "{results:?}");
    assert_eq!(results[0]["status"], "waiting");
    assert_eq!(results[0]["reason"], "pending_tools");
    let last = results.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(last["value"], json!({ "slept": 2500 }));
    assert_eq!(
        last["output"],
        json!([{ "type": "text", "text": "resumed" }])
    );
}

#[test]
fn no_wait_exits_3_with_the_waiting_result() {
    let config = TempConfig::new("no-wait", WAITING_CONFIG);
    let results = check(
        &["run", "--no-wait", "--config", config.path(), "-"],
        Some("await tools.sleep({ ms: 10000 })"),
        3,
    );
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["status"], "waiting");
    assert!(results[0]["runId"].as_str().unwrap().starts_with("cm_"));
}

#[test]
fn max_waits_stops_a_cell_that_yields_forever() {
    let output = codemode(
        &["run", "--max-waits", "3", "-"],
        Some("for (;;) await yield_control();"),
    );
    assert_eq!(
        output.status.code(),
        Some(3),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = lines(&output);
    // The `exec` result, then one result per automatic `wait`: exactly 3 waits.
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(
        results.iter().all(|r| r["status"] == "waiting"),
        "{results:?}"
    );
    let run_id = &results[0]["runId"];
    assert!(results.iter().all(|r| &r["runId"] == run_id), "one run");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("3 automatic waits"),
        "the reason is on stderr"
    );
    // `--max-waits 0` is `--no-wait`: the `exec` result only.
    let results = check(
        &["run", "--max-waits", "0", "-"],
        Some("for (;;) await yield_control();"),
        3,
    );
    assert_eq!(results.len(), 1, "{results:?}");
    // Under the limit, the run completes as before.
    let results = check(
        &["run", "--max-waits", "3", "-"],
        Some("await yield_control(); await yield_control(); return 'done'"),
        0,
    );
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[2]["value"], "done");
}

#[test]
fn failures_exit_1_with_the_stable_messages() {
    let results = check(&["run", "-"], Some("import fs from 'fs'"), 1);
    assert_eq!(results[0]["error"], "code mode module access is disabled.");
    assert_eq!(results[0]["code"], "invalid_input");
    let results = check(
        &["run", "--lang", "typescript", "-"],
        Some("const x: = 1"),
        1,
    );
    assert!(
        results[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("typescript transform failed: ")
    );
    let results = check(
        &["run", "--config", "examples/fast-timeout.json", "-"],
        Some("text('spin'); while (true) {}"),
        1,
    );
    assert_eq!(results[0]["code"], "timeout");
    assert_eq!(
        results[0]["output"],
        json!([{ "type": "text", "text": "spin" }])
    );
    let results = check(&["run", "-"], Some("ls -la"), 1);
    assert_eq!(results[0]["status"], "failed");
    let results = check(&["run", "-"], Some(""), 1);
    assert_eq!(
        results[0]["error"],
        "code or command must be a non-empty string."
    );
}

#[test]
fn help_and_version_on_every_command() {
    for command in [
        None,
        Some("run"),
        Some("surface"),
        Some("decls"),
        Some("serve"),
    ] {
        let mut args: Vec<&str> = command.into_iter().collect();
        args.push("--help");
        let output = codemode(&args, None);
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(help.contains("Usage: codemode"), "{args:?}: {help}");
        assert!(
            help.contains("Exit status: 0 completed"),
            "{args:?}: {help}"
        );
        args.pop();
        args.push("--version");
        let output = codemode(&args, None);
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains(env!("CARGO_PKG_VERSION")),
            "{args:?}"
        );
    }
    let serve = codemode(&["serve", "--help"], None);
    let help = String::from_utf8_lossy(&serve.stdout);
    for option in [
        "--config",
        "--http",
        "--demo",
        "--auth-token-env",
        "--max-sessions",
    ] {
        assert!(help.contains(option), "serve --help names {option}");
    }
}

#[test]
fn serve_with_nothing_to_serve_is_a_usage_error() {
    let output = codemode(&["serve"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--demo"));
}

#[test]
fn usage_and_config_errors_exit_2() {
    for args in [
        vec!["frobnicate"],
        vec![],
        vec!["run", "--lang", "bash", "-"],
        vec!["run", "--bogus"],
        vec!["run", "missing-file.js"],
        vec!["run", "--max-waits", "x", "-"],
        vec!["run", "--max-waits", "-1", "-"],
        vec!["run", "--max-waits"],
        vec!["surface", "--max-waits", "3"],
        vec!["run", "--no-wait", "--max-waits", "3", "-"],
        vec!["serve", "--http", "not-an-address"],
        vec!["serve", "--max-sessions", "0"],
        vec!["serve", "--auth-token-env", "X"],
    ] {
        let output = codemode(&args, Some("return 1"));
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            !output.stderr.is_empty(),
            "a message on stderr for {args:?}"
        );
    }
    let dir = std::env::temp_dir().join(format!("codemode-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text, needle) in [
        ("bad-json.json", "{", "not valid JSON"),
        (
            "bad-field.json",
            r#"{"tools":{"codeMode":{"enabled":true,"timeoutMs":-1}}}"#,
            "timeoutMs",
        ),
        (
            "unknown.json",
            r#"{"tools":{"codeMode":{"enabled":true,"bogus":1}}}"#,
            "bogus",
        ),
        ("top.json", r#"{"extra":1}"#, "extra"),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let output = codemode(
            &["run", "--config", file.to_str().unwrap(), "-"],
            Some("return 1"),
        );
        assert_eq!(output.status.code(), Some(2), "{name}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{name}: {stderr}");
    }
    let disabled = dir.join("disabled.json");
    std::fs::write(&disabled, r#"{"tools":{"codeMode":{"timeoutMs":500}}}"#).unwrap();
    let results = check(
        &["run", "--config", disabled.to_str().unwrap(), "-"],
        Some("return 1"),
        1,
    );
    assert_eq!(results[0]["error"], "code mode is disabled.");
    let surface = check(
        &["surface", "--config", disabled.to_str().unwrap()],
        None,
        0,
    );
    assert_eq!(surface[0]["codeMode"], false);
    assert_eq!(
        surface[0]["tools"].as_array().unwrap().len(),
        6,
        "the demo tools unchanged"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn surface_shows_exec_and_wait() {
    let surface = check(&["surface"], None, 0);
    let tools = surface[0]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["exec", "wait"]);
    assert!(
        tools[0]["description"]
            .as_str()
            .unwrap()
            .contains("Issues.list"),
        "the namespace prompt is shown"
    );
    assert_eq!(
        tools[0]["parameters"]["properties"]["language"]["enum"],
        json!(["javascript", "typescript"])
    );
}

#[test]
fn decls_without_servers_lists_only_the_guest_runtime() {
    let rows = check(&["decls"], None, 0);
    assert_eq!(rows[0].as_array().map(Vec::len), Some(1));
    assert_eq!(rows[0][0]["path"], "guest/globals.d.ts");
    let output = codemode(&["decls", "guest/globals.d.ts"], None);
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains("declare const results"));
    let output = codemode(&["decls", "mcp/none.d.ts"], None);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn readme_mcp_example_against_real_servers() {
    // Needs the pinned npm servers (`cargo xtask npm`, done by `cargo xtask ci`).
    let results = check(
        &[
            "run",
            "--config",
            "examples/mcp.json",
            "examples/mcp-everything.js",
        ],
        None,
        0,
    );
    assert_eq!(
        results[0]["value"],
        json!({ "echoed": "Echo: hello from code mode", "sum": 3, "hasThisFile": true }),
        "{:#}",
        results[0]
    );
    assert!(
        results[0]["output"][0]["text"]
            .as_str()
            .unwrap()
            .contains("mcp/everything.d.ts")
    );
    let listing = check(&["decls", "--config", "examples/mcp.json"], None, 0);
    let paths: Vec<&str> = listing[0]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "mcp/index.d.ts",
            "mcp/everything.d.ts",
            "mcp/filesystem.d.ts",
            "guest/globals.d.ts"
        ]
    );
    let output = codemode(
        &[
            "decls",
            "--config",
            "examples/mcp.json",
            "mcp/everything.d.ts",
        ],
        None,
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("declare namespace"),
        "a real declaration file"
    );
}

#[test]
fn serve_over_stdio_answers_and_exits_0_when_the_client_closes() {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "cli-test", "version": "0" } } });
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    // An upstream that does not start is reported on stderr; the server serves the rest.
    let config = TempConfig::new(
        "serve-ghost",
        r#"{ "tools": { "codeMode": true }, "mcpServers": { "ghost": { "command": "/nonexistent/mcp-server" } } }"#,
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["serve", "--demo", "--config", config.path()])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codemode serve starts");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{init}\n{initialized}\n{list}").unwrap();
    stdin.flush().unwrap();
    // Read until the tools/list answer arrives, THEN close stdin: no answer races the close.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut answers: Vec<Value> = Vec::new();
    while !answers.iter().any(|a| a["id"] == 2) {
        let mut line = String::new();
        let read = std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
        assert!(read > 0, "the server closed stdout early");
        answers.push(serde_json::from_str(&line).expect("a JSON-RPC line"));
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("MCP server unavailable: MCP server `ghost`"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "codemode");
    let surface = check(&["surface"], None, 0);
    let tools = answers[1]["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["exec", "wait"]);
    for (tool, expected) in tools
        .iter()
        .zip(surface[0]["tools"].as_array().expect("surface"))
    {
        assert_eq!(tool["description"], expected["description"]);
        assert_eq!(tool["inputSchema"], expected["parameters"]);
    }
}

/// The six steps of the serve plan with the official TypeScript SDK client
/// (`tests/mcp-servers/serve-client.mjs`), over stdio and over streamable HTTP with a token.
/// Needs node and the pinned npm packages (`cargo xtask npm`, done by `cargo xtask ci`).
#[test]
fn serve_end_to_end_with_the_typescript_sdk_client() {
    use std::io::{BufRead, BufReader};
    let root = root();
    assert!(
        root.join("tests/mcp-servers/node_modules/@modelcontextprotocol/sdk")
            .exists(),
        "run `cargo xtask npm` first (installs tests/mcp-servers)"
    );
    let surface = codemode(&["surface", "--config", "examples/mcp.json"], None);
    assert_eq!(surface.status.code(), Some(0));
    let surface_file = std::env::temp_dir().join(format!(
        "codemode-serve-surface-{}.json",
        std::process::id()
    ));
    std::fs::write(&surface_file, &surface.stdout).unwrap();
    let node = |args: &[&str], token: Option<&str>| {
        let mut command = Command::new("node");
        command
            .arg("tests/mcp-servers/serve-client.mjs")
            .args(args)
            .current_dir(&root)
            .env("EXPECTED_SURFACE", &surface_file)
            .stdin(Stdio::null());
        if let Some(token) = token {
            command.env("CODEMODE_TEST_TOKEN", token);
        }
        let output = command.output().expect("node runs");
        let steps: Vec<Value> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        assert!(
            output.status.success() && steps.len() == 6 && steps.iter().all(|s| s["ok"] == true),
            "{args:?}:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let codemode = env!("CARGO_BIN_EXE_codemode");
    node(
        &[
            "stdio",
            codemode,
            "serve",
            "--demo",
            "--config",
            "examples/mcp.json",
        ],
        None,
    );

    let mut server = Command::new(codemode)
        .args([
            "serve",
            "--demo",
            "--config",
            "examples/mcp.json",
            "--http",
            "127.0.0.1:0",
            "--auth-token-env",
            "CODEMODE_SERVE_TOKEN",
        ])
        .env("CODEMODE_SERVE_TOKEN", "e2e-token")
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codemode serve starts");
    // The server names its address on stderr once it is bound: that line is the signal.
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let mut url = None;
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(rest) = line.trim().strip_prefix("codemode: serving MCP at ") {
            url = Some(rest.to_owned());
            break;
        }
        line.clear();
    }
    let drain = std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let url = url.expect("the server reports its address");
    node(&["http", &url], Some("e2e-token"));
    // Ctrl-C: the server stops serving, shuts its MCP servers down and exits 0.
    let interrupted = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    assert_eq!(server.wait().unwrap().code(), Some(0));
    let _ = drain.join();
    let _ = std::fs::remove_file(&surface_file);
}

#[test]
fn console_and_timers_example() {
    let results = check(&["run", "examples/console-timers.js"], None, 0);
    let last = results.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(
        last["value"],
        json!({ "waited": true, "ticks": 3, "bytes": 2 })
    );
    let texts: Vec<String> = results
        .iter()
        .flat_map(|result| result["output"].as_array().cloned().unwrap_or_default())
        .filter_map(|item| item["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(texts[0], "searching for echo");
    assert!(
        texts[1].starts_with("info: found {\"id\":\"openclaw:core:echo\"}"),
        "{texts:?}"
    );
    assert_eq!(
        texts[2],
        "warn: waited at least 50 ms over 3 interval ticks"
    );
}

#[test]
fn several_files_are_successive_cells_of_one_session() {
    let results = check(
        &[
            "run",
            "examples/results-across-cells.js",
            "examples/results-next-cell.js",
        ],
        None,
        0,
    );
    let completed: Vec<&Value> = results
        .iter()
        .filter(|result| result["status"] == "completed")
        .collect();
    assert_eq!(completed.len(), 2, "{results:#?}");
    assert_eq!(completed[0]["value"]["saved"]["key"], "issues");
    assert_eq!(
        completed[1]["value"],
        json!({ "keys": ["issues"], "loaded": true })
    );
    // A missing file is a usage error before any cell runs.
    let output = codemode(&["run", "examples/parallel.js", "no/such/file.js"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(lines(&output).is_empty(), "nothing ran");
}

/// `isolation: "process"`: the same examples give the same results with every VM in a worker
/// process (this binary, started as `codemode worker`).
#[test]
fn examples_run_the_same_in_worker_processes() {
    let config = "examples/process-isolation.json";
    for (example, pointer, expected) in [
        (
            "examples/search-describe-call.js",
            "/value/viaName",
            json!({ "sum": 42 }),
        ),
        ("examples/parallel.js", "/value", json!(20)),
        ("examples/issues.ts", "/value/closed", json!(1)),
    ] {
        let thread = check(&["run", example], None, 0);
        let process = check(&["run", "--config", config, example], None, 0);
        assert_eq!(
            process[0].pointer(pointer),
            Some(&expected),
            "{example}: {:#}",
            process[0]
        );
        assert_eq!(process[0]["value"], thread[0]["value"], "{example}");
        assert_eq!(process[0]["output"], thread[0]["output"], "{example}");
    }
    // A cell stuck in a loop ends with `timeout`, its worker killed.
    let config = TempConfig::new(
        "process-timeout",
        r#"{ "tools": { "codeMode": { "enabled": true, "isolation": "process", "timeoutMs": 300 } } }"#,
    );
    let results = check(
        &["run", "--config", config.path(), "-"],
        Some("for (;;) {}"),
        1,
    );
    assert_eq!(results[0]["code"], "timeout", "{:#}", results[0]);
}

/// The hidden `worker` subcommand speaks the worker protocol: a greeting frame on stdout, then
/// exit 0 when its stdin closes.
#[test]
fn the_worker_subcommand_greets_and_exits_when_its_host_goes() {
    let output = codemode(&["worker"], None);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (length, body) = output.stdout.split_at(4);
    let length = u32::from_le_bytes(length.try_into().unwrap()) as usize;
    assert_eq!(length, body.len());
    let hello: Value = serde_json::from_slice(body).unwrap();
    // The version is the sandbox's to check (a host refuses any other): here, that one is sent.
    assert!(
        hello["Hello"]["protocol"].as_u64().is_some_and(|v| v >= 1),
        "{hello}"
    );
    assert_eq!(
        hello["Hello"]["locked_down"],
        cfg!(target_os = "linux"),
        "{hello}"
    );
}

/// `serve --isolation process` answers `exec` from a worker process.
#[test]
fn serve_with_process_isolation_answers_exec() {
    use std::io::BufRead;
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "cli-test", "version": "0" } } });
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let exec = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "exec", "arguments": { "code": "return (await tools.search('add')).length > 0 ? 6 * 7 : 0" } } });
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["serve", "--demo", "--isolation", "process"])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codemode serve starts");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{init}\n{initialized}\n{exec}").unwrap();
    stdin.flush().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut answer = Value::Null;
    while answer["id"] != 2 {
        let mut line = String::new();
        let read = stdout.read_line(&mut line).unwrap();
        assert!(read > 0, "the server closed stdout early");
        answer = serde_json::from_str(&line).expect("a JSON-RPC line");
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let result: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    assert_eq!(result["status"], "completed", "{answer:#}");
    assert_eq!(result["value"], 42, "{answer:#}");
}

/// One POST to `/mcp` over a fresh connection; returns the head and the body up to the first
/// JSON-RPC message (an SSE answer) or the end of the connection.
fn post_mcp(addr: &str, session: Option<&str>, body: &str) -> (String, String) {
    post_mcp_with(addr, session, "", body)
}

/// [`post_mcp`] with `extra` header lines (each ending in `\r\n`).
fn post_mcp_with(addr: &str, session: Option<&str>, extra: &str, body: &str) -> (String, String) {
    use std::io::Read as _;
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    // A failure bound only: a server that never answers fails the test instead of hanging it.
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .expect("read timeout");
    let session = session
        .map(|id| format!("Mcp-Session-Id: {id}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{session}{extra}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).unwrap_or(0);
        if n == 0 {
            break;
        }
        response.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&response);
        if text.contains("\"jsonrpc\"") && text.ends_with("\n\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_owned(), body.to_owned())
}

/// The peak resident memory of process `pid` (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kib * 1024
}

/// Many concurrent calls that each fill a large array in one session: the VMs running at once
/// hold at most the `--max-memory` budget, so the server's peak memory stays within the budget
/// plus a constant (64 MiB, room for the server's own buffers and allocator slack).
#[cfg(target_os = "linux")]
#[test]
fn serve_holds_concurrent_vms_within_the_memory_budget() {
    const MIB: u64 = 1024 * 1024;
    let vm_limit = 16 * MIB;
    let budget = 2 * vm_limit;
    let config = TempConfig::new(
        "memory-budget",
        &format!(
            r#"{{ "tools": {{ "codeMode": {{ "enabled": true, "memoryLimitBytes": {vm_limit}, "timeoutMs": 60000 }} }} }}"#
        ),
    );
    let mut server = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args([
            "serve",
            "--demo",
            "--config",
            config.path(),
            "--http",
            "127.0.0.1:0",
            "--prebuilt-vms",
            "0",
            "--max-memory",
            &budget.to_string(),
        ])
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codemode serve starts");
    let mut stderr = std::io::BufReader::new(server.stderr.take().unwrap());
    let mut url = None;
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() > 0 {
        if let Some(rest) = line.trim().strip_prefix("codemode: serving MCP at ") {
            url = Some(rest.to_owned());
            break;
        }
        line.clear();
    }
    let drain = std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let url = url.expect("the server reports its address");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "raw", "version": "0" } } })
    .to_string();
    let (head, body) = post_mcp(&addr, None, &initialize);
    assert!(body.contains("\"result\""), "{head}\n{body}");
    let session = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("an Mcp-Session-Id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    post_mcp(&addr, Some(&session), &initialized.to_string());
    let before = peak_rss(server.id());

    // 48 calls at once, each holding an 8 MiB array across a tool call.
    let code = "const a = new Float64Array(1048576).fill(1.5); \
                await tools.sleep({ ms: 100 }); return a.length";
    let calls: Vec<_> = (0..48)
        .map(|n| {
            let (addr, session) = (addr.clone(), session.clone());
            let call = json!({ "jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                "params": { "name": "exec", "arguments": { "code": code } } })
            .to_string();
            std::thread::spawn(move || post_mcp(&addr, Some(&session), &call).1)
        })
        .collect();
    let mut completed = 0;
    for call in calls {
        let body = call.join().expect("client thread");
        let answer: Value = body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .find_map(|text| serde_json::from_str(text.trim()).ok())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {body}"));
        let result = &answer["result"]["structuredContent"];
        match result["status"].as_str() {
            Some("completed") => {
                assert_eq!(result["value"], 1_048_576, "{result}");
                completed += 1;
            }
            // A call that found no room before its deadline.
            _ => assert_eq!(result["code"], "runtime_unavailable", "{answer}"),
        }
    }
    let grown = peak_rss(server.id()).saturating_sub(before);
    let interrupted = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    let _ = server.wait();
    let _ = drain.join();
    assert!(completed > 0, "no call completed");
    assert!(
        grown <= budget + 64 * MIB,
        "peak RSS grew by {} MiB for a budget of {} MiB",
        grown / MIB,
        budget / MIB
    );
}

/// Out of descriptors (a limit of 64), with 80 idle connections open: the server closes idle
/// unauthenticated connections to accept more, and an authenticated client is served.
#[cfg(target_os = "linux")]
#[test]
fn serve_out_of_descriptors_still_serves_an_authenticated_client() {
    let codemode = env!("CARGO_BIN_EXE_codemode");
    let mut server = Command::new("sh")
        .args([
            "-c",
            "ulimit -n 64 && exec \"$0\" serve --demo --http 127.0.0.1:0 --prebuilt-vms 0 \
             --auth-token-env CODEMODE_SERVE_TOKEN",
            codemode,
        ])
        .env("CODEMODE_SERVE_TOKEN", "fd-token")
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codemode serve starts");
    let mut stderr = std::io::BufReader::new(server.stderr.take().unwrap());
    let mut url = None;
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() > 0 {
        if let Some(rest) = line.trim().strip_prefix("codemode: serving MCP at ") {
            url = Some(rest.to_owned());
            break;
        }
        line.clear();
    }
    let drain = std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let url = url.expect("the server reports its address");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let idle: Vec<std::net::TcpStream> = (0..80)
        .map(|_| std::net::TcpStream::connect(&addr).expect("connect"))
        .collect();
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "raw", "version": "0" } } })
    .to_string();
    let (head, body) = post_mcp_with(
        &addr,
        None,
        "Authorization: Bearer fd-token\r\n",
        &initialize,
    );
    let interrupted = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    let _ = server.wait();
    let _ = drain.join();
    drop(idle);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    assert!(body.contains("\"result\""), "{body}");
}
