//! Resolving the provider, model, URL and key from settings (SPEC §1.2).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::settings_env::{env_of, settings};
use corvid_core::settings::{
    FastModelSetting, FastModelSpec, Overrides, ProviderKind, ResolvedModel, Secret,
    resolve_fast_model, resolve_provider,
};
use pretty_assertions::assert_eq;

fn resolve(pairs: &[(&str, &str)], overrides: &Overrides) -> ResolvedModel {
    let env = env_of(pairs);
    resolve_provider(&settings(&env, overrides), |k| env.get(k).cloned()).unwrap()
}

#[test]
fn anthropic_is_inferred_first_when_both_keys_are_present() {
    let r = resolve(
        &[("OPENAI_API_KEY", "sk-o"), ("ANTHROPIC_API_KEY", "sk-a")],
        &Overrides::default(),
    );
    assert_eq!(
        r,
        ResolvedModel {
            kind: ProviderKind::Anthropic,
            model: "claude-sonnet-4-5".into(),
            base_url: "https://api.anthropic.com".into(),
            api_key: Some(Secret::new("sk-a")),
        }
    );
}

#[test]
fn openai_is_inferred_from_its_key_with_its_env_model_and_url() {
    let r = resolve(
        &[
            ("OPENAI_API_KEY", "sk-o"),
            ("OPENAI_MODEL", "qwen3-coder"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1/"),
            ("ANTHROPIC_MODEL", "ignored"),
        ],
        &Overrides::default(),
    );
    assert_eq!(
        r,
        ResolvedModel {
            kind: ProviderKind::Openai,
            model: "qwen3-coder".into(),
            base_url: "http://127.0.0.1:8080/v1".into(),
            api_key: Some(Secret::new("sk-o")),
        }
    );
}

#[test]
fn an_explicit_provider_wins_over_inference() {
    let r = resolve(
        &[("OPENAI_API_KEY", "sk-o"), ("ANTHROPIC_API_KEY", "sk-a")],
        &Overrides {
            provider: Some(ProviderKind::Openai),
            ..Overrides::default()
        },
    );
    assert_eq!(r.kind, ProviderKind::Openai);
    assert_eq!(r.api_key, Some(Secret::new("sk-o")));
}

#[test]
fn the_demo_provider_needs_no_key() {
    let r = resolve(
        &[],
        &Overrides {
            provider: Some(ProviderKind::Demo),
            ..Overrides::default()
        },
    );
    assert_eq!(r, ResolvedModel::demo("corvid-demo"));
}

#[test]
fn no_provider_says_what_to_set_and_suggests_demo() {
    let env = env_of(&[("CORVID_HOME", "/tmp/x")]);
    let s = settings(&env, &Overrides::default());
    let err = resolve_provider(&s, |k| env.get(k).cloned()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no model provider is configured. Set ANTHROPIC_API_KEY or OPENAI_API_KEY (with \
         OPENAI_BASE_URL for an OpenAI-compatible server), or set `model.provider` in \
         $CORVID_HOME/settings.json; or run `corvid --demo` to try the built-in offline demo model"
    );
}

#[test]
fn a_chosen_provider_without_its_key_names_the_variable() {
    let env = env_of(&[]);
    let s = settings(
        &env,
        &Overrides {
            provider: Some(ProviderKind::Anthropic),
            ..Overrides::default()
        },
    );
    let err = resolve_provider(&s, |k| env.get(k).cloned()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the anthropic provider needs an API key: set ANTHROPIC_API_KEY (or `model.apiKeyEnv` to \
         the name of the variable holding it), or run `corvid --demo` to try the built-in offline \
         demo model"
    );
}

#[test]
fn api_key_env_names_the_variable_holding_the_key() {
    let env = env_of(&[("MY_KEY", "sk-mine"), ("OPENAI_API_KEY", "sk-o")]);
    let mut s = settings(&env, &Overrides::default());
    s.model.api_key_env = Some("MY_KEY".into());
    let r = resolve_provider(&s, |k| env.get(k).cloned()).unwrap();
    assert_eq!(r.api_key, Some(Secret::new("sk-mine")));
}

#[test]
fn a_self_hosted_base_url_may_go_without_a_key() {
    let env = env_of(&[]);
    let mut s = settings(&env, &Overrides::default());
    s.model.provider = Some(ProviderKind::Openai);
    s.model.base_url = Some("http://127.0.0.1:11434/v1".into());
    let r = resolve_provider(&s, |k| env.get(k).cloned()).unwrap();
    assert_eq!(r.api_key, None);
}

#[test]
fn the_key_never_shows_in_debug_or_display_output() {
    let r = resolve(
        &[("OPENAI_API_KEY", "sk-very-secret-123")],
        &Overrides::default(),
    );
    let debug = format!("{r:?} {:?} {}", r.api_key, r.api_key.as_ref().unwrap());
    assert!(!debug.contains("sk-very-secret-123"), "{debug}");
    assert!(debug.contains("Secret(***)"), "{debug}");
    assert_eq!(r.api_key.unwrap().expose(), "sk-very-secret-123");
}

#[test]
fn a_fast_model_name_uses_the_main_provider() {
    let env = env_of(&[("OPENAI_API_KEY", "sk-o")]);
    let s = settings(
        &env,
        &Overrides {
            fast_model: Some("gpt-mini".into()),
            ..Overrides::default()
        },
    );
    let main = resolve_provider(&s, |k| env.get(k).cloned()).unwrap();
    let fast = resolve_fast_model(&s, &main, |k| env.get(k).cloned()).unwrap();
    assert_eq!(
        fast,
        Some(ResolvedModel {
            model: "gpt-mini".into(),
            ..main
        })
    );
}

#[test]
fn a_fast_model_object_may_use_another_provider_and_key() {
    let env = env_of(&[
        ("OPENAI_API_KEY", "sk-o"),
        ("FAST_KEY", "sk-f"),
        ("ANTHROPIC_BASE_URL", "http://anthropic.local"),
    ]);
    let mut s = settings(&env, &Overrides::default());
    s.fast_model = Some(FastModelSetting::Model(FastModelSpec {
        provider: Some(ProviderKind::Anthropic),
        name: "claude-haiku".into(),
        base_url: None,
        api_key_env: Some("FAST_KEY".into()),
    }));
    let main = resolve_provider(&s, |k| env.get(k).cloned()).unwrap();
    let fast = resolve_fast_model(&s, &main, |k| env.get(k).cloned()).unwrap();
    assert_eq!(
        fast,
        Some(ResolvedModel {
            kind: ProviderKind::Anthropic,
            model: "claude-haiku".into(),
            base_url: "http://anthropic.local".into(),
            api_key: Some(Secret::new("sk-f")),
        })
    );
}

#[test]
fn no_fast_model_means_none_except_for_the_demo() {
    let env = env_of(&[("OPENAI_API_KEY", "sk-o")]);
    let s = settings(&env, &Overrides::default());
    let main = resolve_provider(&s, |k| env.get(k).cloned()).unwrap();
    assert_eq!(
        resolve_fast_model(&s, &main, |k| env.get(k).cloned()).unwrap(),
        None
    );

    let demo = ResolvedModel::demo("corvid-demo");
    assert_eq!(
        resolve_fast_model(&s, &demo, |k| env.get(k).cloned()).unwrap(),
        Some(ResolvedModel::demo("corvid-demo-fast"))
    );
}
