//! The `Loadgate-Accept` and `Loadgate-Reason` trailers of commit messages, read with
//! `git log --format=%(trailers:…)` (git's own trailer parser: the last paragraph of the
//! message, `Key: value` lines, continuation lines unfolded). What a trailer's value means is
//! `compare::accept`'s; this module only reads them, for the head's commits (what a comparison
//! accepts) and along the base's first parents (where the noise history stops).

use super::error::BaselineError;
use super::git::Git;
use crate::compare::{ACCEPT_TRAILER, REASON_TRAILER};
use std::path::Path;

/// The loadgate trailers of one commit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitTrailers {
    /// The commit (full id).
    pub commit: String,
    /// The values of its `Loadgate-Accept` trailers, in order, as written.
    pub accepts: Vec<String>,
    /// The values of its `Loadgate-Reason` trailers, in order.
    pub reasons: Vec<String>,
}

/// Between fields and between commits of the log's format (never in a message's trailers).
const FIELD: char = '\u{1f}';
const RECORD: char = '\u{1e}';

/// Runs `git log args` with a format giving each commit's id and its trailers, and reads them.
fn log(repo: &Path, args: &[&str]) -> Result<Vec<CommitTrailers>, BaselineError> {
    let format = "--format=%H%x1f%(trailers:only,unfold)%x1e";
    // A user's `log.showSignature` would print gpg's lines among the records.
    let mut full = vec!["log", "--no-color", "--no-show-signature", format];
    full.extend_from_slice(args);
    let out = Git::new(repo).run(&full)?;
    Ok(out
        .split(RECORD)
        .filter_map(|record| {
            let (commit, trailers) = record.trim_start().split_once(FIELD)?;
            let mut found = CommitTrailers {
                commit: commit.trim().to_owned(),
                ..CommitTrailers::default()
            };
            for line in trailers.lines() {
                let Some((key, value)) = line.split_once(':') else {
                    continue;
                };
                let (key, value) = (key.trim(), value.trim().to_owned());
                // Trailer keys are case-insensitive, as git treats them.
                if key.eq_ignore_ascii_case(ACCEPT_TRAILER) {
                    found.accepts.push(value);
                } else if key.eq_ignore_ascii_case(REASON_TRAILER) {
                    found.reasons.push(value);
                }
            }
            Some(found)
        })
        .collect())
}

/// The commits reachable from `head` and not from `base` (the head's commits: what the
/// comparison with `base`'s result measures), newest first, with their trailers.
pub fn head_trailers(
    repo: &Path,
    base: &str,
    head: &str,
) -> Result<Vec<CommitTrailers>, BaselineError> {
    let range = format!("{base}..{head}");
    log(repo, &[&range])
}

/// `start` and its first-parent ancestors, `limit` commits in all, nearest first, with their
/// trailers.
pub fn first_parent_trailers(
    repo: &Path,
    start: &str,
    limit: usize,
) -> Result<Vec<CommitTrailers>, BaselineError> {
    let count = format!("--max-count={}", limit.max(1));
    log(repo, &["--first-parent", &count, start])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::git::testing::{commit, git, init};

    #[test]
    fn the_trailers_of_the_heads_commits_are_read_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let base = init(p);
        git(p, &["checkout", "-q", "-b", "feature"]);
        let first = commit(
            p,
            "slower login\n\nbody text\n\nLoadgate-Accept: p50 of login +20%\n\
             loadgate-accept: p99 +15%\nLoadgate-Reason: bcrypt cost 12\nSigned-off-by: a <a@b>",
        );
        let second = commit(p, "docs\n\nLoadgate-Accept: p99 15% is fine");
        let plain = commit(
            p,
            "no trailers\n\nLoadgate-Accept: p99 +1% in the body is no trailer\n\nThe end.",
        );
        let found = head_trailers(p, &base, "HEAD").unwrap();
        assert_eq!(
            found,
            vec![
                CommitTrailers {
                    commit: plain,
                    ..CommitTrailers::default()
                },
                CommitTrailers {
                    commit: second,
                    accepts: vec!["p99 15% is fine".to_owned()],
                    reasons: vec![],
                },
                CommitTrailers {
                    commit: first.clone(),
                    accepts: vec!["p50 of login +20%".to_owned(), "p99 +15%".to_owned()],
                    reasons: vec!["bcrypt cost 12".to_owned()],
                },
            ]
        );
        // Along first parents from `first`: itself, then the base.
        let along = first_parent_trailers(p, &first, 10).unwrap();
        assert_eq!(along.len(), 2);
        assert_eq!(along[1].commit, base);
        assert!(along[1].accepts.is_empty());
    }
}
