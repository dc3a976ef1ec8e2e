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

/// A directory being assembled from flat paths.
#[derive(Default)]
struct Dir {
    children: BTreeMap<Vec<u8>, Node>,
}

enum Node {
    Leaf(Entry),
    Dir(Dir),
}

/// Stores the trees of `flat` (the files' contents are already stored) and returns the id of
/// the root tree.
pub(crate) fn write_tree(objects: &Objects, flat: &Flat) -> Result<ObjectId> {
    let mut root = Dir::default();
    for (path, entry) in flat {
        let mut dir = &mut root;
        let mut parts = path.split(|&b| b == b'/').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                dir.children
                    .insert(part.to_vec(), Node::Leaf(entry.clone()));
                break;
            }
            let node = dir
                .children
                .entry(part.to_vec())
                .or_insert_with(|| Node::Dir(Dir::default()));
            dir = match node {
                Node::Dir(d) => d,
                Node::Leaf(_) => {
                    return Err(Error::Corrupt(format!(
                        "{} is both a file and a folder",
                        String::from_utf8_lossy(path)
                    )));
                }
            };
        }
    }
    store_dir(objects, &root)
}

fn store_dir(objects: &Objects, dir: &Dir) -> Result<ObjectId> {
    let mut w = Writer::default();
    w.raw(TREE_MAGIC);
    for (name, node) in &dir.children {
        match node {
            Node::Dir(sub) => {
                let id = store_dir(objects, sub)?;
                w.u8(KIND_DIR);
                w.bytes(name);
                w.raw(&id.0);
            }
            Node::Leaf(Entry::File { mode, hash }) => {
                w.u8(KIND_FILE);
                w.bytes(name);
                w.u32(*mode);
                w.raw(&hash.0);
            }
            Node::Leaf(Entry::Symlink { target }) => {
                w.u8(KIND_SYMLINK);
                w.bytes(name);
                w.bytes(target);
            }
            Node::Leaf(Entry::TooLarge {
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
