//! Background processes: `run_in_background`, `shell_output`, `kill_shell`, the output ring,
//! the cap, moving a long foreground command, and that nothing they start is left behind.
//! Real processes, loopback only; every wait polls towards a deadline.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use common::Workspace;
use corvid_tools::shell::background::{ProcessState, RING_BYTES};
use corvid_tools::shell::{BackgroundLimits, BackgroundProcesses, SandboxLevel, ShellPolicy};
use corvid_tools::{KillShell, RunShellCommand, ShellOutput, Tool, ToolContext};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn ctx_with(ws: &Workspace, sandbox: SandboxLevel, limits: BackgroundLimits) -> ToolContext {
    let mut ctx = ws.ctx();
    ctx.shell = ShellPolicy {
        sandbox,
        background: Some(Arc::new(BackgroundProcesses::new(limits))),
        ..ShellPolicy::default()
    };
    ctx
}

fn table(ctx: &ToolContext) -> Arc<BackgroundProcesses> {
    ctx.shell.background.clone().unwrap()
}

async fn call(tool: &dyn Tool, args: Value, ctx: &ToolContext) -> Result<Value, String> {
    tool.execute(args, ctx.clone())
        .await
        .map(|out| {
            let mut raw = out.raw;
            raw["text"] = Value::String(out.text);
            raw
        })
        .map_err(|e| e.message)
}

async fn start(command: &str, ctx: &ToolContext) -> (String, i32) {
    let out = call(
        &RunShellCommand,
        json!({"command": command, "run_in_background": true}),
        ctx,
    )
    .await
    .unwrap();
    (
        out["background_id"].as_str().unwrap().to_owned(),
        i32::try_from(out["pid"].as_i64().unwrap()).unwrap(),
    )
}

/// Reads `id` until a line matching `filter` arrived (each read waits up to 10 s).
async fn wait_for_line(id: &str, filter: &str, ctx: &ToolContext) -> String {
    let out = call(
        &ShellOutput,
        json!({"id": id, "wait_ms": 10_000, "filter": filter}),
        ctx,
    )
    .await
    .unwrap();
    let text = out["output"].as_str().unwrap().to_owned();
    assert!(!text.is_empty(), "no line matching {filter}: {out}");
    text
}

/// Everything `id` prints until it exited, and the last read.
async fn until_exit(id: &str, ctx: &ToolContext) -> (String, Value) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut text = String::new();
    loop {
        let out = call(&ShellOutput, json!({"id": id, "wait_ms": 10_000}), ctx)
            .await
            .unwrap();
        text.push_str(out["output"].as_str().unwrap());
        if out["running"] == json!(false) {
            return (text, out);
        }
        assert!(tokio::time::Instant::now() < deadline, "{id} still runs");
    }
}

/// Whether `pid` is a live process (zombies count as gone: they no longer run).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        }
    }
}

/// Live processes whose process group is `group`.
fn group_members(group: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let fields: Vec<&str> = stat
                    .rsplit(')')
                    .next()
                    .unwrap_or_default()
                    .split_whitespace()
                    .collect();
                fields.get(2) == Some(&group.to_string().as_str())
            })
        })
        .filter(|&pid| alive(pid))
        .collect()
}

async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn assert_gone(pids: &[i32]) {
    for &pid in pids {
        wait_until(&format!("process {pid} to be gone"), || !alive(pid)).await;
        wait_until(&format!("process group {pid} to be empty"), || {
            group_members(pid).is_empty()
        })
        .await;
    }
}

