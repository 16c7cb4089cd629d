//! Finding the baseline of a change: the merge-base of HEAD and the base branch, then its
//! first-parent ancestors up to a limit, taking the first stored result with the same config
//! hash, schedule and environment fingerprint. Every candidate passed over is explained, so a
//! missing baseline is never a mystery and a mismatched one is never silently compared.
//!
//! The walk goes on past the baseline to collect the *history*: up to [`DEFAULT_HISTORY_LIMIT`]
//! more matching results of older ancestors (within the search limit), from which the comparison
//! estimates its run-to-run noise; the ones passed over are counted by reason.

use super::error::{BaselineError, short};
use super::fingerprint::Fingerprint;
use super::git::Git;
use super::note::{StoredEntry, newer_format};
use super::store::Store;
use super::trailers::first_parent_trailers;
use crate::result::{ConfigHashes, RESULT_FORMAT_VERSION, SkippedAncestors};
use std::fmt;
use std::path::Path;

/// How many first-parent ancestors of the merge-base are searched by default (the merge-base
/// included).
pub const DEFAULT_SEARCH_LIMIT: usize = 50;

/// How many stored results of older ancestors are collected past the baseline for the noise
/// history (the baseline itself not counted). Twenty runs give the t quantile 19 degrees of
/// freedom, within 10% of the normal's at the Holm levels; more would reach further back in time,
/// where the service is less likely to be the same.
pub const DEFAULT_HISTORY_LIMIT: usize = 20;

/// The stored results of the baseline's older first-parent ancestors with the same config hash,
/// schedule and environment, for the comparison's noise figure, and what was passed over.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// The matching entries past the baseline, nearest first (at most [`DEFAULT_HISTORY_LIMIT`]).
    pub entries: Vec<StoredEntry>,
    /// The ancestors with a stored result that did not match, by reason, over the whole walk
    /// (before and after the baseline); commits with nothing stored are not counted.
    pub skipped: SkippedAncestors,
    /// Where the history stops at an accepted change (issue 12: runs on either side of an
    /// intended change are not pooled into one noise figure); `None` when none was met.
    pub accepted_step: Option<AcceptedStep>,
}

/// The nearest first-parent commit, from the baseline back, whose message carries a
/// `Loadgate-Accept` trailer (or that an `[[accept]]` entry of the config names): its own stored
/// run belongs to the new level and is kept; older ones are not pooled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcceptedStep {
    /// The accepting commit (full id).
    pub commit: String,
    /// The matching stored results of older commits left out of the history because of it
    /// (within the search and history limits).
    pub excluded: u32,
}

impl AcceptedStep {
    /// The sentence the verdict shows, like the change-point exclusion's.
    pub fn describe(&self) -> String {
        format!(
            "run-to-run noise: {} older stored run(s) lie before the accepted change at {} and \
             were not pooled into the noise figure",
            self.excluded,
            short(&self.commit)
        )
    }
}

impl History {
    fn count(&mut self, mismatch: &Mismatch) {
        let s = &mut self.skipped;
        match mismatch {
            Mismatch::NoBaseline => {}
            Mismatch::DifferentConfig { .. } | Mismatch::DifferentSchedule => {
                s.different_config += 1;
            }
            Mismatch::DifferentEnvironment { .. } => s.different_environment += 1,
            Mismatch::NewerFormat { .. } | Mismatch::Unreadable { .. } => s.unreadable += 1,
        }
    }
}

/// What a baseline must match to be compared with this run.
#[derive(Clone, Debug, PartialEq)]
pub struct Wanted {
    /// This run's config hashes: a baseline of the same target, workload, generator, phases,
    /// abort limits and SLO carries one of them (the legacy one when it was stored before `[gate]`
    /// was left out of the hash).
    pub config_hashes: ConfigHashes,
    /// This run's environment.
    pub fingerprint: Fingerprint,
    /// When set, the baseline must have run a phase with this schedule hash (e.g. the first ramp
    /// step, which the config fixes before anything runs).
    pub schedule_hash: Option<String>,
    /// The commits (full or abbreviated ids) the config's `[[accept]]` entries name: like a
    /// commit with a `Loadgate-Accept` trailer, each stops the noise history.
    pub accepted_commits: Vec<String>,
}

