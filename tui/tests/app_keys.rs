//! Keys and slash commands: what the app sends to the agent and how its state changes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::time::{Duration, Instant};

use common::*;
use corvid_core::context::instructions::InstructionsFile;
use corvid_protocol::{ApprovalDecision, ApprovalMode, ApprovalPreview, CoreEvent, Op, Usage};
use corvid_tui::app::{Action, App, TuiOptions};
use corvid_tui::cells::HistoryCell;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;

fn app() -> App {
    App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    })
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        app.on_key(key(KeyCode::Char(c)), Instant::now());
    }
}

#[test]
fn enter_sends_the_prompt_and_shift_enter_or_ctrl_j_insert_newlines() {
    let mut a = app();
    typed(&mut a, "one");
    a.on_key(
        KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT),
        Instant::now(),
    );
    typed(&mut a, "two");
    a.on_key(ctrl('j'), Instant::now());
    typed(&mut a, "three");
    let actions = a.on_key(key(KeyCode::Enter), Instant::now());
    assert_eq!(
        actions,
        vec![Action::Submit(Op::user_turn("one\ntwo\nthree"))]
    );
    assert!(a.composer.is_empty());
    a.on_key(key(KeyCode::Up), Instant::now());
    assert_eq!(a.composer.text(), "one\ntwo\nthree");
}

#[test]
fn esc_and_ctrl_c_cancel_a_running_task() {
    let mut a = app();
    a.on_core_event(&task_started("go"));
    assert_eq!(
        a.on_key(key(KeyCode::Esc), Instant::now()),
        vec![Action::Submit(Op::Cancel)]
    );
    assert_eq!(
        a.on_key(ctrl('c'), Instant::now()),
        vec![Action::Submit(Op::Cancel)]
    );
}

#[test]
fn ctrl_c_twice_on_an_idle_prompt_exits_but_not_when_too_slow() {
    let mut a = app();
    let t0 = Instant::now();
    assert_eq!(a.on_key(ctrl('c'), t0), vec![]);
    assert_eq!(a.on_key(ctrl('c'), t0 + Duration::from_secs(5)), vec![]);
    assert_eq!(
        a.on_key(ctrl('c'), t0 + Duration::from_secs(6)),
        vec![Action::Quit]
    );
}

fn command(app: &mut App, line: &str) -> Vec<Action> {
    typed(app, line);
    app.on_key(key(KeyCode::Enter), Instant::now())
}

#[test]
fn slash_view_switches_the_display_mode() {
    let mut a = app();
    command(&mut a, "/view");
    assert!(a.chat.compact);
    command(&mut a, "/view");
    assert!(!a.chat.compact);
    command(&mut a, "/view compact");
    assert!(a.chat.compact);
    command(&mut a, "/view compact");
    assert!(
        a.chat.compact,
        "naming the mode sets it, it does not toggle"
    );
    assert_eq!(
        last_notice(&a),
        "View: compact tool groups from now on; ctrl+o shows the whole session in full"
    );
    command(&mut a, "/view full");
    assert!(!a.chat.compact);
    command(&mut a, "/view wide");
    assert!(!a.chat.compact);
    assert_eq!(
        last_notice(&a),
        "Unknown view \"wide\": use /view compact, /view full or /view alone to toggle"
    );
}

#[test]
fn slash_compress_and_slash_compact_compact_the_context_and_never_toggle_the_display() {
    let mut a = app();
    for name in ["/compress", "/compact"] {
        assert_eq!(command(&mut a, name), vec![Action::Submit(Op::Compact)]);
        assert!(!a.chat.compact);
    }
    command(&mut a, "/help");
    let help = last_notice(&a);
    assert!(help.contains("/view [MODE]"), "{help}");
    assert!(help.contains("/compress"), "{help}");
}

#[test]
fn slash_compress_waits_for_the_running_task() {
    let mut a = app();
    a.on_core_event(&corvid_protocol::CoreEvent::TaskStarted {
        task_id: "t".into(),
        prompt: "go".into(),
    });
    assert_eq!(command(&mut a, "/compress"), vec![]);
    assert!(last_notice(&a).contains("/compress works between tasks"));
}

