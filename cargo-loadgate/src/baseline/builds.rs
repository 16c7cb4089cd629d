//! Stored base builds: where the baseline store is a directory (`--baseline-store dir:PATH`, a CI
//! cache), `--save-baseline` also keeps the binary keyed by commit, so that a paired run whose base
//! is that commit uses it instead of building the base (issue 13).
//!
//! Layout: `<store>/builds/<commit>/<bin>` with `<bin>.json` beside it (a [`StoredBuild`]: the
//! binary's sha256 and size). Both are written atomically, the binary first, so a reader that finds
//! the manifest finds the whole binary it describes; a binary that does not match its manifest (a
//! cache restored halfway) is reported, never run.

use super::error::{BaselineError, short};
use super::store::{StoreSpec, is_full_commit_id};
use crate::result::GitInfo;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The subdirectory of a directory store that holds the builds.
pub const BUILDS_DIR: &str = "builds";

/// The format version of a build manifest.
const BUILD_FORMAT_VERSION: u32 = 1;

/// A binary kept in a directory store for a commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredBuild {
    /// The manifest's format version.
    pub format_version: u32,
    /// The commit the binary was built from (full id).
    pub commit: String,
    /// The binary target's name (the file name in the store).
    pub bin: String,
    /// sha256 of the binary, hex.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// Where it is: filled in when read, not stored.
    #[serde(skip)]
    pub path: PathBuf,
}

/// The binary's and the manifest's paths for `commit` and `bin`, after checking both are safe to
/// put in a path.
fn paths_of(
    store_dir: &Path,
    commit: &str,
    bin: &str,
) -> Result<(PathBuf, PathBuf), BaselineError> {
    if !is_full_commit_id(commit) {
        return Err(BaselineError::BadCommitId {
            commit: commit.to_owned(),
        });
    }
    // Cargo's binary names: letters, digits, `-` and `_` (never a path).
    let valid = !bin.is_empty()
        && bin
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !valid {
        return Err(BaselineError::NotSavable {
            reason: format!("`{bin}` is not a binary target name"),
        });
    }
    let dir = store_dir.join(BUILDS_DIR).join(commit);
    Ok((dir.join(bin), dir.join(format!("{bin}.json"))))
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> BaselineError {
    let path = path.to_path_buf();
    move |source| BaselineError::Io {
        action,
        path,
        source,
    }
}

/// Keeps `binary` as the build of binary target `bin` at `commit` in the directory store at
/// `store_dir`, replacing one stored before. Returns what was stored.
pub fn save_build(
    store_dir: &Path,
    commit: &str,
    bin: &str,
    binary: &Path,
) -> Result<StoredBuild, BaselineError> {
    let (bin_path, manifest_path) = paths_of(store_dir, commit, bin)?;
    let bytes = std::fs::read(binary).map_err(io("read", binary))?;
    let build = StoredBuild {
        format_version: BUILD_FORMAT_VERSION,
        commit: commit.to_owned(),
        bin: bin.to_owned(),
        sha256: crate::result::hex_sha256(&bytes),
        size: bytes.len() as u64,
        path: bin_path.clone(),
    };
    crate::targets::base::write_executable_atomic(&bin_path, &bytes)
        .map_err(io("write", &bin_path))?;
    let mut text = serde_json::to_vec_pretty(&build).map_err(|e| BaselineError::NotSavable {
        reason: e.to_string(),
    })?;
    text.push(b'\n');
    crate::result::write_file_atomic(&manifest_path, &text).map_err(io("write", &manifest_path))?;
    Ok(build)
}

/// The build of binary target `bin` at `commit` stored in the directory store at `store_dir`, or
/// `None` when there is none. A stored binary that does not match its manifest is
/// [`BaselineError::Corrupt`] and is left as it is.
pub fn find_build(
    store_dir: &Path,
    commit: &str,
    bin: &str,
) -> Result<Option<StoredBuild>, BaselineError> {
    let (bin_path, manifest_path) = paths_of(store_dir, commit, bin)?;
    let text = match std::fs::read(&manifest_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", &manifest_path)(e)),
    };
    let corrupt = |detail: String| BaselineError::Corrupt {
        commit: commit.to_owned(),
        location: manifest_path.display().to_string(),
        detail,
    };
    let mut build: StoredBuild =
        serde_json::from_slice(&text).map_err(|e| corrupt(e.to_string()))?;
    if build.format_version > BUILD_FORMAT_VERSION {
        return Err(BaselineError::NewerFormat {
            commit: commit.to_owned(),
            location: manifest_path.display().to_string(),
            found: build.format_version.into(),
            known: BUILD_FORMAT_VERSION,
        });
    }
    if build.commit != commit || build.bin != bin {
        return Err(corrupt(format!(
            "it describes `{}` at {}",
            build.bin,
            short(&build.commit)
        )));
    }
    let bytes = match std::fs::read(&bin_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(corrupt(format!("{} is missing", bin_path.display())));
        }
        Err(e) => return Err(io("read", &bin_path)(e)),
    };
    let sha256 = crate::result::hex_sha256(&bytes);
    if sha256 != build.sha256 {
        return Err(corrupt(format!(
            "{} has sha256 {}, not {} ({} bytes, {} expected)",
            bin_path.display(),
            &sha256[..12],
            build.sha256.get(..12).unwrap_or(&build.sha256),
            bytes.len(),
            build.size
        )));
    }
    build.path = bin_path;
    Ok(Some(build))
}