impl Wanted {
    /// Whether `commit`, with these `Loadgate-Accept` trailer values, is an accepted change.
    fn accepts(&self, commit: &str, trailers: &[String]) -> bool {
        !trailers.is_empty()
            || self
                .accepted_commits
                .iter()
                .any(|c| !c.is_empty() && commit.starts_with(c.as_str()))
    }
}

/// Why a candidate commit's baseline was not used.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// Nothing is stored for the commit.
    NoBaseline,
    /// Results are stored, but none with this run's config hash.
    DifferentConfig {
        /// The config hashes that are stored.
        stored: Vec<String>,
    },
    /// The config matches but the baseline followed a different schedule.
    DifferentSchedule,
    /// The config matches but the environment differs.
    DifferentEnvironment {
        /// What differs, for the closest stored environment.
        differences: Vec<String>,
    },
    /// The matching result was written in a newer result format than this build reads.
    NewerFormat {
        /// Its format version.
        found: u64,
    },
    /// The matching result is not in a shape this build reads.
    Unreadable {
        /// Why.
        reason: String,
    },
}

/// One commit searched, and why its baseline was not used.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The commit (full id).
    pub commit: String,
    /// First-parent steps from the merge-base (0 is the merge-base).
    pub distance: usize,
    /// Why it was passed over.
    pub mismatch: Mismatch,
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = short(&self.commit);
        match &self.mismatch {
            Mismatch::NoBaseline => write!(f, "no baseline stored for {at}"),
            Mismatch::DifferentConfig { stored } => write!(
                f,
                "baseline at {at} was taken with a different workload (config hash {})",
                stored
                    .iter()
                    .map(|h| h.get(..12).unwrap_or(h))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Mismatch::DifferentSchedule => write!(
                f,
                "baseline at {at} followed a different schedule with the same configuration"
            ),
            Mismatch::DifferentEnvironment { differences } => write!(
                f,
                "baseline at {at} was taken in a different environment: {}",
                differences.join("; ")
            ),
            Mismatch::NewerFormat { found } => write!(
                f,
                "baseline at {at} was written in result format {found}, newer than {RESULT_FORMAT_VERSION}"
            ),
            Mismatch::Unreadable { reason } => {
                write!(f, "baseline at {at} cannot be read: {reason}")
            }
        }
    }
}

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    /// A matching baseline.
    Found {
        /// The merge-base of HEAD and the base reference.
        merge_base: String,
        /// The commit the baseline belongs to.
        commit: String,
        /// First-parent steps from the merge-base.
        distance: usize,
        /// The stored result.
        entry: Box<StoredEntry>,
        /// The closer commits that were passed over, with the reason.
        skipped: Vec<Candidate>,
        /// The older matching results past the baseline, for the noise figure.
        history: History,
    },
    /// No commit within the limit has a matching baseline.
    NotFound {
        /// The merge-base of HEAD and the base reference.
        merge_base: String,
        /// Every commit searched, with the reason it was passed over.
        searched: Vec<Candidate>,
    },
}

/// The full id of the commit `rev` names in `repo`.
pub fn resolve_commit(repo: &Path, rev: &str) -> Result<String, BaselineError> {
    Git::new(repo)
        .commit_of(rev)?
        .ok_or_else(|| BaselineError::UnknownRevision {
            rev: rev.to_owned(),
            repo: repo.to_path_buf(),
        })
}

/// The base reference when none is given: `origin/HEAD` when it exists, else `main`.
pub fn default_base_ref(repo: &Path) -> Result<String, BaselineError> {
    let git = Git::new(repo);
    for candidate in ["origin/HEAD", "main"] {
        if git.commit_of(candidate)?.is_some() {
            return Ok(candidate.to_owned());
        }
    }
    Err(BaselineError::NoBaseRef {
        repo: repo.to_path_buf(),
    })
}

/// The merge-base of `head` and `base_ref` in `repo`.
pub fn merge_base(repo: &Path, head: &str, base_ref: &str) -> Result<String, BaselineError> {
    let git = Git::new(repo);
    for rev in [head, base_ref] {
        if git.commit_of(rev)?.is_none() {
            return Err(BaselineError::UnknownRevision {
                rev: rev.to_owned(),
                repo: repo.to_path_buf(),
            });
        }
    }
    let out = git.output(&["merge-base", head, base_ref], &[], None)?;
    match (out.success, out.code) {
        (true, _) => Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned()),
        // Exit status 1 without output: the histories are unrelated.
        (false, Some(1)) if out.stderr.is_empty() => Err(BaselineError::NoMergeBase {
            head: head.to_owned(),
            base_ref: base_ref.to_owned(),
            repo: repo.to_path_buf(),
        }),
        _ => Err(git.failed(&["merge-base", head, base_ref], &out)),
    }
}

