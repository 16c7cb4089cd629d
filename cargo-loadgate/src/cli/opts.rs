//! Command-line options (clap). Names here are a contract: the README, `ci/` and users' scripts use them.

use crate::config::{ComparisonMode, PairedConfig};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Entry point as invoked by cargo: `cargo loadgate …` runs `cargo-loadgate loadgate …`.
#[derive(Debug, Parser)]
#[command(name = "cargo", bin_name = "cargo", styles = clap::builder::Styles::plain())]
pub enum CargoOpts {
    /// Performance gate for HTTP services: boot, load, measure, compare, decide.
    Loadgate(LoadgateOpts),
}

/// `cargo loadgate`.
#[derive(Debug, Args)]
#[command(version, about, long_about = None)]
pub struct LoadgateOpts {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Boot the target, drive the workload, measure, and decide (the gate).
    Run(Box<RunOpts>),
    /// Validate the configuration and print the resolved profile and the user model.
    Check(CheckOpts),
    /// Remove containers and images that loadgate labelled and left behind.
    Clean(CleanOpts),
    /// Ad-hoc fixed-rate open-loop load against a URL, for people and benchmarks.
    Attack(Box<AttackOpts>),
    /// Store, show and list baselines.
    Baseline(BaselineOpts),
    /// Compare two run results offline with the same verdict logic as `run`.
    Compare(CompareOpts),
    /// Put several run results side by side (tiers, or before and after a change).
    Report(ReportOpts),
    /// Merge the results of the shards of one run (`run --shard i/N`) exactly, then decide with
    /// the same verdict as `run`.
    Merge(Box<MergeOpts>),
    /// Measure what the gate can see here: A/A runs against a fresh baseline, then runs with an
    /// injected regression; reports the false-regression and detection rates.
    Qualify(Box<QualifyOpts>),
    /// List the stored results along a branch's first parents with their intervals, find the
    /// change points of each metric, and chart them.
    History(Box<HistoryOpts>),
    /// Estimate the user model from access logs and write the [workload] it implies.
    Model(Box<ModelOpts>),
    /// The production load from access logs: mean + 2.33σ of sessions per interval.
    Load(Box<LoadOpts>),
}

/// `cargo loadgate history`.
#[derive(Debug, Args)]
pub struct HistoryOpts {
    /// Where the configuration comes from: only results of its config hash are listed.
    #[command(flatten)]
    pub config: ConfigOpts,
    /// Where baselines are kept: `notes`, `notes:REF` or `dir:PATH`.
    #[arg(long, value_name = "STORE", default_value = "notes")]
    pub baseline_store: String,
    /// The revision whose first parents are walked.
    #[arg(
        long,
        visible_alias = "branch",
        value_name = "REV",
        default_value = "HEAD"
    )]
    pub rev: String,
    /// The oldest commit walked (included); it must be a first-parent ancestor of `--rev`.
    /// Without it the walk goes back `--limit` commits.
    #[arg(long, value_name = "REV")]
    pub since: Option<String>,
    /// The most commits walked.
    #[arg(long, value_name = "N", default_value_t = crate::baseline::DEFAULT_WALK_LIMIT,
          value_parser = parse_limit)]
    pub limit: usize,
    /// A metric to list: p50, p99, error-rate or capacity (repeatable) [default: all].
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// The operation whose latencies to list [default: all operations together].
    #[arg(long, value_name = "NAME")]
    pub operation: Option<String>,
    /// Where history.json, the charts and history.md are written [default:
    /// target/loadgate/history/ of the workspace].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Print the history document as JSON instead of the listing.
    #[arg(long)]
    pub json: bool,
    /// Put in history.md (and `$GITHUB_STEP_SUMMARY`) only the change points that may lie
    /// after this commit, e.g. the commit before a push.
    #[arg(long, value_name = "REV")]
    pub new_since: Option<String>,
}

