//! Running the handlers of one event: select them, run them in parallel with the right
//! environment, and combine what they said.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use corvid_tools::hooks_runner::{HookCommand, HookRun, run_hook};
use corvid_tools::shell::EnvFilter;

use super::config::{Handler, HookConfigError, HookScope, HooksConfig};
use super::contract::{HookContext, HookPayload, interpret};
use super::outcome::HookOutcome;
use crate::settings::{Settings, SettingsFiles};

/// Starts one handler and reports how it ended: [`run_hook`] (a `bash -c` process) unless
/// [`Hooks::with_runner`] gave another. Everything around it (selection, the contract, the
/// combined decision, what the loop does with it) is the same either way.
pub type HookRunner = Arc<dyn Fn(HookCommand) -> BoxFuture<'static, HookRun> + Send + Sync>;

/// A session's hooks, ready to run. Cheap to share behind an `Arc`.
#[derive(Clone)]
pub struct Hooks {
    config: HooksConfig,
    /// The user's environment, for the user's own handlers.
    user_env: Vec<(OsString, OsString)>,
    /// The shell tool's filtered environment, for the project's handlers.
    project_env: Vec<(OsString, OsString)>,
    runner: HookRunner,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Hooks {
    /// `env` is corvid's environment; project handlers get it through `filter` (the shell
    /// tool's: no provider keys or secrets).
    pub fn new(config: HooksConfig, env: Vec<(OsString, OsString)>, filter: &EnvFilter) -> Self {
        Self {
            config,
            project_env: filter.apply(env.iter().cloned()),
            user_env: env,
            runner: Arc::new(|command| Box::pin(run_hook(command))),
        }
    }

    /// These hooks with their handlers started by `runner` instead of as processes: the
    /// randomized fault model (`tests/common/fault_model/`) answers each handler on a paused
    /// clock, where a real process's timeout would fire at once.
    pub fn with_runner(mut self, runner: HookRunner) -> Self {
        self.runner = runner;
        self
    }

    /// A session's hooks: its settings files' `hooks` blocks (the project's as `settings`
    /// accepts them), run with this process's environment; project handlers get it through
    /// the shell tool's filter. `home` is the user's home folder (`~/.claude`).
    pub fn load(
        settings: &Settings,
        files: &SettingsFiles,
        home: Option<&Path>,
    ) -> Result<Self, HookConfigError> {
        let config = HooksConfig::load(files, &settings.project, home)?;
        let filter = crate::settings::shell_policy(settings)
            .map_err(HookConfigError::Environment)?
            .env;
        Ok(Self::new(config, std::env::vars_os().collect(), &filter))
    }

    /// The configuration, for listings and warnings.
    pub fn config(&self) -> &HooksConfig {
        &self.config
    }

    /// The handlers `payload` selects, each command once (the first one's settings, with
    /// `onError: "block"` if any of them says so).
    pub fn matching(&self, payload: &HookPayload) -> Vec<Handler> {
        if self.config.disabled {
            return Vec::new();
        }
        let names: Vec<&str> = payload.match_names.iter().map(String::as_str).collect();
        let mut selected: Vec<Handler> = Vec::new();
        for handler in &self.config.handlers {
            if handler.event != payload.event
                || (payload.event.uses_matcher() && !handler.matcher.matches_any(&names))
            {
                continue;
            }
            if let (Some(condition), Some((name, _))) = (&handler.condition, &payload.tool) {
                let input = payload.fields.get("tool_input").unwrap_or(&Value::Null);
                if !condition.covers(name, input, &payload.cwd) {
                    continue;
                }
            }
            match selected.iter_mut().find(|h| h.command == handler.command) {
                Some(same) => same.block_on_error |= handler.block_on_error,
                None => selected.push(handler.clone()),
            }
        }
        selected
    }

    /// Runs every handler `payload` selects, in parallel, and combines their decisions. With
    /// none configured it returns at once without starting anything.
    pub async fn run(&self, ctx: &HookContext, payload: &HookPayload) -> HookOutcome {
        self.run_within(ctx, payload, None).await
    }

    /// [`Self::run`] where no handler runs longer than `budget` (the handlers run in
    /// parallel, so the event takes at most that long): for events at the end of a session,
    /// which must not hold its exit up.
    pub async fn run_within(
        &self,
        ctx: &HookContext,
        payload: &HookPayload,
        budget: Option<Duration>,
    ) -> HookOutcome {
        let mut handlers = self.matching(payload);
        if let Some(budget) = budget {
            for handler in &mut handlers {
                handler.timeout = handler.timeout.min(budget);
            }
        }
        if handlers.is_empty() {
            return HookOutcome::none(payload.event);
        }
        let stdin = payload.stdin(ctx);
        let runs = handlers.iter().map(|handler| {
            let mut env = match handler.source.scope {
                HookScope::User => self.user_env.clone(),
                HookScope::Project => self.project_env.clone(),
            };
            env.retain(|(k, _)| k != "CLAUDE_PROJECT_DIR" && k != "CORVID_PROJECT_DIR");
            for key in ["CLAUDE_PROJECT_DIR", "CORVID_PROJECT_DIR"] {
                env.push((key.into(), ctx.project_dir.clone().into_os_string()));
            }
            let command = HookCommand {
                command: handler.command.clone(),
                stdin: stdin.clone(),
                cwd: ctx.project_dir.clone(),
                env,
                timeout: handler.timeout,
            };
            let runner = self.runner.clone();
            async move {
                let run = runner(command).await;
                tracing::debug!(event = %payload.event, command = %handler.command, exit = ?run.exit, ms = run.duration.as_millis() as u64, "hook ran");
                interpret(payload.event, handler, run)
            }
        });
        let reports = futures::future::join_all(runs).await;
        HookOutcome::combine(payload.event, reports, payload.tool.as_ref())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use corvid_protocol::ApprovalMode;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::super::{Decision, HookEvent};
    use super::*;

    fn hooks(dir: &Path, block: &str) -> Hooks {
        let mut config = HooksConfig::default();
        config
            .add_file(&dir.join("settings.json"), block, HookScope::User)
            .unwrap();
        let env = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap()),
            ("OPENAI_API_KEY".into(), "sk-secret".into()),
        ];
        Hooks::new(config, env, &EnvFilter::default())
    }

