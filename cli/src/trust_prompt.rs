//! The terminal UI's question about a folder's configuration: before the UI starts, project
//! configuration that would not apply (the folder is not trusted yet, or a file is new or
//! changed since it was trusted) is asked about on the terminal, and a yes is remembered in
//! the user's trusted folders with the content of each file as it is now. Without a terminal
//! nothing is asked (and nothing trusted); loading then warns about each file it ignores.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use corvid_core::settings::{
    ConfigFile, ProjectTrust, SettingsFiles, TrustedFolders, Verdict, corvid_home, process_env,
};

use crate::wiring::ConfigError;

/// Asks about the configuration of `files` that `project` would not apply; returns the trust
/// to load with (`project` itself unless the user said yes).
pub fn ask_about_unreviewed(
    files: &SettingsFiles,
    project: ProjectTrust,
) -> Result<ProjectTrust, ConfigError> {
    let Some(folder) = files.project_folder() else {
        return Ok(project);
    };
    let current = files.config_files();
    let unreviewed = project.unreviewed(&current);
    if unreviewed.is_empty() || !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal()
    {
        return Ok(project);
    }
    let yes = ask(
        &mut std::io::stdin().lock(),
        &mut std::io::stdout(),
        folder,
        &unreviewed,
    )
    .map_err(|e| {
        ConfigError(format!(
            "cannot ask whether to trust {}: {e}",
            folder.display()
        ))
    })?;
    if !yes {
        return Ok(project);
    }
    // Exactly what the user was shown applies: a file changed after the question is not.
    let accepted = ProjectTrust::accepting(folder, &current);
    let Some(home) = corvid_home(process_env) else {
        eprintln!("corvid: no home directory to remember the trust in; trusted for this run only");
        return Ok(accepted);
    };
    let mut trusted = TrustedFolders::load(&home).map_err(|e| ConfigError(e.to_string()))?;
    trusted
        .accept(folder, &current)
        .map_err(|e| ConfigError(e.to_string()))?;
    eprintln!(
        "corvid: trusted {} (remembered in {})",
        folder.display(),
        trusted.path().display()
    );
    Ok(accepted)
}

/// The question itself; true only for an explicit yes.
fn ask(
    input: &mut impl BufRead,
    output: &mut impl Write,
    folder: &Path,
    files: &[(&ConfigFile, Verdict)],
) -> std::io::Result<bool> {
    writeln!(
        output,
        "corvid: {} has project configuration you have not accepted:",
        folder.display()
    )?;
    for (file, verdict) in files {
        let note = match verdict {
            Verdict::Unreviewed => " (new or changed since you trusted the folder)",
            Verdict::NotTrusted | Verdict::Apply => "",
        };
        writeln!(output, "  {}{note}", file.path.display())?;
    }
    write!(
        output,
        "It can change the model, the tools, the subagents and what runs without asking in \
         this folder.\nTrust this folder with these files? Only say yes if you trust their \
         contents. [y/N] "
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
        let file = ConfigFile::new(Path::new("/p/.corvid/settings.json"), b"{}");
        ask(
            &mut text.as_bytes(),
            &mut out,
            Path::new("/p"),
            &[(&file, Verdict::NotTrusted)],
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

    #[test]
    fn the_question_names_each_file_and_whether_it_changed() {
        let mut out = Vec::new();
        let settings = ConfigFile::new(Path::new("/p/.corvid/settings.json"), b"{}");
        let agent = ConfigFile::new(Path::new("/p/.corvid/agents/a.md"), b"x");
        ask(
            &mut "n\n".as_bytes(),
            &mut out,
            Path::new("/p"),
            &[
                (&settings, Verdict::Unreviewed),
                (&agent, Verdict::NotTrusted),
            ],
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(
                "corvid: /p has project configuration you have not accepted:\n  \
                 /p/.corvid/settings.json (new or changed since you trusted the folder)\n  \
                 /p/.corvid/agents/a.md\n"
            ),
            "{text}"
        );
    }
}
