//! The interactive loop: terminal input, core events and a spinner tick into the [`App`],
//! one synchronized frame after each batch of changes.

use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use corvid_core::agent::AgentHandle;
use corvid_protocol::Op;
use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange, Event,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{EndSynchronizedUpdate, disable_raw_mode, enable_raw_mode};
use crossterm::{cursor, execute, queue};
use futures::{FutureExt, Stream, StreamExt};
use ratatui::layout::Size;

mod agent;

use crate::app::{Action, App, TuiOptions};
use crate::backend::{SafeScroll, TtyProbe};
use crate::cells::NoticeKind;
use crate::composer::Composer;
use crate::history::PromptHistory;
use crate::picker::SessionLauncher;
use crate::screen::{Screen, VIEWPORT_TOP};
use agent::{
    Agent, ModelsOnTheWay, RewindWork, branch, list_models, models_answer, new_session, resume,
    rewind_done, start_listing, start_preview, take_agent_parts,
};

/// Spinner frame interval while something animates.
const TICK: Duration = Duration::from_millis(80);
/// How long the size must stay the same before the live area is laid out again. tmux (and
/// a window being dragged) resizes in steps, and the terminal's cursor answer is only
/// meaningful once it has finished.
const RESIZE_SETTLE: Duration = Duration::from_millis(100);
/// Core events applied before a frame is drawn (bounds latency under a flood of deltas).
const EVENTS_PER_FRAME: usize = 512;
/// Input events applied before a frame is drawn (a huge unbracketed paste takes a few frames).
const INPUT_PER_FRAME: usize = 4096;

/// Runs the terminal UI on an agent until the user quits.
pub async fn run(handle: AgentHandle, options: TuiOptions) -> anyhow::Result<()> {
    run_with(Agent::new(handle), options).await
}

/// Raw mode and terminal modes for the session; dropping it restores the terminal.
struct TerminalModes {
    keyboard_enhanced: bool,
    /// The palette for `ui.theme` (with `auto`, the terminal's background decides).
    palette: crate::theme::Palette,
}

impl TerminalModes {
    /// Hands the terminal back as the shell had it (another program runs in it).
    fn leave(&self) {
        let mut out = io::stdout();
        if self.keyboard_enhanced {
            let _ = queue!(out, PopKeyboardEnhancementFlags);
        }
        let _ = queue!(out, DisableBracketedPaste, DisableFocusChange, cursor::Show);
        let _ = out.flush();
        let _ = disable_raw_mode();
    }

    /// Takes the terminal again after [`TerminalModes::leave`].
    fn resume(&self) -> io::Result<()> {
        enable_raw_mode()?;
        let mut out = io::stdout();
        execute!(out, EnableBracketedPaste, EnableFocusChange)?;
        if self.keyboard_enhanced {
            execute!(
                out,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )?;
        }
        Ok(())
    }

    fn enter(theme: corvid_core::settings::UiTheme) -> io::Result<Self> {
        // Ask before raw mode and before the event stream exists (the reply would be stolen).
        let keyboard_enhanced =
            crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false);
        enable_raw_mode()?;
        let mut out = io::stdout();
        // Raw, so the answer is not echoed; bounded, so a silent terminal costs at most that.
        let palette = crate::theme::Palette::choose(theme, || {
            crate::theme::query_background(
                io::stdin(),
                &mut out,
                std::env::var_os("TMUX").is_some(),
                crate::theme::BACKGROUND_TIMEOUT,
            )
        });
        // Focus events tell whether a finished task needs a notification.
        execute!(out, EnableBracketedPaste, EnableFocusChange)?;
        if keyboard_enhanced {
            // Lets Shift+Enter arrive as itself instead of a plain Enter.
            execute!(
                out,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )?;
        }
        Ok(Self {
            keyboard_enhanced,
            palette,
        })
    }
}

impl Drop for TerminalModes {
    fn drop(&mut self) {
        self.leave();
    }
}

