//! The command line: clap options, dispatch, exit codes, and rendering errors to stderr.

mod exit;
mod opts;

pub use exit::ExitCode;
pub use opts::*;

use clap::Parser;

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let opts = match parse_args(std::env::args_os()) {
        Ok(opts) => opts,
        Err(err) => {
            let code = if err.use_stderr() { ExitCode::USAGE } else { ExitCode::PASS };
            let _ = err.print();
            return code;
        }
    };
    let CargoOpts::Loadgate(opts) = opts;
    match opts.command {
        _ => ExitCode::OTHER_ERROR,
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
