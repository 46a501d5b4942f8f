//! The `codemode` command (SPEC §14): runs one code-mode cell against an embedded demo catalog
//! (and, with `--config`, real MCP servers), prints the model-visible surface, or lists the
//! virtual MCP declaration files.
//!
//! ```text
//! codemode run [--config FILE] [--lang javascript|typescript] [--no-wait | --max-waits N] [FILE|-]
//! codemode surface [--config FILE]
//! codemode decls [--config FILE] [PATH]
//! ```
//! `run` answers every `waiting` result with an automatic `wait` call, at most `--max-waits`
//! times (default [`DEFAULT_MAX_WAITS`]), so a cell that yields forever cannot keep the command
//! busy; `--no-wait` is `--max-waits 0`.
//!
//! Exit status: 0 completed, 1 failed, 2 usage or config error, 3 still waiting (with
//! `--no-wait`, or after `--max-waits` automatic waits).
#![forbid(unsafe_code)]
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on stdout/stderr"
)]

mod demo;
mod host;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use codemode_core::{Activation, CodeModeResult, Language, RunContext};
use serde_json::{Value, json};

use crate::host::Host;

const USAGE: &str = "usage:
  codemode run [--config FILE] [--lang javascript|typescript] [--no-wait | --max-waits N] [FILE|-]
  codemode surface [--config FILE]
  codemode decls [--config FILE] [PATH]

options of `run`:
  --no-wait        stop at the first `waiting` result (same as --max-waits 0)
  --max-waits N    answer `waiting` with at most N automatic `wait` calls (default 100)

exit status: 0 completed, 1 failed, 2 usage or config error,
  3 still waiting (with --no-wait, or after --max-waits automatic waits)";

/// Exit status of a usage or config error.
const EXIT_USAGE: u8 = 2;
/// Exit status of a run left waiting: with `--no-wait`, or after `--max-waits` automatic waits.
const EXIT_WAITING: u8 = 3;

/// Default of `--max-waits`: how many automatic `wait` calls `run` makes before it gives up on a
/// run that keeps answering `waiting` (e.g. `for (;;) await yield_control()`). A `wait` on slow
/// tools lasts up to the config's `timeoutMs` (10 s by default), so this also bounds how long
/// the command follows a run that is only slow: about 100 × `timeoutMs`.
const DEFAULT_MAX_WAITS: u32 = 100;

/// A parsed command line.
#[derive(Debug, Default)]
struct Args {
    command: String,
    config: Option<PathBuf>,
    language: Option<Language>,
    /// Automatic `wait` calls `run` may make (`--no-wait` sets 0).
    max_waits: u32,
    operand: Option<String>,
}

fn parse_args(mut raw: impl Iterator<Item = String>) -> anyhow::Result<Args> {
    let mut args = Args {
        command: raw.next().context("missing command")?,
        max_waits: DEFAULT_MAX_WAITS,
        ..Args::default()
    };
    if matches!(args.command.as_str(), "-h" | "--help") {
        bail!("help requested");
    }
    if !matches!(args.command.as_str(), "run" | "surface" | "decls") {
        bail!("unknown command `{}`", args.command);
    }
    while let Some(arg) = raw.next() {
        match arg.as_str() {
            "--config" => args.config = Some(raw.next().context("--config needs a file")?.into()),
            "--lang" => {
                let name = raw
                    .next()
                    .context("--lang needs javascript or typescript")?;
                args.language =
                    Some(Language::parse(&name).context("--lang takes javascript or typescript")?);
            }
            "--no-wait" if args.command == "run" => args.max_waits = 0,
            "--max-waits" if args.command == "run" => {
                let count = raw.next().context("--max-waits needs a count")?;
                args.max_waits = count.parse().with_context(|| {
                    format!(
                        "--max-waits takes a whole number from 0 to {}, not `{count}`",
                        u32::MAX
                    )
                })?;
            }
            "-h" | "--help" => bail!("help requested"),
            flag if flag.starts_with("--") => bail!("unknown option `{flag}`"),
            operand if args.operand.is_none() => args.operand = Some(operand.to_owned()),
            extra => bail!("unexpected argument `{extra}`"),
        }
    }
    if args.command != "run" && args.language.is_some() {
        bail!("--lang only applies to `run`");
    }
    if args.command == "surface" && args.operand.is_some() {
        bail!("`surface` takes no operand");
    }
    Ok(args)
}

fn main() -> ExitCode {
    init_tracing();
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("codemode: {error}\n{USAGE}");
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
    match runtime.block_on(run(args)) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("codemode: {error:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// `RUST_LOG=codemode=debug`, or `OPENCLAW_DEBUG_CODE_MODE=1` as in the seed, logs to stderr.
fn init_tracing() {
    let filter = match std::env::var("RUST_LOG") {
        Ok(filter) => filter,
        Err(_) if std::env::var("OPENCLAW_DEBUG_CODE_MODE").is_ok_and(|v| v == "1") => {
            "codemode=debug".into()
        }
        Err(_) => return,
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(args: Args) -> anyhow::Result<u8> {
    let host = Host::start(args.config.as_deref()).await?;
    let code_mode = host.code_mode();
    let activation = code_mode
        .activate(host.activation_request(RunContext {
            agent_id: Some("codemode-cli".into()),
            agent_run_id: Some("cli-run".into()),
            session_id: Some("cli-session".into()),
            ..RunContext::default()
        }))
        .context("code mode activation failed")?;
    let code = match args.command.as_str() {
        "surface" => surface(&activation),
        "decls" => decls(&activation, args.operand.as_deref())?,
        _ => run_cell(&activation, &args).await?,
    };
    drop(activation);
    host.shutdown().await;
    Ok(code)
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
    match (declarations, path) {
        (None, None) => print_json(&json!([])),
        (None, Some(path)) => bail!("no MCP servers are configured, so there is no `{path}`"),
        (Some(declarations), None) => print_json(&serde_json::to_value(declarations.list(None)?)?),
        (Some(declarations), Some(path)) => println!("{}", declarations.read(path)?),
    }
    Ok(0)
}

async fn run_cell(activation: &Activation, args: &Args) -> anyhow::Result<u8> {
    let (source, file) = read_source(args.operand.as_deref())?;
    let language = args
        .language
        .unwrap_or_else(|| language_of(file.as_deref()));
    let Activation::Active(session) = activation else {
        print_json(&CodeModeResult::disabled().to_json());
        return Ok(1);
    };
    let input = json!({ "code": source, "language": language.as_str() });
    let mut result = session.exec("call_1", &input).await;
    let mut waits = 0;
    loop {
        print_json(&result.to_json());
        match &result {
            CodeModeResult::Completed { .. } => return Ok(0),
            CodeModeResult::Failed { .. } => return Ok(1),
            CodeModeResult::Waiting { .. } if waits >= args.max_waits => {
                if args.max_waits > 0 {
                    eprintln!(
                        "codemode: the run is still waiting after {waits} automatic waits (--max-waits {})",
                        args.max_waits
                    );
                }
                return Ok(EXIT_WAITING);
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
