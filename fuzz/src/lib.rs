//! Helpers the fuzz targets share.
#![cfg(feature = "sse")]

use corvid_providers::{Emitted, StreamDecoder, StreamLimits, WireProtocol};

/// Splits a fuzz input into chunk sizes and a body: the first byte says how many size bytes
/// follow (0 to 7), each size byte is a chunk length (1 to 256), used in turn.
pub fn chunking(data: &[u8]) -> (Vec<usize>, &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return (vec![1], data);
    };
    let count = usize::from(first % 8).min(rest.len());
    let (sizes, body) = rest.split_at(count);
    let mut sizes: Vec<usize> = sizes.iter().map(|&b| usize::from(b) + 1).collect();
    if sizes.is_empty() {
        sizes.push(body.len().max(1));
    }
    (sizes, body)
}

/// Decodes `data` both at once and in the chunks it names, with small caps (so the cap paths
/// run too) and the default ones; the items must be the same either way.
pub fn sse_split_invariant(protocol: WireProtocol, data: &[u8]) {
    let (sizes, body) = chunking(data);
    let small = StreamLimits {
        max_line_bytes: 64 + usize::from(data.first().copied().unwrap_or(0)),
        max_body_bytes: 512 + 4 * usize::from(data.get(1).copied().unwrap_or(0)),
    };
    for limits in [StreamLimits::default(), small] {
        let whole = decode(protocol, limits, body, &[body.len().max(1)]);
        let split = decode(protocol, limits, body, &sizes);
        assert_eq!(whole, split, "chunk sizes {sizes:?} changed the items");
    }
}

fn decode(
    protocol: WireProtocol,
    limits: StreamLimits,
    body: &[u8],
    sizes: &[usize],
) -> Vec<Emitted> {
    let mut decoder = StreamDecoder::with_limits(protocol, limits);
    let mut out = Vec::new();
    let mut rest = body;
    for &size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        decoder.push(chunk, &mut out);
        rest = tail;
    }
    decoder.finish(&mut out);
    out
}
