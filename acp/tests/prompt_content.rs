//! Prompt content over ACP, in-process with a scripted provider: linked local files reach the
//! model with their contents, images reach it as image parts, and an image for a model that
//! cannot see it is refused with an error, never dropped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agent_client_protocol::ErrorCode;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, ImageContent, InitializeRequest, PromptRequest, ResourceLink,
};
use common::*;
use corvid_acp::{AgentFactory, FactoryError, SessionSpec};
use corvid_core::agent::AgentConfig;
use corvid_core::images::ImageSupport;
use corvid_core::session::SessionStore;
use corvid_protocol::{ImageData, Part};
use pretty_assertions::assert_eq;
use serde_json::json;

/// The test factory with a model that accepts images (or not).
struct Vision {
    inner: Arc<TestFactory>,
    images: bool,
}

impl AgentFactory for Vision {
    fn check_provider(&self) -> Result<(), FactoryError> {
        self.inner.check_provider()
    }
    fn build(&self, spec: SessionSpec) -> Result<AgentConfig, FactoryError> {
        let mut config = self.inner.build(spec)?;
        config.policy.images = ImageSupport {
            setting: Some(self.images),
        };
        Ok(config)
    }
    fn session_store(&self) -> Option<SessionStore> {
        None
    }
    fn accepts_images(&self) -> bool {
        self.images
    }
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUg==";

#[tokio::test]
async fn a_linked_file_outside_the_workspace_reaches_the_model_with_its_contents() {
    let dir = project();
    let elsewhere = tempfile::tempdir().unwrap();
    let notes = elsewhere.path().join("notes.md");
    std::fs::write(&notes, "the deploy key rotates on Fridays\n").unwrap();
    let provider = ScriptedProvider::new(vec![answer("Seen.")]);
    let client = TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let prompt = vec![
        ContentBlock::from("Summarize".to_owned()),
        ContentBlock::ResourceLink(ResourceLink::new(
            "notes.md",
            format!("file://{}", notes.display()),
        )),
    ];
    client
        .cx
        .send_request(PromptRequest::new(sid, prompt))
        .block_task()
        .await
        .unwrap();
    let sent = provider.requests()[0].messages.last().unwrap().text();
    assert_eq!(
        sent,
        format!(
            "Summarize\n<context ref=\"{}\">\nthe deploy key rotates on Fridays\n\n</context>",
            notes.display()
        )
    );
}

#[tokio::test]
async fn an_image_block_reaches_the_model_as_an_image_part_and_initialize_advertises_images() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![answer("A square.")]);
    let factory = Arc::new(Vision {
        inner: TestFactory::new(provider.clone()),
        images: true,
    });
    let client = TestClient::start(factory, fs_caps(false, false)).await;
    let init = client
        .cx
        .send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(init).unwrap()["agentCapabilities"]["promptCapabilities"]["image"],
        json!(true)
    );
    let sid = client.new_session(dir.path()).await;
    let prompt = vec![
        ContentBlock::from("What is this?".to_owned()),
        ContentBlock::Image(ImageContent::new(PNG, "image/png")),
    ];
    client
        .cx
        .send_request(PromptRequest::new(sid, prompt))
        .block_task()
        .await
        .unwrap();
    assert_eq!(
        provider.requests()[0].messages.last().unwrap().parts,
        vec![
            Part::Text {
                text: "What is this?".into()
            },
            Part::Image(ImageData {
                media_type: "image/png".into(),
                data_base64: PNG.into()
            }),
        ]
    );
}

#[tokio::test]
async fn an_image_for_a_model_without_image_support_is_an_error_naming_the_model() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![answer("never")]);
    let factory = Arc::new(Vision {
        inner: TestFactory::new(provider.clone()),
        images: false,
    });
    let client = TestClient::start(factory, fs_caps(false, false)).await;
    let init = client
        .cx
        .send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(init).unwrap()["agentCapabilities"]["promptCapabilities"]
            .get("image")
            .cloned()
            .unwrap_or(json!(false)),
        json!(false)
    );
    let sid = client.new_session(dir.path()).await;
    let err = client
        .cx
        .send_request(PromptRequest::new(
            sid,
            vec![ContentBlock::Image(ImageContent::new(PNG, "image/png"))],
        ))
        .block_task()
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("model scripted-main does not accept images; set model.supportsImages: true"),
        "{err:?}"
    );
    assert_eq!(provider.requests().len(), 0);
}

#[tokio::test]
async fn an_image_of_an_unsupported_type_is_invalid_params() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![]);
    let factory = Arc::new(Vision {
        inner: TestFactory::new(provider.clone()),
        images: true,
    });
    let client = TestClient::start(factory, fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let err = client
        .cx
        .send_request(PromptRequest::new(
            sid,
            vec![ContentBlock::Image(ImageContent::new(
                "PHN2Zz4=",
                "image/svg+xml",
            ))],
        ))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.message),
        (
            ErrorCode::INVALID_PARAMS,
            "image type `image/svg+xml` is not supported; attach PNG, JPEG, GIF or WebP".into()
        )
    );
}
