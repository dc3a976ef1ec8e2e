//! Recorded sessions in the binary (SPEC §9): every session is started recorded, and
//! `--resume` / `--continue` go on with one (`corvid sessions list|show` is `sessions_cmd`).

use corvid_core::agent::{AgentConfig, AgentHandle};
use corvid_core::session::{
    ForkAt, Resumed, SessionStore, SessionSummary, Titling, fork_session, spawn_recorded,
    spawn_resumed,
};
use corvid_core::settings::{Overrides, corvid_home, process_env};
use corvid_protocol::{ApprovalMode, CoreEvent, Op, RewindScope};

use crate::wiring::{ConfigError, Setup, new_session_id};

/// Which session an invocation works in.
pub enum Which<'a> {
    /// A new session.
    Fresh,
    /// `--resume ID` (an id or unique prefix).
    Id(&'a str),
    /// `--continue`, or `--resume` without an id: this project's latest session.
    Latest,
}

impl<'a> Which<'a> {
    /// From `--resume [ID]` and `--continue`.
    pub fn from_flags(resume: Option<&'a str>, continue_session: bool) -> Self {
        match resume {
            Some("") => Self::Latest,
            Some(id) => Self::Id(id),
            None if continue_session => Self::Latest,
            None => Self::Fresh,
        }
    }
}

/// A started agent and the earlier transcript of a resumed session (empty when fresh).
pub struct Started {
    pub handle: AgentHandle,
    pub transcript: Vec<CoreEvent>,
    /// The model the agent works with (a resumed session goes on with its recorded one).
    pub model: String,
    /// The approval mode the agent starts in (a resumed session keeps its recorded one).
    pub approval_mode: ApprovalMode,
}

/// The session store under `$CORVID_HOME`.
pub fn store() -> Result<SessionStore, ConfigError> {
    corvid_home(process_env)
        .map(|home| SessionStore::new(&home))
        .ok_or_else(|| ConfigError("no home directory: set CORVID_HOME".into()))
}

/// Starts the agent: a new recorded session, or going on with a recorded one. A resumed
/// session goes on with its recorded model and approval mode, except where `explicit` (the
/// command-line flags) names one: the user's choice now wins, and is recorded. With `fork`
/// (`--fork`), the recorded session is copied into a new one (`config.session_id`) first.
pub fn start(
    config: AgentConfig,
    which: Which<'_>,
    fork: bool,
    explicit: &Overrides,
    titling: Titling,
) -> Result<Started, ConfigError> {
    let store = store()?.titling(titling);
    let loaded = match which {
        Which::Fresh if fork => {
            return Err(ConfigError(
                "--fork copies a recorded session: name it with --resume ID, or use --continue \
                 for the latest one"
                    .into(),
            ));
        }
        Which::Fresh => {
            let (model, approval_mode) = (config.model.clone(), config.approval_mode);
            let recorded = spawn_recorded(config, &store);
            if let Some(e) = recorded.not_recorded {
                eprintln!(
                    "corvid: warning: this session is not recorded ({e}); set CORVID_HOME to a writable directory to record it"
                );
            }
            return Ok(Started {
                handle: recorded.handle,
                transcript: Vec::new(),
                model,
                approval_mode,
            });
        }
        Which::Id(id) => store
            .load(&config.cwd, id)
            .map_err(|e| ConfigError(e.to_string()))?,
        Which::Latest => store
            .latest(&config.cwd)
            .map_err(|e| ConfigError(e.to_string()))?
            .ok_or_else(|| {
                ConfigError(format!(
                    "no recorded session for {}; start one without --continue",
                    config.cwd.display()
                ))
            })?,
    };
    // `--continue` and `--resume` both say what was skipped (a torn last line, damaged lines).
    for warning in &loaded.warnings {
        eprintln!("corvid: warning: {warning}");
    }
    let loaded = if fork {
        fork_session(&store, &loaded, &config.session_id, None)
            .map_err(|e| {
                ConfigError(format!(
                    "cannot fork session {}: {e}",
                    loaded.header.session_id
                ))
            })?
            .loaded
    } else {
        loaded
    };
    let (flag_model, flag_mode) = (config.model.clone(), config.approval_mode);
    let resumed = spawn_resumed(config, &store, &loaded).map_err(|e| ConfigError(e.to_string()))?;
    let resumed_effort = resumed.reasoning_effort;
    let mut started = Started {
        handle: resumed.handle,
        transcript: resumed.transcript,
        model: resumed.model,
        approval_mode: resumed.approval_mode,
    };
    let closed = |_| ConfigError("the agent stopped while starting".into());
    if explicit.model.is_some() && flag_model != started.model {
        started
            .handle
            .submit(Op::SetModel {
                model: flag_model.clone(),
            })
            .map_err(closed)?;
        started.model = flag_model;
    }
    // `--reasoning-effort` wins over the recorded effort, as `--model` over the recorded model.
    if let Some(effort) = explicit
        .reasoning_effort
        .filter(|effort| resumed_effort.is_some_and(|recorded| recorded != *effort))
    {
        started
            .handle
            .submit(Op::SetReasoningEffort { effort })
            .map_err(closed)?;
    }
    if explicit.approval_mode.is_some() && flag_mode != started.approval_mode {
        started
            .handle
            .submit(Op::SetApprovalMode { mode: flag_mode })
            .map_err(closed)?;
        started.approval_mode = flag_mode;
    }
    Ok(started)
}

