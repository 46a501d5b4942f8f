//! The seam as a host sees it: a toy executor driven without any async runtime, the JSON a
//! transcript receives, and the wire shape of a tool description.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use codemode_host::serde_json::{Value, json};
use codemode_host::{
    AgentRunContext, CancellationToken, MAX_UPDATE_BYTES, NestedCallEvent, NestedCallOutcome,
    Source, ToolCallContext, ToolDescriptor, ToolError, ToolExecutor, ToolOrigin, UpdateError,
    async_trait,
};

/// Echoes its input, and refuses once its call is cancelled.
struct Echo;

#[async_trait]
impl ToolExecutor for Echo {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        if context.cancellation.is_cancelled() {
            return Err(ToolError::new("cancelled"));
        }
        Ok(json!({ "id": catalog_id, "echo": input, "call": context.nested_call_id }))
    }
}

/// Polls a future that never waits: the seam itself needs no runtime.
fn ready<T>(future: impl Future<Output = T>) -> T {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("the toy executor never waits"),
    }
}

fn context(cancellation: CancellationToken) -> ToolCallContext {
    ToolCallContext::new(AgentRunContext::default(), "c1", "c1/1", cancellation)
}

#[test]
fn an_executor_shared_by_arc_is_an_executor() {
    let shared: Arc<dyn ToolExecutor> = Arc::new(Echo);
    let answer = ready(shared.execute(
        "myagent:core:echo",
        json!({ "x": 1 }),
        context(CancellationToken::new()),
    ));
    assert_eq!(
        answer,
        Ok(json!({ "id": "myagent:core:echo", "echo": { "x": 1 }, "call": "c1/1" }))
    );
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let refused = ready(Arc::new(Echo).execute("myagent:core:echo", json!({}), context(cancelled)));
    assert_eq!(refused.unwrap_err().to_string(), "cancelled");
}

#[test]
fn errors_say_what_happened_in_plain_words() {
    let too_large = UpdateError::TooLarge {
        limit: MAX_UPDATE_BYTES,
    };
    assert_eq!(
        too_large.to_string(),
        "a nested call update is larger than 65536 bytes of JSON; it was not sent."
    );
    let error: Box<dyn std::error::Error> = Box::new(ToolError::new("no such note"));
    assert_eq!(error.to_string(), "no such note");
}

#[test]
fn an_update_of_exactly_the_limit_is_sent() {
    // `"` + n bytes + `"`: the largest string that fits.
    let fits = Value::String("x".repeat(MAX_UPDATE_BYTES - 2));
    let over = Value::String("x".repeat(MAX_UPDATE_BYTES - 1));
    let cx = context(CancellationToken::new());
    assert_eq!(cx.update(fits), Ok(()));
    assert!(cx.update(over).is_err());
}

#[test]
fn events_serialize_as_a_transcript_reads_them() {
    let update = NestedCallEvent::Update {
        parent_call_id: "c1".into(),
        nested_call_id: "c1/1".into(),
        catalog_id: "myagent:core:echo".into(),
        update: json!({ "status": "awaiting approval" }),
    };
    assert_eq!(
        codemode_host::serde_json::to_value(&update).unwrap(),
        json!({
            "event": "update", "parentCallId": "c1", "nestedCallId": "c1/1",
            "catalogId": "myagent:core:echo", "update": { "status": "awaiting approval" },
        })
    );
    let end = NestedCallEvent::End {
        parent_call_id: "c1".into(),
        nested_call_id: "c1/1".into(),
        catalog_id: "myagent:core:echo".into(),
        outcome: NestedCallOutcome::Error("no such note".into()),
    };
    assert_eq!(
        codemode_host::serde_json::to_value(&end).unwrap()["outcome"],
        json!({ "error": "no such note" })
    );
}

#[test]
fn a_descriptor_round_trips_and_fills_its_defaults() {
    let tool = ToolDescriptor::new(
        ToolOrigin::Mcp("github".into()),
        "create_issue",
        "Open one.",
    )
    .read_only();
    let wire = codemode_host::serde_json::to_value(&tool).unwrap();
    assert_eq!(wire["origin"], json!({ "kind": "mcp", "owner": "github" }));
    assert_eq!(
        codemode_host::serde_json::from_value::<ToolDescriptor>(wire).unwrap(),
        tool
    );
    let minimal: ToolDescriptor = codemode_host::serde_json::from_value(
        json!({ "origin": { "kind": "core" }, "name": "echo" }),
    )
    .unwrap();
    assert_eq!(minimal, ToolDescriptor::new(ToolOrigin::Core, "echo", ""));
    assert_eq!(minimal.origin.source(), Source::Openclaw);
    assert_eq!(minimal.origin.source_name(), None);
    assert_eq!(tool.origin.source().to_string(), "mcp");
}
