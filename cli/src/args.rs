//! Command-line arguments (SPEC §1.1).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// corvid: a terminal coding agent.
#[derive(Debug, Parser)]
#[command(name = "corvid", version, about, long_about = None)]
pub struct Cli {
    /// Run one task headless and exit; `-p -` reads the prompt from stdin.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Output format of headless mode.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// Headless: answers to the model's ask_user questions, by header (a JSON object; a label,
    /// free text, or a list for a multi-select question). Without it, a headless run does
    /// not offer ask_user to the model.
    #[arg(long, value_name = "FILE", requires = "prompt")]
    pub answers: Option<PathBuf>,
    /// With stream-json: also emit tool_preparing and text deltas.
    #[arg(long)]
    pub include_partial_messages: bool,
    /// Serve the Agent Client Protocol over stdio (for editors such as Zed).
    #[arg(long, conflicts_with = "prompt")]
    pub acp: bool,
    /// Use the built-in offline scripted model (no key, no network).
    #[arg(long)]
    pub demo: bool,
    /// Main model name.
    #[arg(long)]
    pub model: Option<String>,
    /// Fast model used for tool-use summaries.
    #[arg(long)]
    pub fast_model: Option<String>,
    /// Model provider.
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,
    /// How hard a reasoning model thinks (`model.reasoningEffort`).
    #[arg(long, value_enum)]
    pub reasoning_effort: Option<ReasoningEffortArg>,
    /// What the agent may do without asking.
    #[arg(long, value_enum)]
    pub approval_mode: Option<ApprovalModeArg>,
    /// Same as `--approval-mode yolo`.
    #[arg(short = 'y', long)]
    pub yolo: bool,
    /// Working directory of the session.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Trust a folder for this run only: its `.corvid/` configuration applies as it is when
    /// corvid starts. Without DIR: the working folder (with `--acp`: the folder corvid is
    /// started in, not every session's). Repeat to name several folders. Nothing is
    /// remembered.
    #[arg(
        long,
        value_name = "DIR",
        num_args = 0..=1,
        default_missing_value = "",
        action = clap::ArgAction::Append
    )]
    // A bare `--trust` is an empty entry: the working folder.
    pub trust: Vec<String>,
    /// Start the terminal UI in compact mode.
    #[arg(long)]
    pub compact: bool,
    /// Resume a recorded session (the latest one when no id is given).
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Continue the latest session of this project.
    #[arg(long = "continue")]
    pub continue_session: bool,
    /// With `--resume` or `--continue`: go on in a new session that starts with a copy of
    /// that one's conversation (recorded as forked from it); the original stays as it was.
    #[arg(long)]
    pub fork: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Headless output formats (SPEC §10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    StreamJson,
}

/// Providers selectable with `--provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    Openai,
    /// OpenAI's Responses API (same key and base URL as `openai`).
    OpenaiResponses,
    Anthropic,
    /// Google's Gemini API (`GEMINI_API_KEY`).
    Gemini,
    Demo,
}

/// Values of `--reasoning-effort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReasoningEffortArg {
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
}

/// Approval modes selectable with `--approval-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApprovalModeArg {
    Default,
    /// Edits and sandboxed commands run unasked while checkpoints (undo) are on.
    Auto,
    AutoEdit,
    Yolo,
    /// Read-only tools only; the model proposes a plan and asks to start working.
    Plan,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Recorded sessions of this project.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// MCP servers from the settings.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Custom commands (`.claude/commands`, `.gemini/commands`, Codex prompts...) and skills.
    Commands {
        #[command(subcommand)]
        command: CommandsCommand,
    },
    /// Hooks from the settings (Claude Code's `hooks` format).
    Hooks {
        #[command(subcommand)]
        command: HooksCommand,
    },
    /// Undo earlier turns of a session: restore the files, the conversation, or both.
    /// Exits 0 when done, 3 when conflicts (your own later edits) stopped it, 2 on bad
    /// arguments.
    Rewind(RewindArgs),
    /// This project's stored checkpoints.
    Checkpoints {
        #[command(subcommand)]
        command: CheckpointsCommand,
    },
    /// Tools for diagnosing providers.
    Debug {
        #[command(subcommand)]
        command: DebugCommand,
    },
}

/// `corvid sessions ...`
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// This project's sessions, newest first, forks under the session they came from.
    List {
        /// `text` or `json` (every session with its `forkedFrom`).
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        output_format: ReportFormat,
    },
    /// One session as a readable transcript.
    Show {
        /// The session id (or a unique prefix of it).
        id: String,
    },
    /// Deletes a session's recording and the checkpoints only it needed.
    Delete {
        /// The session's full id.
        id: String,
        /// Do not ask first (needed when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
    },
}

