//! The randomized fault model (DESIGN convention 5) shared by `tests/fault_injection.rs` and
//! `benches/fault_runs.rs`: random scripted turns with cuts, HTTP errors, retry-after values,
//! approvals, a cancel at a random point and a random interleaving at the racing points, plus
//! subagents (`task` calls, several at once, whose children fail, ask for approval or are
//! cancelled mid-run), MCP tools (a server that answers, errs, crashes or hangs mid-call),
//! compactions (cut, refused or empty, on a "context too long" answer or a small window),
//! hooks (handlers that allow, deny, ask, fail, print malformed JSON or hang; PostToolUse
//! feedback; a prompt blocked; Stop keeping the agent going), checkpoints (a store that cannot
//! be written; a rewind while a task runs, with a cancel or between prompts) and the
//! Responses and Gemini decoders (responses sent as their SSE bytes, cut at a random byte).
//! Each case checks all invariants of SPEC §5.2 on the emitted core events, that the executor
//! only ran calls from attempts that finished and no call a hook blocked, and that every
//! request's history pairs each call with its result, loses and duplicates nothing, and
//! changes only by a compaction that succeeded or a rewind. Included with `#[path]` beside
//! `mod common;` (not a module of `common`, which every test binary compiles).
#![allow(dead_code, unused_imports)] // each includer uses its part of the model

#[path = "fault_model/checks.rs"]
mod checks;
#[path = "fault_model/hooks.rs"]
mod hooks;
#[path = "fault_model/routing.rs"]
mod routing;
#[path = "fault_model/run.rs"]
mod run;
#[path = "fault_model/script.rs"]
mod script;
#[path = "fault_model/tools.rs"]
mod tools;
#[path = "fault_model/wire.rs"]
mod wire;

pub use run::{Clock, run_case, run_case_with};
pub use wire::Wire;

use corvid_protocol::ErrorKind;
use proptest::prelude::*;

/// The tools a scripted call may name, by index: the fakes, a tool nobody offers, the `task`
/// tool (a subagent) and an MCP tool.
pub const TOOLS: [&str; 7] = [
    "read",
    "write",
    "shell",
    "todo_write",
    "nope",
    "task",
    MCP_TOOL,
];
/// The index of `task` in [`TOOLS`].
pub const TASK: usize = 5;
/// The MCP tool's model-facing name (server `srv`, tool `lookup`).
pub const MCP_TOOL: &str = "mcp__srv__lookup";

#[derive(Debug, Clone)]
pub enum Fault {
    None,
    /// The body ends after this many steps (no finish): a truncated stream.
    Cut(usize),
    /// A typed error after this many steps.
    ErrorAfter(usize, ErrorKind),
    /// The request fails at once (HTTP status), maybe with retry-after.
    Http(ErrorKind, Option<u64>),
}

#[derive(Debug, Clone)]
pub struct CallSpec {
    pub tool: usize,
    pub prepare: bool,
    pub object_args: bool,
    /// What the call meets beyond its tool: an MCP call's server behaviour ([`McpFate`]), a
    /// `task` call's subagent type (even: `general`, odd: `explore`).
    pub fate: u8,
}

#[derive(Debug, Clone)]
pub struct ResponseSpec {
    pub text: bool,
    pub calls: Vec<CallSpec>,
    /// Anthropic-style: each complete call right after its own arguments, before the finish.
    pub eager_calls: bool,
    pub delays: Vec<u64>,
    pub fault: Fault,
}

