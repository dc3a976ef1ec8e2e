//! The agent: a queue pair (operations in, core events out) around the task/turn loop.