/// What `run --save-baseline` keeps besides the result: when the store is a directory and the run
/// measured a binary loadgate built from a clean commit, that binary, keyed by the commit (its file
/// name is the binary target's). `None` when there is nothing to keep: a notes store (git notes are
/// no place for binaries), no commit, a dirty work tree (the binary is not the commit's), or a
/// target that is an image or a URL.
pub fn save_run_build(
    store: &StoreSpec,
    git: Option<&GitInfo>,
    binary: Option<&Path>,
) -> Result<Option<StoredBuild>, BaselineError> {
    let (StoreSpec::Dir { path }, Some(git), Some(binary)) = (store, git, binary) else {
        return Ok(None);
    };
    if git.dirty {
        return Ok(None);
    }
    let Some(bin) = binary.file_name().and_then(|n| n.to_str()) else {
        return Ok(None);
    };
    save_build(path, &git.commit, bin, binary).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    const C: &str = "3f2a91c0d4e5f60718293a4b5c6d7e8f90a1b2c3";

    fn binary(dir: &Path, bytes: &[u8]) -> PathBuf {
        let path = dir.join("built-svc");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn a_saved_build_is_found_by_commit_and_is_executable() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        assert_eq!(find_build(&store, C, "svc").unwrap(), None);
        let saved = save_build(&store, C, "svc", &binary(dir.path(), b"\x7fELF one")).unwrap();
        assert_eq!(saved.path, store.join("builds").join(C).join("svc"));
        let found = find_build(&store, C, "svc").unwrap().expect("stored");
        assert_eq!(found, saved);
        assert_eq!(std::fs::read(&found.path).unwrap(), b"\x7fELF one");
        let mode = std::fs::metadata(&found.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o100, 0o100, "{mode:o}");
        // Another commit and another binary of the same commit are not it.
        let other = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(find_build(&store, other, "svc").unwrap(), None);
        assert_eq!(find_build(&store, C, "svc2").unwrap(), None);
        // A second save replaces the first, whole.
        save_build(&store, C, "svc", &binary(dir.path(), b"\x7fELF two")).unwrap();
        let found = find_build(&store, C, "svc").unwrap().unwrap();
        assert_eq!(std::fs::read(&found.path).unwrap(), b"\x7fELF two");
        assert_eq!(found.size, 8);
        // No temporary files are left beside them.
        let names: Vec<String> = std::fs::read_dir(store.join("builds").join(C))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    /// A CI cache restored halfway must not hand paired mode a binary that is not the one saved.
    #[test]
    fn a_binary_that_does_not_match_its_manifest_is_corrupt_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let saved = save_build(&store, C, "svc", &binary(dir.path(), b"\x7fELF one")).unwrap();
        std::fs::write(&saved.path, b"\x7fELF tru").unwrap();
        let err = find_build(&store, C, "svc").unwrap_err();
        assert!(matches!(err, BaselineError::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("is corrupt"), "{err}");
        assert_eq!(std::fs::read(&saved.path).unwrap(), b"\x7fELF tru");
        std::fs::remove_file(&saved.path).unwrap();
        let err = find_build(&store, C, "svc").unwrap_err();
        assert!(matches!(err, BaselineError::Corrupt { .. }), "{err:?}");
        std::fs::write(store.join("builds").join(C).join("svc.json"), "{").unwrap();
        assert!(matches!(
            find_build(&store, C, "svc").unwrap_err(),
            BaselineError::Corrupt { .. }
        ));
    }

    #[test]
    fn a_manifest_of_a_newer_format_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let saved = save_build(&store, C, "svc", &binary(dir.path(), b"x")).unwrap();
        let manifest = store.join("builds").join(C).join("svc.json");
        let newer = StoredBuild {
            format_version: 2,
            ..saved
        };
        std::fs::write(&manifest, serde_json::to_vec(&newer).unwrap()).unwrap();
        assert!(matches!(
            find_build(&store, C, "svc").unwrap_err(),
            BaselineError::NewerFormat { found: 2, .. }
        ));
    }

    #[test]
    fn a_run_keeps_its_binary_only_in_a_dir_store_for_a_clean_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let spec = StoreSpec::Dir {
            path: store.clone(),
        };
        let built = dir.path().join("target/release/svc");
        std::fs::create_dir_all(built.parent().unwrap()).unwrap();
        std::fs::write(&built, b"\x7fELF svc").unwrap();
        let clean = GitInfo {
            commit: C.to_owned(),
            dirty: false,
        };
        let dirty = GitInfo {
            dirty: true,
            ..clean.clone()
        };
        let notes = StoreSpec::default();
        assert_eq!(
            save_run_build(&notes, Some(&clean), Some(&built)).unwrap(),
            None
        );
        assert_eq!(
            save_run_build(&spec, Some(&dirty), Some(&built)).unwrap(),
            None
        );
        assert_eq!(save_run_build(&spec, None, Some(&built)).unwrap(), None);
        assert_eq!(save_run_build(&spec, Some(&clean), None).unwrap(), None);
        assert!(!store.exists());
        let saved = save_run_build(&spec, Some(&clean), Some(&built))
            .unwrap()
            .expect("kept");
        assert_eq!(saved.bin, "svc");
        assert_eq!(find_build(&store, C, "svc").unwrap(), Some(saved));
    }

    #[test_case("3f2a91c", "svc" ; "short commit")]
    #[test_case(C, "../svc" ; "path in the name")]
    #[test_case(C, "" ; "empty name")]
    fn names_that_are_not_keys_are_refused(commit: &str, bin: &str) {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        assert!(save_build(&store, commit, bin, &binary(dir.path(), b"x")).is_err());
        assert!(find_build(&store, commit, bin).is_err());
        assert!(!store.exists());
    }
}
