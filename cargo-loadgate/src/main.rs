//! The `cargo-loadgate` binary: parse, dispatch, render the error, pick the exit code.

fn main() {
    std::process::exit(cargo_loadgate::cli::main());
}
