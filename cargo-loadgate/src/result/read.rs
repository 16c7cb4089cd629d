//! The one typed reader of run results: from a file, a string or a JSON value, with the format
//! version checked before the shape, so a newer file is refused as newer, not as malformed.
//!
//! Every reader of a result (the report, the comparison, the stores) goes through it; none indexes
//! JSON by key. Fields that older results of format 1 lack are `#[serde(default)]` (or `Option`) on
//! their types, and the tests below read a result written before each of them.

use super::run::{RESULT_FORMAT_VERSION, RunResult};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Why a run result could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read at all.
    #[error("failed to read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The text is not JSON, or not a run result in the shape of its format version.
    #[error("{}{} is not a readable run result: {message}", origin(path), position(*line, *column))]
    Malformed {
        /// The file, when the result was read from one.
        path: Option<PathBuf>,
        /// The line of the problem (1-based); 0 when read from a JSON value, which has no lines.
        line: usize,
        /// The column of the problem (1-based); 0 with the line.
        column: usize,
        /// What is wrong, as serde put it (without its position).
        message: String,
        /// Where in the document the shape is wrong (`ramp.steps`, `phases[6]`), as
        /// `serde_path_to_error` names it; `None` when the text is not JSON at all.
        at: Option<String>,
    },
    /// The JSON has no `format_version`: it is not a run result.
    #[error("{} is not a run result: it has no format_version", origin(path))]
    NoFormatVersion {
        /// The file, when the result was read from one.
        path: Option<PathBuf>,
    },
    /// The result was written in a newer format than this build reads.
    #[error(
        "{} was written in result format {found}, newer than {RESULT_FORMAT_VERSION}, the newest this cargo-loadgate reads\nhint: upgrade cargo-loadgate to read it",
        origin(path)
    )]
    NewerFormat {
        /// The file, when the result was read from one.
        path: Option<PathBuf>,
        /// Its format version.
        found: u64,
    },
}

impl ReadError {
    /// The same error, naming `path` as where the result came from.
    pub fn at(self, path: &Path) -> Self {
        let named = Some(path.to_path_buf());
        match self {
            ReadError::Io { .. } => self,
            ReadError::Malformed {
                line,
                column,
                message,
                at,
                ..
            } => ReadError::Malformed {
                path: named,
                line,
                column,
                message,
                at,
            },
            ReadError::NoFormatVersion { .. } => ReadError::NoFormatVersion { path: named },
            ReadError::NewerFormat { found, .. } => ReadError::NewerFormat { path: named, found },
        }
    }
}

/// How an error names where the result came from.
fn origin(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map_or_else(|| "the result".to_owned(), |p| p.display().to_string())
}

/// `:line:column` when the position is known.
fn position(line: usize, column: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}:{column}")
    }
}

/// The error of text that is not JSON, its position split off serde's message.
fn not_json(error: &serde_json::Error) -> ReadError {
    malformed(error, None)
}

/// The error of a typed read that failed at `at` in the document.
fn misshapen(error: serde_path_to_error::Error<serde_json::Error>) -> ReadError {
    let at = error.path().to_string();
    malformed(&error.into_inner(), Some(at))
}

/// The error of a failed read, its position split off serde's message.
fn malformed(error: &serde_json::Error, at: Option<String>) -> ReadError {
    let (line, column) = (error.line(), error.column());
    let text = error.to_string();
    let suffix = format!(" at line {line} column {column}");
    let message = text.strip_suffix(&suffix).unwrap_or(&text).to_owned();
    ReadError::Malformed {
        path: None,
        line,
        column,
        message,
        at,
    }
}

/// Refuses a missing or newer format version.
fn check_version(value: &Value) -> Result<(), ReadError> {
    match value.get("format_version").and_then(Value::as_u64) {
        None => Err(ReadError::NoFormatVersion { path: None }),
        Some(found) if found > u64::from(RESULT_FORMAT_VERSION) => {
            Err(ReadError::NewerFormat { path: None, found })
        }
        Some(_) => Ok(()),
    }
}

/// Reads the run result in the file at `path`; errors name the file.
pub fn read_result(path: &Path) -> Result<RunResult, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    result_from_str(&text).map_err(|e| e.at(path))
}

/// Reads a run result from its JSON text; a malformed one is named with its line and column.
pub fn result_from_str(text: &str) -> Result<RunResult, ReadError> {
    // Parsed twice: untyped to check the version first, then typed, so that a shape error is
    // named with its line and column (a JSON value has none).
    let value: Value = serde_json::from_str(text).map_err(|e| not_json(&e))?;
    check_version(&value)?;
    serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text))
        .map_err(misshapen)
}

