//! The command line: clap options, dispatch, exit codes, and rendering errors to stderr.
//!
//! This is the only module that prints. Each command lives in its own file and returns an exit code.

mod attack;
mod audit;
mod baseline_cmd;
mod boot_log;
mod check;
mod clean;
mod exit;
mod gate;
mod history;
mod load;
mod merge;
mod model;
mod opts;
mod paired;
mod progress;
mod qualify;
mod render;
mod report;
mod run;

pub use exit::{ExitCode, exit_on_signal};
pub use opts::*;
pub use render::{render_error, render_failure};
pub use run::{RunError, render_summary, run_phase_on_generator_thread};

use clap::Parser;

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let opts = match parse_args(std::env::args_os()) {
        Ok(opts) => opts,
        Err(err) => {
            let code = if err.use_stderr() {
                ExitCode::USAGE
            } else {
                ExitCode::PASS
            };
            let _ = err.print();
            return code;
        }
    };
    let CargoOpts::Loadgate(opts) = opts;
    match &opts.command {
        Command::Run(run) => run::run(run),
        Command::Check(check) => check::run(check),
        Command::Clean(clean) => clean::run(clean),
        Command::Attack(attack) => attack::run(attack),
        Command::Baseline(baseline) => baseline_cmd::run(baseline),
        Command::Compare(compare) => baseline_cmd::compare_files(compare),
        Command::Report(report) => report::run(report),
        Command::Qualify(qualify) => qualify::run(qualify),
        Command::Merge(merge) => merge::run(merge),
        Command::History(history) => history::run(history),
        Command::Model(model) => model::run(model),
        Command::Load(load) => load::run(load),
    }
}

/// Runs `fut` to its exit code on a current-thread runtime; a runtime that cannot be built is
/// reported and exits 1.
fn block_on_current_thread(fut: impl std::future::Future<Output = i32>) -> i32 {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(fut),
        Err(e) => {
            eprint!("{}", render_error(&e));
            ExitCode::OTHER_ERROR
        }
    }
}

/// Parses arguments as `cargo loadgate …` (argv: `cargo-loadgate loadgate …`) and also accepts
/// `cargo-loadgate …` run directly, without the `loadgate` word cargo inserts.
pub fn parse_args<I, T>(args: I) -> Result<CargoOpts, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    if args.get(1).is_none_or(|a| a != "loadgate") {
        args.insert(1.min(args.len()), "loadgate".into());
    }
    CargoOpts::try_parse_from(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_cargo_subcommand_and_directly() {
        for argv in [
            &["cargo-loadgate", "loadgate", "check"][..],
            &["cargo-loadgate", "check"][..],
        ] {
            let CargoOpts::Loadgate(opts) = parse_args(argv).unwrap();
            assert!(matches!(opts.command, Command::Check(_)), "{argv:?}");
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        CargoOpts::command().debug_assert();
    }
}
