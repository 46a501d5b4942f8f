//! A host process for the durable-run tests (`tests/e2e.rs`, `durable` module): code mode with
//! a journal store, reading one JSON command a line on stdin and printing one result a line.
//!
//! ```text
//! codemode-durable-host STATE SIDE_FILE
//! {"exec": "<code>"}     -> the exec result
//! {"wait": "<runId>"}    -> the wait result
//! ```
//! Tools: `append` (side-effecting: appends `line` to SIDE_FILE), `slow` (read-only: sleeps
//! `ms`), `hold` (side-effecting: appends `line`, then never answers).
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, reason = "a test host answers on stdout")]

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::{
    Activation, ActivationRequest, AgentRunContext, CodeMode, CodeModeConfig, ToolCallContext,
    ToolError, ToolExecutor,
};
use serde_json::{Value, json};

struct Tools {
    side_file: std::path::PathBuf,
}

impl Tools {
    fn append(&self, line: &str) -> Result<(), ToolError> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.side_file)
            .map_err(|error| ToolError::new(error.to_string()))?;
        writeln!(file, "{line}").map_err(|error| ToolError::new(error.to_string()))?;
        file.sync_all()
            .map_err(|error| ToolError::new(error.to_string()))
    }
}

#[async_trait]
impl ToolExecutor for Tools {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        _context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        let line = input["line"].as_str().unwrap_or_default().to_owned();
        match catalog_id {
            "openclaw:core:append" => {
                self.append(&line)?;
                Ok(json!({ "appended": line }))
            }
            "openclaw:core:slow" => {
                let ms = input["ms"].as_u64().unwrap_or(1000);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(json!({ "slept": ms }))
            }
            "openclaw:core:hold" => {
                self.append(&line)?;
                std::future::pending().await
            }
            other => Err(ToolError::new(format!("no such tool {other}"))),
        }
    }
}

fn tool(name: &str, read_only: bool) -> ToolDescriptor {
    ToolDescriptor {
        origin: ToolOrigin::Core,
        name: name.into(),
        label: None,
        description: format!("The {name} tool."),
        parameters: Some(json!({ "type": "object" })),
        direct_only: false,
        read_only,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (Some(state), Some(side_file)) = (args.next(), args.next()) else {
        return Err("usage: codemode-durable-host STATE SIDE_FILE".into());
    };
    let store = codemode_journal::open(&state)
        .await
        .map_err(|error| error.to_string())?;
    // 1 s legs: the first leg ends at its deadline with `slow` pending, and must reach `slow`
    // before it (a side-file sync and journal commits, on a machine busy with other tests).
    let config = CodeModeConfig::enabled()
        .timeout(std::time::Duration::from_secs(1))
        .build()
        .map_err(|error| error.to_string())?;
    let code_mode = CodeMode::builder(
        config,
        Arc::new(Tools {
            side_file: side_file.into(),
        }),
    )
    .journal(store)
    .build();
    let run = AgentRunContext {
        agent_run_id: Some("agent-run".into()),
        session_id: Some("session".into()),
        session_key: Some("key".into()),
        ..AgentRunContext::default()
    };
    let request = ActivationRequest::new(vec![
        tool("append", false),
        tool("slow", true),
        tool("hold", false),
    ])
    .with_agent_run(run);
    let Ok(Activation::Active(session)) = code_mode.activate(request) else {
        return Err("code mode did not activate".into());
    };
    println!("ready");
    let (lines, mut receiver) = tokio::sync::mpsc::channel::<String>(8);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if lines.blocking_send(line).is_err() {
                break;
            }
        }
    });
    while let Some(line) = receiver.recv().await {
        let command: Value = serde_json::from_str(&line).map_err(|error| error.to_string())?;
        let result = if let Some(code) = command["exec"].as_str() {
            session.exec("call-1", &json!({ "code": code })).await
        } else {
            session.wait(&json!({ "runId": command["wait"] })).await
        };
        println!("{}", result.to_json());
        std::io::stdout()
            .flush()
            .map_err(|error| error.to_string())?;
    }
    Ok(())
}
