//! Building the crate's binary with cargo: `--message-format=json-render-diagnostics`, so that the
//! executable's path comes from cargo's own JSON messages and the human diagnostics stay readable.

use crate::{config::PackageRef, targets::TargetError, targets::ring::LogRing};
use std::{
    path::{Path, PathBuf},
    process::Stdio,
};
use tokio::io::{AsyncBufReadExt as _, BufReader};

/// How many lines of cargo's stderr a build error keeps.
const STDERR_TAIL: usize = 40;

/// How to build the binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildMode {
    /// A normal release build for the host (process targets).
    Host,
    /// A statically linked release build for this target triple (container targets):
    /// `--target <triple>` with `-C target-feature=+crt-static`.
    Static {
        /// The triple, normally the host's.
        triple: String,
    },
}

/// The command line of a build, as run in the package's workspace root.
pub fn build_command(
    package: &PackageRef,
    bin: &str,
    mode: &BuildMode,
) -> (Vec<String>, Vec<(String, String)>) {
    let mut args: Vec<String> = [
        "build",
        "--release",
        "-p",
        &package.name,
        "--bin",
        bin,
        "--message-format=json-render-diagnostics",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    let mut env = Vec::new();
    if let BuildMode::Static { triple } = mode {
        args.extend(["--target".to_owned(), triple.clone()]);
        env.push((
            rustflags_var(triple),
            "-C target-feature=+crt-static".to_owned(),
        ));
    }
    (args, env)
}

/// `CARGO_TARGET_<TRIPLE>_RUSTFLAGS`: rustflags for that target only, so build scripts and proc
/// macros (built for the host without `--target` semantics) stay dynamically linked.
pub fn rustflags_var(triple: &str) -> String {
    let snake: String = triple
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("CARGO_TARGET_{snake}_RUSTFLAGS")
}

/// Picks the executable of binary `bin` out of one line of cargo's JSON messages.
pub fn parse_artifact_line(line: &str, bin: &str) -> Option<PathBuf> {
    let msg: serde_json::Value = serde_json::from_str(line).ok()?;
    if msg.get("reason")?.as_str()? != "compiler-artifact" {
        return None;
    }
    let target = msg.get("target")?;
    let is_bin = target
        .get("kind")?
        .as_array()?
        .iter()
        .any(|k| k.as_str() == Some("bin"));
    if !is_bin || target.get("name")?.as_str()? != bin {
        return None;
    }
    msg.get("executable")?.as_str().map(PathBuf::from)
}

/// The host triple from `rustc -vV` (honouring `$RUSTC`).
pub async fn host_triple() -> Result<String, TargetError> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let out = tokio::process::Command::new(&rustc)
        .arg("-vV")
        .output()
        .await
        .map_err(|e| TargetError::io(format!("run `{rustc} -vV`"), e))?;
    parse_host_triple(&String::from_utf8_lossy(&out.stdout)).ok_or_else(|| TargetError::Build {
        command: format!("{rustc} -vV"),
        status: out.status.to_string(),
        stderr_tail: String::from_utf8_lossy(&out.stderr)
            .lines()
            .map(str::to_owned)
            .collect(),
    })
}

/// Reads the `host:` line of `rustc -vV`.
pub fn parse_host_triple(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|h| h.trim().to_owned())
}

/// Builds binary `bin` of `package` and returns the executable's path. Each line cargo writes to
/// stderr (its human diagnostics and progress) is handed to `on_stderr`.
pub async fn cargo_build(
    package: &PackageRef,
    bin: &str,
    mode: &BuildMode,
    on_stderr: &dyn Fn(&str),
) -> Result<PathBuf, TargetError> {
    cargo_build_in(package, bin, mode, None, on_stderr).await
}