/// On panic: put the terminal back first, so the message prints in cooked mode.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let mut out = io::stdout();
        let top = VIEWPORT_TOP.load(Ordering::Relaxed);
        let rows = crossterm::terminal::size().map_or(top + 1, |(_, rows)| rows);
        let _ = queue!(
            out,
            EndSynchronizedUpdate,
            PopKeyboardEnhancementFlags,
            DisableBracketedPaste,
            DisableFocusChange
        );
        // Line by line: "erase below" from the top-left corner would push the screen into
        // tmux's history (see the backend).
        for row in top..rows {
            let _ = queue!(
                out,
                cursor::MoveTo(0, row),
                crossterm::terminal::Clear(crossterm::terminal::ClearType::CurrentLine)
            );
        }
        let _ = queue!(out, cursor::MoveTo(0, top), cursor::Show);
        let _ = out.flush();
        let _ = disable_raw_mode();
        previous(info);
    }));
}

/// Sets the terminal up, runs the loop, and always puts the terminal back.
async fn run_with(mut agent: Agent, options: TuiOptions) -> anyhow::Result<()> {
    let modes = TerminalModes::enter(options.theme)?;
    install_panic_hook();
    let mut screen = Screen::new(
        Box::new(|cursor| SafeScroll::new(io::stdout(), TtyProbe, cursor)),
        options.no_color,
    )?;
    screen.set_palette(modes.palette);
    let mut app = App::new(&options);
    if let Ok((_, rows)) = crossterm::terminal::size() {
        app.screen_rows = rows;
    }
    if let Ok(cwd) = std::env::current_dir() {
        app.notice(NoticeKind::Info, welcome_line(&cwd));
    }
    if let (Some(home), Ok(cwd)) = (
        corvid_core::settings::corvid_home(corvid_core::settings::process_env),
        std::env::current_dir(),
    ) {
        app.composer = Composer::with_history_file(PromptHistory::project_file(&home, &cwd));
    }
    app.session_id.clone_from(&agent.session_id);
    take_agent_parts(&mut app, &agent);
    if !options.transcript.is_empty() {
        app.on_resumed(&agent.session_id, &options.transcript);
    }
    let launcher = options.sessions.as_deref();
    let listed = list_models(options.models.as_ref(), &mut app);
    let result = event_loop(&mut agent, launcher, listed, &mut screen, &mut app, &modes).await;
    if app.chat.is_running() {
        let _ = agent.sender.submit(Op::Cancel);
    }
    let restored = screen.restore();
    if launcher.is_some() && app.resumable {
        // Where the live area was, so the shell prompt follows it.
        let mut out = io::stdout();
        let _ = write!(
            out,
            "To go on with this session: corvid --resume {}\r\n",
            app.session_id
        );
        let _ = out.flush();
    }
    result?;
    Ok(restored?)
}

