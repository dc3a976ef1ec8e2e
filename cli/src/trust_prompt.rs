//! The terminal UI's one question per folder: before the UI starts, a folder with project
//! settings that is not trusted yet is asked about on the terminal, and a yes is remembered
//! in the user's trusted folders. Without a terminal nothing is asked (and nothing trusted).

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use corvid_core::settings::{SettingsFiles, Trust, TrustedFolders, corvid_home, process_env};

use crate::wiring::ConfigError;

/// Asks whether to trust the project folder of `files`, remembering a yes.
pub fn ask_and_remember(files: &SettingsFiles) -> Result<Trust, ConfigError> {
    let (Some(folder), Some(file)) = (files.project_folder(), files.project.as_deref()) else {
        return Ok(Trust::Untrusted);
    };
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Ok(Trust::Untrusted);
    }
    let yes = ask(
        &mut std::io::stdin().lock(),
        &mut std::io::stdout(),
        folder,
        file,
    )
    .map_err(|e| {
        ConfigError(format!(
            "cannot ask whether to trust {}: {e}",
            folder.display()
        ))
    })?;
    if !yes {
        return Ok(Trust::Untrusted);
    }
    let Some(home) = corvid_home(process_env) else {
        eprintln!("corvid: no home directory to remember the trust in; trusted for this run only");
        return Ok(Trust::Trusted);
    };
    let mut trusted = TrustedFolders::load(&home).map_err(|e| ConfigError(e.to_string()))?;
    trusted
        .remember(folder)
        .map_err(|e| ConfigError(e.to_string()))?;
    eprintln!(
        "corvid: trusted {} (remembered in {})",
        folder.display(),
        trusted.path().display()
    );
    Ok(Trust::Trusted)
}

/// The question itself; true only for an explicit yes.
fn ask(
    input: &mut impl BufRead,
    output: &mut impl Write,
    folder: &Path,
    file: &Path,
) -> std::io::Result<bool> {
    write!(
        output,
        "corvid: {} has project settings ({}).\n\
         They can change the model, the tools and what runs without asking in this folder.\n\
         Trust this folder? Only say yes if you trust its contents. [y/N] ",
        folder.display(),
        file.display()
    )?;
    output.flush()?;
    let mut answer = String::new();
    input.read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> bool {
        let mut out = Vec::new();
        ask(
            &mut text.as_bytes(),
            &mut out,
            Path::new("/p"),
            Path::new("/p/.corvid/settings.json"),
        )
        .unwrap()
    }

    #[test]
    fn only_an_explicit_yes_trusts_the_folder() {
        let answers: Vec<(&str, bool)> = ["y\n", "YES\n", " yes \n", "\n", "n\n", "", "yep\n"]
            .into_iter()
            .map(|a| (a, answer(a)))
            .collect();
        assert_eq!(
            answers,
            vec![
                ("y\n", true),
                ("YES\n", true),
                (" yes \n", true),
                ("\n", false),
                ("n\n", false),
                ("", false),
                ("yep\n", false),
            ]
        );
    }
}
