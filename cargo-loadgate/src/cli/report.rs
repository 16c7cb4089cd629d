//! `cargo loadgate report A.json [B.json …]`: several run results side by side, on the terminal
//! and, with `--markdown PATH`, as Markdown. Reads the files and writes the Markdown; the report
//! itself is `report::render_terminal` and `report::render_markdown`.

use super::{ExitCode, ReportOpts, render::render_error};
use crate::report::{ReportRun, render_markdown, render_terminal, run_labels};

/// Runs the command and returns its exit code: 0 when the report was written, 2 when an input is
/// unusable (every such file is named), 1 when the Markdown could not be written.
pub fn run(opts: &ReportOpts) -> i32 {
    let labels = run_labels(&opts.results);
    let mut runs = Vec::new();
    let mut failed = false;
    for (path, label) in opts.results.iter().zip(labels) {
        match ReportRun::read(label, path) {
            Ok(run) => runs.push(run),
            Err(e) => {
                eprint!("{}", render_error(&e));
                failed = true;
            }
        }
    }
    if failed {
        return ExitCode::USAGE;
    }
    print!("{}", render_terminal(&runs));
    if let Some(path) = &opts.markdown {
        if let Err(e) = std::fs::write(path, render_markdown(&runs)) {
            eprintln!(
                "error: failed to write the Markdown report to {}\n  caused by: {e}",
                path.display()
            );
            return ExitCode::OTHER_ERROR;
        }
        println!("\nmarkdown: {}", path.display());
    }
    ExitCode::PASS
}
