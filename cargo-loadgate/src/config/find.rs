//! Finding the configuration like cargo finds a package: `cargo metadata` for the workspace, the
//! package chosen with `-p`, `--manifest-path` or the current directory, and then its
//! `[package.metadata.loadgate]` or the `loadgate.toml` beside its Cargo.toml.

use super::error::ConfigError;
use super::source::SourceFile;
use super::types::{LoadgateConfig, PackageRef};
use super::validate::{Location, validate};
use cargo_metadata::{Metadata, MetadataCommand, Package, TargetKind};
use std::path::{Path, PathBuf};

/// The file name of a standalone configuration beside a package's Cargo.toml.
pub const CONFIG_FILE_NAME: &str = "loadgate.toml";

/// Where to look for the configuration, as given on the command line.
#[derive(Clone, Debug, Default)]
pub struct LoadOpts {
    /// `--manifest-path`: the Cargo.toml of the package (or of the workspace).
    pub manifest_path: Option<PathBuf>,
    /// `-p NAME`: the package whose configuration to use.
    pub package: Option<String>,
    /// `--config FILE`: a standalone loadgate.toml; no cargo package is involved unless `-p`
    /// names the package whose binaries it runs.
    pub config: Option<PathBuf>,
    /// `--profile NAME` (`default` when not given).
    pub profile: Option<String>,
    /// The directory relative paths are resolved against and cargo runs in.
    pub cwd: PathBuf,
}

