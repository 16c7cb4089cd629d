//! The hashes that decide which measurements are comparable: the config hash and sha256 itself.
//! (The schedule hash is computed where the schedule is built, in `workload/`.)
//!
//! The config hash covers what changes the measurement: `[target]`, `[workload]`, `[generator]`,
//! `[ramp]`, `[soak]`, `[abort]` and `[slo]` (the SLO moves the knee), and how the run is compared
//! ([`MeasurementMode`]). The `[gate]` thresholds judge a measurement without changing it, so
//! changing one keeps every stored baseline comparable. Baselines stored before that rule hashed
//! the whole resolved configuration; [`ConfigHashes`] carries that [`legacy_config_hash`] too, so
//! the lookup still finds them.

use crate::config::LoadgateConfig;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// How head and base are measured, which decides whether two runs' figures may be compared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MeasurementMode {
    /// The head is measured alone and compared with a baseline stored by an earlier run.
    #[default]
    Stored,
    /// Base and head are measured side by side in one job, in alternating blocks.
    Paired,
}

/// The parts of a configuration that change what a run measures, as the config hash sees them.
#[derive(Serialize)]
struct Measured<'a> {
    mode: MeasurementMode,
    target: &'a crate::config::TargetConfig,
    workload: &'a crate::config::WorkloadConfig,
    generator: &'a crate::config::GeneratorConfig,
    ramp: &'a crate::config::RampConfig,
    soak: &'a crate::config::SoakConfig,
    /// Only when a spike runs (so stored runs without one keep the hash they had).
    #[serde(skip_serializing_if = "crate::config::SpikeConfig::is_disabled")]
    spike: &'a crate::config::SpikeConfig,
    /// Only when a stress runs, like the spike.
    #[serde(skip_serializing_if = "crate::config::StressConfig::is_disabled")]
    stress: &'a crate::config::StressConfig,
    abort: &'a crate::config::AbortConfig,
    slo: &'a crate::config::SloConfig,
    /// The blocks' design, in paired mode only (so stored runs keep the hash they had).
    #[serde(skip_serializing_if = "Option::is_none")]
    paired: Option<&'a crate::config::PairedConfig>,
    /// The dependency set: each one's name, declared kind and what it runs, not its port
    /// (`DependencyConfig::identity`). Absent without dependencies, so those configs keep their
    /// hash.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dependencies: Vec<serde_json::Value>,
    /// The data tier: `[data]`'s tier, variables and steps, with each SQL file's digest
    /// (`DataConfig::identity`). Absent without `[data]`, so those configs keep their hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<serde_json::Value>,
    /// The stubs beside the target: what shapes each one's answers, not its port
    /// (`StubConfig::identity`). Absent without stubs, so those configs keep their hash.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stubs: Vec<serde_json::Value>,
    /// The faults on them (`FaultConfig::identity`). Absent without faults.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    faults: Vec<serde_json::Value>,
}

/// sha256 (hex) of what in `config` changes the measurement, with the `mode` of the run: not
/// `[gate]`, not the profile's name, not where the file was read from.
pub fn config_hash(config: &LoadgateConfig, mode: MeasurementMode) -> String {
    // Named field by field, so that a new section must be placed on one side or the other.
    let LoadgateConfig {
        source: _,
        profile: _,
        gate: _,
        accept: _,
        // A probe watches (one connection, one query a second); its limits judge, like `[gate]`.
        probes: _,
        dependencies,
        // Sent after the measurement; it reads the service without changing what was measured.
        audit: _,
        // Run at the end; it changes nothing the run measured.
        teardown: _,
        data,
        stubs,
        faults,
        recovery: _,
        paired,
        target,
        slo,
        workload,
        generator,
        ramp,
        soak,
        spike,
        stress,
        abort,
    } = config;
    let measured = Measured {
        mode,
        target,
        workload,
        generator,
        ramp,
        soak,
        spike,
        stress,
        abort,
        slo,
        paired: (mode == MeasurementMode::Paired).then_some(paired),
        dependencies: dependencies
            .iter()
            .map(crate::config::DependencyConfig::identity)
            .collect(),
        data: (!data.is_empty()).then(|| data.identity()),
        stubs: stubs
            .iter()
            .map(crate::config::StubConfig::identity)
            .collect(),
        faults: faults
            .iter()
            .map(crate::config::FaultConfig::identity)
            .collect(),
    };
    let value = serde_json::to_value(measured).unwrap_or(serde_json::Value::Null);
    hex_sha256(value.to_string().as_bytes())
}

