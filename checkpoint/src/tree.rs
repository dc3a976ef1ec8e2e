//! What a snapshot records for each path, and how a flat list of paths is stored as one tree
//! object per directory (like git's trees): an unchanged directory keeps its object, so a
//! snapshot adds only the trees on the way from a changed file to the root.

use std::collections::BTreeMap;

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};
use crate::objects::{ObjectId, Objects};

/// One path of a snapshot (directories are implied by the paths under them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A regular file: its permission bits and its content's object.
    File { mode: u32, hash: ObjectId },
    /// A symbolic link, recorded as its target text; the target is never read.
    Symlink { target: Vec<u8> },
    /// A file over the size limit: not captured, only recognised (size, mtime, mode).
    TooLarge { mode: u32, size: u64, mtime_ns: i64 },
}

/// Every path of a snapshot, relative to the workspace, `/`-separated, as raw bytes.
pub(crate) type Flat = BTreeMap<Vec<u8>, Entry>;

const KIND_FILE: u8 = 0;
const KIND_SYMLINK: u8 = 1;
const KIND_TOO_LARGE: u8 = 2;
const KIND_DIR: u8 = 3;
/// First bytes of a tree object, with the format version.
const TREE_MAGIC: &[u8] = b"corvid-tree-1\n";

/// What a folder's tree lists under one name.
enum Child<'a> {
    Leaf(&'a Entry),
    Dir(ObjectId),
}

/// Stores the trees of `flat` (the files' contents are already stored) and returns the id of
/// the root tree. The paths are sorted, so each folder's paths are one contiguous run: every
/// folder is encoded from its run, borrowing names and entries (no per-path allocation).
pub(crate) fn write_tree(objects: &Objects, flat: &Flat) -> Result<ObjectId> {
    let paths: Vec<(&[u8], &Entry)> = flat.iter().map(|(p, e)| (p.as_slice(), e)).collect();
    store_run(objects, &paths, 0)
}

