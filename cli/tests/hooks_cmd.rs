//! `corvid hooks list` and `corvid hooks test` on the real binary, with blocks and scripts
//! as Claude Code's hooks documentation shows them, pasted unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{Sandbox, run, stderr, stdout};

/// Writes an executable script into the sandbox's home and returns its path.
fn script(sb: &Sandbox, name: &str, body: &str) -> PathBuf {
    let path = sb.home.path().join(name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Writes a JSON input file and returns its path as a string.
fn input(sb: &Sandbox, json: &str) -> String {
    let path = sb.home.path().join("input.json");
    std::fs::write(&path, json).unwrap();
    path.to_string_lossy().into_owned()
}

/// Runs `corvid hooks test ARGS`; it must succeed.
async fn hooks_test(sb: &Sandbox, args: &[&str]) -> String {
    let out = run(sb.corvid(&[&["hooks", "test"], args].concat())).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    stdout(&out)
}

/// The exit-2 guard of Claude Code's hooks documentation: `jq` reads the command, `rm -rf`
/// is refused with a reason on stderr.
const GUARD: &str = r#"#!/bin/bash
COMMAND=$(jq -r '.tool_input.command')

if echo "$COMMAND" | grep -q 'rm -rf'; then
  echo "Blocked: rm -rf is not allowed" >&2
  exit 2
fi
exit 0
"#;

fn guard_settings(sb: &Sandbox, path: &Path) {
    sb.user_settings(&format!(
        r#"{{
  "hooks": {{
    "PreToolUse": [
      {{
        "matcher": "Bash",
        "hooks": [
          {{
            "type": "command",
            "command": "{}"
          }}
        ]
      }}
    ]
  }}
}}"#,
        path.display()
    ));
}

#[tokio::test]
async fn the_documented_jq_guard_blocks_rm_rf_with_its_reason_and_lets_ls_through() {
    let sb = Sandbox::new();
    let guard = script(&sb, "guard.sh", GUARD);
    guard_settings(&sb, &guard);
    let file = input(
        &sb,
        r#"{"command": "rm -rf /tmp/x", "description": "clean"}"#,
    );
    let text = hooks_test(&sb, &["PreToolUse", "--tool", "Bash", "--input", &file]).await;
    assert!(text.contains("exit code 2"), "{text}");
    assert!(
        text.contains("stderr: Blocked: rm -rf is not allowed"),
        "{text}"
    );
    assert!(
        text.ends_with("decision: block: Blocked: rm -rf is not allowed\n"),
        "{text}"
    );

    let file = input(&sb, r#"{"command": "ls"}"#);
    let text = hooks_test(
        &sb,
        &[
            "PreToolUse",
            "--tool",
            "run_shell_command",
            "--input",
            &file,
        ],
    )
    .await;
    assert!(text.contains("exit code 0"), "{text}");
    assert!(text.ends_with("decision: proceed\n"), "{text}");

    // The guard matches `Bash`, so another tool selects nothing.
    let text = hooks_test(&sb, &["PreToolUse", "--tool", "Read", "--input", &file]).await;
    assert!(
        text.starts_with("No handler matches PreToolUse for tool Read."),
        "{text}"
    );
}

#[tokio::test]
async fn the_documented_json_deny_script_is_a_block_with_its_reason() {
    let sb = Sandbox::new();
    let guard = script(
        &sb,
        "block-rm.sh",
        r#"#!/bin/bash
COMMAND=$(jq -r '.tool_input.command')

if echo "$COMMAND" | grep -q 'rm -rf'; then
  jq -n '{
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      permissionDecision: "deny",
      permissionDecisionReason: "Destructive command blocked by hook"
    }
  }'
else
  exit 0  # allow the command
fi
"#,
    );
    guard_settings(&sb, &guard);
    let file = input(
        &sb,
        r#"{"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}"#,
    );
    let text = hooks_test(&sb, &["PreToolUse", "--input", &file]).await;
    assert!(
        text.ends_with("decision: block: Destructive command blocked by hook\n"),
        "{text}"
    );
}