/// `/resume` in the terminal UI: lists this project's sessions and starts a resumed agent
/// configured exactly like the binary's first one (same settings and flags).
pub struct Launcher {
    setup: Setup,
    store: SessionStore,
}

impl Launcher {
    /// A launcher for the project and settings of `setup`, over the sessions in `store`.
    pub fn new(setup: Setup, store: SessionStore) -> Self {
        Self { setup, store }
    }
}

impl corvid_tui::SessionLauncher for Launcher {
    fn list(&self) -> Result<Vec<SessionSummary>, String> {
        self.store.list(&self.setup.cwd).map_err(|e| e.to_string())
    }

    fn resume(&self, id: &str) -> Result<Resumed, String> {
        let loaded = self
            .store
            .load(&self.setup.cwd, id)
            .map_err(|e| e.to_string())?;
        // The terminal belongs to the UI here: warnings go to the log, not stderr.
        for warning in &loaded.warnings {
            tracing::warn!("{warning}");
        }
        // The id is replaced by the resumed session's own.
        let config = self
            .setup
            .agent_config(&new_session_id())
            .map_err(|e| e.to_string())?;
        spawn_resumed(config, &self.store, &loaded).map_err(|e| e.to_string())
    }

    fn fresh(&self) -> Result<Resumed, String> {
        let config = self
            .setup
            .agent_config(&new_session_id())
            .map_err(|e| e.to_string())?;
        let (model, approval_mode) = (config.model.clone(), config.approval_mode);
        let recorded = spawn_recorded(config, &self.store);
        if let Some(e) = recorded.not_recorded {
            tracing::warn!("the new session is not recorded: {e}");
        }
        Ok(Resumed {
            handle: recorded.handle,
            transcript: Vec::new(),
            model,
            approval_mode,
            // A new session starts with the configured effort, as corvid does at start-up.
            reasoning_effort: None,
        })
    }

