//! One summary call against a fake fast model: cleaning, dropping on failure or timeout, and
//! the fast path that makes no call at all.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use corvid_core::summary::{
    BatchForSummary, SUMMARY_TIMEOUT, SummaryCall, SummaryConfig, SummaryOutcome, local_label,
    summarize_batch, summarize_batch_within,
};
use corvid_protocol::{Completion, ErrorInfo, ErrorKind, ModelRequest, Usage};
use corvid_providers::{EventStream, Provider};
use futures::FutureExt;
use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// How the fake fast model answers `complete`.
#[derive(Clone)]
enum Answer {
    Text(&'static str),
    Fail(ErrorInfo),
    Never,
}

/// A fast model that records every request and answers from a script.
struct FakeFastModel {
    answer: Answer,
    completed: Mutex<Vec<ModelRequest>>,
    streamed: Mutex<Vec<ModelRequest>>,
}

impl FakeFastModel {
    fn new(answer: Answer) -> Arc<Self> {
        Arc::new(Self {
            answer,
            completed: Mutex::new(Vec::new()),
            streamed: Mutex::new(Vec::new()),
        })
    }

    fn completed(&self) -> Vec<ModelRequest> {
        self.completed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn streamed(&self) -> Vec<ModelRequest> {
        self.streamed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn usage() -> Usage {
    Usage {
        input_tokens: 120,
        output_tokens: 6,
        total_tokens: 126,
        ..Usage::default()
    }
}

impl Provider for FakeFastModel {
    fn name(&self) -> &str {
        "fake"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        self.streamed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        Box::pin(futures::stream::empty())
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        self.completed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        match self.answer.clone() {
            Answer::Text(text) => futures::future::ready(Ok(Completion {
                text: text.to_owned(),
                usage: Some(usage()),
                ..Completion::default()
            }))
            .boxed(),
            Answer::Fail(error) => futures::future::ready(Err(error)).boxed(),
            Answer::Never => futures::future::pending().boxed(),
        }
    }
}

fn config(model: &Arc<FakeFastModel>) -> SummaryConfig {
    SummaryConfig {
        provider: model.clone(),
        model: "fast-model".to_owned(),
    }
}

fn call(name: &str, args: Value, succeeded: bool) -> SummaryCall {
    SummaryCall {
        name: name.to_owned(),
        args,
        output: "output".to_owned(),
        succeeded,
    }
}

/// A batch the fast path does not cover, so the model is asked.
fn two_call_batch() -> BatchForSummary {
    BatchForSummary {
        intent: Some("Checking the auth module".to_owned()),
        calls: vec![
            call("read_file", json!({"file_path": "src/auth.rs"}), true),
            call("grep_search", json!({"pattern": "login"}), true),
        ],
    }
}

fn labelled(label: &str, usage: Option<Usage>) -> SummaryOutcome {
    SummaryOutcome {
        label: Some(label.to_owned()),
        usage,
        drop_reason: None,
    }
}

fn dropped(reason: &str, usage: Option<Usage>) -> SummaryOutcome {
    SummaryOutcome {
        label: None,
        usage,
        drop_reason: Some(reason.to_owned()),
    }
}

/// An answered call whose text left no label once cleaned: dropped, its usage still counted.
fn cleaned_to_nothing() -> SummaryOutcome {
    dropped(
        "the summary was empty or a refusal after cleaning",
        Some(usage()),
    )
}

#[tokio::test]
async fn the_answer_is_cleaned_into_the_label_and_usage_is_returned() {
    let model = FakeFastModel::new(Answer::Text(
        "- **\"Label: Searched auth for login\"**\nI looked at the files.",
    ));
    let outcome = summarize_batch(&config(&model), &two_call_batch()).await;
    assert_eq!(outcome, labelled("Searched auth for login", Some(usage())));
}

#[tokio::test]
async fn one_non_streaming_request_goes_to_the_fast_model() {
    let model = FakeFastModel::new(Answer::Text("Searched auth for login"));
    let batch = two_call_batch();
    summarize_batch(&config(&model), &batch).await;
    assert_eq!(
        (model.completed(), model.streamed()),
        (
            vec![corvid_core::summary::build_summary_request(
                "fast-model",
                &batch
            )],
            vec![]
        )
    );
}

#[tokio::test]
async fn a_refusal_is_dropped_but_its_usage_still_counts() {
    let model = FakeFastModel::new(Answer::Text("I can\u{2019}t summarize that."));
    let outcome = summarize_batch(&config(&model), &two_call_batch()).await;
    assert_eq!(outcome, cleaned_to_nothing());
}

#[tokio::test]
async fn an_empty_answer_is_dropped() {
    let model = FakeFastModel::new(Answer::Text("  \n"));
    let outcome = summarize_batch(&config(&model), &two_call_batch()).await;
    assert_eq!(outcome, cleaned_to_nothing());
}

#[tokio::test]
async fn a_provider_error_is_dropped_after_one_attempt() {
    let error = ErrorInfo {
        status: Some(503),
        ..ErrorInfo::new(ErrorKind::Overloaded, "try later")
    };
    let model = FakeFastModel::new(Answer::Fail(error));
    let outcome = summarize_batch(&config(&model), &two_call_batch()).await;
    assert_eq!(
        (outcome, model.completed().len()),
        (
            dropped(
                "the summary call failed: overloaded error (HTTP 503): try later",
                None
            ),
            1
        )
    );
}

#[test]
fn the_summary_call_is_bounded_by_ten_seconds() {
    assert_eq!(SUMMARY_TIMEOUT, Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn a_call_still_unanswered_after_ten_seconds_is_dropped() {
    let model = FakeFastModel::new(Answer::Never);
    let outcome = summarize_batch(&config(&model), &two_call_batch()).await;
    assert_eq!(
        (outcome, model.completed().len()),
        (
            dropped("the summary call timed out after 10000 ms", None),
            1
        )
    );
}

#[tokio::test]
async fn a_call_that_never_answers_is_dropped_when_its_bound_passes() {
    let model = FakeFastModel::new(Answer::Never);
    let outcome = summarize_batch_within(
        &config(&model),
        &two_call_batch(),
        Duration::from_millis(20),
    )
    .await;
    assert_eq!(
        (outcome, model.completed().len()),
        (dropped("the summary call timed out after 20 ms", None), 1)
    );
}

#[tokio::test]
async fn an_empty_batch_makes_no_call() {
    let model = FakeFastModel::new(Answer::Text("Did nothing"));
    let batch = BatchForSummary {
        intent: None,
        calls: vec![],
    };
    let outcome = summarize_batch(&config(&model), &batch).await;
    assert_eq!(
        (outcome, model.completed().len()),
        (dropped("the batch has no calls", None), 0)
    );
}

#[tokio::test]
async fn the_fast_path_labels_a_single_read_without_calling_the_model() {
    let model = FakeFastModel::new(Answer::Text("Model label"));
    let batch = BatchForSummary {
        intent: Some("Let me read the config".to_owned()),
        calls: vec![call(
            "read_file",
            json!({"file_path": "/home/me/project/config.json"}),
            true,
        )],
    };
    let outcome = summarize_batch(&config(&model), &batch).await;
    assert_eq!(
        (outcome, model.completed(), model.streamed()),
        (labelled("Read config.json", None), vec![], vec![])
    );
}

#[tokio::test]
async fn a_single_failed_read_goes_to_the_model() {
    let model = FakeFastModel::new(Answer::Text("Tried to read config.json"));
    let batch = BatchForSummary {
        intent: None,
        calls: vec![call(
            "read_file",
            json!({"file_path": "config.json"}),
            false,
        )],
    };
    let outcome = summarize_batch(&config(&model), &batch).await;
    assert_eq!(
        (outcome, model.completed().len()),
        (labelled("Tried to read config.json", Some(usage())), 1)
    );
}

#[test]
fn each_read_only_tool_has_its_local_label() {
    let long_pattern = "p".repeat(150);
    let cases = vec![
        (
            "read_file",
            json!({"file_path": "/home/me/project/config.json"}),
        ),
        (
            "read_file",
            json!({"file_path": "src/main.rs", "offset": 10}),
        ),
        (
            "read_file",
            json!({"file_path": "a/very/long/relative/path/that/goes/on/and/on/lib.rs"}),
        ),
        ("list_directory", json!({"path": "src"})),
        ("list_directory", json!({"path": "src/"})),
        ("list_directory", json!({"path": "/home/me/project/tests"})),
        ("glob", json!({"pattern": "**/*.rs", "path": "src"})),
        ("grep_search", json!({"pattern": "login", "glob": "*.ts"})),
        ("grep_search", json!({"pattern": long_pattern})),
    ];
    let labels: Vec<Option<String>> = cases
        .into_iter()
        .map(|(name, args)| {
            local_label(&BatchForSummary {
                intent: None,
                calls: vec![call(name, args, true)],
            })
        })
        .collect();
    let capped = format!("Searched for \"{}", "p".repeat(86));
    assert_eq!(
        labels,
        vec![
            Some("Read config.json".to_owned()),
            Some("Read src/main.rs".to_owned()),
            Some("Read lib.rs".to_owned()),
            Some("Listed src/".to_owned()),
            Some("Listed src/".to_owned()),
            Some("Listed tests/".to_owned()),
            Some("Found **/*.rs".to_owned()),
            Some("Searched for \"login\"".to_owned()),
            Some(capped),
        ]
    );
}

#[test]
fn batches_outside_the_fast_path_get_no_local_label() {
    let read = || call("read_file", json!({"file_path": "a.rs"}), true);
    let batches = vec![
        vec![read(), read()],
        vec![call("read_file", json!({"file_path": "a.rs"}), false)],
        vec![call("run_shell_command", json!({"command": "ls"}), true)],
        vec![call(
            "write_file",
            json!({"file_path": "a.rs", "content": ""}),
            true,
        )],
        vec![call("read_file", json!({}), true)],
        vec![call("grep_search", json!({"pattern": "  "}), true)],
        vec![],
    ];
    let labels: Vec<Option<String>> = batches
        .into_iter()
        .map(|calls| {
            local_label(&BatchForSummary {
                intent: None,
                calls,
            })
        })
        .collect();
    assert_eq!(labels, vec![None; 7]);
}
