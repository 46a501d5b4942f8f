//! `codemode serve` watched from outside: progress notifications with the official TypeScript
//! SDK client (`tests/mcp-servers/serve-progress.mjs`) over stdio and streamable HTTP, and the
//! `--metrics` endpoint. Needs node and the pinned npm packages (`cargo xtask npm`). No test
//! waits on a timer: the server's stderr lines say when it is bound.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

const CODEMODE: &str = env!("CARGO_BIN_EXE_codemode");

/// Runs the progress steps with the SDK client; panics with its output unless all passed.
fn node_progress(args: &[&str]) {
    let output = Command::new("node")
        .arg("tests/mcp-servers/serve-progress.mjs")
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("node runs");
    let steps: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    assert!(
        output.status.success() && steps.len() == 2 && steps.iter().all(|s| s["ok"] == true),
        "{args:?}:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Starts `codemode serve` with `args` and reads its stderr until it has said where it serves
/// MCP; returns the child and every address line it printed (`what` -> URL).
fn start_serve(args: &[&str]) -> (Child, Vec<(String, String)>) {
    let mut server = Command::new(CODEMODE)
        .arg("serve")
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codemode serve starts");
    let mut stderr = BufReader::new(server.stderr.take().expect("stderr"));
    let mut said = Vec::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).expect("stderr") > 0 {
        if let Some(rest) = line.trim().strip_prefix("codemode: serving ")
            && let Some((what, url)) = rest.split_once(" at ")
        {
            said.push((what.to_owned(), url.to_owned()));
            if what == "MCP" {
                break;
            }
        }
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (server, said)
}

fn stop(mut server: Child) {
    let interrupted = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    assert_eq!(server.wait().expect("exit").code(), Some(0));
}

fn scrape(url: &str) -> String {
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .expect("a metrics URL");
    let mut stream = TcpStream::connect(authority).expect("connect");
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: {authority}\r\n\r\n").expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    answer
}

#[test]
fn serve_sends_progress_to_the_typescript_sdk_client_over_stdio_and_http() {
    assert!(
        root()
            .join("tests/mcp-servers/node_modules/@modelcontextprotocol/sdk")
            .exists(),
        "run `cargo xtask npm` first (installs tests/mcp-servers)"
    );
    node_progress(&["stdio", CODEMODE, "serve", "--demo"]);

    let (server, said) = start_serve(&[
        "--demo",
        "--http",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
    ]);
    let url = |what: &str| {
        said.iter()
            .find(|(w, _)| w == what)
            .map(|(_, url)| url.clone())
            .unwrap_or_else(|| panic!("the server says where it serves {what}: {said:?}"))
    };
    node_progress(&["http", &url("MCP")]);
    // The same server's metrics counted those calls.
    let metrics = scrape(&url("metrics"));
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    for line in [
        "codemode_calls_total{tool=\"exec\",status=\"completed\",code=\"\"} 1",
        "codemode_calls_total{tool=\"exec\",status=\"waiting\",code=\"\"} 1",
        "codemode_calls_total{tool=\"wait\",status=\"completed\",code=\"\"} 1",
        "codemode_nested_calls_total{origin=\"core\",status=\"ok\"} 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
    stop(server);
}

#[test]
fn metrics_beyond_loopback_must_be_asked_for() {
    let refused = Command::new(CODEMODE)
        .args(["serve", "--demo", "--metrics", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .expect("codemode runs");
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("--metrics-public"),
        "{stderr}"
    );
    let (server, said) = start_serve(&[
        "--demo",
        "--http",
        "127.0.0.1:0",
        "--metrics",
        "0.0.0.0:0",
        "--metrics-public",
    ]);
    assert!(
        said.iter().any(|(what, _)| what == "metrics"),
        "asked for, it serves: {said:?}"
    );
    stop(server);
}
