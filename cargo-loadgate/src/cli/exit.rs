//! Exit codes of `cargo loadgate`, in one place. Each is pinned by a test: CI scripts branch on them.

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
    /// No usable baseline was found, and `--require-baseline` was given.
    pub const NO_BASELINE: i32 = 12;
    /// The target could not be built, booted or made ready, or it crashed during the run.
    pub const TARGET_FAILED: i32 = 20;
    /// The generator could not keep its schedule (lag or drops past the limit): the run proves nothing.
    pub const INVALID_RUN: i32 = 21;
    /// Interrupted by SIGINT (128 + 2), after cleaning up.
    pub const INTERRUPTED: i32 = 130;
    /// Terminated by SIGTERM (128 + 15), after cleaning up.
    pub const TERMINATED: i32 = 143;
}

#[cfg(test)]
mod tests {
    use super::ExitCode;

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
}