/// How access logs are read (`model` and `load`).
#[derive(Clone, Debug, Args)]
pub struct LogOpts {
    /// An access log, plain or gzip (repeatable; files are read in time order).
    #[arg(long = "from", value_name = "LOG", required = true)]
    pub from: Vec<PathBuf>,
    /// The log format [default: detected from the first line].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<LogFormatArg>,
    /// JSON field names, PART=FIELD separated by commas; parts: ts, method, path, status, rt,
    /// client, cookie [default: the part's own name; rt for the answer time].
    #[arg(long, value_name = "PART=FIELD,…")]
    pub json_fields: Option<String>,
    /// A route pattern naming an operation, `[METHOD ]/path/{id}=operation` (repeatable)
    /// [default: the config's operations, their method and path with each {{…}} a wildcard].
    #[arg(long = "route", value_name = "PATTERN=OPERATION")]
    pub routes: Vec<String>,
    /// What ties a session's requests together: client, cookie:NAME, header:NAME or field:NAME
    /// [default: field:user when the lines carry a `user=` field, as the demo's do; else client].
    #[arg(long, value_name = "KEY")]
    pub session_key: Option<String>,
    /// The inactivity that ends a session.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_duration_arg)]
    pub session_gap: std::time::Duration,
    /// Print the result as JSON (docs/schema/) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormatArg {
    /// NCSA combined: common plus referer and user agent (extra `name=value` fields allowed).
    Combined,
    /// NCSA common.
    Common,
    /// One JSON object per line (`--json-fields`).
    Json,
}

/// `cargo loadgate model`.
#[derive(Debug, Args)]
pub struct ModelOpts {
    /// Where the configuration comes from (its operations are the default routes, and the log
    /// is validated against its model). Optional with `--route`.
    #[command(flatten)]
    pub config: ConfigOpts,
    /// How the logs are read.
    #[command(flatten)]
    pub logs: LogOpts,
    /// Also write the [workload] TOML to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `cargo loadgate load`.
#[derive(Debug, Args)]
pub struct LoadOpts {
    /// Where the configuration comes from (for `--operation`'s routes). Optional.
    #[command(flatten)]
    pub config: ConfigOpts,
    /// How the logs are read.
    #[command(flatten)]
    pub logs: LogOpts,
    /// The interval counts are taken over: about one session's length (seed 000).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_interval)]
    pub interval: std::time::Duration,
    /// Intervals with this count or fewer are inactive and left out [default: half the 90th
    /// percentile of the counts, at least 10].
    #[arg(long, value_name = "N")]
    pub active_above: Option<f64>,
    /// Count the requests of this operation (a significant one, like login) instead of the
    /// sessions starting.
    #[arg(long, value_name = "NAME")]
    pub operation: Option<String>,
    /// The one-sided quantile of the load: 0.99 is mean + 2.33σ (seed 000).
    #[arg(long, value_name = "Q", default_value_t = 0.99, value_parser = parse_quantile)]
    pub quantile: f64,
}

fn parse_quantile(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(q) if q > 0.5 && q < 1.0 => Ok(q),
        _ => Err(format!(
            "expected a quantile above 0.5 and below 1, like 0.99, got `{s}`"
        )),
    }
}

/// `cargo loadgate report`.
#[derive(Debug, Args)]
pub struct ReportOpts {
    /// The run results (`result.json`) to put side by side, in this order.
    #[arg(value_name = "RESULT.json", required = true, num_args = 1..)]
    pub results: Vec<PathBuf>,
    /// Also write the report as Markdown to this file.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
}

