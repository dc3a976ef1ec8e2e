//! The settings-based agent factory behind `corvid --acp`: every ACP session loads the
//! settings of its own working directory (project file included) with the binary's flags,
//! and is recorded under `$CORVID_HOME/sessions` (SPEC §9).

use corvid_acp::{AgentFactory, FactoryError, SessionSpec};
use corvid_core::agent::AgentConfig;
use corvid_core::session::SessionStore;
use corvid_core::settings::{
    self, Overrides, SettingsError, corvid_home, process_env, resolve_provider,
};

/// Builds session agents from settings files, environment and command-line flags.
pub struct SettingsFactory {
    overrides: Overrides,
}

impl SettingsFactory {
    /// A factory applying `overrides` (the command-line flags) to every session.
    pub fn new(overrides: Overrides) -> Self {
        Self { overrides }
    }

    fn load(&self, cwd: &std::path::Path) -> Result<settings::Settings, FactoryError> {
        let loaded = settings::load(cwd, process_env, &self.overrides).map_err(to_factory)?;
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
        let settings = self.load(&spec.cwd)?;
        let mut config =
            settings::agent_config(&settings, process_env, &spec.cwd, &spec.session_id)
                .map_err(to_factory)?;
        config.fs = spec.fs;
        Ok(config)
    }

    fn session_store(&self) -> Option<SessionStore> {
        corvid_home(process_env).map(|home| SessionStore::new(&home))
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
