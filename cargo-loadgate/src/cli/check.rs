//! `cargo loadgate check`: validate the configuration, print the resolved profile and the user model.

use super::{CheckOpts, ExitCode, render::render_error};
use crate::config::{LoadOpts, render_resolved};

/// Runs `cargo loadgate check` and returns the exit code: 0 when the configuration is valid, 2 with
/// every problem listed when it is not.
pub fn run(opts: &CheckOpts) -> i32 {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            eprint!("{}", render_error(&e));
            return ExitCode::OTHER_ERROR;
        }
    };
    let loaded = crate::config::load(&LoadOpts {
        manifest_path: opts.config.manifest_path.clone(),
        package: opts.config.package.clone(),
        config: opts.config.config.clone(),
        profile: opts.config.profile.clone(),
        cwd,
    });
    match loaded {
        Ok(config) => {
            print!("{}", render_resolved(&config));
            ExitCode::PASS
        }
        Err(e) => {
            eprint!("{}", render_error(&e));
            ExitCode::USAGE
        }
    }
}
