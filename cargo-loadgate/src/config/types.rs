//! Validated, resolved configuration: what every later stage reads.
//!
//! Values of these types exist only after validation succeeded, so code downstream never re-checks
//! them: probabilities are in range, operation names resolve, durations are positive. Building them
//! directly (in tests, in `attack`) is allowed; the constructors of record are in `validate`.

use serde::Serialize;
use std::{collections::BTreeMap, path::PathBuf, time::Duration};

/// The configuration of one run, with the selected profile applied.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadgateConfig {
    /// Where the configuration came from.
    pub source: ConfigSource,
    /// The name of the profile that was applied (`default` when none was asked for).
    pub profile: String,
    /// What to boot and how to tell it is ready.
    pub target: TargetConfig,
    /// The failure condition: a step holds while all of these hold.
    pub slo: SloConfig,
    /// The user model and its arrival rate.
    pub workload: WorkloadConfig,
    /// The open-loop generator's limits.
    pub generator: GeneratorConfig,
    /// The capacity ramp.
    pub ramp: RampConfig,
    /// The soak sample.
    pub soak: SoakConfig,
    /// `[spike]`. Left out of the serialized config while it is disabled, so the config hash of a
    /// config without a spike (and every stored baseline's match) does not change.
    #[serde(skip_serializing_if = "SpikeConfig::is_disabled")]
    pub spike: SpikeConfig,
    /// `[stress]`. Left out of the serialized config while it is disabled, like `[spike]`.
    #[serde(skip_serializing_if = "StressConfig::is_disabled")]
    pub stress: StressConfig,
    /// `[recovery]`: a judgement of the windows, not of the load, so (like `slo.headroom`) left
    /// out of the serialized config and its hash.
    #[serde(skip)]
    pub recovery: RecoveryConfig,
    /// The safety envelope: when to stop sending.
    pub abort: AbortConfig,
    /// The smallest change that matters, per metric.
    pub gate: GateConfig,
    /// How base and head are compared: paired blocks in one job, or a stored baseline.
    pub paired: PairedConfig,
    /// The intended changes scoped to commits (`[[accept]]`). Not serialized: like `[gate]` they
    /// judge a measurement without changing it, and the legacy config hash must stay what it was.
    #[serde(skip)]
    pub accept: Vec<AcceptConfig>,
    /// The companions booted before the target (`[[dependency]]`), in the order written. Not
    /// serialized here: the config hash takes their identity alone ([`DependencyConfig::identity`],
    /// not their ports or readiness), so that configs without any keep the hash they had.
    #[serde(skip)]
    pub dependencies: Vec<DependencyConfig>,
    /// The post-run audits (`[[audit]]`) that apply to this profile, in the order written. Not
    /// serialized: they read the service after the run without changing what was measured.
    #[serde(skip)]
    pub audit: Vec<AuditConfig>,
    /// What is sampled of the dependencies during the run (`[[probe]]`), in the order written.
    /// Not serialized: a probe watches a measurement without changing it.
    #[serde(skip)]
    pub probes: Vec<ProbeConfig>,
    /// `[[stub]]`: the downstream stubs loadgate serves beside the target, this profile's. Not
    /// serialized: the config hash takes each one's identity ([`StubConfig::identity`]).
    #[serde(skip)]
    pub stubs: Vec<StubConfig>,
    /// `[[fault]]`: changes to the stubs' answers scheduled inside a phase, this profile's. Not
    /// serialized: the config hash takes each one's identity ([`FaultConfig::identity`]).
    #[serde(skip)]
    pub faults: Vec<FaultConfig>,
    /// `[data]`: the steps that load this profile's data tier. Not serialized: the config hash
    /// takes its identity ([`DataConfig::identity`]: the tier, the variables, each step and the
    /// digest of each SQL file), so that configs without one keep the hash they had.
    #[serde(skip)]
    pub data: DataConfig,
    /// `[teardown]`: the steps run on every path at the end. Not serialized: they run after the
    /// measurement and change nothing it measured.
    #[serde(skip)]
    pub teardown: TeardownConfig,
}

impl LoadgateConfig {
    /// The operations whose p50 and p99 are primary metrics of a comparison
    /// (`compare::CompareOptions::gated_operations`), in the workload's order: those written with
    /// `gate = true` and those `[gate] operations` names.
    pub fn gated_operations(&self) -> Vec<String> {
        self.workload
            .operations
            .iter()
            .filter(|o| o.gate || self.gate.operations.contains(&o.name))
            .map(|o| o.name.clone())
            .collect()
    }
}

/// `[data]`: the steps that load a data tier before the measurement (issue 16, seed 004): SQL
/// files or commands run against the dependencies once they are ready and before the target
/// starts, or against the target once it is ready. The workload's seed is handed to every step
/// (`{{seed}}`, psql's `:seed`), so the same seed loads the same rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataConfig {
    /// The tier's name (`small`, `10k`), recorded in the result; a tier is part of the config
    /// hash, so a run on one tier never finds a baseline of another.
    pub tier: Option<String>,
    /// Named values handed to every step: psql variables (`:accounts`) and `{{var.NAME}}`.
    pub vars: BTreeMap<String, String>,
    /// The steps, in the order they run.
    pub steps: Vec<DataStep>,
}

impl DataConfig {
    /// Whether nothing is declared (no step and no tier).
    pub fn is_empty(&self) -> bool {
        self.tier.is_none() && self.vars.is_empty() && self.steps.is_empty()
    }

    /// What of it changes the measurement, for the config hash: the tier, the variables and
    /// each step's identity (not its timeout).
    pub fn identity(&self) -> serde_json::Value {
        serde_json::json!({
            "tier": self.tier,
            "vars": self.vars,
            "steps": self.steps.iter().map(DataStep::identity).collect::<Vec<_>>(),
        })
    }
}

/// `[teardown]`: steps run at the end of every run (success, failure, Ctrl-C, SIGTERM), after the
/// target stops and before the dependencies do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TeardownConfig {
    /// The steps, in the order they run.
    pub steps: Vec<DataStep>,
}

/// One step of `[data]` or `[teardown]`.
#[derive(Clone, Debug, PartialEq)]
pub struct DataStep {
    /// Unique among the steps of its section; messages and the result name it.
    pub name: String,
    /// What it runs.
    pub action: DataAction,
    /// When it runs (`[data]`; a teardown step runs at the end).
    pub after: DataStage,
    /// How long it may take before it is killed and the run fails.
    pub timeout: Duration,
}