/// One answer to a compaction request: a summary, maybe empty, then `fault`.
#[derive(Debug, Clone)]
pub struct CompactionSpec {
    pub empty: bool,
    pub delay: u64,
    pub fault: Fault,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub responses: Vec<ResponseSpec>,
    pub cancel_at: Option<usize>,
    pub max_attempts: u32,
    pub fallback: bool,
    /// The user's answers to permission prompts, in turn: allow once, reject once, allow
    /// always, reject always, or (4) no answer until the user cancels.
    pub decisions: Vec<u8>,
    /// How long each tool-use summary takes (the fast model); empty turns summaries off.
    pub summary_delays: Vec<u64>,
    /// How many extra yields each racing point takes, in turn ([`Yields`]): the interleaving
    /// of the agent, the session actor, summaries and the front end.
    pub yields: Vec<u8>,
    /// Another runtime of the process is stopped mid-bulk-step while the case runs: nothing a
    /// case waits for may be shared with another runtime (issue 33).
    pub neighbour_mid_bulk_step: bool,
    /// The scripts of the subagents, in the order their `task` calls appear (cycled; a child
    /// past its script answers at once).
    pub children: Vec<Vec<ResponseSpec>>,
    /// The answers to compaction requests, in order (then summaries that succeed).
    pub compactions: Vec<CompactionSpec>,
    /// A context window small enough to compact before requests (`None`: the model's own).
    pub window: Option<u64>,
    /// A second prompt after the first task: its request shows the history the first left.
    pub follow_up: bool,
    /// The user cancels (once) when no event comes for a while: a hanging call.
    pub impatient: bool,
    /// The session's hooks, if it has any.
    pub hooks: Option<HookSpec>,
    /// Every response comes as this API's SSE bytes through corvid's decoder (`None`: as
    /// decoded events).
    pub wire: Option<Wire>,
    /// The session takes checkpoints (a store in a temporary folder), and the user rewinds.
    pub checkpoints: Option<CheckpointSpec>,
}

/// Checkpoints in a case (`fault_model/run.rs`): the store may be unusable, and the user
/// may rewind the last turn (conversation and code) while a task runs, with a cancel, or
/// between the two prompts.
#[derive(Debug, Clone)]
pub struct CheckpointSpec {
    /// The store's folder is a file: every snapshot fails (the turn goes on, with a warning).
    pub broken: bool,
    /// At this many events of the first task, the user asks for a rewind (refused while the
    /// task runs).
    pub rewind_at: Option<usize>,
    /// Each cancel is followed at once by a rewind.
    pub rewind_with_cancel: bool,
    /// Between the first task and the second prompt, the user rewinds the first turn.
    pub rewind_between: bool,
}

/// What a case's hook handlers answer (`fault_model/hooks.rs`): each call's and each
/// prompt's handler takes one of these fates, picked by a hash of the call's id or the prompt.
#[derive(Debug, Clone)]
pub struct HookSpec {
    /// `PreToolUse`: silent, allow, deny, ask, exit 2, crash, killed, malformed JSON, hang.
    pub pre: Vec<u8>,
    /// `PostToolUse`/`PostToolUseFailure`: silent, context, block, crash.
    pub post: Vec<u8>,
    /// `UserPromptSubmit`: silent, context, block, hang.
    pub prompt: Vec<u8>,
    /// How many times in all the `Stop` handler blocks (keeps the agent going).
    pub stop_blocks: u8,
    /// Every handler has `onError: "block"`: its failures block too.
    pub on_error_block: bool,
}

impl Case {
    /// The case without any of the newer paths (subagents' scripts, compactions, a small
    /// window, a second prompt): what a hand-written regression case starts from.
    pub fn plain(responses: Vec<ResponseSpec>) -> Self {
        Self {
            responses,
            cancel_at: None,
            max_attempts: 1,
            fallback: false,
            decisions: vec![0],
            summary_delays: Vec::new(),
            yields: Vec::new(),
            neighbour_mid_bulk_step: false,
            children: Vec::new(),
            compactions: Vec::new(),
            window: None,
            follow_up: false,
            impatient: false,
            hooks: None,
            wire: None,
            checkpoints: None,
        }
    }
}

pub fn error_kind() -> impl Strategy<Value = ErrorKind> {
    prop_oneof![
        4 => Just(ErrorKind::StreamTruncated),
        3 => Just(ErrorKind::RateLimited),
        3 => Just(ErrorKind::Overloaded),
        2 => Just(ErrorKind::Server),
        3 => Just(ErrorKind::ContextTooLong),
        1 => Just(ErrorKind::Network),
        1 => Just(ErrorKind::BadRequest),
        1 => Just(ErrorKind::Auth),
    ]
}