#[test]
fn the_footer_shows_how_full_the_context_window_is_and_stats_tells_the_tokens() {
    let mut a = app();
    a.on_core_event(&corvid_protocol::CoreEvent::ContextUsage {
        used: 84_000,
        window: 200_000,
    });
    let (lines, _) = a.view(std::time::Instant::now()).lines(100);
    let footer = lines.last().unwrap().to_string();
    assert!(footer.contains("ctx 42%"), "{footer}");
    command(&mut a, "/stats");
    assert!(
        last_notice(&a).contains("context: 84000 of 200000 tokens (42%)"),
        "{}",
        last_notice(&a)
    );
}

/// A running task whose shell call `s1` asks for approval at `opened`.
fn app_asking(opened: Instant) -> App {
    let mut a = app();
    a.on_core_event_at(&task_started("go"), opened);
    let mut request = permission(
        "s1",
        "run_shell_command",
        "Run cargo test",
        ApprovalPreview::Command {
            command: "cargo test".into(),
        },
    );
    if let CoreEvent::PermissionRequested { always_scope, .. } = &mut request {
        *always_scope = Some("cargo test".into());
    }
    a.on_core_event_at(&request, opened);
    a
}

fn answer(decision: ApprovalDecision) -> Vec<Action> {
    vec![Action::Submit(Op::Approval {
        call_id: "s1".into(),
        decision,
    })]
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn approval_keys_answer_the_pending_request_once_it_has_been_shown() {
    let t0 = Instant::now();
    let mut a = app_asking(t0);
    let later = t0 + Duration::from_secs(1);
    assert_eq!(
        a.on_key(key(KeyCode::Char('y')), later),
        answer(ApprovalDecision::AllowOnce)
    );
    a.on_key(key(KeyCode::Right), later);
    a.on_key(key(KeyCode::Right), later);
    assert_eq!(
        a.on_key(key(KeyCode::Enter), later),
        answer(ApprovalDecision::RejectOnce)
    );
    assert_eq!(
        a.on_key(key(KeyCode::Char('n')), later),
        answer(ApprovalDecision::RejectOnce)
    );
}

#[test]
fn keys_typed_as_the_dialog_opens_answer_nothing() {
    let t0 = Instant::now();
    let mut a = app_asking(t0);
    a.composer.insert_str("I think ");
    // "and" typed at a human pace (one key per 120 ms) as the dialog appears.
    for (i, c) in "and".chars().enumerate() {
        let at = t0 + ms(50 + 120 * i as u64);
        assert_eq!(a.on_key(key(KeyCode::Char(c)), at), vec![], "{c:?}");
    }
    // Enter 300 ms after the last key is still typing, not a confirmation.
    assert_eq!(a.on_key(key(KeyCode::Enter), t0 + ms(590)), vec![]);
    assert!(a.chat.approval.is_some(), "the dialog is still open");
    assert_eq!(a.composer.text(), "I think and", "the typed text is kept");
    // A burst (a paste without bracketed paste) never answers, even long after.
    let burst: Vec<Event> = "yes"
        .chars()
        .map(|c| Event::Key(key(KeyCode::Char(c))))
        .collect();
    assert_eq!(a.on_input(&burst, t0 + ms(5000)), vec![]);
    assert_eq!(a.composer.text(), "I think andyes");
    // Nor does a bracketed paste, or a key right after it.
    a.on_input(&[Event::Paste("n".into())], t0 + ms(9000));
    assert_eq!(a.on_key(key(KeyCode::Char('n')), t0 + ms(9100)), vec![]);
    assert_eq!(a.composer.text(), "I think andyesnn");
    // With text in the box, even after a pause, keys are text and Enter answers nothing.
    assert_eq!(a.on_key(key(KeyCode::Char('n')), t0 + ms(9600)), vec![]);
    assert_eq!(a.on_key(key(KeyCode::Enter), t0 + ms(12_000)), vec![]);
    // Once the box is cleared and the typing has paused, a key answers.
    a.on_key(ctrl('u'), t0 + ms(12_100));
    assert!(a.composer.is_empty());
    assert_eq!(
        a.on_key(key(KeyCode::Char('n')), t0 + ms(13_000)),
        answer(ApprovalDecision::RejectOnce)
    );
}

#[test]
fn enter_with_text_in_the_box_asks_again_instead_of_approving() {
    let t0 = Instant::now();
    let mut a = app_asking(t0);
    // Typed long after the dialog was shown, one key every 150 ms, then a pause.
    for (i, c) in "please stop".chars().enumerate() {
        a.on_key(key(KeyCode::Char(c)), t0 + ms(2_000 + 150 * i as u64));
    }
    assert_eq!(a.on_key(key(KeyCode::Enter), t0 + ms(10_000)), vec![]);
    assert!(a.chat.approval.is_some(), "the dialog is still open");
    assert_eq!(a.composer.text(), "please stop");
    assert!(
        a.status
            .hint
            .as_deref()
            .is_some_and(|h| h.contains("clear the box")),
        "{:?}",
        a.status.hint
    );
    // Esc cancels the task, as it says.
    assert_eq!(
        a.on_key(key(KeyCode::Esc), t0 + ms(11_000)),
        vec![Action::Submit(Op::Cancel)]
    );
}

#[test]
fn alt_letters_are_no_text_and_alt_b_f_move_by_words() {
    let mut a = app();
    typed(&mut a, "fix the bug");
    let alt = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT);
    a.on_key(alt('x'), Instant::now());
    assert_eq!(a.composer.text(), "fix the bug");
    a.on_key(alt('b'), Instant::now());
    typed(&mut a, "nasty ");
    assert_eq!(a.composer.text(), "fix the nasty bug");
    a.on_key(
        KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL),
        Instant::now(),
    );
    a.on_key(
        KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL),
        Instant::now(),
    );
    a.on_key(alt('f'), Instant::now());
    a.on_key(ctrl('k'), Instant::now());
    assert_eq!(a.composer.text(), "fix the");
    a.on_key(ctrl('w'), Instant::now());
    assert_eq!(a.composer.text(), "fix ");
    a.on_key(ctrl('y'), Instant::now());
    assert_eq!(a.composer.text(), "fix the");
    a.on_key(ctrl('u'), Instant::now());
    assert!(a.composer.is_empty());
}

