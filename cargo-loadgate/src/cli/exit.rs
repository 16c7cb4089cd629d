//! Exit codes of `cargo loadgate`, in one place. Each is pinned by a test: CI scripts branch on them.
//!
//! Only the command line knows these numbers (as nextest's `NextestExitCode`): the library's errors
//! expose a kind ([`TargetErrorKind`], [`BaselineErrorKind`], [`BaseErrorKind`]), the verdict an outcome, the cleanup
//! task the signal that stopped the run, and the functions here map each to its code.

use crate::baseline::BaselineErrorKind;
use crate::logs::LogErrorKind;
use crate::result::VerdictOutcome;
use crate::targets::{BaseErrorKind, StopSignal, TargetErrorKind};

/// Process exit codes. Numbers are a contract with users' CI scripts and never change meaning.
pub struct ExitCode;

impl ExitCode {
    /// The gate passed (or there was nothing to compare and no baseline was required).
    pub const PASS: i32 = 0;
    /// An error that fits no other code: I/O, git, the Docker engine failing mid-run.
    pub const OTHER_ERROR: i32 = 1;
    /// Bad command line or bad configuration; nothing was run.
    pub const USAGE: i32 = 2;
    /// The comparison found a regression beyond a metric's threshold.
    pub const REGRESSION: i32 = 10;
    /// The comparison could not decide, and `--fail-on-inconclusive` was given.
    pub const INCONCLUSIVE: i32 = 11;
    /// No usable baseline was found, and `--require-baseline` was given; for `history`, no walked
    /// commit has a stored result of the config.
    pub const NO_BASELINE: i32 = 12;
    /// The target could not be built, booted or made ready, or it crashed during the run.
    pub const TARGET_FAILED: i32 = 20;
    /// No phase of the run was valid: the generator could not keep its schedule (lag, or drops that
    /// were not the service's) in any of them, so the run proves nothing. A run with some valid
    /// phases exits by its verdict instead, the metrics of its invalid phases inconclusive.
    pub const INVALID_RUN: i32 = 21;
    /// Interrupted by SIGINT (128 + 2), after cleaning up.
    pub const INTERRUPTED: i32 = 130;
    /// Terminated by SIGTERM (128 + 15), after cleaning up.
    pub const TERMINATED: i32 = 143;
}

impl ExitCode {
    /// The code a target-stage error ends a command with.
    pub fn for_target(kind: TargetErrorKind) -> i32 {
        match kind {
            TargetErrorKind::Usage => Self::USAGE,
            TargetErrorKind::Target => Self::TARGET_FAILED,
            TargetErrorKind::Io => Self::OTHER_ERROR,
        }
    }

    /// The code a baseline-stage error ends a command with: a usage error for what the person
    /// typed, a general error otherwise.
    pub fn for_baseline(kind: BaselineErrorKind) -> i32 {
        match kind {
            BaselineErrorKind::Usage => Self::USAGE,
            BaselineErrorKind::Store => Self::OTHER_ERROR,
        }
    }

    /// The code an error of the base side of a paired run ends a command with: a base ref that
    /// does not exist or a shallow clone without the merge-base is a usage error, a base that does
    /// not build is a failed target (never a pass).
    pub fn for_base(kind: BaseErrorKind) -> i32 {
        match kind {
            BaseErrorKind::Usage => Self::USAGE,
            BaseErrorKind::BaseFailed => Self::TARGET_FAILED,
            BaseErrorKind::Other => Self::OTHER_ERROR,
        }
    }

    /// The code a log-reading error of `model` or `load` ends with: logs that do not fit what
    /// was asked (the format, the key, the routes, the threshold) are a usage error.
    pub fn for_logs(kind: LogErrorKind) -> i32 {
        match kind {
            LogErrorKind::Usage => Self::USAGE,
            LogErrorKind::Other => Self::OTHER_ERROR,
        }
    }

    /// The code a verdict ends a gated command with: inconclusive fails only with
    /// `fail_on_inconclusive`, a missing baseline only with `require_baseline`.
    pub fn for_verdict(
        outcome: VerdictOutcome,
        fail_on_inconclusive: bool,
        require_baseline: bool,
    ) -> i32 {
        match outcome {
            VerdictOutcome::Pass => Self::PASS,
            VerdictOutcome::Regression => Self::REGRESSION,
            VerdictOutcome::Inconclusive if fail_on_inconclusive => Self::INCONCLUSIVE,
            VerdictOutcome::NoBaseline if require_baseline => Self::NO_BASELINE,
            VerdictOutcome::Inconclusive | VerdictOutcome::NoBaseline => Self::PASS,
        }
    }

    /// The code a run stopped by a signal ends with (128 + the signal's number, as shells expect).
    pub fn for_signal(signal: StopSignal) -> i32 {
        match signal {
            StopSignal::Interrupt => Self::INTERRUPTED,
            StopSignal::Terminate => Self::TERMINATED,
        }
    }
}

