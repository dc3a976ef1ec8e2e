//! Diagnostics through `tracing`, never on stdout (stdout is the headless output, the ACP
//! channel or the terminal UI). Level from `CORVID_LOG` (an env filter), default `warn`.

use std::fs::OpenOptions;
use std::io::IsTerminal;
use std::sync::Mutex;

use corvid_core::settings::{corvid_home, process_env};
use tracing_subscriber::EnvFilter;

/// Env var holding the log filter, e.g. `CORVID_LOG=corvid_core=debug`.
const LOG_ENV: &str = "CORVID_LOG";

/// Installs the subscriber: stderr, or for the terminal UI (which owns stderr's terminal too)
/// `$CORVID_HOME/logs/corvid.log`.
pub fn init(interactive: bool) {
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if interactive {
        let Some(dir) = corvid_home(process_env).map(|home| home.join("logs")) else {
            return;
        };
        let file = std::fs::create_dir_all(&dir).and_then(|()| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("corvid.log"))
        });
        if let Ok(file) = file {
            let _ = builder
                .with_ansi(false)
                .with_writer(Mutex::new(file))
                .try_init();
        }
    } else {
        let _ = builder
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .try_init();
    }
}