impl DataStep {
    /// What of it changes the data loaded: its name, when it runs, and what it runs (for SQL,
    /// each file's name and the digest of its contents).
    pub fn identity(&self) -> serde_json::Value {
        let action = match &self.action {
            DataAction::Sql { dependency, files } => serde_json::json!({
                "sql": files.iter().map(|f| serde_json::json!({
                    "file": f.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                    "sha256": f.sha256,
                })).collect::<Vec<_>>(),
                "dependency": dependency,
            }),
            DataAction::Command { command, args, env } => serde_json::json!({
                "command": command,
                "args": args,
                "env": env,
            }),
        };
        serde_json::json!({
            "name": self.name,
            "after": self.after.name(),
            "action": action,
        })
    }
}

/// What a data step runs.
#[derive(Clone, Debug, PartialEq)]
pub enum DataAction {
    /// SQL files run in order by `psql` against a PostgreSQL dependency, stopping at the first
    /// error (`ON_ERROR_STOP`), with the seed, the tier and `[data] vars` as psql variables.
    Sql {
        /// The `[[dependency]]` they run against.
        dependency: String,
        /// The files, resolved against the config file's directory, with their digests.
        files: Vec<SqlFile>,
    },
    /// A program with arguments (templates filled in) and environment.
    Command {
        /// The program (a path, or a name looked up in `$PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment, beside loadgate's own.
        env: BTreeMap<String, String>,
    },
}

/// An SQL file of a data step.
#[derive(Clone, Debug, PartialEq)]
pub struct SqlFile {
    /// Where it is (absolute, or relative to the working directory when the config's was).
    pub path: PathBuf,
    /// sha256 (hex) of its contents when the config was read.
    pub sha256: String,
}

/// When a data step runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataStage {
    /// Once the dependencies are ready, before the target starts (the default).
    #[default]
    Dependencies,
    /// Once the target is ready, before the measurement: against its API.
    Target,
}

impl DataStage {
    /// The stage as the config writes it (`after = "…"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Dependencies => "dependencies",
            Self::Target => "target",
        }
    }
}

/// A `[[probe]]`: a dependency sampled once a second during the run, with optional limits that
/// make its series gate checks.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeConfig {
    /// Its name in the result and reports (default the dependency's; `metrics` for a
    /// `prometheus` probe of the target or a URL).
    pub name: String,
    /// What it samples.
    pub kind: ProbeKind,
    /// The `[[dependency]]` it watches: a `postgres` probe's database, or the dependency a
    /// `prometheus` probe scrapes (the target when `None`). A probe is kept in the profiles that
    /// boot its dependency.
    pub dependency: Option<String>,
    /// Where a `prometheus` probe scrapes: a path on the target or on its dependency.
    pub path: Option<String>,
    /// Where a `prometheus` probe scrapes: a URL on loopback (instead of `path`).
    pub url: Option<String>,
    /// The series a `prometheus` probe keeps, each a selector as written (`name` or
    /// `name{label="value"}`, see `measure::exposition`).
    pub series: Vec<String>,
    /// Gate checks: series name → highest allowed value (a gauge's largest sample, a counter's
    /// increase over the run).
    pub limits: BTreeMap<String, f64>,
    /// Where it is written, `file:line:col`.
    pub location: String,
}

impl ProbeConfig {
    /// What it watches, for the result and people: its dependency's name, `target`, or its URL.
    pub fn watches(&self) -> String {
        match (&self.dependency, &self.url) {
            (Some(d), _) => d.clone(),
            (None, Some(url)) => url.clone(),
            (None, None) => "target".to_owned(),
        }
    }
}

/// What a probe samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// `pg_stat_activity` and `pg_stat_database` of a PostgreSQL dependency.
    Postgres,
    /// Named series of a Prometheus `/metrics` page (the target's own, a dependency's, or a URL).
    Prometheus,
}

impl ProbeKind {
    /// The kind as written.
    pub fn name(self) -> &'static str {
        match self {
            Self::Postgres => "postgres",
            Self::Prometheus => "prometheus",
        }
    }
}

/// A `[[dependency]]`: a companion of the target (a database, a cache) that loadgate boots before
/// it, hands to it through environment variables, and removes on every path.
#[derive(Clone, Debug, PartialEq)]
pub struct DependencyConfig {
    /// Its name, unique among the dependencies; templates name it (`{{db.port}}`).
    pub name: String,
    /// How it is run; `None` follows the target's kind (`--target`).
    pub kind: Option<DependencyKind>,
    /// What is run.
    pub source: DependencySource,
    /// The port it listens on: fixed when written, a free loopback port otherwise.
    pub port: Option<u16>,
    /// How loadgate tells it is ready.
    pub ready: DependencyReady,
    /// CPU limit in cores (container kind).
    pub cpus: Option<f64>,
    /// Memory limit in bytes (container kind).
    pub memory_bytes: Option<u64>,
    /// Its own environment (values may name other dependencies' addresses).
    pub env: BTreeMap<String, String>,
    /// The dependencies booted (and ready) before this one.
    pub depends_on: Vec<String>,
    /// Where it is written, `file:line:col`, for people.
    pub location: String,
}

/// An `[[audit]]`: a request sent after the run whose answer must satisfy the operation's
/// expectation language and comparisons with loadgate's own counts (seed 002's correctness
/// oracle: durable effects reconciled with the logical operations the generator saw).
#[derive(Clone, Debug, PartialEq)]
pub struct AuditConfig {
    /// Unique among the audits; the JUnit case and the result are named after it.
    pub name: String,
    /// What to send: no template variables (there is no session).
    pub request: RequestTemplate,
    /// What a correct answer looks like, as an operation's `expect`.
    pub expect: Expect,
    /// The comparisons of values in the answer with numbers or with loadgate's counts.
    pub checks: Vec<AuditCheck>,
    /// Where it is written, `file:line:col`, for people.
    pub location: String,
}

/// One `[[stub]]`: a fake downstream service loadgate serves on 127.0.0.1 beside the target
/// (issue 15, seed 000), whose address the target reads from `env`.
#[derive(Clone, Debug, PartialEq)]
pub struct StubConfig {
    /// Unique among the stubs; the result and the reports name it.
    pub name: String,
    /// The target's environment variable that gets its URL, `http://127.0.0.1:PORT`.
    pub env: String,
    /// Its port on 127.0.0.1; 0 takes a free one.
    pub port: u16,
    /// The delay of its answers.
    pub latency: crate::stub::Latency,
    /// The share of requests answered with `error_status`.
    pub errors: f64,
    /// The status of those answers.
    pub error_status: u16,
    /// The share of requests never answered.
    pub timeouts: f64,
    /// Its routes, matched in order.
    pub routes: Vec<crate::stub::Route>,
    /// Where it is written, `file:line:col`, for people.
    pub location: String,
}

