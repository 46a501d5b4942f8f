//! The `codemode` command, the workspace's own host: runs one code-mode cell against an embedded demo catalog
//! (and, with `--config`, real MCP servers), prints the model-visible surface, lists the
//! virtual MCP declaration files, or serves code mode as an MCP server.
//!
//! ```text
//! codemode run [--config FILE] [--lang javascript|typescript] [--no-wait | --max-waits N] [FILE...|-]
//! codemode surface [--config FILE]
//! codemode decls [--config FILE] [PATH]
//! codemode serve [--config FILE] [--demo] [--isolation thread|process] [--http ADDR] [--auth-token-env NAME] [--max-sessions N]
//!                [--state memory|sqlite:PATH|postgres://...] [--session-key KEY] [--prebuilt-vms N] [--max-memory BYTES]
//!                [--metrics ADDR [--metrics-public]]
//! ```
//! `run` answers every `waiting` result with an automatic `wait` call, at most `--max-waits`
//! times (default [`DEFAULT_MAX_WAITS`]), so a cell that yields forever cannot keep the command
//! busy; `--no-wait` is `--max-waits 0`.
//!
//! `serve` speaks MCP on stdin/stdout (the default, what desktop clients start) or, with
//! `--http ADDR`, streamable HTTP at `http://ADDR/mcp`. Its tools are exactly `exec` and `wait`
//! (as printed by `surface`); the configured MCP servers, and with `--demo` the demo catalog,
//! hide behind them.
//!
//! With `tools.codeMode.isolation: "process"` (or `serve --isolation process`) every VM runs
//! in a worker process, and the command is its own worker: it starts itself as
//! `codemode worker`, a hidden subcommand that serves the worker protocol on stdin/stdout and
//! nothing else (so one installed binary suffices). `CODEMODE_WORKER` names another worker
//! binary instead.
//!
//! Exit status: 0 completed, 1 failed, 2 usage or config error, 3 still waiting (with
//! `--no-wait`, or after `--max-waits` automatic waits). Every subcommand takes `--help` and
//! `--version`.
#![forbid(unsafe_code)]
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on stdout/stderr"
)]

mod demo;
mod tool_host;

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use codemode_core::{
    Activation, AgentRunContext, CodeModeResult, CodeModeSession, IsolationMode, Language,
};
use codemode_mcp_server::{CodeModeServer, DEFAULT_MAX_SESSIONS, HttpOptions};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::tool_host::ToolHost;

/// What `--help` shows after the options of every command.
const EXIT_STATUS_HELP: &str = "Exit status: 0 completed, 1 failed, 2 usage or config error, \
3 still waiting (with --no-wait, or after --max-waits automatic waits)";

/// Exit status of a usage or config error (clap's own usage errors exit with 2 too).
const EXIT_USAGE: u8 = 2;
/// Exit status of a run left waiting: with `--no-wait`, or after `--max-waits` automatic waits.
const EXIT_WAITING: u8 = 3;

/// Default of `--max-waits`: how many automatic `wait` calls `run` makes before it gives up on a
/// run that keeps answering `waiting` (e.g. `for (;;) await yield_control()`). A `wait` on slow
/// tools lasts up to the config's `timeoutMs` (10 s by default), so this also bounds how long
/// the command follows a run that is only slow: about 100 × `timeoutMs`.
const DEFAULT_MAX_WAITS: u32 = 100;