    fn ctx(dir: &Path) -> HookContext {
        HookContext {
            session_id: "s1".into(),
            transcript_path: None,
            project_dir: dir.to_owned(),
            cwd: dir.to_owned(),
            approval_mode: ApprovalMode::Default,
            agent: None,
        }
    }

    fn shell_call(dir: &Path, command: &str) -> HookPayload {
        HookPayload::tool(
            HookEvent::PreToolUse,
            "run_shell_command",
            "call-1",
            &json!({"command": command}),
            dir,
        )
    }

    fn decision_json(decision: &str) -> String {
        format!(
            r#"echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "{decision}", "permissionDecisionReason": "{decision} says so"}}}}'"#
        )
    }

    fn block_of(commands: &[String]) -> String {
        let handlers: Vec<_> = commands
            .iter()
            .map(|c| json!({"type": "command", "command": c}))
            .collect();
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": handlers}]}}).to_string()
    }

    #[tokio::test]
    async fn deny_wins_over_ask_which_wins_over_allow() {
        let dir = tempfile::tempdir().unwrap();
        let all = block_of(&[
            decision_json("allow"),
            decision_json("deny"),
            decision_json("ask"),
        ]);
        let outcome = hooks(dir.path(), &all)
            .run(&ctx(dir.path()), &shell_call(dir.path(), "ls"))
            .await;
        assert_eq!(outcome.decision, Decision::Block("deny says so".into()));
        let no_deny = block_of(&[decision_json("allow"), decision_json("ask")]);
        let outcome = hooks(dir.path(), &no_deny)
            .run(&ctx(dir.path()), &shell_call(dir.path(), "ls"))
            .await;
        assert_eq!(outcome.decision, Decision::Ask("ask says so".into()));
        let allow = block_of(&[decision_json("allow")]);
        let outcome = hooks(dir.path(), &allow)
            .run(&ctx(dir.path()), &shell_call(dir.path(), "ls"))
            .await;
        assert_eq!(outcome.decision, Decision::Allow("allow says so".into()));
    }

    #[tokio::test]
    async fn exit_2_blocks_even_when_its_json_says_allow() {
        let dir = tempfile::tempdir().unwrap();
        let block = block_of(&[format!("{}; echo nope >&2; exit 2", decision_json("allow"))]);
        let outcome = hooks(dir.path(), &block)
            .run(&ctx(dir.path()), &shell_call(dir.path(), "ls"))
            .await;
        assert_eq!(outcome.decision, Decision::Block("nope".into()));
    }

    #[tokio::test]
    async fn a_matcher_that_selects_nothing_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let block = r#"{"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "exit 2"}]}]}}"#;
        let outcome = hooks(dir.path(), block)
            .run(&ctx(dir.path()), &shell_call(dir.path(), "ls"))
            .await;
        assert_eq!(outcome.decision, Decision::Proceed);
        assert!(outcome.reports.is_empty());
    }

    #[tokio::test]
    async fn project_handlers_do_not_see_provider_keys_but_user_handlers_do() {
        let dir = tempfile::tempdir().unwrap();
        let block = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo \"key=${OPENAI_API_KEY:-none} dir=$CLAUDE_PROJECT_DIR\""}]}]}}"#;
        let mut config = HooksConfig::default();
        config
            .add_file(&dir.path().join("p.json"), block, HookScope::Project)
            .unwrap();
        let env = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap()),
            ("OPENAI_API_KEY".into(), "sk-secret".into()),
        ];
        let project = Hooks::new(config, env, &EnvFilter::default());
        let payload = HookPayload::new(HookEvent::Stop);
        let outcome = project.run(&ctx(dir.path()), &payload).await;
        assert_eq!(
            outcome.reports[0].stdout.trim(),
            format!("key=none dir={}", dir.path().display())
        );
        let user = hooks(dir.path(), block)
            .run(&ctx(dir.path()), &payload)
            .await;
        assert!(user.reports[0].stdout.starts_with("key=sk-secret"));
    }

    #[tokio::test]
    async fn a_handler_with_if_runs_only_for_the_calls_its_rule_covers() {
        let dir = tempfile::tempdir().unwrap();
        let block = r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo no git today >&2; exit 2", "if": "Bash(git *)"}]}]}}"#;
        let hooks = hooks(dir.path(), block);
        let outcome = hooks
            .run(&ctx(dir.path()), &shell_call(dir.path(), "git push"))
            .await;
        assert_eq!(outcome.decision, Decision::Block("no git today".into()));
        let outcome = hooks
            .run(&ctx(dir.path()), &shell_call(dir.path(), "ls"))
            .await;
        assert!(outcome.reports.is_empty());
    }
}
