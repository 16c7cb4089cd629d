//! The environment fingerprint: the figures that must be equal for two runs' numbers to be
//! compared at all (CPU model, cores, resource limits, engine and tool versions).
//!
//! The kernel release is recorded in every result but left out of the fingerprint: hosted CI
//! runner images update it every few weeks, and refusing every baseline after each image update
//! would leave the gate without baselines most of the time. Which cores the target was pinned to
//! enters as a count, not as core ids, since the same machine class pins different ids.

use crate::result::{Environment, RunResult, hex_sha256};
use crate::targets::{NetworkPath, TargetInfo};
use serde::{Deserialize, Serialize};

/// What must match between a baseline's environment and this run's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The CPU model (`model name` of /proc/cpuinfo).
    pub cpu_model: String,
    /// Cores available to the generator's process.
    pub cores: usize,
    /// The target's CPU limit in cores (container targets).
    pub cpus_limit: Option<f64>,
    /// The target's memory limit in bytes (container targets).
    pub memory_limit_bytes: Option<u64>,
    /// How many cores the target was pinned to, when it was pinned.
    pub pinned_cores: Option<usize>,
    /// The Docker engine's version (container targets).
    pub engine_version: Option<String>,
    /// The version of cargo-loadgate that measured.
    pub tool_version: String,
    /// `host` when the load reached a container target on the host's network; absent for a
    /// published port (the path of every container before this was recorded, so those
    /// fingerprints keep their keys), for processes and for URLs. A baseline measured through
    /// the proxy is never compared with a run on the host network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkPath>,
    /// The data tier the run measured (`[data] tier`); absent without one, so fingerprints of
    /// runs without a tier keep their keys. Two tiers never compare: the config hash differs too,
    /// and this names why in the message about a baseline left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_tier: Option<String>,
}

/// The fingerprint of a run in `environment` against `target`, measured by loadgate `tool_version`.
pub fn fingerprint(
    environment: &Environment,
    target: Option<&TargetInfo>,
    tool_version: &str,
) -> Fingerprint {
    let cpuset = target
        .and_then(|t| t.cpuset.as_deref())
        .or(environment.target_cpuset.as_deref());
    Fingerprint {
        cpu_model: environment.cpu_model.clone(),
        cores: environment.cores,
        cpus_limit: target.and_then(|t| t.cpus),
        memory_limit_bytes: target.and_then(|t| t.memory_bytes),
        pinned_cores: cpuset.and_then(cpuset_len),
        engine_version: environment.engine_version.clone(),
        tool_version: tool_version.to_owned(),
        // Only the host network is named: a published port is the path every container took
        // before the field existed, so its fingerprints keep their keys.
        network: target
            .and_then(|t| t.network.as_ref())
            .map(|n| n.path)
            .filter(|p| *p == NetworkPath::Host),
        data_tier: None,
    }
}

