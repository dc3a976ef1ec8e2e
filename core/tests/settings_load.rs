//! Settings loading: precedence, file errors, unknown keys, value forms (SPEC §1.2).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use corvid_core::settings::{
    FastModelSetting, FastModelSpec, Overrides, ProviderKind, Settings, SettingsError,
    SettingsFiles, Trust, TrustGrant, UiTheme, load, load_from,
};
use corvid_protocol::ApprovalMode;
use pretty_assertions::assert_eq;

/// A user and a project settings file in a temp dir, plus an env map. The project counts as
/// trusted (what an untrusted one may not do is in settings_trust.rs).
struct Fixture {
    _dir: tempfile::TempDir,
    files: SettingsFiles,
    env: HashMap<String, String>,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let files = SettingsFiles {
            user: Some(dir.path().join("home").join("settings.json")),
            project: Some(
                dir.path()
                    .join("project")
                    .join(".corvid")
                    .join("settings.json"),
            ),
        };
        Self {
            _dir: dir,
            files,
            env: HashMap::new(),
        }
    }

    fn user(&self, text: &str) -> &Self {
        write(self.files.user.as_ref().unwrap(), text);
        self
    }

    fn project(&self, text: &str) -> &Self {
        write(self.files.project.as_ref().unwrap(), text);
        self
    }

    fn env(&mut self, name: &str, value: &str) -> &mut Self {
        self.env.insert(name.into(), value.into());
        self
    }

    fn load(&self, overrides: &Overrides) -> Result<corvid_core::settings::Loaded, SettingsError> {
        load_from(
            &self.files,
            Trust::Trusted,
            |k| self.env.get(k).cloned(),
            overrides,
        )
    }

    /// The settings these files and env give without any flags.
    fn settings(&self) -> Settings {
        self.load(&Overrides::default()).unwrap().settings
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn flags_model(name: &str) -> Overrides {
    Overrides {
        model: Some(name.into()),
        ..Overrides::default()
    }
}

#[test]
fn each_source_overrides_the_ones_below_it_for_the_model_name() {
    // [user file, project file, env OPENAI_MODEL, flag, expected model.name]
    let cases: Vec<[Option<&str>; 5]> = vec![
        [None, None, None, None, None],
        [Some("u"), None, None, None, Some("u")],
        [Some("u"), Some("p"), None, None, Some("p")],
        [Some("u"), Some("p"), Some("e"), None, Some("e")],
        [Some("u"), Some("p"), Some("e"), Some("f"), Some("f")],
        [None, None, Some("e"), None, Some("e")],
        [None, Some("p"), None, Some("f"), Some("f")],
    ];
    for [user, project, env, flag, expected] in cases {
        let mut fx = Fixture::new();
        fx.env("OPENAI_API_KEY", "sk-test");
        if let Some(u) = user {
            fx.user(&format!(r#"{{"model": {{"name": "{u}"}}}}"#));
        }
        if let Some(p) = project {
            fx.project(&format!(r#"{{"model": {{"name": "{p}"}}}}"#));
        }
        if let Some(e) = env {
            fx.env("OPENAI_MODEL", e);
        }
        let overrides = flag.map(flags_model).unwrap_or_default();
        let loaded = fx.load(&overrides).unwrap();
        assert_eq!(
            loaded.settings.model.name.as_deref(),
            expected,
            "user={user:?} project={project:?} env={env:?} flag={flag:?}"
        );
    }
}

#[test]
fn the_base_url_comes_from_the_user_file_then_the_env_never_from_a_project_file() {
    let mut fx = Fixture::new();
    fx.env("OPENAI_API_KEY", "sk-test");
    fx.user(r#"{"model": {"baseUrl": "http://user"}}"#);
    assert_eq!(fx.settings().model.base_url.as_deref(), Some("http://user"));
    fx.project(r#"{"model": {"baseUrl": "http://project"}}"#);
    let loaded = fx.load(&Overrides::default()).unwrap();
    assert_eq!(
        (
            loaded.settings.model.base_url.as_deref(),
            loaded.warnings.len()
        ),
        (Some("http://user"), 1)
    );
    fx.env("OPENAI_BASE_URL", "http://env");
    assert_eq!(fx.settings().model.base_url.as_deref(), Some("http://env"));
}

#[test]
fn approval_mode_and_compact_mode_follow_defaults_files_then_flags() {
    let fx = Fixture::new();
    let s = fx.settings();
    assert_eq!(
        (s.tools.approval_mode, s.ui.compact_mode),
        (ApprovalMode::Default, false)
    );

    fx.user(r#"{"tools": {"approvalMode": "auto-edit"}, "ui": {"compactMode": true}}"#);
    let s = fx.settings();
    assert_eq!(
        (s.tools.approval_mode, s.ui.compact_mode),
        (ApprovalMode::AutoEdit, true)
    );

    fx.project(r#"{"tools": {"approvalMode": "default"}}"#);
    let s = fx.settings();
    assert_eq!(
        (s.tools.approval_mode, s.ui.compact_mode),
        (ApprovalMode::Default, true)
    );

    let flags = Overrides {
        approval_mode: Some(ApprovalMode::Yolo),
        compact_mode: Some(false),
        ..Overrides::default()
    };
    let s = fx.load(&flags).unwrap().settings;
    assert_eq!(
        (s.tools.approval_mode, s.ui.compact_mode),
        (ApprovalMode::Yolo, false)
    );
}

#[test]
fn defaults_match_the_spec() {
    let fx = Fixture::new();
    let s = fx.settings();
    // Which project the settings were loaded for is not a default.
    let expected = corvid_core::settings::Settings {
        project: s.project.clone(),
        ..corvid_core::settings::Settings::default()
    };
    assert_eq!(s, expected);
    assert_eq!(s.tools.shell_timeout_ms, 120_000);
    assert_eq!(
        (
            s.retry.max_attempts,
            s.retry.initial_delay_ms,
            s.retry.max_delay_ms
        ),
        (5, 1_000, 30_000)
    );
    assert!(s.experimental.emit_tool_use_summaries);
    assert_eq!(s.model.provider, None);
}

#[test]
fn every_documented_key_is_read_from_a_file_with_comments() {
    let fx = Fixture::new();
    fx.user(
        r#"// user settings
        {
          /* the main model */
          "model": {
            "provider": "anthropic",
            "name": "claude-x",
            "baseUrl": "http://localhost:9",
            "apiKeyEnv": "MY_KEY",
            "fallback": "claude-y",
            "maxOutputTokens": 4096, // trailing comma below is fine
          },
          "fastModel": "claude-fast",
          "ui": { "compactMode": true },
          "experimental": { "emitToolUseSummaries": false },
          "tools": { "approvalMode": "yolo", "shellTimeoutMs": 5000 },
          "retry": { "maxAttempts": 2, "initialDelayMs": 10, "maxDelayMs": 20 },
          "agent": { "maxTurns": 50, "subagents": false, "subagentMaxTurns": 12,
                     "subagentTimeoutMs": 9000, "maxConcurrentSubagents": 2,
                     "maxSubagentsPerTurn": 5 }
        }"#,
    );
    let loaded = fx.load(&Overrides::default()).unwrap();
    assert_eq!(loaded.warnings, Vec::<String>::new());
    let s = loaded.settings;
    assert_eq!(
        (
            s.agent.max_turns,
            s.agent.subagents,
            s.agent.subagent_max_turns,
            s.agent.subagent_timeout_ms
        ),
        (50, false, 12, 9000)
    );
    assert_eq!(
        s.agent.subagent_caps,
        corvid_core::policy::SubagentCaps {
            concurrent: 2,
            per_turn: 5
        }
    );
    assert_eq!(s.model.provider, Some(ProviderKind::Anthropic));
    assert_eq!(s.model.name.as_deref(), Some("claude-x"));
    assert_eq!(s.model.base_url.as_deref(), Some("http://localhost:9"));
    assert_eq!(s.model.api_key_env.as_deref(), Some("MY_KEY"));
    assert_eq!(s.model.fallback.as_deref(), Some("claude-y"));
    assert_eq!(s.model.max_output_tokens, Some(4096));
    assert_eq!(
        s.fast_model,
        Some(FastModelSetting::Name("claude-fast".into()))
    );
    assert!(s.ui.compact_mode);
    assert!(!s.experimental.emit_tool_use_summaries);
    assert_eq!(s.tools.approval_mode, ApprovalMode::Yolo);
    assert_eq!(s.tools.shell_timeout_ms, 5000);
    assert_eq!(
        (
            s.retry.max_attempts,
            s.retry.initial_delay_ms,
            s.retry.max_delay_ms
        ),
        (2, 10, 20)
    );
}

#[test]
fn fast_model_may_be_an_object_on_another_provider() {
    let fx = Fixture::new();
    fx.user(
        r#"{"fastModel": {"provider": "openai", "name": "gpt-mini", "baseUrl": "http://fast", "apiKeyEnv": "FAST_KEY"}}"#,
    );
    let s = fx.settings();
    assert_eq!(
        s.fast_model,
        Some(FastModelSetting::Model(FastModelSpec {
            provider: Some(ProviderKind::Openai),
            name: "gpt-mini".into(),
            base_url: Some("http://fast".into()),
            api_key_env: Some("FAST_KEY".into()),
        }))
    );
}

#[test]
fn the_fast_model_flag_replaces_an_object_from_a_file() {
    let fx = Fixture::new();
    fx.user(r#"{"fastModel": {"provider": "openai", "name": "gpt-mini"}}"#);
    let flags = Overrides {
        fast_model: Some("other".into()),
        ..Overrides::default()
    };
    let s = fx.load(&flags).unwrap().settings;
    assert_eq!(s.fast_model, Some(FastModelSetting::Name("other".into())));
}

#[test]
fn a_malformed_file_is_an_error_naming_file_line_and_column() {
    let fx = Fixture::new();
    fx.project("{\n  \"model\": {\n    \"name\": \"x\"\n    \"provider\": \"openai\"\n  }\n}\n");
    let err = fx.load(&Overrides::default()).unwrap_err();
    let path = fx.files.project.as_ref().unwrap().display().to_string();
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("{path}:4:5: ")),
        "message should start with {path}:4:5, got: {msg}"
    );
}

#[test]
fn a_file_cut_short_reports_the_position_of_its_end() {
    let fx = Fixture::new();
    fx.user("{\n  \"model\": {");
    let err = fx.load(&Overrides::default()).unwrap_err();
    let SettingsError::Syntax {
        path, line, column, ..
    } = err
    else {
        panic!("expected a syntax error, got {err:?}");
    };
    assert_eq!((path, line), (fx.files.user.clone().unwrap(), 2));
    assert!(column >= 11, "column {column}");
}

#[test]
fn an_unknown_key_is_a_warning_naming_key_and_file() {
    let fx = Fixture::new();
    fx.user(r#"{"modle": {}, "model": {"nmae": "x"}, "ui": {"compactMode": true}}"#);
    let loaded = fx.load(&Overrides::default()).unwrap();
    let path = fx.files.user.as_ref().unwrap().display().to_string();
    let mut warnings = loaded.warnings.clone();
    warnings.sort();
    assert_eq!(
        warnings,
        vec![
            format!("{path}: unknown settings key `model.nmae` (ignored)"),
            format!("{path}: unknown settings key `modle` (ignored)"),
        ]
    );
    assert!(loaded.settings.ui.compact_mode);
}

#[test]
fn a_value_of_the_wrong_type_is_an_error_naming_the_key() {
    let fx = Fixture::new();
    fx.project(r#"{"tools": {"shellTimeoutMs": "soon"}}"#);
    let err = fx.load(&Overrides::default()).unwrap_err();
    let path = fx.files.project.as_ref().unwrap().display().to_string();
    assert_eq!(
        err.to_string(),
        format!(
            "{path}: settings key `tools.shellTimeoutMs` must be a whole number, found the string \"soon\""
        )
    );
}

#[test]
fn a_section_that_is_not_an_object_is_an_error_naming_it() {
    let fx = Fixture::new();
    fx.user(r#"{"ui": true}"#);
    let err = fx.load(&Overrides::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("settings key `ui` must be an object, found the boolean true"),
        "{err}"
    );
}

#[test]
fn an_unknown_provider_or_approval_mode_is_an_error_listing_the_choices() {
    let fx = Fixture::new();
    fx.user(r#"{"model": {"provider": "mistral"}}"#);
    let msg = fx.load(&Overrides::default()).unwrap_err().to_string();
    assert!(
        msg.contains(
            "`model.provider` is `mistral`; expected `openai`, `openai-responses`, `anthropic`, `gemini` or `demo`"
        ),
        "{msg}"
    );

    fx.user(r#"{"tools": {"approvalMode": "always"}}"#);
    let msg = fx.load(&Overrides::default()).unwrap_err().to_string();
    assert!(msg.contains("`tools.approvalMode` is `always`"), "{msg}");
}

#[test]
fn missing_and_empty_files_are_fine() {
    let fx = Fixture::new();
    fx.project("  \n");
    let loaded = fx.load(&Overrides::default()).unwrap();
    assert_eq!(loaded.warnings, Vec::<String>::new());
}

#[test]
fn corvid_home_locates_the_user_file_and_the_project_file_is_under_the_working_dir() {
    let dir = tempfile::tempdir().unwrap();
    let home: PathBuf = dir.path().join("corvid-home");
    let project = dir.path().join("proj");
    write(
        &home.join("settings.json"),
        r#"{"model": {"name": "from-home"}}"#,
    );
    write(
        &project.join(".corvid").join("settings.json"),
        r#"{"tools": {"shellTimeoutMs": 5}}"#,
    );
    let env = |k: &str| (k == "CORVID_HOME").then(|| home.display().to_string());
    let s = load(&project, env, &Overrides::default(), TrustGrant::ThisRun)
        .unwrap()
        .settings;
    assert_eq!(s.model.name.as_deref(), Some("from-home"));
    assert_eq!(s.tools.shell_timeout_ms, 5);
}

#[test]
fn the_project_file_is_found_from_a_subdirectory_but_not_beyond_the_repository() {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().join("outer");
    let repo = outer.join("repo");
    let sub = repo.join("src").join("deep");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let home = dir.path().join("home").display().to_string();
    let no_home = |k: &str| (k == "CORVID_HOME").then(|| home.clone());

    // Settings above the repository root are not the project's.
    write(
        &outer.join(".corvid").join("settings.json"),
        r#"{"model": {"name": "outside"}}"#,
    );
    let files = SettingsFiles::discover(&sub, no_home);
    assert_eq!(
        files.project,
        Some(sub.join(".corvid").join("settings.json"))
    );

    write(
        &repo.join(".corvid").join("settings.json"),
        r#"{"model": {"name": "repo"}}"#,
    );
    let files = SettingsFiles::discover(&sub, no_home);
    assert_eq!(
        files.project,
        Some(repo.join(".corvid").join("settings.json"))
    );
    let s = load(&sub, no_home, &Overrides::default(), TrustGrant::ThisRun)
        .unwrap()
        .settings;
    assert_eq!(s.model.name.as_deref(), Some("repo"));
}

#[test]
fn the_context_window_and_compaction_settings_are_read_and_bad_values_named() {
    let fx = Fixture::new();
    fx.user(
        r#"{"model": {"contextWindow": 40000, "compactThreshold": 0.5, "autoCompact": false}}"#,
    );
    let settings = fx.settings();
    assert_eq!(settings.model.context_window, Some(40_000));
    assert_eq!(settings.model.compact_threshold, Some(0.5));
    assert_eq!(settings.model.auto_compact, Some(false));

    for (text, expected) in [
        (
            r#"{"model": {"compactThreshold": 1.5}}"#,
            "settings key `model.compactThreshold` is `1.5`; expected a share of the window above 0 and at most 1, e.g. 0.8",
        ),
        (
            r#"{"model": {"compactThreshold": "80%"}}"#,
            "settings key `model.compactThreshold` must be a number such as 0.8",
        ),
        (
            r#"{"model": {"contextWindow": 100}}"#,
            "settings key `model.contextWindow` is `100`; expected a number of tokens of at least 1024",
        ),
    ] {
        let fx = Fixture::new();
        fx.user(text);
        let err = fx.load(&Overrides::default()).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
    }
}

#[test]
fn model_api_responses_picks_the_responses_api_with_the_openai_key_url_and_reasoning() {
    let mut fx = Fixture::new();
    fx.user(
        r#"{"model": {"provider": "openai", "api": "responses", "store": true,
            "reasoningEffort": "high", "reasoningSummary": "concise"}}"#,
    );
    fx.env("OPENAI_API_KEY", "sk-o")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1");
    let s = fx.settings();
    assert_eq!(s.model.provider, Some(ProviderKind::OpenaiResponses));
    assert_eq!(
        s.model.reasoning_effort,
        Some(corvid_providers::ReasoningEffort::High)
    );
    assert_eq!(
        s.model.reasoning_summary,
        Some(corvid_providers::ReasoningSummary::Concise)
    );
    assert_eq!(s.model.store, Some(true));
    let env = fx.env.clone();
    let resolved = corvid_core::settings::resolve_provider(&s, |k| env.get(k).cloned()).unwrap();
    assert_eq!(resolved.kind, ProviderKind::OpenaiResponses);
    assert_eq!(resolved.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(resolved.model, "gpt-5.1-codex");
}

#[test]
fn openai_api_in_the_environment_picks_the_api_and_the_flag_names_the_provider() {
    let mut fx = Fixture::new();
    fx.env("OPENAI_API_KEY", "sk-o")
        .env("OPENAI_API", "responses");
    assert_eq!(
        fx.settings().model.provider,
        Some(ProviderKind::OpenaiResponses)
    );
    fx.env("OPENAI_API", "chat");
    assert_eq!(fx.settings().model.provider, Some(ProviderKind::Openai));
    let flags = Overrides {
        provider: Some(ProviderKind::OpenaiResponses),
        reasoning_effort: Some(corvid_providers::ReasoningEffort::Minimal),
        ..Overrides::default()
    };
    let s = fx.load(&flags).unwrap().settings;
    assert_eq!(s.model.provider, Some(ProviderKind::OpenaiResponses));
    assert_eq!(
        s.model.reasoning_effort,
        Some(corvid_providers::ReasoningEffort::Minimal)
    );
}

#[test]
fn an_unknown_model_api_or_reasoning_value_is_an_error_naming_the_field() {
    let mut fx = Fixture::new();
    fx.user(r#"{"model": {"api": "completions"}}"#);
    let msg = fx.load(&Overrides::default()).unwrap_err().to_string();
    assert!(
        msg.contains("`model.api` is `completions`; expected `chat` or `responses`"),
        "{msg}"
    );
    fx.user(r#"{"model": {"reasoningEffort": "max"}}"#);
    let msg = fx.load(&Overrides::default()).unwrap_err().to_string();
    assert!(msg.contains("`model.reasoningEffort` is `max`"), "{msg}");
    fx.user(r#"{"model": {"reasoningSummary": "short"}}"#);
    let msg = fx.load(&Overrides::default()).unwrap_err().to_string();
    assert!(msg.contains("`model.reasoningSummary` is `short`"), "{msg}");
    fx.user(r#"{"model": {"store": "yes"}}"#);
    let msg = fx.load(&Overrides::default()).unwrap_err().to_string();
    assert!(msg.contains("model.store"), "{msg}");
    fx.user("{}");
    fx.env("OPENAI_API", "assistants");
    let msg = fx.load(&Overrides::default()).unwrap_err().to_string();
    assert!(
        msg.contains("`OPENAI_API` is `assistants`; expected `chat` or `responses`"),
        "{msg}"
    );
}

#[test]
fn only_a_gemini_key_picks_gemini_with_its_model_and_base_url_variables() {
    let mut fx = Fixture::new();
    fx.env("GEMINI_API_KEY", "g-key")
        .env("GEMINI_BASE_URL", "http://127.0.0.1:9/v1beta/")
        .env("GEMINI_MODEL", "gemini-3-pro-preview");
    let s = fx.settings();
    assert_eq!(s.model.provider, Some(ProviderKind::Gemini));
    let env = fx.env.clone();
    let resolved = corvid_core::settings::resolve_provider(&s, |k| env.get(k).cloned()).unwrap();
    assert_eq!(resolved.kind, ProviderKind::Gemini);
    assert_eq!(resolved.base_url, "http://127.0.0.1:9/v1beta");
    assert_eq!(resolved.model, "gemini-3-pro-preview");
    // Anthropic and OpenAI keys still come first.
    fx.env("OPENAI_API_KEY", "sk-o");
    assert_eq!(fx.settings().model.provider, Some(ProviderKind::Openai));
}

#[test]
fn gemini_defaults_to_google_s_endpoint_and_names_its_key_when_missing() {
    let fx = Fixture::new();
    let flags = Overrides {
        provider: Some(ProviderKind::Gemini),
        ..Overrides::default()
    };
    let s = fx.load(&flags).unwrap().settings;
    let err = corvid_core::settings::resolve_provider(&s, |_| None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("GEMINI_API_KEY"), "{err}");
    let resolved = corvid_core::settings::resolve_provider(&s, |k| {
        (k == "GEMINI_API_KEY").then(|| "k".into())
    })
    .unwrap();
    assert_eq!(
        resolved.base_url,
        "https://generativelanguage.googleapis.com/v1beta"
    );
}

#[test]
fn checkpoints_are_on_unless_a_file_turns_them_off_and_auto_is_a_mode() {
    let fx = Fixture::new();
    let loaded = fx.load(&Overrides::default()).unwrap();
    assert!(loaded.settings.checkpoints.enabled);

    fx.user(r#"{"checkpoints": {"enabled": false}, "tools": {"approvalMode": "auto"}}"#);
    let loaded = fx.load(&Overrides::default()).unwrap();
    assert!(!loaded.settings.checkpoints.enabled);
    assert_eq!(loaded.settings.tools.approval_mode, ApprovalMode::Auto);

    fx.user(r#"{"checkpoints": {"enabled": "yes"}}"#);
    let msg = fx.load(&Overrides::default()).unwrap_err().to_string();
    assert!(msg.contains("checkpoints.enabled"), "{msg}");
}

#[test]
fn background_settings_default_to_eight_processes_and_no_auto_background() {
    let fx = Fixture::new();
    let defaults = fx.load(&Overrides::default()).unwrap().settings.tools;
    assert_eq!(
        (defaults.max_background, defaults.auto_background_ms),
        (8, None)
    );

    fx.user(r#"{"tools": {"maxBackground": 3, "autoBackgroundMs": 120000}}"#);
    let set = fx.load(&Overrides::default()).unwrap();
    assert_eq!(set.warnings, Vec::<String>::new());
    assert_eq!(
        (
            set.settings.tools.max_background,
            set.settings.tools.auto_background_ms
        ),
        (3, Some(120_000))
    );

    fx.user(r#"{"tools": {"autoBackgroundMs": 0}}"#);
    let err = fx.load(&Overrides::default()).unwrap_err().to_string();
    assert!(err.contains("`tools.autoBackgroundMs`"), "{err}");
}

#[test]
fn ui_theme_defaults_to_auto_takes_dark_or_light_and_rejects_other_words() {
    let fx = Fixture::new();
    assert_eq!(fx.settings().ui.theme, UiTheme::Auto);
    fx.user(r#"{"ui": {"theme": "light"}}"#);
    assert_eq!(fx.settings().ui.theme, UiTheme::Light);
    fx.user(r#"{"ui": {"theme": "solarized"}}"#);
    let message = fx.load(&Overrides::default()).unwrap_err().to_string();
    assert!(message.contains("ui.theme"), "{message}");
    assert!(message.contains("`auto`, `dark` or `light`"), "{message}");
}
