//! The git notes store: one note per commit under `refs/notes/loadgate` (by default), holding
//! a [`StoredNote`]. It travels with `git push origin refs/notes/loadgate`.
//!
//! Saving never loses a concurrent save. The new notes commit is built on a private temporary
//! ref from the value the notes ref had when the save started, and the notes ref is then moved
//! with a compare-and-swap (`git update-ref REF NEW OLD`). When another save moved it in
//! between, the swap fails and the save starts over from the new value, merging its entry into
//! whatever is there now.

use super::error::{BaselineError, short};
use super::git::Git;
use super::note::{StoredEntry, StoredNote};
use super::store::{Store, is_full_commit_id};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How many compare-and-swap attempts a save makes before giving up.
pub const MAX_SAVE_ATTEMPTS: u32 = 64;

/// The old value `git update-ref` takes to mean "the ref must not exist yet".
const NO_REF: &str = "0000000000000000000000000000000000000000";

static TEMP_REFS: AtomicU64 = AtomicU64::new(0);

/// Baselines in git notes.
#[derive(Clone, Debug)]
pub struct NotesStore {
    git: Git,
    ref_name: String,
}

impl NotesStore {
    /// The store under `ref_name` (a full ref, e.g. `refs/notes/loadgate`) of the repository at `repo`.
    pub fn new(repo: &Path, ref_name: &str) -> Self {
        Self {
            git: Git::new(repo),
            ref_name: ref_name.to_owned(),
        }
    }

    /// The notes ref.
    pub fn ref_name(&self) -> &str {
        &self.ref_name
    }

    /// Reads the note of `commit` under `notes_ref` (any notes ref).
    fn read_note(
        &self,
        notes_ref: &str,
        commit: &str,
    ) -> Result<Option<StoredNote>, BaselineError> {
        let args = ["notes", "--ref", notes_ref, "list", commit];
        let out = self.git.output(&args, &[], None)?;
        if !out.success {
            if out.stderr.contains("no note found") {
                return Ok(None);
            }
            return Err(self.git.failed(&args, &out));
        }
        let blob = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let text = self.git.output(&["cat-file", "blob", &blob], &[], None)?;
        if !text.success {
            return Err(self.git.failed(&["cat-file", "blob", &blob], &text));
        }
        StoredNote::parse(&text.stdout, commit, &self.ref_name).map(Some)
    }

    /// One save attempt: `Ok(true)` when the swap landed, `Ok(false)` when another save moved
    /// the ref first.
    fn try_save(
        &self,
        entry: &StoredEntry,
        identity: &[(&str, &str)],
    ) -> Result<bool, BaselineError> {
        let old = self.git.ref_value(&self.ref_name)?;
        let temp = format!(
            "{}-save-{}-{}",
            self.ref_name,
            std::process::id(),
            TEMP_REFS.fetch_add(1, Ordering::Relaxed)
        );
        let outcome = self.build_on(&temp, old.as_deref(), entry, identity);
        // The temporary ref is removed whatever happened; a failure to remove it is harmless.
        let _ = self.git.output(&["update-ref", "-d", &temp], &[], None);
        let new = outcome?;
        let args = [
            "update-ref",
            "-m",
            "cargo-loadgate: save baseline",
            &self.ref_name,
            &new,
            old.as_deref().unwrap_or(NO_REF),
        ];
        let out = self.git.output(&args, &[], None)?;
        if out.success {
            Ok(true)
        } else if out.stderr.contains("cannot lock ref") {
            Ok(false)
        } else {
            Err(self.git.failed(&args, &out))
        }
    }