/// `corvid rewind ...`
#[derive(Debug, Args)]
pub struct RewindArgs {
    /// The session (an id or unique prefix); default: this project's latest.
    #[arg(long, value_name = "ID", conflicts_with = "continue_session")]
    pub session: Option<String>,
    /// This project's latest session (the default).
    #[arg(long = "continue")]
    pub continue_session: bool,
    /// Go back to before this turn (numbers as `corvid checkpoints list` shows them).
    #[arg(long, value_name = "N", conflicts_with = "last")]
    pub turn: Option<u32>,
    /// Go back to before the last turn (the default).
    #[arg(long)]
    pub last: bool,
    /// Restore the files only; the model is told which were restored.
    #[arg(long, conflicts_with_all = ["conversation", "both"])]
    pub code: bool,
    /// Cut the conversation back only.
    #[arg(long, conflicts_with = "both")]
    pub conversation: bool,
    /// Both (the default).
    #[arg(long)]
    pub both: bool,
    /// Show what would be done, do nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
    /// Also overwrite files you changed after the agent did (otherwise a conflict stops the
    /// rewind with exit code 3).
    #[arg(long)]
    pub overwrite_conflicts: bool,
    /// Restore everything but the conflicting files, which are kept as they are.
    #[arg(long, conflicts_with = "overwrite_conflicts")]
    pub keep_conflicts: bool,
    /// `text` or `json`.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub output_format: ReportFormat,
}

/// Output of `corvid rewind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
}

/// `corvid checkpoints ...`
#[derive(Debug, Subcommand)]
pub enum CheckpointsCommand {
    /// What this project's store holds: size, snapshots, and each session's undoable turns.
    List,
    /// Frees space: removes the oldest checkpoints until the store fits the budget.
    Prune {
        /// The budget in bytes (default: `checkpoints.maxBytes`); 0 keeps only the newest.
        #[arg(long, value_name = "BYTES")]
        max_bytes: Option<u64>,
    },
}

/// `corvid mcp ...`
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Starts every configured server and shows its status, tools and errors.
    List,
}

/// `corvid commands ...`
#[derive(Debug, Subcommand)]
pub enum CommandsCommand {
    /// Every command with its source file, and what was left out.
    List,
    /// The prompt `/NAME ARGS...` would send, without running anything.
    Show {
        /// The command's name (`review`, `git:commit`, or `origin:name`).
        name: String,
        /// The arguments, as typed after the name.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `corvid hooks ...`
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Every configured handler with its event, matcher and file.
    List,
    /// Runs the handlers an event selects on an input and prints what they decided.
    Test {
        /// The event (`PreToolUse`, `Stop`, ...).
        event: String,
        /// The tool the call is for (Claude's name such as `Bash`, or corvid's).
        #[arg(long, value_name = "NAME")]
        tool: Option<String>,
        /// A JSON object: the event's input fields, or with `--tool` the tool's input.
        #[arg(long, value_name = "FILE")]
        input: PathBuf,
    },
    /// Shows the project hooks waiting for review and approves them: a project's handler
    /// runs only once approved, and again only after a change is approved.
    Trust {
        /// Only show what waits (the default without hashes or --all).
        #[arg(long, conflicts_with_all = ["all", "hashes"])]
        list: bool,
        /// Approve every handler shown.
        #[arg(long, conflicts_with = "hashes")]
        all: bool,
        /// Approve these handlers (the hashes `--list` shows).
        #[arg(value_name = "HASH")]
        hashes: Vec<String>,
    },
}

/// `corvid debug ...`
#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Feed a captured SSE body through the real stream decoder; one JSON line per event.
    ReplaySse(ReplaySseArgs),
}

/// Arguments of `corvid debug replay-sse`.
#[derive(Debug, Args)]
pub struct ReplaySseArgs {
    /// Which wire protocol the body speaks.
    #[arg(long, value_enum)]
    pub protocol: WireProtocol,
    /// HTTP status of the captured response; other than 200 means the body is an error body.
    #[arg(long, default_value_t = 200)]
    pub status: u16,
    /// The captured response body.
    pub file: PathBuf,
}

/// Wire protocols understood by the decoders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WireProtocol {
    OpenaiChat,
    AnthropicMessages,
    OpenaiResponses,
    /// Google's Gemini API (`streamGenerateContent?alt=sse`).
    Gemini,
}