/// `cargo loadgate qualify`.
#[derive(Debug, Args)]
pub struct QualifyOpts {
    /// Where the configuration comes from.
    #[command(flatten)]
    pub config: ConfigOpts,
    /// How to run the target [default: container when a Docker engine answers, else process].
    #[arg(long, value_enum, value_name = "KIND")]
    pub target: Option<TargetKindArg>,
    /// Runs of each kind: N A/A runs and N runs with the injected regression. `--runs 0` with
    /// `--inject` makes no injected run but pools the `--pool` series' runs with that knob.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub runs: u32,
    /// A/A runs, when they should differ from `--runs` [default: --runs]. `--aa-runs 0 --inject
    /// K=V` makes the injected series alone, e.g. a second knob's beside A/A runs made before.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub aa_runs: Option<u32>,
    /// The regression to inject into the service's environment, KEY=VALUE (repeatable), e.g.
    /// `DEMO_CPU_US=3000`. Without it only the A/A runs are made.
    #[arg(long = "inject", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub inject: Vec<(String, String)>,
    /// Environment for the service in every run, KEY=VALUE (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub env: Vec<(String, String)>,
    /// Where the runs and the report are written [default: target/loadgate/qualify/ of the
    /// workspace].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Qualify paired mode instead of the stored one: no baseline run; each A/A run is `run
    /// --mode paired --base-same-as-head` (the head's build booted twice), each injected run the
    /// same with the injected knob on the head only (`--head-env`).
    #[arg(long)]
    pub paired: bool,
    /// Store the baseline run as HEAD's baseline in `--baseline-store`, with the A/A runs kept
    /// beside it as noise samples: later comparisons against it take their run-to-run noise from
    /// them. The tree must be clean. Not with `--paired`, which makes no baseline run.
    #[arg(long)]
    pub save: bool,
    /// Where `--save` stores: `notes`, `notes:REF` or `dir:PATH`.
    #[arg(long, value_name = "STORE", default_value = "notes")]
    pub baseline_store: String,
    /// Go on with an earlier qualification in the same `--out-dir` (one that was interrupted, or
    /// that a longer `--runs` extends): the runs it finished are read back, not made again. It
    /// must have the same settings and commit, on a clean tree; otherwise qualify says what
    /// differs and exits 2.
    #[arg(long)]
    pub resume: bool,
    /// Pool the runs an earlier `--paired` series kept in DIR (its `--out-dir`, or a copy of its
    /// `qualify-series.json` and `*/qualify-run.json`) into this report (repeatable): its A/A
    /// runs, and its injected runs when its `--inject` is this one's. Its other settings must be
    /// this series' own and its tree clean; its commit may differ, and the report names it. With
    /// `--aa-runs 0` and no `--inject`, only the pooled runs are reported.
    #[arg(long, value_name = "DIR")]
    pub pool: Vec<PathBuf>,
}

/// `cargo loadgate baseline`.
#[derive(Debug, Args)]
pub struct BaselineOpts {
    /// Where baselines are kept: `notes`, `notes:REF` or `dir:PATH`.
    #[arg(long, value_name = "STORE", default_value = "notes", global = true)]
    pub baseline_store: String,
    /// What to do.
    #[command(subcommand)]
    pub command: BaselineCommand,
}

/// The `baseline` subcommands.
#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Store a run result (`result.json`) as the baseline of its commit.
    Save {
        /// The result to store.
        #[arg(long, value_name = "RESULT.json")]
        from: PathBuf,
        /// Allow a result measured from a work tree with uncommitted changes.
        #[arg(long)]
        allow_dirty: bool,
    },
    /// Show the baselines stored for a commit (one per environment).
    Show {
        /// The commit [default: HEAD].
        rev: Option<String>,
        /// Print the stored document as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the commits that have a baseline.
    List,
}

/// `cargo loadgate compare`.
#[derive(Debug, Args)]
pub struct CompareOpts {
    /// The baseline's result.json.
    pub base: PathBuf,
    /// The result.json to judge.
    pub head: PathBuf,
    /// Where the `[gate]` thresholds come from.
    #[command(flatten)]
    pub config: ConfigOpts,
    /// Exit 11 when the comparison cannot decide.
    #[arg(long)]
    pub fail_on_inconclusive: bool,
}

/// How the configuration is found: like cargo, or a standalone file.
#[derive(Clone, Debug, Default, Args)]
pub struct ConfigOpts {
    /// Path to the package's Cargo.toml.
    #[arg(long, value_name = "PATH", global = false)]
    pub manifest_path: Option<PathBuf>,
    /// The package whose config to use.
    #[arg(short = 'p', long = "package", value_name = "NAME")]
    pub package: Option<String>,
    /// A standalone loadgate.toml (no cargo package needed, e.g. for a URL target); with
    /// `-p`, another configuration of that package.
    #[arg(long, value_name = "FILE", conflicts_with = "manifest_path")]
    pub config: Option<PathBuf>,
    /// The profile to apply: default, quick, ci, full or one of the config's own.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
}

impl ConfigOpts {
    /// What [`crate::config::load`] needs to find the configuration these flags name.
    pub fn load_opts(&self, cwd: PathBuf) -> crate::config::LoadOpts {
        crate::config::LoadOpts {
            manifest_path: self.manifest_path.clone(),
            package: self.package.clone(),
            config: self.config.clone(),
            profile: self.profile.clone(),
            cwd,
        }
    }
}

/// The kinds of target on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TargetKindArg {
    /// In a container (the default when a Docker engine answers).
    Container,
    /// As a local child process on a loopback port.
    Process,
    /// A service already running at `--url`.
    Url,
}

