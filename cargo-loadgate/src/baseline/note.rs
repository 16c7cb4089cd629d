//! The stored baseline document: what one git note (or one file of a directory store) holds for
//! one commit — the results of that commit, one per environment and configuration.
//!
//! ```json
//! { "format_version": 1, "tool": "cargo-loadgate",
//!   "entries": [ { "fingerprint_key": "…", "fingerprint": {…}, "config_hash": "…",
//!                  "schedule_hashes": ["…"], "saved_at_unix_ms": 0, "result": { RunResult },
//!                  "noise_runs": [ { RunResult }, … ] } ] }
//! ```
//!
//! Each entry's `result` is kept as JSON exactly as written, so a save by this version preserves
//! entries written by a newer one, and is read typed beside it ([`StoredResult::get`]): an entry
//! this version cannot read is passed over with the reason, never a panic.

use super::error::BaselineError;
use super::fingerprint::Fingerprint;
use crate::result::{RESULT_FORMAT_VERSION, ReadError, RunResult, RunStatus, result_from_value};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::sync::Arc;

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
    /// The run result.
    pub result: StoredResult,
    /// Further runs of the same commit, config and environment kept as noise samples (the A/A
    /// runs of `qualify --save`): a comparison against this baseline estimates its run-to-run
    /// noise from them. Never a baseline themselves. Absent in entries written before them;
    /// a version that does not know them reads the entry and ignores them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise_runs: Vec<StoredResult>,
}

/// A stored run result: the JSON exactly as written (what a save writes back), and the typed
/// result read from it, or why this version cannot read it.
#[derive(Clone, Debug)]
pub struct StoredResult {
    raw: Value,
    read: Result<Box<RunResult>, Arc<ReadError>>,
}

impl StoredResult {
    /// The stored form of `result`.
    pub fn new(result: &RunResult) -> Self {
        Self {
            // Serializing our own result cannot fail (no non-string map keys).
            raw: serde_json::to_value(result).unwrap_or(Value::Null),
            read: Ok(Box::new(result.clone())),
        }
    }

    /// A result as stored, read typed.
    pub fn from_value(raw: Value) -> Self {
        let read = result_from_value(&raw).map(Box::new).map_err(Arc::new);
        Self { raw, read }
    }

    /// The typed result, or why it cannot be read (a newer format, a shape this version does not
    /// know).
    pub fn get(&self) -> Result<&RunResult, &ReadError> {
        self.read.as_deref().map_err(|e| &**e)
    }

    /// The JSON exactly as stored.
    pub fn raw(&self) -> &Value {
        &self.raw
    }
}

impl PartialEq for StoredResult {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl Serialize for StoredResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StoredResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from_value)
    }
}

/// The format version of a stored result this version cannot read because it is newer, if so.
pub(crate) fn newer_format(result: &StoredResult) -> Option<u64> {
    match result.get() {
        Ok(r) if r.format_version > RESULT_FORMAT_VERSION => Some(u64::from(r.format_version)),
        Err(ReadError::NewerFormat { found, .. }) => Some(*found),
        _ => None,
    }
}