impl StubConfig {
    /// What the stub serves, with its stream of draws derived from the workload's `seed`.
    pub fn spec(&self, seed: u64) -> crate::stub::StubSpec {
        crate::stub::StubSpec {
            name: self.name.clone(),
            port: self.port,
            routes: self.routes.clone(),
            latency: self.latency.clone(),
            errors: self.errors,
            error_status: self.error_status,
            timeouts: self.timeouts,
            seed: crate::stats::derive_seed(seed, &format!("stub {}", self.name)),
        }
    }

    /// What the config hash takes of a stub: everything that shapes its answers, not its port.
    pub fn identity(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "env": self.env,
            "latency": self.latency,
            "errors": self.errors,
            "error_status": self.error_status,
            "timeouts": self.timeouts,
            "routes": self.routes,
        })
    }
}

/// One `[[fault]]`: a change to a stub's answers, or a replica of the target killed or paused,
/// applied `at` into the soak's measured part and removed `duration` later (issue 15, seed 002).
#[derive(Clone, Debug, PartialEq)]
pub struct FaultConfig {
    /// Unique among the faults; the result and the reports name it.
    pub name: String,
    /// The phase it runs in: `soak`, the only one for now.
    pub phase: String,
    /// When it is applied, from the start of the phase's measured part.
    pub at: Duration,
    /// How long it holds.
    pub duration: Duration,
    /// What it acts on, and how.
    pub target: FaultTarget,
    /// The objective the service must meet while the fault holds (`degraded`), if one is
    /// declared: looser than `[slo]`, judged on the phase's windows inside the fault.
    pub degraded: Option<DegradedObjective>,
    /// Where it is written, `file:line:col`, for people.
    pub location: String,
}

/// `degraded = { p50, p99, error-rate }` of a `[[fault]]`: what the service must still meet while
/// the fault holds (seed 002: "behaviour during the fault against a degraded objective"). At
/// least one limit.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DegradedObjective {
    /// The most a window's p50 may be.
    #[serde(rename = "p50_ms", with = "crate::measure::option_millis", default)]
    pub p50: Option<Duration>,
    /// The most a window's p99 may be.
    #[serde(rename = "p99_ms", with = "crate::measure::option_millis", default)]
    pub p99: Option<Duration>,
    /// The largest share of a window's completed requests that may fail.
    #[serde(default)]
    pub error_rate: Option<f64>,
}

/// What a `[[fault]]` acts on.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultTarget {
    /// A `[[stub]]`'s answers (`stub = "…"` with `latency` and/or `errors`).
    Stub {
        /// The stub's name.
        stub: String,
        /// What it does to the stub's answers.
        change: crate::stub::StubFault,
    },
    /// A replica of the target (`replica = N` with `action`).
    Replica {
        /// The replica's index, 1 up to `[target] replicas` − 1 (replica 0 is the one whose
        /// resources are sampled, and stays up).
        replica: u32,
        /// What is done to it.
        action: ReplicaAction,
    },
}

/// What a fault does to a replica: killed and restarted, or paused and resumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaAction {
    /// `kill`: SIGKILL at `at` (the service gets no chance to close its connections), and a new
    /// instance on the same port when the fault is removed, ready again by its readiness check.
    Kill,
    /// `pause`: SIGSTOP at `at` (connections stay open and unanswered: the replica hangs), SIGCONT
    /// when the fault is removed.
    Pause,
}

impl ReplicaAction {
    /// As the config writes it: `kill`, `pause`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kill => "kill",
            Self::Pause => "pause",
        }
    }
}

impl FaultConfig {
    /// What it does, for people: `latency +180ms`, `latency ×3`, `errors 50%`, `kill replica 1`.
    pub fn describe(&self) -> String {
        let change = match &self.target {
            FaultTarget::Stub { change, .. } => change,
            FaultTarget::Replica { replica, action } => {
                return format!("{} replica {replica}", action.as_str());
            }
        };
        let mut parts = Vec::new();
        if !change.extra.is_zero() {
            parts.push(format!(
                "latency +{}",
                super::units::format_duration(change.extra)
            ));
        }
        if change.factor != 1.0 {
            parts.push(format!(
                "latency ×{}",
                super::units::format_number(change.factor)
            ));
        }
        if let Some(errors) = change.errors {
            parts.push(format!("errors {}", super::units::format_percent(errors)));
        }
        parts.join(", ")
    }

    /// The stub it changes, if it acts on one.
    pub fn stub(&self) -> Option<&str> {
        match &self.target {
            FaultTarget::Stub { stub, .. } => Some(stub),
            FaultTarget::Replica { .. } => None,
        }
    }

    /// What the config hash takes of a fault: all of it but where it is written. A stub fault
    /// hashes as it did before replica faults existed.
    pub fn identity(&self) -> serde_json::Value {
        let mut identity = match &self.target {
            FaultTarget::Stub { stub, change } => serde_json::json!({
                "name": self.name,
                "phase": self.phase,
                "at_ms": self.at.as_secs_f64() * 1e3,
                "for_ms": self.duration.as_secs_f64() * 1e3,
                "stub": stub,
                "extra_ms": change.extra.as_secs_f64() * 1e3,
                "factor": change.factor,
                "errors": change.errors,
            }),
            FaultTarget::Replica { replica, action } => serde_json::json!({
                "name": self.name,
                "phase": self.phase,
                "at_ms": self.at.as_secs_f64() * 1e3,
                "for_ms": self.duration.as_secs_f64() * 1e3,
                "replica": replica,
                "action": action.as_str(),
            }),
        };
        // A degraded objective judges the run, so it enters the hash; a fault without one hashes
        // as it did before the key existed.
        if let (Some(d), Some(map)) = (&self.degraded, identity.as_object_mut()) {
            map.insert(
                "degraded".to_owned(),
                serde_json::to_value(d).unwrap_or_default(),
            );
        }
        identity
    }
}

impl DependencyConfig {
    /// What the config hash takes of a dependency: its name, its declared kind and what it runs —
    /// not its port (free, so it differs between runs), readiness or limits' placement.
    pub fn identity(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "kind": self.kind.map_or("auto", DependencyKind::name),
            "source": self.source.identity(),
        })
    }
}