/// Searches `store` for the baseline of `head`: the merge-base of `head` and `base_ref` (the
/// [`default_base_ref`] when `None`), then its first-parent ancestors, `limit` commits in all.
pub fn lookup(
    repo: &Path,
    head: &str,
    base_ref: Option<&str>,
    limit: usize,
    store: &dyn Store,
    wanted: &Wanted,
) -> Result<Lookup, BaselineError> {
    let base_ref = match base_ref {
        Some(r) => r.to_owned(),
        None => default_base_ref(repo)?,
    };
    let merge_base = merge_base(repo, head, &base_ref)?;
    let walk = first_parent_trailers(repo, &merge_base, limit)?;
    let commits: Vec<&str> = walk.iter().map(|c| c.commit.as_str()).collect();
    let mut searched: Vec<Candidate> = Vec::new();
    for (distance, commit) in commits.iter().copied().enumerate() {
        match match_candidate(store, commit, wanted)? {
            Ok(entry) => {
                let mut history = History::default();
                for c in &searched {
                    history.count(&c.mismatch);
                }
                // The history stops at the nearest accepted change from the baseline back: that
                // commit's run belongs to the new level, older ones to the old one.
                let mut step =
                    wanted
                        .accepts(commit, &walk[distance].accepts)
                        .then(|| AcceptedStep {
                            commit: commit.to_owned(),
                            excluded: 0,
                        });
                for older in &walk[distance + 1..] {
                    let collected =
                        history.entries.len() + step.as_ref().map_or(0, |s| s.excluded as usize);
                    if collected >= DEFAULT_HISTORY_LIMIT {
                        break;
                    }
                    match (match_candidate(store, &older.commit, wanted)?, &mut step) {
                        (Ok(_), Some(step)) => step.excluded += 1,
                        (Ok(e), None) => history.entries.push(e),
                        (Err(mismatch), _) => history.count(&mismatch),
                    }
                    if step.is_none() && wanted.accepts(&older.commit, &older.accepts) {
                        step = Some(AcceptedStep {
                            commit: older.commit.clone(),
                            excluded: 0,
                        });
                    }
                }
                history.accepted_step = step;
                return Ok(Lookup::Found {
                    merge_base,
                    commit: commit.to_owned(),
                    distance,
                    entry: Box::new(entry),
                    skipped: searched,
                    history,
                });
            }
            Err(mismatch) => searched.push(Candidate {
                commit: commit.to_owned(),
                distance,
                mismatch,
            }),
        }
    }
    Ok(Lookup::NotFound {
        merge_base,
        searched,
    })
}