    fn fork(
        &self,
        parent: &str,
        at: Option<corvid_tui::BranchAt>,
    ) -> Result<corvid_tui::Branched, String> {
        let loaded = self
            .store
            .load(&self.setup.cwd, parent)
            .map_err(|e| e.to_string())?;
        // The fork gets the new agent's id, so its checkpoints are its own.
        let config = self
            .setup
            .agent_config(&new_session_id())
            .map_err(|e| e.to_string())?;
        // The same preview a rewind takes, fresh: the files may have changed since the
        // dialog showed it.
        let preview = match &at {
            Some(at) => Some(
                at.checkpoints
                    .preview(at.turn, RewindScope::Code)
                    .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        let fork_at = at
            .as_ref()
            .zip(preview.as_ref())
            .map(|(at, preview)| ForkAt {
                checkpoints: &at.checkpoints,
                preview,
                overwrite_conflicts: at.overwrite_conflicts,
            });
        let forked = fork_session(&self.store, &loaded, &config.session_id, fork_at)
            .map_err(|e| e.to_string())?;
        let resumed =
            spawn_resumed(config, &self.store, &forked.loaded).map_err(|e| e.to_string())?;
        Ok(corvid_tui::Branched {
            resumed,
            restored: forked.restored,
        })
    }
}

#[cfg(test)]
mod tests {
    use corvid_core::session::Record;
    use corvid_core::settings::{self, Overrides, ProviderKind};
    use corvid_protocol::{Message, Part, Role, StopReason};
    use corvid_tui::SessionLauncher;
    use pretty_assertions::assert_eq;

    use super::*;

    /// Settings for the demo provider in `cwd` (no settings files).
    fn demo_settings(cwd: &std::path::Path) -> corvid_core::settings::Settings {
        let overrides = Overrides {
            provider: Some(ProviderKind::Demo),
            ..Overrides::default()
        };
        settings::load(cwd, |_| None, &overrides, Default::default())
            .unwrap()
            .settings
    }

    /// A launcher over the demo provider in `cwd`, starting sessions through `store`.
    fn demo_launcher(cwd: &std::path::Path, store: SessionStore) -> Launcher {
        Launcher::new(
            Setup {
                cwd: cwd.to_owned(),
                settings: demo_settings(cwd),
            },
            store,
        )
    }

    #[tokio::test]
    async fn the_launcher_lists_this_projects_sessions_and_resumes_one_with_its_transcript() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let cwd = project.path().canonicalize().unwrap();
        let store = SessionStore::new(home.path());
        let recorder = store.create(&cwd, "s1", "corvid-demo").unwrap();
        for message in [
            Message::user_text("hello"),
            Message {
                role: Role::Assistant,
                parts: vec![Part::Text {
                    text: "hi there".into(),
                }],
            },
        ] {
            recorder.append(&Record::Message { message }).unwrap();
        }
        drop(recorder);
        let launcher = demo_launcher(&cwd, store);

        let listed: Vec<(String, String)> = launcher
            .list()
            .unwrap()
            .into_iter()
            .map(|s| (s.id, s.first_prompt))
            .collect();
        assert_eq!(listed, vec![("s1".to_string(), "hello".to_string())]);

        let resumed = launcher.resume("s1").unwrap();
        assert_eq!(resumed.handle.session_id(), "s1");
        assert_eq!(
            resumed.transcript,
            vec![
                CoreEvent::TaskStarted {
                    task_id: "replay-0".into(),
                    prompt: "hello".into(),
                },
                CoreEvent::TextDelta {
                    text: "hi there".into(),
                },
                CoreEvent::TaskFinished {
                    task_id: "replay-0".into(),
                    stop_reason: StopReason::EndTurn,
                    error: None,
                    pending_summaries: 0,
                },
            ]
        );
        assert!(launcher.resume("nope").is_err());
    }

    #[tokio::test]
    async fn the_launcher_branches_into_a_new_session_with_the_parents_transcript() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let cwd = project.path().canonicalize().unwrap();
        let store = SessionStore::new(home.path());
        let recorder = store.create(&cwd, "s1", "corvid-demo").unwrap();
        recorder
            .append(&Record::Message {
                message: Message::user_text("hello"),
            })
            .unwrap();
        let parent_path = recorder.path().to_owned();
        drop(recorder);
        let parent_bytes = std::fs::read(&parent_path).unwrap();
        let mut settings = demo_settings(&cwd);
        settings.checkpoints.enabled = false;
        let launcher = Launcher::new(
            Setup {
                cwd: cwd.clone(),
                settings,
            },
            store.clone(),
        );
        let branched = launcher.fork("s1", None).unwrap();
        let child = branched.resumed.handle.session_id().to_owned();
        assert_ne!(child, "s1");
        assert!(branched.restored.is_none());
        assert!(
            matches!(&branched.resumed.transcript[0], CoreEvent::TaskStarted { prompt, .. } if prompt == "hello"),
            "{:?}",
            branched.resumed.transcript
        );
        assert_eq!(std::fs::read(&parent_path).unwrap(), parent_bytes);
        let listed = store.list(&cwd).unwrap();
        let fork = listed.iter().find(|s| s.id == child).unwrap();
        assert_eq!(fork.forked_from.as_ref().unwrap().session_id, "s1");
        assert!(launcher.fork("nope", None).is_err());
    }

