//! A scripted [`Provider`]: each request pops the next scripted response, replayed step by step
//! with `tokio::time` delays (so tests can pause time). It records every request and which
//! responses were delivered up to their `Finished` event.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corvid_protocol::{
    Completion, ErrorInfo, ErrorKind, FinishReason, ModelRequest, StreamEvent, ToolCall, Usage,
};
use corvid_providers::{EventStream, Provider};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::Notify;

/// One step of a scripted response.
#[derive(Clone)]
pub enum Step {
    Event(StreamEvent),
    /// Ends the stream with this error.
    Fail(ErrorInfo),
    Delay(Duration),
    /// Waits until the notify is triggered (tests use it to act at an exact point).
    Wait(Arc<Notify>),
    /// Never continues (only cancellation ends it).
    Hang,
}

/// Builders for steps.
pub fn text(t: &str) -> Step {
    Step::Event(StreamEvent::Text { text: t.into() })
}
pub fn thought(t: &str) -> Step {
    Step::Event(StreamEvent::Thought { text: t.into() })
}
pub fn preparing(id: &str, name: &str) -> Step {
    Step::Event(StreamEvent::ToolPreparing {
        call_id: id.into(),
        tool_name: name.into(),
    })
}
pub fn call(id: &str, name: &str, args: Value) -> Step {
    Step::Event(StreamEvent::ToolCall(ToolCall {
        call_id: id.into(),
        name: name.into(),
        args,
    }))
}
pub fn usage(input: u64, output: u64) -> Step {
    Step::Event(StreamEvent::Usage(Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ..Usage::default()
    }))
}
pub fn finish(reason: FinishReason) -> Step {
    Step::Event(StreamEvent::Finished { reason })
}
pub fn delay_ms(ms: u64) -> Step {
    Step::Delay(Duration::from_millis(ms))
}
pub fn fail(kind: ErrorKind, message: &str) -> Step {
    Step::Fail(ErrorInfo::new(kind, message))
}
pub fn fail_retry_after(kind: ErrorKind, message: &str, retry_after_ms: u64) -> Step {
    let mut err = ErrorInfo::new(kind, message);
    err.retry_after_ms = Some(retry_after_ms);
    Step::Fail(err)
}

/// A complete answer: text, then `Finished(Stop)`.
pub fn answer(t: &str) -> Vec<Step> {
    vec![text(t), usage(10, 2), finish(FinishReason::Stop)]
}

#[derive(Default)]
struct State {
    responses: VecDeque<Vec<Step>>,
    requests: Vec<ModelRequest>,
    /// Index (in request order) of the responses delivered up to `Finished`.
    finished: Vec<usize>,
    served: Vec<Vec<Step>>,
}

/// The scripted provider; clone it to keep a view of its records after handing it to an agent.
#[derive(Clone, Default)]
pub struct ScriptedProvider {
    state: Arc<Mutex<State>>,
    /// What a request gets when the script is used up.
    fallback_answer: Option<String>,
    /// Extra scheduling points before each step (none unless set).
    yields: Yields,
}

/// Extra scheduling points where the agent races other tasks (before each stream step, a
/// tool's approval and run, the front end's answers). Each point takes the next count of a
/// chosen sequence (cycled) and yields that many times, so a current-thread runtime runs the
/// other ready tasks first: the agent, the session actor, summaries and the front end
/// interleave differently. On one thread with a paused clock the same sequence gives the same
/// interleaving, so a failing schedule shrinks and replays like any other test input.
#[derive(Clone, Default)]
pub struct Yields(Arc<Mutex<(Vec<u8>, usize)>>);

impl Yields {
    pub fn new(counts: Vec<u8>) -> Self {
        Self(Arc::new(Mutex::new((counts, 0))))
    }

    /// One racing point: yields the next count of times.
    pub async fn point(&self) {
        let count = {
            let mut state = self.0.lock().unwrap();
            let (counts, next) = &mut *state;
            if counts.is_empty() {
                0
            } else {
                *next += 1;
                counts[(*next - 1) % counts.len()]
            }
        };
        for _ in 0..count {
            tokio::task::yield_now().await;
        }
    }
}

