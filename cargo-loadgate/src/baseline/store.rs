//! The store interface and how a store is named on the command line (`notes`, `notes:REF`,
//! `dir:PATH`).

use super::dir::DirStore;
use super::error::BaselineError;
use super::note::{StoredEntry, StoredNote};
use super::notes::NotesStore;
use std::path::{Path, PathBuf};

/// The notes ref baselines are stored under by default.
pub const DEFAULT_NOTES_REF: &str = "refs/notes/loadgate";

/// Where baselines are kept. Implementations are safe to use from several threads and several
/// processes at once: concurrent saves of different entries all land.
pub trait Store: Send + Sync {
    /// How a person would name this store, e.g. `refs/notes/loadgate` or `dir:/cache/baselines`.
    fn describe(&self) -> String;

    /// The document stored for `commit` (a full commit id), `None` when there is none.
    fn load(&self, commit: &str) -> Result<Option<StoredNote>, BaselineError>;

    /// Adds `entry` to the document of `entry.commit`, replacing the entry of the same environment
    /// and configuration. A stored document that cannot be read is never overwritten.
    fn save(&self, entry: &StoredEntry) -> Result<(), BaselineError>;

    /// The commits that have a stored document, in no particular order.
    fn list(&self) -> Result<Vec<String>, BaselineError>;
}

/// A store as named on the command line or in the config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreSpec {
    /// Git notes under a ref of the repository.
    Notes {
        /// The full ref name, e.g. `refs/notes/loadgate`.
        ref_name: String,
    },
    /// A directory with one JSON file per commit.
    Dir {
        /// The directory.
        path: PathBuf,
    },
}

impl Default for StoreSpec {
    fn default() -> Self {
        StoreSpec::Notes {
            ref_name: DEFAULT_NOTES_REF.to_owned(),
        }
    }
}

impl StoreSpec {
    /// Parses `notes`, `notes:REF` (short names go under `refs/notes/`) or `dir:PATH`.
    pub fn parse(spec: &str) -> Result<Self, BaselineError> {
        let bad = || BaselineError::BadStoreSpec {
            spec: spec.to_owned(),
        };
        if spec == "notes" {
            return Ok(Self::default());
        }
        if let Some(name) = spec.strip_prefix("notes:") {
            let valid = !name.is_empty()
                && !name.contains("..")
                && !name
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || "~^:?*[\\".contains(c));
            if !valid {
                return Err(bad());
            }
            let ref_name = if name.starts_with("refs/notes/") {
                name.to_owned()
            } else if name.starts_with("refs/") {
                return Err(bad());
            } else {
                format!("refs/notes/{name}")
            };
            return Ok(StoreSpec::Notes { ref_name });
        }
        match spec.strip_prefix("dir:") {
            Some(path) if !path.is_empty() => Ok(StoreSpec::Dir {
                path: PathBuf::from(path),
            }),
            _ => Err(bad()),
        }
    }

    /// Opens the store; notes live in the git repository at `repo`.
    pub fn open(&self, repo: &Path) -> Box<dyn Store> {
        match self {
            StoreSpec::Notes { ref_name } => Box::new(NotesStore::new(repo, ref_name)),
            StoreSpec::Dir { path } => Box::new(DirStore::new(path)),
        }
    }
}

impl std::fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSpec::Notes { ref_name } => f.write_str(ref_name),
            StoreSpec::Dir { path } => write!(f, "dir:{}", path.display()),
        }
    }
}

/// Whether `commit` is a full object id (40 hex digits for SHA-1, 64 for SHA-256 repositories).
pub fn is_full_commit_id(commit: &str) -> bool {
    matches!(commit.len(), 40 | 64) && commit.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case("notes", Some("refs/notes/loadgate"))]
    #[test_case("notes:perf", Some("refs/notes/perf"))]
    #[test_case("notes:refs/notes/x", Some("refs/notes/x"))]
    #[test_case("notes:refs/heads/main", None; "outside refs notes")]
    #[test_case("notes:a b", None; "space")]
    #[test_case("notes:", None; "empty ref")]
    #[test_case("dir:", None; "empty dir")]
    #[test_case("s3://bucket", None; "unknown")]
    fn specs_parse(spec: &str, ref_name: Option<&str>) {
        match (StoreSpec::parse(spec), ref_name) {
            (Ok(StoreSpec::Notes { ref_name: got }), Some(want)) => assert_eq!(got, want),
            (Err(e), None) => assert!(matches!(e, BaselineError::BadStoreSpec { .. })),
            (other, _) => panic!("{spec}: {other:?}"),
        }
    }

    #[test]
    fn dir_specs_keep_their_path_and_display_as_written() {
        let spec = StoreSpec::parse("dir:.cache/baselines").unwrap();
        assert_eq!(
            spec,
            StoreSpec::Dir {
                path: PathBuf::from(".cache/baselines")
            }
        );
        assert_eq!(spec.to_string(), "dir:.cache/baselines");
        assert_eq!(StoreSpec::default().to_string(), "refs/notes/loadgate");
    }

    #[test_case("0123456789abcdef0123456789abcdef01234567", true)]
    #[test_case("0123456", false; "short")]
    #[test_case("../../../../etc/passwd0123456789abcdef0123", false; "path")]
    fn full_commit_ids(id: &str, full: bool) {
        assert_eq!(is_full_commit_id(id), full);
    }
}
