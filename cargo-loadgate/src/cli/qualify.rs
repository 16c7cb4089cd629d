//! `cargo loadgate qualify` (being written in this session; replaced before it lands).

use super::{ExitCode, QualifyOpts};

/// Runs the command.
pub fn run(_opts: &QualifyOpts) -> i32 {
    eprintln!("error: `qualify` is not built yet");
    ExitCode::OTHER_ERROR
}
