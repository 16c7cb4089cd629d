//! The baseline stage's error type: reading, writing and finding stored baselines.

use crate::cli::ExitCode;
use std::path::PathBuf;

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
    /// A one-line suggestion for a person, when there is one.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            BaselineError::GitSpawn { .. } => "hint: is git installed and on PATH?".to_owned(),
            BaselineError::NoBaseRef { .. } => {
                "hint: name the base branch with --base-ref (e.g. origin/main)".to_owned()
            }
            BaselineError::NoMergeBase { .. } => {
                "hint: fetch the base branch with its history (actions/checkout: fetch-depth: 0)"
                    .to_owned()
            }
            BaselineError::UnknownRevision { .. } => {
                "hint: in a shallow CI clone, fetch more history (fetch-depth: 0)".to_owned()
            }
            BaselineError::Corrupt { location, .. } if location.starts_with("refs/") => format!(
                "hint: the note was left untouched; inspect it with `git notes --ref={location} show <commit>`"
            ),
            BaselineError::Corrupt { .. } => {
                "hint: the file was left untouched; inspect or remove it by hand".to_owned()
            }
            BaselineError::NewerFormat { .. } => {
                "hint: upgrade cargo-loadgate to read or extend this baseline".to_owned()
            }
            BaselineError::DirtyTree { .. } => {
                "hint: commit the changes first, or allow it explicitly with --allow-dirty"
                    .to_owned()
            }
            BaselineError::Contended { .. } => "hint: retry the save".to_owned(),
            BaselineError::BadStoreSpec { .. } => {
                "hint: use `notes`, `notes:REF` or `dir:PATH`".to_owned()
            }
            BaselineError::Git { .. }
            | BaselineError::BadCommitId { .. }
            | BaselineError::Io { .. }
            | BaselineError::NotSavable { .. } => return None,
        })
    }

    /// The process exit code this error ends a command with: a usage error for what the person
    /// typed, a general error otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            BaselineError::BadStoreSpec { .. }
            | BaselineError::UnknownRevision { .. }
            | BaselineError::NoBaseRef { .. } => ExitCode::USAGE,
            _ => ExitCode::OTHER_ERROR,
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
