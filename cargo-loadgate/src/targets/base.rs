//! The base side of a paired run (issue 13): which commit the base is, its git worktree, and its
//! build.
//!
//! - [`resolve_base`] finds the merge-base of HEAD and the base reference, with a clear error for a
//!   reference that does not exist and for a shallow clone that lacks the merge-base, and the
//!   statement the run prints about what is compared ([`ResolvedBase::statement`]).
//! - [`BaseWorktree`] checks the base out under the target dir (`<target-dir>/loadgate/base-<short
//!   sha>`) with `git worktree add --detach`, reusing one a previous run left at that commit, and
//!   removes it (`git worktree remove --force`, `git worktree prune`) when dropped. It is registered
//!   in [`super::cleanup`] first, so SIGINT, SIGTERM and a panic remove it too.
//! - [`build_base`] builds the selected package's binary from the worktree and copies it out to
//!   `<target-dir>/loadgate/base-<sha>/bin/<name>`, so nothing later overwrites it. The base builds
//!   in its own target dir, `<target-dir>/loadgate/base-target` ([`base_target_dir`]):
//!   docs/decisions.md has the measurements and the reason (a shared target dir lets cargo take the
//!   base's artifacts for the head's).
//!
//! The orchestration (both sides booted, the ABBA blocks, `--mode`) lives elsewhere; nothing here
//! prints.

use super::{BootEvent, TargetError, TargetErrorKind, cleanup};
use crate::baseline::{BaselineError, Git, default_base_ref, merge_base, short};
use crate::config::PackageRef;
use crate::image::{BuildMode, cargo_build_in};
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The directory under the target dir that holds what the gate itself puts there.
pub const LOADGATE_DIR: &str = "loadgate";

/// What kind of failure a [`BaseError`] is; the command line picks the exit code from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseErrorKind {
    /// The base cannot be named from what the person gave or from the clone they have: a base
    /// reference that does not exist, a shallow clone without the merge-base, unrelated histories.
    Usage,
    /// The base was found but could not be built.
    BaseFailed,
    /// git, the file system or the build tool failed to run.
    Other,
}

/// An error of the base side of a paired run.
#[derive(Debug, thiserror::Error)]
pub enum BaseError {
    /// HEAD names no commit (not a repository, or one without commits).
    #[error("paired mode needs a commit at HEAD, and {} has none", repo.display())]
    NoHeadCommit {
        /// The directory searched.
        repo: PathBuf,
    },
    /// No base reference was given and neither `origin/HEAD` nor `main` exists.
    #[error("no base branch to build the base from: neither `origin/HEAD` nor `main` exists in {}", repo.display())]
    NoBaseRef {
        /// The repository.
        repo: PathBuf,
        /// Whether the repository is a shallow clone.
        shallow: bool,
    },
    /// The base reference names no commit.
    #[error("base ref `{base_ref}` does not name a commit in {}", repo.display())]
    UnknownBaseRef {
        /// The reference as given.
        base_ref: String,
        /// The repository.
        repo: PathBuf,
        /// Whether the repository is a shallow clone (then the ref may just not be fetched).
        shallow: bool,
    },
    /// A shallow clone that does not reach the merge-base of HEAD and the base reference.
    #[error(
        "this shallow clone does not reach the merge-base of HEAD and `{base_ref}` in {}",
        repo.display()
    )]
    ShallowClone {
        /// The base reference.
        base_ref: String,
        /// The repository.
        repo: PathBuf,
    },
    /// HEAD and the base reference share no history in a complete clone.
    #[error("HEAD and `{base_ref}` have no merge-base in {}: their histories are unrelated", repo.display())]
    UnrelatedHistories {
        /// The base reference.
        base_ref: String,
        /// The repository.
        repo: PathBuf,
    },
    /// The package's workspace is not inside the git repository, so the worktree has no copy of it.
    #[error(
        "the workspace {} is not inside the git repository {}",
        workspace.display(),
        repo.display()
    )]
    OutsideRepository {
        /// The package's workspace root.
        workspace: PathBuf,
        /// The repository's top level.
        repo: PathBuf,
    },
    /// The base did not build.
    #[error("the base {} failed to build", short(commit))]
    Build {
        /// The base commit.
        commit: String,
        /// The build's failure, with the command and the tail of its output.
        #[source]
        source: TargetError,
    },
    /// A git command failed.
    #[error(transparent)]
    Git(#[from] BaselineError),
    /// A file operation on the worktree or the copied binary failed.
    #[error("failed to {context}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl BaseError {
    /// What kind of failure this is.
    pub fn kind(&self) -> BaseErrorKind {
        match self {
            Self::NoHeadCommit { .. }
            | Self::NoBaseRef { .. }
            | Self::UnknownBaseRef { .. }
            | Self::ShallowClone { .. }
            | Self::UnrelatedHistories { .. }
            | Self::OutsideRepository { .. } => BaseErrorKind::Usage,
            Self::Build { source, .. } if source.kind() == TargetErrorKind::Io => {
                BaseErrorKind::Other
            }
            Self::Build { .. } => BaseErrorKind::BaseFailed,
            Self::Git(_) | Self::Io { .. } => BaseErrorKind::Other,
        }
    }

    /// A one-line suggestion for a person, bare text (the command line adds `hint:`).
    pub fn hint(&self) -> Option<String> {
        /// The two CI settings that fetch the whole history.
        const FULL_HISTORY: &str = "fetch the whole history: `fetch-depth: 0` (GitHub Actions, actions/checkout) or `GIT_DEPTH: 0` (GitLab CI)";
        Some(match self {
            Self::NoHeadCommit { .. } => {
                "run inside a git repository with at least one commit, or use stored mode".to_owned()
            }
            Self::ShallowClone { .. }
            | Self::NoBaseRef { shallow: true, .. }
            | Self::UnknownBaseRef { shallow: true, .. } => FULL_HISTORY.to_owned(),
            Self::NoBaseRef { .. } => {
                "name the base branch with --base-ref (e.g. origin/main)".to_owned()
            }
            Self::UnknownBaseRef { .. } => {
                "check the name (`git branch -a` lists them), or fetch it (`git fetch origin main`)"
                    .to_owned()
            }
            Self::UnrelatedHistories { .. } => {
                "name a base branch this commit grew from with --base-ref".to_owned()
            }
            Self::OutsideRepository { .. } => {
                "paired mode builds the base from the repository; use stored mode or --base-url"
                    .to_owned()
            }
            Self::Build { source, .. } if source.kind() == TargetErrorKind::Io => {
                return source.hint();
            }
            Self::Build { .. } => {
                "the base commit does not build here (its output is above); paired mode needs it, stored mode does not"
                    .to_owned()
            }
            Self::Git(e) => return e.hint(),
            Self::Io { .. } => return None,
        })
    }

    fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }
}

/// The two sides of a paired run, as git names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedBase {
    /// The commit HEAD points at (full id).
    pub head: String,
    /// Whether the work tree has uncommitted changes to tracked files: then the head is the work
    /// tree, not the commit.
    pub head_dirty: bool,
    /// The base reference the merge-base was taken with, as given (or the default).
    pub base_ref: String,
    /// The base: the merge-base of HEAD and [`ResolvedBase::base_ref`] (full id).
    pub commit: String,
}

