//! The stored baseline document: what one git note (or one file of a directory store) holds for
//! one commit — the results of that commit, one per environment and configuration.
//!
//! ```json
//! { "format_version": 1, "tool": "cargo-loadgate",
//!   "entries": [ { "fingerprint_key": "…", "fingerprint": {…}, "config_hash": "…",
//!                  "schedule_hashes": ["…"], "saved_at_unix_ms": 0, "result": { RunResult } } ] }
//! ```
//!
//! Each entry's `result` is kept as JSON exactly as written, so a save by this version preserves
//! entries written by a newer one.

use super::error::BaselineError;
use super::fingerprint::Fingerprint;
use crate::result::RESULT_FORMAT_VERSION;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version of the stored document. Readers refuse versions newer than the one they know.
pub const NOTE_FORMAT_VERSION: u32 = 1;

/// The baselines stored for one commit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredNote {
    /// [`NOTE_FORMAT_VERSION`] when written.
    pub format_version: u32,
    /// `cargo-loadgate`, so a stray note is recognised as ours.
    pub tool: String,
    /// One entry per (environment, configuration), in the order first saved.
    pub entries: Vec<StoredEntry>,
}

/// One stored run result with the keys lookup matches on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredEntry {
    /// The commit the run measured (full id).
    pub commit: String,
    /// [`Fingerprint::key`] of `fingerprint`.
    pub fingerprint_key: String,
    /// Where the run happened.
    pub fingerprint: Fingerprint,
    /// The run's config hash.
    pub config_hash: String,
    /// The schedule hashes of the run's phases, in order.
    pub schedule_hashes: Vec<String>,
    /// When the entry was saved, in milliseconds since the Unix epoch.
    pub saved_at_unix_ms: u64,
    /// The run result as JSON, exactly as written.
    pub result: Value,
}

impl StoredEntry {
    /// Makes an entry from a run result in its JSON form, refusing what must not become a
    /// baseline: a result without a commit, from a dirty tree (unless `allow_dirty`), of an
    /// unfinished run, with an invalid phase, or of a newer format.
    pub fn from_result(
        result: &Value,
        allow_dirty: bool,
        saved_at_unix_ms: u64,
    ) -> Result<Self, BaselineError> {
        let not_savable = |reason: String| BaselineError::NotSavable { reason };
        let version = result["format_version"]
            .as_u64()
            .ok_or_else(|| not_savable("the result has no format_version".to_owned()))?;
        if version > u64::from(RESULT_FORMAT_VERSION) {
            return Err(not_savable(format!(
                "the result has format version {version}, newer than {RESULT_FORMAT_VERSION}"
            )));
        }
        let commit = result["git"]["commit"]
            .as_str()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| not_savable("the run was not measured in a git repository".to_owned()))?
            .to_owned();
        if result["git"]["dirty"].as_bool() != Some(false) && !allow_dirty {
            return Err(BaselineError::DirtyTree { commit });
        }
        match result["status"].as_str() {
            Some("complete") => {}
            other => {
                return Err(not_savable(format!(
                    "the run did not complete (status {})",
                    other.unwrap_or("missing")
                )));
            }
        }
        let config_hash = result["config_hash"]
            .as_str()
            .ok_or_else(|| not_savable("the result has no config_hash".to_owned()))?
            .to_owned();
        let phases = result["phases"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if phases.is_empty() {
            return Err(not_savable("the run measured no phase".to_owned()));
        }
        let mut schedule_hashes = Vec::new();
        for phase in phases {
            let name = phase["name"].as_str().unwrap_or("?");
            if phase["validity"]["reasons"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
            {
                return Err(not_savable(format!(
                    "phase `{name}` is invalid: the generator did not keep its schedule"
                )));
            }
            schedule_hashes.push(phase["schedule_hash"].as_str().unwrap_or("").to_owned());
        }
        let fingerprint = Fingerprint::from_result_json(result)?;
        Ok(Self {
            commit,
            fingerprint_key: fingerprint.key(),
            fingerprint,
            config_hash,
            schedule_hashes,
            saved_at_unix_ms,
            result: result.clone(),
        })
    }

    /// The format version of the stored result.
    pub fn result_format_version(&self) -> u64 {
        self.result["format_version"].as_u64().unwrap_or(0)
    }
}

impl StoredNote {
    /// An empty document.
    pub fn new() -> Self {
        Self {
            format_version: NOTE_FORMAT_VERSION,
            tool: env!("CARGO_PKG_NAME").to_owned(),
            entries: Vec::new(),
        }
    }

    /// Parses a stored document for `commit` read from `location`, refusing newer formats and
    /// anything that is not one of ours.
    pub fn parse(text: &[u8], commit: &str, location: &str) -> Result<Self, BaselineError> {
        let corrupt = |detail: String| BaselineError::Corrupt {
            commit: commit.to_owned(),
            location: location.to_owned(),
            detail,
        };
        let value: Value =
            serde_json::from_slice(text).map_err(|e| corrupt(format!("not JSON ({e})")))?;
        let version = value["format_version"]
            .as_u64()
            .ok_or_else(|| corrupt("no format_version".to_owned()))?;
        if version > u64::from(NOTE_FORMAT_VERSION) {
            return Err(BaselineError::NewerFormat {
                commit: commit.to_owned(),
                location: location.to_owned(),
                found: version,
                known: NOTE_FORMAT_VERSION,
            });
        }
        let note = Self::deserialize(&value).map_err(|e| corrupt(e.to_string()))?;
        if let Some(bad) = note.entries.iter().find(|e| e.commit != commit) {
            return Err(corrupt(format!(
                "it holds a result of commit {}",
                bad.commit
            )));
        }
        Ok(note)
    }

