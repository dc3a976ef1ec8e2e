//! What each tool's schema adds to a request, measured once per tool.
//!
//! `Tool::parameters` builds a JSON tree. Each turn used to build every tool's tree twice (the
//! compaction check, then the request) and serialize it twice more to count its bytes; with 100
//! sessions turning at once on two cores, building and sizing schemas was about a tenth of
//! corvid's CPU (`cargo bench -p corvid-cli --bench acp_sessions`, issue 16). Now the request
//! builds the schemas once and their sizes come from here. Only sizes are kept: the schemas
//! themselves would cost about 40 KiB per session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use corvid_protocol::ToolSchema;
use corvid_tools::Tool;

use super::session::lock;
use crate::context::meter::schema_bytes;

/// The request size of each tool's schema, by tool name.
#[derive(Default)]
pub(super) struct SchemaSizes {
    entries: Mutex<HashMap<String, Entry>>,
}

struct Entry {
    /// The tool that was measured. An MCP server that restarts offers new tool objects under
    /// the same names, whose schemas may differ: those are measured afresh. Holding the tool
    /// keeps its address from being reused by another one meanwhile.
    tool: Arc<dyn Tool>,
    /// What the schema adds to a request, as [`schema_bytes`] counts it.
    bytes: u64,
}

impl SchemaSizes {
    /// The schemas of `tools`, in order, and the bytes they add to a request.
    pub(super) fn schemas(&self, tools: &[Arc<dyn Tool>]) -> (Vec<ToolSchema>, u64) {
        let mut entries = lock(&self.entries);
        let mut bytes = 0;
        let schemas = tools
            .iter()
            .map(|tool| {
                let schema = schema(tool.as_ref());
                bytes += size(&mut entries, tool, Some(&schema));
                schema
            })
            .collect();
        (schemas, bytes)
    }

    /// The bytes the schemas of `tools` add to a request.
    pub(super) fn bytes(&self, tools: &[Arc<dyn Tool>]) -> u64 {
        let mut entries = lock(&self.entries);
        tools
            .iter()
            .map(|tool| size(&mut entries, tool, None))
            .sum()
    }
}

fn schema(tool: &dyn Tool) -> ToolSchema {
    ToolSchema {
        name: tool.name().to_owned(),
        description: tool.description().to_owned(),
        parameters: tool.parameters(),
    }
}

/// The tool's size, measured (on `built`, when the caller has the schema) if this very tool
/// was not measured yet.
fn size(
    entries: &mut HashMap<String, Entry>,
    tool: &Arc<dyn Tool>,
    built: Option<&ToolSchema>,
) -> u64 {
    if let Some(entry) = entries.get(tool.name())
        && Arc::ptr_eq(&entry.tool, tool)
    {
        return entry.bytes;
    }
    let bytes = match built {
        Some(schema) => schema_bytes(schema),
        None => schema_bytes(&schema(tool.as_ref())),
    };
    let entry = Entry {
        tool: tool.clone(),
        bytes,
    };
    entries.insert(tool.name().to_owned(), entry);
    bytes
}

#[cfg(test)]
mod tests {
    use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
    use corvid_tools::{ApprovalNeed, ToolContext, ToolError};
    use futures::future::BoxFuture;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    use super::*;

    /// A tool whose schema says which instance built it.
    struct Named(&'static str, u32);

    impl Tool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn display_name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "a tool"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "version": self.1})
        }
        fn kind(&self) -> ToolKind {
            ToolKind::Other
        }
        fn mutates(&self) -> bool {
            false
        }
        fn display(&self, _: &Value, _: &ToolContext) -> ToolDisplay {
            unreachable!("not displayed in these tests")
        }
        fn approval(&self, _: &Value, _: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
            unreachable!("not approved in these tests")
        }
        fn execute(
            &self,
            _: Value,
            _: ToolContext,
        ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
            unreachable!("not run in these tests")
        }
    }

    fn versions(schemas: &[ToolSchema]) -> Vec<(String, Value)> {
        schemas
            .iter()
            .map(|s| (s.name.clone(), s.parameters["version"].clone()))
            .collect()
    }

    #[test]
    fn schemas_come_in_the_tools_order_with_the_bytes_a_request_counts_for_them() {
        let sizes = SchemaSizes::default();
        let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Named("b", 1)), Arc::new(Named("a", 1))];
        let (schemas, bytes) = sizes.schemas(&tools);
        assert_eq!(
            versions(&schemas),
            vec![("b".into(), json!(1)), ("a".into(), json!(1))]
        );
        assert_eq!(bytes, schemas.iter().map(schema_bytes).sum::<u64>());
        assert_eq!(sizes.bytes(&tools[..1]), schema_bytes(&schemas[0]));
    }

    #[test]
    fn a_new_tool_under_a_known_name_is_measured_afresh() {
        let sizes = SchemaSizes::default();
        let first: Arc<dyn Tool> = Arc::new(Named("mcp__x__echo", 1));
        let restarted: Arc<dyn Tool> = Arc::new(Named("mcp__x__echo", 123_456));
        let measured = [&first, &restarted, &first].map(|t| sizes.bytes(std::slice::from_ref(t)));
        let expected = [&first, &restarted, &first].map(|t| schema_bytes(&schema(t.as_ref())));
        assert_eq!(measured, expected);
        assert_eq!(expected[1], expected[0] + 5);
    }
}