/// How a dependency is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DependencyKind {
    /// In a container on the local Docker engine.
    Container,
    /// As a local child process in its own process group.
    Process,
    /// Already running at an address; nothing is booted.
    Url,
}

impl DependencyKind {
    /// The kind as the config writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Container => "container",
            Self::Process => "process",
            Self::Url => "url",
        }
    }
}

/// What a dependency runs.
#[derive(Clone, Debug, PartialEq)]
pub enum DependencySource {
    /// A preset: loadgate knows how to run it as a process (and which image as a container).
    Preset {
        /// Which one.
        preset: Preset,
        /// The image when it runs as a container (`image`, default the preset's).
        image: Option<String>,
        /// Whether a missing image may be pulled.
        pull: PullPolicy,
    },
    /// A local image (or one pulled with `pull = "missing"`).
    Image {
        /// `name:tag`.
        reference: String,
        /// Whether a missing image may be pulled.
        pull: PullPolicy,
    },
    /// A Dockerfile built by loadgate.
    Dockerfile {
        /// The Dockerfile, resolved against the config file's directory.
        path: PathBuf,
    },
    /// A command run as a child process.
    Command {
        /// The program.
        command: String,
        /// Its arguments (may name `{{self.port}}` and other dependencies).
        args: Vec<String>,
    },
    /// An existing one, at `scheme://host:port…`.
    Url {
        /// The address as written.
        url: String,
    },
}

impl DependencySource {
    fn identity(&self) -> serde_json::Value {
        match self {
            Self::Preset { preset, image, .. } => {
                serde_json::json!({ "preset": preset.name(), "image": image })
            }
            Self::Image { reference, .. } => serde_json::json!({ "image": reference }),
            Self::Dockerfile { path } => serde_json::json!({
                "dockerfile": path.file_name().map(|f| f.to_string_lossy().into_owned())
            }),
            Self::Command { command, args } => {
                serde_json::json!({ "command": command, "args": args })
            }
            // Where an existing server is does not change what it is.
            Self::Url { url } => serde_json::json!({
                "url": url.split("://").next().unwrap_or_default()
            }),
        }
    }
}

/// A dependency loadgate knows how to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// PostgreSQL: the system's binaries (`initdb`, `postgres`) as a process with a temporary
    /// data directory, or an image (`postgres:16`) as a container.
    Postgres,
}

impl Preset {
    /// Every preset, in the order messages list them.
    pub const ALL: [Preset; 1] = [Preset::Postgres];

    /// The preset as the config writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Postgres => "postgres",
        }
    }

    /// The image it runs as a container when the config names none.
    pub fn default_image(self) -> &'static str {
        match self {
            Self::Postgres => "postgres:16",
        }
    }

    /// The port it listens on inside a container.
    pub fn container_port(self) -> u16 {
        match self {
            Self::Postgres => 5432,
        }
    }
}

/// One `check` of an audit: the number at `pointer` in the answer, compared with an operand.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditCheck {
    /// A JSON pointer into the answer (RFC 6901).
    pub pointer: String,
    /// How the answer's number must relate to the operand.
    pub relation: AuditRelation,
    /// A number, or one of loadgate's counts.
    pub operand: AuditOperand,
}

/// How an audit check compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditRelation {
    /// `equals`.
    Equals,
    /// `at-most`: the answer is at most the operand.
    AtMost,
    /// `at-least`: the answer is at least the operand.
    AtLeast,
}

impl AuditRelation {
    /// Every relation with the key that writes it, in the order messages list them.
    pub const ALL: [(&'static str, AuditRelation); 3] = [
        ("equals", AuditRelation::Equals),
        ("at-most", AuditRelation::AtMost),
        ("at-least", AuditRelation::AtLeast),
    ];

    /// The key that writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditRelation::Equals => "equals",
            AuditRelation::AtMost => "at-most",
            AuditRelation::AtLeast => "at-least",
        }
    }

    /// Whether `answer` relates to `operand` as this relation says.
    pub fn holds(self, answer: f64, operand: f64) -> bool {
        match self {
            AuditRelation::Equals => answer == operand,
            AuditRelation::AtMost => answer <= operand,
            AuditRelation::AtLeast => answer >= operand,
        }
    }
}

/// Whether a dependency's image may be pulled (the service under test's never is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PullPolicy {
    /// Only a local image is used.
    #[default]
    Never,
    /// Pulled when it is not in the local engine.
    Missing,
}

/// A dependency's readiness: one check, polled until it passes or the timeout.
#[derive(Clone, Debug, PartialEq)]
pub struct DependencyReady {
    /// What is checked.
    pub check: ReadyCheck,
    /// How long to wait before giving up.
    pub timeout: Duration,
    /// The pause between checks.
    pub interval: Duration,
}

/// One readiness check of a dependency.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadyCheck {
    /// A TCP connect to its port succeeds.
    Tcp,
    /// `GET path` on its port answers 2xx.
    Http(String),
    /// This command exits 0 (its arguments may name `{{self.port}}`).
    Command(Vec<String>),
}

impl ReadyCheck {
    /// For people: `a TCP connect to 127.0.0.1:5432`, `GET /health`, `pg_isready -h …`.
    pub fn describe(&self, host: &str, port: Option<u16>) -> String {
        let at = port.map_or_else(|| host.to_owned(), |p| format!("{host}:{p}"));
        match self {
            Self::Tcp => format!("a TCP connect to {at}"),
            Self::Http(path) => format!("GET http://{at}{path} answering 2xx"),
            Self::Command(argv) => format!("`{}` exiting 0", argv.join(" ")),
        }
    }
}

/// What an audit check compares the answer with.
#[derive(Clone, Debug, PartialEq)]
pub enum AuditOperand {
    /// A number written in the config.
    Number(f64),
    /// One of loadgate's counts, summed over every phase of the run (warm-ups included: the
    /// service saw those requests too).
    Count(CountRef),
}

/// One of loadgate's counts of one operation, written `kind.operation`, e.g.
/// `acknowledged.transfer`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountRef {
    /// Which count.
    pub kind: CountKind,
    /// The operation's name, as in `[[workload.operation]]`.
    pub operation: String,
}

impl std::fmt::Display for CountRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.kind.as_str(), self.operation)
    }
}

/// The counts an audit can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountKind {
    /// `logical`: logical operations sent (each once, however many attempts it took).
    Logical,
    /// `attempts`: attempts sent, retries included.
    Attempts,
    /// `retries`: attempts past the first.
    Retries,
    /// `acknowledged`: logical operations whose final answer passed the operation's `expect`.
    Acknowledged,
    /// `unacknowledged`: logical operations sent and never acknowledged (`logical −
    /// acknowledged`): failed, timed out, or cut at the end of a phase.
    Unacknowledged,
}