#[tokio::test]
async fn a_background_http_server_is_started_read_over_loopback_and_killed_with_its_group() {
    let ws = Workspace::new();
    // The sandbox takes the network away (see the next test), so a server runs without it.
    let ctx = ctx_with(&ws, SandboxLevel::Off, BackgroundLimits::default());

    let (id, pid) = start("python3 -u -m http.server 0 --bind 127.0.0.1", &ctx).await;
    assert_eq!(id, "bg-1");
    let serving = wait_for_line(&id, "^Serving HTTP on", &ctx).await;
    let port: u16 = serving
        .split("port ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let mut response = String::new();
    conn.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.0 200"), "{response}");
    let logged = wait_for_line(&id, "\"GET / HTTP/1.0\" 200", &ctx).await;
    assert!(logged.contains("127.0.0.1"), "{logged}");

    let killed = call(&KillShell, json!({"id": id}), &ctx).await.unwrap();
    assert_eq!(killed["running"], json!(false));
    assert_gone(&[pid]).await;
    let after = call(&ShellOutput, json!({"id": id}), &ctx).await.unwrap();
    assert_eq!(after["running"], json!(false));
    assert_eq!(after["signal"], json!("SIGKILL"));
}

#[tokio::test]
async fn a_background_process_gets_no_network_inside_the_sandbox() {
    let ws = Workspace::new();
    let ctx = ctx_with(
        &ws,
        SandboxLevel::WorkspaceWrite,
        BackgroundLimits::default(),
    );

    let (id, _) = start(
        "python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 0))'",
        &ctx,
    )
    .await;
    let (output, last) = until_exit(&id, &ctx).await;

    assert_eq!(last["exit_code"], json!(1), "{last}");
    assert!(
        output.contains("PermissionError: [Errno 1] Operation not permitted"),
        "{output}"
    );
}

#[tokio::test]
async fn unread_output_past_one_mebibyte_is_dropped_oldest_first_with_a_note() {
    let ws = Workspace::new();
    let ctx = ctx_with(
        &ws,
        SandboxLevel::WorkspaceWrite,
        BackgroundLimits::default(),
    );

    let (id, _) = start(
        "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo END",
        &ctx,
    )
    .await;
    let processes = table(&ctx);
    wait_until("the writer to exit", || {
        processes.list()[0].state != ProcessState::Running
    })
    .await;
    let out = call(&ShellOutput, json!({"id": id}), &ctx).await.unwrap();

    let output = out["output"].as_str().unwrap();
    assert_eq!(output.len(), RING_BYTES);
    assert!(output.ends_with("x\nEND\n"));
    assert_eq!(out["dropped_bytes"], json!(3_000_005 - RING_BYTES));
    assert!(
        out["text"]
            .as_str()
            .unwrap()
            .contains("1951429 bytes of older output dropped: only the last 1 MiB"),
        "{}",
        &out["text"].as_str().unwrap()[..200]
    );
    let again = call(&ShellOutput, json!({"id": id}), &ctx).await.unwrap();
    assert_eq!(again["output"], json!(""));
    assert_eq!(again["dropped_bytes"], json!(0));
    assert_eq!(again["exit_code"], json!(0));
}

/// Starts a child in a session of its own and one under nohup, printing their pids.
const ESCAPERS: &str = "setsid sleep 300 & echo pid=$!; nohup sleep 300 >/dev/null 2>&1 & echo pid=$!; echo ready; wait";

async fn escaper_pids(id: &str, ctx: &ToolContext) -> Vec<i32> {
    let mut text = String::new();
    while !text.contains("ready") {
        text.push_str(&wait_for_line(id, ".", ctx).await);
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("pid="))
        .map(|p| p.parse().unwrap())
        .collect()
}

#[tokio::test]
async fn kill_shell_also_kills_children_that_left_the_group_with_setsid_or_nohup() {
    let ws = Workspace::new();
    let ctx = ctx_with(
        &ws,
        SandboxLevel::WorkspaceWrite,
        BackgroundLimits::default(),
    );

    let (id, shell) = start(ESCAPERS, &ctx).await;
    let mut pids = escaper_pids(&id, &ctx).await;
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|&p| alive(p)));

    call(&KillShell, json!({"id": id}), &ctx).await.unwrap();

    pids.push(shell);
    assert_gone(&pids).await;
}