/// Input, core events and ticks until the user quits (Ok) or the agent stops (Err).
async fn event_loop(
    agent: &mut Agent,
    launcher: Option<&dyn SessionLauncher>,
    mut listed: Option<ModelsOnTheWay>,
    screen: &mut Screen<io::Stdout, TtyProbe>,
    app: &mut App,
    modes: &TerminalModes,
) -> anyhow::Result<()> {
    let (mut input, queries) = crate::input::spawn();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut agent_open = true;
    // A resize waiting for its size to settle: the size and when to lay out for it.
    let mut resized: Option<(Size, tokio::time::Instant)> = None;
    // The rewind dialog's work, done off this thread (newer work replaces it).
    let mut rewind_work: Option<RewindWork> = None;
    screen.frame(app, Instant::now())?;

    'outer: loop {
        let mut redraw = true;
        tokio::select! {
            ev = input.next() => match ev {
                Some(Ok(first)) => {
                    let batch = take_ready(&mut input, first)?;
                    redraw = batch.events.iter().any(|e| {
                        matches!(e, Event::Key(_) | Event::Paste(_) | Event::Resize(..))
                    });
                    if let Some(size) = batch.events.iter().rev().find_map(|e| match *e {
                        Event::Resize(w, h) => Some(Size::new(w, h)),
                        _ => None,
                    }) {
                        // Nothing is drawn until the size settles (see `RESIZE_SETTLE`).
                        resized = Some((size, tokio::time::Instant::now() + RESIZE_SETTLE));
                    }
                    for action in app.on_input(&batch.events, Instant::now()) {
                        match action {
                            Action::Submit(op) => {
                                if agent.sender.submit(op).is_err() {
                                    agent_open = false;
                                }
                            }
                            Action::Resume(id) => {
                                if resume(agent, launcher, app, &id) {
                                    agent_open = true;
                                }
                            }
                            Action::Branch { turn, overwrite_conflicts } => {
                                if branch(agent, launcher, app, turn, overwrite_conflicts) {
                                    agent_open = true;
                                }
                            }
                            Action::ListTurns(request) => {
                                rewind_work = start_listing(app, request);
                            }
                            Action::Preview(request) => {
                                rewind_work = start_preview(app, request);
                            }
                            Action::NewSession => {
                                if new_session(agent, launcher, app) {
                                    agent_open = true;
                                }
                            }
                            Action::ClearScreen => screen.clear_screen()?,
                            Action::Edit(text) => {
                                let _paused = queries.pause();
                                screen.restore()?;
                                modes.leave();
                                let edited = edit_in_editor(&text).await;
                                modes.resume()?;
                                screen.reopen()?;
                                match edited {
                                    Ok(text) => app.edited(&text),
                                    Err(e) => app.notice(
                                        NoticeKind::Error,
                                        format!("Cannot edit the prompt in your editor: {e}"),
                                    ),
                                }
                            }
                            Action::Quit => break 'outer,
                        }
                    }
                    if batch.ended {
                        break;
                    }
                }
                Some(Err(e)) => return Err(e.into()),
                None => break,
            },
            // `recv` is cancel-safe, so polling it from select! loses nothing.
            ev = agent.events.next_event(), if agent_open => match ev {
                Ok(ev) => {
                    app.on_core_event(&ev);
                    for _ in 0..EVENTS_PER_FRAME {
                        match agent.events.next_event().now_or_never() {
                            Some(Ok(ev)) => app.on_core_event(&ev),
                            Some(Err(_)) => { agent_open = false; break; }
                            None => break,
                        }
                    }
                }
                Err(_) => agent_open = false,
            },
            _ = sleep_until(resized.map(|(_, at)| at)), if resized.is_some() => {
                if let Some((size, _)) = resized.take() {
                    let (size, cursor) = match queries.cursor().await {
                        Some((size, cursor)) => (size, Some(cursor)),
                        None => (size, None),
                    };
                    app.screen_rows = size.height;
                    // A resize never ends the session: at worst the next frame re-anchors.
                    if let Err(e) = screen.on_resize(size, cursor) {
                        tracing::warn!(error = %e, "re-anchoring the live area after a resize failed");
                    }
                }
            }
            apply = rewind_done(&mut rewind_work), if rewind_work.is_some() => {
                rewind_work = None;
                apply(app);
            }
            answer = models_answer(&mut listed), if listed.is_some() => {
                listed = None;
                app.on_models(answer);
                redraw = false;
            }
            _ = tick.tick() => {
                app.tick(Instant::now());
                redraw = app.animating();
            }
        }
        if let Some(message) = app.take_notification() {
            let bytes =
                crate::notify::notification_bytes(&message, std::env::var_os("TMUX").is_some());
            let mut out = io::stdout();
            let _ = out.write_all(&bytes).and_then(|()| out.flush());
        }
        // A prompt queued during the task goes as soon as it ended.
        if let Some(Action::Submit(op)) = app.take_queued()
            && agent.sender.submit(op).is_err()
        {
            agent_open = false;
        }
        // We hold an operation sender, so a closed agent means it stopped on its own.
        if !agent_open {
            // What it still sent is shown; the caller reports the failure.
            screen.frame(app, Instant::now())?;
            break;
        }
        if redraw
            && resized.is_none()
            && let Err(e) = screen.frame(app, Instant::now())
        {
            // The next frame draws everything again; a failed one is not worth the session.
            tracing::warn!(error = %e, "drawing a frame failed");
        }
    }
    if agent_open {
        Ok(())
    } else {
        Err(anyhow::anyhow!("the agent stopped unexpectedly"))
    }
}

/// Input events that arrived together: the one awaited and those already queued behind it.
#[derive(Debug)]
struct InputBatch {
    events: Vec<Event>,
    /// The terminal's input ended after these events.
    ended: bool,
}

