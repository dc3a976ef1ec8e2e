//! The transport `corvid --acp` serves on: newline-delimited JSON-RPC over a byte stream.
//!
//! The crate's own stdio transport decodes lines as UTF-8 and ends the connection (and so
//! every session) on the first line that is not; here such a line becomes one malformed
//! message, which the crate answers with -32700 like any other line that is not JSON.
//! Outgoing lines go through [`crate::output`], which the sessions also write to directly.

use std::path::Path;
use std::pin::Pin;

use agent_client_protocol::Lines;
use futures::Stream;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};

use crate::direct_pipe::DirectPipe;
use crate::output::{LineSink, Output};

/// What replaces a line that is not UTF-8: not JSON, so it is answered as a parse error.
const NOT_UTF8: &str = "(a line that is not valid UTF-8)";

type Incoming = Pin<Box<dyn Stream<Item = std::io::Result<String>> + Send>>;

/// A connection's two directions: the crate's line transport and the output the sessions
/// write their frames to (the same buffer the crate's lines go to).
pub struct LineTransport {
    pub(crate) lines: Lines<LineSink, Incoming>,
    pub(crate) output: Output,
}

/// Serves JSON-RPC lines read from `reader` and writes answers, one per line, to `writer`.
/// Must be called inside a tokio runtime (the writer thread writes through it).
pub fn line_transport<R, W>(reader: R, writer: W) -> std::io::Result<LineTransport>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    transport(
        reader,
        Box::new(tokio_util::io::SyncIoBridge::new(writer)),
        None,
    )
}

/// The transport on this process's stdin and stdout; stdout is written by the output's own
/// thread, without tokio's per-write blocking-pool hop, or straight into the client's pipe
/// while that thread is idle.
pub fn stdio_transport() -> std::io::Result<LineTransport> {
    let direct = DirectPipe::reopen(Path::new("/proc/self/fd/1"));
    transport(tokio::io::stdin(), Box::new(std::io::stdout()), direct)
}

fn transport<R>(
    reader: R,
    writer: Box<dyn std::io::Write + Send>,
    direct: Option<DirectPipe>,
) -> std::io::Result<LineTransport>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (output, sink) = Output::spawn(writer, direct)?;
    Ok(LineTransport {
        lines: Lines::new(sink, incoming(reader)),
        output,
    })
}

fn incoming<R>(reader: R) -> Incoming
where
    R: AsyncRead + Unpin + Send + 'static,
{
    Box::pin(futures::stream::unfold(
        BufReader::new(reader).split(b'\n'),
        async |mut lines| match lines.next_segment().await {
            Ok(Some(line)) => {
                let line = decode(line);
                crate::ignored_fields::log_ignored(&line);
                Some((Ok(line), lines))
            }
            Ok(None) => None,
            Err(e) => Some((Err(e), lines)),
        },
    ))
}

/// Fuzzing entry (`fuzz/`, not API): the lines the JSON-RPC layer receives for `bytes`.
#[doc(hidden)]
pub fn fuzz_incoming(bytes: Vec<u8>) -> std::io::Result<Vec<String>> {
    use futures::TryStreamExt;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    runtime.block_on(incoming(std::io::Cursor::new(bytes)).try_collect())
}

/// The line as text, without its `\r` (as `BufRead::lines` does).
fn decode(mut line: Vec<u8>) -> String {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).unwrap_or_else(|e| {
        tracing::warn!(
            valid_up_to = e.utf8_error().valid_up_to(),
            "received a line that is not valid UTF-8; answering it as a parse error"
        );
        NOT_UTF8.to_owned()
    })
}
