//! Its own test binary: nothing here installs a rustls crypto provider beforehand.

use corvid_providers::{AnthropicProvider, OpenAiChatProvider, ProviderConfig};

#[test]
fn providers_can_be_built_before_anyone_installed_a_crypto_provider() {
    let config = ProviderConfig {
        base_url: "https://example.invalid/v1".into(),
        ..ProviderConfig::default()
    };
    assert!(OpenAiChatProvider::new(&config).is_ok());
    assert!(AnthropicProvider::new(&config).is_ok());
}
