//! A small runner for the git command line (no libgit2: it is heavy to build and the CLI is what
//! users have). Every command runs with `LC_ALL=C` so messages can be recognised, and without a
//! terminal prompt.

use super::error::BaselineError;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The identity used for notes commits when git has none configured.
pub const FALLBACK_NAME: &str = "loadgate";
/// The e-mail of [`FALLBACK_NAME`].
pub const FALLBACK_EMAIL: &str = "loadgate@localhost";

/// The outcome of a git command that may fail in an expected way.
#[derive(Debug)]
pub(crate) struct GitOutput {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Runs git in one repository.
#[derive(Clone, Debug)]
pub(crate) struct Git {
    repo: PathBuf,
}

impl Git {
    pub fn new(repo: &Path) -> Self {
        Self {
            repo: repo.to_path_buf(),
        }
    }

    pub fn repo(&self) -> &Path {
        &self.repo
    }

    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new("git");
        cmd.args(args)
            .current_dir(&self.repo)
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .envs(env.iter().copied());
        cmd
    }

    /// Runs `git args`, feeding `stdin` when given; a failure to start is an error, a failing
    /// status is reported in the output.
    pub fn output(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: Option<&[u8]>,
    ) -> Result<GitOutput, BaselineError> {
        let spawn_error = |source| BaselineError::GitSpawn {
            command: args.join(" "),
            source,
        };
        let mut cmd = self.command(args, env);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = cmd.spawn().map_err(spawn_error)?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(input).map_err(spawn_error)?;
        }
        let out = child.wait_with_output().map_err(spawn_error)?;
        Ok(GitOutput {
            success: out.status.success(),
            code: out.status.code(),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }

    /// Runs `git args` and returns its trimmed standard output; a failing status is an error.
    pub fn run(&self, args: &[&str]) -> Result<String, BaselineError> {
        self.run_env(args, &[], None)
    }

    /// [`Git::run`] with extra environment and standard input.
    pub fn run_env(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: Option<&[u8]>,
    ) -> Result<String, BaselineError> {
        let out = self.output(args, env, stdin)?;
        if out.success {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(self.failed(args, &out))
        }
    }

    /// The error for a command that ran and failed.
    pub fn failed(&self, args: &[&str], out: &GitOutput) -> BaselineError {
        BaselineError::Git {
            command: args.join(" "),
            repo: self.repo.clone(),
            status: match out.code {
                Some(code) => format!("exit status {code}"),
                None => "killed by a signal".to_owned(),
            },
            stderr: out.stderr.clone(),
        }
    }

    /// The full id of the commit `rev` names, or `None` when it names none.
    pub fn commit_of(&self, rev: &str) -> Result<Option<String>, BaselineError> {
        let spec = format!("{rev}^{{commit}}");
        let out = self.output(&["rev-parse", "--verify", "--quiet", &spec], &[], None)?;
        Ok(out
            .success
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    }

    /// The value of a ref, or `None` when it does not exist.
    pub fn ref_value(&self, name: &str) -> Result<Option<String>, BaselineError> {
        let out = self.output(&["rev-parse", "--verify", "--quiet", name], &[], None)?;
        Ok(out
            .success
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    }

    /// The environment that gives commits an identity: empty when git has one configured,
    /// otherwise the fixed `loadgate <loadgate@localhost>` signature, so saving a baseline works
    /// on a CI runner where nobody ran `git config user.email`.
    pub fn identity_env(&self) -> Result<Vec<(&'static str, &'static str)>, BaselineError> {
        let has = |var: &str| -> Result<bool, BaselineError> {
            Ok(self.output(&["var", var], &[], None)?.success)
        };
        if has("GIT_AUTHOR_IDENT")? && has("GIT_COMMITTER_IDENT")? {
            return Ok(Vec::new());
        }
        Ok(vec![
            ("GIT_AUTHOR_NAME", FALLBACK_NAME),
            ("GIT_AUTHOR_EMAIL", FALLBACK_EMAIL),
            ("GIT_COMMITTER_NAME", FALLBACK_NAME),
            ("GIT_COMMITTER_EMAIL", FALLBACK_EMAIL),
        ])
    }
}

/// Test helpers: temporary repositories with commits made under a fixed identity.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;
    use std::process::Command;

    /// Runs git in `dir` with a fixed identity and dates, panicking on failure (tests only).
    pub fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("LC_ALL", "C")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// A new repository on branch `main` with one commit; returns the commit id.
    pub fn init(dir: &Path) -> String {
        git(dir, &["init", "-q", "-b", "main"]);
        commit(dir, "initial")
    }

    /// An empty commit with `message` on the current branch; returns its id.
    pub fn commit(dir: &Path, message: &str) -> String {
        git(dir, &["commit", "-q", "--allow-empty", "-m", message]);
        git(dir, &["rev-parse", "HEAD"])
    }
}