    #[tokio::test]
    async fn a_fresh_session_from_the_launcher_has_a_new_id_and_leaves_the_old_recording_intact() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let cwd = project.path().canonicalize().unwrap();
        let store = SessionStore::new(home.path());
        let recorder = store.create(&cwd, "s1", "corvid-demo").unwrap();
        recorder
            .append(&Record::Message {
                message: Message::user_text("first session"),
            })
            .unwrap();
        drop(recorder);
        let before = std::fs::read(store.load(&cwd, "s1").unwrap().path).unwrap();
        let launcher = demo_launcher(&cwd, SessionStore::new(home.path()));

        let fresh = launcher.fresh().unwrap();
        assert!(fresh.transcript.is_empty());
        let new_id = fresh.handle.session_id().to_owned();
        assert_ne!(new_id, "s1");
        let (sender, mut events) = fresh.handle.split();
        sender
            .submit(Op::UserTurn {
                prompt: "second session".into(),
                images: Vec::new(),
                context: Vec::new(),
            })
            .unwrap();
        loop {
            if let CoreEvent::TaskFinished { .. } = events.next_event().await.unwrap() {
                break;
            }
        }
        drop(sender);

        let mut listed: Vec<(String, String)> = launcher
            .list()
            .unwrap()
            .into_iter()
            .map(|s| (s.id, s.first_prompt))
            .collect();
        listed.sort();
        let mut expected = vec![
            ("s1".to_string(), "first session".to_string()),
            (new_id, "second session".to_string()),
        ];
        expected.sort();
        assert_eq!(listed, expected);
        let after = std::fs::read(store.load(&cwd, "s1").unwrap().path).unwrap();
        assert_eq!(after, before, "the old recording is untouched");
    }

    /// Starts a fresh session through `launcher` and answers `prompt`; its id, and the agent
    /// still open (a title call ends with its agent, as the user's session would).
    async fn one_turn(
        launcher: &Launcher,
        prompt: &str,
    ) -> (
        String,
        corvid_core::agent::OpSender,
        corvid_core::agent::EventReceiver,
    ) {
        let fresh = launcher.fresh().unwrap();
        let id = fresh.handle.session_id().to_owned();
        let (sender, mut events) = fresh.handle.split();
        sender
            .submit(Op::UserTurn {
                prompt: prompt.into(),
                images: Vec::new(),
                context: Vec::new(),
            })
            .unwrap();
        loop {
            if let CoreEvent::TaskFinished { .. } = events.next_event().await.unwrap() {
                break;
            }
        }
        (id, sender, events)
    }

    #[tokio::test]
    async fn a_session_started_for_the_terminal_ui_is_titled_by_the_fast_model_after_its_first_answer()
     {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let cwd = project.path().canonicalize().unwrap();
        let titled = SessionStore::new(home.path()).titling(Titling::ByFastModel);
        let launcher = demo_launcher(&cwd, titled.clone());
        let (id, _open, _events) = one_turn(&launcher, "explain the parser").await;
        // The title call runs beside the agent: wait for its record (a missing title fails at the deadline, which only bounds a hang).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let title = loop {
            let listed = titled.list(&cwd).unwrap();
            let session = listed.iter().find(|s| s.id == id).unwrap();
            if let Some(title) = &session.title {
                break title.clone();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no title was recorded for {id}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        assert!(!title.trim().is_empty());
        assert!(!title.chars().any(char::is_control), "{title:?}");

        // A store without titling (headless, ACP) records none.
        let plain = SessionStore::new(home.path());
        let (untitled, sender, mut events) =
            one_turn(&demo_launcher(&cwd, plain.clone()), "explain the lexer").await;
        drop(sender);
        while events.next_event().await.is_ok() {}
        let listed = plain.list(&cwd).unwrap();
        let session = listed.iter().find(|s| s.id == untitled).unwrap();
        assert_eq!(session.title, None);
    }
}