/// `cargo loadgate run`.
#[derive(Debug, Args)]
pub struct RunOpts {
    /// Where the configuration comes from.
    #[command(flatten)]
    pub config: ConfigOpts,
    /// How to run the target [default: container when a Docker engine answers, else process].
    #[arg(long, value_enum, value_name = "KIND")]
    pub target: Option<TargetKindArg>,
    /// The base URL of a running service (implies `--target url`).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Allow a URL target that is not on the loopback interface.
    #[arg(long)]
    pub allow_remote: bool,
    /// Extra environment for the service, KEY=VALUE (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub env: Vec<(String, String)>,
    /// Where results are written [default: target/loadgate/ of the workspace].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Run every ramp step instead of stopping after the first that breaks.
    #[arg(long)]
    pub keep_going: bool,
    /// Where baselines are kept: `notes` (git notes under refs/notes/loadgate), `notes:REF`, or
    /// `dir:PATH`.
    #[arg(long, value_name = "STORE", default_value = "notes")]
    pub baseline_store: String,
    /// The branch the change will merge into; the baseline is searched from the merge-base with it
    /// [default: origin/HEAD, else main].
    #[arg(long, value_name = "REF")]
    pub base_ref: Option<String>,
    /// How the head is compared with its base [default: `[paired] mode` of the config, which
    /// defaults to auto].
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<ComparisonModeArg>,
    /// Shorthand for `--mode paired`.
    #[arg(long, conflicts_with = "mode")]
    pub paired: bool,
    /// The base of a paired run with an `image` or `dockerfile` target: an image in the local
    /// Docker engine (never pulled).
    #[arg(long, value_name = "IMAGE", conflicts_with_all = ["base_url", "base_binary"])]
    pub base_image: Option<String>,
    /// The base of a paired run with a `url` target: the base URL of the base's running service
    /// (loopback unless `--allow-remote`).
    #[arg(long, value_name = "URL", conflicts_with = "base_binary")]
    pub base_url: Option<String>,
    /// The base of a paired run with a `bin` target: a binary already built from the base, run
    /// instead of building the merge-base.
    #[arg(long, value_name = "PATH")]
    pub base_binary: Option<PathBuf>,
    /// Paired mode: boot the base from the head's own build (or image), an A/A run that measures
    /// what pairing sees when nothing changed (`qualify --paired` uses it).
    #[arg(long, conflicts_with_all = ["base_image", "base_url", "base_binary"])]
    pub base_same_as_head: bool,
    /// Environment for the head side only, KEY=VALUE (repeatable), after `--env`: in paired mode
    /// the base does not get it (`qualify --paired --inject` uses it).
    #[arg(long = "head-env", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub head_env: Vec<(String, String)>,
    /// Store this run as the baseline of HEAD (on release branches).
    #[arg(long)]
    pub save_baseline: bool,
    /// Allow `--save-baseline` from a work tree with uncommitted changes.
    #[arg(long, requires = "save_baseline")]
    pub allow_dirty: bool,
    /// Exit 12 when no baseline matches this run.
    #[arg(long)]
    pub require_baseline: bool,
    /// Exit 11 when the comparison cannot decide.
    #[arg(long)]
    pub fail_on_inconclusive: bool,
    /// Where to write the JUnit XML report [default: junit.xml in the out-dir].
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Where to write the Markdown summary [default: summary.md in the out-dir]; it is also
    /// appended to `$GITHUB_STEP_SUMMARY` when that is set.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Send only shard INDEX of COUNT of every phase's schedule, the sessions k ≡ INDEX (mod
    /// COUNT), shards numbered from 0 (as `JOB_COMPLETION_INDEX`); `cargo loadgate merge` combines
    /// the shards' results. Needs a url target, `--keep-going` (a fixed plan: every step once, no
    /// bisection) and `--start-at`.
    #[arg(long, value_name = "INDEX/COUNT", requires_all = ["start_at", "keep_going"], conflicts_with_all = ["paired", "mode", "save_baseline"])]
    pub shard: Option<crate::workload::Shard>,
    /// The instant every shard starts at, agreed beforehand: RFC 3339 (`2026-12-03T14:00:00Z`) or
    /// milliseconds since the Unix epoch. A shard waits until then; one started later than
    /// `--max-skew` after it refuses to run.
    #[arg(long, value_name = "INSTANT", value_parser = parse_instant, requires = "shard")]
    pub start_at: Option<u64>,
    /// How late after `--start-at` a shard may still start.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_MAX_SKEW, value_parser = parse_duration_arg)]
    pub max_skew: std::time::Duration,
}

