//! Images in prompts: they reach the model after the prompt's text, and a model that does not
//! accept images fails the turn at once instead of losing them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::scripted::*;
use common::{collect_task, test_config};
use corvid_core::agent::spawn_agent;
use corvid_core::images::ImageSupport;
use corvid_core::settings::{
    Overrides, ProviderKind, SettingsFiles, Trust, agent_config, load_from,
};
use corvid_protocol::{
    CoreEvent, ErrorInfo, ErrorKind, ImageData, Message, Op, Part, Role, StopReason,
};
use pretty_assertions::assert_eq;

fn png() -> ImageData {
    ImageData {
        media_type: "image/png".into(),
        data_base64: "iVBORw0KGgo=".into(),
    }
}

fn image_turn() -> Op {
    Op::UserTurn {
        prompt: "what is in this picture?".into(),
        images: vec![png()],
        context: Vec::new(),
    }
}

#[tokio::test]
async fn an_image_reaches_the_model_after_the_prompt_text() {
    let provider = ScriptedProvider::new(vec![answer("A cat.")]);
    let mut config = test_config(Arc::new(provider.clone()), vec![]);
    config.model = "gpt-4o".into();
    let mut handle = spawn_agent(config);
    handle.submit(image_turn()).unwrap();
    collect_task(&mut handle).await;
    assert_eq!(
        provider.requests()[0].messages[0],
        Message {
            role: Role::User,
            parts: vec![
                Part::Text {
                    text: "what is in this picture?".into()
                },
                Part::Image(png()),
            ],
        }
    );
}

#[tokio::test]
async fn an_image_for_a_text_only_model_fails_the_task_before_any_request() {
    let provider = ScriptedProvider::new(vec![answer("never sent")]);
    let mut config = test_config(Arc::new(provider.clone()), vec![]);
    config.model = "deepseek-chat".into();
    let mut handle = spawn_agent(config);
    handle.submit(image_turn()).unwrap();
    let finished = collect_task(&mut handle).await.pop().unwrap();
    let CoreEvent::TaskFinished {
        stop_reason, error, ..
    } = finished
    else {
        panic!("the task did not finish: {finished:?}");
    };
    assert_eq!(
        (stop_reason, error),
        (
            StopReason::Error,
            Some(ErrorInfo::new(
                ErrorKind::BadRequest,
                "model deepseek-chat does not accept images; set model.supportsImages: true if \
                 it does, or send the prompt without images"
            ))
        )
    );
    assert_eq!(provider.requests().len(), 0);
    // The failed prompt is not in the history: the next one goes alone.
    handle.submit(Op::user_turn("hello")).unwrap();
    collect_task(&mut handle).await;
    assert_eq!(
        provider.requests()[0].messages,
        vec![Message::user_text("hello")]
    );
}

#[tokio::test]
async fn the_supports_images_setting_lets_an_unknown_model_see_images() {
    let provider = ScriptedProvider::new(vec![answer("A cat.")]);
    let mut config = test_config(Arc::new(provider.clone()), vec![]);
    config.model = "my-local-model".into();
    config.policy.images = ImageSupport {
        setting: Some(true),
    };
    let mut handle = spawn_agent(config);
    handle.submit(image_turn()).unwrap();
    collect_task(&mut handle).await;
    assert_eq!(
        provider.requests()[0].messages[0].parts[1],
        Part::Image(png())
    );
}

#[test]
fn model_supports_images_is_read_from_a_settings_file_into_the_session_policy() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("settings.json");
    std::fs::write(
        &user,
        "{ // comment\n \"model\": { \"supportsImages\": true } }",
    )
    .unwrap();
    let files = SettingsFiles {
        user: Some(user),
        project: None,
    };
    let overrides = Overrides {
        provider: Some(ProviderKind::Demo),
        ..Overrides::default()
    };
    let settings = load_from(&files, Trust::Untrusted, |_| None, &overrides)
        .unwrap()
        .settings;
    assert_eq!(settings.model.supports_images, Some(true));
    let config = agent_config(&settings, |_| None, dir.path(), "s").unwrap();
    assert_eq!(
        config.policy.images,
        ImageSupport {
            setting: Some(true)
        }
    );
}

#[test]
fn model_supports_images_of_the_wrong_type_is_an_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("settings.json");
    std::fs::write(&user, "{\"model\": {\"supportsImages\": \"yes\"}}").unwrap();
    let files = SettingsFiles {
        user: Some(user),
        project: None,
    };
    let err = load_from(&files, Trust::Untrusted, |_| None, &Overrides::default()).unwrap_err();
    assert!(err.to_string().contains("model.supportsImages"), "{err}");
}