#[test]
fn backslash_enter_adds_a_newline_instead_of_sending() {
    let mut a = app();
    typed(&mut a, "first line\\");
    assert_eq!(a.on_key(key(KeyCode::Enter), Instant::now()), vec![]);
    typed(&mut a, "second");
    assert_eq!(a.composer.text(), "first line\nsecond");
    assert_eq!(
        a.on_key(key(KeyCode::Enter), Instant::now()),
        vec![Action::Submit(Op::user_turn("first line\nsecond"))]
    );
}

#[test]
fn esc_twice_clears_the_box_and_esc_after_a_cancel_puts_the_prompt_back() {
    let t0 = Instant::now();
    let mut a = app();
    typed(&mut a, "draft");
    a.on_key(key(KeyCode::Esc), t0);
    assert_eq!(a.composer.text(), "draft", "one Esc keeps the text");
    a.on_key(key(KeyCode::Esc), t0 + ms(300));
    assert!(a.composer.is_empty());

    typed(&mut a, "refactor the parser");
    a.on_key(key(KeyCode::Enter), t0);
    a.on_core_event(&task_started("refactor the parser"));
    assert_eq!(
        a.on_key(key(KeyCode::Esc), t0),
        vec![Action::Submit(Op::Cancel)]
    );
    a.on_core_event(&CoreEvent::TaskFinished {
        task_id: "t1".into(),
        stop_reason: corvid_protocol::StopReason::Cancelled,
        error: None,
        pending_summaries: 0,
    });
    a.on_key(key(KeyCode::Esc), t0 + ms(5_000));
    assert_eq!(a.composer.text(), "refactor the parser");
}

#[test]
fn enter_during_a_running_task_queues_the_prompt_until_the_task_ends() {
    let mut a = app();
    typed(&mut a, "first");
    a.on_key(key(KeyCode::Enter), Instant::now());
    a.on_core_event(&task_started("first"));
    typed(&mut a, "then run the tests");
    assert_eq!(a.on_key(key(KeyCode::Enter), Instant::now()), vec![]);
    assert_eq!(a.queued.as_deref(), Some("then run the tests"));
    assert!(a.composer.is_empty());
    // Shown above the box while it waits.
    let (lines, _) = a.view(Instant::now()).lines(60);
    assert!(
        lines
            .iter()
            .any(|l| l.to_string().starts_with("queued then run the tests")),
        "{lines:#?}"
    );
    // Up on the empty box takes it back for editing; Enter queues the edited text.
    a.on_key(key(KeyCode::Up), Instant::now());
    assert_eq!(a.composer.text(), "then run the tests");
    assert_eq!(a.queued, None);
    typed(&mut a, " twice");
    a.on_key(key(KeyCode::Enter), Instant::now());
    assert_eq!(a.take_queued(), None, "the task still runs");
    a.on_core_event(&task_finished(0));
    assert_eq!(
        a.take_queued(),
        Some(Action::Submit(Op::user_turn("then run the tests twice")))
    );
    assert_eq!(a.take_queued(), None);
}