    /// The document as stored: pretty JSON with a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Adds `entry`, replacing the entry of the same environment and configuration if there is
    /// one. Entries of other environments are kept as they are.
    pub fn upsert(&mut self, entry: StoredEntry) {
        match self.entries.iter_mut().find(|e| {
            e.fingerprint_key == entry.fingerprint_key && e.config_hash == entry.config_hash
        }) {
            Some(slot) => *slot = entry,
            None => self.entries.push(entry),
        }
    }
}

impl Default for StoredNote {
    fn default() -> Self {
        Self::new()
    }
}

/// Test helpers: run results in their JSON form.
#[cfg(test)]
pub(crate) mod testing {
    use serde_json::{Value, json};

    /// A complete, clean result of `commit` on CPU `cpu` with config hash `config`.
    pub fn result(commit: &str, cpu: &str, config: &str) -> Value {
        json!({
            "format_version": 1,
            "tool": {"name": "cargo-loadgate", "version": "0.1.0"},
            "started_at_unix_ms": 0,
            "status": "complete",
            "git": {"commit": commit, "dirty": false},
            "profile": "default",
            "config_path": "loadgate.toml",
            "config_hash": config,
            "environment": {
                "cpu_model": cpu, "cores": 2, "kernel": "6.1", "engine_version": null,
                "generator_core": null, "target_cpuset": null
            },
            "target": null,
            "target_exit": null,
            "phases": [{"name": "soak", "schedule_hash": "s1", "validity": {"reasons": []}}],
            "resources": [],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::testing::result;
    use super::*;
    use test_case::test_case;

    const C: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn entries_of_other_environments_are_kept_and_the_same_one_replaced() {
        let mut note = StoredNote::new();
        note.upsert(StoredEntry::from_result(&result(C, "A", "h"), false, 1).unwrap());
        note.upsert(StoredEntry::from_result(&result(C, "B", "h"), false, 2).unwrap());
        note.upsert(StoredEntry::from_result(&result(C, "A", "h"), false, 3).unwrap());
        assert_eq!(note.entries.len(), 2);
        assert_eq!(note.entries[0].saved_at_unix_ms, 3);
        let back = StoredNote::parse(&note.to_bytes(), C, "test").unwrap();
        assert_eq!(back, note);
    }

    #[test_case(|r: &mut Value| r["git"]["dirty"] = true.into(), "dirty work tree"; "dirty")]
    #[test_case(|r: &mut Value| r["git"] = Value::Null, "not measured in a git repository"; "no git")]
    #[test_case(|r: &mut Value| r["status"] = "running".into(), "did not complete (status running)"; "running")]
    #[test_case(|r: &mut Value| r["format_version"] = 9.into(), "format version 9"; "newer")]
    #[test_case(|r: &mut Value| r["phases"] = serde_json::json!([]), "no phase"; "no phase")]
    #[test_case(|r: &mut Value| r["phases"][0]["validity"]["reasons"] = serde_json::json!([{"reason": "lag"}]), "phase `soak` is invalid"; "invalid")]
    fn what_must_not_become_a_baseline_is_refused(spoil: fn(&mut Value), message: &str) {
        let mut r = result(C, "A", "h");
        spoil(&mut r);
        let err = StoredEntry::from_result(&r, false, 0).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }

    #[test]
    fn a_dirty_tree_is_allowed_when_asked() {
        let mut r = result(C, "A", "h");
        r["git"]["dirty"] = true.into();
        assert!(StoredEntry::from_result(&r, true, 0).is_ok());
    }

    #[test_case(b"not json", "not JSON"; "garbage")]
    #[test_case(b"{\"entries\": []}", "no format_version"; "no version")]
    #[test_case(b"{\"format_version\": 1, \"entries\": 3}", "invalid type"; "wrong shape")]
    fn corrupt_documents_are_refused(text: &[u8], detail: &str) {
        let err = StoredNote::parse(text, C, "refs/notes/loadgate").unwrap_err();
        assert!(matches!(err, BaselineError::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains(detail), "{err}");
    }

    #[test]
    fn a_newer_document_is_refused_with_its_version() {
        let err =
            StoredNote::parse(b"{\"format_version\": 2}", C, "refs/notes/loadgate").unwrap_err();
        insta::assert_snapshot!(
            format!("{err}\nhint: {}", err.hint().unwrap()),
            @r"
        baseline for commit 0123456 in refs/notes/loadgate has format version 2, newer than 1, the newest this cargo-loadgate reads
        hint: upgrade cargo-loadgate to read or extend this baseline
        "
        );
    }
}