impl ResolvedBase {
    /// What the run compares, for a person: `head: the work tree (dirty) of 3f2a91c; base: 1a2b3c4,
    /// the merge-base with origin/main`.
    pub fn statement(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for ResolvedBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = short(&self.head);
        if self.head_dirty {
            write!(f, "head: the work tree (dirty) of {head}")?;
        } else {
            write!(f, "head: {head}")?;
        }
        write!(
            f,
            "; base: {}, the merge-base with {}",
            short(&self.commit),
            self.base_ref
        )?;
        if self.commit == self.head && !self.head_dirty {
            f.write_str(" (the same commit: an A/A comparison)")?;
        }
        Ok(())
    }
}

/// Finds the base of a paired run in the repository containing `repo`: the merge-base of HEAD and
/// `base_ref` (or [`default_base_ref`] when `None`). A dirty work tree is no error: the head is the
/// work tree, the base the commit, and [`ResolvedBase::statement`] says so.
pub fn resolve_base(repo: &Path, base_ref: Option<&str>) -> Result<ResolvedBase, BaseError> {
    let git = Git::new(repo);
    let head = git
        .commit_of("HEAD")?
        .ok_or_else(|| BaseError::NoHeadCommit {
            repo: repo.to_path_buf(),
        })?;
    let shallow = is_shallow(&git)?;
    let base_ref = match base_ref {
        Some(r) => r.to_owned(),
        None => match default_base_ref(repo) {
            Ok(r) => r,
            Err(BaselineError::NoBaseRef { repo }) => {
                return Err(BaseError::NoBaseRef { repo, shallow });
            }
            Err(e) => return Err(e.into()),
        },
    };
    if git.commit_of(&base_ref)?.is_none() {
        return Err(BaseError::UnknownBaseRef {
            base_ref,
            repo: repo.to_path_buf(),
            shallow,
        });
    }
    let commit = match merge_base(repo, &head, &base_ref) {
        Ok(commit) => commit,
        Err(BaselineError::NoMergeBase { repo, .. }) if shallow => {
            return Err(BaseError::ShallowClone { base_ref, repo });
        }
        Err(BaselineError::NoMergeBase { repo, .. }) => {
            return Err(BaseError::UnrelatedHistories { base_ref, repo });
        }
        Err(e) => return Err(e.into()),
    };
    // As the run result's `git.dirty`: tracked files only, so build output never counts.
    let status = git.run(&["status", "--porcelain", "--untracked-files=no"])?;
    Ok(ResolvedBase {
        head,
        head_dirty: !status.is_empty(),
        base_ref,
        commit,
    })
}

/// `git rev-parse --is-shallow-repository`.
fn is_shallow(git: &Git) -> Result<bool, BaseError> {
    Ok(git.run(&["rev-parse", "--is-shallow-repository"])? == "true")
}

/// Where the base's worktree is checked out: `<target_dir>/loadgate/base-<short sha>`.
pub fn worktree_path(target_dir: &Path, commit: &str) -> PathBuf {
    target_dir
        .join(LOADGATE_DIR)
        .join(format!("base-{}", short(commit)))
}

/// Where the base's binary is kept after its build: `<target_dir>/loadgate/base-<full
/// sha>/bin/<build>/<bin>`, outside the worktree (which is removed) and beside nothing cargo
/// writes. `<build>` is `host`, or `static-<triple>` for a container's static build, so that two
/// runs at once whose targets need the two kinds never replace each other's.
pub fn base_binary_path(target_dir: &Path, commit: &str, bin: &str, mode: &BuildMode) -> PathBuf {
    let build = match mode {
        BuildMode::Host => "host".to_owned(),
        BuildMode::Static { triple } => format!("static-{triple}"),
    };
    target_dir
        .join(LOADGATE_DIR)
        .join(format!("base-{commit}"))
        .join("bin")
        .join(build)
        .join(bin)
}

/// What a base binary was built with beyond its commit and build mode (which its path names):
/// the package and the binary, and the environment cargo and rustc read that changes the code
/// (the toolchain, compiler flags, profile and target settings), one `KEY=value` a line, sorted.
/// [`build_base`] writes it beside the binary ([`fingerprint_path`]); a run that waited for the
/// base lock takes the binary only when its own is the same ([`built_meanwhile`]).
pub fn build_fingerprint(
    package: &str,
    bin: &str,
    env: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> String {
    const EXACT: [&str; 6] = [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
    ];
    const PREFIXES: [&str; 3] = ["CARGO_PROFILE_", "CARGO_BUILD_", "CARGO_TARGET_"];
    let mut vars: Vec<String> = env
        .into_iter()
        .filter(|(key, _)| {
            let key = key.to_string_lossy();
            EXACT.contains(&key.as_ref()) || PREFIXES.iter().any(|p| key.starts_with(p))
        })
        .map(|(key, value)| format!("{}={}", key.to_string_lossy(), value.to_string_lossy()))
        .collect();
    vars.sort();
    let mut out = format!("package={package}\nbin={bin}\n");
    for var in vars {
        out.push_str(&var);
        out.push('\n');
    }
    out
}

/// This process's [`build_fingerprint`] of `bin` of `package`: what [`build_base`] writes beside
/// the binary, and what a run that waited for it compares.
fn current_fingerprint(package: &str, bin: &str) -> String {
    build_fingerprint(package, bin, std::env::vars_os())
}

/// Where [`build_base`] writes a base binary's [`build_fingerprint`]: beside it, `<bin>.build`.
pub fn fingerprint_path(binary: &Path) -> PathBuf {
    let mut name = binary.file_name().unwrap_or_default().to_os_string();
    name.push(".build");
    binary.with_file_name(name)
}

/// Which file a path held: its inode and modification time (`None`: no file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileIdentity {
    inode: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileIdentity {
    /// The file at `path` now, if there is one.
    fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            inode: meta.ino(),
            modified: meta.modified().ok(),
        })
    }
}

/// The base binary at `path` if it was written while this run waited for the base lock (its
/// file is not the one `before` saw) with the same `fingerprint`: the run waited for built this
/// very base, from the same commit with the same build, moments ago. Any other (an older binary,
/// which may be of another toolchain and would show as a change of the code; one built with
/// other flags; one without its fingerprint) is not taken: the base is then built again.
fn built_meanwhile(
    path: &Path,
    before: Option<FileIdentity>,
    fingerprint: &str,
) -> Option<PathBuf> {
    let now = FileIdentity::of(path)?;
    if before == Some(now) {
        return None;
    }
    let written = std::fs::read_to_string(fingerprint_path(path)).ok()?;
    (written == fingerprint).then(|| path.to_path_buf())
}

/// The cargo target dir the base is built in: `<target_dir>/loadgate/base-target`, its own, so
/// that the head's and the base's artifacts of a workspace crate (same names, same metadata hash)
/// never overwrite each other (docs/decisions.md, "The base builds in its own target dir").
pub fn base_target_dir(target_dir: &Path) -> PathBuf {
    target_dir.join(LOADGATE_DIR).join("base-target")
}

