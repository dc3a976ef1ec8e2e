//! The `corvid` binary: argument parsing and wiring of the front ends.

mod args;
mod replay;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command, DebugCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Debug {
            command: DebugCommand::ReplaySse(args),
        }) => replay::run(&args),
        None => {
            // Front ends are wired by later work; see the issues.
            ExitCode::SUCCESS
        }
    }
}