    /// Builds, on the temporary ref `temp` starting at `old`, the notes commit that adds `entry`;
    /// returns its id.
    fn build_on(
        &self,
        temp: &str,
        old: Option<&str>,
        entry: &StoredEntry,
        identity: &[(&str, &str)],
    ) -> Result<String, BaselineError> {
        if let Some(old) = old {
            self.git.run(&["update-ref", temp, old, NO_REF])?;
        }
        let mut note = self.read_note(temp, &entry.commit)?.unwrap_or_default();
        note.upsert(entry.clone());
        let bytes = note.to_bytes();
        self.git.run_env(
            &[
                "notes",
                "--ref",
                temp,
                "add",
                "--force",
                "--file",
                "-",
                &entry.commit,
            ],
            identity,
            Some(&bytes),
        )?;
        self.git.ref_value(temp)?.ok_or_else(|| BaselineError::Git {
            command: format!("notes --ref {temp} add"),
            repo: self.git.repo().to_path_buf(),
            status: "exit status 0".to_owned(),
            stderr: "the notes ref was not created".to_owned(),
        })
    }
}

impl Store for NotesStore {
    fn describe(&self) -> String {
        self.ref_name.clone()
    }

    fn load(&self, commit: &str) -> Result<Option<StoredNote>, BaselineError> {
        if !is_full_commit_id(commit) {
            return Err(BaselineError::BadCommitId {
                commit: commit.to_owned(),
            });
        }
        if self.git.ref_value(&self.ref_name)?.is_none() {
            return Ok(None);
        }
        self.read_note(&self.ref_name, commit)
    }

    fn save(&self, entry: &StoredEntry) -> Result<(), BaselineError> {
        if !is_full_commit_id(&entry.commit) {
            return Err(BaselineError::BadCommitId {
                commit: entry.commit.clone(),
            });
        }
        if self.git.commit_of(&entry.commit)?.is_none() {
            return Err(BaselineError::UnknownRevision {
                rev: short(&entry.commit).to_owned(),
                repo: self.git.repo().to_path_buf(),
            });
        }
        let identity = self.git.identity_env()?;
        for attempt in 0..MAX_SAVE_ATTEMPTS {
            if self.try_save(entry, &identity)? {
                return Ok(());
            }
            // Back off a little, differently per process and attempt, so racing savers spread out.
            let jitter = u64::from(std::process::id() % 7) + u64::from(attempt % 5);
            std::thread::sleep(Duration::from_millis(2 + jitter * 3));
        }
        Err(BaselineError::Contended {
            ref_name: self.ref_name.clone(),
            attempts: MAX_SAVE_ATTEMPTS,
        })
    }