impl StoredEntry {
    /// Makes an entry from a run result, refusing what must not become a baseline: a result
    /// without a commit, from a dirty tree (unless `allow_dirty`), of an unfinished run, with an
    /// invalid phase, of a newer format or not readable at all.
    pub fn from_result(
        result: StoredResult,
        allow_dirty: bool,
        saved_at_unix_ms: u64,
    ) -> Result<Self, BaselineError> {
        let not_savable = |reason: String| BaselineError::NotSavable { reason };
        if let Some(version) = newer_format(&result) {
            return Err(not_savable(format!(
                "the result has format version {version}, newer than {RESULT_FORMAT_VERSION}"
            )));
        }
        let run = result
            .get()
            .map_err(|e| not_savable(format!("the result is not readable: {e}")))?;
        let git = run
            .git
            .as_ref()
            .filter(|g| !g.commit.is_empty())
            .ok_or_else(|| {
                not_savable("the run was not measured in a git repository".to_owned())
            })?;
        let commit = git.commit.clone();
        if git.dirty && !allow_dirty {
            return Err(BaselineError::DirtyTree { commit });
        }
        if run.status != RunStatus::Complete {
            return Err(not_savable(format!(
                "the run did not complete (status {})",
                run.status.label()
            )));
        }
        if run.phases.is_empty() {
            return Err(not_savable("the run measured no phase".to_owned()));
        }
        // A ramp step at the generator's limit bounds the knee, and a transient was measured
        // again: neither makes the figures a baseline keeps untrustworthy.
        let excused = |phase: &str| run.ramp.as_ref().is_some_and(|ramp| ramp.excuses(phase));
        if !run.phases.iter().any(|p| p.measurement.validity.is_valid()) {
            return Err(not_savable(
                "no phase is valid: the generator did not keep its schedule in any".to_owned(),
            ));
        }
        if let Some(invalid) = run
            .phases
            .iter()
            .find(|p| !p.measurement.validity.is_valid() && !excused(&p.measurement.name))
        {
            return Err(not_savable(format!(
                "phase `{}` is invalid: the generator did not keep its schedule",
                invalid.measurement.name
            )));
        }
        let fingerprint = Fingerprint::of_result(run);
        Ok(Self {
            commit,
            fingerprint_key: fingerprint.key(),
            fingerprint,
            config_hash: run.config_hash.clone(),
            schedule_hashes: run.phases.iter().map(|p| p.schedule_hash.clone()).collect(),
            saved_at_unix_ms,
            result,
            noise_runs: Vec::new(),
        })
    }
}

impl StoredEntry {
    /// Keeps `runs` with this entry as its noise samples (see [`StoredEntry::noise_runs`]): each
    /// must be savable as a baseline itself ([`StoredEntry::from_result`]) and of the same commit,
    /// config hash and environment. Returns why each refused run was refused.
    pub fn keep_noise_runs(&mut self, runs: Vec<StoredResult>, allow_dirty: bool) -> Vec<String> {
        let mut refused = Vec::new();
        for (i, run) in runs.into_iter().enumerate() {
            let why = match StoredEntry::from_result(run, allow_dirty, self.saved_at_unix_ms) {
                Err(e) => Some(e.to_string()),
                Ok(e) if e.commit != self.commit => {
                    Some(format!("it measured commit {}", e.commit))
                }
                Ok(e) if e.config_hash != self.config_hash => {
                    Some("it ran a different configuration".to_owned())
                }
                Ok(e) if e.fingerprint != self.fingerprint => Some(format!(
                    "it ran in a different environment: {}",
                    e.fingerprint.differences(&self.fingerprint).join("; ")
                )),
                Ok(e) => {
                    self.noise_runs.push(e.result);
                    None
                }
            };
            if let Some(why) = why {
                refused.push(format!("run {}: {why}", i + 1));
            }
        }
        refused
    }
}

/// The only field of a stored document read before its version is known.
#[derive(Deserialize)]
struct NoteVersion {
    format_version: Option<u64>,
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
        let version = NoteVersion::deserialize(&value)
            .ok()
            .and_then(|v| v.format_version)
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

/// Test helpers: small run results.
#[cfg(test)]
pub(crate) mod testing {
    use crate::measure::{FinishInfo, PhaseRecorder};
    use crate::result::{Environment, GitInfo, PhaseRecord, RunResult, RunStatus, ToolInfo};
    use std::time::Duration;