/// The default of `--max-skew` (`run --shard`, `merge`): a quarter of the 1 s windows that merge
/// by index, so a window's shards overlap by at least three quarters.
pub const DEFAULT_MAX_SKEW: &str = "250ms";

/// `cargo loadgate merge`.
#[derive(Debug, Args)]
pub struct MergeOpts {
    /// The shards' results (`result.json`), every shard of one run exactly once, in any order.
    #[arg(value_name = "RESULT.json", required = true, num_args = 1..)]
    pub results: Vec<PathBuf>,
    /// Where the configuration comes from (the shards' own: its hash must match theirs).
    #[command(flatten)]
    pub config: ConfigOpts,
    /// Where the merged result, JUnit and summary are written [default: target/loadgate/merged/
    /// of the workspace].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// How far apart the shards may have started a phase.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_MAX_SKEW, value_parser = parse_duration_arg)]
    pub max_skew: std::time::Duration,
    /// Where baselines are kept: `notes`, `notes:REF`, or `dir:PATH`.
    #[arg(long, value_name = "STORE", default_value = "notes")]
    pub baseline_store: String,
    /// The branch the change will merge into [default: origin/HEAD, else main].
    #[arg(long, value_name = "REF")]
    pub base_ref: Option<String>,
    /// Exit 12 when no baseline matches the merged run.
    #[arg(long)]
    pub require_baseline: bool,
    /// Exit 11 when the comparison cannot decide.
    #[arg(long)]
    pub fail_on_inconclusive: bool,
    /// Where to write the JUnit XML report [default: junit.xml in the out-dir].
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Where to write the Markdown summary [default: summary.md in the out-dir]; it is also
    /// appended to `$GITHUB_STEP_SUMMARY` when that is set.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
}

impl RunOpts {
    /// The comparison mode of this run: `--paired` or `--mode` when given, else the config's
    /// `[paired] mode`.
    pub fn comparison_mode(&self, config: &PairedConfig) -> ComparisonMode {
        if self.paired {
            ComparisonMode::Paired
        } else {
            self.mode.map_or(config.mode, ComparisonMode::from)
        }
    }
}

/// The comparison modes on the command line (`--mode`); `[paired] mode` in the config.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ComparisonModeArg {
    /// Paired when the base can be had (built from the merge-base, stored, or given with a
    /// `--base-*` flag), stored otherwise.
    Auto,
    /// Base and head side by side in one job, measured in alternating blocks.
    Paired,
    /// The head alone, compared with a baseline stored by an earlier run.
    Stored,
}

impl From<ComparisonModeArg> for ComparisonMode {
    fn from(arg: ComparisonModeArg) -> Self {
        match arg {
            ComparisonModeArg::Auto => ComparisonMode::Auto,
            ComparisonModeArg::Paired => ComparisonMode::Paired,
            ComparisonModeArg::Stored => ComparisonMode::Stored,
        }
    }
}

/// `cargo loadgate check`.
#[derive(Debug, Args)]
pub struct CheckOpts {
    /// Where the configuration comes from.
    #[command(flatten)]
    pub config: ConfigOpts,
}