/// Takes the input events already waiting after `first`, so a burst of keys (a paste without
/// bracketed paste) costs one frame instead of one per key.
fn take_ready<S>(input: &mut S, first: Event) -> io::Result<InputBatch>
where
    S: Stream<Item = io::Result<Event>> + Unpin,
{
    let mut batch = InputBatch {
        events: vec![first],
        ended: false,
    };
    while batch.events.len() < INPUT_PER_FRAME {
        match input.next().now_or_never() {
            Some(Some(ev)) => batch.events.push(ev?),
            Some(None) => {
                batch.ended = true;
                break;
            }
            None => break,
        }
    }
    Ok(batch)
}

/// `corvid 0.1.0 · ~/src/project · main`: the version, the working folder and its git branch.
fn welcome_line(cwd: &std::path::Path) -> String {
    let mut line = format!("corvid {} · {}", env!("CARGO_PKG_VERSION"), cwd.display());
    if let Some(branch) = git_branch(cwd) {
        line.push_str(&format!(" · {branch}"));
    }
    // The folder name and the branch come from the repository: no control characters.
    line.chars().filter(|c| !c.is_control()).collect()
}

/// The branch checked out in the repository holding `dir` (`.git/HEAD`; a worktree's `.git`
/// file points at its own HEAD). `None` outside a repository or on a detached HEAD.
fn git_branch(dir: &std::path::Path) -> Option<String> {
    let dot_git = dir
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|p| p.exists())?;
    let git_dir = if dot_git.is_file() {
        let pointer = std::fs::read_to_string(&dot_git).ok()?;
        let target = pointer.strip_prefix("gitdir:")?.trim();
        dot_git.parent()?.join(target)
    } else {
        dot_git
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let branch = head.trim().strip_prefix("ref: refs/heads/")?;
    Some(branch.chars().take(100).collect())
}

/// Lets the user edit `text` in `$VISUAL`, `$EDITOR` or `vi` (through `sh`, so the variable
/// may hold arguments, e.g. `code --wait`); returns the file's text when the editor exits.
async fn edit_in_editor(text: &str) -> io::Result<String> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path =
        std::env::temp_dir().join(format!("corvid-prompt-{}-{nanos}.md", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(&path)?.write_all(text.as_bytes())?;
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status()
        .await;
    let edited = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    let status = status?;
    if !status.success() {
        return Err(io::Error::other(format!("`{editor}` exited with {status}")));
    }
    edited
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use pretty_assertions::assert_eq;

    fn key(c: char) -> Event {
        Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
    }

    #[test]
    fn the_welcome_line_names_the_version_folder_and_branch_without_control_characters() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(
            dir.path().join(".git/HEAD"),
            "ref: refs/heads/fix\x1b]0;pwned\x07-it\n",
        )
        .unwrap();
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).unwrap();
        let line = welcome_line(&sub);
        assert!(line.starts_with(&format!("corvid {} · ", env!("CARGO_PKG_VERSION"))));
        assert!(line.ends_with(" · fix]0;pwned-it"), "{line:?}");
        assert!(!line.chars().any(char::is_control), "{line:?}");
    }

    #[test]
    fn a_burst_of_queued_keys_is_taken_as_one_batch_for_one_frame() {
        let typed: Vec<Event> = "x".repeat(3000).chars().map(key).collect();
        let mut queued = futures::stream::iter(typed[1..].iter().cloned().map(Ok));
        let batch = take_ready(&mut queued, typed[0].clone()).unwrap();
        assert_eq!(batch.events, typed);
        assert!(batch.ended);
    }

    #[test]
    fn a_batch_stops_at_the_per_frame_limit_and_leaves_the_rest_queued() {
        let mut queued = futures::stream::iter((0..INPUT_PER_FRAME + 10).map(|_| Ok(key('x'))));
        let batch = take_ready(&mut queued, key('y')).unwrap();
        assert_eq!(batch.events.len(), INPUT_PER_FRAME);
        assert!(!batch.ended);
        let rest = futures::executor::block_on(queued.collect::<Vec<_>>());
        assert_eq!(rest.len(), 11);
    }
}
