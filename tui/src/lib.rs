//! corvid's terminal UI: append-only transcript above an inline live area.