impl ScriptedProvider {
    pub fn new(responses: Vec<Vec<Step>>) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                responses: responses.into(),
                ..State::default()
            })),
            fallback_answer: None,
            yields: Yields::default(),
        }
    }

    /// When the script runs out, answer with this text instead of failing.
    pub fn answering_when_exhausted(mut self, text: &str) -> Self {
        self.fallback_answer = Some(text.into());
        self
    }

    /// Adds the scheduling points of `yields` before every step it replays.
    pub fn yielding(mut self, yields: Yields) -> Self {
        self.yields = yields;
        self
    }

    pub fn push(&self, response: Vec<Step>) {
        self.state.lock().unwrap().responses.push_back(response);
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Ids of complete tool calls in responses that were delivered up to `Finished`.
    pub fn finished_call_ids(&self) -> HashSet<String> {
        let state = self.state.lock().unwrap();
        let mut ids = HashSet::new();
        for &i in &state.finished {
            for step in &state.served[i] {
                if let Step::Event(StreamEvent::ToolCall(c)) = step {
                    ids.insert(c.call_id.clone());
                }
            }
        }
        ids
    }

    fn next_response(&self, request: ModelRequest) -> (usize, Vec<Step>) {
        let mut state = self.state.lock().unwrap();
        state.requests.push(request);
        let steps = match state.responses.pop_front() {
            Some(steps) => steps,
            None => match &self.fallback_answer {
                Some(t) => answer(t),
                None => vec![fail(
                    ErrorKind::BadRequest,
                    "the test script has no more responses",
                )],
            },
        };
        state.served.push(steps.clone());
        (state.served.len() - 1, steps)
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        let (index, steps) = self.next_response(request);
        let state = self.state.clone();
        let stream = async_stream_of(steps, self.yields.clone(), move || {
            state.lock().unwrap().finished.push(index)
        });
        Box::pin(stream)
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        let (_, steps) = self.next_response(request);
        let yields = self.yields.clone();
        Box::pin(async move {
            let mut completion = Completion::default();
            for step in steps {
                yields.point().await;
                match step {
                    Step::Event(StreamEvent::Text { text }) => completion.text.push_str(&text),
                    Step::Event(StreamEvent::ToolCall(c)) => completion.tool_calls.push(c),
                    Step::Event(StreamEvent::Usage(u)) => completion.usage = Some(u),
                    Step::Event(StreamEvent::Finished { reason }) => {
                        completion.finish_reason = Some(reason);
                        return Ok(completion);
                    }
                    Step::Event(_) => {}
                    Step::Fail(err) => return Err(err),
                    Step::Delay(d) => tokio::time::sleep(d).await,
                    Step::Wait(n) => n.notified().await,
                    Step::Hang => std::future::pending::<()>().await,
                }
            }
            Err(ErrorInfo::new(
                ErrorKind::StreamTruncated,
                "scripted response without finish",
            ))
        })
    }
}

/// Replays steps as a stream; `on_finished` runs when `Finished` is handed out.
fn async_stream_of(
    steps: Vec<Step>,
    yields: Yields,
    on_finished: impl Fn() + Send + 'static,
) -> impl futures::Stream<Item = Result<StreamEvent, ErrorInfo>> + Send + 'static {
    futures::stream::unfold(
        (VecDeque::from(steps), yields, on_finished, false),
        |(mut steps, yields, on_finished, done)| async move {
            if done {
                return None;
            }
            loop {
                yields.point().await;
                match steps.pop_front()? {
                    Step::Event(ev) => {
                        let finished = matches!(ev, StreamEvent::Finished { .. });
                        if finished {
                            on_finished();
                        }
                        return Some((Ok(ev), (steps, yields, on_finished, finished)));
                    }
                    Step::Fail(err) => {
                        return Some((Err(err), (steps, yields, on_finished, true)));
                    }
                    Step::Delay(d) => tokio::time::sleep(d).await,
                    Step::Wait(n) => n.notified().await,
                    Step::Hang => std::future::pending::<()>().await,
                }
            }
        },
    )
}