    /// A complete, clean result of `commit` on CPU `cpu` with config hash `config`: one valid
    /// phase `soak` with schedule hash `s1`.
    pub fn result(commit: &str, cpu: &str, config: &str) -> RunResult {
        let recorder = PhaseRecorder::new(
            &["a".to_owned()],
            Duration::ZERO,
            Duration::from_millis(100),
            Duration::from_secs(1),
        );
        let measurement = recorder.finish(FinishInfo {
            name: "soak".to_owned(),
            seed: 1,
            sessions_per_sec: 10.0,
            arrivals_end: Duration::from_secs(3),
            end: Duration::from_secs(3),
            max_lag: Duration::from_millis(5),
            max_drop_rate: 0.01,
            generator_cpu: None,
            generator_core: None,
            stopped: None,
        });
        RunResult {
            format_version: 1,
            tool: ToolInfo {
                name: "cargo-loadgate".to_owned(),
                version: "0.1.0".to_owned(),
            },
            started_at_unix_ms: 0,
            status: RunStatus::Complete,
            git: Some(GitInfo {
                commit: commit.to_owned(),
                dirty: false,
            }),
            profile: "default".to_owned(),
            config_path: "loadgate.toml".into(),
            slo: None,
            config_hash: config.to_owned(),
            environment: Environment {
                cpu_model: cpu.to_owned(),
                cores: 2,
                kernel: "6.1".to_owned(),
                engine_version: None,
                generator_core: None,
                target_cpuset: None,
            },
            target: None,
            replicas: Vec::new(),
            target_exit: None,
            ramp: None,
            headroom: None,
            soak: None,
            soak_skipped: None,
            spike: None,
            spike_skipped: None,
            stress: None,
            stress_skipped: None,
            valid: Some(true),
            baseline: None,
            comparison: None,
            verdict: None,
            phases: vec![PhaseRecord {
                schedule_hash: "s1".to_owned(),
                measurement,
            }],
            resources: Vec::new(),
            calibration: None,
            mode: crate::result::MeasurementMode::Stored,
            paired: None,
            shards: None,
            dependencies: Vec::new(),
            audits: Vec::new(),
            probes: Vec::new(),
            probe_checks: Vec::new(),
            stubs: Vec::new(),
            faults: Vec::new(),
            data: None,
        }
    }