/// Stores the folder whose paths are `run` (all starting with the same `prefix_len` bytes,
/// the folder's path and a `/`) and the folders under it.
fn store_run(objects: &Objects, run: &[(&[u8], &Entry)], prefix_len: usize) -> Result<ObjectId> {
    let mut children: Vec<(&[u8], Child<'_>)> = Vec::new();
    let mut i = 0;
    while let Some(&(path, entry)) = run.get(i) {
        let rest = &path[prefix_len..];
        match rest.iter().position(|&b| b == b'/') {
            None => {
                children.push((rest, Child::Leaf(entry)));
                i += 1;
            }
            Some(k) => {
                let folder = &path[..prefix_len + k + 1];
                let end = i + run[i..].partition_point(|(p, _)| p.starts_with(folder));
                let id = store_run(objects, &run[i..end], folder.len())?;
                children.push((&rest[..k], Child::Dir(id)));
                i = end;
            }
        }
    }
    // Within a folder, entries are ordered by name (`a` before `a.txt`), unlike whole paths
    // (`a.txt` before `a/b`).
    children.sort_unstable_by(|a, b| a.0.cmp(b.0));
    if let Some(w) = children.windows(2).find(|w| w[0].0 == w[1].0) {
        let mut path = run
            .first()
            .map_or(&[][..], |(p, _)| &p[..prefix_len])
            .to_vec();
        path.extend_from_slice(w[0].0);
        return Err(Error::Corrupt(format!(
            "{} is both a file and a folder",
            String::from_utf8_lossy(&path)
        )));
    }
    let mut w = Writer::default();
    w.raw(TREE_MAGIC);
    for (name, child) in &children {
        match child {
            Child::Dir(id) => {
                w.u8(KIND_DIR);
                w.bytes(name);
                w.raw(&id.0);
            }
            Child::Leaf(Entry::File { mode, hash }) => {
                w.u8(KIND_FILE);
                w.bytes(name);
                w.u32(*mode);
                w.raw(&hash.0);
            }
            Child::Leaf(Entry::Symlink { target }) => {
                w.u8(KIND_SYMLINK);
                w.bytes(name);
                w.bytes(target);
            }
            Child::Leaf(Entry::TooLarge {
                mode,
                size,
                mtime_ns,
            }) => {
                w.u8(KIND_TOO_LARGE);
                w.bytes(name);
                w.u32(*mode);
                w.u64(*size);
                w.i64(*mtime_ns);
            }
        }
    }
    objects.put(&w.0)
}

/// Every path under the tree `root`.
pub(crate) fn read_tree(objects: &Objects, root: &ObjectId) -> Result<Flat> {
    let mut flat = Flat::new();
    read_into(objects, root, &[], &mut flat, &mut |_| true)?;
    Ok(flat)
}

/// Calls `visit` on every object reachable from `root` (trees and file contents). A tree for
/// which `visit` returns false is not entered (it was visited already).
pub(crate) fn walk_objects(
    objects: &Objects,
    root: &ObjectId,
    visit: &mut dyn FnMut(&ObjectId) -> bool,
) -> Result<()> {
    if visit(root) {
        let mut flat = Flat::new();
        read_into(objects, root, &[], &mut flat, visit)?;
        for entry in flat.values() {
            if let Entry::File { hash, .. } = entry {
                visit(hash);
            }
        }
    }
    Ok(())
}

fn read_into(
    objects: &Objects,
    id: &ObjectId,
    prefix: &[u8],
    flat: &mut Flat,
    enter: &mut dyn FnMut(&ObjectId) -> bool,
) -> Result<()> {
    let bytes = objects.get(id)?;
    let mut r = Reader(&bytes);
    if r.raw(TREE_MAGIC.len())? != TREE_MAGIC {
        return Err(Error::Corrupt(format!("object {id} is not a tree")));
    }
    while !r.is_empty() {
        let kind = r.u8()?;
        let name = r.bytes()?;
        if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') {
            return Err(Error::Corrupt(format!("tree {id} holds a bad name")));
        }
        let mut path = prefix.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        let entry = match kind {
            KIND_FILE => Entry::File {
                mode: r.u32()?,
                hash: ObjectId(r.hash()?),
            },
            KIND_SYMLINK => Entry::Symlink {
                target: r.bytes()?.to_vec(),
            },
            KIND_TOO_LARGE => Entry::TooLarge {
                mode: r.u32()?,
                size: r.u64()?,
                mtime_ns: r.i64()?,
            },
            KIND_DIR => {
                let sub = ObjectId(r.hash()?);
                if enter(&sub) {
                    read_into(objects, &sub, &path, flat, enter)?;
                }
                continue;
            }
            _ => return Err(Error::Corrupt(format!("tree {id} has an unknown entry"))),
        };
        flat.insert(path, entry);
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn file(n: u8) -> Entry {
        Entry::File {
            mode: 0o644,
            hash: ObjectId([n; 32]),
        }
    }

    /// Paths whose order as whole paths differs from their order within a folder
    /// (`a.txt` < `a/b` but `a` < `a.txt`), links, large files and a deep folder.
    fn sample() -> Flat {
        let mut flat = Flat::new();
        flat.insert(b"a.txt".to_vec(), file(1));
        flat.insert(b"a/b".to_vec(), file(2));
        flat.insert(b"a/c/d/e".to_vec(), file(3));
        flat.insert(b"a-b".to_vec(), file(4));
        flat.insert(
            b"a/link".to_vec(),
            Entry::Symlink {
                target: b"../a.txt".to_vec(),
            },
        );
        flat.insert(
            b"big.bin".to_vec(),
            Entry::TooLarge {
                mode: 0o600,
                size: 1 << 30,
                mtime_ns: 42,
            },
        );
        flat.insert(b"z".to_vec(), file(5));
        flat
    }

    #[test]
    fn trees_round_trip_and_keep_the_stored_format_byte_for_byte() {
        let store = tempfile::tempdir().unwrap();
        let objects = Objects::new(store.path().join("objects"));
        let root = write_tree(&objects, &sample()).unwrap();
        assert_eq!(read_tree(&objects, &root).unwrap(), sample());
        // The root id of this sample as the first version of the format wrote it: snapshots
        // taken before stay comparable (an unchanged workspace keeps its snapshot).
        assert_eq!(
            root.to_string(),
            "8956a473aa704b6ecc1a5017c66dcc40e8f1471e5580c368450cd53ba3922cf3"
        );
    }

    #[test]
    fn a_path_that_is_both_a_file_and_a_folder_is_refused() {
        let store = tempfile::tempdir().unwrap();
        let objects = Objects::new(store.path().join("objects"));
        let mut flat = sample();
        flat.insert(b"a".to_vec(), file(6));
        assert!(matches!(
            write_tree(&objects, &flat),
            Err(Error::Corrupt(_))
        ));
    }
}
