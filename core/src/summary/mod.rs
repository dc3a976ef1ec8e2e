//! Tool-use summaries: fast-model labels for finished tool batches (SPEC §7).