impl CountKind {
    /// Every count with the word that writes it, in the order messages list them.
    pub const ALL: [(&'static str, CountKind); 5] = [
        ("logical", CountKind::Logical),
        ("attempts", CountKind::Attempts),
        ("retries", CountKind::Retries),
        ("acknowledged", CountKind::Acknowledged),
        ("unacknowledged", CountKind::Unacknowledged),
    ];

    /// The word that writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            CountKind::Logical => "logical",
            CountKind::Attempts => "attempts",
            CountKind::Retries => "retries",
            CountKind::Acknowledged => "acknowledged",
            CountKind::Unacknowledged => "unacknowledged",
        }
    }
}

/// An `[[accept]]` entry: an intended change, for users who do not write `Loadgate-Accept`
/// trailers. It applies only while one of `commits` is among the head's commits.
#[derive(Clone, Debug, PartialEq)]
pub struct AcceptConfig {
    /// The commits whose change is intended: full or abbreviated ids, lowercase.
    pub commits: Vec<String>,
    /// What it covers.
    pub scope: crate::compare::AcceptScope,
    /// The accepted amount, as [`crate::compare::Accept::amount`].
    pub amount: f64,
    /// Why the change is intended.
    pub reason: String,
    /// Where it is written, `file:line:col`, for people.
    pub location: String,
}

/// Where a configuration was read from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigSource {
    /// The file that was read: a `Cargo.toml` or a `loadgate.toml`.
    pub path: PathBuf,
    /// The cargo package the config belongs to, when there is one (not for `--config FILE`).
    pub package: Option<PackageRef>,
}

/// A cargo package found through `cargo metadata`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PackageRef {
    /// The package's name.
    pub name: String,
    /// Its `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// The root of the workspace it belongs to.
    pub workspace_root: PathBuf,
    /// The workspace's target directory.
    pub target_directory: PathBuf,
    /// The names of the package's binary targets.
    pub bins: Vec<String>,
}

/// How the service under test is obtained.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum TargetSource {
    /// A binary target of the config's cargo package, built by loadgate.
    Bin {
        /// The binary target's name.
        name: String,
    },
    /// An image that exists in the local Docker engine (never pulled).
    Image {
        /// `name:tag` or `name@digest`.
        reference: String,
    },
    /// A Dockerfile built by loadgate.
    Dockerfile {
        /// The Dockerfile, resolved against the config file's directory.
        path: PathBuf,
        /// The build context (defaults to the Dockerfile's directory).
        context: PathBuf,
    },
    /// A service that is already running; nothing is booted.
    Url {
        /// Its base URL.
        url: String,
    },
}

/// How the target is run. Chosen on the command line, or automatically (container when a Docker
/// engine answers, process otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// In a container on the local Docker engine.
    Container,
    /// As a local child process on a loopback port.
    Process,
    /// Already running at a URL.
    Url,
}

impl TargetKind {
    /// The kind as the config and `--target` write it: `container`, `process`, `url`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Container => "container",
            Self::Process => "process",
            Self::Url => "url",
        }
    }
}

/// `[target]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TargetConfig {
    /// What to run.
    pub source: TargetSource,
    /// The port the service listens on inside its container (given to it as `$PORT`).
    pub port: u16,
    /// The readiness check.
    pub ready: ReadyConfig,
    /// CPU limit for a container, in cores.
    pub cpus: Option<f64>,
    /// Memory limit for a container, in bytes.
    pub memory_bytes: Option<u64>,
    /// Extra environment for the service (the command line's `--env` is added later).
    pub env: BTreeMap<String, String>,
    /// Arguments passed to the service.
    pub args: Vec<String>,
    /// How the load reaches a container target (`[target] network`). Left out of the serialized
    /// config, so it never changes the config hash: what matters to a comparison is the path a
    /// run took, which is in its fingerprint (`baseline::Fingerprint::network`).
    #[serde(skip)]
    pub network: NetworkChoice,
    /// `[target] replicas`: how many instances of the service are booted, with identical limits,
    /// each on its own port; the generator spreads sessions across them and fails over between
    /// them (`generator.failover`). Left out of the serialized config when 1, so the config hash
    /// of a config without it is what it was before the key existed.
    #[serde(skip_serializing_if = "is_one")]
    pub replicas: u32,
}

/// `[target] network`: how the generator reaches a container target. docs/decisions.md
/// ("The network path") has the measurements behind the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkChoice {
    /// Host networking when the engine runs on this machine's kernel (not Docker Desktop, not
    /// rootless), the published port otherwise, with the reason stated.
    #[default]
    Auto,
    /// The container shares the host's network: the service listens on `$HOST:$PORT`
    /// (127.0.0.1 and a free port), with no proxy between it and the generator.
    Host,
    /// The container's port published on 127.0.0.1 through the engine's port forwarding
    /// (Docker's userland proxy where it is on).
    Published,
}

impl NetworkChoice {
    /// The choice as the config writes it: `auto`, `host`, `published`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Host => "host",
            Self::Published => "published",
        }
    }
}

/// `[target.ready]`: the service is ready when `GET path` answers 2xx.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReadyConfig {
    /// The path polled, e.g. `/health`.
    pub path: String,
    /// How long to wait before giving up.
    pub timeout: Duration,
    /// The pause between polls.
    pub interval: Duration,
}

/// `[slo]`: the failure condition of seed 000 ("99% within 200 ms").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SloConfig {
    /// Latency limits by quantile (0.5, 0.9, 0.95, 0.99, 0.999), measured from the intended send time.
    pub latency: Vec<LatencyLimit>,
    /// The highest acceptable fraction of requests that fail (wrong answers count as failures).
    pub error_rate: f64,
    /// A class needs at least this many requests in a step before its percentiles are judged.
    pub min_requests: u64,
    /// `slo.headroom`: the least capacity / production load a run must show (1.5 = 1.5×), the
    /// production load being the workload's rate at 100%. A judgement of the knee, not a part of
    /// the failure condition: like `[gate]` it is left out of the serialized config, so the
    /// config hash (and every stored baseline's match) does not change with it.
    #[serde(skip)]
    pub headroom: Option<f64>,
    /// `slo.recovery`: the longest acceptable time to stable SLO after a declared event (a gate
    /// check). A judgement like `headroom`, left out of the serialized config and its hash.
    #[serde(skip)]
    pub recovery: Option<Duration>,
}