    /// The entry of [`result`], saved at `saved_at`.
    pub fn entry(commit: &str, cpu: &str, config: &str, saved_at: u64) -> super::StoredEntry {
        let stored = super::StoredResult::new(&result(commit, cpu, config));
        super::StoredEntry::from_result(stored, false, saved_at).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{entry, result};
    use super::*;
    use crate::measure::InvalidReason;
    use std::time::Duration;
    use test_case::test_case;

    const C: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn entries_of_other_environments_are_kept_and_the_same_one_replaced() {
        let mut note = StoredNote::new();
        note.upsert(entry(C, "A", "h", 1));
        note.upsert(entry(C, "B", "h", 2));
        note.upsert(entry(C, "A", "h", 3));
        assert_eq!(note.entries.len(), 2);
        assert_eq!(note.entries[0].saved_at_unix_ms, 3);
        let back = StoredNote::parse(&note.to_bytes(), C, "test").unwrap();
        assert_eq!(back, note);
        assert_eq!(
            back.entries[0].result.get().unwrap(),
            &result(C, "A", "h"),
            "read back typed"
        );
    }

    #[test_case(|r: &mut RunResult| r.git.as_mut().unwrap().dirty = true, "dirty work tree"; "dirty")]
    #[test_case(|r: &mut RunResult| r.git = None, "not measured in a git repository"; "no git")]
    #[test_case(|r: &mut RunResult| r.status = RunStatus::Running, "did not complete (status running)"; "running")]
    #[test_case(|r: &mut RunResult| r.format_version = 9, "format version 9"; "newer")]
    #[test_case(|r: &mut RunResult| r.phases.clear(), "no phase"; "no phase")]
    #[test_case(|r: &mut RunResult| r.phases[0].measurement.validity.reasons = vec![InvalidReason::Drops { rate: 0.5, limit: 0.01, cause: crate::measure::DropCause::Saturated, busy: Some(0.97) }], "no phase is valid"; "invalid")]
    fn what_must_not_become_a_baseline_is_refused(spoil: fn(&mut RunResult), message: &str) {
        let mut r = result(C, "A", "h");
        spoil(&mut r);
        let err = StoredEntry::from_result(StoredResult::new(&r), false, 0).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }

    #[test]
    fn a_ramp_step_at_the_generators_limit_does_not_stop_a_save_but_a_starved_one_does() {
        use crate::plan::{RampOutcome, StepJudgement, StepKind, StepRecord};
        let with_step = |cause: crate::measure::LagCause| {
            let mut r = result(C, "A", "h");
            let mut m = r.phases[0].measurement.clone();
            m.name = "ramp-150%".to_owned();
            m.validity.reasons = vec![InvalidReason::Lag {
                p99: Duration::from_millis(40),
                limit: Duration::from_millis(10),
                cause,
                busy: Some(0.97),
            }];
            let step = StepRecord::new(StepKind::Step, 1.5, 1.0, &m, StepJudgement::default());
            r.ramp = Some(RampOutcome::conclude(vec![step], Vec::new()));
            r.phases.insert(
                0,
                crate::result::PhaseRecord {
                    schedule_hash: "s0".to_owned(),
                    measurement: m,
                },
            );
            StoredEntry::from_result(StoredResult::new(&r), false, 0)
        };
        assert!(with_step(crate::measure::LagCause::Saturated).is_ok());
        let err = with_step(crate::measure::LagCause::Starved).unwrap_err();
        assert!(
            err.to_string().contains("phase `ramp-150%` is invalid"),
            "{err}"
        );
    }

    #[test]
    fn a_stored_result_of_a_newer_format_or_shape_is_refused_with_why() {
        let mut raw = serde_json::to_value(result(C, "A", "h")).unwrap();
        raw["format_version"] = 2.into();
        raw["phases"] = "another shape".into();
        let newer = StoredResult::from_value(raw.clone());
        assert!(matches!(
            newer.get(),
            Err(ReadError::NewerFormat { found: 2, .. })
        ));
        let err = StoredEntry::from_result(newer, false, 0).unwrap_err();
        assert!(
            err.to_string().contains("format version 2, newer than 1"),
            "{err}"
        );
        raw["format_version"] = 1.into();
        let err = StoredEntry::from_result(StoredResult::from_value(raw), false, 0).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot save this run as a baseline: the result is not readable: the result is not a readable run result: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn an_entry_this_version_cannot_read_is_kept_as_written() {
        // A newer release's entry, of a format this one does not know, in the same note.
        let mut raw = serde_json::to_value(result(C, "B", "h")).unwrap();
        raw["format_version"] = 2.into();
        raw["a_field_of_format_2"] = serde_json::json!({"x": [1, 2]});
        let mut note = StoredNote::new();
        let mut newer = entry(C, "B", "h2", 1);
        newer.result = StoredResult::from_value(raw.clone());
        note.entries.push(newer);
        note.upsert(entry(C, "A", "h", 2));
        let back = StoredNote::parse(&note.to_bytes(), C, "test").unwrap();
        assert_eq!(back.entries.len(), 2);
        assert_eq!(back.entries[0].result.raw(), &raw);
        assert!(back.entries[0].result.get().is_err());
        assert!(back.entries[1].result.get().is_ok());
    }

    #[test]
    fn a_stored_result_reads_back_equal() {
        let mut r = result(C, "A", "h");
        r.phases[0].measurement.measured = Duration::from_millis(2_500);
        let stored = StoredResult::new(&r);
        let back: StoredResult = serde_json::from_value(stored.raw().clone()).unwrap();
        assert_eq!(back.get().unwrap(), &r);
    }

    #[test]
    fn a_dirty_tree_is_allowed_when_asked() {
        let mut r = result(C, "A", "h");
        r.git.as_mut().unwrap().dirty = true;
        assert!(StoredEntry::from_result(StoredResult::new(&r), true, 0).is_ok());
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
