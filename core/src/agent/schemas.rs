//! Each tool's schema as offered to the model, built once per tool object.
//!
//! `Tool::parameters` builds a JSON tree. Each turn used to build every tool's tree (twice,
//! once for the compaction check), the providers copied it into the request body and walked it
//! again to write it: with 100 sessions turning at once on two cores, schemas and request
//! bodies were about a fifth of corvid's CPU (`cargo bench -p corvid-cli --bench
//! acp_sessions`, issue 16). Now a tool object's schema is built once, kept as JSON text in an
//! `Arc<ToolSchema>` every request shares, with its size for the context meter.
//!
//! The cache is the process's: the built-in tools are the same objects in every session
//! (`corvid_tools::builtin_tools`), so any number of sessions keeps one copy of their schemas
//! (about 6 KB), and a session that sends no request adds nothing. Entries are per tool
//! object: an MCP server that restarts offers new objects under the same names, whose schemas
//! may differ, and those are built afresh.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use corvid_protocol::ToolSchema;
use corvid_tools::Tool;

use super::session::lock;
use crate::context::meter::schema_bytes;

/// Below this many entries the dead ones are left alone (sweeping costs a pass over all).
const MIN_SWEEP: usize = 64;

/// Built schemas, by tool object.
#[derive(Default)]
pub(super) struct SchemaCache {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    /// By the address of the tool object.
    by_tool: HashMap<usize, Entry>,
    /// How many entries were left after the last sweep of dead tools.
    live_at_sweep: usize,
}

struct Entry {
    /// The tool the schema is of. The weak reference keeps the object's allocation (not the
    /// tool) alive, so no other tool can take its address while the entry exists: a live tool
    /// at this address is this very tool.
    tool: Weak<dyn Tool>,
    schema: Arc<ToolSchema>,
    /// What the schema adds to a request, as [`schema_bytes`] counts it.
    bytes: u64,
}

impl SchemaCache {
    /// The process's cache, shared by every session and subagent.
    pub(super) fn process() -> &'static SchemaCache {
        static CACHE: LazyLock<SchemaCache> = LazyLock::new(SchemaCache::default);
        &CACHE
    }

    /// The schemas of `tools`, in order, and the bytes they add to a request.
    pub(super) fn schemas(&self, tools: &[Arc<dyn Tool>]) -> (Vec<Arc<ToolSchema>>, u64) {
        let mut bytes = 0;
        let schemas = tools
            .iter()
            .map(|tool| {
                let (schema, size) = self.get(tool);
                bytes += size;
                schema
            })
            .collect();
        (schemas, bytes)
    }

    /// The bytes the schemas of `tools` add to a request.
    pub(super) fn bytes(&self, tools: &[Arc<dyn Tool>]) -> u64 {
        tools.iter().map(|tool| self.get(tool).1).sum()
    }

    /// The tool's schema and its size, built if this very tool has none yet.
    fn get(&self, tool: &Arc<dyn Tool>) -> (Arc<ToolSchema>, u64) {
        let key = Arc::as_ptr(tool).cast::<()>().addr();
        if let Some(entry) = lock(&self.entries).by_tool.get(&key) {
            return (entry.schema.clone(), entry.bytes);
        }
        // Built outside the lock: other sessions' requests need not wait for it.
        let schema = Arc::new(schema(tool.as_ref()));
        let bytes = schema_bytes(&schema);
        let mut entries = lock(&self.entries);
        entries.sweep();
        let entry = entries.by_tool.entry(key).or_insert(Entry {
            tool: Arc::downgrade(tool),
            schema,
            bytes,
        });
        (entry.schema.clone(), entry.bytes)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.entries).by_tool.len()
    }
}

impl Entries {
    /// Drops the entries of tools gone (ended sessions' MCP and `task` tools) once they may
    /// be half of all, so the cache stays within twice the live tools.
    fn sweep(&mut self) {
        if self.by_tool.len() < (2 * self.live_at_sweep).max(MIN_SWEEP) {
            return;
        }
        self.by_tool
            .retain(|_, entry| entry.tool.strong_count() > 0);
        self.live_at_sweep = self.by_tool.len();
    }
}

fn schema(tool: &dyn Tool) -> ToolSchema {
    ToolSchema {
        name: tool.name().to_owned(),
        description: tool.description().to_owned(),
        parameters: tool.parameters().into(),
    }
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

    fn versions(schemas: &[Arc<ToolSchema>]) -> Vec<(String, Value)> {
        schemas
            .iter()
            .map(|s| (s.name.clone(), s.parameters.to_value()["version"].clone()))
            .collect()
    }

    #[test]
    fn schemas_come_in_the_tools_order_with_the_bytes_a_request_counts_for_them() {
        let cache = SchemaCache::default();
        let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Named("b", 1)), Arc::new(Named("a", 1))];
        let (schemas, bytes) = cache.schemas(&tools);
        assert_eq!(
            versions(&schemas),
            vec![("b".into(), json!(1)), ("a".into(), json!(1))]
        );
        assert_eq!(bytes, schemas.iter().map(|s| schema_bytes(s)).sum::<u64>());
        assert_eq!(cache.bytes(&tools[..1]), schema_bytes(&schemas[0]));
    }

    #[test]
    fn a_tool_objects_schema_is_built_once_and_shared_by_every_request() {
        let cache = SchemaCache::default();
        let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Named("a", 1))];
        let (first, _) = cache.schemas(&tools);
        let (second, _) = cache.schemas(&tools);
        assert!(Arc::ptr_eq(&first[0], &second[0]));
    }

    #[test]
    fn the_schemas_of_tools_gone_are_dropped_once_they_are_half_of_the_cache() {
        let cache = SchemaCache::default();
        let kept: Vec<Arc<dyn Tool>> = vec![Arc::new(Named("kept", 1))];
        cache.bytes(&kept);
        for _ in 0..MIN_SWEEP {
            let gone: Arc<dyn Tool> = Arc::new(Named("gone", 1));
            cache.bytes(std::slice::from_ref(&gone));
        }
        // The sweep ran before the last insertion: the kept tool and the last one are left.
        assert_eq!(cache.len(), 2);
        assert!(Arc::ptr_eq(
            &cache.schemas(&kept).0[0],
            &cache.schemas(&kept).0[0]
        ));
    }

    #[test]
    fn a_new_tool_under_a_known_name_is_measured_afresh() {
        let cache = SchemaCache::default();
        let first: Arc<dyn Tool> = Arc::new(Named("mcp__x__echo", 1));
        let restarted: Arc<dyn Tool> = Arc::new(Named("mcp__x__echo", 123_456));
        let measured = [&first, &restarted, &first].map(|t| cache.bytes(std::slice::from_ref(t)));
        let expected = [&first, &restarted, &first].map(|t| schema_bytes(&schema(t.as_ref())));
        assert_eq!(measured, expected);
        assert_eq!(expected[1], expected[0] + 5);
    }
}