/// One latency limit of the SLO.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyLimit {
    /// The quantile, in (0, 1), e.g. 0.99.
    pub quantile: f64,
    /// The limit.
    pub limit: Duration,
}

/// `[workload]`: the user model (seed 000) and its arrival rate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadConfig {
    /// The seed of every random draw: arrivals, paths, think times, template values.
    pub seed: u64,
    /// Session arrivals per second (a Poisson process). The request rate follows from the model.
    pub sessions_per_sec: f64,
    /// Entry operations with their weights (normalized to sum to 1).
    pub entry: Vec<EntryPoint>,
    /// The operations, in the order they were written.
    pub operations: Vec<OperationConfig>,
}

/// One weighted entry into the user model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EntryPoint {
    /// Index into [`WorkloadConfig::operations`].
    pub operation: usize,
    /// Probability of starting a session here; the entries sum to 1.
    pub p: f64,
}

/// `[[workload.operation]]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OperationConfig {
    /// Unique name; the class latency is reported under.
    pub name: String,
    /// What to send.
    pub request: RequestTemplate,
    /// What a correct answer looks like.
    pub expect: Expect,
    /// Session variables captured from the response: (variable, JSON pointer).
    pub capture: Vec<Capture>,
    /// Where a session goes next; the probabilities sum to at most 1 and the rest ends the session.
    pub next: Vec<Transition>,
    /// Whether this operation's p50 and p99 are primary metrics that decide the verdict
    /// (`gate = true`); per-operation latencies only warn otherwise. A judgement, not part of the
    /// measurement: the config hash leaves it out.
    #[serde(skip)]
    pub gate: bool,
    /// This operation's own retry policy (`retry = { … }` or `retry = false`), over
    /// `generator.retry`. Left out of the serialized config when it inherits, so the config hash
    /// of a config without retries is what it was before the key existed.
    #[serde(skip_serializing_if = "OperationRetry::is_inherit")]
    pub retry: OperationRetry,
    /// `idempotent = true`: the operation may be retried without an `Idempotency-Key` header
    /// (the service dedups it some other way). A judgement of the config's author that validation
    /// reads; it changes nothing that is sent, so the config hash leaves it out.
    #[serde(skip)]
    pub idempotent: bool,
}

impl OperationConfig {
    /// The retry policy this operation's requests follow: its own, else `generator`'s; `None`
    /// when it is not retried.
    pub fn retry_policy<'a>(
        &'a self,
        generator: Option<&'a RetryPolicy>,
    ) -> Option<&'a RetryPolicy> {
        match &self.retry {
            OperationRetry::Inherit => generator,
            OperationRetry::Off => None,
            OperationRetry::Policy(policy) => Some(policy),
        }
    }

    /// Whether the request carries an `Idempotency-Key` header (names are case-insensitive,
    /// RFC 9110 §5.1).
    pub fn has_idempotency_key(&self) -> bool {
        self.request
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case(IDEMPOTENCY_KEY))
    }
}

/// The header a retried non-idempotent request must carry, so that the service can tell a retry
/// from a new operation (draft-ietf-httpapi-idempotency-key-header).
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

/// An operation's `retry`: the generator's policy, none, or one of its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OperationRetry {
    /// Not written: `generator.retry` applies.
    #[default]
    Inherit,
    /// `retry = false`: never retried.
    Off,
    /// `retry = { … }`: this policy.
    Policy(RetryPolicy),
}

impl OperationRetry {
    /// Whether the operation follows `generator.retry`.
    pub fn is_inherit(&self) -> bool {
        matches!(self, OperationRetry::Inherit)
    }
}

/// `retry = { attempts, on, backoff }`: a client that tries a logical operation again. Every
/// attempt re-sends the same bytes (the request is rendered once per logical operation, so it
/// carries the same idempotency key), and the logical operation is what goodput, error rates and
/// latency count (seed 002: goodput counts logical operations, not attempts).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetryPolicy {
    /// The most attempts per logical operation, the first included (at least 1).
    pub attempts: u32,
    /// Which failures are retried.
    pub on: RetryOn,
    /// The wait before the first retry; each later retry waits twice as long as the one before,
    /// times a seeded factor in [0.5, 1) (equal jitter).
    pub backoff: Duration,
}

/// The failures a retry policy retries (`on = ["connect", "5xx", "timeout"]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RetryOn {
    /// The connection could not be established.
    pub connect: bool,
    /// A 5xx status the operation does not expect.
    pub status_5xx: bool,
    /// No complete answer within `generator.timeout`.
    pub timeout: bool,
}

impl RetryOn {
    /// Every failure a client retries: connect errors, 5xx and timeouts.
    pub const ALL: RetryOn = RetryOn {
        connect: true,
        status_5xx: true,
        timeout: true,
    };
}

/// A request with `{{name}}` placeholders: `session`, `seq`, `rand`, and captured variables.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestTemplate {
    /// HTTP method, upper case.
    pub method: String,
    /// Path and query, starting with `/`.
    pub path: String,
    /// Headers in the order written.
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<BodyTemplate>,
}

/// A request body template.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyTemplate {
    /// A JSON document; placeholders may appear in its strings. Sent with `content-type: application/json`.
    Json(serde_json::Value),
    /// Raw text.
    Raw(String),
}

/// What a correct answer looks like. Every part that is set must hold; the default (nothing set)
/// accepts any 2xx answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Expect {
    /// Accepted status codes (default: any 2xx when empty).
    pub status: Vec<u16>,
    /// The body must contain this text.
    pub body_contains: Option<String>,
    /// These JSON pointers must exist in the body.
    pub json_pointer: Vec<String>,
    /// These JSON pointers must equal these values.
    pub json_equals: Vec<(String, serde_json::Value)>,
}

/// A session variable taken from a response.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Capture {
    /// The variable's name, used as `{{name}}`.
    pub variable: String,
    /// The JSON pointer into the response body.
    pub pointer: String,
}

/// One edge of the user model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Transition {
    /// Index into [`WorkloadConfig::operations`].
    pub to: usize,
    /// Probability of taking this edge.
    pub p: f64,
    /// The pause before the next request.
    pub think: ThinkTime,
}

/// A think time distribution.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThinkTime {
    /// Exponentially distributed with this mean (the default, seed 000).
    Exponential(Duration),
    /// Exactly this long.
    Fixed(Duration),
    /// Uniform between the two bounds.
    Uniform(Duration, Duration),
}