#[test]
fn ctrl_r_finds_an_earlier_prompt_and_the_history_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file =
        corvid_tui::history::PromptHistory::project_file(dir.path(), "/work/project".as_ref());
    let mut a = app();
    a.composer = corvid_tui::composer::Composer::with_history_file(file.clone());
    for p in ["explain the parser", "fix the lexer", "run the tests"] {
        typed(&mut a, p);
        a.on_key(key(KeyCode::Enter), Instant::now());
    }
    // A new session in the same project: the history is still there.
    let mut b = app();
    b.composer = corvid_tui::composer::Composer::with_history_file(file.clone());
    b.on_key(ctrl('r'), Instant::now());
    typed(&mut b, "the");
    assert_eq!(b.composer.text(), "run the tests");
    b.on_key(ctrl('r'), Instant::now());
    assert_eq!(b.composer.text(), "fix the lexer");
    b.on_key(ctrl('r'), Instant::now());
    assert_eq!(b.composer.text(), "explain the parser");
    // Enter keeps the entry found for editing; it sends nothing yet.
    assert_eq!(b.on_key(key(KeyCode::Enter), Instant::now()), vec![]);
    assert_eq!(b.composer.text(), "explain the parser");
    assert_eq!(
        b.on_key(key(KeyCode::Enter), Instant::now()),
        vec![Action::Submit(Op::user_turn("explain the parser"))]
    );
    // Esc in a search puts back what was typed before it.
    typed(&mut b, "draft");
    b.on_key(ctrl('r'), Instant::now());
    typed(&mut b, "lexer");
    assert_eq!(b.composer.text(), "fix the lexer");
    b.on_key(key(KeyCode::Esc), Instant::now());
    assert_eq!(b.composer.text(), "draft");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the history file is private: {mode:o}");
    }
}

#[test]
fn clear_forgets_the_context_fill_shown_in_the_status_line() {
    let mut a = app();
    a.on_core_event(&CoreEvent::ContextUsage {
        used: 50_000,
        window: 100_000,
    });
    assert!(a.status.context.is_some());
    a.command("/clear");
    assert_eq!(a.status.context, None);
    assert_eq!(a.stats.context, None);
}

#[test]
fn allow_always_needs_a_deliberate_choice() {
    let t0 = Instant::now();
    let shown = t0 + Duration::from_secs(1);
    // No single character answers "always"; letters that are no dialog key stay text.
    for c in (' '..='~').chain(['é', '→']) {
        let mut a = app_asking(t0);
        let actions = a.on_key(key(KeyCode::Char(c)), shown);
        assert!(
            !actions.contains(&answer(ApprovalDecision::AllowAlways)[0]),
            "{c:?} allowed always"
        );
        if c != 'y' && c != 'n' {
            assert_eq!(actions, vec![], "{c:?}");
            assert_eq!(a.composer.text(), c.to_string(), "{c:?} is kept as text");
        }
    }
    // Selecting it and pressing Enter does.
    let mut a = app_asking(t0);
    a.on_key(key(KeyCode::Right), shown);
    assert_eq!(
        a.on_key(key(KeyCode::Enter), shown),
        answer(ApprovalDecision::AllowAlways)
    );
}

#[test]
fn an_mcp_tools_dialog_also_offers_allowing_its_whole_server() {
    let t0 = Instant::now();
    let shown = t0 + Duration::from_secs(1);
    let mut a = app();
    a.on_core_event_at(&task_started("go"), t0);
    let mut request = permission(
        "s1",
        "mcp__gh__create_issue",
        "Create issue",
        ApprovalPreview::Text { text: "{}".into() },
    );
    if let CoreEvent::PermissionRequested { server, .. } = &mut request {
        *server = Some("gh".into());
    }
    a.on_core_event_at(&request, t0);
    let (lines, _) = a.view(shown).lines(100);
    let dialog: String = lines.iter().map(|l| format!("{l}\n")).collect();
    assert!(dialog.contains("Always allow server gh"), "{dialog}");
    a.on_key(key(KeyCode::Right), shown);
    a.on_key(key(KeyCode::Right), shown);
    assert_eq!(
        a.on_key(key(KeyCode::Enter), shown),
        answer(ApprovalDecision::AllowServerAlways)
    );
}