/// Code mode from the command line: run cells, inspect the surface, serve it over MCP.
#[derive(Debug, Parser)]
#[command(name = "codemode", version, propagate_version = true, after_help = EXIT_STATUS_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once per process; `serve` simply has the most flags"
)]
enum Command {
    /// Run one cell (JavaScript or TypeScript) and print each result as a JSON line.
    #[command(after_help = EXIT_STATUS_HELP)]
    Run(RunArgs),
    /// Print the model-visible tools (exec, wait and direct-only tools) as JSON.
    #[command(after_help = EXIT_STATUS_HELP)]
    Surface {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// List the virtual MCP declaration files, or print one.
    #[command(after_help = EXIT_STATUS_HELP)]
    Decls {
        #[command(flatten)]
        config: ConfigArg,
        /// A declaration file to print (e.g. mcp/everything.d.ts).
        path: Option<String>,
    },
    /// Serve code mode as an MCP server: exec and wait, with the configured MCP servers behind.
    #[command(after_help = EXIT_STATUS_HELP)]
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
struct ConfigArg {
    /// A JSON file with `tools.codeMode` and `mcpServers`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// The language of the program (default: from the file extension, else javascript).
    #[arg(long = "lang", value_name = "LANG", value_parser = parse_language)]
    language: Option<Language>,
    /// Stop at the first `waiting` result (same as --max-waits 0).
    #[arg(long, conflicts_with = "max_waits")]
    no_wait: bool,
    /// Answer `waiting` with at most N automatic `wait` calls.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_WAITS)]
    max_waits: u32,
    /// The program files, run as successive cells of one session (each followed by its
    /// `wait`s); `-` or nothing reads one program from stdin. The command stops at the first
    /// cell that fails or is left waiting.
    #[arg(value_name = "FILE|-")]
    files: Vec<String>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Add the embedded demo catalog (core tools and the `Issues` namespace).
    #[arg(long)]
    demo: bool,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8787).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Require `Authorization: Bearer <token>` on HTTP, the token read from this variable.
    #[arg(long, value_name = "NAME", requires = "http")]
    auth_token_env: Option<String>,
    /// At most N client sessions at a time.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS as u32,
          value_parser = clap::value_parser!(u32).range(1..=65_536))]
    max_sessions: u32,
    /// Also accept this browser Origin on HTTP (loopback origins always pass), e.g. `https://app.example:443`.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// Also accept this Host header on HTTP (needed when ADDR is not loopback).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_hosts: Vec<String>,
    /// Where each run's VM lives (overrides `tools.codeMode.isolation`): `thread` in this
    /// process, `process` in a worker process (this command, started as `codemode worker`).
    #[arg(long, value_name = "MODE", value_parser = parse_isolation)]
    isolation: Option<IsolationMode>,
    /// Where suspended runs are journaled: `memory` (this process only), `sqlite:PATH` (a local
    /// file) or `postgres://USER@HOST/DB` (shared by several servers). The store holds tool
    /// results. Over HTTP it also keeps each session's handshake, so a client returning with
    /// its Mcp-Session-Id to a restarted server goes on, its runs with it.
    #[arg(long, value_name = "STORE", default_value = "memory")]
    state: String,
    /// Give the stdio client session this stable identity, so that its suspended runs survive
    /// a restart of the server (with a --state other than memory).
    #[arg(long, value_name = "KEY", conflicts_with = "http")]
    session_key: Option<String>,
    /// Largest HTTP request body, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = codemode_mcp_server::DEFAULT_MAX_BODY_BYTES, requires = "http")]
    max_body_bytes: usize,
    /// Keep N sandbox VMs built ahead of time, so an `exec` does not wait for one (each holds a
    /// few hundred KiB; a VM serves one run and is never reused; 0 turns it off).
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(0..=64))]
    prebuilt_vms: u32,
    /// The host memory budget, in bytes: every running `exec` and `wait` reserves its VM's
    /// memory limit against it, and a call that finds no room waits its turn (fairly across
    /// sessions, at most its timeout), then fails as runtime_unavailable. Default: half the
    /// machine's memory.
    #[arg(long, value_name = "BYTES")]
    max_memory: Option<u64>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464). Off by default;
    /// loopback only unless --metrics-public. No token: see docs/security.md.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Let --metrics bind a non-loopback address: whoever reaches the port reads the counts.
    #[arg(long, requires = "metrics")]
    metrics_public: bool,
    /// Export the spans of every `exec`, `wait`, nested call, VM build, journal commit and
    /// replay to this OpenTelemetry collector, as OTLP over HTTP/protobuf
    /// (`http://HOST:4318`; `/v1/traces` is appended unless given). A client's
    /// `_meta.traceparent` is continued. Off by default; export never holds up a run (a full
    /// queue drops spans).
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
}

fn parse_language(name: &str) -> Result<Language, String> {
    Language::parse(name).ok_or_else(|| "takes javascript or typescript".to_owned())
}

fn parse_isolation(name: &str) -> Result<IsolationMode, String> {
    IsolationMode::parse(name).ok_or_else(|| "takes thread or process".to_owned())
}