/// Finds, reads and validates the configuration, and resolves the selected profile.
pub fn load(opts: &LoadOpts) -> Result<LoadgateConfig, ConfigError> {
    let profile = opts.profile.as_deref().unwrap_or("default");
    if let Some(config) = &opts.config
        && opts.package.is_none()
    {
        let path = opts.cwd.join(config);
        let text = read(&path)?;
        return validate(SourceFile::new(path, text), Location::File, None, profile);
    }
    let metadata = cargo_metadata(opts)?;
    let package = select_package(opts, &metadata)?;
    let manifest_path = package.manifest_path.clone().into_std_path_buf();
    let package_ref = PackageRef {
        name: package.name.to_string(),
        manifest_path: manifest_path.clone(),
        workspace_root: metadata.workspace_root.clone().into_std_path_buf(),
        target_directory: metadata.target_directory.clone().into_std_path_buf(),
        bins: package
            .targets
            .iter()
            .filter(|t| t.kind.contains(&TargetKind::Bin))
            .map(|t| t.name.clone())
            .collect(),
    };
    // `--config FILE -p NAME`: another configuration of the package (a second workload), whose
    // `bin = …` is built from that package.
    if let Some(config) = &opts.config {
        let path = opts.cwd.join(config);
        let text = read(&path)?;
        return validate(
            SourceFile::new(path, text),
            Location::File,
            Some(package_ref),
            profile,
        );
    }
    let beside = config_file_of(package);
    match (has_metadata_config(package), beside.is_file()) {
        (true, true) => Err(ConfigError::Ambiguous {
            package: package_ref.name,
            manifest_path,
            file: beside,
        }),
        (true, false) => {
            // Read the text ourselves so spans point into the real file, not into cargo's JSON.
            let text = read(&manifest_path)?;
            validate(
                SourceFile::new(manifest_path, text),
                Location::Metadata,
                Some(package_ref),
                profile,
            )
        }
        (false, true) => {
            let text = read(&beside)?;
            validate(
                SourceFile::new(beside, text),
                Location::File,
                Some(package_ref),
                profile,
            )
        }
        (false, false) => Err(ConfigError::NotFound {
            package: package_ref.name,
            manifest_path,
        }),
    }
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn cargo_metadata(opts: &LoadOpts) -> Result<Metadata, ConfigError> {
    let mut cmd = MetadataCommand::new();
    cmd.no_deps().current_dir(&opts.cwd);
    if let Some(manifest) = &opts.manifest_path {
        cmd.manifest_path(opts.cwd.join(manifest));
    }
    cmd.exec().map_err(|e| match e {
        cargo_metadata::Error::CargoMetadata { stderr } => ConfigError::CargoMetadata {
            cwd: opts.cwd.clone(),
            stderr,
            source: None,
        },
        other => ConfigError::CargoMetadata {
            cwd: opts.cwd.clone(),
            stderr: String::new(),
            source: Some(other),
        },
    })
}

fn config_file_of(package: &Package) -> PathBuf {
    package
        .manifest_path
        .as_std_path()
        .with_file_name(CONFIG_FILE_NAME)
}

fn has_metadata_config(package: &Package) -> bool {
    package.metadata.get("loadgate").is_some()
}

fn has_config(package: &Package) -> bool {
    has_metadata_config(package) || config_file_of(package).is_file()
}

/// Chooses the package as cargo would: `-p NAME`; the package `--manifest-path` names; the
/// innermost package whose directory contains the current directory; otherwise the only member
/// that has a loadgate configuration.
fn select_package<'m>(opts: &LoadOpts, metadata: &'m Metadata) -> Result<&'m Package, ConfigError> {
    let members = metadata.workspace_packages();
    if let Some(name) = &opts.package {
        return members
            .iter()
            .copied()
            .find(|p| p.name.as_str() == name)
            .ok_or_else(|| ConfigError::UnknownPackage {
                name: name.clone(),
                members: members.iter().map(|p| p.name.to_string()).collect(),
            });
    }
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let chosen = match &opts.manifest_path {
        Some(manifest) => {
            let manifest = canonical(&opts.cwd.join(manifest));
            members
                .iter()
                .copied()
                .find(|p| canonical(p.manifest_path.as_std_path()) == manifest)
        }
        None => {
            let cwd = canonical(&opts.cwd);
            members
                .iter()
                .copied()
                .filter_map(|p| {
                    let dir = canonical(p.manifest_path.as_std_path().parent()?);
                    cwd.starts_with(&dir).then(|| (dir.components().count(), p))
                })
                .max_by_key(|&(depth, _)| depth)
                .map(|(_, p)| p)
        }
    };
    if let Some(p) = chosen {
        return Ok(p);
    }
    let with_config: Vec<&Package> = members.iter().copied().filter(|p| has_config(p)).collect();
    match with_config.as_slice() {
        [only] => Ok(only),
        _ => Err(ConfigError::NoPackageSelected {
            with_config: with_config.iter().map(|p| p.name.to_string()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TargetSource;
    use std::fs;

    const CONFIG: &str = "[workload]\nsessions-per-sec = 1\n[[workload.operation]]\nname = \"home\"\nrequest = { path = \"/\" }\n";

    /// A workspace with members `a` (a library) and `b` (two binaries); `b` has a loadgate.toml.
    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temp dir");
        let root = dir.path();
        fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nresolver = \"3\"\nmembers = [\"a\", \"b\"]\n",
        )
        .unwrap();
        for (name, bins) in [("a", &[][..]), ("b", &["b", "b-admin"][..])] {
            let pkg = root.join(name);
            fs::create_dir_all(pkg.join("src/bin")).unwrap();
            fs::write(
                pkg.join("Cargo.toml"),
                format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n"),
            )
            .unwrap();
            fs::write(pkg.join("src/lib.rs"), "").unwrap();
            for bin in bins {
                fs::write(pkg.join(format!("src/bin/{bin}.rs")), "fn main() {}\n").unwrap();
            }
        }
        fs::write(
            root.join("b/loadgate.toml"),
            format!("[target]\nbin = \"b\"\n{CONFIG}"),
        )
        .unwrap();
        dir
    }

    fn opts(cwd: &Path) -> LoadOpts {
        LoadOpts {
            cwd: cwd.to_path_buf(),
            ..LoadOpts::default()
        }
    }

    #[test]
    fn the_only_member_with_a_config_is_chosen_from_the_root() {
        let ws = workspace();
        let cfg = load(&opts(ws.path())).unwrap_or_else(|e| panic!("{e}"));
        let package = cfg.source.package.expect("a package");
        assert_eq!(package.name, "b");
        let mut bins = package.bins.clone();
        bins.sort();
        assert_eq!(bins, ["b", "b-admin"]);
        assert_eq!(cfg.source.path.file_name().unwrap(), "loadgate.toml");
        assert_eq!(
            cfg.target.source,
            TargetSource::Bin {
                name: "b".to_owned()
            }
        );
        assert!(package.target_directory.ends_with("target"));
    }

    #[test]
    fn the_package_containing_the_current_directory_wins() {
        let ws = workspace();
        let err = load(&opts(&ws.path().join("a/src"))).unwrap_err();
        assert!(
            matches!(&err, ConfigError::NotFound { package, .. } if package == "a"),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("hint: add a `loadgate.toml` beside"),
            "{err}"
        );
    }

    #[test]
    fn dash_p_and_manifest_path_select_like_cargo() {
        let ws = workspace();
        let from_a = LoadOpts {
            package: Some("b".to_owned()),
            ..opts(&ws.path().join("a"))
        };
        assert_eq!(load(&from_a).unwrap().source.package.unwrap().name, "b");
        let manifest = LoadOpts {
            manifest_path: Some(PathBuf::from("a/Cargo.toml")),
            ..opts(ws.path())
        };
        assert!(
            matches!(load(&manifest), Err(ConfigError::NotFound { package, .. }) if package == "a")
        );
        let unknown = LoadOpts {
            package: Some("c".to_owned()),
            ..opts(ws.path())
        };
        let err = load(&unknown).unwrap_err();
        assert_eq!(
            err.to_string(),
            "package `c` is not a member of the workspace\nhint: the members are: a, b"
        );
    }

    #[test]
    fn several_members_with_a_config_need_dash_p() {
        let ws = workspace();
        fs::write(ws.path().join("a/loadgate.toml"), CONFIG).unwrap();
        let err = load(&opts(ws.path())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "several workspace members have a loadgate configuration: a, b\nhint: choose one with `-p NAME`"
        );
    }

    #[test]
    fn metadata_and_a_file_together_are_refused() {
        let ws = workspace();
        let manifest = ws.path().join("b/Cargo.toml");
        let text = fs::read_to_string(&manifest).unwrap();
        fs::write(
            &manifest,
            format!("{text}\n[package.metadata.loadgate.workload]\nsessions-per-sec = 1\n"),
        )
        .unwrap();
        let err = load(&LoadOpts {
            package: Some("b".to_owned()),
            ..opts(ws.path())
        })
        .unwrap_err();
        assert!(matches!(err, ConfigError::Ambiguous { .. }), "{err}");
    }

    #[test]
    fn a_metadata_config_reports_spans_in_cargo_toml() {
        let ws = workspace();
        let manifest = ws.path().join("a/Cargo.toml");
        let text = fs::read_to_string(&manifest).unwrap();
        fs::write(
            &manifest,
            format!("{text}\n[package.metadata.loadgate.workload]\nsessions-per-sec = \"fast\"\n"),
        )
        .unwrap();
        let err = load(&LoadOpts {
            package: Some("a".to_owned()),
            ..opts(ws.path())
        })
        .unwrap_err();
        let d = err
            .diagnostics()
            .iter()
            .find(|d| d.message.contains("fast"))
            .expect("the rate is reported");
        assert_eq!(
            (d.path.as_path(), d.line, d.col),
            (manifest.as_path(), 7, 20),
            "{err}"
        );
        assert_eq!(
            d.message,
            "expected a number (`sessions-per-sec`), found string \"fast\""
        );
    }

    #[test]
    fn a_standalone_config_has_no_package() {
        let ws = workspace();
        fs::write(ws.path().join("standalone.toml"), CONFIG).unwrap();
        let cfg = load(&LoadOpts {
            config: Some(PathBuf::from("standalone.toml")),
            profile: Some("quick".to_owned()),
            ..opts(ws.path())
        })
        .unwrap();
        assert_eq!(cfg.source.package, None);
        assert_eq!(cfg.profile, "quick");
        let missing = load(&LoadOpts {
            config: Some(PathBuf::from("nope.toml")),
            ..opts(ws.path())
        })
        .unwrap_err();
        assert!(matches!(missing, ConfigError::Read { .. }), "{missing}");
    }

    #[test]
    fn a_failing_cargo_metadata_carries_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(&opts(dir.path())).unwrap_err();
        let ConfigError::CargoMetadata { stderr, .. } = &err else {
            panic!("{err}")
        };
        assert!(stderr.contains("Cargo.toml"), "{stderr}");
        assert!(err.to_string().contains(stderr.trim()), "{err}");
    }

    #[test]
    fn the_demo_service_config_loads_through_cargo() {
        let cwd = Path::new(env!("CARGO_MANIFEST_DIR"));
        let cfg = load(&LoadOpts {
            package: Some("demo-service".to_owned()),
            profile: Some("ci".to_owned()),
            ..opts(cwd)
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cfg.source.package.unwrap().bins, ["demo-service"]);
        assert!(
            cfg.source
                .path
                .ends_with("fixtures/demo-service/loadgate.toml")
        );
    }
}
