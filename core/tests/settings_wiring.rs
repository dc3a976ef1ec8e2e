//! Settings to an `AgentConfig`: the one wiring every front end shares.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::settings_env::{env_of, settings};
use corvid_core::settings::{Overrides, ProviderKind, agent_config};
use corvid_protocol::ApprovalMode;
use pretty_assertions::assert_eq;

fn demo() -> Overrides {
    Overrides {
        provider: Some(ProviderKind::Demo),
        ..Overrides::default()
    }
}

#[test]
fn the_demo_gets_its_scripted_fast_model_and_the_settings_policies() {
    let env = env_of(&[]);
    let mut s = settings(&env, &demo());
    s.tools.approval_mode = ApprovalMode::AutoEdit;
    s.tools.shell_timeout_ms = 1234;
    s.retry.max_attempts = 3;
    s.retry.initial_delay_ms = 10;
    s.retry.max_delay_ms = 20;
    s.model.fallback = Some("backup".into());
    s.model.max_output_tokens = Some(99);
    s.model.context_window = Some(50_000);
    s.model.compact_threshold = Some(0.6);
    s.model.auto_compact = Some(false);
    let dir = tempfile::tempdir().unwrap();
    let config = agent_config(&s, |k| env.get(k).cloned(), dir.path(), "sess-1").unwrap();
    assert_eq!(
        config.policy.context,
        corvid_core::context::ContextPolicy {
            window_override: Some(50_000),
            threshold: 0.6,
            auto_compact: false,
        }
    );
    assert_eq!(config.session_id, "sess-1");
    assert_eq!(config.provider.name(), "demo");
    assert_eq!(config.model, "corvid-demo");
    assert_eq!(config.fallback_model.as_deref(), Some("backup"));
    assert_eq!(config.max_output_tokens, Some(99));
    assert_eq!(config.approval_mode, ApprovalMode::AutoEdit);
    assert_eq!(config.shell_timeout, Duration::from_millis(1234));
    assert_eq!(
        (
            config.retry.max_attempts,
            config.retry.initial_delay,
            config.retry.max_delay
        ),
        (3, Duration::from_millis(10), Duration::from_millis(20))
    );
    assert_eq!(config.cwd, dir.path());
    assert!(
        config
            .system_prompt
            .contains(&dir.path().display().to_string())
    );
    assert!(config.tools.get("read_file").is_some());
    assert!(config.history.is_empty());
    let summaries = config.summaries.expect("the demo has a fast model");
    assert_eq!(
        (summaries.provider.name(), summaries.model.as_str()),
        ("demo", "corvid-demo-fast")
    );
}

#[test]
fn summaries_follow_the_gate_env_first_then_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (vec![], true, true),
        (vec![], false, false),
        (vec![("CORVID_EMIT_TOOL_USE_SUMMARIES", "0")], true, false),
        (
            vec![("QWEN_CODE_EMIT_TOOL_USE_SUMMARIES", "1")],
            false,
            true,
        ),
        (
            vec![
                ("CORVID_EMIT_TOOL_USE_SUMMARIES", "false"),
                ("QWEN_CODE_EMIT_TOOL_USE_SUMMARIES", "1"),
            ],
            true,
            false,
        ),
    ];
    for (pairs, setting, expected) in cases {
        let env = env_of(&pairs);
        let mut s = settings(&env, &demo());
        s.experimental.emit_tool_use_summaries = setting;
        let config = agent_config(&s, |k| env.get(k).cloned(), dir.path(), "s").unwrap();
        assert_eq!(
            config.summaries.is_some(),
            expected,
            "env {pairs:?}, setting {setting}"
        );
    }
}

#[test]
fn a_real_provider_without_a_fast_model_has_no_summaries() {
    // Building an HTTP provider needs a TLS crypto provider, as in the binary.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let env = env_of(&[
        ("OPENAI_API_KEY", "sk-x"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
    ]);
    let s = settings(&env, &Overrides::default());
    let dir = tempfile::tempdir().unwrap();
    let config = agent_config(&s, |k| env.get(k).cloned(), dir.path(), "s").unwrap();
    assert_eq!(config.provider.name(), "openai");
    assert_eq!(config.model, "gpt-4.1");
    assert!(config.summaries.is_none());

    let s = settings(
        &env,
        &Overrides {
            fast_model: Some("gpt-mini".into()),
            ..Overrides::default()
        },
    );
    let config = agent_config(&s, |k| env.get(k).cloned(), dir.path(), "s").unwrap();
    let summaries = config.summaries.unwrap();
    assert_eq!(
        (summaries.provider.name(), summaries.model.as_str()),
        ("openai", "gpt-mini")
    );
}

#[test]
fn no_provider_is_the_error_with_the_demo_hint() {
    let env = env_of(&[]);
    let s = settings(&env, &Overrides::default());
    let dir = tempfile::tempdir().unwrap();
    let err = agent_config(&s, |k| env.get(k).cloned(), dir.path(), "s")
        .err()
        .unwrap();
    assert!(err.to_string().contains("corvid --demo"), "{err}");
}

#[test]
fn sessions_get_the_task_tool_with_the_projects_agent_files_and_the_subagent_turn_limit() {
    let env = env_of(&[]);
    let mut s = settings(&env, &demo());
    s.agent.subagent_max_turns = 7;
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join(".corvid").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\ndescription: Reviews a diff\ntools: read_file\n---\nBe strict.\n",
    )
    .unwrap();
    // Project agent files apply in a trusted folder only (issue 25, finding 6).
    s.project = corvid_core::settings::ProjectTrust::vouched(
        Some(dir.path().to_owned()),
        corvid_core::settings::Trust::Trusted,
    );
    let config = agent_config(&s, |k| env.get(k).cloned(), dir.path(), "s").unwrap();
    let corvid_core::policy::Subagents::On {
        max_turns,
        time_limit,
        types,
    } = config.policy.subagents
    else {
        panic!("subagents are off");
    };
    assert_eq!(max_turns, corvid_core::policy::MaxTurns(7));
    assert_eq!(time_limit, Duration::from_secs(600));
    let names: Vec<&str> = types.types.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["general", "explore", "reviewer"]);
    assert!(types.warnings.is_empty(), "{:?}", types.warnings);
}

#[test]
fn agent_subagents_false_takes_the_task_tool_away() {
    let env = env_of(&[]);
    let mut s = settings(&env, &demo());
    s.agent.subagents = false;
    let dir = tempfile::tempdir().unwrap();
    let config = agent_config(&s, |k| env.get(k).cloned(), dir.path(), "s").unwrap();
    assert!(matches!(
        config.policy.subagents,
        corvid_core::policy::Subagents::Off
    ));
}