/// The lock two runs in one repository take around the base's checkout, build and copy:
/// `<target_dir>/loadgate/base.lock`.
pub fn base_lock_path(target_dir: &Path) -> PathBuf {
    target_dir.join(LOADGATE_DIR).join("base.lock")
}

/// An exclusive `flock` on [`base_lock_path`], held from the base's checkout until its worktree
/// is removed. Two runs of one repository at once (shards on one machine, two jobs sharing a
/// checkout) share the worktree's path and the base's target dir: without it, the first to finish
/// would remove the worktree the other is building in. The kernel releases the lock when its
/// holder exits, however it exits, so a killed run never leaves it taken.
#[derive(Debug)]
pub struct BaseLock {
    _file: std::fs::File,
}

/// What [`BaseLock::acquire_for`] found.
#[derive(Debug)]
pub enum BaseLockOutcome {
    /// The lock, held: this run checks the base out and builds it.
    Build(BaseLock),
    /// The run this one waited for built this very base meanwhile, with the same build: its
    /// binary, taken instead of building again (the lock is released).
    BuiltMeanwhile(PathBuf),
}

impl BaseLock {
    /// Takes the lock to build `bin` of `package` at `commit` in `mode` (as
    /// [`BaseLock::acquire`]). When it had to wait, and the run it waited for wrote that base's
    /// binary during the wait with this run's [`build_fingerprint`], that binary is the outcome
    /// and nothing is built ([`built_meanwhile`]: a binary there before the wait is never taken).
    pub async fn acquire_for(
        target_dir: &Path,
        commit: &str,
        package: &str,
        bin: &str,
        mode: &BuildMode,
        waiting: impl FnOnce(&Path),
    ) -> Result<BaseLockOutcome, BaseError> {
        let binary = base_binary_path(target_dir, commit, bin, mode);
        let before = FileIdentity::of(&binary);
        let mut waited = false;
        let lock = Self::acquire(target_dir, |path| {
            waited = true;
            waiting(path);
        })
        .await?;
        if waited
            && let Some(binary) =
                built_meanwhile(&binary, before, &current_fingerprint(package, bin))
        {
            return Ok(BaseLockOutcome::BuiltMeanwhile(binary));
        }
        Ok(BaseLockOutcome::Build(lock))
    }

    /// Takes the lock of `target_dir`'s base, calling `waiting` once (with the lock's path) when
    /// another process holds it, then waiting for it without blocking the runtime (a Ctrl-C
    /// while waiting is handled as anywhere else).
    pub async fn acquire(
        target_dir: &Path,
        waiting: impl FnOnce(&Path),
    ) -> Result<Self, BaseError> {
        use std::os::fd::AsRawFd as _;
        let path = base_lock_path(target_dir);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(BaseError::io(format!("create {}", parent.display())))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(BaseError::io(format!("open {}", path.display())))?;
        let mut waiting = Some(waiting);
        loop {
            // SAFETY: the descriptor belongs to `file`, which outlives the call.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc == 0 {
                return Ok(Self { _file: file });
            }
            let err = std::io::Error::last_os_error();
            match err.kind() {
                std::io::ErrorKind::Interrupted => {}
                std::io::ErrorKind::WouldBlock => {
                    if let Some(waiting) = waiting.take() {
                        waiting(&path);
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                _ => return Err(BaseError::io(format!("lock {}", path.display()))(err)),
            }
        }
    }
}

/// The base checked out in a git worktree, removed when this is dropped (and by the cleanup
/// handlers on SIGINT, SIGTERM or a panic, through [`cleanup::register_worktree`]).
#[derive(Debug)]
pub struct BaseWorktree {
    /// The repository's top level (of the head's work tree).
    toplevel: PathBuf,
    /// The worktree's directory.
    path: PathBuf,
    /// The commit checked out (full id).
    commit: String,
    /// Whether a previous run's worktree at this commit was reused.
    reused: bool,
}

impl BaseWorktree {
    /// Checks `commit` out in a detached worktree of the repository containing `repo`, at
    /// [`worktree_path`]`(target_dir, commit)`. A worktree already there at that commit with no
    /// changes (a previous run's, left by a kill -9) is reused; anything else there is removed
    /// first.
    pub fn checkout(repo: &Path, target_dir: &Path, commit: &str) -> Result<Self, BaseError> {
        let git = Git::new(repo);
        let toplevel = PathBuf::from(git.run(&["rev-parse", "--show-toplevel"])?);
        let target_dir = if target_dir.is_absolute() {
            target_dir.to_path_buf()
        } else {
            repo.join(target_dir)
        };
        let path = worktree_path(&target_dir, commit);
        let parent = path.parent().expect("worktree_path has a parent");
        std::fs::create_dir_all(parent)
            .map_err(BaseError::io(format!("create {}", parent.display())))?;
        // Registered before it exists: a signal during `git worktree add` still removes it.
        cleanup::register_worktree(&toplevel, &path);
        let made = Self::prepare(&git, &path, commit);
        match made {
            Ok(reused) => Ok(Self {
                toplevel,
                path,
                commit: commit.to_owned(),
                reused,
            }),
            Err(e) => {
                if cleanup::take_worktree(&path) {
                    let _ = remove_worktree_blocking(&toplevel, &path);
                }
                Err(e)
            }
        }
    }

    /// Reuses the worktree at `path` when it is at `commit` and clean; otherwise clears `path` and
    /// adds a new one. Returns whether it reused.
    fn prepare(git: &Git, path: &Path, commit: &str) -> Result<bool, BaseError> {
        match listed_head(git, path)? {
            Some(head) if head == commit && is_clean(path)? => return Ok(true),
            Some(_) => remove_worktree_blocking(git.repo(), path)?,
            None if path.exists() => {
                std::fs::remove_dir_all(path)
                    .map_err(BaseError::io(format!("remove {}", path.display())))?;
                git.run(&["worktree", "prune"])?;
            }
            None => {}
        }
        let path_arg = path.display().to_string();
        git.run(&["worktree", "add", "--detach", "--quiet", &path_arg, commit])?;
        Ok(false)
    }

    /// The worktree's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The commit checked out (full id).
    pub fn commit(&self) -> &str {
        &self.commit
    }

    /// Whether a previous run's worktree at this commit was reused.
    pub fn reused(&self) -> bool {
        self.reused
    }

    /// The top level of the repository the worktree belongs to.
    pub fn toplevel(&self) -> &Path {
        &self.toplevel
    }