#[tokio::test]
async fn updated_input_and_its_allow_are_reported() {
    let sb = Sandbox::new();
    let rewrite = script(
        &sb,
        "rewrite.sh",
        r#"#!/bin/bash
jq -c '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow", permissionDecisionReason: "made safe", updatedInput: {command: (.tool_input.command + " --dry-run")}}}'
"#,
    );
    guard_settings(&sb, &rewrite);
    let file = input(&sb, r#"{"command": "make clean"}"#);
    let text = hooks_test(&sb, &["PreToolUse", "--tool", "Bash", "--input", &file]).await;
    assert!(
        text.contains(r#"updatedInput: {"command":"make clean --dry-run"}"#),
        "{text}"
    );
    assert!(text.ends_with("decision: allow: made safe\n"), "{text}");
}

fn stop_settings(sb: &Sandbox, command: &str, on_error: &str) {
    sb.user_settings(&format!(
        r#"{{"hooks": {{"Stop": [{{"hooks": [{{"type": "command", "command": {}{on_error}}}]}}]}}}}"#,
        serde_json::to_string(command).unwrap()
    ));
}

#[tokio::test]
async fn on_error_block_turns_a_crash_into_a_block_naming_the_cause() {
    let sb = Sandbox::new();
    let crash = script(&sb, "crash.sh", "#!/bin/bash\nkill -SEGV $$\n");
    let file = input(&sb, r#"{"stop_hook_active": false}"#);
    stop_settings(&sb, &crash.to_string_lossy(), r#", "onError": "block""#);
    let text = hooks_test(&sb, &["Stop", "--input", &file]).await;
    assert!(text.contains("killed by signal 11"), "{text}");
    assert!(
        text.contains("decision: block: hook `")
            && text.contains("failed and has onError \"block\": killed by signal 11"),
        "{text}"
    );

    // Without it the failure goes ahead, but loudly.
    stop_settings(&sb, &crash.to_string_lossy(), "");
    let text = hooks_test(&sb, &["Stop", "--input", &file]).await;
    assert!(text.contains("warning: hook `"), "{text}");
    assert!(
        text.contains("failed (killed by signal 11); Stop went ahead"),
        "{text}"
    );
    assert!(text.ends_with("decision: proceed\n"), "{text}");
}

#[tokio::test]
async fn a_missing_command_is_a_visible_exit_127_and_blocks_under_on_error_block() {
    let sb = Sandbox::new();
    let file = input(&sb, r#"{}"#);
    stop_settings(&sb, "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/missing.sh", "");
    let text = hooks_test(&sb, &["Stop", "--input", &file]).await;
    assert!(text.contains("exit code 127"), "{text}");
    assert!(
        text.contains("exit 127: the command was not found"),
        "{text}"
    );
    assert!(text.contains("No such file or directory"), "{text}");
    assert!(text.ends_with("decision: proceed\n"), "{text}");

    stop_settings(&sb, "no-such-formatter --write", r#", "onError": "block""#);
    let text = hooks_test(&sb, &["Stop", "--input", &file]).await;
    assert!(text.contains("decision: block:"), "{text}");
    assert!(
        text.contains("exit 127: the command was not found"),
        "{text}"
    );
}

#[tokio::test]
async fn the_documented_stop_hook_blocks_once_then_lets_the_agent_stop() {
    let sb = Sandbox::new();
    let stop = script(
        &sb,
        "stop.sh",
        r#"#!/bin/bash
INPUT=$(cat)
if [ "$(echo "$INPUT" | jq -r '.stop_hook_active')" = "true" ]; then
  exit 0  # Allow Claude to stop
fi
echo '{"decision": "block", "reason": "Run the tests before stopping"}'
"#,
    );
    stop_settings(&sb, &stop.to_string_lossy(), "");
    let first = input(&sb, r#"{"stop_hook_active": false}"#);
    let text = hooks_test(&sb, &["Stop", "--input", &first]).await;
    assert!(
        text.ends_with("decision: block: Run the tests before stopping\n"),
        "{text}"
    );
    let again = input(&sb, r#"{"stop_hook_active": true}"#);
    let text = hooks_test(&sb, &["Stop", "--input", &again]).await;
    assert!(text.ends_with("decision: proceed\n"), "{text}");
}

#[tokio::test]
async fn the_documented_formatter_on_edit_write_gets_an_absolute_path_and_runs() {
    let sb = Sandbox::new();
    // The documentation's `jq ... | xargs npx prettier --write`, with a formatter that needs
    // no network: strip trailing blanks.
    sb.user_settings(
        r#"{
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Edit|Write",
        "hooks": [
          {
            "type": "command",
            "command": "jq -r '.tool_input.file_path' | xargs sed -i 's/[[:space:]]*$//'"
          }
        ]
      }
    ]
  }
}"#,
    );
    std::fs::write(sb.project_dir().join("notes.md"), "a   \nb\t\n").unwrap();
    let file = input(
        &sb,
        r#"{"file_path": "notes.md", "content": "a   \nb\t\n"}"#,
    );
    let text = hooks_test(&sb, &["PostToolUse", "--tool", "Write", "--input", &file]).await;
    assert!(text.contains("exit code 0"), "{text}");
    assert_eq!(
        std::fs::read_to_string(sb.project_dir().join("notes.md")).unwrap(),
        "a\nb\n"
    );
    // `edit` is corvid's name for Claude's `Edit`: the same handler runs.
    let text = hooks_test(&sb, &["PostToolUse", "--tool", "edit", "--input", &file]).await;
    assert!(text.contains("exit code 0"), "{text}");
}

#[tokio::test]
async fn hooks_list_shows_each_handler_with_its_event_matcher_and_file() {
    let sb = Sandbox::new();
    let settings = sb.user_settings(
        r#"{"hooks": {
  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "onError": "block"}]}],
  "Stop": [{"hooks": [{"type": "command", "command": "./stop.sh", "timeout": 30}]}]
}}"#,
    );
    let out = run(sb.corvid(&["hooks", "list"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let path = settings.display();
    assert_eq!(
        stdout(&out),
        format!(
            "PreToolUse  Bash  ./guard.sh\n  from {path}, user, timeout 600 s, onError block\n\
             Stop  *  ./stop.sh\n  from {path}, user, timeout 30 s\n"
        )
    );
}

#[tokio::test]
async fn a_malformed_hooks_block_is_an_error_naming_file_line_column_and_key() {
    let sb = Sandbox::new();
    let settings = sb.user_settings(
        "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"x\", \"timeout\": -1}]}\n    ]\n  }\n}\n",
    );
    let out = run(sb.corvid(&["hooks", "list"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim_end(),
        format!(
            "corvid: {}:4:65: settings key `hooks.Stop[0].hooks[0].timeout` is `-1`; expected \
             seconds above 0",
            settings.display()
        )
    );
}

#[tokio::test]
async fn hooks_of_an_untrusted_project_are_not_loaded_and_say_why() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.project_dir().join(".corvid")).unwrap();
    std::fs::write(
        sb.project_dir().join(".corvid/settings.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch pwned"}]}]}}"#,
    )
    .unwrap();
    let out = run(sb.corvid(&["hooks", "list"])).await;
    assert!(
        stdout(&out).starts_with("No hooks configured."),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("project hooks"), "{}", stderr(&out));
    let file = input(&sb, "{}");
    hooks_test(&sb, &["Stop", "--input", &file]).await;
    assert!(!sb.project_dir().join("pwned").exists());
}