/// The most connections a phase keeps open to the target; requests beyond wait for one (see
/// `engine/pool.rs` for why: a connect storm during a stall measures the client, not the target).
/// It lives here, not in the engine, because it bounds a value of the config: validation refuses a
/// `generator.connections` above it, and the engine, downstream, reads it from here.
pub const MAX_CONNECTIONS: usize = 256;

/// `[generator]`: limits of the open-loop generator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GeneratorConfig {
    /// Per-request timeout; a request past it is a transport error.
    pub timeout: Duration,
    /// The most requests in flight; arrivals beyond it are dropped and counted.
    pub max_in_flight: usize,
    /// A phase whose pacing lag p99 exceeds this is invalid.
    pub max_lag: Duration,
    /// A phase whose dropped share of arrivals exceeds this is invalid.
    pub max_drop_rate: f64,
    /// A fixed pool of this many keep-alive connections, opened before each phase starts; 0:
    /// opened on demand, up to [`MAX_CONNECTIONS`]. Left out of the serialized
    /// config when 0, so that the config hash of a config that does not use it is what it was
    /// before the key existed (baselines stored then still match).
    #[serde(skip_serializing_if = "is_zero")]
    pub connections: usize,
    /// How many event loops the generator runs, each on a thread pinned to a core of its own.
    /// Left out of the serialized config when it runs one loop (`"auto"` does today, see
    /// [`GeneratorThreads`]), so that the config hash of a config that does not ask for more is
    /// what it was before the key existed.
    #[serde(skip_serializing_if = "GeneratorThreads::is_one_loop")]
    pub threads: GeneratorThreads,
    /// `generator.retry`: the retry policy of every operation that does not set its own; `None`
    /// (the default) sends every logical operation once. Left out of the serialized config when
    /// `None`, so the config hash of a config without it is what it was before the key existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// `generator.failover`: where the next attempt of a logical operation goes when a replica
    /// fails it (`[target] replicas` above one); `None` is [`FailoverPolicy::DEFAULT`]. Left out
    /// of the serialized config when `None`, so the config hash of a config without it is what it
    /// was before the key existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverPolicy>,
}

impl GeneratorConfig {
    /// The failover policy in force: `generator.failover`, else [`FailoverPolicy::DEFAULT`].
    pub fn failover_policy(&self) -> &FailoverPolicy {
        self.failover.as_ref().unwrap_or(&FailoverPolicy::DEFAULT)
    }
}

/// `generator.failover = { attempts, on, backoff, eject }`: how the generator's client treats
/// the replicas of a target booted with `[target] replicas` above one, as a client behind a
/// client-side load balancer does (seed 003). A session sticks to one replica, drawn from the
/// seed. An attempt that fails in a way `on` names moves the session to the next replica and,
/// while `attempts` are left, the same request is sent there (each attempt counts, as a retry's
/// does); the replica that failed is ejected for `eject`: the requests of sessions whose replica
/// it is go to the next one meanwhile (and those sessions stick there); after `eject` it is tried
/// again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FailoverPolicy {
    /// The most replicas one logical operation's attempts go to, the first included; 1 never
    /// sends an attempt to another replica.
    pub attempts: u32,
    /// Which failures move the session to another replica.
    pub on: FailoverOn,
    /// The wait before the attempt on the next replica.
    pub backoff: Duration,
    /// How long a replica that failed an attempt is given no sessions; zero never ejects.
    pub eject: Duration,
}

impl FailoverPolicy {
    /// What a client does when `generator.failover` is not written: one attempt on the next
    /// replica after a connect error (which never reached the service, so any method may be
    /// sent again), no wait, and the failed replica ejected for 1 s.
    pub const DEFAULT: FailoverPolicy = FailoverPolicy {
        attempts: 2,
        on: FailoverOn {
            connect: true,
            reset: false,
            timeout: false,
            status_5xx: false,
        },
        backoff: Duration::ZERO,
        eject: Duration::from_secs(1),
    };

    /// `failover = false`: every attempt goes to the session's own replica, never ejected.
    pub const OFF: FailoverPolicy = FailoverPolicy {
        attempts: 1,
        on: FailoverOn {
            connect: false,
            reset: false,
            timeout: false,
            status_5xx: false,
        },
        backoff: Duration::ZERO,
        eject: Duration::ZERO,
    };

    /// Whether an attempt it sends again may follow one that reached the service (anything but
    /// a connect error): an operation that is not idempotent then needs an idempotency key.
    pub fn may_repeat_effects(&self) -> bool {
        self.attempts > 1 && (self.on.reset || self.on.timeout || self.on.status_5xx)
    }
}

/// The failures that move a session to another replica (`on = ["connect", "reset", "timeout",
/// "5xx"]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FailoverOn {
    /// The connection could not be established (the replica is down).
    pub connect: bool,
    /// The connection was reset or closed before a complete answer (the replica died mid-request).
    pub reset: bool,
    /// No complete answer within `generator.timeout` (the replica hangs).
    pub timeout: bool,
    /// A 5xx status the operation does not expect.
    pub status_5xx: bool,
}

/// `generator.threads`: how many event loops (threads, one per core) the generator runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GeneratorThreads {
    /// `"auto"`: one loop per core the target is not given. The target is given every core but
    /// the generator's first, so this is one loop on any machine (the engine resolves it).
    #[default]
    Auto,
    /// Exactly this many loops, at least 1 and at most the cores this process may run on.
    Count(usize),
}

impl GeneratorThreads {
    /// Whether this is one loop whatever the machine: `1`, or `"auto"` (which resolves to one
    /// loop, see [`GeneratorThreads::Auto`]).
    pub fn is_one_loop(&self) -> bool {
        matches!(self, GeneratorThreads::Auto | GeneratorThreads::Count(1))
    }
}

impl Serialize for GeneratorThreads {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            GeneratorThreads::Auto => s.serialize_str("auto"),
            GeneratorThreads::Count(n) => s.serialize_u64(*n as u64),
        }
    }
}

/// `[ramp]`: steps, then bisection between the last step that held and the first that broke.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RampConfig {
    /// Steps as fractions of the workload rate (1.0 = 100%).
    pub steps: Vec<f64>,
    /// How long each step is measured.
    pub hold: Duration,
    /// Excluded from each step's figures.
    pub warmup: Duration,
    /// Bisection iterations after the first break.
    pub refine: u32,
}

