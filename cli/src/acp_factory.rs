//! The settings-based agent factory behind `corvid --acp`: every ACP session loads the
//! settings of its own working directory with the binary's flags, and is recorded under
//! `$CORVID_HOME/sessions` (SPEC §9). Project configuration applies only in a trusted folder
//! with the content the user accepted: remembered, or, with `--trust`, the folder corvid was
//! started in (or each `--trust DIR`) with the files it held at start. A session in any
//! other folder is untrusted; nothing is asked over ACP.

use corvid_acp::{AgentFactory, FactoryError, SessionSpec};
use corvid_core::agent::AgentConfig;
use corvid_core::session::SessionStore;
use corvid_core::settings::{
    self, Overrides, SettingsError, TrustGrant, corvid_home, process_env, resolve_provider,
};

/// Builds session agents from settings files, environment and command-line flags.
pub struct SettingsFactory {
    overrides: Overrides,
    grant: TrustGrant,
}

impl SettingsFactory {
    /// A factory applying `overrides` (the command-line flags) and `grant` (`--trust`) to
    /// every session.
    pub fn new(overrides: Overrides, grant: TrustGrant) -> Self {
        Self { overrides, grant }
    }

    fn load(&self, cwd: &std::path::Path) -> Result<settings::Settings, FactoryError> {
        let loaded = settings::load(cwd, process_env, &self.overrides, self.grant.clone())
            .map_err(to_factory)?;
        for warning in &loaded.warnings {
            tracing::warn!("{warning}");
        }
        Ok(loaded.settings)
    }
}

impl AgentFactory for SettingsFactory {
    fn check_provider(&self) -> Result<(), FactoryError> {
        let cwd = std::env::current_dir()
            .map_err(|e| FactoryError::Invalid(format!("no working directory: {e}")))?;
        let settings = self.load(&cwd)?;
        resolve_provider(&settings, process_env)
            .map(|_| ())
            .map_err(to_factory)
    }

    fn build(&self, spec: SessionSpec) -> Result<AgentConfig, FactoryError> {
        let mut settings = self.load(&spec.cwd)?;
        let editor_servers = corvid_mcp::parse_acp_servers(&spec.mcp_servers)
            .map_err(|e| FactoryError::Invalid(format!("session `{}` {}", e.key, e.message)))?;
        settings.mcp.add_servers(editor_servers);
        let mut config =
            settings::agent_config(&settings, process_env, &spec.cwd, &spec.session_id)
                .map_err(to_factory)?;
        config.fs = spec.fs;
        Ok(config)
    }

    fn accepts_images(&self) -> bool {
        std::env::current_dir()
            .ok()
            .and_then(|cwd| self.load(&cwd).ok())
            .is_some_and(|s| corvid_core::images::default_model_accepts_images(&s, process_env))
    }

    fn session_store(&self) -> Option<SessionStore> {
        corvid_home(process_env).map(|home| SessionStore::new(&home))
    }

    fn corvid_home(&self) -> Option<std::path::PathBuf> {
        corvid_home(process_env)
    }
}

fn to_factory(e: SettingsError) -> FactoryError {
    match e {
        SettingsError::NoProvider { .. } | SettingsError::MissingKey { .. } => {
            FactoryError::NoProvider(e.to_string())
        }
        other => FactoryError::Invalid(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use corvid_core::settings::ProviderKind;
    use pretty_assertions::assert_eq;

    use super::*;

    /// `maxOutputTokens` of a session built in a folder whose project file sets it to 77,
    /// with the grant `grant_for` gives for that folder.
    fn max_tokens_with(grant_for: impl Fn(&std::path::Path) -> TrustGrant) -> Option<u32> {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".corvid")).unwrap();
        std::fs::write(
            project.path().join(".corvid/settings.json"),
            r#"{"model": {"maxOutputTokens": 77}}"#,
        )
        .unwrap();
        let overrides = Overrides {
            provider: Some(ProviderKind::Demo),
            ..Overrides::default()
        };
        let cwd = project.path().canonicalize().unwrap();
        let config = SettingsFactory::new(overrides, grant_for(&cwd))
            .build(SessionSpec {
                session_id: "s".into(),
                cwd,
                fs: Arc::new(corvid_tools::LocalFs),
                mcp_servers: Vec::new(),
            })
            .unwrap();
        config.max_output_tokens
    }

    #[test]
    fn acp_sessions_apply_project_settings_only_in_a_folder_the_trust_flag_names() {
        let elsewhere = tempfile::tempdir().unwrap();
        let granted = |dirs: Vec<std::path::PathBuf>| settings::grant_folders(&dirs, |_| None);
        assert_eq!(
            [
                max_tokens_with(|_| TrustGrant::Remembered),
                max_tokens_with(|cwd| granted(vec![cwd.to_owned()]).unwrap()),
                max_tokens_with(|_| granted(vec![elsewhere.path().to_owned()]).unwrap()),
            ],
            [None, Some(77), None]
        );
    }
}
