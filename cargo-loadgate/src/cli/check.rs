//! `cargo loadgate check`: validate the configuration, print the resolved profile and the user model.

use super::gate::{primary_family, render_reachable};
use super::{CheckOpts, ExitCode, render::render_error};
use crate::compare::{DEFAULT_ALPHA, NoiseModel};
use crate::config::{LoadgateConfig, render_resolved};
use crate::result::SkippedAncestors;
use crate::workload::{analyze, render_check, validate_mix};

/// Sessions simulated to confirm the generated mix matches the model (seed 000's validation): enough
/// for a share of 1% to be estimated within about ±0.2 percentage points.
const MIX_SESSIONS: u64 = 20_000;

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
    let loaded = crate::config::load(&opts.config.load_opts(cwd));
    match loaded {
        Ok(config) => {
            print!("{}", render_resolved(&config));
            let workload = &config.workload;
            let model = analyze(workload)
                .and_then(|a| validate_mix(workload, workload.seed, MIX_SESSIONS).map(|m| (a, m)));
            match model {
                Ok((analysis, mix)) => {
                    println!();
                    print!("{}", render_check(&analysis, &mix));
                    println!();
                    print!("{}", reachable(&config));
                    ExitCode::PASS
                }
                Err(e) => {
                    eprint!("{}", render_error(&e));
                    ExitCode::USAGE
                }
            }
        }
        Err(e) => {
            eprint!("{}", render_error(&e));
            ExitCode::USAGE
        }
    }
}

/// The thresholds the profile can reach in a stored comparison, from the noise figure `check` has
/// without running anything: the conservative default (a stored history needs this machine's
/// fingerprint, which a run measures; `run` uses it, and `qualify` measures the figure).
fn reachable(config: &LoadgateConfig) -> String {
    let family = primary_family(config);
    let model = NoiseModel::default_only(SkippedAncestors::default());
    let mut out = render_reachable(
        &model.reachable(
            &config.gate,
            DEFAULT_ALPHA,
            family,
            !config.ramp.steps.is_empty(),
        ),
        DEFAULT_ALPHA,
        family,
    );
    out.push_str(
        "With 3 or more stored runs of this config on this machine, `run` uses their run-to-run \
         noise instead of the default; `cargo loadgate qualify --save` measures it and keeps it \
         with the baseline.\n",
    );
    out
}