/// Ends the process after the cleanup task tore everything down on a signal: the callback given to
/// [`crate::targets::install_cleanup_handlers`].
pub fn exit_on_signal(signal: StopSignal) -> ! {
    std::process::exit(ExitCode::for_signal(signal))
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test]
    fn exit_codes_are_pinned() {
        assert_eq!(ExitCode::PASS, 0);
        assert_eq!(ExitCode::OTHER_ERROR, 1);
        assert_eq!(ExitCode::USAGE, 2);
        assert_eq!(ExitCode::REGRESSION, 10);
        assert_eq!(ExitCode::INCONCLUSIVE, 11);
        assert_eq!(ExitCode::NO_BASELINE, 12);
        assert_eq!(ExitCode::TARGET_FAILED, 20);
        assert_eq!(ExitCode::INVALID_RUN, 21);
        assert_eq!(ExitCode::INTERRUPTED, 130);
        assert_eq!(ExitCode::TERMINATED, 143);
    }

    #[test_case(LogErrorKind::Usage, ExitCode::USAGE)]
    #[test_case(LogErrorKind::Other, ExitCode::OTHER_ERROR)]
    fn log_errors_map_to_codes(kind: LogErrorKind, code: i32) {
        assert_eq!(ExitCode::for_logs(kind), code);
    }

    #[test_case(TargetErrorKind::Usage, ExitCode::USAGE)]
    #[test_case(TargetErrorKind::Target, ExitCode::TARGET_FAILED)]
    #[test_case(TargetErrorKind::Io, ExitCode::OTHER_ERROR)]
    fn target_kinds(kind: TargetErrorKind, code: i32) {
        assert_eq!(ExitCode::for_target(kind), code);
    }

    #[test_case(BaselineErrorKind::Usage, ExitCode::USAGE)]
    #[test_case(BaselineErrorKind::Store, ExitCode::OTHER_ERROR)]
    fn baseline_kinds(kind: BaselineErrorKind, code: i32) {
        assert_eq!(ExitCode::for_baseline(kind), code);
    }

    #[test_case(BaseErrorKind::Usage, ExitCode::USAGE)]
    #[test_case(BaseErrorKind::BaseFailed, ExitCode::TARGET_FAILED)]
    #[test_case(BaseErrorKind::Other, ExitCode::OTHER_ERROR)]
    fn base_kinds(kind: BaseErrorKind, code: i32) {
        assert_eq!(ExitCode::for_base(kind), code);
    }

    #[test_case(StopSignal::Interrupt, 130)]
    #[test_case(StopSignal::Terminate, 143)]
    fn signals(signal: StopSignal, code: i32) {
        assert_eq!(ExitCode::for_signal(signal), code);
    }

    #[test_case(VerdictOutcome::Pass, false, false, ExitCode::PASS)]
    #[test_case(VerdictOutcome::Pass, true, true, ExitCode::PASS)]
    #[test_case(VerdictOutcome::Regression, false, false, ExitCode::REGRESSION)]
    #[test_case(VerdictOutcome::Regression, true, true, ExitCode::REGRESSION)]
    #[test_case(VerdictOutcome::Inconclusive, false, false, ExitCode::PASS)]
    #[test_case(VerdictOutcome::Inconclusive, false, true, ExitCode::PASS)]
    #[test_case(VerdictOutcome::Inconclusive, true, false, ExitCode::INCONCLUSIVE)]
    #[test_case(VerdictOutcome::NoBaseline, false, false, ExitCode::PASS)]
    #[test_case(VerdictOutcome::NoBaseline, true, false, ExitCode::PASS)]
    #[test_case(VerdictOutcome::NoBaseline, false, true, ExitCode::NO_BASELINE)]
    fn verdicts(outcome: VerdictOutcome, fail_on_inconclusive: bool, require: bool, code: i32) {
        assert_eq!(
            ExitCode::for_verdict(outcome, fail_on_inconclusive, require),
            code
        );
    }

    /// Every target error as a person reads it, with the code it ends the command with.
    #[test]
    fn messages_and_hints_read_well() {
        let rendered: Vec<String> = crate::targets::error_examples()
            .into_iter()
            .map(|(name, err)| {
                let hint = err
                    .hint()
                    .map(|h| format!("\nhint: {h}"))
                    .unwrap_or_default();
                format!(
                    "[{name}] exit {}\n{err}{hint}",
                    ExitCode::for_target(err.kind())
                )
            })
            .collect();
        insta::assert_snapshot!(rendered.join("\n\n"));
    }

    /// Every error of the base side as a person reads it (with its causes, as `render_failure`
    /// prints them), with the code it ends the command with.
    #[test]
    fn base_errors_read_well() {
        let rendered: Vec<String> = crate::targets::base_error_examples()
            .into_iter()
            .map(|(name, err)| {
                format!(
                    "[{name}] exit {}\n{}",
                    ExitCode::for_base(err.kind()),
                    crate::cli::render::render_failure(&err, err.hint().as_deref()).trim_end()
                )
            })
            .collect();
        insta::assert_snapshot!(rendered.join("\n\n"));
    }
}
