//! Per-domain approval of web fetches (issue 31 item 1): "always" covers the domain asked
//! about, `web_fetch(domain:...)` rules allow or deny, and plan mode refuses a fetch unasked
//! unless a rule allows it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::approvals::{Asked, Ran, asked, one_call, run, turns, workspace_config};
use corvid_core::policy::rules::PermissionRules;
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, ApprovalPreview, ToolDisplay, ToolKind, ToolOutput,
};
use corvid_tools::{ApprovalNeed, Tool, ToolContext, ToolError};
use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A `web_fetch` look-alike that plans like the real one and records the URLs it "fetched".
struct FakeFetch {
    ran: Ran,
}

fn url_of(args: &Value) -> String {
    args["url"].as_str().unwrap_or("").to_owned()
}

impl Tool for FakeFetch {
    fn name(&self) -> &'static str {
        "web_fetch"
    }
    fn display_name(&self) -> &'static str {
        "WebFetch"
    }
    fn description(&self) -> &'static str {
        "records URLs"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"url": {"type": "string"}}})
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Fetch
    }
    fn mutates(&self) -> bool {
        false
    }
    fn allowed_in_plan_mode(&self) -> bool {
        corvid_tools::web::WebFetch::default().allowed_in_plan_mode()
    }
    fn domain(&self, args: &Value) -> Option<String> {
        corvid_tools::web::WebFetch::default().domain(args)
    }
    fn display(&self, args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        ToolDisplay {
            title: format!("Fetch {}", url_of(args)),
            kind: ToolKind::Fetch,
            locations: Vec::new(),
        }
    }
    fn approval(&self, args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let text = url_of(args);
        Box::pin(async move { ApprovalNeed::Execute(ApprovalPreview::Text { text }) })
    }
    fn execute(
        &self,
        args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let ran = self.ran.clone();
        Box::pin(async move {
            ran.push(url_of(&args));
            Ok(ToolOutput::text("page"))
        })
    }
}

fn fetch(id: &str, url: &str) -> Vec<common::scripted::Step> {
    one_call(id, "web_fetch", json!({"url": url}))
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn config(
    provider: &common::scripted::ScriptedProvider,
    ws: &std::path::Path,
    mode: ApprovalMode,
    ran: &Ran,
) -> corvid_core::agent::AgentConfig {
    let mut config = workspace_config(provider, ws, mode, ran);
    config.tools = corvid_tools::ToolRegistry::new(vec![Arc::new(FakeFetch { ran: ran.clone() })]);
    config
}

#[tokio::test]
async fn always_allowing_a_domain_covers_that_domain_only() {
    let ws = tempfile::tempdir().unwrap();
    let ran = Ran::default();
    let provider = turns(vec![
        fetch("f1", "https://docs.rs/serde"),
        fetch("f2", "https://DOCS.rs/tokio"),
        fetch("f3", "https://sub.docs.rs/x"),
        fetch("f4", "https://evil.example/?q=docs.rs"),
    ]);
    let config = config(&provider, ws.path(), ApprovalMode::Default, &ran);
    let (_h, events) = run(config, |id| match id {
        "f1" => ApprovalDecision::AllowAlways,
        _ => ApprovalDecision::RejectOnce,
    })
    .await;
    let scopes: Vec<(String, Option<String>)> = asked(&events)
        .into_iter()
        .map(|a| (a.call_id, a.always_scope))
        .collect();
    assert_eq!(
        scopes,
        vec![
            ("f1".to_owned(), Some("docs.rs".to_owned())),
            ("f3".to_owned(), Some("sub.docs.rs".to_owned())),
            ("f4".to_owned(), Some("evil.example".to_owned())),
        ]
    );
    assert_eq!(
        ran.all(),
        strings(&["https://docs.rs/serde", "https://DOCS.rs/tokio"])
    );
}

#[tokio::test]
async fn domain_rules_allow_and_deny_fetches_without_asking() {
    let ws = tempfile::tempdir().unwrap();
    let ran = Ran::default();
    let provider = turns(vec![
        fetch("f1", "https://doc.rust-lang.org/std"),
        fetch("f2", "https://tracker.example/x"),
        fetch("f3", "https://other.example/"),
    ]);
    let mut config = config(&provider, ws.path(), ApprovalMode::Default, &ran);
    config.policy.rules = PermissionRules::new(
        &strings(&["web_fetch(domain:*.rust-lang.org)"]),
        &strings(&["web_fetch(domain:tracker.example)"]),
    )
    .unwrap();
    let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
    let ids: Vec<String> = asked(&events).into_iter().map(|a| a.call_id).collect();
    assert_eq!(ids, strings(&["f3"]));
    assert_eq!(ran.all(), strings(&["https://doc.rust-lang.org/std"]));
}

#[tokio::test]
async fn plan_mode_refuses_a_fetch_unasked_unless_a_rule_allows_its_domain() {
    let ws = tempfile::tempdir().unwrap();
    let ran = Ran::default();
    let provider = turns(vec![
        fetch("f1", "https://docs.rs/serde"),
        fetch("f2", "https://evil.example/?secret=1"),
    ]);
    let mut config = config(&provider, ws.path(), ApprovalMode::Plan, &ran);
    config.policy.rules =
        PermissionRules::new(&strings(&["web_fetch(domain:docs.rs)"]), &[]).unwrap();
    let (_h, events) = run(config, |_| ApprovalDecision::AllowOnce).await;
    assert_eq!(asked(&events), Vec::<Asked>::new());
    assert_eq!(ran.all(), strings(&["https://docs.rs/serde"]));
    let refused = common::approvals::finished(&events)
        .into_iter()
        .find(|(id, _, _)| id == "f2")
        .unwrap();
    assert!(
        refused
            .2
            .contains("tools.allow rule such as `web_fetch(domain:evil.example)`"),
        "{}",
        refused.2
    );
}