/// The hidden subcommand that makes this command a worker process (see the crate docs).
pub(crate) const WORKER_SUBCOMMAND: &str = "worker";

fn main() -> ExitCode {
    // A worker serves the worker protocol and nothing else: no argument parsing beyond this, no
    // async runtime, no logging (its stdout is the protocol, its stderr is closed).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == WORKER_SUBCOMMAND)
    {
        return codemode_core::worker::serve_worker();
    }
    let cli = Cli::parse();
    let otlp_endpoint = match &cli.command {
        Command::Serve(args) => args.otlp_endpoint.as_deref(),
        _ => None,
    };
    let otlp = match init_tracing(otlp_endpoint) {
        Ok(otlp) => otlp,
        Err(error) => {
            eprintln!("codemode: --otlp-endpoint: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("codemode: cannot start the async runtime: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let code = match runtime.block_on(run(cli.command)) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("codemode: {error:#}");
            ExitCode::from(EXIT_USAGE)
        }
    };
    // The spans still queued go out before the process ends (bounded by the export timeout).
    if let Some(otlp) = otlp
        && let Err(error) = otlp.shutdown()
    {
        tracing::warn!(target: "codemode", %error, "the last spans were not exported");
    }
    code
}

/// `RUST_LOG=codemode=debug`, or `OPENCLAW_DEBUG_CODE_MODE=1` as in the seed, logs to stderr;
/// with `otlp_endpoint`, the `codemode` spans are also exported there (whatever `RUST_LOG`
/// says), through the returned exporter.
fn init_tracing(
    otlp_endpoint: Option<&str>,
) -> Result<Option<codemode_telemetry::Otlp>, codemode_telemetry::TelemetryError> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = match std::env::var("RUST_LOG") {
        Ok(filter) => Some(filter),
        Err(_) if std::env::var("OPENCLAW_DEBUG_CODE_MODE").is_ok_and(|v| v == "1") => {
            Some("codemode=debug".into())
        }
        Err(_) => None,
    };
    let otlp = otlp_endpoint
        .map(|endpoint| {
            codemode_telemetry::Otlp::new(&codemode_telemetry::OtlpConfig::new(endpoint))
        })
        .transpose()?;
    if filter.is_none() && otlp.is_none() {
        return Ok(None);
    }
    let logs = filter.map(|filter| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(tracing_subscriber::EnvFilter::new(filter))
    });
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(otlp.as_ref().map(codemode_telemetry::Otlp::layer))
        .try_init();
    Ok(otlp)
}

async fn run(command: Command) -> anyhow::Result<u8> {
    if let Command::Serve(args) = command {
        return serve(args).await;
    }
    let config = match &command {
        Command::Run(args) => args.config.config.as_deref(),
        Command::Surface { config } | Command::Decls { config, .. } => config.config.as_deref(),
        Command::Serve(_) => None,
    };
    // One-shot commands run one cell at a time: a pool would only build VMs nobody takes.
    let host = ToolHost::start(config, true, None, 0, None, None).await?;
    let code_mode = host.code_mode();
    let activation = code_mode
        .activate(host.activation_request(AgentRunContext {
            agent_id: Some("codemode-cli".into()),
            agent_run_id: Some("cli-run".into()),
            session_id: Some("cli-session".into()),
            ..AgentRunContext::default()
        }))
        .context("code mode activation failed")?;
    let code = match &command {
        Command::Surface { .. } => surface(&activation),
        Command::Decls { path, .. } => decls(&activation, path.as_deref())?,
        Command::Run(args) => run_cell(&activation, args).await?,
        Command::Serve(_) => 0,
    };
    drop(activation);
    host.shutdown().await;
    Ok(code)
}

