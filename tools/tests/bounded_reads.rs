//! Reads check a file's type and size before reading it (issue 15, finding 8): a FIFO or a
//! device is never read, and a huge file is never loaded into memory.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Workspace, symlink};
use corvid_tools::{
    ApprovalNeed, Edit, FileSystem, GrepSearch, LocalFs, ReadFile, Tool, ToolError, WriteFile,
};
use pretty_assertions::assert_eq;
use serde_json::json;

/// The 10 MiB above which a file is not loaded whole.
const WHOLE_FILE_LIMIT: u64 = 10 * 1024 * 1024;

/// Guards against a call that hangs (what a blocking FIFO open would do): fails the test
/// instead of hanging the suite. Not a timing assertion: any finite answer passes.
async fn finishes<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(30), fut).await {
        Ok(value) => value,
        Err(_) => panic!("{what} blocked for 30 s"),
    }
}

fn mkfifo(ws: &Workspace, rel: &str) {
    let status = std::process::Command::new("mkfifo")
        .arg(ws.path(rel))
        .status()
        .expect("mkfifo (coreutils) is needed by this test");
    assert!(status.success(), "mkfifo failed");
}

/// The peak resident set of this process, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line["VmHWM:".len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

#[tokio::test]
async fn a_fifo_is_not_read() {
    let ws = Workspace::new();
    mkfifo(&ws, "pipe");
    let refused = "it is a named pipe (FIFO), not a regular file; only regular files can be read";

    let read = finishes(
        "read_file",
        ws.run_err(&ReadFile, json!({"file_path": "pipe"})),
    )
    .await;
    assert_eq!(read, format!("cannot read pipe: {refused}"));

    let write = json!({"file_path": "pipe", "content": "x"});
    let edit = json!({"file_path": "pipe", "old_string": "a", "new_string": "b"});
    assert_eq!(
        finishes("write_file approval", WriteFile.approval(&write, &ws.ctx())).await,
        ApprovalNeed::Refuse(ToolError::new(format!("cannot write pipe: {refused}")))
    );
    assert_eq!(
        finishes("edit approval", Edit.approval(&edit, &ws.ctx())).await,
        ApprovalNeed::Refuse(ToolError::new(format!("cannot edit pipe: {refused}")))
    );

    let direct = finishes("LocalFs::read_text", LocalFs.read_text(ws.path("pipe")))
        .await
        .unwrap_err();
    assert_eq!(direct.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(direct.to_string(), refused);

    ws.file("a.txt", "needle\n");
    let found = finishes(
        "grep_search",
        ws.run_ok(&GrepSearch, json!({"pattern": "needle"})),
    )
    .await;
    assert_eq!(found.text, "a.txt:1:needle");
}

#[tokio::test]
async fn a_device_is_not_read() {
    let ws = Workspace::new();
    symlink(std::path::Path::new("/dev/zero"), &ws.path("zero"));

    // Inside the workspace the link is refused by path confinement, since it leads out.
    let read = finishes(
        "read_file",
        ws.run_err(&ReadFile, json!({"file_path": "zero"})),
    )
    .await;
    assert_eq!(
        read,
        format!(
            "`zero` is outside the working directory {}; only paths inside it can be used",
            ws.root.display()
        )
    );

    // The file system refuses the device itself, by its type, without reading a byte.
    let direct = finishes("LocalFs::read_text", LocalFs.read_text("/dev/zero".into()))
        .await
        .unwrap_err();
    assert_eq!(
        (direct.kind(), direct.to_string()),
        (
            std::io::ErrorKind::InvalidInput,
            "it is a character device, not a regular file; only regular files can be read"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn a_huge_sparse_file_is_refused_or_paged_without_loading_it() {
    let ws = Workspace::new();
    let big = std::fs::File::create(ws.path("big.bin")).unwrap();
    big.set_len(2 * 1024 * 1024 * 1024).unwrap();
    drop(big);
    let before = peak_rss();

    // Four at once, as a model's batch would ask.
    let reads = (0..4).map(|_| ws.run_err(&ReadFile, json!({"file_path": "big.bin"})));
    let answers = finishes("four reads", futures::future::join_all(reads)).await;
    let write = json!({"file_path": "big.bin", "content": "x"});
    let edit = json!({"file_path": "big.bin", "old_string": "a", "new_string": "b"});
    let write_need = WriteFile.approval(&write, &ws.ctx()).await;
    let edit_need = Edit.approval(&edit, &ws.ctx()).await;
    let direct = LocalFs.read_text(ws.path("big.bin")).await.unwrap_err();

    let grown = peak_rss().saturating_sub(before);
    assert!(
        grown < 100 * 1024 * 1024,
        "reading a 2 GiB file raised the peak RSS by {grown} bytes"
    );
    let binary = "big.bin (2 GiB) looks binary (it contains NUL bytes or is not UTF-8 text); \
                  refusing to read it";
    assert_eq!(answers, vec![binary.to_owned(); 4]);
    let too_large = |verb: &str| {
        ApprovalNeed::Refuse(ToolError::new(format!(
            "cannot {verb} big.bin: it is 2 GiB, more than the 10 MiB corvid loads whole; \
             change it with a shell command instead"
        )))
    };
    assert_eq!(write_need, too_large("write"));
    assert_eq!(edit_need, too_large("edit"));
    assert_eq!(
        (direct.kind(), direct.to_string()),
        (
            std::io::ErrorKind::FileTooLarge,
            "it is 2 GiB, more than the 10 MiB corvid loads whole; read it in parts with \
             read_file's offset and limit, or search it with grep_search"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn a_text_file_too_large_to_load_is_paged_from_disk() {
    let ws = Workspace::new();
    let lines = 1_200_000;
    let text: String = (0..lines).map(|i| format!("line {i:07}\n")).collect();
    assert!(text.len() as u64 > WHOLE_FILE_LIMIT);
    ws.file("big.log", &text);

    let middle = ws
        .run_ok(
            &ReadFile,
            json!({"file_path": "big.log", "offset": 1000, "limit": 2}),
        )
        .await;
    let last = ws
        .run_ok(
            &ReadFile,
            json!({"file_path": "big.log", "offset": lines - 1}),
        )
        .await;
    let past = ws
        .run_err(&ReadFile, json!({"file_path": "big.log", "offset": lines}))
        .await;

    assert_eq!(
        middle.text,
        "[Showing lines 1001-1002 of big.log, a 14.9 MiB file (too large to load whole or \
         count its lines). To read more, call read_file again with offset 1002.]\n\n\
         line 0001000\nline 0001001\n"
    );
    assert_eq!(
        middle.raw,
        json!({"path": ws.path("big.log"), "start_line": 1001, "end_line": 1002,
               "total_lines": null, "truncated": true})
    );
    // A window that reaches the end knows the line count.
    assert_eq!(
        last.text,
        "[Showing lines 1200000-1200000 of 1200000 of big.log.]\n\nline 1199999\n"
    );
    assert_eq!(
        past,
        "offset 1200000 is past the end of big.log, which has 1200000 lines"
    );
}

/// An editor whose buffers are the files on disk: reads take the path of a client's buffers,
/// checked step by step, instead of the one blocking step of local disk.
struct DiskBuffers;

impl FileSystem for DiskBuffers {
    fn read_text(
        &self,
        path: std::path::PathBuf,
    ) -> futures::future::BoxFuture<'static, std::io::Result<String>> {
        LocalFs.read_text(path)
    }

    fn write_text(
        &self,
        root: std::path::PathBuf,
        path: std::path::PathBuf,
        content: String,
    ) -> futures::future::BoxFuture<'static, std::io::Result<()>> {
        LocalFs.write_text(root, path, content)
    }
}

#[tokio::test]
async fn reads_from_local_disk_and_from_an_editors_buffers_answer_alike() {
    let ws = Workspace::new();
    ws.file("notes.txt", "one\ntwo\nthree\n");
    ws.file("empty.txt", "");
    ws.file("nul.bin", "a\0b");
    ws.dir("sub");
    mkfifo(&ws, "pipe");
    let big: String = (0..1_000_000).map(|i| format!("line {i:07}\n")).collect();
    ws.file("big.log", &big);
    // Past the size read on the worker itself, below the size paged from disk.
    let medium: String = (0..20_000).map(|i| format!("row {i:07}\n")).collect();
    ws.file("medium.txt", &medium);
    let cases = [
        json!({"file_path": "notes.txt"}),
        json!({"file_path": "notes.txt", "offset": 1, "limit": 1}),
        json!({"file_path": "notes.txt", "offset": 3}),
        json!({"file_path": "empty.txt"}),
        json!({"file_path": "nul.bin"}),
        json!({"file_path": "sub"}),
        json!({"file_path": "pipe"}),
        json!({"file_path": "missing.txt"}),
        json!({"file_path": "big.log", "offset": 999_999}),
        json!({"file_path": "big.log", "offset": 1_000_000}),
        json!({"file_path": "medium.txt", "offset": 19_990}),
    ];
    assert!(!DiskBuffers.on_local_disk() && LocalFs.on_local_disk());
    let buffers = ws.ctx_with(std::sync::Arc::new(DiskBuffers));
    for args in cases {
        let local = finishes("read_file", ReadFile.execute(args.clone(), ws.ctx())).await;
        let editor = finishes("read_file", ReadFile.execute(args.clone(), buffers.clone())).await;
        let shown = |answer: Result<corvid_protocol::ToolOutput, ToolError>| match answer {
            Ok(output) => format!("ok: {}\n{}", output.text, output.raw),
            Err(error) => format!("error: {}", error.message),
        };
        assert_eq!(shown(local), shown(editor), "{args}");
    }
}