#[tokio::test]
async fn ending_the_session_kills_every_background_process_and_what_it_started() {
    let ws = Workspace::new();
    let ctx = ctx_with(
        &ws,
        SandboxLevel::WorkspaceWrite,
        BackgroundLimits::default(),
    );
    let (first, first_shell) = start(ESCAPERS, &ctx).await;
    let (_, second_shell) = start("sleep 300", &ctx).await;
    let mut pids = escaper_pids(&first, &ctx).await;

    table(&ctx).kill_all();

    pids.extend([first_shell, second_shell]);
    assert_gone(&pids).await;
}

#[tokio::test]
async fn dropping_the_table_kills_what_still_runs() {
    let ws = Workspace::new();
    let ctx = ctx_with(
        &ws,
        SandboxLevel::WorkspaceWrite,
        BackgroundLimits::default(),
    );
    let (_, shell) = start("sleep 300", &ctx).await;

    drop(ctx);

    assert_gone(&[shell]).await;
}

#[tokio::test]
async fn a_foreground_command_past_auto_background_ms_moves_to_the_background() {
    let ws = Workspace::new();
    let limits = BackgroundLimits {
        max_running: 8,
        auto_background_after: Some(Duration::from_millis(300)),
    };
    let ctx = ctx_with(&ws, SandboxLevel::WorkspaceWrite, limits);

    let out = call(
        &RunShellCommand,
        json!({"command": "echo first; read -r _ < /dev/zero; sleep 300"}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(out["background_id"], json!("bg-1"), "{out}");

    let text = out["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "Still running after 300 ms, so it moved to the background as bg-1 (it was not killed)."
        ),
        "{text}"
    );
    assert!(text.contains("shell_output {\"id\": \"bg-1\"}"), "{text}");
    let list = table(&ctx).list();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].state, ProcessState::Running);
    let pid = i32::try_from(out["pid"].as_i64().unwrap()).unwrap();
    call(&KillShell, json!({"id": "bg-1"}), &ctx).await.unwrap();
    assert_gone(&[pid]).await;
}

#[tokio::test]
async fn a_command_beyond_max_background_is_a_tool_error_listing_the_running_ones() {
    let ws = Workspace::new();
    let limits = BackgroundLimits {
        max_running: 2,
        auto_background_after: None,
    };
    let ctx = ctx_with(&ws, SandboxLevel::WorkspaceWrite, limits);
    let (_, a) = start("sleep 300", &ctx).await;
    let (_, b) = start("sleep 301", &ctx).await;

    let err = call(
        &RunShellCommand,
        json!({"command": "touch third", "run_in_background": true}),
        &ctx,
    )
    .await
    .unwrap_err();

    assert_eq!(
        err,
        "2 background processes are running, the most this session allows \
         (tools.maxBackground = 2); stop one with kill_shell first. running: bg-1 (sleep 300), \
         bg-2 (sleep 301)"
    );
    assert!(!ws.path("third").exists());
    table(&ctx).kill_all();
    assert_gone(&[a, b]).await;
}

#[tokio::test]
async fn an_unknown_id_is_a_tool_error_naming_it_and_the_running_ones() {
    let ws = Workspace::new();
    let ctx = ctx_with(
        &ws,
        SandboxLevel::WorkspaceWrite,
        BackgroundLimits::default(),
    );
    assert_eq!(
        call(&ShellOutput, json!({"id": "bg-7"}), &ctx)
            .await
            .unwrap_err(),
        "there is no background process \"bg-7\"; none is running"
    );
    let (_, pid) = start("sleep 300", &ctx).await;

    assert_eq!(
        call(&KillShell, json!({"id": "bg-9"}), &ctx)
            .await
            .unwrap_err(),
        "there is no background process \"bg-9\"; running: bg-1 (sleep 300)"
    );
    table(&ctx).kill_all();
    assert_gone(&[pid]).await;
}

#[tokio::test]
async fn without_a_table_run_in_background_is_refused_and_nothing_runs() {
    let ws = Workspace::new();
    let err = ws
        .run_err(
            &RunShellCommand,
            json!({"command": "touch ran", "run_in_background": true}),
        )
        .await;
    assert_eq!(
        err,
        "this session runs no background processes; run the command without run_in_background"
    );
    assert!(!ws.path("ran").exists());
}
