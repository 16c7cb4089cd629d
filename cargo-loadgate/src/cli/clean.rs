//! `cargo loadgate clean`: remove containers and images that loadgate labelled and left behind.

use super::{CleanOpts, ExitCode, render::render_failure};
use crate::targets::{SweepScope, sweep};

/// Runs `cargo loadgate clean` and returns the exit code.
pub fn run(opts: &CleanOpts) -> i32 {
    super::block_on_current_thread(clean(opts))
}

async fn clean(opts: &CleanOpts) -> i32 {
    match sweep(SweepScope::All, opts.dry_run).await {
        Ok(report) => {
            let verb = if report.dry_run {
                "would remove"
            } else {
                "removed"
            };
            for c in &report.containers {
                println!(
                    "{verb} container {} ({}, {}, {})",
                    short(&c.id),
                    c.name,
                    c.image,
                    c.state
                );
            }
            for i in &report.images {
                println!("{verb} image {} ({})", short(&i.id), i.tags.join(", "));
            }
            if report.containers.is_empty() && report.images.is_empty() {
                println!("nothing labelled loadgate to remove");
            }
            for failure in &report.failures {
                eprintln!("error: {failure}");
            }
            if report.failures.is_empty() {
                ExitCode::PASS
            } else {
                ExitCode::OTHER_ERROR
            }
        }
        Err(e) => {
            eprint!("{}", render_failure(&e, e.hint().as_deref()));
            ExitCode::for_target(e.kind())
        }
    }
}

fn short(id: &str) -> &str {
    let id = id.strip_prefix("sha256:").unwrap_or(id);
    &id[..id.len().min(12)]
}
