//! The baseline stage's error type: reading, writing and finding stored baselines.

use std::path::PathBuf;

/// What kind of failure a [`BaselineError`] is; the command line picks the exit code from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaselineErrorKind {
    /// What the person typed names nothing: a revision, a base branch or a store that does not exist.
    Usage,
    /// git, a store or the stored state failed.
    Store,
}

/// An error of the baseline stage. Every variant that concerns stored state leaves that state as it
/// was: a failed save never overwrites a note or a file it could not read.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// `git` could not be started at all.
    #[error("failed to run `git {command}`")]
    GitSpawn {
        /// The git arguments.
        command: String,
        /// Why it could not be started.
        #[source]
        source: std::io::Error,
    },
    /// A git command failed.
    #[error("`git {command}` failed in {} ({status}){}", repo.display(), render_stderr(stderr))]
    Git {
        /// The git arguments.
        command: String,
        /// The repository it ran in.
        repo: PathBuf,
        /// Its exit status.
        status: String,
        /// Its error output, trimmed.
        stderr: String,
    },
    /// A revision does not name a commit.
    #[error("`{rev}` does not name a commit in {}", repo.display())]
    UnknownRevision {
        /// The revision as given.
        rev: String,
        /// The repository.
        repo: PathBuf,
    },
    /// `history --since` names a commit that is not a first-parent ancestor of the revision
    /// walked, within the walk's limit.
    #[error("`{rev}` is not among the first {limit} first-parent ancestors of `{head}`")]
    NotAnAncestor {
        /// The `--since` revision as given.
        rev: String,
        /// The revision walked.
        head: String,
        /// The most commits walked.
        limit: usize,
    },
    /// No base reference was given and neither `origin/HEAD` nor `main` exists.
    #[error("no base branch to find the baseline through: neither `origin/HEAD` nor `main` exists in {}", repo.display())]
    NoBaseRef {
        /// The repository.
        repo: PathBuf,
    },
    /// HEAD and the base reference share no history.
    #[error("`{head}` and `{base_ref}` have no merge-base in {}", repo.display())]
    NoMergeBase {
        /// The head revision.
        head: String,
        /// The base reference.
        base_ref: String,
        /// The repository.
        repo: PathBuf,
    },
    /// A stored note or file is not a baseline document this version can parse.
    #[error(
        "baseline for commit {} in {location} is corrupt: {detail}",
        short(commit)
    )]
    Corrupt {
        /// The commit whose baseline was read.
        commit: String,
        /// Where it was read from (`refs/notes/loadgate`, a file path).
        location: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A stored document was written by a newer cargo-loadgate.
    #[error(
        "baseline for commit {} in {location} has format version {found}, newer than {known}, the newest this cargo-loadgate reads",
        short(commit)
    )]
    NewerFormat {
        /// The commit whose baseline was read.
        commit: String,
        /// Where it was read from.
        location: String,
        /// The version found.
        found: u64,
        /// The newest version this build reads.
        known: u32,
    },
    /// A directory store could not be read or written.
    #[error("failed to {action} {}", path.display())]
    Io {
        /// What was being done: `read`, `write`, `lock`, `list`.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The run result cannot be saved as a baseline.
    #[error("cannot save this run as a baseline: {reason}")]
    NotSavable {
        /// Why.
        reason: String,
    },
    /// The run was measured on a work tree with uncommitted changes.
    #[error(
        "refusing to save a baseline measured on a dirty work tree (commit {})",
        short(commit)
    )]
    DirtyTree {
        /// The commit HEAD pointed at.
        commit: String,
    },
    /// Other writers kept moving the notes ref; the save gave up without losing anything.
    #[error("gave up updating {ref_name} after {attempts} attempts: other saves kept moving it")]
    Contended {
        /// The notes ref.
        ref_name: String,
        /// How many compare-and-swap attempts were made.
        attempts: u32,
    },
    /// A commit id given to a store is not a full hexadecimal object id.
    #[error("`{commit}` is not a full commit id")]
    BadCommitId {
        /// The id as given.
        commit: String,
    },
    /// A `--baseline-store` value was not understood.
    #[error("unknown baseline store `{spec}`")]
    BadStoreSpec {
        /// The value as given.
        spec: String,
    },
}

impl BaselineError {
    /// A one-line suggestion for a person, when there is one. It is bare text: the command line
    /// puts it on its own `hint:` line.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            BaselineError::GitSpawn { .. } => "is git installed and on PATH?".to_owned(),
            BaselineError::NoBaseRef { .. } => {
                "name the base branch with --base-ref (e.g. origin/main)".to_owned()
            }
            BaselineError::NoMergeBase { .. } => {
                "fetch the base branch with its history (actions/checkout: fetch-depth: 0)"
                    .to_owned()
            }
            BaselineError::UnknownRevision { .. } => {
                "in a shallow CI clone, fetch more history (fetch-depth: 0)".to_owned()
            }
            BaselineError::NotAnAncestor { .. } => {
                "name a commit of the branch's own first-parent line (e.g. a release tag on it), \
                 or raise --limit"
                    .to_owned()
            }
            BaselineError::Corrupt { location, .. } if location.starts_with("refs/") => format!(
                "the note was left untouched; inspect it with `git notes --ref={location} show <commit>`"
            ),
            BaselineError::Corrupt { .. } => {
                "the file was left untouched; inspect or remove it by hand".to_owned()
            }
            BaselineError::NewerFormat { .. } => {
                "upgrade cargo-loadgate to read or extend this baseline".to_owned()
            }
            BaselineError::DirtyTree { .. } => {
                "commit the changes first, or allow it explicitly with --allow-dirty".to_owned()
            }
            BaselineError::Contended { .. } => "retry the save".to_owned(),
            BaselineError::BadStoreSpec { .. } => {
                "use `notes`, `notes:REF` or `dir:PATH`".to_owned()
            }
            BaselineError::Git { .. }
            | BaselineError::BadCommitId { .. }
            | BaselineError::Io { .. }
            | BaselineError::NotSavable { .. } => return None,
        })
    }

    /// What kind of failure this is: a usage error for what the person typed, a store failure
    /// otherwise.
    pub fn kind(&self) -> BaselineErrorKind {
        match self {
            BaselineError::BadStoreSpec { .. }
            | BaselineError::UnknownRevision { .. }
            | BaselineError::NotAnAncestor { .. }
            | BaselineError::NoBaseRef { .. } => BaselineErrorKind::Usage,
            BaselineError::GitSpawn { .. }
            | BaselineError::Git { .. }
            | BaselineError::NoMergeBase { .. }
            | BaselineError::Corrupt { .. }
            | BaselineError::NewerFormat { .. }
            | BaselineError::Io { .. }
            | BaselineError::NotSavable { .. }
            | BaselineError::DirtyTree { .. }
            | BaselineError::Contended { .. }
            | BaselineError::BadCommitId { .. } => BaselineErrorKind::Store,
        }
    }
}