#[test]
fn slash_model_switches_the_model_and_slash_quit_exits() {
    let mut a = app();
    assert_eq!(
        a.command("/model big-model"),
        vec![Action::Submit(Op::SetModel {
            model: "big-model".into()
        })]
    );
    assert_eq!(a.status.model, "big-model");
    assert_eq!(a.command("/quit"), vec![Action::Quit]);
    assert_eq!(
        a.command("/clear"),
        vec![Action::Submit(Op::ClearHistory), Action::ClearScreen]
    );
    assert!(a.chat.transcript().is_empty());
}

#[test]
fn slash_model_takes_a_reasoning_effort_with_or_without_a_model() {
    let mut a = app();
    assert_eq!(
        a.command("/model gpt-5 high"),
        vec![
            Action::Submit(Op::SetModel {
                model: "gpt-5".into()
            }),
            Action::Submit(Op::SetReasoningEffort {
                effort: corvid_protocol::ReasoningEffort::High
            }),
        ]
    );
    assert_eq!(a.status.model, "gpt-5");
    assert_eq!(
        a.command("/model minimal"),
        vec![Action::Submit(Op::SetReasoningEffort {
            effort: corvid_protocol::ReasoningEffort::Minimal
        })]
    );
    assert_eq!(a.status.model, "gpt-5");
    assert_eq!(a.command("/model gpt-5 max"), Vec::new());
    let text = format!("{:?}", a.chat.transcript());
    assert!(text.contains("unknown reasoning effort `max`"), "{text}");
}

#[test]
fn slash_stats_reports_usage_per_prompt_id_turns_and_tool_calls() {
    let mut a = app();
    let usage = |i, o| Usage {
        input_tokens: i,
        output_tokens: o,
        total_tokens: i + o,
        ..Default::default()
    };
    for ev in [
        task_started("go"),
        CoreEvent::TurnStarted {
            turn: 1,
            model: "demo".into(),
        },
        CoreEvent::Usage {
            prompt_id: "main".into(),
            usage: usage(100, 20),
        },
        ok("a", "read_file", "x"),
        CoreEvent::Usage {
            prompt_id: "tool_use_summary_generation".into(),
            usage: usage(50, 5),
        },
    ] {
        a.on_core_event(&ev);
    }
    a.command("/stats");
    let Some(HistoryCell::Notice(_, text)) = a.chat.transcript().last() else {
        panic!("no stats notice");
    };
    let (usage_part, times) = text.split_once("\ntime: ").unwrap();
    assert_eq!(
        usage_part,
        "Session stats\nturns 1 · tool calls 1 (1 completed, 0 failed)\n\
         main: input 100 (cached 0) · output 20 (reasoning 0) · total 120\n\
         tool_use_summary_generation: input 50 (cached 0) · output 5 (reasoning 0) · total 55"
    );
    // The wall clock is real here; the timing module's own test pins it.
    let rest: Vec<&str> = times.lines().skip(1).collect();
    assert_eq!(
        rest,
        vec![
            "tool success 100% (1 of 1)",
            "model demo: input 100 (cached 0) · output 20 · total 120",
            "cost: not shown (no prices are configured for these models)",
        ]
    );
}

#[test]
fn memory_lists_the_instructions_files_in_the_prompt_with_their_sizes() {
    let mut a = app();
    a.command("/memory");
    let Some(HistoryCell::Notice(_, empty)) = a.chat.transcript().last() else {
        panic!("no memory notice");
    };
    assert!(empty.starts_with("No instructions files are in the model's prompt."));
    a.instructions = vec![
        InstructionsFile {
            path: "/home/u/.corvid/AGENTS.md".into(),
            size: 120,
            included: 120,
        },
        InstructionsFile {
            path: "/repo/AGENTS.md".into(),
            size: 40_000,
            included: 16_380,
        },
    ];
    a.command("/memory");
    let Some(HistoryCell::Notice(_, text)) = a.chat.transcript().last() else {
        panic!("no memory notice");
    };
    assert_eq!(
        text,
        "Instructions files in the model's prompt, outermost first:\n  \
         /home/u/.corvid/AGENTS.md  120 bytes\n  \
         /repo/AGENTS.md  40000 bytes (only the first 16380 included)"
    );
}

