//! The config stage's error type and the diagnostics it carries: one per problem, each with
//! file, line and column, so a bad config is reported all at once.

use std::{
    collections::BTreeMap,
    fmt,
    path::{Path, PathBuf},
};

/// The text of every file a diagnostic may point into, keyed by the path the diagnostic names.
pub type Sources = BTreeMap<PathBuf, String>;

/// One problem in a configuration file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file the problem is in.
    pub path: PathBuf,
    /// The 1-based line of the problem's start.
    pub line: usize,
    /// The 1-based column (in characters) of the problem's start.
    pub col: usize,
    /// How many characters to underline from `col`, at least 1 (clipped to the line when shown).
    pub len: usize,
    /// What is wrong: a lowercase fragment without a final period.
    pub message: String,
    /// How to fix it, when there is something to say.
    pub help: Option<String>,
}

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The selected package has no loadgate configuration.
    #[error(
        "no loadgate configuration for package `{package}`\n\
         hint: add a `loadgate.toml` beside {manifest} or a `[package.metadata.loadgate]` table to it, e.g.\n\n{example}",
        manifest = manifest_path.display(),
        example = MINIMAL_CONFIG
    )]
    NotFound {
        /// The package that was selected.
        package: String,
        /// Its `Cargo.toml`.
        manifest_path: PathBuf,
    },
    /// The package has both a `loadgate.toml` and `[package.metadata.loadgate]`.
    #[error(
        "package `{package}` has two loadgate configurations: `[package.metadata.loadgate]` in {} and {}\n\
         hint: keep one of them",
        manifest_path.display(),
        file.display()
    )]
    Ambiguous {
        /// The package.
        package: String,
        /// Its `Cargo.toml`, which has `[package.metadata.loadgate]`.
        manifest_path: PathBuf,
        /// The `loadgate.toml` beside it.
        file: PathBuf,
    },
    /// `-p NAME` named a package that is not a workspace member.
    #[error("package `{name}` is not a member of the workspace\nhint: the members are: {}", members.join(", "))]
    UnknownPackage {
        /// The name asked for.
        name: String,
        /// The workspace's members.
        members: Vec<String>,
    },
    /// No package could be chosen without `-p`.
    #[error("{}", no_package_message(with_config))]
    NoPackageSelected {
        /// The workspace members that have a loadgate configuration.
        with_config: Vec<String>,
    },
    /// `cargo metadata` could not be run or failed.
    #[error("`cargo metadata` failed in {}{}", cwd.display(), stderr_tail(stderr))]
    CargoMetadata {
        /// The directory it ran in.
        cwd: PathBuf,
        /// What cargo wrote to stderr (empty when cargo could not be started).
        stderr: String,
        /// The underlying failure when it was not cargo's own error report.
        #[source]
        source: Option<cargo_metadata::Error>,
    },
    /// A file could not be read.
    #[error("failed to read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The configuration has problems; every one of them is listed.
    #[error("{}", crate::config::render::render_diagnostics(&relative_to_cwd(diagnostics), &relative_sources(sources)))]
    Invalid {
        /// Every problem found, in file order.
        diagnostics: Vec<Diagnostic>,
        /// The text of the files the diagnostics point into.
        sources: Sources,
    },
    /// `--profile NAME` named a profile that neither the built-ins nor the config define.
    #[error("unknown profile `{name}`\nhint: available profiles: {}", available.join(", "))]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// Every profile that exists.
        available: Vec<String>,
    },
}

impl ConfigError {
    /// The problems found in the configuration (empty for errors that are not about its content).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            ConfigError::Invalid { diagnostics, .. } => diagnostics,
            _ => &[],
        }
    }
}

/// The smallest configuration that works, shown when none is found.
pub(crate) const MINIMAL_CONFIG: &str = r#"    [workload]
    sessions-per-sec = 10
    [[workload.operation]]
    name = "home"
    request = { path = "/" }"#;

fn no_package_message(with_config: &[String]) -> String {
    if with_config.is_empty() {
        format!(
            "no workspace member has a loadgate configuration\n\
             hint: add a `loadgate.toml` beside the package's Cargo.toml, e.g.\n\n{MINIMAL_CONFIG}"
        )
    } else {
        format!(
            "several workspace members have a loadgate configuration: {}\nhint: choose one with `-p NAME`",
            with_config.join(", ")
        )
    }
}

fn stderr_tail(stderr: &str) -> String {
    let stderr = stderr.trim_end();
    if stderr.is_empty() {
        return String::new();
    }
    let lines: Vec<&str> = stderr.lines().collect();
    let tail = &lines[lines.len().saturating_sub(20)..];
    format!(":\n{}", tail.join("\n"))
}

/// Shows `path` relative to `base` when it lies beneath it.
pub(crate) fn relative_path(path: &Path, base: &Path) -> PathBuf {
    path.strip_prefix(base)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

fn relative_to_cwd(diags: &[Diagnostic]) -> Vec<Diagnostic> {
    let Ok(cwd) = std::env::current_dir() else {
        return diags.to_vec();
    };
    diags
        .iter()
        .map(|d| Diagnostic {
            path: relative_path(&d.path, &cwd),
            ..d.clone()
        })
        .collect()
}

fn relative_sources(sources: &Sources) -> Sources {
    let Ok(cwd) = std::env::current_dir() else {
        return sources.clone();
    };
    sources
        .iter()
        .map(|(p, t)| (relative_path(p, &cwd), t.clone()))
        .collect()
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path.display(),
            self.line,
            self.col,
            self.message
        )
    }
}