async fn serve(args: ServeArgs) -> anyhow::Result<u8> {
    let token = match &args.auth_token_env {
        None => None,
        Some(name) => match std::env::var(name) {
            Ok(token) if !token.is_empty() => Some(token),
            _ => bail!("--auth-token-env {name}: the variable is not set or empty"),
        },
    };
    // `memory` (the default) keeps suspended runs in this process only, with no journal.
    let journal = match args.state.as_str() {
        "memory" => None,
        address => Some(
            codemode_journal::open(address)
                .await
                .map_err(|error| anyhow::anyhow!("--state: {error}"))?,
        ),
    };
    // Over HTTP, sessions are kept beside the journals, so a client returning with its
    // `Mcp-Session-Id` to a restarted server goes on.
    let session_store = journal.clone();
    let host = ToolHost::start(
        args.config.config.as_deref(),
        args.demo,
        args.isolation,
        args.prebuilt_vms as usize,
        journal,
        args.max_memory,
    )
    .await?;
    if host.tool_count() == 0 {
        bail!("nothing to serve: configure mcpServers in --config, or pass --demo");
    }
    if !host.code_mode().config().is_enabled() {
        bail!(
            "code mode is disabled in this config (tools.codeMode.enabled), so there is nothing to serve"
        );
    }
    let mut server = CodeModeServer::new(host.code_mode(), host.tool_source())
        .max_sessions(args.max_sessions as usize)
        .server_info("codemode", env!("CARGO_PKG_VERSION"));
    if let Some(key) = args.session_key {
        server = server.session_key(key);
    }
    let metrics_stop = CancellationToken::new();
    let metrics = match args.metrics {
        Some(addr) => {
            Some(serve_metrics(&server, addr, args.metrics_public, metrics_stop.clone()).await?)
        }
        None => None,
    };
    let result = match args.http {
        None => server.serve_stdio().await.map_err(anyhow::Error::from),
        Some(addr) => {
            let mut options = HttpOptions::default()
                .allow_origins(args.allow_origins)
                .max_body_bytes(args.max_body_bytes);
            if !args.allow_hosts.is_empty() {
                let mut hosts = options.allowed_hosts.clone();
                hosts.extend(args.allow_hosts);
                options = options.allowed_hosts(hosts);
            }
            if let Some(store) = session_store {
                options = options
                    .restorable_sessions(store, codemode_mcp_server::DEFAULT_SESSION_RETENTION);
            }
            if let Some(token) = token {
                options = options.auth_token(token);
            } else if !addr.ip().is_loopback() {
                eprintln!(
                    "codemode: warning: serving {addr} beyond loopback without --auth-token-env"
                );
            }
            let shutdown = CancellationToken::new();
            stop_on_interrupt(shutdown.clone())?;
            server
                .serve_http(addr, options, shutdown, |bound| {
                    eprintln!("codemode: serving MCP at http://{bound}/mcp");
                })
                .await
                .map_err(anyhow::Error::from)
        }
    };
    metrics_stop.cancel();
    if let Some(metrics) = metrics {
        let _ = metrics.await;
    }
    drop(server);
    host.shutdown().await;
    result.map(|()| 0)
}

/// Starts the metrics endpoint (`--metrics`) and returns once it is bound (saying where on
/// stderr), or with why it could not be.
async fn serve_metrics(
    server: &CodeModeServer,
    addr: SocketAddr,
    public: bool,
    stop: CancellationToken,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let options = codemode_mcp_server::MetricsOptions::default().allow_non_loopback(public);
    let server = server.clone();
    let task = tokio::spawn(async move {
        let served = server
            .serve_metrics(addr, options, stop, move |bound| {
                let _ = bound_tx.send(bound);
            })
            .await;
        if let Err(error) = served {
            eprintln!("codemode: --metrics: {error}");
        }
    });
    match bound_rx.await {
        Ok(bound) => {
            eprintln!("codemode: serving metrics at http://{bound}/metrics");
            Ok(task)
        }
        Err(_) => {
            let _ = task.await;
            bail!("--metrics {addr}: the metrics endpoint could not start (see above)")
        }
    }
}

/// Cancels `shutdown` on Ctrl-C (SIGINT). The handler is in place when this returns, so an
/// interrupt that arrives once the server has said it is serving always stops it cleanly.
fn stop_on_interrupt(shutdown: CancellationToken) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt =
            signal(SignalKind::interrupt()).context("installing the Ctrl-C handler")?;
        tokio::spawn(async move {
            interrupt.recv().await;
            shutdown.cancel();
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        shutdown.cancel();
    });
    Ok(())
}