/// Reads a run result from its JSON value (as a baseline store holds it).
pub fn result_from_value(value: &Value) -> Result<RunResult, ReadError> {
    check_version(value)?;
    serde_path_to_error::deserialize(value).map_err(misshapen)
}

/// Test helpers: the checked-in results.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A real run of the demo service without a baseline (tests/fixtures/report/README.md),
    /// written before windows counted their answers, steps their basis and results their SLO.
    pub const BEFORE: &str = include_str!("../../../tests/fixtures/report/before.json");
    /// The same service slowed down, compared with `BEFORE` as its baseline.
    pub const AFTER: &str = include_str!("../../../tests/fixtures/report/after.json");
    /// The shape of format 1 as first written (tests/fixtures/result/README.md): no ramp, soak,
    /// comparison, calibration or SLO.
    pub const FIRST: &str = include_str!("../../../tests/fixtures/result/v1-first.json");

    /// `BEFORE`, read typed.
    pub fn before() -> RunResult {
        result_from_str(BEFORE).expect("the fixture reads")
    }

    /// `AFTER` as a paired run would have written it (issue 13): four pairs in the order
    /// `AB BA BA AB`, the third left out because the generator fell behind in its base block,
    /// the p50 and p99 metrics estimated from the pairs, no stored baseline and no noise.
    pub fn paired() -> RunResult {
        use crate::plan::pairing::Side;
        use crate::result::{
            BaseSource, BlockFigures, BlockRecord, MeasurementMode, Metric, MetricOutcome,
            PairedBase, PairedDesign, PairedRecord, pair_records,
        };
        let mut r = result_from_str(AFTER).expect("the fixture reads");
        r.mode = MeasurementMode::Paired;
        r.baseline = None;
        // (pair, side, p50 ms, p99 ms, error rate, valid), in the order the blocks ran.
        let figures = [
            (0, Side::Base, 2.00, 8.0, 0.0, true),
            (0, Side::Head, 2.16, 8.4, 0.001, true),
            (1, Side::Head, 2.20, 8.8, 0.0, true),
            (1, Side::Base, 2.00, 8.0, 0.0, true),
            (2, Side::Head, 2.40, 9.6, 0.0, true),
            (2, Side::Base, 2.10, 8.4, 0.0, false),
            (3, Side::Base, 1.90, 7.6, 0.0, true),
            (3, Side::Head, 2.09, 8.36, 0.0, true),
        ];
        let blocks: Vec<BlockRecord> = figures
            .iter()
            .map(|&(pair, side, p50, p99, errors, valid)| {
                let side_name = match side {
                    Side::Base => "base",
                    Side::Head => "head",
                };
                let total = BlockFigures {
                    operation: None,
                    requests: 2_000,
                    p50_ms: Some(p50),
                    p99_ms: Some(p99),
                    error_rate: Some(errors),
                };
                BlockRecord {
                    pair,
                    side,
                    phase: format!("pair-{pair}-{side_name}"),
                    schedule_hash: format!("{pair:064x}"),
                    valid,
                    invalid_reasons: if valid {
                        Vec::new()
                    } else {
                        vec!["send lag p99 12 ms > 5 ms".to_owned()]
                    },
                    stopped: None,
                    operations: vec![BlockFigures {
                        operation: Some("get".to_owned()),
                        ..total.clone()
                    }],
                    total,
                }
            })
            .collect();
        let pairs = pair_records(&blocks);
        r.paired = Some(PairedRecord {
            base: PairedBase {
                commit: Some("6ae25712e4ad8bd64feb28a0a20893a52f7a842a".to_owned()),
                source: BaseSource::Built,
                target: None,
                statement: "the work tree (uncommitted changes) against 6ae2571".to_owned(),
            },
            design: PairedDesign {
                pairs_planned: 4,
                block_s: 10.0,
                warmup_s: 2.0,
                sessions_per_sec: 120.0,
                at: 0.6,
                base_capacity_sessions_per_sec: 200.0,
                capacity_note: Some("paired ramp".to_owned()),
                adaptive: false,
                looks: Vec::new(),
                stopped_early: None,
                order: "AB BA BA AB".to_owned(),
            },
            base_ramp: r.ramp.clone(),
            blocks,
            pairs,
        });
        let comparison = r.comparison.as_mut().expect("the fixture has a comparison");
        comparison.noise = None;
        // The overall metrics only, the latencies as the pairs give them (base and head the
        // medians of their used blocks).
        comparison.metrics.retain(|m| m.operation.is_none());
        for m in &mut comparison.metrics {
            let (base, head, estimate, low, high) = match m.metric {
                Metric::P50 => (2.0, 2.18, 1.09, 1.08, 1.10),
                Metric::P99 => (8.0, 8.4, 1.07, 1.05, 1.10),
                _ => continue,
            };
            if m.metric == Metric::P99 {
                // Its interval reaches the threshold of +10%.
                m.outcome = MetricOutcome::Inconclusive;
            }
            (m.base, m.head) = (Some(base), Some(head));
            (m.estimate, m.low, m.high) = (Some(estimate), Some(low), Some(high));
        }
        let verdict = r.verdict.as_mut().expect("the fixture has a verdict");
        verdict.rule_fired = format!(
            "{} [paired: 3 pair(s) of base and head in this job]",
            verdict.rule_fired
        );
        comparison.verdict = verdict.clone();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{AFTER, BEFORE, FIRST};
    use super::*;
    use test_case::test_case;

    fn value(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test_case(BEFORE; "before")]
    #[test_case(AFTER; "after")]
    #[test_case(FIRST; "first")]
    fn every_stored_shape_of_format_1_still_reads(text: &str) {
        let from_str = result_from_str(text).unwrap();
        let from_value = result_from_value(&value(text)).unwrap();
        assert_eq!(from_str, from_value);
        assert_eq!(from_str.format_version, 1);
        assert!(!from_str.phases.is_empty());
    }

    #[test]
    fn the_first_shape_reads_with_its_later_parts_absent() {
        let r = result_from_str(FIRST).unwrap();
        assert_eq!(
            (r.ramp.is_none(), r.soak.is_none(), r.valid, r.slo.is_none()),
            (true, true, None, true)
        );
        assert!(r.calibration.is_none() && r.comparison.is_none() && r.verdict.is_none());
        // Windows from before `answered` read as not recorded, not as zero answers.
        let windows = &r.phases[0].measurement.windows.windows;
        assert!(!windows.is_empty());
        assert!(windows.iter().all(|w| w.answered.is_none()));
    }

    /// Removes `key` from every object in `value`, at any depth.
    fn strip(value: &mut Value, key: &str) {
        match value {
            Value::Object(map) => {
                map.remove(key);
                map.values_mut().for_each(|v| strip(v, key));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| strip(v, key)),
            _ => {}
        }
    }

    /// `AFTER` in the current shape, with every field of format 1 present (its SLO too).
    fn current() -> Value {
        let mut r = result_from_str(AFTER).unwrap();
        // The fixture's windows predate `answered`; the current shape records it.
        for phase in &mut r.phases {
            for w in &mut phase.measurement.windows.windows {
                w.answered = Some(w.completed);
            }
        }
        r.slo = Some(super::super::SloSummary {
            latency: Vec::new(),
            error_rate: 0.01,
            min_requests: 100,
            recovery_limit_ms: None,
        });
        serde_json::to_value(r).unwrap()
    }

    /// Each field added to format 1 after it was first written, with where it lives: a result
    /// written before it (the field absent there) still reads.
    #[test_case("", "slo"; "the resolved slo")]
    #[test_case("/phases", "answered"; "the answers of a window")]
    #[test_case("/ramp/steps", "basis"; "the basis of a step's judgement")]
    #[test_case("/ramp/steps", "note"; "the note on the basis")]
    #[test_case("", "calibration"; "the calibration figure")]
    #[test_case("", "baseline"; "the baseline reference")]
    #[test_case("", "comparison"; "the comparison")]
    #[test_case("", "verdict"; "the verdict")]
    #[test_case("", "ramp"; "the ramp")]
    #[test_case("", "soak"; "the soak")]
    #[test_case("", "soak_skipped"; "why the soak was skipped")]
    #[test_case("", "valid"; "the run's validity")]
    #[test_case("", "mode"; "the measurement mode")]
    fn a_result_written_before_a_field_was_added_still_reads(under: &str, key: &str) {
        let mut v = current();
        let before = v.clone();
        match under {
            "" => {
                v.as_object_mut().unwrap().remove(key);
            }
            pointer => strip(v.pointer_mut(pointer).unwrap(), key),
        }
        assert_ne!(v, before, "the fixture has no `{key}` to remove");
        result_from_value(&v).unwrap();
        result_from_str(&v.to_string()).unwrap();
    }

    #[test]
    fn a_paired_result_reads_back_equal_and_one_without_its_mode_reads_as_stored() {
        let paired = super::testing::paired();
        let value = serde_json::to_value(&paired).unwrap();
        assert_eq!(value["mode"], "paired");
        assert_eq!(value["paired"]["pairs"][0]["first"], "base");
        assert_eq!(result_from_value(&value).unwrap(), paired);
        let stored = result_from_str(AFTER).unwrap();
        assert_eq!(stored.mode, super::super::MeasurementMode::Stored);
        let value = serde_json::to_value(&stored).unwrap();
        assert_eq!(value["mode"], "stored");
        assert!(
            value.get("paired").is_none(),
            "a stored run writes no `paired`"
        );
    }

    #[test]
    fn a_step_without_a_basis_was_judged_per_class() {
        let mut v = current();
        strip(v.pointer_mut("/ramp/steps").unwrap(), "basis");
        let r = result_from_value(&v).unwrap();
        let held = &r.ramp.unwrap().steps[0].held;
        assert_eq!(held.basis, crate::plan::JudgementBasis::PerClass);
    }

    #[test]
    fn a_result_serialized_and_read_back_is_equal_and_serializes_the_same() {
        for text in [BEFORE, AFTER, FIRST] {
            let first = result_from_str(text).unwrap();
            let json = serde_json::to_string_pretty(&first).unwrap();
            let again = result_from_str(&json).unwrap();
            assert_eq!(again, first);
            assert_eq!(serde_json::to_string_pretty(&again).unwrap(), json);
        }
    }

    #[test]
    fn a_newer_format_is_refused_with_its_version_and_a_hint() {
        let mut v = value(AFTER);
        v["format_version"] = 2.into();
        // A newer format may change any shape: it is refused as newer, not as malformed.
        v["phases"] = "a shape of format 2".into();
        let err = result_from_value(&v).unwrap_err();
        assert!(
            matches!(err, ReadError::NewerFormat { found: 2, .. }),
            "{err:?}"
        );
        let err = result_from_str(&v.to_string())
            .unwrap_err()
            .at(Path::new("out/result.json"));
        insta::assert_snapshot!(err.to_string(), @r"
        out/result.json was written in result format 2, newer than 1, the newest this cargo-loadgate reads
        hint: upgrade cargo-loadgate to read it
        ");
    }

    #[test]
    fn an_unparsable_file_is_named_with_its_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        std::fs::write(&path, "{\"format_version\": 1,\n \"tool\": }").unwrap();
        let err = read_result(&path).unwrap_err();
        let ReadError::Malformed {
            line, column, at, ..
        } = &err
        else {
            panic!("{err:?}")
        };
        assert_eq!((*line, *column, at.as_deref()), (2, 10, None));
        assert_eq!(
            err.to_string(),
            format!(
                "{}:2:10 is not a readable run result: expected value",
                path.display()
            )
        );
    }

    #[test]
    fn a_result_of_the_wrong_shape_is_named_with_the_field() {
        let mut v = value(BEFORE);
        v["status"] = "maybe".into();
        let text = serde_json::to_string_pretty(&v).unwrap();
        let err = result_from_str(&text).unwrap_err();
        let ReadError::Malformed {
            line, message, at, ..
        } = &err
        else {
            panic!("{err:?}")
        };
        assert!(message.starts_with("unknown variant `maybe`"), "{message}");
        assert_eq!(at.as_deref(), Some("status"));
        assert_eq!(
            text.lines().nth(*line - 1).map(str::trim),
            Some("\"status\": \"maybe\",")
        );
        // From a value there is no line to name.
        let err = result_from_value(&v).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the result is not a readable run result: unknown variant `maybe`"),
            "{err}"
        );
    }

    #[test_case("{}"; "an object")]
    #[test_case("[1, 2]"; "an array")]
    #[test_case("{\"format_version\": \"1\"}"; "a version that is not a number")]
    fn json_without_a_format_version_is_not_a_result(text: &str) {
        let err = result_from_str(text).unwrap_err();
        assert!(
            matches!(err, ReadError::NoFormatVersion { path: None }),
            "{err:?}"
        );
        assert!(matches!(
            result_from_value(&value(text)).unwrap_err(),
            ReadError::NoFormatVersion { path: None }
        ));
    }

    #[test]
    fn a_missing_file_is_an_io_error_naming_it() {
        let err = read_result(Path::new("/nonexistent/result.json")).unwrap_err();
        assert!(matches!(err, ReadError::Io { .. }), "{err:?}");
        assert_eq!(err.to_string(), "failed to read /nonexistent/result.json");
    }
}