/// `cargo loadgate clean`.
#[derive(Debug, Args)]
pub struct CleanOpts {
    /// List what would be removed, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `cargo loadgate attack`.
#[derive(Debug, Args)]
pub struct AttackOpts {
    /// The URL to GET (one operation), on loopback unless `--allow-remote`.
    #[arg(long, value_name = "URL", required_unless_present = "config")]
    pub url: Option<String>,
    /// A loadgate.toml whose workload to drive instead of one GET (needs `--url` for the base URL).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Requests per second (with `--url` alone) or sessions per second (with `--config`).
    #[arg(long, value_name = "N")]
    pub rate: f64,
    /// How long to send, e.g. `10s`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub duration: std::time::Duration,
    /// The seed of the arrival schedule.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Per-request timeout.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration_arg)]
    pub timeout: std::time::Duration,
    /// The most requests in flight; arrivals beyond it are dropped and counted.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_in_flight: usize,
    /// Use a fixed pool of N keep-alive connections, opened before the attack starts (at most
    /// 256); 0 opens up to 256 on demand (`generator.connections`, docs/config.md).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=256))]
    pub connections: u16,
    /// Run N event loops, each on a thread pinned to a core of its own (the first N cores this
    /// process may run on), sessions shared out by number (`generator.threads`, docs/config.md);
    /// at most the cores available. Default: the `--config` file's `threads`, else one loop.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Pin the generator to this CPU core (one loop only).
    #[arg(long, value_name = "CORE")]
    pub cpu: Option<usize>,
    /// Run the generator thread under SCHED_FIFO, so other processes on its core cannot delay
    /// its wake-ups (needs root or CAP_SYS_NICE and the kernel's real-time throttling; without
    /// them the attack runs normally and says so).
    #[arg(long)]
    pub realtime: bool,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Allow a URL that is not on the loopback interface.
    #[arg(long)]
    pub allow_remote: bool,
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got `{s}`")),
    }
}

fn parse_limit(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=10_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a number of commits from 1 to 10000, got `{s}`"
        )),
    }
}

fn parse_duration_arg(s: &str) -> Result<std::time::Duration, String> {
    crate::config::parse_duration(s)
}

/// `load --interval`: at least a second (a log's timestamps are seconds, and the rate is per
/// second of the interval), so the counts are never per zero seconds.
fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let interval = crate::config::parse_duration(s)?;
    if interval < std::time::Duration::from_secs(1) {
        return Err(format!(
            "an interval of at least 1s is needed, like `10m` (about one session's length), got `{s}`"
        ));
    }
    Ok(interval)
}

