//! The recorder with a title writer: after the session's first answer, the fast model names
//! the session and the name is appended as a [`Record::Title`]. Outside the agent loop: the
//! loop only tells its observer what it appended.

use std::sync::{Arc, Mutex, Weak};

use corvid_protocol::{CoreEvent, Message, Role};

use super::record::Record;
use super::recorder::SessionRecorder;
use crate::agent::HistoryObserver;
use crate::summary::{SummaryConfig, session_title};

/// A [`SessionRecorder`] that also titles the session once.
pub struct TitledRecorder {
    recorder: Arc<SessionRecorder>,
    fast: SummaryConfig,
    state: Mutex<TitleState>,
}

#[derive(Default)]
struct TitleState {
    /// The first prompt, once sent.
    prompt: Option<String>,
    /// The title call was started (it runs once per agent).
    started: bool,
    /// The title call, until awaited.
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TitledRecorder {
    /// Records into `recorder` and asks `fast` for a title after the first answer.
    pub fn new(recorder: SessionRecorder, fast: SummaryConfig) -> Self {
        Self {
            recorder: Arc::new(recorder),
            fast,
            state: Mutex::new(TitleState::default()),
        }
    }

    /// Starts the title call when `message` is the first answer to the first prompt.
    fn maybe_title(&self, message: &Message) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if state.started {
            return;
        }
        let text = message.text();
        if text.trim().is_empty() {
            return;
        }
        let prompt = match (message.role, &state.prompt) {
            (Role::User, None) => {
                state.prompt = Some(text);
                return;
            }
            (Role::Assistant, Some(prompt)) => prompt.clone(),
            _ => return,
        };
        state.started = true;
        let fast = self.fast.clone();
        // The task must not keep the file locked once the agent is gone (a resume of this
        // session would fail): a title arriving after that is dropped.
        let recorder: Weak<SessionRecorder> = Arc::downgrade(&self.recorder);
        state.task = Some(tokio::spawn(async move {
            let Some(title) = session_title(&fast, &prompt, &text).await else {
                return;
            };
            if let Some(recorder) = recorder.upgrade()
                && let Err(e) = recorder.append(&Record::Title { title })
            {
                tracing::debug!("the session title was not recorded: {e}");
            }
        }));
    }

    /// Waits for the title call, when one started (tests read the file after it).
    #[cfg(test)]
    async fn titled(&self) {
        let task = self.state.lock().ok().and_then(|mut s| s.task.take());
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for TitledRecorder {
    /// A title call still running when the agent ends is not worth finishing (its title
    /// could not be recorded any more).
    fn drop(&mut self) {
        if let Some(task) = self.state.get_mut().ok().and_then(|s| s.task.take()) {
            task.abort();
        }
    }
}

impl HistoryObserver for TitledRecorder {
    fn message_appended(&self, message: &Message) -> Option<String> {
        let notice = self.recorder.message_appended(message);
        self.maybe_title(message);
        notice
    }

    fn event_emitted(&self, event: &CoreEvent) -> Option<String> {
        self.recorder.event_emitted(event)
    }

    fn subagent_message_appended(&self, parent_call_id: &str, message: &Message) -> Option<String> {
        self.recorder
            .subagent_message_appended(parent_call_id, message)
    }
}

#[cfg(test)]
mod tests {
    use corvid_protocol::{Completion, ErrorInfo, ModelRequest, Part};
    use corvid_providers::{EventStream, Provider};
    use futures::FutureExt;
    use futures::future::BoxFuture;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::session::SessionStore;

    /// A fast model answering every request with `answer`, counting the requests.
    struct Namer {
        answer: String,
        asked: Mutex<Vec<String>>,
    }

    impl Provider for Namer {
        fn name(&self) -> &str {
            "namer"
        }
        fn stream(&self, _request: ModelRequest) -> EventStream {
            Box::pin(futures::stream::empty())
        }
        fn complete(
            &self,
            request: ModelRequest,
        ) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
            let text = request
                .messages
                .last()
                .map(|m| m.text())
                .unwrap_or_default();
            if let Ok(mut asked) = self.asked.lock() {
                asked.push(text);
            }
            futures::future::ready(Ok(Completion {
                text: self.answer.clone(),
                tool_calls: Vec::new(),
                usage: None,
                finish_reason: None,
            }))
            .boxed()
        }
    }

    fn assistant(text: &str) -> Message {
        Message {
            role: Role::Assistant,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    #[tokio::test]
    async fn the_first_answer_gets_a_fast_model_title_once_recorded_without_control_characters() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let cwd = project.path().canonicalize().unwrap();
        let store = SessionStore::new(home.path());
        let namer = Arc::new(Namer {
            answer: "\"Fix the flaky\x1b[2J parser test\"".into(),
            asked: Mutex::new(Vec::new()),
        });
        let titled = TitledRecorder::new(
            store.create(&cwd, "s1", "main").unwrap(),
            SummaryConfig {
                provider: namer.clone(),
                model: "fast".into(),
            },
        );
        titled.message_appended(&Message::user_text("the parser test fails now and then"));
        titled.message_appended(&assistant("Let me look at the parser tests."));
        titled.titled().await;
        titled.message_appended(&Message::user_text("and the lexer?"));
        titled.message_appended(&assistant("The lexer is fine."));
        titled.titled().await;

        let asked = namer.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "one title per session");
        assert!(
            asked[0]
                .starts_with("Request: the parser test fails now and then\n\nAnswer: Let me look")
        );
        drop(titled);
        let listed = store.list(&cwd).unwrap();
        assert_eq!(
            listed[0].title.as_deref(),
            Some("Fix the flaky[2J parser test")
        );
        assert_eq!(listed[0].first_prompt, "the parser test fails now and then");
    }
}