/// [`cargo_build`] with `--target-dir target_dir` when given (it overrides `CARGO_TARGET_DIR` and
/// cargo's config), as the base of a paired run is built (`targets::base`).
pub async fn cargo_build_in(
    package: &PackageRef,
    bin: &str,
    mode: &BuildMode,
    target_dir: Option<&Path>,
    on_stderr: &dyn Fn(&str),
) -> Result<PathBuf, TargetError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let (mut args, env) = build_command(package, bin, mode);
    if let Some(dir) = target_dir {
        args.extend(["--target-dir".to_owned(), dir.display().to_string()]);
    }
    let shown = std::iter::once(cargo.as_str())
        .chain(
            env.iter()
                .map(|(k, v)| format!("{k}=\"{v}\""))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        )
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let mut child = tokio::process::Command::new(&cargo)
        .args(&args)
        .envs(env)
        .current_dir(&package.workspace_root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| TargetError::io(format!("run `{shown}`"), e))?;
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
    let tail = LogRing::new(STDERR_TAIL);
    let mut executable = None;
    let (mut out_open, mut err_open) = (true, true);
    while out_open || err_open {
        tokio::select! {
            line = stdout.next_line(), if out_open => match line {
                Ok(Some(line)) => {
                    if let Some(path) = parse_artifact_line(&line, bin) {
                        executable = Some(path);
                    }
                }
                _ => out_open = false,
            },
            line = stderr.next_line(), if err_open => match line {
                Ok(Some(line)) => {
                    on_stderr(&line);
                    tail.push_line(&line);
                }
                _ => err_open = false,
            },
        }
    }
    let status = child
        .wait()
        .await
        .map_err(|e| TargetError::io(format!("wait for `{shown}`"), e))?;
    if !status.success() {
        let status = match status.code() {
            Some(code) => format!("exit status {code}"),
            None => status.to_string(),
        };
        return Err(TargetError::Build {
            command: shown,
            status,
            stderr_tail: tail.tail(STDERR_TAIL),
        });
    }
    executable.ok_or_else(|| TargetError::BinaryNotFound {
        package: package.name.clone(),
        bin: bin.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    fn package() -> PackageRef {
        PackageRef {
            name: "demo-service".into(),
            manifest_path: "/w/fixtures/demo-service/Cargo.toml".into(),
            workspace_root: "/w".into(),
            target_directory: "/w/target".into(),
            bins: vec!["demo-service".into()],
        }
    }

    #[test]
    fn host_build_command() {
        let (args, env) = build_command(&package(), "demo-service", &BuildMode::Host);
        assert_eq!(
            args.join(" "),
            "build --release -p demo-service --bin demo-service --message-format=json-render-diagnostics"
        );
        assert!(env.is_empty());
    }

    #[test]
    fn static_build_command() {
        let mode = BuildMode::Static {
            triple: "x86_64-unknown-linux-gnu".into(),
        };
        let (args, env) = build_command(&package(), "demo-service", &mode);
        assert!(
            args.join(" ")
                .ends_with("--target x86_64-unknown-linux-gnu")
        );
        assert_eq!(
            env,
            [(
                "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS".to_owned(),
                "-C target-feature=+crt-static".to_owned()
            )]
        );
    }

    const ARTIFACT: &str = r#"{"reason":"compiler-artifact","package_id":"path+file:///w/fixtures/demo-service#0.1.0","manifest_path":"/w/fixtures/demo-service/Cargo.toml","target":{"kind":["bin"],"crate_types":["bin"],"name":"demo-service","src_path":"/w/fixtures/demo-service/src/main.rs","edition":"2024","doc":true,"doctest":false,"test":true},"profile":{},"features":[],"filenames":["/w/target/release/demo-service"],"executable":"/w/target/release/demo-service","fresh":true}"#;

    #[test]
    fn finds_the_executable() {
        assert_eq!(
            parse_artifact_line(ARTIFACT, "demo-service"),
            Some(PathBuf::from("/w/target/release/demo-service"))
        );
    }

    #[test_case(ARTIFACT, "other" ; "another bin")]
    #[test_case(r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"demo-service"},"executable":null}"#, "demo-service" ; "a lib")]
    #[test_case(r#"{"reason":"build-finished","success":true}"#, "demo-service" ; "build finished")]
    #[test_case("   Compiling demo v0.1.0", "demo-service" ; "not json")]
    fn ignores_other_lines(line: &str, bin: &str) {
        assert_eq!(parse_artifact_line(line, bin), None);
    }

    #[test]
    fn reads_the_host_triple() {
        let text = "rustc 1.95.0 (59807616e 2026-04-14)\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\nrelease: 1.95.0\n";
        assert_eq!(
            parse_host_triple(text).as_deref(),
            Some("x86_64-unknown-linux-gnu")
        );
        assert_eq!(parse_host_triple("garbage"), None);
    }
}