fn app_with_sessions() -> App {
    let mut a = App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: Some(listed_sessions()),
    });
    a.session_id = "cur-0000-current".into();
    a
}

fn last_notice(a: &App) -> String {
    match a.chat.transcript().last() {
        Some(HistoryCell::Notice(_, text)) => text.clone(),
        other => panic!("expected a notice, got {other:?}"),
    }
}

#[test]
fn resume_opens_a_picker_without_the_current_or_empty_sessions_and_enter_resumes_the_highlighted_one()
 {
    let mut a = app_with_sessions();
    typed(&mut a, "/resume");
    assert_eq!(a.on_key(key(KeyCode::Enter), Instant::now()), vec![]);
    let ids: Vec<String> = a
        .picker
        .as_ref()
        .unwrap()
        .sessions
        .iter()
        .map(|s| s.id.clone())
        .collect();
    assert_eq!(ids, vec!["5f3a9c21-aaaa", "0b7e44d2-bbbb"]);
    // Down stops at the last entry, Up at the first; typing goes nowhere while it is open.
    for _ in 0..3 {
        a.on_key(key(KeyCode::Down), Instant::now());
    }
    assert_eq!(a.picker.as_ref().unwrap().selected, 1);
    typed(&mut a, "x");
    assert!(a.composer.is_empty());
    a.on_key(key(KeyCode::Up), Instant::now());
    a.on_key(key(KeyCode::Up), Instant::now());
    a.on_key(key(KeyCode::Down), Instant::now());
    assert_eq!(
        a.on_key(key(KeyCode::Enter), Instant::now()),
        vec![Action::Resume("0b7e44d2-bbbb".into())]
    );
    assert_eq!(a.picker, None);
}

#[test]
fn esc_or_ctrl_c_closes_the_picker_without_resuming_or_exiting() {
    for close in [key(KeyCode::Esc), ctrl('c')] {
        let mut a = app_with_sessions();
        a.command("/resume");
        assert!(a.picker.is_some());
        assert_eq!(a.on_key(close, Instant::now()), vec![]);
        assert_eq!(a.picker, None);
        assert_eq!(
            a.status.hint, None,
            "ctrl+c in the picker is no first exit press"
        );
    }
}

#[test]
fn resume_with_an_id_resumes_it_directly() {
    let mut a = app_with_sessions();
    assert_eq!(
        a.command("/resume 0b7e"),
        vec![Action::Resume("0b7e".into())]
    );
    assert_eq!(a.picker, None);
}

#[test]
fn resume_is_refused_with_a_notice_while_a_task_runs() {
    let mut a = app_with_sessions();
    a.on_core_event(&task_started("busy"));
    assert_eq!(a.command("/resume"), vec![]);
    assert_eq!(a.picker, None);
    assert_eq!(
        last_notice(&a),
        "A task is running: cancel it (esc) or let it finish before /resume"
    );
    // Also when the picker was opened before the task started.
    a.on_core_event(&task_finished(0));
    a.command("/resume");
    a.on_core_event(&task_started("busy again"));
    assert_eq!(a.on_key(key(KeyCode::Enter), Instant::now()), vec![]);
    assert_eq!(
        last_notice(&a),
        "A task is running: cancel it (esc) or let it finish before /resume"
    );
}

#[test]
fn resume_without_a_launcher_or_without_earlier_sessions_says_so() {
    let mut a = app();
    assert_eq!(a.command("/resume"), vec![]);
    assert_eq!(
        last_notice(&a),
        "Sessions are not available here: restart with `corvid --resume [ID]` or `corvid --continue`"
    );
    let mut b = App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: Some(std::sync::Arc::new(FakeSessions(vec![session(
            "only", 0, "now",
        )]))),
    });
    b.session_id = "only".into();
    assert_eq!(b.command("/resume"), vec![]);
    assert_eq!(b.picker, None);
    assert_eq!(
        last_notice(&b),
        "No earlier session of this project to resume"
    );
}

#[test]
fn a_resumed_session_prints_a_notice_then_its_transcript() {
    let mut a = app_with_sessions();
    a.on_resumed(
        "5f3a9c21-aaaa",
        &[task_started("Look around"), text("Done."), task_finished(0)],
    );
    assert_eq!(a.session_id, "5f3a9c21-aaaa");
    assert_eq!(
        a.chat.transcript().to_vec(),
        vec![
            HistoryCell::Notice(
                corvid_tui::cells::NoticeKind::Info,
                "Resumed session 5f3a9c21-aaaa; its earlier transcript follows".into()
            ),
            HistoryCell::UserPrompt("Look around".into()),
            HistoryCell::Assistant("Done.".into()),
        ]
    );
    assert!(!a.chat.is_running());
}

