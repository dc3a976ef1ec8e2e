//! The transport `corvid --acp` serves on: newline-delimited JSON-RPC over a byte stream.
//!
//! The crate's own stdio transport decodes lines as UTF-8 and ends the connection (and so
//! every session) on the first line that is not; here such a line becomes one malformed
//! message, which the crate answers with -32700 like any other line that is not JSON.

use agent_client_protocol::{Agent, ConnectTo, Lines};
use futures::{Sink, Stream};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// What replaces a line that is not UTF-8: not JSON, so it is answered as a parse error.
const NOT_UTF8: &str = "(a line that is not valid UTF-8)";

/// Serves JSON-RPC lines read from `reader` and writes answers, one per line, to `writer`.
pub fn line_transport<R, W>(reader: R, writer: W) -> impl ConnectTo<Agent> + 'static
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    Lines::new(outgoing(writer), incoming(reader))
}

fn incoming<R>(reader: R) -> impl Stream<Item = std::io::Result<String>> + Send + 'static
where
    R: AsyncRead + Unpin + Send + 'static,
{
    futures::stream::unfold(
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
    )
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

fn outgoing<W>(writer: W) -> impl Sink<String, Error = std::io::Error> + Send + 'static
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    futures::sink::unfold(writer, async |mut writer, line: String| {
        writer.write_all(line.as_bytes()).await?;
        writer.write_all(b"\n").await?;
        writer.flush().await?;
        Ok(writer)
    })
}
