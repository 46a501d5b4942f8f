//! The 16 steps of the seed's "Plan de pruebas E2E", each reported on its own.

use std::collections::BTreeSet;
use std::path::PathBuf;

use codemode_core::{CodeModeResult, ManualClock};
use serde_json::{Value, json};

use crate::gateway::{self, Gateway, ScriptedModel, Turn};

/// One step's outcome.
#[derive(Debug, Clone)]
pub struct StepReport {
    /// 1-based step number.
    pub number: usize,
    /// What the step checks.
    pub name: &'static str,
    /// `Ok` or the failure.
    pub outcome: Result<(), String>,
}

/// The names of the 16 steps, in order.
pub const STEPS: [&str; 16] = [
    "start a gateway with tools.codeMode.enabled: false",
    "send an agent turn with a small set of direct tools",
    "the model-visible tools are unchanged",
    "restart with tools.codeMode.enabled: true",
    "send a turn with core, plugin, MCP and client test tools",
    "the model sees exec, wait and only the configured direct-only tools",
    "ALL_TOOLS holds the catalog tools and not the direct-only ones",
    "core, plugin and client tools via tools.search, tools.describe, tools.call",
    "API.list(\"mcp\") and API.read(\"mcp/<server>.d.ts\") describe the visible MCP tools",
    "MCP tools via MCP.<server>.<tool>({ ...input }); MCP entries absent from ALL_TOOLS and tools.*",
    "denied tools are absent and not callable by a guessed id",
    "a nested call settles after exec returned waiting",
    "wait gives the restored VM the tool result",
    "the final result holds output produced after the restore",
    "timeout, cancellation and snapshot expiry clean the runtime state",
    "the exported trajectory shows nested calls under their parent exec call",
];

fn ensure(condition: bool, message: impl Into<String>) -> Result<(), String> {
    if condition {
        Ok(())
    } else {
        Err(message.into())
    }
}

fn last_json(results: &[CodeModeResult]) -> Result<Value, String> {
    results
        .last()
        .map(CodeModeResult::to_json)
        .ok_or_else(|| "the model made no call".into())
}

fn completed(results: &[CodeModeResult]) -> Result<Value, String> {
    let last = last_json(results)?;
    ensure(
        last["status"] == "completed",
        format!("expected completed, got {last}"),
    )?;
    Ok(last["value"].clone())
}

/// State shared between steps.
struct Plan {
    files: PathBuf,
    off: Option<Gateway>,
    off_turn: Option<Turn>,
    on: Option<Gateway>,
    turn: Option<Turn>,
    waiting: Vec<CodeModeResult>,
    parent_call: String,
}

impl Plan {
    fn on(&self) -> Result<&Gateway, String> {
        self.on
            .as_ref()
            .ok_or_else(|| "the code-mode gateway did not start".into())
    }

    fn turn(&self) -> Result<&Turn, String> {
        self.turn.as_ref().ok_or_else(|| "no code-mode turn".into())
    }

    async fn cell(&self, code: &str) -> Result<Value, String> {
        let results = self
            .on()?
            .drive(self.turn()?, &mut ScriptedModel::js(code))
            .await?;
        completed(&results)
    }

