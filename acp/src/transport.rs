//! The transport `corvid --acp` serves on: newline-delimited JSON-RPC over a byte stream.
//!
//! The crate's own stdio transport decodes lines as UTF-8 and ends the connection (and so
//! every session) on the first line that is not; here such a line becomes one malformed
//! message, which the crate answers with -32700 like any other line that is not JSON. A line
//! longer than [`MAX_LINE_BYTES`] is not kept: the rest of it is read and dropped, and it is
//! answered with -32700 too, so a client that never sends a newline cannot grow corvid's memory.
//! Outgoing lines go through [`crate::output`], which the sessions also write to directly.

use std::path::Path;
use std::pin::Pin;

use agent_client_protocol::Lines;
use futures::Stream;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};

use crate::direct_pipe::DirectPipe;
use crate::output::{LineSink, Output};

/// What replaces a line that is not UTF-8: not JSON, so it is answered as a parse error.
const NOT_UTF8: &str = "(a line that is not valid UTF-8)";

/// The longest incoming line (one JSON-RPC message) kept: a prompt with several images at
/// their 5 MiB limit fits, as does anything an editor sends; four times the 16 MiB an MCP
/// server's line may have, since images arrive base64-encoded and several to a prompt.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// What replaces a line over [`MAX_LINE_BYTES`]: not JSON, so it is answered as a parse error.
const TOO_LONG: &str = "(a line longer than the 64 MiB a message may have)";

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
        BufReader::new(reader),
        async |mut reader| match next_line(&mut reader, MAX_LINE_BYTES).await {
            Ok(Some(Line::Whole(line))) => {
                let line = decode(line);
                crate::ignored_fields::log_ignored(&line);
                Some((Ok(line), reader))
            }
            Ok(Some(Line::TooLong(len))) => {
                tracing::warn!(
                    bytes = len,
                    max = MAX_LINE_BYTES,
                    "received a line longer than a message may be; dropped it and answering it \
                     as a parse error"
                );
                Some((Ok(TOO_LONG.to_owned()), reader))
            }
            Ok(None) => None,
            Err(e) => Some((Err(e), reader)),
        },
    ))
}

/// One line read by [`next_line`].
enum Line {
    /// The line, without its `\n`.
    Whole(Vec<u8>),
    /// A line over the limit, dropped; its length.
    TooLong(u64),
}

/// The next line of `reader`, holding at most `max` bytes of it: the rest of a longer line
/// is read and dropped. `None` at the end of input (a last line without `\n` still counts).
async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut dropped: u64 = 0;
    let mut read_any = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(match (read_any, dropped) {
                (false, _) => None,
                (true, 0) => Some(Line::Whole(line)),
                (true, _) => Some(Line::TooLong(dropped)),
            });
        }
        read_any = true;
        let (part, used, ended) = match chunk.iter().position(|b| *b == b'\n') {
            Some(at) => (&chunk[..at], at + 1, true),
            None => (chunk, chunk.len(), false),
        };
        if dropped == 0 && line.len() + part.len() <= max {
            line.extend_from_slice(part);
        } else {
            dropped += (line.len() + part.len()) as u64;
            line = Vec::new();
        }
        reader.consume(used);
        if ended {
            return Ok(Some(match dropped {
                0 => Line::Whole(line),
                _ => Line::TooLong(dropped),
            }));
        }
    }
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