/// `--start-at`: milliseconds since the Unix epoch, or an RFC 3339 date-time with an offset.
fn parse_instant(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse()
            .map_err(|_| format!("`{s}` is too large for milliseconds since the Unix epoch"));
    }
    let expected = || {
        format!(
            "expected an RFC 3339 instant such as 2026-12-03T14:00:00Z or milliseconds since the Unix epoch, got `{s}`"
        )
    };
    let parsed: toml::value::Datetime = s.parse().map_err(|_| expected())?;
    let (Some(date), Some(time), Some(offset)) = (parsed.date, parsed.time, parsed.offset) else {
        return Err(expected());
    };
    let offset_minutes = match offset {
        toml::value::Offset::Z => 0,
        toml::value::Offset::Custom { minutes } => i64::from(minutes),
    };
    let days = crate::logs::parse::days_from_civil(
        i64::from(date.year),
        i64::from(date.month),
        i64::from(date.day),
    );
    let secs = days * 86_400
        + i64::from(time.hour) * 3_600
        + i64::from(time.minute) * 60
        + i64::from(time.second.unwrap_or(0))
        - offset_minutes * 60;
    let ms = secs * 1_000 + i64::from(time.nanosecond.unwrap_or(0) / 1_000_000);
    u64::try_from(ms).map_err(|_| format!("`{s}` is before the Unix epoch"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse_args;
    use clap::error::ErrorKind;
    use std::time::Duration;

    fn run(args: &[&str]) -> Result<RunOpts, clap::Error> {
        let argv = ["cargo-loadgate", "run"].iter().chain(args);
        let CargoOpts::Loadgate(opts) = parse_args(argv)?;
        match opts.command {
            Command::Run(run) => Ok(*run),
            other => panic!("not run: {other:?}"),
        }
    }

    fn paired(mode: ComparisonMode) -> PairedConfig {
        PairedConfig {
            mode,
            pairs: 12,
            block: Duration::from_secs(6),
            warmup: Duration::from_secs(1),
            at: 0.6,
            budget: None,
            adaptive: false,
        }
    }

    #[test_case::test_case(&[], ComparisonMode::Stored, ComparisonMode::Stored; "the config when no flag")]
    #[test_case::test_case(&[], ComparisonMode::Auto, ComparisonMode::Auto; "auto from the config")]
    #[test_case::test_case(&["--mode", "stored"], ComparisonMode::Paired, ComparisonMode::Stored; "mode wins over the config")]
    #[test_case::test_case(&["--mode", "auto"], ComparisonMode::Stored, ComparisonMode::Auto; "mode auto wins too")]
    #[test_case::test_case(&["--paired"], ComparisonMode::Stored, ComparisonMode::Paired; "paired is mode paired")]
    fn the_flag_wins_over_the_config(
        args: &[&str],
        config: ComparisonMode,
        expected: ComparisonMode,
    ) {
        let opts = run(args).unwrap();
        assert_eq!(opts.comparison_mode(&paired(config)), expected);
    }

    #[test]
    fn the_base_flags_are_read() {
        let opts = run(&["--paired", "--base-binary", "/tmp/base/demo"]).unwrap();
        assert_eq!(opts.base_binary, Some(PathBuf::from("/tmp/base/demo")));
        let opts = run(&["--base-image", "demo:base"]).unwrap();
        assert_eq!(opts.base_image.as_deref(), Some("demo:base"));
        let opts = run(&["--mode", "paired", "--base-url", "http://127.0.0.1:9000"]).unwrap();
        assert_eq!(opts.base_url.as_deref(), Some("http://127.0.0.1:9000"));
    }

    #[test_case::test_case("1764770400000", 1_764_770_400_000; "unix milliseconds")]
    #[test_case::test_case("2025-12-03T14:00:00Z", 1_764_770_400_000; "utc")]
    #[test_case::test_case("2025-12-03T15:00:00+01:00", 1_764_770_400_000; "an offset")]
    #[test_case::test_case("2025-12-03T14:00:00.250Z", 1_764_770_400_250; "milliseconds")]
    #[test_case::test_case("1970-01-01T00:00:00Z", 0; "the epoch")]
    #[test_case::test_case("2000-02-29T00:00:00Z", 951_782_400_000; "a leap day")]
    fn start_instants_parse(text: &str, ms: u64) {
        assert_eq!(parse_instant(text), Ok(ms));
    }

    #[test_case::test_case("2025-12-03T14:00:00"; "no offset")]
    #[test_case::test_case("2025-12-03"; "a date")]
    #[test_case::test_case("tomorrow"; "words")]
    fn start_instants_without_a_fixed_point_are_refused(text: &str) {
        assert!(parse_instant(text).is_err(), "{text}");
    }

    #[test_case::test_case(&["--shard", "4/4", "--start-at", "0", "--keep-going"]; "index out of range")]
    #[test_case::test_case(&["--shard", "0/0", "--start-at", "0", "--keep-going"]; "no shards")]
    #[test_case::test_case(&["--shard", "0/4", "--keep-going"]; "no start")]
    #[test_case::test_case(&["--shard", "0/4", "--start-at", "0"]; "not keep going")]
    #[test_case::test_case(&["--start-at", "0"]; "a start without a shard")]
    #[test_case::test_case(&["--shard", "0/2", "--start-at", "0", "--keep-going", "--paired"]; "paired")]
    fn bad_shard_flags_are_usage_errors(args: &[&str]) {
        let err = run(args).expect_err("refused");
        assert!(err.use_stderr(), "{err}");
    }

    #[test]
    fn shard_flags_are_read() {
        let opts = run(&["--shard", "2/4", "--start-at", "1000", "--keep-going"]).unwrap();
        assert_eq!(
            opts.shard,
            Some(crate::workload::Shard { index: 2, count: 4 })
        );
        assert_eq!(opts.start_at, Some(1000));
        assert_eq!(opts.max_skew, Duration::from_millis(250));
    }

    #[test_case::test_case(&["--paired", "--mode", "stored"], ErrorKind::ArgumentConflict; "paired and mode")]
    #[test_case::test_case(&["--base-image", "a:b", "--base-url", "http://127.0.0.1:1"], ErrorKind::ArgumentConflict; "image and url")]
    #[test_case::test_case(&["--base-image", "a:b", "--base-binary", "x"], ErrorKind::ArgumentConflict; "image and binary")]
    #[test_case::test_case(&["--base-url", "http://127.0.0.1:1", "--base-binary", "x"], ErrorKind::ArgumentConflict; "url and binary")]
    #[test_case::test_case(&["--mode", "pared"], ErrorKind::InvalidValue; "unknown mode")]
    fn conflicting_or_unknown_flags_are_usage_errors(args: &[&str], kind: ErrorKind) {
        let err = run(args).expect_err("refused");
        assert_eq!(err.kind(), kind, "{err}");
        assert!(err.use_stderr(), "{err}");
    }
}