    async fn step(&mut self, number: usize) -> Result<(), String> {
        match number {
            1 => {
                self.off = Some(
                    Gateway::start(json!({ "enabled": false, "timeoutMs": 2000 }), None).await?,
                );
                Ok(())
            }
            2 => {
                let off = self.off.as_ref().ok_or("no gateway")?;
                self.off_turn = Some(off.turn(gateway::direct_tools(), false, "off")?);
                Ok(())
            }
            3 => {
                let turn = self.off_turn.as_ref().ok_or("no turn")?;
                ensure(turn.session.is_none(), "code mode activated while disabled")?;
                ensure(
                    turn.visible == ["echo", "add"],
                    format!("visible tools changed: {:?}", turn.visible),
                )
            }
            4 => {
                self.off = None;
                let servers = gateway::mcp_servers(&self.files)?;
                let config =
                    json!({ "enabled": true, "timeoutMs": 1500, "snapshotTtlSeconds": 60 });
                self.on = Some(Gateway::start(config, Some(servers)).await?);
                Ok(())
            }
            5 => {
                let turn = self.on()?.turn(gateway::host_tools(), true, "on")?;
                ensure(turn.session.is_some(), "code mode did not activate")?;
                self.turn = Some(turn);
                Ok(())
            }
            6 => {
                let visible = &self.turn()?.visible;
                ensure(
                    visible == &["exec", "wait", "computer"],
                    format!("visible: {visible:?}"),
                )
            }
            7 => {
                let ids = self.cell("return ALL_TOOLS.map(t => t.id)").await?;
                let ids: BTreeSet<&str> = ids
                    .as_array()
                    .ok_or("ALL_TOOLS is not an array")?
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                for expected in [
                    "openclaw:core:echo",
                    "openclaw:core:add",
                    "openclaw:issues-plugin:issues_list",
                    "client:app:select_file",
                ] {
                    ensure(
                        ids.contains(expected),
                        format!("{expected} missing from ALL_TOOLS"),
                    )?;
                }
                ensure(
                    !ids.iter().any(|id| id.ends_with(":computer")),
                    "a direct-only tool is in ALL_TOOLS",
                )
            }
            8 => {
                let value = self
                    .cell(
                        r#"
                        const hits = await tools.search("issues");
                        const list = await tools.describe(hits[0].id);
                        const issues = await tools.call(list.id, {});
                        const sum = await tools.call("openclaw:core:add", { a: 2, b: 5 });
                        const file = await tools.select_file({ path: "notes.txt" });
                        const viaNamespace = await Issues.list();
                        return { first: hits[0].id, params: list.parameters, issues, sum, file, viaNamespace };
                        "#,
                    )
                    .await?;
                ensure(
                    value["first"] == "openclaw:issues-plugin:issues_list",
                    format!("search: {value}"),
                )?;
                ensure(value["sum"]["sum"] == 7.0, format!("core call: {value}"))?;
                ensure(
                    value["file"]["path"] == "notes.txt",
                    format!("client call: {value}"),
                )?;
                ensure(
                    value["issues"] == value["viaNamespace"],
                    format!("plugin call: {value}"),
                )?;
                ensure(value["params"].is_object(), "describe has parameters")
            }
            9 => {
                let value = self
                    .cell(
                        r#"
                        const files = await API.list("mcp");
                        const everything = await API.read("mcp/everything.d.ts");
                        const index = await API.read("mcp/index.d.ts");
                        return { paths: files.map(f => f.path), bytes: files.every(f => f.bytes > 0),
                                 echo: everything.includes("function echo("), servers: index.includes("everything") };
                        "#,
                    )
                    .await?;
                let paths = value["paths"].as_array().ok_or("no paths")?;
                for expected in [
                    "mcp/index.d.ts",
                    "mcp/everything.d.ts",
                    "mcp/filesystem.d.ts",
                    "mcp/testsrv.d.ts",
                ] {
                    ensure(
                        paths.iter().any(|p| p == expected),
                        format!("{expected} not listed: {value}"),
                    )?;
                }
                ensure(
                    value["bytes"] == true && value["echo"] == true && value["servers"] == true,
                    format!("{value}"),
                )
            }
            10 => {
                std::fs::write(self.files.join("hello.txt"), "hello from disk")
                    .map_err(|e| e.to_string())?;
                let path = self.files.join("hello.txt").display().to_string();
                let code = format!(
                    r#"
                    const echoed = await MCP.everything.echo({{ message: "hi" }});
                    const file = await MCP.filesystem.readTextFile({{ path: {path:?} }});
                    let direct = null;
                    try {{ await tools.call("mcp:everything:echo", {{ message: "x" }}) }} catch (e) {{ direct = e.message }}
                    return {{ echoed, file, direct, listed: ALL_TOOLS.some(t => t.source === "mcp"),
                             searched: (await tools.search("everything")).some(t => t.source === "mcp") }};
                    "#
                );
                let value = self.cell(&code).await?;
                let echoed = value["echoed"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default();
                ensure(echoed.contains("hi"), format!("echo result: {value}"))?;
                let file = value["file"].to_string();
                ensure(
                    file.contains("hello from disk"),
                    format!("filesystem result: {value}"),
                )?;
                ensure(
                    value["direct"] == "Unknown tool id: mcp:everything:echo",
                    format!("{value}"),
                )?;
                ensure(
                    value["listed"] == false && value["searched"] == false,
                    format!("{value}"),
                )
            }
            11 => {
                let value = self
                    .cell(
                        r#"
                        let guessed = null;
                        try { await tools.call("openclaw:core:secret_tool", {}) } catch (e) { guessed = e.message }
                        return { guessed, listed: ALL_TOOLS.some(t => t.name === "secret_tool"),
                                 convenience: typeof tools.secret_tool };
                        "#,
                    )
                    .await?;
                ensure(
                    value
                        == json!({ "guessed": "Unknown tool id: openclaw:core:secret_tool", "listed": false, "convenience": "undefined" }),
                    format!("{value}"),
                )
            }
            12 => {
                let code = r#"
                    text("before the slow call");
                    const late = await MCP.testsrv.delayedEcho({ text: "settled late", ms: 2500 });
                    text("after restore: " + JSON.stringify(late.content));
                    return late;
                "#;
                let results = self
                    .on()?
                    .drive(self.turn()?, &mut ScriptedModel::js(code))
                    .await?;
                let first = results
                    .first()
                    .map(CodeModeResult::to_json)
                    .ok_or("no exec result")?;
                ensure(
                    first["status"] == "waiting",
                    format!("exec did not wait: {first}"),
                )?;
                ensure(
                    first["pendingToolCalls"][0]["toolId"] == "mcp:testsrv:delayed_echo",
                    format!("{first}"),
                )?;
                self.parent_call = last_exec_call(&self.on()?.trajectory.export_jsonl())
                    .ok_or("no exec call recorded")?;
                self.waiting = results;
                Ok(())
            }
            13 => {
                let value = completed(&self.waiting)?;
                ensure(
                    value.to_string().contains("settled late"),
                    format!("the VM did not get the result: {value}"),
                )?;
                ensure(self.waiting.len() >= 2, "no wait call happened")
            }
            14 => {
                let last = self.waiting.last().ok_or("no result")?;
                let output = serde_json::to_value(last.output()).map_err(|e| e.to_string())?;
                ensure(
                    output.to_string().contains("after restore"),
                    format!("output after restore missing: {output}"),
                )
            }
            15 => self.clean_up().await,
            16 => {
                let jsonl = self.on()?.trajectory.export_jsonl();
                let lines: Vec<Value> = jsonl
                    .lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect();
                let exec_calls: BTreeSet<&str> = lines
                    .iter()
                    .filter(|l| l["type"] == "tool_call" && l["name"] == "exec")
                    .filter_map(|l| l["callId"].as_str())
                    .collect();
                let nested: Vec<&Value> = lines
                    .iter()
                    .filter(|l| l["type"] == "nested_call")
                    .collect();
                ensure(!nested.is_empty(), "no nested calls in the trajectory")?;
                for event in &nested {
                    let parent = event["parentCallId"].as_str().unwrap_or_default();
                    ensure(
                        exec_calls.contains(parent),
                        format!("nested call without its exec parent: {event}"),
                    )?;
                }
                // The call of step 12 started during `exec` and ended during a later `wait`: both
                // events name the exec's call id.
                let late: Vec<&&Value> = nested
                    .iter()
                    .filter(|e| {
                        e["catalogId"] == "mcp:testsrv:delayed_echo"
                            && e["parentCallId"] == self.parent_call.as_str()
                    })
                    .collect();
                ensure(
                    late.iter().any(|e| e["event"] == "start"),
                    "the late call's start is not under its exec",
                )?;
                ensure(
                    late.iter()
                        .any(|e| e["event"] == "end" && e["outcome"] == "ok"),
                    "the late call's end is not under its exec",
                )
            }
            _ => Err(format!("no step {number}")),
        }
    }

    async fn clean_up(&mut self) -> Result<(), String> {
        let gateway = self.on()?;
        let turn = self.turn()?;
        let session = turn.session.as_ref().ok_or("no session")?;
        let before = gateway.code_mode().suspended_runs();
        // Timeout: a CPU-bound guest is stopped and leaves nothing behind.
        let result = session
            .exec("t1", &json!({ "code": "while (true) {}" }))
            .await
            .to_json();
        ensure(result["code"] == "timeout", format!("timeout: {result}"))?;
        ensure(
            gateway.code_mode().suspended_runs() == before,
            "a timed-out run stayed in the store",
        )?;
        // Cancellation: a parked run is dropped with its host work.
        let code = "return await MCP.testsrv.delayedEcho({ text: 'never', ms: 60000 })";
        let parked = last_json(
            &gateway
                .drive(turn, &mut ScriptedModel::js_no_wait(code))
                .await?,
        )?;
        let run_id = parked["runId"]
            .as_str()
            .ok_or(format!("not parked: {parked}"))?
            .to_owned();
        ensure(
            gateway.code_mode().suspended_runs() == before + 1,
            "the run was not parked",
        )?;
        ensure(session.cancel(&run_id), "cancel found no run")?;
        ensure(
            gateway.code_mode().suspended_runs() == before,
            "cancel left the run in the store",
        )?;
        let after = session.wait(&json!({ "runId": run_id })).await.to_json();
        ensure(
            after["error"] == "code mode run is unavailable or expired.",
            format!("{after}"),
        )?;
        // Expiry: a gateway whose snapshots live a minute, on a clock the plan moves (no sleep
        // past the TTL).
        let clock = ManualClock::new();
        let short = Gateway::start_on_clock(
            json!({ "enabled": true, "timeoutMs": 200, "snapshotTtlSeconds": 60 }),
            clock.clone(),
        )
        .await?;
        let turn = short.turn(gateway::host_tools(), false, "ttl")?;
        let session = turn.session.as_ref().ok_or("no session")?;
        let parked = session
            .exec(
                "t3",
                &json!({ "code": "await yield_control('pause'); return 1" }),
            )
            .await
            .to_json();
        let run_id = parked["runId"]
            .as_str()
            .ok_or(format!("not parked: {parked}"))?
            .to_owned();
        clock.advance(std::time::Duration::from_secs(60));
        let expired = session.wait(&json!({ "runId": run_id })).await.to_json();
        ensure(
            expired["error"] == "code mode run is unavailable or expired.",
            format!("{expired}"),
        )?;
        ensure(
            short.code_mode().suspended_runs() == 0,
            "the expired run is still held",
        )
    }
}

fn last_exec_call(jsonl: &str) -> Option<String> {
    jsonl
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["type"] == "tool_call" && l["name"] == "exec")
        .and_then(|l| l["callId"].as_str().map(str::to_owned))
}

/// Runs the 16 steps in order; a failed step does not stop the later ones (they report their
/// own failures, usually "no gateway").
pub async fn run_plan() -> Vec<StepReport> {
    let files = std::env::temp_dir().join(format!("codemode-e2e-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&files);
    let files = files.canonicalize().unwrap_or(files);
    let mut plan = Plan {
        files,
        off: None,
        off_turn: None,
        on: None,
        turn: None,
        waiting: Vec::new(),
        parent_call: String::new(),
    };
    let mut reports = Vec::new();
    for (index, name) in STEPS.iter().enumerate() {
        let number = index + 1;
        let outcome = plan.step(number).await;
        reports.push(StepReport {
            number,
            name,
            outcome,
        });
    }
    if let Some(gateway) = plan.on.take() {
        gateway.code_mode().shutdown();
    }
    let _ = std::fs::remove_dir_all(&plan.files);
    reports
}
