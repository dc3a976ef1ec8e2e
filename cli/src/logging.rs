//! Diagnostics through `tracing`, never on stdout (stdout is the headless output, the ACP
//! channel or the terminal UI). Level from `CORVID_LOG` (an env filter), default `warn`.

use std::fs::{File, OpenOptions};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Mutex;

use corvid_core::settings::{corvid_home, process_env};
use corvid_core::telemetry::CONTENT_TARGET;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::telemetry::BoxedLayer;

/// Env var holding the log filter, e.g. `CORVID_LOG=corvid_core=debug`.
const LOG_ENV: &str = "CORVID_LOG";

/// Installs the subscriber: the log on stderr, or for the terminal UI (which owns stderr's
/// terminal too) in `$CORVID_HOME/logs/corvid.log`, beside the `telemetry` layers (none
/// unless telemetry is on). Each layer filters for itself.
pub fn init(interactive: bool, telemetry: Vec<BoxedLayer>) {
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("warn"));
    // Prompt text and tool output are for telemetry that asked for them, not for the log.
    let filter = match format!("{CONTENT_TARGET}=off").parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    };
    let fmt = tracing_subscriber::fmt::layer();
    let log: Option<BoxedLayer> = if interactive {
        corvid_home(process_env)
            .map(|home| home.join("logs"))
            .and_then(|dir| private_log(&dir).ok())
            .map(|file| {
                fmt.with_ansi(false)
                    .with_writer(Mutex::new(file))
                    .with_filter(filter)
                    .boxed()
            })
    } else {
        Some(
            fmt.with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr)
                .with_filter(filter)
                .boxed(),
        )
    };
    let layers: Vec<BoxedLayer> = log.into_iter().chain(telemetry).collect();
    let _ = tracing_subscriber::registry().with(layers).try_init();
}

/// The log may quote commands, paths and model output: it is created `0600` in a `0700`
/// folder, and a log or folder left readable by an older corvid is tightened.
fn private_log(dir: &Path) -> std::io::Result<File> {
    let mut folder = std::fs::DirBuilder::new();
    folder.recursive(true);
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        folder.mode(0o700);
        options.mode(0o600);
        folder.create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let file = options.open(dir.join("corvid.log"))?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        folder.create(dir)?;
        options.open(dir.join("corvid.log"))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use pretty_assertions::assert_eq;

    use super::private_log;

    #[test]
    fn the_log_is_private_and_a_readable_one_is_tightened() {
        let mode =
            |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("logs");
        drop(private_log(&dir).unwrap());
        let log = dir.join("corvid.log");
        assert_eq!((mode(&dir), mode(&log)), (0o700, 0o600));

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(private_log(&dir).unwrap());
        assert_eq!((mode(&dir), mode(&log)), (0o700, 0o600));
    }
}