/// The number of cores in a cpuset list such as `0-1,4`; `None` when it does not parse.
pub fn cpuset_len(list: &str) -> Option<usize> {
    let mut n = 0usize;
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (
                    a.trim().parse::<usize>().ok()?,
                    b.trim().parse::<usize>().ok()?,
                );
                b.checked_sub(a)? + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

impl Fingerprint {
    /// The fingerprint of a run result: its environment and target, and the version of the
    /// tool that measured it.
    pub fn of_result(result: &RunResult) -> Self {
        Fingerprint {
            data_tier: result.data.as_ref().and_then(|d| d.tier.clone()),
            ..fingerprint(
                &result.environment,
                result.target.as_ref(),
                &result.tool.version,
            )
        }
    }

    /// A stable short key: the first 16 hex digits of the sha256 of the fingerprint's JSON.
    pub fn key(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        hex_sha256(json.as_bytes())[..16].to_owned()
    }

    /// What differs between `self` (the baseline's) and `other` (this run's), one phrase each,
    /// e.g. ``CPU model `Intel Xeon 8370C` (baseline) vs `AMD EPYC 7763` (this run)``.
    pub fn differences(&self, other: &Fingerprint) -> Vec<String> {
        fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
            v.as_ref()
                .map_or_else(|| "none".to_owned(), ToString::to_string)
        }
        let mut out = Vec::new();
        let mut diff = |what: &str, base: String, head: String| {
            if base != head {
                out.push(format!("{what} `{base}` (baseline) vs `{head}` (this run)"));
            }
        };
        diff("CPU model", self.cpu_model.clone(), other.cpu_model.clone());
        diff("cores", self.cores.to_string(), other.cores.to_string());
        diff("CPU limit", opt(&self.cpus_limit), opt(&other.cpus_limit));
        diff(
            "memory limit",
            opt(&self.memory_limit_bytes),
            opt(&other.memory_limit_bytes),
        );
        diff(
            "pinned cores",
            opt(&self.pinned_cores),
            opt(&other.pinned_cores),
        );
        diff(
            "engine version",
            opt(&self.engine_version),
            opt(&other.engine_version),
        );
        diff(
            "cargo-loadgate version",
            self.tool_version.clone(),
            other.tool_version.clone(),
        );
        diff(
            "network path",
            opt(&self.network.map(NetworkPath::as_str)),
            opt(&other.network.map(NetworkPath::as_str)),
        );
        diff("data tier", opt(&self.data_tier), opt(&other.data_tier));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    pub(crate) fn sample() -> Fingerprint {
        Fingerprint {
            cpu_model: "Test CPU".to_owned(),
            cores: 4,
            cpus_limit: Some(1.0),
            memory_limit_bytes: Some(512 << 20),
            pinned_cores: None,
            engine_version: Some("20.10.24".to_owned()),
            tool_version: "0.1.0".to_owned(),
            network: None,
            data_tier: None,
        }
    }

    #[test_case("0", Some(1))]
    #[test_case("0-1", Some(2))]
    #[test_case("0-1,4", Some(3))]
    #[test_case(" 2 , 5-7 ", Some(4))]
    #[test_case("3-1", None; "reversed range")]
    #[test_case("", None; "empty")]
    #[test_case("a", None; "garbage")]
    fn cpuset_lists_are_counted(list: &str, expected: Option<usize>) {
        assert_eq!(cpuset_len(list), expected);
    }

    #[test]
    fn key_is_stable_and_changes_with_any_field() {
        let a = sample();
        assert_eq!(a.key(), sample().key());
        assert_eq!(a.key().len(), 16);
        let mut b = sample();
        b.tool_version = "0.2.0".to_owned();
        assert_ne!(a.key(), b.key());
    }

    #[test]
    fn differences_name_each_field_that_differs() {
        let a = sample();
        let mut b = sample();
        b.cpu_model = "Other CPU".to_owned();
        b.cpus_limit = None;
        assert_eq!(
            a.differences(&b),
            vec![
                "CPU model `Test CPU` (baseline) vs `Other CPU` (this run)".to_owned(),
                "CPU limit `1` (baseline) vs `none` (this run)".to_owned(),
            ]
        );
        assert!(a.differences(&sample()).is_empty());
    }

    /// A fingerprint stored before the network path was recorded keeps its key (the field is
    /// left out while absent), and differs from a run on the host network, which is named.
    #[test]
    fn the_network_path_is_part_of_the_fingerprint_without_changing_old_keys() {
        let old = sample();
        let json = serde_json::to_string(&old).expect("serializes");
        assert!(!json.contains("network"), "{json}");
        let read: Fingerprint = serde_json::from_str(&json).expect("reads");
        assert_eq!(read.key(), old.key());
        let hosted = Fingerprint {
            network: Some(NetworkPath::Host),
            ..sample()
        };
        assert_ne!(hosted.key(), old.key());
        assert_eq!(
            old.differences(&hosted),
            vec!["network path `none` (baseline) vs `host` (this run)".to_owned()]
        );
    }

    /// A data tier enters the fingerprint (named in the differences); without one the key is
    /// the one it was.
    #[test]
    fn a_data_tier_is_part_of_the_fingerprint_without_changing_other_keys() {
        let none = sample();
        let json = serde_json::to_string(&none).expect("serializes");
        assert!(!json.contains("data_tier"), "{json}");
        let large = Fingerprint {
            data_tier: Some("large".to_owned()),
            ..sample()
        };
        assert_ne!(large.key(), none.key());
        assert_eq!(
            large.differences(&Fingerprint {
                data_tier: Some("small".to_owned()),
                ..sample()
            }),
            vec!["data tier `large` (baseline) vs `small` (this run)".to_owned()]
        );
    }

    #[test]
    fn a_result_is_fingerprinted_from_its_environment_target_and_tool() {
        let mut result = crate::baseline::note::testing::result("c", "Test CPU", "h");
        result.environment.target_cpuset = Some("0-1".to_owned());
        result.tool.version = "0.9.0".to_owned();
        let from_types = fingerprint(&result.environment, None, "0.9.0");
        assert_eq!(Fingerprint::of_result(&result), from_types);
        assert_eq!(from_types.pinned_cores, Some(2));
        assert_eq!(from_types.cpu_model, "Test CPU");
    }
}