    /// Removes the worktree now, reporting a failure (dropping it removes it too, silently).
    pub fn remove(self) -> Result<(), BaseError> {
        let taken = cleanup::take_worktree(&self.path);
        let result = if taken {
            remove_worktree_blocking(&self.toplevel, &self.path)
        } else {
            Ok(())
        };
        std::mem::forget(self);
        result
    }
}

impl Drop for BaseWorktree {
    fn drop(&mut self) {
        // A panic hook or a signal may have removed it already; then it is no longer registered.
        if cleanup::take_worktree(&self.path) {
            let _ = remove_worktree_blocking(&self.toplevel, &self.path);
        }
    }
}

/// The commit checked out in the worktree at `path` when git lists one there, else `None`.
fn listed_head(git: &Git, path: &Path) -> Result<Option<String>, BaseError> {
    let list = git.run(&["worktree", "list", "--porcelain"])?;
    let wanted = canonical(path);
    let mut current: Option<PathBuf> = None;
    for line in list.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            current = Some(canonical(Path::new(p)));
        } else if let Some(head) = line.strip_prefix("HEAD ")
            && current.as_deref() == Some(wanted.as_path())
        {
            return Ok(Some(head.trim().to_owned()));
        }
    }
    Ok(None)
}

/// The path with symbolic links resolved when it exists, as given otherwise.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Whether the worktree at `path` has no changes, tracked or untracked (ignored files, such as
/// build output, do not count).
fn is_clean(path: &Path) -> Result<bool, BaseError> {
    let out = Git::new(path).output(&["status", "--porcelain"], &[], None)?;
    Ok(out.success && out.stdout.is_empty())
}

/// Removes the worktree at `path` of the repository at `repo`: `git worktree remove --force`,
/// the directory itself if git no longer knows it, then `git worktree prune`. Synchronous, so a
/// `Drop`, a panic hook or the signal task can call it.
pub fn remove_worktree_blocking(repo: &Path, path: &Path) -> Result<(), BaseError> {
    let git = Git::new(repo);
    let path_arg = path.display().to_string();
    let out = git.output(&["worktree", "remove", "--force", &path_arg], &[], None)?;
    if !out.success && path.exists() {
        std::fs::remove_dir_all(path)
            .map_err(BaseError::io(format!("remove {}", path.display())))?;
    }
    git.run(&["worktree", "prune"])?;
    Ok(())
}

/// The base's binary, built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseBuild {
    /// The base commit (full id).
    pub commit: String,
    /// The binary, copied to [`base_binary_path`] right after the build.
    pub binary: PathBuf,
}

/// The head's package as it lies in the base's worktree: the same name and binaries, its manifest
/// and workspace at the same place relative to the repository's top level, and
/// [`base_target_dir`] as its target dir.
pub fn base_package(worktree: &BaseWorktree, head: &PackageRef) -> Result<PackageRef, BaseError> {
    let toplevel = canonical(worktree.toplevel());
    let relocate = |p: &Path| -> Result<PathBuf, BaseError> {
        canonical(p)
            .strip_prefix(&toplevel)
            .map(|rel| worktree.path().join(rel))
            .map_err(|_| BaseError::OutsideRepository {
                workspace: head.workspace_root.clone(),
                repo: toplevel.clone(),
            })
    };
    Ok(PackageRef {
        name: head.name.clone(),
        manifest_path: relocate(&head.manifest_path)?,
        workspace_root: relocate(&head.workspace_root)?,
        target_directory: base_target_dir(&head.target_directory),
        bins: head.bins.clone(),
    })
}

/// Builds binary `bin` of the head's `package` from the base's worktree, in [`base_target_dir`],
/// and copies it to [`base_binary_path`] (under the head's target dir). Build output goes to
/// `events` as [`BootEvent::BuildOutput`] (the command line writes it to build.log); a failed build
/// is [`BaseError::Build`] with the tail of cargo's output.
pub async fn build_base(
    worktree: &BaseWorktree,
    package: &PackageRef,
    bin: &str,
    mode: &BuildMode,
    events: &dyn Fn(BootEvent),
) -> Result<BaseBuild, BaseError> {
    let base = base_package(worktree, package)?;
    let commit = worktree.commit().to_owned();
    let flavour = match mode {
        BuildMode::Host => "release".to_owned(),
        BuildMode::Static { triple } => format!("release, static, {triple}"),
    };
    events(BootEvent::Building {
        what: format!("base {}: {bin} ({flavour})", short(&commit)),
    });
    let on_line = |line: &str| {
        events(BootEvent::BuildOutput {
            line: line.to_owned(),
        })
    };
    let built = cargo_build_in(&base, bin, mode, Some(&base.target_directory), &on_line)
        .await
        .map_err(|source| BaseError::Build {
            commit: commit.clone(),
            source,
        })?;
    let binary = base_binary_path(&package.target_directory, &commit, bin, mode);
    copy_executable_atomic(&built, &binary)?;
    let fingerprint = fingerprint_path(&binary);
    crate::result::write_file_atomic(
        &fingerprint,
        current_fingerprint(&package.name, bin).as_bytes(),
    )
    .map_err(BaseError::io(format!("write {}", fingerprint.display())))?;
    events(BootEvent::Built {
        artifact: binary.display().to_string(),
        reused: false,
    });
    Ok(BaseBuild { commit, binary })
}

/// Copies the executable `from` to `to` through a temporary file renamed over it (mode 0755), so
/// a reader never sees half a binary.
pub(crate) fn copy_executable_atomic(from: &Path, to: &Path) -> Result<(), BaseError> {
    let what = || format!("copy {} to {}", from.display(), to.display());
    let bytes = std::fs::read(from).map_err(BaseError::io(what()))?;
    write_executable_atomic(to, &bytes).map_err(BaseError::io(what()))
}