fn surface(activation: &Activation) -> u8 {
    let (enabled, tools) = match activation {
        Activation::Active(session) => (true, serde_json::to_value(session.model_tools()).unwrap_or(Value::Null)),
        Activation::Unchanged(tools) => (
            false,
            Value::Array(
                tools
                    .iter()
                    .map(|t| json!({ "name": t.name, "description": t.description, "parameters": t.parameters }))
                    .collect(),
            ),
        ),
    };
    print_json(&json!({ "codeMode": enabled, "tools": tools }));
    0
}

fn decls(activation: &Activation, path: Option<&str>) -> anyhow::Result<u8> {
    let declarations = match activation {
        Activation::Active(session) => session.mcp_declarations(),
        Activation::Unchanged(_) => bail!("code mode is disabled in this config"),
    };
    use codemode_core::guest_declarations as guest;
    let guest_row = json!({ "path": guest::PATH, "description": guest::DESCRIPTION, "bytes": guest::TEXT.len() });
    match (declarations, path) {
        (_, Some(path)) if path == guest::PATH => println!("{}", guest::TEXT),
        (None, None) => print_json(&json!([guest_row])),
        (None, Some(path)) => bail!("no MCP servers are configured, so there is no `{path}`"),
        (Some(declarations), None) => {
            let mut rows = serde_json::to_value(declarations.list(None)?)?;
            if let Value::Array(rows) = &mut rows {
                rows.push(guest_row);
            }
            print_json(&rows);
        }
        (Some(declarations), Some(path)) => println!("{}", declarations.read(path)?),
    }
    Ok(0)
}

async fn run_cell(activation: &Activation, args: &RunArgs) -> anyhow::Result<u8> {
    let Activation::Active(session) = activation else {
        print_json(&CodeModeResult::disabled().to_json());
        return Ok(1);
    };
    let operands: Vec<Option<&str>> = if args.files.is_empty() {
        vec![None]
    } else {
        args.files.iter().map(|file| Some(file.as_str())).collect()
    };
    // Read every cell first: a missing file is a usage error before anything runs.
    let mut cells = Vec::with_capacity(operands.len());
    for operand in operands {
        cells.push(read_source(operand)?);
    }
    for (index, (source, file)) in cells.into_iter().enumerate() {
        let language = args
            .language
            .unwrap_or_else(|| language_of(file.as_deref()));
        let call_id = format!("call_{}", index + 1);
        let code = run_one_cell(session, &call_id, source, language, args).await;
        if code != 0 {
            return Ok(code);
        }
    }
    Ok(0)
}

/// Runs one cell and answers its `waiting` results with `wait`, printing each result.
async fn run_one_cell(
    session: &CodeModeSession,
    call_id: &str,
    source: String,
    language: Language,
    args: &RunArgs,
) -> u8 {
    let max_waits = if args.no_wait { 0 } else { args.max_waits };
    let input = json!({ "code": source, "language": language.as_str() });
    let mut result = session.exec(call_id, &input).await;
    let mut waits = 0;
    loop {
        print_json(&result.to_json());
        match &result {
            CodeModeResult::Completed { .. } => return 0,
            CodeModeResult::Failed { .. } => return 1,
            CodeModeResult::Waiting { .. } if waits >= max_waits => {
                if max_waits > 0 {
                    eprintln!(
                        "codemode: the run is still waiting after {waits} automatic waits (--max-waits {max_waits})"
                    );
                }
                return EXIT_WAITING;
            }
            CodeModeResult::Waiting { run_id, .. } => {
                waits += 1;
                let input = json!({ "runId": run_id });
                result = session.wait(&input).await;
            }
        }
    }
}

fn read_source(operand: Option<&str>) -> anyhow::Result<(String, Option<PathBuf>)> {
    match operand {
        None | Some("-") => {
            let mut source = String::new();
            std::io::stdin()
                .read_to_string(&mut source)
                .context("reading the program from stdin")?;
            Ok((source, None))
        }
        Some(file) => {
            let source =
                std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
            Ok((source, Some(PathBuf::from(file))))
        }
    }
}

fn language_of(file: Option<&Path>) -> Language {
    match file.and_then(Path::extension).and_then(|e| e.to_str()) {
        Some("ts" | "mts" | "cts") => Language::Typescript,
        _ => Language::Javascript,
    }
}

fn print_json(value: &Value) {
    println!(
        "{}",
        serde_json::to_string(value).unwrap_or_else(|_| "null".into())
    );
}