/// The matching entry stored for `commit`, or why there is none.
pub(super) fn match_candidate(
    store: &dyn Store,
    commit: &str,
    wanted: &Wanted,
) -> Result<Result<StoredEntry, Mismatch>, BaselineError> {
    let Some(note) = store.load(commit)? else {
        return Ok(Err(Mismatch::NoBaseline));
    };
    let same_config: Vec<&StoredEntry> = note
        .entries
        .iter()
        .filter(|e| wanted.config_hashes.matches(&e.config_hash))
        .collect();
    if same_config.is_empty() {
        let mut stored: Vec<String> = note.entries.iter().map(|e| e.config_hash.clone()).collect();
        stored.dedup();
        return Ok(Err(Mismatch::DifferentConfig { stored }));
    }
    let same_schedule: Vec<&StoredEntry> = same_config
        .into_iter()
        .filter(|e| {
            wanted
                .schedule_hash
                .as_ref()
                .is_none_or(|h| e.schedule_hashes.contains(h))
        })
        .collect();
    if same_schedule.is_empty() {
        return Ok(Err(Mismatch::DifferentSchedule));
    }
    // Of equal environments (one stored under the legacy config hash, one under the current),
    // the last saved.
    let Some(matching) = same_schedule
        .iter()
        .filter(|e| e.fingerprint == wanted.fingerprint)
        .max_by_key(|e| e.saved_at_unix_ms)
    else {
        let closest = same_schedule
            .iter()
            .min_by_key(|e| e.fingerprint.differences(&wanted.fingerprint).len())
            .expect("not empty");
        return Ok(Err(Mismatch::DifferentEnvironment {
            differences: closest.fingerprint.differences(&wanted.fingerprint),
        }));
    };
    if let Some(found) = newer_format(&matching.result) {
        return Ok(Err(Mismatch::NewerFormat { found }));
    }
    if let Err(e) = matching.result.get() {
        return Ok(Err(Mismatch::Unreadable {
            reason: e.to_string(),
        }));
    }
    Ok(Ok((*matching).clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::DirStore;
    use crate::baseline::git::testing::{commit, git, init};
    use crate::baseline::note::StoredResult;
    use crate::baseline::note::testing::{entry, result};
    use crate::baseline::notes::NotesStore;

    fn save(store: &dyn Store, commit: &str, cpu: &str, config: &str) {
        store.save(&entry(commit, cpu, config, 0)).unwrap();
    }

    /// What a run on CPU `cpu` wants, with `config` as its current config hash (its legacy one
    /// is `legacy-` + `config`).
    fn wanted(cpu: &str, config: &str) -> Wanted {
        let r = result("0123456789abcdef0123456789abcdef01234567", cpu, config);
        Wanted {
            config_hashes: ConfigHashes {
                current: config.to_owned(),
                legacy: format!("legacy-{config}"),
                earlier_steps: None,
            },
            fingerprint: Fingerprint::of_result(&r),
            schedule_hash: Some("s1".to_owned()),
            accepted_commits: Vec::new(),
        }
    }

    /// main: m0 - m1 - m2 - m3(after the branch), feature: from m2, f1 - f2.
    struct History {
        dir: tempfile::TempDir,
        m: Vec<String>,
        f2: String,
    }

    fn history() -> History {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let mut m = vec![init(p)];
        m.push(commit(p, "m1"));
        m.push(commit(p, "m2"));
        git(p, &["checkout", "-q", "-b", "feature"]);
        commit(p, "f1");
        let f2 = commit(p, "f2");
        git(p, &["checkout", "-q", "main"]);
        m.push(commit(p, "m3"));
        git(p, &["checkout", "-q", "feature"]);
        History { dir, m, f2 }
    }

    #[test]
    fn lookup_goes_through_the_merge_base_and_explains_what_it_skipped() {
        let h = history();
        let store = NotesStore::new(h.dir.path(), "refs/notes/loadgate");
        // The merge-base m2 has a result of another workload, m1 one of another machine, m0 a match.
        save(&store, &h.m[2], "A", "other-config");
        save(&store, &h.m[1], "B", "h");
        save(&store, &h.m[0], "A", "h");
        // A baseline for m3 (after the branch point) and for the feature's own commit are ignored.
        save(&store, &h.m[3], "A", "h");
        save(&store, &h.f2, "A", "h");
        let found = lookup(
            h.dir.path(),
            "HEAD",
            Some("main"),
            10,
            &store,
            &wanted("A", "h"),
        )
        .unwrap();
        let Lookup::Found {
            merge_base,
            commit,
            distance,
            entry,
            skipped,
            history,
        } = found
        else {
            panic!("{found:?}")
        };
        assert_eq!(merge_base, h.m[2]);
        assert_eq!(commit, h.m[0]);
        assert_eq!(distance, 2);
        assert_eq!(entry.commit, h.m[0]);
        let why: Vec<String> = skipped
            .iter()
            .map(|c| c.to_string().replace(short(&c.commit), "<c>"))
            .collect();
        insta::assert_snapshot!(why.join("\n"), @r"
        baseline at <c> was taken with a different workload (config hash other-config)
        baseline at <c> was taken in a different environment: CPU model `B` (baseline) vs `A` (this run)
        ");
        // m0 is the oldest commit: no history past it; the two passed over are counted.
        assert!(history.entries.is_empty());
        assert_eq!(
            history.skipped,
            SkippedAncestors {
                different_config: 1,
                different_environment: 1,
                unreadable: 0
            }
        );
    }

    /// The walk goes on past the baseline: older matching results become the noise history,
    /// nearest first, and the others are counted by reason (issue 12, "bad input").
    #[test]
    fn the_history_collects_older_matches_and_counts_what_it_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let mut commits = vec![init(p)];
        for i in 1..8 {
            commits.push(commit(p, &format!("c{i}")));
        }
        for store in [
            Box::new(NotesStore::new(p, "refs/notes/loadgate")) as Box<dyn Store>,
            Box::new(DirStore::new(&p.join("store"))),
        ] {
            // Newest first: c7 baseline, c6 other machine, c5 match, c4 nothing, c3 other config,
            // c2 match, c1 unreadable, c0 match.
            save(store.as_ref(), &commits[7], "A", "h");
            save(store.as_ref(), &commits[6], "B", "h");
            save(store.as_ref(), &commits[5], "A", "h");
            save(store.as_ref(), &commits[3], "A", "other");
            save(store.as_ref(), &commits[2], "A", "h");
            let mut unreadable = entry(&commits[1], "A", "h", 0);
            let mut raw = unreadable.result.raw().clone();
            raw["phases"] = "not phases".into();
            unreadable.result = StoredResult::from_value(raw);
            store.save(&unreadable).unwrap();
            save(store.as_ref(), &commits[0], "A", "h");
            let found = lookup(
                p,
                "HEAD",
                Some("HEAD"),
                50,
                store.as_ref(),
                &wanted("A", "h"),
            )
            .unwrap();
            let Lookup::Found {
                commit, history, ..
            } = found
            else {
                panic!("{found:?}")
            };
            assert_eq!(commit, commits[7]);
            let older: Vec<&str> = history.entries.iter().map(|e| e.commit.as_str()).collect();
            assert_eq!(older, [&commits[5], &commits[2], &commits[0]]);
            assert_eq!(
                history.skipped,
                SkippedAncestors {
                    different_config: 1,
                    different_environment: 1,
                    unreadable: 1
                }
            );
        }
    }

    /// Issue 12, "bad input": stored runs on either side of an accepted change are not pooled.
    /// The history stops at the nearest first-parent commit carrying a `Loadgate-Accept`
    /// trailer (its own run is kept), or named by an `[[accept]]` entry of the config.
    #[test]
    fn the_history_stops_at_the_nearest_accepted_change() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let mut commits = vec![init(p)];
        for i in 1..7 {
            let message = if i == 3 {
                "slower on purpose\n\nLoadgate-Accept: p50 +30%\nLoadgate-Reason: a new check"
                    .to_owned()
            } else {
                format!("c{i}")
            };
            commits.push(commit(p, &message));
        }
        let store = NotesStore::new(p, "refs/notes/loadgate");
        for c in &commits {
            save(&store, c, "A", "h");
        }
        let history_of =
            |wanted: &Wanted| match lookup(p, "HEAD", Some("main"), 50, &store, wanted).unwrap() {
                Lookup::Found {
                    commit, history, ..
                } => (commit, history),
                other => panic!("{other:?}"),
            };
        // c6 is the baseline; c5, c4 and c3 (the accepting commit, the new level) are pooled;
        // c2, c1, c0 lie before the step.
        let (baseline, history) = history_of(&wanted("A", "h"));
        assert_eq!(baseline, commits[6]);
        let pooled: Vec<&str> = history.entries.iter().map(|e| e.commit.as_str()).collect();
        assert_eq!(pooled, [&commits[5], &commits[4], &commits[3]]);
        let step = history.accepted_step.expect("the step is reported");
        assert_eq!(step.commit, commits[3]);
        assert_eq!(step.excluded, 3);
        assert_eq!(
            step.describe(),
            format!(
                "run-to-run noise: 3 older stored run(s) lie before the accepted change at {} \
                 and were not pooled into the noise figure",
                short(&commits[3])
            )
        );
        // An `[[accept]]` entry naming c5 (abbreviated) stops it nearer.
        let mut named = wanted("A", "h");
        named.accepted_commits = vec![commits[5][..7].to_owned()];
        let (_, history) = history_of(&named);
        assert_eq!(history.entries.len(), 1);
        assert_eq!(history.accepted_step.unwrap().excluded, 5);
        // A baseline that is itself the accepting commit pools nothing older.
        let step_base = lookup(
            p,
            &commits[3],
            Some(&commits[3]),
            50,
            &store,
            &wanted("A", "h"),
        )
        .unwrap();
        let Lookup::Found { history, .. } = step_base else {
            panic!("{step_base:?}")
        };
        assert!(history.entries.is_empty());
        assert_eq!(history.accepted_step.unwrap().excluded, 3);
    }

    #[test]
    fn the_limit_bounds_the_search_and_every_candidate_is_explained() {
        let h = history();
        let store = DirStore::new(&h.dir.path().join("store"));
        save(&store, &h.m[0], "A", "h");
        let found = lookup(
            h.dir.path(),
            "HEAD",
            Some("main"),
            2,
            &store,
            &wanted("A", "h"),
        )
        .unwrap();
        let Lookup::NotFound {
            merge_base,
            searched,
        } = found
        else {
            panic!("{found:?}")
        };
        assert_eq!(merge_base, h.m[2]);
        assert_eq!(
            searched
                .iter()
                .map(|c| (c.commit.as_str(), c.distance))
                .collect::<Vec<_>>(),
            [(h.m[2].as_str(), 0), (h.m[1].as_str(), 1)]
        );
        assert!(searched.iter().all(|c| c.mismatch == Mismatch::NoBaseline));
        assert_eq!(
            searched[0].to_string(),
            format!("no baseline stored for {}", short(&h.m[2]))
        );
    }

    #[test]
    fn a_different_schedule_is_explained() {
        let h = history();
        let store = DirStore::new(&h.dir.path().join("store"));
        save(&store, &h.m[2], "A", "h");
        let mut w = wanted("A", "h");
        w.schedule_hash = Some("s2".to_owned());
        let found = lookup(h.dir.path(), "HEAD", Some("main"), 1, &store, &w).unwrap();
        let Lookup::NotFound { searched, .. } = found else {
            panic!("{found:?}")
        };
        assert_eq!(searched[0].mismatch, Mismatch::DifferentSchedule);
    }

    #[test]
    fn a_baseline_stored_under_the_legacy_config_hash_is_found() {
        let h = history();
        let store = DirStore::new(&h.dir.path().join("store"));
        save(&store, &h.m[2], "A", "legacy-h");
        let found = lookup(
            h.dir.path(),
            "HEAD",
            Some("main"),
            1,
            &store,
            &wanted("A", "h"),
        )
        .unwrap();
        let Lookup::Found { entry, .. } = found else {
            panic!("{found:?}")
        };
        assert_eq!(entry.config_hash, "legacy-h");
        // Saved again under the current hash, the newer entry is the one used.
        store.save(&entry_at(&h.m[2], "h", 5)).unwrap();
        let found = lookup(
            h.dir.path(),
            "HEAD",
            Some("main"),
            1,
            &store,
            &wanted("A", "h"),
        )
        .unwrap();
        let Lookup::Found { entry, .. } = found else {
            panic!("{found:?}")
        };
        assert_eq!(entry.config_hash, "h");
        // The other way round: a run whose hashes are neither passes over it.
        let found = lookup(
            h.dir.path(),
            "HEAD",
            Some("main"),
            1,
            &store,
            &wanted("A", "x"),
        )
        .unwrap();
        let Lookup::NotFound { searched, .. } = found else {
            panic!("{found:?}")
        };
        assert!(matches!(
            searched[0].mismatch,
            Mismatch::DifferentConfig { .. }
        ));
    }

    /// `qualify --save`: A/A runs kept with the baseline travel with it through both stores and
    /// are never the baseline themselves; runs of another commit or machine are refused.
    #[test]
    fn noise_runs_are_kept_with_their_baseline_in_both_stores() {
        let h = history();
        for store in [
            Box::new(NotesStore::new(h.dir.path(), "refs/notes/loadgate")) as Box<dyn Store>,
            Box::new(DirStore::new(&h.dir.path().join("store"))),
        ] {
            let mut baseline = entry(&h.m[2], "A", "h", 7);
            let aa = |commit: &str, cpu: &str| StoredResult::new(&result(commit, cpu, "h"));
            let refused = baseline.keep_noise_runs(
                vec![
                    aa(&h.m[2], "A"),
                    aa(&h.m[2], "A"),
                    aa(&h.m[1], "A"),
                    aa(&h.m[2], "B"),
                ],
                false,
            );
            assert_eq!(baseline.noise_runs.len(), 2);
            let refused: Vec<String> = refused.iter().map(|r| r.replace(&h.m[1], "<c>")).collect();
            assert_eq!(
                refused,
                [
                    "run 3: it measured commit <c>",
                    "run 4: it ran in a different environment: CPU model `B` (baseline) vs `A` (this run)"
                ]
            );
            store.save(&baseline).unwrap();
            let found = lookup(
                h.dir.path(),
                "HEAD",
                Some("main"),
                5,
                store.as_ref(),
                &wanted("A", "h"),
            )
            .unwrap();
            let Lookup::Found { entry, .. } = found else {
                panic!("{found:?}")
            };
            assert_eq!(entry.saved_at_unix_ms, 7);
            assert_eq!(entry.result, baseline.result);
            assert_eq!(entry.noise_runs, baseline.noise_runs);
            // An entry without noise runs is written as before (no `noise_runs` key).
            let plain = entry_at(&h.m[1], "h", 0);
            let json = serde_json::to_value(&plain).unwrap();
            assert!(json.get("noise_runs").is_none());
        }
    }

    fn entry_at(commit: &str, config: &str, saved_at: u64) -> StoredEntry {
        entry(commit, "A", config, saved_at)
    }

    /// A stored entry this build cannot read is passed over with the reason, not a failure.
    #[test]
    fn an_unreadable_or_newer_stored_result_is_skipped_with_why() {
        let h = history();
        let store = DirStore::new(&h.dir.path().join("store"));
        let mut unreadable = entry(&h.m[2], "A", "h", 0);
        let mut raw = unreadable.result.raw().clone();
        raw["phases"] = "not phases".into();
        unreadable.result = StoredResult::from_value(raw.clone());
        store.save(&unreadable).unwrap();
        let mut newer = entry(&h.m[1], "A", "h", 0);
        raw["format_version"] = 3.into();
        newer.result = StoredResult::from_value(raw);
        store.save(&newer).unwrap();
        save(&store, &h.m[0], "A", "h");
        let found = lookup(
            h.dir.path(),
            "HEAD",
            Some("main"),
            3,
            &store,
            &wanted("A", "h"),
        )
        .unwrap();
        let Lookup::Found {
            skipped, distance, ..
        } = found
        else {
            panic!("{found:?}")
        };
        assert_eq!(distance, 2);
        let why: Vec<String> = skipped
            .iter()
            .map(|c| c.to_string().replace(short(&c.commit), "<c>"))
            .collect();
        insta::assert_snapshot!(why.join("\n"), @r#"
        baseline at <c> cannot be read: the result is not a readable run result: invalid type: string "not phases", expected a sequence
        baseline at <c> was written in result format 3, newer than 1
        "#);
    }

    #[test]
    fn the_default_base_ref_is_origin_head_else_main() {
        let h = history();
        assert_eq!(default_base_ref(h.dir.path()).unwrap(), "main");
        git(
            h.dir.path(),
            &["update-ref", "refs/remotes/origin/main", &h.m[1]],
        );
        git(
            h.dir.path(),
            &[
                "symbolic-ref",
                "refs/remotes/origin/HEAD",
                "refs/remotes/origin/main",
            ],
        );
        assert_eq!(default_base_ref(h.dir.path()).unwrap(), "origin/HEAD");
        let store = DirStore::new(&h.dir.path().join("store"));
        save(&store, &h.m[1], "A", "h");
        let found = lookup(h.dir.path(), "HEAD", None, 5, &store, &wanted("A", "h")).unwrap();
        assert!(
            matches!(found, Lookup::Found { distance: 0, .. }),
            "{found:?}"
        );
    }

    #[test]
    fn unknown_revisions_and_unrelated_histories_are_errors() {
        let h = history();
        let store = DirStore::new(&h.dir.path().join("store"));
        let w = wanted("A", "h");
        let err = lookup(h.dir.path(), "HEAD", Some("nope"), 5, &store, &w).unwrap_err();
        assert!(
            matches!(err, BaselineError::UnknownRevision { .. }),
            "{err:?}"
        );
        git(h.dir.path(), &["checkout", "-q", "--orphan", "lonely"]);
        commit(h.dir.path(), "unrelated");
        let err = lookup(h.dir.path(), "HEAD", Some("main"), 5, &store, &w).unwrap_err();
        assert!(matches!(err, BaselineError::NoMergeBase { .. }), "{err:?}");
        let empty = tempfile::tempdir().unwrap();
        git(empty.path(), &["init", "-q", "-b", "trunk"]);
        assert!(matches!(
            default_base_ref(empty.path()),
            Err(BaselineError::NoBaseRef { .. })
        ));
    }
}