/// sha256 (hex) of the whole resolved configuration but where it was read from: the config hash
/// of results written before `[gate]` was left out, for finding the baselines they stored.
pub fn legacy_config_hash(config: &LoadgateConfig) -> String {
    let mut value = serde_json::to_value(config).unwrap_or(serde_json::Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.remove("source");
        // Added after that rule: a legacy result never had them.
        map.remove("paired");
        if let Some(gate) = map.get_mut("gate").and_then(|g| g.as_object_mut()) {
            gate.remove("p50_floor");
            gate.remove("p99_floor");
        }
        // Nor a data tier.
        if !config.data.is_empty() {
            map.insert("data".to_owned(), config.data.identity());
        }
        // Nor faults.
        if !config.faults.is_empty() {
            map.insert(
                "faults".to_owned(),
                config
                    .faults
                    .iter()
                    .map(crate::config::FaultConfig::identity)
                    .collect(),
            );
        }
        // Nor stubs: a config with some never matches one.
        if !config.stubs.is_empty() {
            map.insert(
                "stubs".to_owned(),
                config
                    .stubs
                    .iter()
                    .map(crate::config::StubConfig::identity)
                    .collect(),
            );
        }
        // No legacy result had dependencies: a config with some never matches one.
        if !config.dependencies.is_empty() {
            map.insert(
                "dependencies".to_owned(),
                config
                    .dependencies
                    .iter()
                    .map(crate::config::DependencyConfig::identity)
                    .collect(),
            );
        }
    }
    hex_sha256(value.to_string().as_bytes())
}

/// The default `[ramp] steps` before they started at 25%: a baseline stored with them measured
/// everything a comparison reads as the current default does (the 10% step fed no judged metric;
/// docs/decisions.md, "The ramp starts at 25%").
const STEPS_FROM_10: [f64; 6] = [0.10, 0.25, 0.50, 0.75, 1.00, 1.50];

/// The default `[ramp] steps` since.
const STEPS_FROM_25: [f64; 5] = [0.25, 0.50, 0.75, 1.00, 1.50];

/// The config hashes a stored run may carry and still match this configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigHashes {
    /// [`config_hash`]: what this run records.
    pub current: String,
    /// [`legacy_config_hash`]: what a baseline of the same configuration stored before recorded.
    pub legacy: String,
    /// Both hashes of the same configuration under the earlier default ramp steps, when its
    /// steps are the current default ones: baselines stored before the default changed.
    pub earlier_steps: Option<[String; 2]>,
}

impl ConfigHashes {
    /// Both hashes of `config` measured in `mode`.
    pub fn of(config: &LoadgateConfig, mode: MeasurementMode) -> Self {
        let earlier_steps = (config.ramp.steps == STEPS_FROM_25).then(|| {
            let mut earlier = config.clone();
            earlier.ramp.steps = STEPS_FROM_10.to_vec();
            [config_hash(&earlier, mode), legacy_config_hash(&earlier)]
        });
        Self {
            current: config_hash(config, mode),
            legacy: legacy_config_hash(config),
            earlier_steps,
        }
    }

    /// Whether a stored run with config hash `stored` measured this configuration.
    pub fn matches(&self, stored: &str) -> bool {
        stored == self.current
            || stored == self.legacy
            || self
                .earlier_steps
                .as_ref()
                .is_some_and(|hashes| hashes.iter().any(|h| h == stored))
    }
}

