//! The recorded provider SSE bodies in `<workspace>/testdata/sse`, with their sidecars.

use std::path::{Path, PathBuf};

use crate::Chunk;

/// The fixture root, `<workspace>/testdata/sse`.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("testdata")
        .join("sse")
}

/// One recorded body and what a correct parser must make of it.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The path below [`dir`] without the extension, e.g. `openai/parallel_tool_calls`.
    pub name: String,
    /// The `.sse` file.
    pub path: PathBuf,
    pub body: Vec<u8>,
    /// The parsed `.expected.json` sidecar.
    pub expected: serde_json::Value,
}

/// Loads one fixture by name (`openai/parallel_tool_calls`); panics naming the missing file.
pub fn load(rel: &str) -> Fixture {
    let path = dir().join(format!("{rel}.sse"));
    let sidecar = dir().join(format!("{rel}.expected.json"));
    let body = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("corvid-testkit: cannot read {}: {e}", path.display()));
    let expected_text = std::fs::read(&sidecar)
        .unwrap_or_else(|e| panic!("corvid-testkit: cannot read {}: {e}", sidecar.display()));
    let expected = serde_json::from_slice(&expected_text)
        .unwrap_or_else(|e| panic!("corvid-testkit: {} is not JSON: {e}", sidecar.display()));
    Fixture {
        name: rel.to_owned(),
        path,
        body,
        expected,
    }
}

/// Every fixture below [`dir`], sorted by name.
pub fn all() -> Vec<Fixture> {
    let root = dir();
    let mut names = Vec::new();
    collect_names(&root, &root, &mut names);
    names.sort();
    names.iter().map(|name| load(name)).collect()
}

fn collect_names(root: &Path, dir: &Path, names: &mut Vec<String>) {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("corvid-testkit: cannot list {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_names(root, &path, names);
        } else if path.extension().is_some_and(|ext| ext == "sse") {
            let rel = path.strip_prefix(root).unwrap_or(&path).with_extension("");
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            names.push(parts.join("/"));
        }
    }
}

/// Splits an SSE body into one chunk per event (each ending with its blank line); a trailing
/// unterminated event becomes the last chunk, as it would arrive from a cut stream.
pub fn split_into_events(body: &[u8]) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < body.len() {
        let rest = &body[i..];
        let separator = [&b"\r\n\r\n"[..], b"\n\n", b"\r\r"]
            .into_iter()
            .find(|sep| rest.starts_with(sep));
        match separator {
            Some(sep) => {
                i += sep.len();
                chunks.push(Chunk::new(&body[start..i]));
                start = i;
            }
            None => i += 1,
        }
    }
    if start < body.len() {
        chunks.push(Chunk::new(&body[start..]));
    }
    chunks
}