/// A tool source standing in for the session's MCP servers.
struct Servers;

impl corvid_tools::ToolSource for Servers {
    fn tools(&self) -> Vec<std::sync::Arc<dyn corvid_tools::Tool>> {
        Vec::new()
    }
    fn settled(&self) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(async {})
    }
    fn status_report(&self) -> String {
        "everything  ready  2 tools  (stdio: npx server-everything)\n  echo, add\n".to_owned()
    }
}

#[test]
fn mcp_shows_the_sessions_servers_or_how_to_add_some() {
    let mut a = app();
    a.command("/mcp");
    assert!(
        last_notice(&a).starts_with("No MCP servers in this session."),
        "{}",
        last_notice(&a)
    );
    a.tools = corvid_tools::ToolRegistry::default().with_source(std::sync::Arc::new(Servers));
    a.command("/mcp");
    assert!(
        last_notice(&a).contains("everything  ready  2 tools"),
        "{}",
        last_notice(&a)
    );
}

#[test]
fn ctrl_g_and_ctrl_x_ctrl_e_hand_the_prompt_to_the_editor_and_take_its_text_back() {
    let mut a = app();
    typed(&mut a, "draft");
    assert_eq!(
        a.on_key(ctrl('g'), Instant::now()),
        vec![Action::Edit("draft".into())]
    );
    a.edited("draft, edited\n");
    assert_eq!(a.composer.text(), "draft, edited");
    assert_eq!(a.on_key(ctrl('x'), Instant::now()), vec![]);
    assert_eq!(
        a.on_key(ctrl('e'), Instant::now()),
        vec![Action::Edit("draft, edited".into())]
    );
    // Ctrl+E alone still goes to the end of the line.
    a.on_key(key(KeyCode::Home), Instant::now());
    assert_eq!(a.on_key(ctrl('e'), Instant::now()), vec![]);
    typed(&mut a, "!");
    assert_eq!(a.composer.text(), "draft, edited!");
}

#[test]
fn an_unfocused_terminal_hears_when_the_task_ends_or_an_approval_waits() {
    let t0 = Instant::now();
    let mut a = app();
    a.on_core_event(&task_started("go"));
    a.on_core_event(&task_finished(0));
    assert_eq!(a.take_notification(), None, "focused: nothing to ring");
    a.on_input(&[Event::FocusLost], t0);
    a.on_core_event(&task_started("go"));
    a.on_core_event(&permission(
        "s1",
        "run_shell_command",
        "Run cargo test",
        ApprovalPreview::Command {
            command: "cargo test".into(),
        },
    ));
    assert_eq!(
        a.take_notification().as_deref(),
        Some("corvid: an approval is waiting")
    );
    a.on_core_event(&task_finished(0));
    assert_eq!(
        a.take_notification().as_deref(),
        Some("corvid: the task is done")
    );
    a.on_input(&[Event::FocusGained], t0);
    a.on_core_event(&task_started("go"));
    a.on_core_event(&task_finished(0));
    assert_eq!(a.take_notification(), None);
}

#[test]
fn the_command_popup_is_walked_with_arrows_completed_with_tab_and_run_with_enter() {
    let mut a = app();
    typed(&mut a, "/c");
    let names = |a: &App| {
        a.command_popup()
            .into_iter()
            .map(|e| e.name)
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&a), vec!["/compress", "/clear"]);
    a.on_key(key(KeyCode::Down), Instant::now());
    assert_eq!(
        a.on_key(key(KeyCode::Enter), Instant::now()),
        vec![Action::Submit(Op::ClearHistory), Action::ClearScreen]
    );
    // A command that needs an argument is completed, and the popup closes for the argument.
    typed(&mut a, "/mo");
    assert_eq!(a.on_key(key(KeyCode::Tab), Instant::now()), vec![]);
    assert_eq!(a.composer.text(), "/model ");
    assert!(a.command_popup().is_empty());
    // Up on a recalled command walks the history, not the popup.
    a.composer.clear();
    a.on_key(key(KeyCode::Up), Instant::now());
    assert_eq!(a.composer.text(), "/clear");
    assert!(a.command_popup().is_empty());
}