/// Lowercase hex sha256 of `bytes`.
pub fn hex_sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `bytes` in lower-case hex (a digest, for people and files).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> LoadgateConfig {
        crate::config::parse_config_str(text, std::path::Path::new("l.toml"), None, "default")
            .expect("config")
    }

    /// The minimal config with `extra` appended.
    fn with(extra: &str) -> LoadgateConfig {
        parse(&format!("{}\n{extra}", crate::config::MINIMAL_CONFIG))
    }

    const STORED: MeasurementMode = MeasurementMode::Stored;

    #[test]
    fn generator_connections_enter_the_config_hash_only_when_set() {
        let unset = with("[generator]\n");
        let zero = with("[generator]\nconnections = 0\n");
        let three = with("[generator]\nconnections = 3\n");
        // 0 is left out of the serialized config: configs from before the key hash as before.
        let generator = serde_json::to_value(&unset.generator).expect("json");
        assert!(generator.get("connections").is_none(), "{generator}");
        assert!(generator.get("max_in_flight").is_some(), "{generator}");
        assert_eq!(config_hash(&unset, STORED), config_hash(&zero, STORED));
        assert_ne!(config_hash(&unset, STORED), config_hash(&three, STORED));
        assert_eq!(legacy_config_hash(&unset), legacy_config_hash(&zero));
        assert_ne!(legacy_config_hash(&unset), legacy_config_hash(&three));
    }

    /// The legacy hash is what results and baselines stored before this release recorded: pinned,
    /// so a change to the config's serialization that would orphan them fails here.
    #[test]
    fn the_legacy_hash_is_the_config_hash_results_recorded_before() {
        let config = with("");
        let hashes = ConfigHashes::of(&config, STORED);
        assert!(hashes.matches(LEGACY_MINIMAL));
        assert!(hashes.matches(&config_hash(&config, STORED)));
        assert!(hashes.matches(&legacy_config_hash(&config)));
        assert!(!hashes.matches(&"0".repeat(64)));
        assert_ne!(hashes.current, hashes.legacy);
        // Written with the earlier default steps, the same config hashes as those baselines did.
        let earlier =
            with("[ramp]\nsteps = [\"10%\", \"25%\", \"50%\", \"75%\", \"100%\", \"150%\"]\n");
        assert_eq!(legacy_config_hash(&earlier), LEGACY_MINIMAL);
    }

    /// `legacy_config_hash` of `MINIMAL_CONFIG`, as `config_hash` computed it before `[gate]` was
    /// left out (and before the default ramp steps started at 25%).
    const LEGACY_MINIMAL: &str = "991e59d287edf087c9d5b9216f96db4a8984607e9490643827ea2a67adfead91";

    /// The current hash of `MINIMAL_CONFIG`, pinned for the same reason.
    #[test]
    fn the_config_hash_of_the_minimal_config_is_pinned() {
        let config = with("");
        assert_eq!(config_hash(&config, STORED), CURRENT_MINIMAL);
        // Baselines stored before the default steps started at 25% still match.
        assert!(ConfigHashes::of(&config, STORED).matches(CURRENT_MINIMAL_FROM_10));
    }

    const CURRENT_MINIMAL: &str =
        "d31c77894fea46bc5d9bc3522795dc6b11ffbef1f43471e0b4aa3db270de91aa";

    /// `CURRENT_MINIMAL` before the default ramp steps started at 25%.
    const CURRENT_MINIMAL_FROM_10: &str =
        "1c16ee2c72273e7932258c2ce6d63c841c8fa4e55b63d09095c81ade201f3032";

    /// Only the default steps alias the earlier ones: other steps, or a paired run with the
    /// default ones against a stored baseline, never match.
    #[test]
    fn only_the_default_steps_match_baselines_of_the_earlier_default() {
        let from_10 =
            with("[ramp]\nsteps = [\"10%\", \"25%\", \"50%\", \"75%\", \"100%\", \"150%\"]\n");
        let stored_from_10 = config_hash(&from_10, STORED);
        assert!(ConfigHashes::of(&with(""), STORED).matches(&stored_from_10));
        let other = with("[ramp]\nsteps = [\"25%\", \"50%\", \"100%\"]\n");
        assert!(ConfigHashes::of(&other, STORED).earlier_steps.is_none());
        assert!(!ConfigHashes::of(&other, STORED).matches(&stored_from_10));
        assert!(!ConfigHashes::of(&with(""), MeasurementMode::Paired).matches(&stored_from_10));
        // The earlier config itself does not alias the current one back.
        assert!(!ConfigHashes::of(&from_10, STORED).matches(&config_hash(&with(""), STORED)));
    }

    #[test]
    fn gate_thresholds_do_not_change_the_config_hash() {
        let base = with("");
        let gate = with("[gate]\np99 = \"25%\"\ncapacity = \"20%\"\n");
        assert_ne!(base.gate, gate.gate, "the [gate] keys were applied");
        assert_eq!(config_hash(&base, STORED), config_hash(&gate, STORED));
        // The old way, they did: the legacy hash tells them apart.
        assert_ne!(legacy_config_hash(&base), legacy_config_hash(&gate));
    }

    #[test]
    fn a_stub_changes_the_config_hash_but_its_port_does_not() {
        let stub = |extra: &str| {
            with(&format!(
                "[[stub]]\nname = \"s\"\nenv = \"S_URL\"\n{extra}[[stub.route]]\npath = \"/\"\n"
            ))
        };
        let none = with("");
        let a = stub("");
        let b = stub("port = 18081\n");
        let c = stub("latency = \"20ms\"\n");
        assert_ne!(config_hash(&none, STORED), config_hash(&a, STORED));
        assert_eq!(config_hash(&a, STORED), config_hash(&b, STORED));
        assert_ne!(config_hash(&a, STORED), config_hash(&c, STORED));
        assert_ne!(legacy_config_hash(&none), legacy_config_hash(&a));
    }

    #[test]
    fn the_profile_name_and_the_file_do_not_change_the_config_hash() {
        let a = with("");
        let mut b = with("");
        b.profile = "ci".to_owned();
        b.source.path = "elsewhere/loadgate.toml".into();
        assert_eq!(config_hash(&a, STORED), config_hash(&b, STORED));
    }

    #[test_case::test_case("[slo]\nerror-rate = \"5%\"\n"; "slo")]
    #[test_case::test_case("[ramp]\nsteps = [\"50%\", \"100%\"]\n"; "ramp")]
    #[test_case::test_case("[soak]\nat = \"50%\"\n"; "soak")]
    #[test_case::test_case("[generator]\nmax-in-flight = 7\n"; "generator")]
    fn what_changes_the_measurement_changes_the_config_hash(extra: &str) {
        let base = with("");
        let changed = with(extra);
        assert_ne!(config_hash(&base, STORED), config_hash(&changed, STORED));
    }

    #[test]
    fn sha256_is_lowercase_hex() {
        assert_eq!(
            hex_sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