    fn list(&self) -> Result<Vec<String>, BaselineError> {
        if self.git.ref_value(&self.ref_name)?.is_none() {
            return Ok(Vec::new());
        }
        let text = self.git.run(&["notes", "--ref", &self.ref_name, "list"])?;
        Ok(text
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .map(str::to_owned)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::git::testing::{git, init};

    fn entry(commit: &str, cpu: &str) -> StoredEntry {
        crate::baseline::note::testing::entry(commit, cpu, "h", 0)
    }

    #[test]
    fn notes_round_trip_and_hold_several_environments() {
        let dir = tempfile::tempdir().unwrap();
        let c = init(dir.path());
        let store = NotesStore::new(dir.path(), "refs/notes/loadgate");
        assert_eq!(store.load(&c).unwrap(), None);
        assert!(store.list().unwrap().is_empty());
        store.save(&entry(&c, "A")).unwrap();
        store.save(&entry(&c, "B")).unwrap();
        let note = store.load(&c).unwrap().expect("saved");
        let cpus: Vec<_> = note
            .entries
            .iter()
            .map(|e| e.fingerprint.cpu_model.as_str())
            .collect();
        assert_eq!(cpus, ["A", "B"]);
        assert_eq!(
            note.entries[0].result.get().unwrap(),
            &crate::baseline::note::testing::result(&c, "A", "h")
        );
        assert_eq!(store.list().unwrap(), vec![c.clone()]);
        // The note is readable with plain git, and no temporary refs are left behind.
        let shown = git(dir.path(), &["notes", "--ref", "loadgate", "show", &c]);
        assert!(shown.contains("\"format_version\": 1"), "{shown}");
        let refs = git(dir.path(), &["for-each-ref", "--format=%(refname)"]);
        assert_eq!(refs, "refs/heads/main\nrefs/notes/loadgate");
    }

    #[test]
    fn concurrent_saves_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let c = init(dir.path());
        let store = NotesStore::new(dir.path(), "refs/notes/loadgate");
        std::thread::scope(|s| {
            for i in 0..8 {
                let store = &store;
                let e = entry(&c, &format!("cpu-{i}"));
                s.spawn(move || store.save(&e).unwrap());
            }
        });
        let note = store.load(&c).unwrap().expect("saved");
        let mut cpus: Vec<_> = note
            .entries
            .iter()
            .map(|e| e.fingerprint.cpu_model.clone())
            .collect();
        cpus.sort();
        assert_eq!(cpus, (0..8).map(|i| format!("cpu-{i}")).collect::<Vec<_>>());
        // Eight saves, eight notes commits in a line.
        let n = git(dir.path(), &["rev-list", "--count", "refs/notes/loadgate"]);
        assert_eq!(n, "8");
    }

    #[test]
    fn a_corrupt_note_is_an_error_and_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let c = init(dir.path());
        git(
            dir.path(),
            &["notes", "--ref", "loadgate", "add", "-m", "{not json", &c],
        );
        let before = git(dir.path(), &["rev-parse", "refs/notes/loadgate"]);
        let store = NotesStore::new(dir.path(), "refs/notes/loadgate");
        let err = store.load(&c).unwrap_err();
        assert!(matches!(err, BaselineError::Corrupt { .. }), "{err:?}");
        let err = store.save(&entry(&c, "A")).unwrap_err();
        assert!(matches!(err, BaselineError::Corrupt { .. }), "{err:?}");
        assert!(
            err.hint()
                .unwrap()
                .contains("git notes --ref=refs/notes/loadgate show")
        );
        let after = git(dir.path(), &["rev-parse", "refs/notes/loadgate"]);
        assert_eq!(before, after);
        assert_eq!(
            git(dir.path(), &["notes", "--ref", "loadgate", "show", &c]),
            "{not json"
        );
    }

    #[test]
    fn a_newer_note_is_refused_and_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let c = init(dir.path());
        let newer = r#"{"format_version": 2, "entries": []}"#;
        git(
            dir.path(),
            &["notes", "--ref", "loadgate", "add", "-m", newer, &c],
        );
        let store = NotesStore::new(dir.path(), "refs/notes/loadgate");
        let err = store.save(&entry(&c, "A")).unwrap_err();
        assert!(
            matches!(
                err,
                BaselineError::NewerFormat {
                    found: 2,
                    known: 1,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(matches!(
            store.load(&c),
            Err(BaselineError::NewerFormat { .. })
        ));
        assert_eq!(
            git(dir.path(), &["notes", "--ref", "loadgate", "show", &c]),
            newer
        );
    }

    #[test]
    fn saving_for_an_unknown_commit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        init(dir.path());
        let store = NotesStore::new(dir.path(), "refs/notes/loadgate");
        let missing = "0123456789abcdef0123456789abcdef01234567";
        let err = store.save(&entry(missing, "A")).unwrap_err();
        assert!(
            matches!(err, BaselineError::UnknownRevision { .. }),
            "{err:?}"
        );
        assert!(matches!(
            store.load("HEAD"),
            Err(BaselineError::BadCommitId { .. })
        ));
    }

    #[test]
    fn notes_commits_get_an_identity_even_when_git_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let c = init(dir.path());
        let g = Git::new(dir.path());
        let fallback = !g.identity_env().unwrap().is_empty();
        let store = NotesStore::new(dir.path(), "refs/notes/loadgate");
        store.save(&entry(&c, "A")).unwrap();
        let author = git(
            dir.path(),
            &["log", "-1", "--format=%an <%ae>", "refs/notes/loadgate"],
        );
        if fallback {
            assert_eq!(author, "loadgate <loadgate@localhost>");
        } else {
            assert_ne!(author, "loadgate <loadgate@localhost>");
        }
    }
}
