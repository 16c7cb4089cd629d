//! Baselines: the result format, the stores (git notes, a directory) and the git lookup.
//!
//! This release has the result format; the stores and the lookup come with the comparison.

mod builds;
mod dir;
mod error;
mod fingerprint;
mod git;
mod history;
mod lookup;
mod note;
mod notes;
mod store;
mod trailers;

pub use builds::{BUILDS_DIR, StoredBuild, find_build, save_build, save_run_build};
pub use dir::DirStore;
#[cfg(test)]
pub(crate) use error::examples as error_examples;
pub use error::{BaselineError, BaselineErrorKind, short};
pub use fingerprint::{Fingerprint, cpuset_len, fingerprint};
pub(crate) use git::Git;
#[cfg(test)]
pub(crate) use git::testing as git_testing;
pub use git::{FALLBACK_EMAIL, FALLBACK_NAME};
pub use history::{DEFAULT_WALK_LIMIT, HistoryWalk, WalkRequest, WalkedCommit, walk_history};
pub use lookup::{
    AcceptedStep, Candidate, DEFAULT_HISTORY_LIMIT, DEFAULT_SEARCH_LIMIT, History, Lookup,
    Mismatch, Wanted, default_base_ref, lookup, merge_base, resolve_commit,
};
pub use note::{NOTE_FORMAT_VERSION, StoredEntry, StoredNote, StoredResult};
pub use notes::{MAX_SAVE_ATTEMPTS, NotesStore};
pub use store::{DEFAULT_NOTES_REF, Store, StoreSpec, is_full_commit_id};
pub use trailers::{CommitTrailers, first_parent_trailers, head_trailers};
