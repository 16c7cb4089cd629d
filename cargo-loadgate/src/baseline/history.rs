//! The stored results along the first-parent history of a branch, for `cargo loadgate history`:
//! each commit from a revision back to `--since` (or a limit), with the result stored for it that
//! belongs to the series, or why none does.
//!
//! A series holds only results of one config hash and one environment fingerprint. Its key is
//! taken from the *anchor*: the newest walked commit with a readable result of the config's
//! hashes (of its entries, the last saved). Every commit is then matched against that key by the
//! lookup's own rule (`lookup::match_candidate`, the same that finds a baseline), so a commit
//! passed over says why in the lookup's words: nothing stored, another config, another
//! environment, unreadable. What the figures are is `compare::history`'s.

use super::error::BaselineError;
use super::git::Git;
use super::lookup::{Mismatch, Wanted, match_candidate};
use super::note::{StoredEntry, newer_format};
use super::store::Store;
use super::trailers::{CommitTrailers, first_parent_trailers};
use crate::result::ConfigHashes;
use std::path::Path;

/// How many first-parent commits `history` walks when no `--since` is given, and at most with
/// one. A hundred commits of a main branch are months of history for most services; the walk
/// runs one `git` read per commit for the notes store.
pub const DEFAULT_WALK_LIMIT: usize = 100;

/// What to walk.
#[derive(Clone, Debug, PartialEq)]
pub struct WalkRequest<'a> {
    /// The revision the walk starts at (`--rev`, default `HEAD`).
    pub rev: &'a str,
    /// The oldest commit walked (`--since`), included; `None`: back to `limit` commits.
    pub since: Option<&'a str>,
    /// The most commits walked.
    pub limit: usize,
    /// The config hashes a result of the series carries.
    pub config_hashes: &'a ConfigHashes,
}

/// One commit walked.
#[derive(Clone, Debug, PartialEq)]
pub struct WalkedCommit {
    /// The commit and its `Loadgate-Accept` / `Loadgate-Reason` trailers.
    pub trailers: CommitTrailers,
    /// The stored result of the series, or why the commit has none.
    pub entry: Result<StoredEntry, Mismatch>,
}

/// The walk: every commit, oldest first, and where it looked.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryWalk {
    /// The store, as a person names it.
    pub store: String,
    /// The revision as given.
    pub rev: String,
    /// The commit it names (full id).
    pub head: String,
    /// `--since` as given, and the commit it names.
    pub since: Option<(String, String)>,
    /// Whether the walk stopped at the limit before reaching `--since` or the root commit.
    pub limited: bool,
    /// The commits, oldest first.
    pub commits: Vec<WalkedCommit>,
    /// The series' key, when a result of the config's hashes was found: the anchor's entry.
    pub anchor: Option<StoredEntry>,
}

/// Walks the first parents of `request.rev` in `repo`, reading each commit's result from `store`.
///
/// `--since` must name a first-parent ancestor of the revision within the limit (it is included
/// in the walk); otherwise the error says so. Unknown revisions are usage errors.
pub fn walk_history(
    repo: &Path,
    store: &dyn Store,
    request: &WalkRequest<'_>,
) -> Result<HistoryWalk, BaselineError> {
    let git = Git::new(repo);
    let resolve = |rev: &str| -> Result<String, BaselineError> {
        git.commit_of(rev)?
            .ok_or_else(|| BaselineError::UnknownRevision {
                rev: rev.to_owned(),
                repo: repo.to_path_buf(),
            })
    };
    let head = resolve(request.rev)?;
    let since = request
        .since
        .map(|s| resolve(s).map(|c| (s.to_owned(), c)))
        .transpose()?;
    // One more than the limit, to tell a walk cut by the limit from one that reached the root.
    let mut walk = first_parent_trailers(repo, &head, request.limit.saturating_add(1))?;
    let mut limited = walk.len() > request.limit;
    walk.truncate(request.limit.max(1));
    if let Some((given, commit)) = &since {
        match walk.iter().position(|c| &c.commit == commit) {
            Some(at) => {
                walk.truncate(at + 1);
                limited = false;
            }
            None => {
                return Err(BaselineError::NotAnAncestor {
                    rev: given.clone(),
                    head: request.rev.to_owned(),
                    limit: request.limit,
                });
            }
        }
    }
    let anchor = find_anchor(store, &walk, request.config_hashes)?;
    let mut commits = Vec::with_capacity(walk.len());
    for trailers in walk.into_iter().rev() {
        let entry = match &anchor {
            Some(a) => {
                let wanted = Wanted {
                    config_hashes: request.config_hashes.clone(),
                    fingerprint: a.fingerprint.clone(),
                    schedule_hash: None,
                    accepted_commits: Vec::new(),
                };
                match_candidate(store, &trailers.commit, &wanted)?
            }
            None => Err(unmatched(store, &trailers.commit, request.config_hashes)?),
        };
        commits.push(WalkedCommit { trailers, entry });
    }
    Ok(HistoryWalk {
        store: store.describe(),
        rev: request.rev.to_owned(),
        head,
        since,
        limited,
        commits,
        anchor,
    })
}

