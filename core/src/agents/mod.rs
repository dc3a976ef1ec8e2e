//! Agent types: which tools, model and instructions a child of a `task` call gets; built in
//! (`general`, `explore`) or defined by the user in agent files ([`files`]).

pub mod files;

use std::path::Path;

use corvid_tools::Tool;
use corvid_tools::ask_user::ASK_USER;
use corvid_tools::enter_plan_mode::ENTER_PLAN_MODE;
use corvid_tools::exit_plan_mode::EXIT_PLAN_MODE;

/// The type used when a `task` call names none.
pub const DEFAULT_TYPE: &str = "general";

/// One kind of child agent the model may start.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentType {
    /// What the model passes as `subagent_type`.
    pub name: String,
    /// When to use it, listed in the `task` tool's description.
    pub description: String,
    pub tools: ToolChoice,
    /// The model the child runs (`None`: the parent's current model).
    pub model: Option<String>,
    /// Instructions added to the child's system prompt.
    pub instructions: String,
}

/// The tools a child is offered (never `task`: children do not nest; never
/// `exit_plan_mode` or `enter_plan_mode`: only the user's session plans; never `ask_user`:
/// the main agent asks the user).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolChoice {
    /// Every tool of the session.
    All,
    /// Only tools that change nothing.
    ReadOnly,
    /// Exactly these tools, by name.
    Named(Vec<String>),
}

impl ToolChoice {
    /// Whether a child of this type is offered `tool`.
    pub fn allows(&self, tool: &dyn Tool) -> bool {
        if [EXIT_PLAN_MODE, ENTER_PLAN_MODE, ASK_USER].contains(&tool.name()) {
            return false;
        }
        match self {
            Self::All => true,
            Self::ReadOnly => !tool.mutates(),
            Self::Named(names) => names.iter().any(|n| n == tool.name()),
        }
    }
}

/// The built-in types: `general` (every tool) and `explore` (read-only).
pub fn builtin_types() -> Vec<AgentType> {
    vec![
        AgentType {
            name: DEFAULT_TYPE.to_owned(),
            description: "a self-contained job that may read, edit and run commands \
                          (implement a small change, run and fix the tests)"
                .to_owned(),
            tools: ToolChoice::All,
            model: None,
            instructions: String::new(),
        },
        AgentType {
            name: "explore".to_owned(),
            description: "read-only research: find where something is, how it works, what \
                          calls it; several run in parallel"
                .to_owned(),
            tools: ToolChoice::ReadOnly,
            model: None,
            instructions: "You only read: change nothing, run nothing. Search broadly, then \
                           report what you found with path:line references."
                .to_owned(),
        },
    ]
}

/// The system prompt of a child of type `agent` working in `cwd`.
pub(crate) fn child_system_prompt(agent: &AgentType, cwd: &Path) -> String {
    let mut prompt = format!(
        "You are a corvid subagent: another agent handed you one self-contained job in the \
         software project at {cwd}. Every path you use resolves inside it. Work on your own \
         with the tools you have; nobody answers questions. When you are done, reply with a \
         concise final report: what you found or changed (with path:line references) and \
         anything still open. That reply is all the other agent sees.",
        cwd = cwd.display()
    );
    if !agent.instructions.trim().is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(agent.instructions.trim());
    }
    prompt
}

/// The agent types of a session: the built-in ones, replaced or joined by those of agent
/// files, and what was wrong with the files left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentTypes {
    pub types: Vec<AgentType>,
    /// One message per agent file that could not be used, naming the file.
    pub warnings: Vec<String>,
}

impl AgentTypes {
    /// The built-in types alone.
    pub fn default_types() -> Self {
        Self::with_defined(Vec::new(), Vec::new())
    }

    /// The built-in types followed by `defined` (a later type replaces an earlier one of the
    /// same name, so project files override user files, which override built-ins).
    pub fn with_defined(defined: Vec<AgentType>, warnings: Vec<String>) -> Self {
        let mut types = builtin_types();
        for agent in defined {
            match types.iter_mut().find(|t| t.name == agent.name) {
                Some(existing) => *existing = agent,
                None => types.push(agent),
            }
        }
        Self { types, warnings }
    }
}
