//! The directory store: one `<commit>.json` per commit holding a [`StoredNote`], for CI caches
//! and artifacts where notes cannot be pushed.
//!
//! A save takes an exclusive `flock` on `<dir>/.lock` for its read-modify-write, so concurrent
//! saves (threads or processes on one machine) all land, and writes the file through a temporary
//! file renamed over it, so a reader never sees half a document.

use super::error::BaselineError;
use super::note::{StoredEntry, StoredNote};
use super::store::{Store, is_full_commit_id};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};

/// Baselines in a plain directory.
#[derive(Clone, Debug)]
pub struct DirStore {
    root: PathBuf,
}

/// An exclusive lock on the store, released when dropped (and by the kernel if the process dies).
struct DirLock {
    _file: File,
}

impl DirStore {
    /// The store in directory `root` (created on the first save).
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
        }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, commit: &str) -> Result<PathBuf, BaselineError> {
        if !is_full_commit_id(commit) {
            return Err(BaselineError::BadCommitId {
                commit: commit.to_owned(),
            });
        }
        Ok(self.root.join(format!("{commit}.json")))
    }

    fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> BaselineError {
        let path = path.to_path_buf();
        move |source| BaselineError::Io {
            action,
            path,
            source,
        }
    }

    fn lock(&self) -> Result<DirLock, BaselineError> {
        let path = self.root.join(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(Self::io("open", &path))?;
        loop {
            // SAFETY: the descriptor belongs to `file`, which outlives the call.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(DirLock { _file: file });
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(Self::io("lock", &path)(err));
            }
        }
    }

    fn read(&self, commit: &str) -> Result<Option<StoredNote>, BaselineError> {
        let path = self.path_of(commit)?;
        match std::fs::read(&path) {
            Ok(bytes) => StoredNote::parse(&bytes, commit, &path.display().to_string()).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Self::io("read", &path)(e)),
        }
    }
}

impl Store for DirStore {
    fn describe(&self) -> String {
        format!("dir:{}", self.root.display())
    }

    fn load(&self, commit: &str) -> Result<Option<StoredNote>, BaselineError> {
        self.read(commit)
    }

    fn save(&self, entry: &StoredEntry) -> Result<(), BaselineError> {
        let path = self.path_of(&entry.commit)?;
        std::fs::create_dir_all(&self.root).map_err(Self::io("create", &self.root))?;
        let _lock = self.lock()?;
        let mut note = self.read(&entry.commit)?.unwrap_or_default();
        note.upsert(entry.clone());
        // Readable by everyone (0644 minus the umask): the directory is often a CI cache shared
        // between jobs running as other users.
        crate::result::write_file_atomic(&path, &note.to_bytes()).map_err(Self::io("write", &path))
    }

    fn list(&self) -> Result<Vec<String>, BaselineError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Self::io("list", &self.root)(e)),
        };
        let mut commits = Vec::new();
        for entry in entries {
            let entry = entry.map_err(Self::io("list", &self.root))?;
            let name = entry.file_name();
            if let Some(commit) = name.to_str().and_then(|n| n.strip_suffix(".json"))
                && is_full_commit_id(commit)
            {
                commits.push(commit.to_owned());
            }
        }
        commits.sort();
        Ok(commits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "0123456789abcdef0123456789abcdef01234567";

    fn entry(cpu: &str) -> StoredEntry {
        crate::baseline::note::testing::entry(C, cpu, "h", 0)
    }

    #[test]
    fn dir_store_round_trips_and_creates_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::new(&dir.path().join("baselines"));
        assert_eq!(store.load(C).unwrap(), None);
        assert!(store.list().unwrap().is_empty());
        store.save(&entry("A")).unwrap();
        store.save(&entry("B")).unwrap();
        let note = store.load(C).unwrap().expect("saved");
        assert_eq!(note.entries.len(), 2);
        assert_eq!(store.list().unwrap(), vec![C.to_owned()]);
        // Only the document and the lock file remain: no temporary files.
        let mut names: Vec<_> = std::fs::read_dir(store.root())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [".lock".to_owned(), format!("{C}.json")]);
    }

    #[cfg(unix)]
    #[test]
    fn stored_baselines_are_readable_like_a_normal_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::new(dir.path());
        store.save(&entry("A")).unwrap();
        let reference = dir.path().join("reference");
        std::fs::write(&reference, "").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode(&dir.path().join(format!("{C}.json"))),
            mode(&reference) & crate::result::WRITTEN_FILE_MODE
        );
    }

    #[test]
    fn concurrent_saves_to_a_directory_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::new(dir.path());
        std::thread::scope(|s| {
            for i in 0..8 {
                let store = &store;
                s.spawn(move || store.save(&entry(&format!("cpu-{i}"))).unwrap());
            }
        });
        assert_eq!(store.load(C).unwrap().unwrap().entries.len(), 8);
    }

    #[test]
    fn a_reader_during_saves_always_sees_a_whole_document() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::new(dir.path());
        store.save(&entry("first")).unwrap();
        std::thread::scope(|s| {
            let writer = s.spawn(|| {
                for i in 0..40 {
                    store.save(&entry(&format!("cpu-{i}"))).unwrap();
                }
            });
            while !writer.is_finished() {
                let note = store.load(C).expect("never a torn document");
                assert!(note.is_some());
            }
        });
        assert_eq!(store.load(C).unwrap().unwrap().entries.len(), 41);
    }

    #[test]
    fn a_corrupt_file_is_an_error_and_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{C}.json"));
        std::fs::write(&path, "{\"format_version\": 1, \"entr").unwrap();
        let store = DirStore::new(dir.path());
        assert!(matches!(store.load(C), Err(BaselineError::Corrupt { .. })));
        let err = store.save(&entry("A")).unwrap_err();
        assert!(matches!(err, BaselineError::Corrupt { .. }), "{err:?}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"format_version\": 1, \"entr"
        );
    }

    #[test]
    fn an_unreadable_store_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the directory should be: reading and listing fail with the path.
        let root = dir.path().join("not-a-dir");
        std::fs::write(&root, "").unwrap();
        let store = DirStore::new(&root);
        let err = store.list().unwrap_err();
        assert!(err.to_string().contains("not-a-dir"), "{err}");
        assert!(matches!(store.load(C), Err(BaselineError::Io { .. })));
        assert!(matches!(
            store.save(&entry("A")),
            Err(BaselineError::Io { .. })
        ));
        assert!(matches!(
            store.load("../x"),
            Err(BaselineError::BadCommitId { .. })
        ));
    }
}