pub fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        5 => Just(Fault::None),
        3 => (0usize..20).prop_map(Fault::Cut),
        3 => (0usize..20, error_kind()).prop_map(|(k, e)| Fault::ErrorAfter(k, e)),
        2 => (error_kind(), proptest::option::of(0u64..5_000)).prop_map(|(e, r)| Fault::Http(e, r)),
    ]
}

pub fn response() -> impl Strategy<Value = ResponseSpec> {
    let call = (
        0usize..TOOLS.len(),
        proptest::bool::weighted(0.8),
        proptest::bool::weighted(0.9),
        0u8..16,
    )
        .prop_map(|(tool, prepare, object_args, fate)| CallSpec {
            tool,
            prepare,
            object_args,
            fate,
        });
    (
        any::<bool>(),
        prop::collection::vec(call, 0..4),
        any::<bool>(),
        prop::collection::vec(0u64..30, 1..8),
        fault(),
    )
        .prop_map(|(text, calls, eager_calls, delays, fault)| {
            // Several `task` calls of one response run their children at once.
            ResponseSpec {
                text,
                calls,
                eager_calls,
                delays,
                fault,
            }
        })
}

pub fn compaction() -> impl Strategy<Value = CompactionSpec> {
    (proptest::bool::weighted(0.1), 0u64..50, fault()).prop_map(|(empty, delay, fault)| {
        CompactionSpec {
            empty,
            delay,
            fault,
        }
    })
}

pub fn hook_spec() -> impl Strategy<Value = HookSpec> {
    (
        prop::collection::vec(0u8..9, 1..4),
        prop::collection::vec(0u8..4, 1..3),
        prop::collection::vec(prop_oneof![3 => Just(0u8), 1 => 1u8..4], 1..3),
        prop_oneof![4 => Just(0u8), 3 => 1u8..4, 1 => 7u8..11],
        proptest::bool::weighted(0.25),
    )
        .prop_map(
            |(pre, post, prompt, stop_blocks, on_error_block)| HookSpec {
                pre,
                post,
                prompt,
                stop_blocks,
                on_error_block,
            },
        )
}

pub fn checkpoint_spec() -> impl Strategy<Value = CheckpointSpec> {
    (
        proptest::bool::weighted(0.3),
        proptest::option::weighted(0.4, 0usize..30),
        proptest::bool::weighted(0.4),
        proptest::bool::weighted(0.6),
    )
        .prop_map(
            |(broken, rewind_at, rewind_with_cancel, rewind_between)| CheckpointSpec {
                broken,
                rewind_at,
                rewind_with_cancel,
                rewind_between,
            },
        )
}

pub fn case() -> impl Strategy<Value = Case> {
    let base = (
        prop::collection::vec(response(), 1..6),
        proptest::option::weighted(0.6, 0usize..40),
        1u32..4,
        any::<bool>(),
        prop::collection::vec(0u8..5, 8),
        prop::collection::vec(0u64..200, 0..4),
        prop_oneof![
            1 => Just(Vec::new()),
            3 => prop::collection::vec(0u8..4, 1..12),
        ],
        proptest::bool::weighted(0.2),
    );
    let newer = (
        prop::collection::vec(prop::collection::vec(response(), 1..4), 1..3),
        prop::collection::vec(compaction(), 0..3),
        proptest::option::weighted(0.25, 200u64..3_000),
        proptest::bool::weighted(0.5),
        proptest::bool::weighted(0.3),
    );
    let later = (
        proptest::option::weighted(0.3, hook_spec()),
        proptest::option::weighted(0.3, prop_oneof![Just(Wire::Responses), Just(Wire::Gemini)]),
        proptest::option::weighted(0.25, checkpoint_spec()),
    );
    (base, newer, later).prop_map(
        |(
            (
                responses,
                cancel_at,
                max_attempts,
                fallback,
                decisions,
                summary_delays,
                yields,
                neighbour_mid_bulk_step,
            ),
            (children, compactions, window, follow_up, impatient),
            (hooks, wire, checkpoints),
        )| Case {
            responses,
            cancel_at,
            max_attempts,
            fallback,
            decisions,
            summary_delays,
            yields,
            neighbour_mid_bulk_step,
            children,
            compactions,
            window,
            follow_up,
            impatient,
            hooks,
            wire,
            checkpoints,
        },
    )
}
