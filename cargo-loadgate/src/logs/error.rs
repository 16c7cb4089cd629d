//! What can go wrong reading logs, each with what a person needs to fix it.

use super::parse::LogFormat;
use std::path::PathBuf;

/// A malformed line, kept for the report.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BadSample {
    /// The file.
    pub file: PathBuf,
    /// Its line number, from 1.
    pub line: u64,
    /// What was wrong.
    pub why: String,
    /// The line's first 160 characters.
    pub text: String,
}

/// How a log error ends the command: the CLI maps the kind to an exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogErrorKind {
    /// The logs do not fit what was asked (format, key, routes, threshold): fix the command line.
    Usage,
    /// A file could not be read, or the estimate could not be stated.
    Other,
}

/// An error of `model` or `load`.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// A file could not be opened or read.
    #[error("failed to read log {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// More than the allowed share of lines are malformed.
    #[error(
        "{bad} of {lines} lines are not in the {format} format (more than {limit}% are){}\nhint: pick the format with `--format combined|common|json` (and `--json-fields` for JSON names)",
        render_samples(samples),
        limit = super::reader::MAX_BAD_SHARE * 100.0
    )]
    TooManyBad {
        /// Malformed lines.
        bad: u64,
        /// All non-empty lines.
        lines: u64,
        /// The format tried.
        format: LogFormat,
        /// The first few malformed lines.
        samples: Vec<BadSample>,
    },
    /// No line carried the session key.
    #[error(
        "no sessions under the key `{key}`: {with_key} of {matched} lines of known operations had it\nhint: choose another key with `--session-key client|cookie:NAME|header:NAME|field:NAME`"
    )]
    NoSessions {
        /// The key tried.
        key: String,
        /// Lines of known operations that had it.
        with_key: u64,
        /// Lines of known operations.
        matched: u64,
    },
    /// Every session started within two session gaps of the log's end, so none is counted.
    #[error(
        "all {sessions} sessions started within two session gaps ({gap} each) of the log's end, so none is known to have ended\nhint: give a longer log or a shorter `--session-gap` (longer than users think between requests)"
    )]
    AllLate {
        /// Sessions formed.
        sessions: u64,
        /// The gap.
        gap: String,
    },
    /// No line matched any route.
    #[error(
        "no line of the {lines} read matched a route{}\nhint: add routes with `--route 'METHOD /path/{{id}}=operation'`",
        render_unmatched(unmatched)
    )]
    NothingMatched {
        /// Lines read.
        lines: u64,
        /// The largest unmatched groups, `(group, lines)`.
        unmatched: Vec<(String, u64)>,
    },
    /// No route to map paths to operations.
    #[error(
        "no routes to map paths to operations\nhint: give `--route 'METHOD /path/{{id}}=operation'` or select a config whose operations are the routes (`-p PACKAGE` or `--config FILE`)"
    )]
    NoRoutes,
    /// A `--operation` for `load` that is not a route's operation.
    #[error("`--operation {name}` is not an operation of the routes\nhint: the operations are: {}", known.join(", "))]
    UnknownOperation {
        /// The name asked for.
        name: String,
        /// The operations there are.
        known: Vec<String>,
    },
    /// Every interval lies at or below the activity threshold.
    #[error(
        "all {intervals} intervals are inactive: the busiest had {busiest} {what}, at or below the threshold of {threshold}\nhint: lower the threshold with `--active-above N`, or use a shorter `--interval`"
    )]
    AllInactive {
        /// Intervals counted.
        intervals: usize,
        /// The largest count.
        busiest: u64,
        /// The threshold applied.
        threshold: f64,
        /// What was counted.
        what: String,
    },
    /// The estimated model could not be read back as a workload (a bug: please report it).
    #[error("the estimated model cannot be stated as a workload: {0}")]
    Unwritable(String),
    /// The log holds no well-formed line.
    #[error("the logs hold no request line\nhint: check the paths given to `--from`")]
    Empty,
    /// The logs' first and last lines lie more intervals apart than are counted.
    #[error(
        "the logs span {intervals} intervals of {interval} (more than {max}): a line with a stray timestamp, or an interval far shorter than a session\nhint: give a longer `--interval`, or check the first and last lines' times"
    )]
    SpanTooLong {
        /// The intervals between the first and the last line.
        intervals: u64,
        /// The interval, as written.
        interval: String,
        /// The most intervals counted.
        max: u64,
    },
}

impl LogError {
    /// The kind the CLI maps to an exit code.
    pub fn kind(&self) -> LogErrorKind {
        match self {
            Self::Read { .. } | Self::Unwritable(_) => LogErrorKind::Other,
            _ => LogErrorKind::Usage,
        }
    }
}

fn render_samples(samples: &[BadSample]) -> String {
    samples
        .iter()
        .map(|s| format!("\n  {}:{}: {}: {}", s.file.display(), s.line, s.why, s.text))
        .collect()
}

fn render_unmatched(groups: &[(String, u64)]) -> String {
    groups
        .iter()
        .map(|(g, n)| format!("\n  {n:>8}  {g}"))
        .collect()
}