#[tokio::test]
async fn import_claude_hooks_reads_the_users_claude_settings_as_they_are() {
    let sb = Sandbox::new();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".claude")).unwrap();
    std::fs::write(
        home.path().join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send 'Claude Code' 'Awaiting your input'"}]}]}}"#,
    )
    .unwrap();
    let list = |sb: &Sandbox| {
        let mut cmd = sb.corvid(&["hooks", "list"]);
        cmd.env("HOME", home.path());
        cmd
    };
    assert!(stdout(&run(list(&sb)).await).starts_with("No hooks configured."));
    sb.user_settings(r#"{"importClaudeHooks": true}"#);
    let out = run(list(&sb)).await;
    assert!(
        stdout(&out)
            .starts_with("Notification  *  notify-send 'Claude Code' 'Awaiting your input'\n"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[tokio::test]
async fn a_malformed_hooks_block_stops_a_session_too() {
    let sb = Sandbox::new();
    let settings =
        sb.user_settings(r#"{"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}}"#);
    let out = run(sb.corvid(&["--demo", "-p", "look around"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim_end(),
        format!(
            "corvid: {}:1:39: settings key `hooks.PreToolUse[0].matcher` is not a valid \
             regular expression: unclosed group",
            settings.display()
        )
    );
}

#[tokio::test]
async fn a_hostile_repo_cannot_opt_itself_into_its_claude_hooks_even_when_trusted() {
    let sb = Sandbox::new();
    let planted =
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch pwned"}]}]}}"#;
    for dir in [".claude", ".corvid"] {
        std::fs::create_dir(sb.project_dir().join(dir)).unwrap();
    }
    std::fs::write(sb.project_dir().join(".claude/settings.json"), planted).unwrap();
    std::fs::write(
        sb.project_dir().join(".claude/settings.local.json"),
        planted,
    )
    .unwrap();
    std::fs::write(
        sb.project_dir().join(".corvid/settings.json"),
        r#"{"importClaudeHooks": true}"#,
    )
    .unwrap();
    let file = input(&sb, "{}");
    // Untrusted: nothing of the project applies.
    hooks_test(&sb, &["Stop", "--input", &file]).await;
    assert!(!sb.project_dir().join("pwned").exists());
    // Trusted: the project's own `importClaudeHooks` is ignored, and says so.
    let project = sb.project_dir().to_string_lossy().into_owned();
    let out = run(sb.corvid(&["--trust", &project, "hooks", "list"])).await;
    assert!(
        stdout(&out).starts_with("No hooks configured."),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("`importClaudeHooks` is read from your own settings file only"),
        "{}",
        stderr(&out)
    );
    let out = run(sb.corvid(&[
        "--trust", &project, "hooks", "test", "Stop", "--input", &file,
    ]))
    .await;
    assert!(!sb.project_dir().join("pwned").exists(), "{}", stdout(&out));
}