/// `[soak]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SoakConfig {
    /// How long the soak runs; zero disables it.
    pub duration: Duration,
    /// The offered load as a fraction of capacity.
    pub at: f64,
    /// The window length of the series the slopes are fitted to.
    pub window: Duration,
}

/// `[spike]`: a step of the session rate from the soak's load to `to` × capacity for `duration`,
/// then back, inside one phase.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpikeConfig {
    /// The load during the spike as a fraction of capacity (the same capacity the soak uses).
    pub to: f64,
    /// How long the spike lasts (`spike.for`); zero disables it.
    pub duration: Duration,
    /// Measured at the soak's load before the spike.
    pub before: Duration,
    /// Measured at the soak's load after the spike: how long recovery is watched.
    pub after: Duration,
}

impl SpikeConfig {
    /// Whether no spike runs (`spike.for = "0s"`).
    pub fn is_disabled(&self) -> bool {
        self.duration.is_zero()
    }
}

/// `[stress]`: the soak's load for `before`, an overload at `to` × capacity for `duration`, then
/// the soak's load for `after`, inside one phase; the stretch before is compared with the last
/// `before` of the stretch after, on the same boot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StressConfig {
    /// The load during the overload as a fraction of capacity (the soak's capacity); above 1.
    pub to: f64,
    /// How long the overload lasts (`stress.for`); zero disables it.
    pub duration: Duration,
    /// Measured at the soak's load before the overload: the level it is compared with.
    pub before: Duration,
    /// Measured at the soak's load after the overload; its last `before` is compared. Longer than
    /// `before`.
    pub after: Duration,
}

impl StressConfig {
    /// Whether no stress runs (`stress.for = "0s"`).
    pub fn is_disabled(&self) -> bool {
        self.duration.is_zero()
    }
}

/// `[recovery]`: when a service counts as stable again after an event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecoveryConfig {
    /// Consecutive 1 s windows in which every indicator holds.
    pub windows: usize,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        Self { windows: 5 }
    }
}

/// `[abort]`: the safety envelope.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AbortConfig {
    /// Stop when the error rate exceeds this share for two consecutive windows (`abort.error-rate`;
    /// serialized as `error_rate`, the name the config hash of stored baselines was taken with).
    #[serde(rename = "error_rate")]
    pub error_rate_limit: f64,
    /// Stop when p99 exceeds this duration for two consecutive windows (`abort.p99`; serialized as
    /// `p99`).
    #[serde(rename = "p99")]
    pub p99_limit: Duration,
    /// Stop a phase that runs longer than this.
    pub max_duration: Duration,
}

/// `[gate]`: the smallest change that matters, per metric.
///
/// The fields are named for what they measure, a change, where `[gate]`'s keys are named for the
/// metric; each is serialized under its key's name (`p50`, `p99`, `capacity`, `error_rate`), the
/// names the config hash of stored baselines was taken with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GateConfig {
    /// The relative change of p50 that matters (0.05 = 5%; `gate.p50`).
    #[serde(rename = "p50")]
    pub p50_change: f64,
    /// The relative change of p99 that matters (`gate.p99`).
    #[serde(rename = "p99")]
    pub p99_change: f64,
    /// The relative loss of capacity that matters (`gate.capacity`).
    #[serde(rename = "capacity")]
    pub capacity_loss: f64,
    /// The absolute increase of the error rate that matters (0.005 = 0.5 percentage points;
    /// `gate.error-rate`).
    #[serde(rename = "error_rate")]
    pub error_rate_increase: f64,
    /// RSS growth in bytes per second that counts as a leak.
    pub rss_slope_bytes_per_sec: f64,
    /// The absolute floor of a p50 change (`gate.p50-floor`): a change smaller than this is never
    /// a regression, whatever its relative size.
    #[serde(rename = "p50_floor")]
    pub p50_floor: Duration,
    /// The absolute floor of a p99 change (`gate.p99-floor`).
    #[serde(rename = "p99_floor")]
    pub p99_floor: Duration,
    /// Operations whose p50 and p99 are primary metrics, by name (`gate.operations`), beside
    /// those written with `gate = true`. Left out of the serialized gate when empty, so a config
    /// without it keeps its hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<String>,
}

impl GateConfig {
    /// The relative change of a latency percentile that matters when the base's figure is
    /// `base_ms`: the relative threshold `relative`, raised to the absolute `floor` where the
    /// floor is the larger change (criterion's noise threshold applied to time).
    pub fn floored(relative: f64, floor: Duration, base_ms: f64) -> f64 {
        let floor_ms = floor.as_secs_f64() * 1e3;
        if floor_ms > 0.0 && base_ms > 0.0 && base_ms.is_finite() {
            relative.max(floor_ms / base_ms)
        } else {
            relative
        }
    }

    /// The relative change of p50 that matters at a base p50 of `base_ms`.
    pub fn p50_delta(&self, base_ms: f64) -> f64 {
        Self::floored(self.p50_change, self.p50_floor, base_ms)
    }

    /// The relative change of p99 that matters at a base p99 of `base_ms`.
    pub fn p99_delta(&self, base_ms: f64) -> f64 {
        Self::floored(self.p99_change, self.p99_floor, base_ms)
    }
}

/// `[paired] mode`: how the head is compared with its base.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ComparisonMode {
    /// Paired when the base can be built or a stored build of it exists, stored otherwise.
    Auto,
    /// Base and head booted side by side and measured in alternating blocks in one job.
    Paired,
    /// The head alone, compared with a baseline stored by an earlier run.
    Stored,
}

impl ComparisonMode {
    /// The mode as the config and the command line write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Paired => "paired",
            Self::Stored => "stored",
        }
    }
}

/// `[paired]`: the design of a paired comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairedConfig {
    /// `[paired] mode`.
    pub mode: ComparisonMode,
    /// `[paired] pairs`: the number of block pairs (the most, with `adaptive`).
    pub pairs: usize,
    /// `[paired] block`: the measured length of one block.
    pub block: Duration,
    /// `[paired] warmup`: discarded at the start of each block.
    pub warmup: Duration,
    /// `[paired] at`: the blocks' offered load, as a share of the base's capacity.
    pub at: f64,
    /// `[paired] budget`: the most wall time the blocks may take; fewer pairs when it is short.
    pub budget: Option<Duration>,
    /// `[paired] adaptive`: add pairs, looking every few, until the verdict decides or `pairs`
    /// (or the budget) is reached; a group-sequential design whose error rate is stated.
    pub adaptive: bool,
}

/// For `skip_serializing_if`.
fn is_one(n: &u32) -> bool {
    *n == 1
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