/// Writes `bytes` to `path` as an executable (0755 minus the umask), atomically as
/// [`crate::result::write_file_atomic`] writes documents.
pub(crate) fn write_executable_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o755))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// One example of every variant, named, for the tests here and the exit-code tests in the CLI.
#[cfg(test)]
pub(crate) fn examples() -> Vec<(&'static str, BaseError)> {
    let repo = || PathBuf::from("/work/repo");
    vec![
        ("no_head_commit", BaseError::NoHeadCommit { repo: repo() }),
        (
            "no_base_ref",
            BaseError::NoBaseRef {
                repo: repo(),
                shallow: false,
            },
        ),
        (
            "no_base_ref_shallow",
            BaseError::NoBaseRef {
                repo: repo(),
                shallow: true,
            },
        ),
        (
            "unknown_base_ref",
            BaseError::UnknownBaseRef {
                base_ref: "origin/mian".into(),
                repo: repo(),
                shallow: false,
            },
        ),
        (
            "unknown_base_ref_shallow",
            BaseError::UnknownBaseRef {
                base_ref: "origin/main".into(),
                repo: repo(),
                shallow: true,
            },
        ),
        (
            "shallow_clone",
            BaseError::ShallowClone {
                base_ref: "origin/main".into(),
                repo: repo(),
            },
        ),
        (
            "unrelated_histories",
            BaseError::UnrelatedHistories {
                base_ref: "gh-pages".into(),
                repo: repo(),
            },
        ),
        (
            "outside_repository",
            BaseError::OutsideRepository {
                workspace: "/elsewhere/ws".into(),
                repo: repo(),
            },
        ),
        (
            "build",
            BaseError::Build {
                commit: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d".into(),
                source: TargetError::Build {
                    command: "cargo build --release -p demo --bin demo".into(),
                    status: "exit status 101".into(),
                    stderr_tail: vec![
                        "error[E0425]: cannot find value `x` in this scope".into(),
                        "error: could not compile `demo` (bin \"demo\") due to 1 previous error"
                            .into(),
                    ],
                },
            },
        ),
        (
            "build_io",
            BaseError::Build {
                commit: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d".into(),
                source: TargetError::io(
                    "run `cargo build`",
                    std::io::Error::from(std::io::ErrorKind::NotFound),
                ),
            },
        ),
        (
            "git",
            BaseError::Git(BaselineError::Git {
                command: "worktree add --detach".into(),
                repo: repo(),
                status: "exit status 128".into(),
                stderr: "fatal: invalid reference: 1a2b3c4".into(),
            }),
        ),
        (
            "io",
            BaseError::Io {
                context: "remove /work/repo/target/loadgate/base-1a2b3c4".into(),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::git_testing::{commit, git, init};
    use std::sync::{Mutex, MutexGuard, PoisonError};
    use test_case::test_case;

    /// The worktree registry is process-wide: tests that check it (or empty it, as a signal
    /// would) run one at a time.
    fn serial() -> MutexGuard<'static, ()> {
        static LOCK: Mutex<()> = Mutex::new(());
        LOCK.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// main: m0 - m1 - m2, feature from m1: f1 (a file `app.txt` differs).
    struct Repo {
        dir: tempfile::TempDir,
        m1: String,
        m2: String,
        f1: String,
    }

    impl Repo {
        fn path(&self) -> &Path {
            self.dir.path()
        }
        fn target(&self) -> PathBuf {
            self.path().join("target")
        }
    }

    fn write_commit(dir: &Path, file: &str, text: &str, message: &str) -> String {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", file]);
        commit(dir, message)
    }

    fn repo() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        init(p);
        std::fs::write(p.join(".gitignore"), "/target/\n").unwrap();
        git(p, &["add", ".gitignore"]);
        let m1 = write_commit(p, "app.txt", "base\n", "m1");
        git(p, &["checkout", "-q", "-b", "feature"]);
        let f1 = write_commit(p, "app.txt", "head\n", "f1");
        git(p, &["checkout", "-q", "main"]);
        let m2 = write_commit(p, "other.txt", "later\n", "m2");
        git(p, &["checkout", "-q", "feature"]);
        Repo { dir, m1, m2, f1 }
    }

    /// The paths `git worktree list` shows besides the main work tree.
    fn linked_worktrees(repo: &Path) -> Vec<String> {
        git(repo, &["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .skip(1)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_base_is_the_merge_base_with_the_base_ref() {
        let r = repo();
        let base = resolve_base(r.path(), Some("main")).unwrap();
        assert_eq!(base.head, r.f1);
        assert_eq!(base.commit, r.m1);
        assert_ne!(base.commit, r.m2, "main moved on after the branch point");
        assert!(!base.head_dirty);
        assert_eq!(
            base.statement(),
            format!(
                "head: {}; base: {}, the merge-base with main",
                short(&r.f1),
                short(&r.m1)
            )
        );
        // Without a base ref, `main` is the default here (no origin/HEAD).
        assert_eq!(resolve_base(r.path(), None).unwrap(), base);
    }

    #[test]
    fn a_dirty_tree_is_no_error_and_the_statement_says_so() {
        let r = repo();
        std::fs::write(r.path().join("app.txt"), "edited\n").unwrap();
        let base = resolve_base(r.path(), Some("main")).unwrap();
        assert!(base.head_dirty);
        let text = base
            .statement()
            .replace(short(&r.f1), "<head>")
            .replace(short(&r.m1), "<base>");
        insta::assert_snapshot!(text, @"head: the work tree (dirty) of <head>; base: <base>, the merge-base with main");
    }

    #[test]
    fn untracked_files_do_not_make_the_head_dirty() {
        let r = repo();
        std::fs::write(r.path().join("new.txt"), "x\n").unwrap();
        assert!(!resolve_base(r.path(), Some("main")).unwrap().head_dirty);
    }

    #[test]
    fn on_the_base_branch_itself_the_comparison_is_a_a() {
        let r = repo();
        git(r.path(), &["checkout", "-q", "main"]);
        let base = resolve_base(r.path(), Some("main")).unwrap();
        assert_eq!(base.commit, r.m2);
        assert!(
            base.statement()
                .ends_with("(the same commit: an A/A comparison)"),
            "{}",
            base.statement()
        );
    }

    #[test]
    fn a_base_ref_that_does_not_exist_is_a_usage_error_naming_it() {
        let r = repo();
        let err = resolve_base(r.path(), Some("origin/mian")).unwrap_err();
        assert!(
            matches!(&err, BaseError::UnknownBaseRef { base_ref, shallow: false, .. } if base_ref == "origin/mian"),
            "{err:?}"
        );
        assert!(err.to_string().contains("`origin/mian`"), "{err}");
        assert_eq!(err.kind(), BaseErrorKind::Usage);
    }

    #[test]
    fn unrelated_histories_are_a_usage_error() {
        let r = repo();
        git(r.path(), &["checkout", "-q", "--orphan", "lonely"]);
        commit(r.path(), "unrelated");
        let err = resolve_base(r.path(), Some("main")).unwrap_err();
        assert!(
            matches!(err, BaseError::UnrelatedHistories { .. }),
            "{err:?}"
        );
        assert_eq!(err.kind(), BaseErrorKind::Usage);
    }

    #[test]
    fn no_head_commit_and_no_default_base_ref_are_usage_errors() {
        let empty = tempfile::tempdir().unwrap();
        git(empty.path(), &["init", "-q", "-b", "trunk"]);
        let err = resolve_base(empty.path(), None).unwrap_err();
        assert!(matches!(err, BaseError::NoHeadCommit { .. }), "{err:?}");
        commit(empty.path(), "c0");
        let err = resolve_base(empty.path(), None).unwrap_err();
        assert!(
            matches!(err, BaseError::NoBaseRef { shallow: false, .. }),
            "{err:?}"
        );
        assert_eq!(err.kind(), BaseErrorKind::Usage);
    }

    /// A clone of `r` with `--depth 1` of the feature branch and main's tip: the merge-base m1 is
    /// not in it.
    fn shallow_clone(r: &Repo) -> tempfile::TempDir {
        let clone = tempfile::tempdir().unwrap();
        let url = format!("file://{}", r.path().display());
        git(
            clone.path(),
            &[
                "clone",
                "-q",
                "--depth",
                "1",
                "--no-single-branch",
                &url,
                ".",
            ],
        );
        git(clone.path(), &["checkout", "-q", "feature"]);
        clone
    }

    #[test]
    fn a_shallow_clone_without_the_merge_base_names_fetch_depth_0() {
        let r = repo();
        let clone = shallow_clone(&r);
        assert_eq!(
            git(clone.path(), &["rev-parse", "--is-shallow-repository"]),
            "true"
        );
        let err = resolve_base(clone.path(), Some("origin/main")).unwrap_err();
        assert!(matches!(err, BaseError::ShallowClone { .. }), "{err:?}");
        assert_eq!(err.kind(), BaseErrorKind::Usage);
        let hint = err.hint().unwrap();
        assert!(
            hint.contains("fetch-depth: 0") && hint.contains("GIT_DEPTH: 0"),
            "{hint}"
        );
        // A ref the shallow clone lacks gets the same hint.
        let err = resolve_base(clone.path(), Some("origin/release")).unwrap_err();
        assert!(
            matches!(err, BaseError::UnknownBaseRef { shallow: true, .. }),
            "{err:?}"
        );
        assert!(err.hint().unwrap().contains("fetch-depth: 0"));
        // Deepened to the full history, the same clone finds the base.
        git(clone.path(), &["fetch", "-q", "--unshallow"]);
        assert_eq!(
            resolve_base(clone.path(), Some("origin/main"))
                .unwrap()
                .commit,
            r.m1
        );
    }

    #[test]
    fn the_worktree_is_created_at_the_commit_and_removed_on_drop() {
        let _serial = serial();
        let r = repo();
        let wt = BaseWorktree::checkout(r.path(), &r.target(), &r.m1).unwrap();
        assert_eq!(wt.path(), worktree_path(&r.target(), &r.m1));
        assert!(
            wt.path()
                .ends_with(format!("target/loadgate/base-{}", short(&r.m1)))
        );
        assert!(!wt.reused());
        assert_eq!(git(wt.path(), &["rev-parse", "HEAD"]), r.m1);
        assert_eq!(
            std::fs::read_to_string(wt.path().join("app.txt")).unwrap(),
            "base\n"
        );
        assert_eq!(linked_worktrees(r.path()).len(), 1);
        assert!(cleanup::registered_worktrees().contains(&wt.path().to_path_buf()));
        let path = wt.path().to_path_buf();
        drop(wt);
        assert!(!path.exists());
        assert!(linked_worktrees(r.path()).is_empty());
        assert!(!cleanup::registered_worktrees().contains(&path));
        // The head's work tree is untouched and clean.
        assert_eq!(git(r.path(), &["status", "--porcelain"]), "");
    }

    #[test]
    fn a_previous_runs_worktree_at_the_commit_is_reused() {
        let _serial = serial();
        let r = repo();
        let first = BaseWorktree::checkout(r.path(), &r.target(), &r.m1).unwrap();
        let path = first.path().to_path_buf();
        // A run killed with SIGKILL leaves its worktree behind: nothing removes it.
        std::mem::forget(first);
        assert!(cleanup::take_worktree(&path));
        let marker = path.join("target-ignored-marker");
        std::fs::write(&marker, "").unwrap();
        let again = BaseWorktree::checkout(r.path(), &r.target(), &r.m1).unwrap();
        // The marker is an untracked file: the worktree is not clean, so it was made anew.
        assert!(!again.reused());
        assert!(!marker.exists());
        drop(again);
        let first = BaseWorktree::checkout(r.path(), &r.target(), &r.m1).unwrap();
        std::mem::forget(first);
        assert!(cleanup::take_worktree(&path));
        let reused = BaseWorktree::checkout(r.path(), &r.target(), &r.m1).unwrap();
        assert!(reused.reused());
        assert_eq!(linked_worktrees(r.path()).len(), 1);
        reused.remove().unwrap();
        assert!(linked_worktrees(r.path()).is_empty());
        assert!(!path.exists());
    }

    #[test]
    fn a_worktree_at_another_commit_or_a_stray_directory_is_replaced() {
        let _serial = serial();
        let r = repo();
        // A worktree at the path of m1 but at f1 (someone moved it): replaced.
        let path = worktree_path(&r.target(), &r.m1);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        git(
            r.path(),
            &[
                "worktree",
                "add",
                "--detach",
                "-q",
                path.to_str().unwrap(),
                &r.f1,
            ],
        );
        let wt = BaseWorktree::checkout(r.path(), &r.target(), &r.m1).unwrap();
        assert!(!wt.reused());
        assert_eq!(git(wt.path(), &["rev-parse", "HEAD"]), r.m1);
        drop(wt);
        // A plain directory where the worktree goes: removed, then the worktree is added.
        std::fs::create_dir_all(path.join("junk")).unwrap();
        let wt = BaseWorktree::checkout(r.path(), &r.target(), &r.m1).unwrap();
        assert_eq!(git(wt.path(), &["rev-parse", "HEAD"]), r.m1);
        assert!(!wt.path().join("junk").exists());
        drop(wt);
        assert!(linked_worktrees(r.path()).is_empty());
    }

    #[test]
    fn a_failed_checkout_leaves_nothing_registered_or_listed() {
        let _serial = serial();
        let r = repo();
        let missing = "0123456789abcdef0123456789abcdef01234567";
        let err = BaseWorktree::checkout(r.path(), &r.target(), missing).unwrap_err();
        assert_eq!(err.kind(), BaseErrorKind::Other, "{err:?}");
        let path = worktree_path(&r.target(), missing);
        assert!(!cleanup::registered_worktrees().contains(&path));
        assert!(!path.exists());
        assert!(linked_worktrees(r.path()).is_empty());
    }

    #[test]
    fn the_worktree_is_removed_when_its_holder_panics() {
        let _serial = serial();
        let r = repo();
        let target = r.target();
        let seen = std::sync::Mutex::new(None);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let wt = BaseWorktree::checkout(r.path(), &target, &r.m1).unwrap();
            *seen.lock().unwrap() = Some(wt.path().to_path_buf());
            panic!("the holder of the base worktree panicked");
        }));
        assert!(result.is_err());
        let path = seen.into_inner().unwrap().expect("the worktree was made");
        assert!(!path.exists());
        assert!(linked_worktrees(r.path()).is_empty());
        assert!(!cleanup::registered_worktrees().contains(&path));
    }

    /// What SIGINT, SIGTERM and the panic hook run: the worktree goes even though its guard is
    /// still alive, and the guard's drop afterwards does nothing more.
    #[test]
    fn the_cleanup_handlers_remove_a_registered_worktree() {
        let _serial = serial();
        let r = repo();
        let wt = BaseWorktree::checkout(r.path(), &r.target(), &r.m1).unwrap();
        let path = wt.path().to_path_buf();
        let removed = cleanup::remove_registered_worktrees();
        assert!(removed.contains(&path), "{removed:?}");
        assert!(!path.exists());
        assert!(linked_worktrees(r.path()).is_empty());
        drop(wt);
        assert!(linked_worktrees(r.path()).is_empty());
    }

    #[test]
    fn the_base_package_lies_in_the_worktree_and_builds_in_its_own_target_dir() {
        let _serial = serial();
        let r = repo();
        let wt = BaseWorktree::checkout(r.path(), &r.target(), &r.m1).unwrap();
        let head = PackageRef {
            name: "svc".into(),
            manifest_path: r.path().join("svc/Cargo.toml"),
            workspace_root: r.path().to_path_buf(),
            target_directory: r.target(),
            bins: vec!["svc".into()],
        };
        std::fs::create_dir_all(r.path().join("svc")).unwrap();
        std::fs::write(r.path().join("svc/Cargo.toml"), "").unwrap();
        let base = base_package(&wt, &head).unwrap();
        assert_eq!(base.workspace_root, wt.path());
        assert_eq!(base.manifest_path, wt.path().join("svc/Cargo.toml"));
        assert_eq!(
            base.target_directory,
            r.target().join("loadgate/base-target")
        );
        assert_eq!(base.name, "svc");
        let elsewhere = tempfile::tempdir().unwrap();
        let outside = PackageRef {
            workspace_root: elsewhere.path().to_path_buf(),
            manifest_path: elsewhere.path().join("Cargo.toml"),
            ..head
        };
        let err = base_package(&wt, &outside).unwrap_err();
        assert!(
            matches!(err, BaseError::OutsideRepository { .. }),
            "{err:?}"
        );
    }

    #[test]
    fn the_binary_is_kept_outside_the_worktree_keyed_by_the_full_commit_and_the_build() {
        let target = Path::new("/w/target");
        let c = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
        let bin = base_binary_path(target, c, "svc", &BuildMode::Host);
        assert_eq!(
            bin,
            Path::new(
                "/w/target/loadgate/base-1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d/bin/host/svc"
            )
        );
        assert!(!bin.starts_with(worktree_path(target, c)));
        let static_build = BuildMode::Static {
            triple: "x86_64-unknown-linux-gnu".into(),
        };
        assert_eq!(
            base_binary_path(target, c, "svc", &static_build),
            Path::new(
                "/w/target/loadgate/base-1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d/bin/\
                 static-x86_64-unknown-linux-gnu/svc"
            )
        );
    }

    #[test]
    fn the_fingerprint_holds_the_package_and_what_changes_the_code_sorted() {
        let env = |pairs: &[(&str, &str)]| -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect()
        };
        let a = build_fingerprint(
            "demo",
            "svc",
            env(&[
                ("RUSTUP_TOOLCHAIN", "1.90"),
                ("HOME", "/root"),
                ("CARGO_PROFILE_RELEASE_LTO", "true"),
                ("RUSTFLAGS", "-C target-cpu=native"),
                ("PATH", "/bin"),
            ]),
        );
        assert_eq!(
            a,
            "package=demo\nbin=svc\nCARGO_PROFILE_RELEASE_LTO=true\n\
             RUSTFLAGS=-C target-cpu=native\nRUSTUP_TOOLCHAIN=1.90\n"
        );
        assert_eq!(
            a,
            build_fingerprint(
                "demo",
                "svc",
                env(&[
                    ("RUSTFLAGS", "-C target-cpu=native"),
                    ("CARGO_PROFILE_RELEASE_LTO", "true"),
                    ("RUSTUP_TOOLCHAIN", "1.90"),
                ])
            ),
            "the order and the other variables do not count"
        );
        assert_ne!(
            a,
            build_fingerprint("demo", "svc", env(&[("RUSTUP_TOOLCHAIN", "1.90")]))
        );
        assert_ne!(
            build_fingerprint("demo", "svc", Vec::new()),
            build_fingerprint("other", "svc", Vec::new())
        );
        assert_eq!(
            fingerprint_path(Path::new("/t/bin/host/svc")),
            Path::new("/t/bin/host/svc.build")
        );
    }

    #[test]
    fn only_a_binary_written_during_the_wait_with_the_same_fingerprint_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("svc");
        let write = |binary: &[u8], fingerprint: &str| {
            write_executable_atomic(&path, binary).unwrap();
            std::fs::write(fingerprint_path(&path), fingerprint).unwrap();
        };
        assert_eq!(built_meanwhile(&path, None, "f"), None, "none there");
        // Written during the wait, from nothing there before.
        write(b"one", "f");
        assert_eq!(built_meanwhile(&path, None, "f"), Some(path.clone()));
        assert_eq!(built_meanwhile(&path, None, "g"), None, "another build");
        // There before the wait and untouched: an older build, not taken.
        let before = FileIdentity::of(&path);
        assert!(before.is_some());
        assert_eq!(built_meanwhile(&path, before, "f"), None, "older");
        // Replaced during the wait (a new file, renamed over the old one).
        write(b"two", "f");
        assert_eq!(built_meanwhile(&path, before, "f"), Some(path.clone()));
        std::fs::remove_file(fingerprint_path(&path)).unwrap();
        assert_eq!(built_meanwhile(&path, None, "f"), None, "no fingerprint");
    }

    #[test]
    fn executables_are_written_whole_and_executable() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("built");
        std::fs::write(&from, b"\x7fELF...").unwrap();
        let to = dir.path().join("a/b/bin/svc");
        copy_executable_atomic(&from, &to).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"\x7fELF...");
        let mode = std::fs::metadata(&to).unwrap().permissions().mode();
        assert_eq!(mode & 0o100, 0o100, "{mode:o}");
        assert_eq!(std::fs::read_dir(to.parent().unwrap()).unwrap().count(), 1);
    }

    /// A tiny crate (`fn main`) whose output says which side it is.
    fn write_crate(dir: &Path, says: &str) {
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"svc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("src/main.rs"),
            format!("fn main() {{ println!(\"{says}\"); }}\n"),
        )
        .unwrap();
    }

    /// Runs a binary this test process just copied. A test on another thread that forks at that
    /// moment holds the copy's write descriptor until its child execs, and exec then fails with
    /// ETXTBSY ("text file busy", seen once in CI): tried again, a bounded number of times.
    fn run_binary(path: &Path) -> String {
        let mut tries = 0;
        let out = loop {
            match std::process::Command::new(path).output() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 20 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                other => break other.unwrap(),
            }
        };
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// A second run waits for the base's lock while the first holds it, says so once, and gets
    /// it when the first lets go (flock locks belong to open files, so two in one process
    /// exclude each other as two processes would).
    #[tokio::test]
    async fn a_second_run_waits_for_the_base_lock_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let mut said = 0;
        let first = BaseLock::acquire(dir.path(), |_| said += 1).await.unwrap();
        assert_eq!(said, 0, "the first takes it at once");
        assert!(base_lock_path(dir.path()).exists());
        let waits = std::cell::Cell::new(0);
        let second = BaseLock::acquire(dir.path(), |path| {
            assert_eq!(path, base_lock_path(dir.path()));
            waits.set(waits.get() + 1);
        });
        tokio::pin!(second);
        // Held: the second is still waiting after several of its 100 ms polls.
        let still = tokio::time::timeout(std::time::Duration::from_millis(350), &mut second).await;
        assert!(still.is_err(), "the second took a held lock");
        assert_eq!(waits.get(), 1, "the wait is announced once");
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(30), second)
            .await
            .expect("the lock is free once the first lets go")
            .unwrap();
        assert_eq!(waits.get(), 1);
    }

    /// A run that waited for the lock takes the binary the run it waited for wrote meanwhile
    /// with its own build; one that did not wait builds, whatever is there; one that waited for a
    /// run that wrote nothing (or another build) builds too.
    #[tokio::test]
    async fn a_run_that_waited_takes_only_the_base_built_meanwhile_with_its_build() {
        let dir = tempfile::tempdir().unwrap();
        let commit = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
        let binary = base_binary_path(dir.path(), commit, "svc", &BuildMode::Host);
        let acquire =
            || BaseLock::acquire_for(dir.path(), commit, "demo", "svc", &BuildMode::Host, |_| {});
        let write = |fingerprint: &str| {
            std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
            write_executable_atomic(&binary, b"built").unwrap();
            std::fs::write(fingerprint_path(&binary), fingerprint).unwrap();
        };
        let ours = current_fingerprint("demo", "svc");
        for (written, taken) in [
            (None, false),
            (Some("package=other\n"), false),
            (Some(&*ours), true),
        ] {
            let _ = std::fs::remove_file(&binary);
            let first = BaseLock::acquire(dir.path(), |_| {}).await.unwrap();
            let second = acquire();
            tokio::pin!(second);
            let still = tokio::time::timeout(std::time::Duration::from_millis(150), &mut second);
            assert!(still.await.is_err(), "the lock is held");
            if let Some(fingerprint) = written {
                write(fingerprint);
            }
            drop(first);
            let outcome = tokio::time::timeout(std::time::Duration::from_secs(30), second)
                .await
                .expect("the lock is free once the first lets go")
                .unwrap();
            match outcome {
                BaseLockOutcome::BuiltMeanwhile(path) => {
                    assert!(taken, "{written:?}");
                    assert_eq!(path, binary);
                }
                BaseLockOutcome::Build(_) => assert!(!taken, "{written:?}"),
            }
        }
        // Not waited: the binary of the same build there already is never taken.
        assert!(matches!(
            acquire().await.unwrap(),
            BaseLockOutcome::Build(_)
        ));
    }

    /// The one test that really builds: the base of a tiny crate, out of its worktree, kept
    /// beside the head's build without either overwriting the other; then a base that does not
    /// compile fails with the tail of its output.
    #[tokio::test]
    #[expect(
        clippy::await_holding_lock,
        reason = "the serial lock must span the whole test; its runtime is single-threaded"
    )]
    async fn the_base_builds_from_its_worktree_and_a_broken_base_shows_its_log_tail() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        init(p);
        std::fs::write(p.join(".gitignore"), "/target/\nCargo.lock\n").unwrap();
        write_crate(p, "base");
        git(p, &["add", "."]);
        let base_commit = commit(p, "base");
        write_crate(p, "head");
        git(p, &["add", "."]);
        commit(p, "head");
        let head = PackageRef {
            name: "svc".into(),
            manifest_path: p.join("Cargo.toml"),
            workspace_root: p.to_path_buf(),
            target_directory: p.join("target"),
            bins: vec!["svc".into()],
        };
        let head_binary = crate::image::cargo_build(&head, "svc", &BuildMode::Host, &|_| {})
            .await
            .unwrap();
        let wt = BaseWorktree::checkout(p, &head.target_directory, &base_commit).unwrap();
        let events = Mutex::new(Vec::new());
        let record = |e: BootEvent| events.lock().unwrap().push(e);
        let built = build_base(&wt, &head, "svc", &BuildMode::Host, &record)
            .await
            .unwrap();
        assert_eq!(built.commit, base_commit);
        assert_eq!(
            built.binary,
            base_binary_path(
                &head.target_directory,
                &base_commit,
                "svc",
                &BuildMode::Host
            )
        );
        assert_eq!(run_binary(&built.binary), "base");
        // Its fingerprint beside it: what a run that waited for this build compares.
        let fingerprint = std::fs::read_to_string(fingerprint_path(&built.binary)).unwrap();
        assert_eq!(fingerprint, current_fingerprint(&head.name, "svc"));
        assert_eq!(
            built_meanwhile(&built.binary, None, &fingerprint),
            Some(built.binary.clone())
        );
        assert_eq!(
            run_binary(&head_binary),
            "head",
            "the head's binary is intact"
        );
        let events = events.into_inner().unwrap();
        assert!(
            matches!(&events[0], BootEvent::Building { what } if what.starts_with(&format!("base {}: svc", short(&base_commit)))),
            "{events:?}"
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, BootEvent::BuildOutput { .. }))
        );
        assert!(matches!(
            events.last(),
            Some(BootEvent::Built { reused: false, .. })
        ));
        drop(wt);
        // The worktree is gone; the copied binary stays.
        assert!(built.binary.exists());
        assert!(linked_worktrees(p).is_empty());

        // A base that does not compile.
        std::fs::write(p.join("src/main.rs"), "fn main() { undefined_name(); }\n").unwrap();
        git(p, &["add", "."]);
        let broken = commit(p, "broken");
        let wt = BaseWorktree::checkout(p, &head.target_directory, &broken).unwrap();
        let err = build_base(&wt, &head, "svc", &BuildMode::Host, &|_| {})
            .await
            .unwrap_err();
        assert_eq!(err.kind(), BaseErrorKind::BaseFailed);
        assert_eq!(
            err.to_string(),
            format!("the base {} failed to build", short(&broken))
        );
        let BaseError::Build { source, .. } = &err else {
            panic!("{err:?}")
        };
        assert!(
            source
                .log_tail()
                .iter()
                .any(|l| l.contains("undefined_name")),
            "{:?}",
            source.log_tail()
        );
        drop(wt);
        assert!(linked_worktrees(p).is_empty());
    }

    #[test_case("no_head_commit", BaseErrorKind::Usage)]
    #[test_case("no_base_ref", BaseErrorKind::Usage)]
    #[test_case("no_base_ref_shallow", BaseErrorKind::Usage)]
    #[test_case("unknown_base_ref", BaseErrorKind::Usage)]
    #[test_case("unknown_base_ref_shallow", BaseErrorKind::Usage)]
    #[test_case("shallow_clone", BaseErrorKind::Usage)]
    #[test_case("unrelated_histories", BaseErrorKind::Usage)]
    #[test_case("outside_repository", BaseErrorKind::Usage)]
    #[test_case("build", BaseErrorKind::BaseFailed)]
    #[test_case("build_io", BaseErrorKind::Other)]
    #[test_case("git", BaseErrorKind::Other)]
    #[test_case("io", BaseErrorKind::Other)]
    fn kinds(name: &str, kind: BaseErrorKind) {
        let (_, err) = examples()
            .into_iter()
            .find(|(n, _)| *n == name)
            .expect("variant in table");
        assert_eq!(err.kind(), kind);
    }

    #[test]
    fn messages_are_lowercase_fragments_and_hints_carry_no_label() {
        for (name, err) in examples() {
            let first = err
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
            assert!(
                first.chars().next().is_some_and(|c| !c.is_uppercase())
                    || first.starts_with("HEAD"),
                "{name}: {first}"
            );
            assert!(!first.ends_with('.'), "{name}: {first}");
            if let Some(hint) = err.hint() {
                assert!(!hint.starts_with("hint"), "{name}: {hint}");
            }
        }
    }
}
