//! Re-reading a file whose content is already in the conversation costs its whole text again;
//! the read cache turns such a repeat into a short note pointing at the earlier result.
//!
//! A repeat is the same file (as `read_file` resolved it) with the same `offset` and `limit`,
//! whose result text is byte for byte the one the earlier read returned (compared by hash, so
//! a change on disk or through an editor's buffers is always seen). An `edit` or `write_file`
//! of the file in between makes the next read a full one, as the model may need to see its
//! change in context. The earlier result must still be in the history: whoever removes
//! messages from it (`/clear`, compaction) calls [`ReadCache::clear`].

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// The reads of this session whose results are in the history.
#[derive(Debug, Default)]
pub struct ReadCache {
    reads: HashMap<ReadKey, EarlierRead>,
}

/// A file and the window of it that was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ReadKey {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

#[derive(Debug)]
struct EarlierRead {
    call_id: String,
    digest: u64,
}

impl ReadCache {
    /// Forgets every read: their results are no longer in the history.
    pub fn clear(&mut self) {
        self.reads.clear();
    }

    /// For a successful `read_file` call with `args`, `raw` output and result `text`: a short
    /// note when an earlier read returned exactly this text, else `None` (and this read is
    /// remembered).
    pub fn repeat_note(
        &mut self,
        call_id: &str,
        args: &Value,
        raw: &Value,
        text: &str,
    ) -> Option<String> {
        let key = ReadKey {
            path: raw.get("path")?.as_str()?.to_owned(),
            offset: args.get("offset").and_then(Value::as_u64),
            limit: args.get("limit").and_then(Value::as_u64),
        };
        let digest = digest(text);
        match self.reads.get(&key) {
            Some(earlier) if earlier.digest == digest => Some(format!(
                "[{} is unchanged since your earlier read_file call {} with the same offset and \
                 limit; its content is above in this conversation.]",
                key.path, earlier.call_id
            )),
            _ => {
                self.reads.insert(
                    key,
                    EarlierRead {
                        call_id: call_id.to_owned(),
                        digest,
                    },
                );
                None
            }
        }
    }

    /// A call that changed the file at `raw`'s `path` (an edit, a write): its earlier reads
    /// no longer show it as it is.
    pub fn file_changed(&mut self, raw: &Value) {
        if let Some(path) = raw.get("path").and_then(Value::as_str) {
            self.reads.retain(|key, _| key.path != path);
        }
    }
}

fn digest(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}
