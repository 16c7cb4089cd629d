//! `cargo loadgate report` (being written in this session; replaced before it lands).

use super::{ExitCode, ReportOpts};

/// Runs the command.
pub fn run(_opts: &ReportOpts) -> i32 {
    eprintln!("error: `report` is not built yet");
    ExitCode::OTHER_ERROR
}