/// The first 7 characters of a commit id, as git shows them.
pub fn short(commit: &str) -> &str {
    commit.get(..7).unwrap_or(commit)
}

fn render_stderr(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {stderr}")
    }
}

/// One example of every variant, named, for the tests here and the exit-code and rendering tests in
/// the CLI.
#[cfg(test)]
pub(crate) fn examples() -> Vec<(&'static str, BaselineError)> {
    const C: &str = "3f2a91c0d4e5f60718293a4b5c6d7e8f90a1b2c3";
    let repo = || PathBuf::from("/work/repo");
    vec![
        (
            "git_spawn",
            BaselineError::GitSpawn {
                command: "notes --ref=refs/notes/loadgate show".into(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            },
        ),
        (
            "git",
            BaselineError::Git {
                command: "rev-parse HEAD".into(),
                repo: repo(),
                status: "exit status: 128".into(),
                stderr: "fatal: not a git repository".into(),
            },
        ),
        (
            "unknown_revision",
            BaselineError::UnknownRevision {
                rev: "v9".into(),
                repo: repo(),
            },
        ),
        (
            "not_an_ancestor",
            BaselineError::NotAnAncestor {
                rev: "v1.0".into(),
                head: "HEAD".into(),
                limit: 100,
            },
        ),
        ("no_base_ref", BaselineError::NoBaseRef { repo: repo() }),
        (
            "no_merge_base",
            BaselineError::NoMergeBase {
                head: "HEAD".into(),
                base_ref: "origin/main".into(),
                repo: repo(),
            },
        ),
        (
            "corrupt_note",
            BaselineError::Corrupt {
                commit: C.into(),
                location: "refs/notes/loadgate".into(),
                detail: "expected value at line 1 column 1".into(),
            },
        ),
        (
            "corrupt_file",
            BaselineError::Corrupt {
                commit: C.into(),
                location: "/work/baselines/3f2a91c.json".into(),
                detail: "expected value at line 1 column 1".into(),
            },
        ),
        (
            "newer_format",
            BaselineError::NewerFormat {
                commit: C.into(),
                location: "refs/notes/loadgate".into(),
                found: 2,
                known: 1,
            },
        ),
        (
            "io",
            BaselineError::Io {
                action: "read",
                path: "/work/baselines".into(),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            },
        ),
        (
            "not_savable",
            BaselineError::NotSavable {
                reason: "the run is invalid".into(),
            },
        ),
        ("dirty_tree", BaselineError::DirtyTree { commit: C.into() }),
        (
            "contended",
            BaselineError::Contended {
                ref_name: "refs/notes/loadgate".into(),
                attempts: 5,
            },
        ),
        (
            "bad_commit_id",
            BaselineError::BadCommitId {
                commit: "3f2a".into(),
            },
        ),
        (
            "bad_store_spec",
            BaselineError::BadStoreSpec {
                spec: "s3:bucket".into(),
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case("git_spawn", BaselineErrorKind::Store)]
    #[test_case("git", BaselineErrorKind::Store)]
    #[test_case("unknown_revision", BaselineErrorKind::Usage)]
    #[test_case("no_base_ref", BaselineErrorKind::Usage)]
    #[test_case("no_merge_base", BaselineErrorKind::Store)]
    #[test_case("corrupt_note", BaselineErrorKind::Store)]
    #[test_case("corrupt_file", BaselineErrorKind::Store)]
    #[test_case("newer_format", BaselineErrorKind::Store)]
    #[test_case("io", BaselineErrorKind::Store)]
    #[test_case("not_savable", BaselineErrorKind::Store)]
    #[test_case("dirty_tree", BaselineErrorKind::Store)]
    #[test_case("contended", BaselineErrorKind::Store)]
    #[test_case("bad_commit_id", BaselineErrorKind::Store)]
    #[test_case("bad_store_spec", BaselineErrorKind::Usage)]
    fn kinds(name: &str, kind: BaselineErrorKind) {
        let (_, err) = examples()
            .into_iter()
            .find(|(n, _)| *n == name)
            .expect("variant in table");
        assert_eq!(err.kind(), kind);
    }

    /// The hint is bare text; the command line adds the `hint:` label (it printed "hint: hint:").
    #[test]
    fn hints_carry_no_label_of_their_own() {
        for (name, err) in examples() {
            if let Some(hint) = err.hint() {
                assert!(!hint.starts_with("hint"), "{name}: {hint}");
            }
        }
    }
}