/// The newest commit's readable entry of `hashes` (of several, the last saved).
fn find_anchor(
    store: &dyn Store,
    walk: &[CommitTrailers],
    hashes: &ConfigHashes,
) -> Result<Option<StoredEntry>, BaselineError> {
    for c in walk {
        let Some(note) = store.load(&c.commit)? else {
            continue;
        };
        let anchor = note
            .entries
            .into_iter()
            .filter(|e| {
                hashes.matches(&e.config_hash)
                    && newer_format(&e.result).is_none()
                    && e.result.get().is_ok()
            })
            .max_by_key(|e| e.saved_at_unix_ms);
        if anchor.is_some() {
            return Ok(anchor);
        }
    }
    Ok(None)
}

/// Why `commit` has no result of the series when no commit has one of `hashes`: nothing stored,
/// or results of another config.
fn unmatched(
    store: &dyn Store,
    commit: &str,
    hashes: &ConfigHashes,
) -> Result<Mismatch, BaselineError> {
    Ok(match store.load(commit)? {
        None => Mismatch::NoBaseline,
        Some(note) => {
            let mut stored: Vec<String> =
                note.entries.iter().map(|e| e.config_hash.clone()).collect();
            stored.dedup();
            if note.entries.iter().any(|e| hashes.matches(&e.config_hash)) {
                Mismatch::Unreadable {
                    reason: "no entry of this config can be read".to_owned(),
                }
            } else {
                Mismatch::DifferentConfig { stored }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::DirStore;
    use crate::baseline::git::testing::{commit, init};
    use crate::baseline::note::testing::entry;

    fn hashes(h: &str) -> ConfigHashes {
        ConfigHashes {
            current: h.to_owned(),
            legacy: format!("legacy-{h}"),
            earlier_steps: None,
        }
    }

    /// c0 … c6: c6 nothing, c5 and c4 match, c3 another machine, c2 another config, c1 nothing,
    /// c0 match. The anchor is c5 (the newest with a result of the config).
    #[test]
    fn the_walk_matches_every_commit_against_the_newest_results_key() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let mut c = vec![init(p)];
        for i in 1..7 {
            let message = if i == 4 {
                "slower\n\nLoadgate-Accept: p99 +20%\nLoadgate-Reason: a check".to_owned()
            } else {
                format!("c{i}")
            };
            c.push(commit(p, &message));
        }
        let store = DirStore::new(&p.join("store"));
        for (i, cpu, config) in [(5, "A", "h"), (4, "A", "h"), (3, "B", "h"), (2, "A", "x")] {
            store.save(&entry(&c[i], cpu, config, 0)).unwrap();
        }
        store.save(&entry(&c[0], "A", "h", 0)).unwrap();
        let h = hashes("h");
        let request = WalkRequest {
            rev: "HEAD",
            since: None,
            limit: 50,
            config_hashes: &h,
        };
        let walk = walk_history(p, &store, &request).unwrap();
        assert_eq!(walk.head, c[6]);
        assert!(!walk.limited);
        assert_eq!(walk.anchor.as_ref().unwrap().commit, c[5]);
        let order: Vec<&str> = walk
            .commits
            .iter()
            .map(|w| w.trailers.commit.as_str())
            .collect();
        assert_eq!(order, c.iter().map(String::as_str).collect::<Vec<_>>());
        let kinds: Vec<&str> = walk
            .commits
            .iter()
            .map(|w| match &w.entry {
                Ok(_) => "match",
                Err(Mismatch::NoBaseline) => "none",
                Err(Mismatch::DifferentConfig { .. }) => "config",
                Err(Mismatch::DifferentEnvironment { .. }) => "environment",
                Err(_) => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "match",
                "none",
                "config",
                "environment",
                "match",
                "match",
                "none"
            ]
        );
        assert_eq!(walk.commits[4].trailers.accepts, ["p99 +20%"]);

        // --since c3 walks c3 … c6; the limit cuts the walk and says so.
        let since = WalkRequest {
            since: Some(&c[3]),
            ..request.clone()
        };
        let walk = walk_history(p, &store, &since).unwrap();
        assert_eq!(walk.commits.len(), 4);
        assert_eq!(walk.since.as_ref().unwrap().1, c[3]);
        let limited = WalkRequest {
            limit: 3,
            ..request.clone()
        };
        let walk = walk_history(p, &store, &limited).unwrap();
        assert_eq!(walk.commits.len(), 3);
        assert!(walk.limited);

        // A --since outside the walk, or a revision that does not exist, is an error.
        let outside = WalkRequest {
            since: Some(&c[0]),
            limit: 3,
            ..request.clone()
        };
        let err = walk_history(p, &store, &outside).unwrap_err();
        assert!(
            matches!(err, BaselineError::NotAnAncestor { .. }),
            "{err:?}"
        );
        let unknown = WalkRequest {
            since: Some("v9.9"),
            ..request.clone()
        };
        let err = walk_history(p, &store, &unknown).unwrap_err();
        assert!(
            matches!(err, BaselineError::UnknownRevision { .. }),
            "{err:?}"
        );

        // No result of the config: no anchor, and every commit says why.
        let other = hashes("y");
        let walk = walk_history(
            p,
            &store,
            &WalkRequest {
                config_hashes: &other,
                ..request
            },
        )
        .unwrap();
        assert!(walk.anchor.is_none());
        assert!(matches!(
            walk.commits[5].entry,
            Err(Mismatch::DifferentConfig { .. })
        ));
        assert_eq!(walk.commits[6].entry, Err(Mismatch::NoBaseline));
    }
}
