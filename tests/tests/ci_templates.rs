//! The CI templates in `ci/`, read the way a user's CI reads them: each parses as YAML, and every
//! `cargo loadgate …` command in their scripts parses with the tool's own command line, so a renamed
//! or removed flag breaks this test instead of the pipelines of the people who copied the templates.
//! The jobs are then checked for what the gate relies on: full history, fetched notes, the JUnit
//! report kept on every outcome, `run --mode auto` on pull requests (paired when the merge-base
//! builds) with the build cached, base's target dir included, and `run --mode stored
//! --save-baseline` on release branches.
//! The notes push of each template is run for real (bash, git, the built binary) against a local
//! bare repository with a concurrent push, and must land both jobs' entries.

use cargo_loadgate::cli::{CargoOpts, Command, ComparisonModeArg, RunOpts, parse_args};
use loadgate_tests::workspace_root;
use serde_yaml_ng::Value;
use std::path::Path;

/// What a `${{ … }}` expression or a shell expansion (`$VAR`, `${VAR}`, `$(…)`) becomes: one
/// ordinary word, as the value of a variable would be.
const PLACEHOLDER: &str = "PLACEHOLDER";

/// `cargo loadgate` commands each template holds (the gate's run, the baseline run, the re-save in
/// the push loop); fewer found means the walk missed them, and an empty walk must not pass.
const EXPECTED_COMMANDS_PER_TEMPLATE: usize = 3;

/// One `cargo loadgate …` command found in a template, parsed.
struct Invocation {
    /// The job it belongs to.
    job: String,
    /// The command as tokenized, for messages.
    words: Vec<String>,
    /// What the tool's command line made of it.
    command: Command,
}

impl Invocation {
    fn run(&self) -> Option<&RunOpts> {
        match &self.command {
            Command::Run(run) => Some(run),
            _ => None,
        }
    }
}

fn load(relative: &str) -> Value {
    let path = workspace_root().join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{relative} is not valid YAML: {e}"))
}

/// Parses every `cargo loadgate` command of every script, failing with the template, the job and
/// the command when one does not parse.
fn invocations(template: &str, scripts: &[(String, String)]) -> Vec<Invocation> {
    let mut found = Vec::new();
    for (job, script) in scripts {
        for command in commands(script)
            .unwrap_or_else(|e| panic!("{template}, job `{job}`: cannot tokenize a script: {e}"))
        {
            let Some(rest) = command.strip_prefix(&["cargo".to_owned(), "loadgate".to_owned()])
            else {
                continue;
            };
            let argv = ["cargo-loadgate", "loadgate"]
                .into_iter()
                .map(str::to_owned)
                .chain(rest.iter().cloned());
            match parse_args(argv) {
                Ok(CargoOpts::Loadgate(opts)) => found.push(Invocation {
                    job: job.clone(),
                    words: command.clone(),
                    command: opts.command,
                }),
                Err(e) => panic!(
                    "{template}, job `{job}`: `{}` does not parse:\n{e}",
                    command.join(" ")
                ),
            }
        }
    }
    found
}

fn as_str<'a>(value: &'a Value, what: &str) -> &'a str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {value:?}"))
}

/// The job's scripts: GitHub `run:` of every step, by job.
fn github_scripts(workflow: &Value) -> Vec<(String, String)> {
    let jobs = workflow["jobs"]
        .as_mapping()
        .expect("the workflow has `jobs`");
    let mut scripts = Vec::new();
    for (name, job) in jobs {
        let name = as_str(name, "a job name");
        for step in job["steps"].as_sequence().expect("a job has `steps`") {
            if let Some(run) = step.get("run") {
                scripts.push((name.to_owned(), as_str(run, "`run`").to_owned()));
            }
        }
    }
    scripts
}

/// A GitLab job with what it `extends` merged under it (keys of the job itself win, one level deep,
/// which is what GitLab does for the keys used here).
fn gitlab_job(pipeline: &Value, name: &str) -> serde_yaml_ng::Mapping {
    let job = pipeline[name]
        .as_mapping()
        .unwrap_or_else(|| panic!("no job `{name}`"));
    let mut merged = serde_yaml_ng::Mapping::new();
    let parents: Vec<&str> = match job.get("extends") {
        None => Vec::new(),
        Some(Value::String(parent)) => vec![parent.as_str()],
        Some(Value::Sequence(parents)) => parents.iter().map(|p| as_str(p, "extends")).collect(),
        Some(other) => panic!("`extends` of `{name}` is neither a string nor a list: {other:?}"),
    };
    for parent in parents {
        merged.extend(gitlab_job(pipeline, parent));
    }
    merged.extend(job.clone());
    merged
}

/// GitLab `before_script:`, `script:` and `after_script:` entries of every job, by job; an entry
/// may be a list nested one level (as YAML anchors produce).
fn gitlab_scripts(pipeline: &Value) -> Vec<(String, String)> {
    let mut scripts = Vec::new();
    for (name, job) in pipeline.as_mapping().expect("the pipeline is a mapping") {
        let name = as_str(name, "a key");
        for key in ["before_script", "script", "after_script"] {
            let Some(entries) = job.get(key) else {
                continue;
            };
            let entries = match entries {
                Value::Sequence(entries) => entries.clone(),
                single => vec![single.clone()],
            };
            for entry in &entries {
                match entry {
                    Value::Sequence(nested) => scripts.extend(
                        nested
                            .iter()
                            .map(|e| (name.to_owned(), as_str(e, key).to_owned())),
                    ),
                    entry => scripts.push((name.to_owned(), as_str(entry, key).to_owned())),
                }
            }
        }
    }
    scripts
}

/// Where a paired run builds the merge-base (`targets::base::base_target_dir` of `target`).
const BASE_TARGET: &str = "target/loadgate/base-target";

/// Checks the paths a job caches: the base's target dir when `paired`, some of cargo's own target
/// dir, and never `target/loadgate/` as a whole (it holds the runs' outputs: a restored
/// `result.json` would pose as this run's).
fn assert_caches_the_build(what: &str, paths: &[String], paired: bool) {
    let paths: Vec<&str> = paths.iter().map(|p| p.trim_end_matches('/')).collect();
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with("target/") && !p.starts_with("target/loadgate")),
        "{what} caches the head's build under target/: {paths:?}"
    );
    if paired {
        assert!(
            paths.contains(&BASE_TARGET),
            "{what} caches {BASE_TARGET}, where the merge-base is built: {paths:?}"
        );
    }
    for outputs in ["target", "target/loadgate", "target/*", "target/**"] {
        assert!(
            !paths.contains(&outputs),
            "{what} must not cache {outputs}: it holds the runs' outputs; {paths:?}"
        );
    }
}

/// The lines of a GitHub `path:` block.
fn path_lines(value: &Value) -> Vec<String> {
    as_str(value, "a cache's `path`")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn path_str(path: Option<&Path>, what: &str) -> String {
    path.unwrap_or_else(|| panic!("{what} is not given"))
        .to_str()
        .expect("UTF-8 path")
        .trim_end_matches('/')
        .to_owned()
}

#[test]
fn github_workflow_commands_parse_and_the_jobs_do_what_the_gate_needs() {
    let workflow = load("ci/github/loadgate.yml");
    let scripts = github_scripts(&workflow);
    let found = invocations("ci/github/loadgate.yml", &scripts);
    assert!(
        found.len() >= EXPECTED_COMMANDS_PER_TEMPLATE,
        "found {} `cargo loadgate` commands in the GitHub workflow, expected at least {EXPECTED_COMMANDS_PER_TEMPLATE}",
        found.len()
    );

    // YAML 1.2, as GitHub reads it: `on` is a key, not the boolean of YAML 1.1.
    let on = workflow.get("on").expect("the workflow has `on`");
    assert!(on.get("pull_request").is_some(), "runs on pull requests");
    assert!(on.get("push").is_some(), "runs on pushes");
    assert_eq!(
        workflow["permissions"]["contents"].as_str(),
        Some("read"),
        "the workflow's default token only reads"
    );

    let jobs = &workflow["jobs"];
    for job in ["gate", "baseline"] {
        let steps = jobs[job]["steps"].as_sequence().expect("steps");
        assert!(
            steps.iter().any(|s| {
                s["uses"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("actions/checkout@"))
                    && s["with"]["fetch-depth"].as_u64() == Some(0)
            }),
            "job `{job}` checks out the full history (fetch-depth: 0)"
        );
        assert!(
            scripts.iter().any(|(j, script)| j == job
                && script
                    .lines()
                    .any(|l| l.contains("git fetch") && l.contains("refs/notes/loadgate"))),
            "job `{job}` fetches refs/notes/loadgate"
        );
    }

    // Pull requests: `run` against the base branch, never saving, the JUnit report uploaded always.
    let gate_runs: Vec<&RunOpts> = found
        .iter()
        .filter(|i| i.job == "gate")
        .filter_map(Invocation::run)
        .collect();
    assert_eq!(gate_runs.len(), 1, "the gate job runs `run` once");
    let gate = gate_runs[0];
    assert!(!gate.save_baseline, "a pull request never saves a baseline");
    assert!(
        gate.base_ref.is_some(),
        "the gate names the base branch (--base-ref)"
    );
    assert!(
        gate.mode == Some(ComparisonModeArg::Auto) && !gate.paired,
        "the gate says --mode auto: paired when the merge-base builds, whatever the config says"
    );
    assert!(
        jobs["gate"]["permissions"]["contents"].as_str() != Some("write"),
        "the gate job cannot write"
    );

    // The build is cached between runs, the base's target dir with it, keyed on Cargo.lock, and
    // saved after a failed gate too.
    let gate_steps = jobs["gate"]["steps"].as_sequence().expect("steps");
    let uses = |s: &&Value, action: &str| s["uses"].as_str().is_some_and(|u| u.starts_with(action));
    let restore = gate_steps
        .iter()
        .find(|s| uses(s, "actions/cache/restore@"))
        .expect("the gate job restores a build cache");
    let restored = path_lines(&restore["with"]["path"]);
    assert_caches_the_build("the gate job", &restored, true);
    let key = as_str(&restore["with"]["key"], "the cache key");
    assert!(
        key.contains("hashFiles(") && key.contains("Cargo.lock"),
        "the build cache is keyed on Cargo.lock: {key}"
    );
    let id = as_str(&restore["id"], "the restore step's id");
    let save = gate_steps
        .iter()
        .find(|s| uses(s, "actions/cache/save@"))
        .expect("the gate job saves its build cache");
    assert_eq!(
        path_lines(&save["with"]["path"]),
        restored,
        "what is saved is what is restored"
    );
    assert_eq!(
        save["with"]["key"].as_str(),
        Some(format!("${{{{ steps.{id}.outputs.cache-primary-key }}}}").as_str())
    );
    let condition = as_str(&save["if"], "the save step's `if`");
    assert!(
        condition.contains("!cancelled()") && condition.contains("cache-hit != 'true'"),
        "the build is saved after a regression too, never over an exact hit: {condition}"
    );
    let run_at = |step: &Value| {
        gate_steps
            .iter()
            .position(|s| s == step)
            .expect("a step of the job")
    };
    let run_step = gate_steps
        .iter()
        .find(|s| {
            s["run"]
                .as_str()
                .is_some_and(|r| r.contains("loadgate run"))
        })
        .expect("the run step");
    assert!(
        run_at(restore) < run_at(run_step) && run_at(run_step) < run_at(save),
        "restored before the run, saved after it"
    );
    let baseline_cache = jobs["baseline"]["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .find(|s| {
            uses(s, "actions/cache@")
                && s["with"]["path"]
                    .as_str()
                    .is_some_and(|p| p.contains("target/"))
        })
        .expect("the baseline job caches its build");
    assert_caches_the_build(
        "the baseline job",
        &path_lines(&baseline_cache["with"]["path"]),
        false,
    );
    assert!(
        restore["with"]["restore-keys"].as_str().is_some_and(|k| {
            let prefix = as_str(&baseline_cache["with"]["key"], "the baseline cache key")
                .split("${{ hashFiles")
                .next()
                .unwrap_or_default()
                .to_owned();
            k.lines().any(|l| l.trim() == prefix)
        }),
        "a pull request's first run starts from its base branch's build"
    );
    let uploads: Vec<(String, String)> = jobs["gate"]["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .filter(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .map(|s| {
            (
                s["if"].as_str().unwrap_or_default().to_owned(),
                // The first path uploaded; the others exclude the base's build.
                s["with"]["path"]
                    .as_str()
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches('/')
                    .to_owned(),
            )
        })
        .collect();
    let out_dir_upload = jobs["gate"]["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .filter(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .filter_map(|s| s["with"]["path"].as_str())
        .find(|p| p.lines().count() > 1)
        .unwrap_or_default();
    assert!(
        out_dir_upload.contains("!target/loadgate/base-*/"),
        "the out-dir upload leaves out the base's build: {out_dir_upload}"
    );
    for (what, path) in [
        ("--junit", path_str(gate.junit.as_deref(), "--junit")),
        ("--out-dir", path_str(gate.out_dir.as_deref(), "--out-dir")),
    ] {
        assert!(
            uploads
                .iter()
                .any(|(condition, uploaded)| condition == "always()" && *uploaded == path),
            "the gate job uploads {what} {path} with `if: always()`; uploads: {uploads:?}"
        );
    }

    // Release branches: `run --save-baseline`, with the only write permission of the workflow.
    assert!(
        found
            .iter()
            .filter(|i| i.job == "baseline")
            .filter_map(Invocation::run)
            .any(|r| r.save_baseline),
        "the baseline job runs with --save-baseline"
    );
    for run in found
        .iter()
        .filter(|i| i.job == "baseline")
        .filter_map(Invocation::run)
    {
        assert!(
            run.mode == Some(ComparisonModeArg::Stored),
            "a baseline is a stored-mode run (--mode stored), whatever the config says"
        );
    }
    assert_eq!(
        jobs["baseline"]["permissions"]["contents"].as_str(),
        Some("write"),
        "the baseline job may push notes"
    );
    assert!(
        scripts.iter().any(|(j, s)| j == "baseline"
            && s.contains("git push")
            && s.contains("refs/notes/loadgate")),
        "the baseline job pushes refs/notes/loadgate"
    );
}

#[test]
fn gitlab_pipeline_commands_parse_and_the_jobs_do_what_the_gate_needs() {
    let pipeline = load("ci/gitlab/loadgate.gitlab-ci.yml");
    let scripts = gitlab_scripts(&pipeline);
    let found = invocations("ci/gitlab/loadgate.gitlab-ci.yml", &scripts);
    assert!(
        found.len() >= EXPECTED_COMMANDS_PER_TEMPLATE,
        "found {} `cargo loadgate` commands in the GitLab pipeline, expected at least {EXPECTED_COMMANDS_PER_TEMPLATE}",
        found.len()
    );

    // Merge requests: `run`, never saving; the JUnit report published and the out-dir kept always.
    let gate_job = gitlab_job(&pipeline, "loadgate:gate");
    let gate_runs: Vec<&RunOpts> = found
        .iter()
        .filter(|i| i.job == "loadgate:gate")
        .filter_map(Invocation::run)
        .collect();
    assert_eq!(gate_runs.len(), 1, "the merge request job runs `run` once");
    let gate = gate_runs[0];
    assert!(
        !gate.save_baseline,
        "a merge request never saves a baseline"
    );
    assert!(
        gate.base_ref.is_some(),
        "the gate names the target branch (--base-ref)"
    );
    assert!(
        gate.mode == Some(ComparisonModeArg::Auto) && !gate.paired,
        "the gate says --mode auto: paired when the merge-base builds, whatever the config says"
    );
    // The build is cached between runs, the base's target dir with it, keyed on Cargo.lock, and
    // saved after a failed gate too.
    for (job, paired) in [("loadgate:gate", true), ("loadgate:baseline", false)] {
        let merged = gitlab_job(&pipeline, job);
        let caches = merged["cache"]
            .as_sequence()
            .unwrap_or_else(|| panic!("`{job}` has a list of caches"));
        let build = caches
            .iter()
            .find(|c| {
                c["paths"].as_sequence().is_some_and(|p| {
                    p.iter()
                        .any(|p| p.as_str().is_some_and(|p| p.starts_with("target/")))
                })
            })
            .unwrap_or_else(|| panic!("`{job}` caches its build"));
        let paths: Vec<String> = build["paths"]
            .as_sequence()
            .expect("paths")
            .iter()
            .map(|p| as_str(p, "a cache path").to_owned())
            .collect();
        assert_caches_the_build(job, &paths, paired);
        assert!(
            build["key"]["files"]
                .as_sequence()
                .is_some_and(|f| f.iter().any(|f| f.as_str() == Some("Cargo.lock"))),
            "`{job}`'s build cache is keyed on Cargo.lock"
        );
        assert_eq!(
            build["when"].as_str(),
            Some("always"),
            "`{job}` saves its build after a failed run too"
        );
        assert!(
            caches
                .iter()
                .any(|c| serde_yaml_ng::to_string(c).is_ok_and(|t| t.contains(".cargo-home/bin"))),
            "`{job}` still caches the cargo-loadgate install"
        );
        assert_eq!(
            merged["variables"]["GIT_DEPTH"].as_str(),
            Some("0"),
            "`{job}` fetches the full history"
        );
    }
    assert!(
        serde_yaml_ng::to_string(&gate_job["rules"])
            .expect("rules")
            .contains("merge_request_event"),
        "the gate job runs in merge request pipelines"
    );
    let artifacts = &gate_job["artifacts"];
    assert_eq!(artifacts["when"].as_str(), Some("always"));
    assert_eq!(
        artifacts["reports"]["junit"].as_str(),
        Some(path_str(gate.junit.as_deref(), "--junit").as_str()),
        "the JUnit report the run writes is the one published"
    );
    let out_dir = path_str(gate.out_dir.as_deref(), "--out-dir");
    assert!(
        artifacts["paths"]
            .as_sequence()
            .expect("artifacts: paths")
            .iter()
            .any(|p| p.as_str().map(|p| p.trim_end_matches('/')) == Some(out_dir.as_str())),
        "the out-dir {out_dir} is kept as an artifact"
    );
    assert!(
        artifacts["exclude"].as_sequence().is_some_and(|e| e
            .iter()
            .any(|p| p.as_str() == Some("target/loadgate/base-*/**/*"))),
        "the base's build is not kept as an artifact"
    );
    assert_eq!(
        gate_job["variables"]["GIT_DEPTH"].as_str(),
        Some("0"),
        "full history for the merge-base"
    );

    // Release branches: `run --save-baseline`, then the notes pushed.
    assert!(
        found
            .iter()
            .filter(|i| i.job == "loadgate:baseline")
            .filter_map(Invocation::run)
            .any(|r| r.save_baseline),
        "the baseline job runs with --save-baseline"
    );
    for run in found
        .iter()
        .filter(|i| i.job == "loadgate:baseline")
        .filter_map(Invocation::run)
    {
        assert!(
            run.mode == Some(ComparisonModeArg::Stored),
            "a baseline is a stored-mode run (--mode stored), whatever the config says"
        );
    }
    assert!(
        scripts.iter().any(|(j, s)| j == "loadgate:baseline"
            && s.contains("git push")
            && s.contains("refs/notes/loadgate")),
        "the baseline job pushes refs/notes/loadgate"
    );
    assert!(
        scripts.iter().any(|(_, s)| s.contains("git fetch")
            && s.contains("refs/notes/loadgate:refs/notes/loadgate")),
        "the jobs fetch refs/notes/loadgate"
    );
}

#[test]
fn every_found_command_names_its_job() {
    // A guard on the walk itself: commands are attributed to the jobs that hold them.
    let workflow = load("ci/github/loadgate.yml");
    let found = invocations("ci/github/loadgate.yml", &github_scripts(&workflow));
    for invocation in &found {
        assert!(
            ["gate", "baseline"].contains(&invocation.job.as_str()),
            "`{}` is in an unexpected job `{}`",
            invocation.words.join(" "),
            invocation.job
        );
    }
}

// ---- the notes push, run for real against a local "origin" ----

/// A result that `baseline save` accepts: complete, clean, measured on `cpu`. It is the checked-in
/// format-1 result (tests/fixtures/result/v1-first.json, a real run's) with its commit and CPU
/// replaced: `baseline save` reads results typed, so a hand-written partial one is refused.
fn saveable_result(commit: &str, cpu: &str) -> String {
    let fixture = loadgate_tests::workspace_root().join("tests/fixtures/result/v1-first.json");
    let text = std::fs::read_to_string(&fixture).expect("the format-1 result fixture");
    let mut result: serde_json::Value = serde_json::from_str(&text).expect("fixture is JSON");
    result["status"] = "complete".into();
    result["git"] = serde_json::json!({ "commit": commit, "dirty": false });
    result["environment"]["cpu_model"] = cpu.into();
    result.to_string()
}

/// Runs `program args` in `dir` with `path` first on PATH (so `cargo loadgate` is the built binary)
/// and a fixed git identity; returns whether it succeeded, and what it printed.
fn sh(
    dir: &Path,
    path: &Path,
    envs: &[(&str, &str)],
    program: &str,
    args: &[&str],
) -> (bool, String) {
    let search = std::env::join_paths(
        std::iter::once(path.to_owned())
            .chain(Path::new(env!("CARGO")).parent().map(Path::to_owned))
            .chain(std::env::split_paths(
                &std::env::var_os("PATH").unwrap_or_default(),
            )),
    )
    .expect("PATH");
    let out = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("PATH", search)
        .env("GIT_AUTHOR_NAME", "ci")
        .env("GIT_AUTHOR_EMAIL", "ci@localhost")
        .env("GIT_COMMITTER_NAME", "ci")
        .env("GIT_COMMITTER_EMAIL", "ci@localhost")
        .envs(envs.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Two baseline jobs of different environments saved the same commit from the same fetched notes;
/// the first pushes, the second is rejected and must save again on top and push. `script` is the
/// template's push step; `setup` prepares each job's clone (e.g. a URL rewrite).
fn concurrent_pushes_both_land(
    template: &str,
    script: &str,
    envs: &[(&str, &str)],
    setup: &dyn Fn(&Path),
) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let bin = root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(loadgate_tests::loadgate_bin(), bin.join("cargo-loadgate")).unwrap();
    let git = |dir: &Path, args: &[&str]| {
        let (ok, text) = sh(dir, &bin, &[], "git", args);
        assert!(ok, "git {args:?} failed:\n{text}");
        text
    };
    git(root, &["init", "-q", "--bare", "origin.git"]);
    let seed = root.join("seed");
    std::fs::create_dir(&seed).unwrap();
    git(&seed, &["init", "-q"]);
    git(&seed, &["commit", "-q", "--allow-empty", "-m", "a release"]);
    git(
        &seed,
        &["push", "-q", "../origin.git", "HEAD:refs/heads/main"],
    );
    let commit = git(&seed, &["rev-parse", "HEAD"]).trim().to_owned();

    let jobs: Vec<std::path::PathBuf> = ["one", "two"]
        .iter()
        .map(|name| {
            let dir = root.join(name);
            git(root, &["clone", "-q", "origin.git", name]);
            git(&dir, &["checkout", "-q", &commit]);
            setup(&dir);
            let out = dir.join("target/loadgate");
            std::fs::create_dir_all(&out).unwrap();
            std::fs::write(out.join("result.json"), saveable_result(&commit, name)).unwrap();
            // Both save before either pushes: the second push is not a fast-forward.
            let (ok, text) = sh(
                &dir,
                &bin,
                &[],
                "cargo",
                &[
                    "loadgate",
                    "baseline",
                    "save",
                    "--from",
                    "target/loadgate/result.json",
                ],
            );
            assert!(ok, "the save failed:\n{text}");
            dir
        })
        .collect();
    let mut with_before: Vec<(&str, &str)> = envs.to_vec();
    with_before.push(("NOTES_BEFORE", "none"));
    for dir in &jobs {
        let (ok, text) = sh(
            dir,
            &bin,
            &with_before,
            "bash",
            &["-eo", "pipefail", "-c", script],
        );
        assert!(
            ok,
            "{template}: the push step failed in {}:\n{text}",
            dir.display()
        );
    }
    let (ok, note) = sh(
        root,
        &bin,
        &[],
        "git",
        &[
            "--git-dir",
            "origin.git",
            "notes",
            "--ref",
            "loadgate",
            "show",
            &commit,
        ],
    );
    assert!(ok, "no note pushed:\n{note}");
    let note: serde_json::Value =
        serde_json::from_str(&note).expect("the pushed note is one JSON document");
    let mut cpus: Vec<&str> = note["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["fingerprint"]["cpu_model"].as_str().unwrap())
        .collect();
    cpus.sort_unstable();
    assert_eq!(
        cpus,
        ["one", "two"],
        "{template}: both environments' entries landed"
    );

    // A job whose run stored nothing pushes nothing.
    let now = git(&jobs[0], &["rev-parse", "refs/notes/loadgate"]);
    let mut unchanged: Vec<(&str, &str)> = envs.to_vec();
    unchanged.push(("NOTES_BEFORE", now.trim()));
    let (ok, text) = sh(
        &jobs[0],
        &bin,
        &unchanged,
        "bash",
        &["-eo", "pipefail", "-c", script],
    );
    assert!(
        ok && text.contains("no new baseline to push"),
        "{template}:\n{text}"
    );
}

#[test]
fn the_github_notes_push_saves_again_on_top_of_a_concurrent_push() {
    let workflow = load("ci/github/loadgate.yml");
    let script = workflow["jobs"]["baseline"]["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|run| run.contains("git push"))
        .expect("a step that pushes the notes");
    concurrent_pushes_both_land("ci/github/loadgate.yml", script, &[], &|_| {});
}

#[test]
fn the_gitlab_notes_push_saves_again_on_top_of_a_concurrent_push() {
    let pipeline = load("ci/gitlab/loadgate.gitlab-ci.yml");
    let (_, push) = gitlab_scripts(&pipeline)
        .into_iter()
        .find(|(job, s)| job == "loadgate:baseline" && s.contains("git push"))
        .expect("a script entry that pushes the notes");
    // The job's own lines around the push: the exit status of the run, then exiting with it.
    let script = format!("status=0\n{push}\nexit \"$status\"");
    let envs = [
        ("LOADGATE_PUSH_TOKEN", "t0ken"),
        ("CI_SERVER_PROTOCOL", "https"),
        ("CI_SERVER_HOST", "gitlab.invalid"),
        ("CI_SERVER_PORT", "443"),
        ("CI_PROJECT_PATH", "group/service"),
    ];
    concurrent_pushes_both_land(
        "ci/gitlab/loadgate.gitlab-ci.yml",
        &script,
        &envs,
        // The push URL the job builds from the CI variables, sent to the local origin instead.
        &|dir| {
            let origin = dir.parent().unwrap().join("origin.git");
            let (ok, text) = sh(
                dir,
                Path::new("/nonexistent"),
                &[],
                "git",
                &[
                    "config",
                    &format!("url.{}.insteadOf", origin.display()),
                    "https://loadgate:t0ken@gitlab.invalid:443/group/service.git",
                ],
            );
            assert!(ok, "{text}");
        },
    );
}

// ---- a small shell reader: enough of POSIX sh to find the words of each simple command ----

/// One token of a shell line: a word, or a control operator that ends a simple command.
#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Operator,
}

/// The simple commands of a script, each as its words: `\` continuations joined, comments dropped,
/// lines split at `;`, `&&`, `||`, `|` and `&`, leading keywords (`if`, `then`, `!`, …), variable
/// assignments and redirections removed, expansions replaced by [`PLACEHOLDER`].
fn commands(script: &str) -> Result<Vec<Vec<String>>, String> {
    let mut commands = Vec::new();
    for line in logical_lines(script) {
        let mut current: Vec<String> = Vec::new();
        for token in tokenize(&line)?.into_iter().chain([Token::Operator]) {
            match token {
                Token::Word(word) => current.push(word),
                Token::Operator => {
                    let words = std::mem::take(&mut current);
                    let start = words
                        .iter()
                        .position(|w| !is_keyword(w) && !is_assignment(w))
                        .unwrap_or(words.len());
                    if start < words.len() {
                        commands.push(words[start..].to_vec());
                    }
                }
            }
        }
    }
    Ok(commands)
}

fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "if" | "then"
            | "else"
            | "elif"
            | "fi"
            | "do"
            | "done"
            | "while"
            | "until"
            | "!"
            | "{"
            | "}"
    )
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        name.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Lines with their `\`-newline continuations joined.
fn logical_lines(script: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut pending = String::new();
    for line in script.lines() {
        match line.trim_end().strip_suffix('\\') {
            Some(continued) => {
                pending.push_str(continued);
                pending.push(' ');
            }
            None => {
                pending.push_str(line);
                lines.push(std::mem::take(&mut pending));
            }
        }
    }
    if !pending.is_empty() {
        lines.push(pending);
    }
    lines
}

/// Splits one line into words and operators, shell-words-like: single and double quotes, `\`
/// escapes, comments; GitHub `${{ … }}` expressions and shell expansions become [`PLACEHOLDER`];
/// a redirection and its target are dropped.
fn tokenize(line: &str) -> Result<Vec<Token>, String> {
    let line = replace_github_expressions(line)?;
    let chars: Vec<char> = line.chars().collect();
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut redirect_target = false;
    let mut i = 0;

    fn finish(
        tokens: &mut Vec<Token>,
        word: &mut String,
        in_word: &mut bool,
        redirect_target: &mut bool,
    ) {
        if *in_word {
            if *redirect_target {
                *redirect_target = false;
            } else {
                tokens.push(Token::Word(std::mem::take(word)));
            }
        }
        word.clear();
        *in_word = false;
    }

    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                finish(&mut tokens, &mut word, &mut in_word, &mut redirect_target);
                i += 1;
            }
            '#' if !in_word => break,
            '\'' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '\'')
                    .ok_or_else(|| format!("unterminated ' in `{line}`"))?;
                word.extend(&chars[i + 1..i + 1 + end]);
                in_word = true;
                i += end + 2;
            }
            '"' => {
                in_word = true;
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(format!("unterminated \" in `{line}`")),
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') if matches!(chars.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                            word.push(chars[i + 1]);
                            i += 2;
                        }
                        Some('$') => i = expansion(&chars, i, &mut word)?,
                        Some('`') => i = backticks(&chars, i, &mut word)?,
                        Some(&c) => {
                            word.push(c);
                            i += 1;
                        }
                    }
                }
            }
            '\\' => {
                if let Some(&next) = chars.get(i + 1) {
                    word.push(next);
                }
                in_word = true;
                i += 2;
            }
            '$' => {
                in_word = true;
                i = expansion(&chars, i, &mut word)?;
            }
            '`' => {
                in_word = true;
                i = backticks(&chars, i, &mut word)?;
            }
            ';' | '&' | '|' | '(' | ')' => {
                finish(&mut tokens, &mut word, &mut in_word, &mut redirect_target);
                tokens.push(Token::Operator);
                i += 1;
                while matches!(chars.get(i), Some(&next) if next == c && c != '(' && c != ')') {
                    i += 1;
                }
            }
            '<' | '>' => {
                // `2>` and `>&2`: a file descriptor number before, and `&N` after, belong to it.
                if in_word && word.chars().all(|c| c.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                finish(&mut tokens, &mut word, &mut in_word, &mut redirect_target);
                i += 1;
                while matches!(chars.get(i), Some('<' | '>' | '&')) {
                    i += 1;
                }
                redirect_target = true;
            }
            c => {
                word.push(c);
                in_word = true;
                i += 1;
            }
        }
    }
    finish(&mut tokens, &mut word, &mut in_word, &mut redirect_target);
    Ok(tokens)
}

/// Replaces each GitHub Actions `${{ … }}` expression with [`PLACEHOLDER`].
fn replace_github_expressions(line: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find("${{") {
        let end = rest[start..]
            .find("}}")
            .ok_or_else(|| format!("unterminated ${{{{ in `{line}`"))?;
        out.push_str(&rest[..start]);
        out.push_str(PLACEHOLDER);
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Reads the expansion starting at `chars[at] == '$'` (`$NAME`, `${…}`, `$(…)`, `$((…))`, `$?`, …),
/// appends [`PLACEHOLDER`] (or a lone `$`) to `word`, and returns the index after it.
fn expansion(chars: &[char], at: usize, word: &mut String) -> Result<usize, String> {
    let unterminated = || format!("unterminated expansion in `{}`", String::from_iter(chars));
    let after = match chars.get(at + 1) {
        Some('{') => {
            at + 2
                + chars[at + 2..]
                    .iter()
                    .position(|&c| c == '}')
                    .ok_or_else(unterminated)?
                + 1
        }
        Some('(') => {
            let mut depth = 0usize;
            let mut i = at + 1;
            loop {
                match chars.get(i) {
                    None => return Err(unterminated()),
                    Some('(') => depth += 1,
                    Some(')') => {
                        depth -= 1;
                        if depth == 0 {
                            break i + 1;
                        }
                    }
                    Some(_) => {}
                }
                i += 1;
            }
        }
        Some(c) if c.is_ascii_alphabetic() || *c == '_' => {
            at + 1
                + chars[at + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                    .count()
        }
        Some(c) if c.is_ascii_digit() || "?$#@*!-".contains(*c) => at + 2,
        _ => {
            word.push('$');
            return Ok(at + 1);
        }
    };
    word.push_str(PLACEHOLDER);
    Ok(after)
}

/// Reads a `` `…` `` command substitution starting at `chars[at]`, appends [`PLACEHOLDER`].
fn backticks(chars: &[char], at: usize, word: &mut String) -> Result<usize, String> {
    let end = chars[at + 1..]
        .iter()
        .position(|&c| c == '`')
        .ok_or_else(|| format!("unterminated ` in `{}`", String::from_iter(chars)))?;
    word.push_str(PLACEHOLDER);
    Ok(at + end + 2)
}

fn words(script: &str) -> Vec<Vec<String>> {
    commands(script).expect("tokenizes")
}

#[test]
fn the_shell_reader_splits_quotes_continuations_and_operators() {
    assert_eq!(
        words("cargo loadgate run \\\n  -p \"my pkg\" --profile 'ci' # a comment"),
        vec![vec![
            "cargo",
            "loadgate",
            "run",
            "-p",
            "my pkg",
            "--profile",
            "ci"
        ]]
    );
    assert_eq!(
        words("status=0; cargo loadgate run --junit a.xml || status=$?\nexit \"$status\""),
        vec![
            vec!["cargo", "loadgate", "run", "--junit", "a.xml"],
            vec!["exit", PLACEHOLDER],
        ]
    );
    assert_eq!(
        words("if git push origin refs/notes/loadgate; then\n  echo \"ok\" >&2\nfi"),
        vec![
            vec!["git", "push", "origin", "refs/notes/loadgate"],
            vec!["echo", "ok"],
        ]
    );
    assert_eq!(
        words("echo \"x=$(git rev-parse -q --verify HEAD || echo none)\" >> \"$GITHUB_ENV\""),
        vec![vec!["echo", "x=PLACEHOLDER"]]
    );
}

#[test]
fn the_shell_reader_replaces_expressions_with_one_word() {
    assert_eq!(
        words(
            "cargo loadgate run --base-ref origin/${{ github.base_ref }} -p \"$PKG\" --out-dir ${OUT}/x"
        ),
        vec![vec![
            "cargo",
            "loadgate",
            "run",
            "--base-ref",
            "origin/PLACEHOLDER",
            "-p",
            PLACEHOLDER,
            "--out-dir",
            "PLACEHOLDER/x",
        ]]
    );
    assert_eq!(
        words("sleep $((attempt * 3))"),
        vec![vec!["sleep", PLACEHOLDER]]
    );
    assert!(commands("echo 'unterminated").is_err());
    assert!(commands("echo ${{ github.ref").is_err());
}

#[test]
fn a_renamed_flag_is_caught() {
    // The point of this file: a flag the tool does not know fails the walk.
    let scripts = vec![(
        "gate".to_owned(),
        "cargo loadgate run --profile ci --no-such-flag".to_owned(),
    )];
    let caught = std::panic::catch_unwind(|| invocations("inline", &scripts));
    assert!(caught.is_err(), "an unknown flag must not parse");
}

// ---- the shard templates (issue 18): a GitHub matrix and a Kubernetes Indexed Job ----

/// The `cargo loadgate` commands of `scripts`, parsed, with the values only the CI knows at run time
/// filled in: `--shard` gets `0/4` and `--start-at` gets `0` where an expansion stands (a matrix
/// index, `$JOB_COMPLETION_INDEX`, the agreed instant).
fn shard_invocations(template: &str, scripts: &[(String, String)]) -> Vec<(String, Command)> {
    let mut found = Vec::new();
    for (job, script) in scripts {
        for mut words in commands(script)
            .unwrap_or_else(|e| panic!("{template}, job `{job}`: cannot tokenize a script: {e}"))
        {
            if !words.starts_with(&["cargo".to_owned(), "loadgate".to_owned()]) {
                continue;
            }
            for i in 1..words.len() {
                if words[i].contains(PLACEHOLDER) {
                    match words[i - 1].as_str() {
                        "--shard" => words[i] = "0/4".to_owned(),
                        "--start-at" => words[i] = "0".to_owned(),
                        _ => {}
                    }
                }
            }
            let argv = ["cargo-loadgate".to_owned()]
                .into_iter()
                .chain(words[1..].iter().cloned());
            match parse_args(argv) {
                Ok(CargoOpts::Loadgate(opts)) => found.push((job.clone(), opts.command)),
                Err(e) => panic!(
                    "{template}, job `{job}`: `{}` does not parse:\n{e}",
                    words.join(" ")
                ),
            }
        }
    }
    found
}

#[test]
fn the_github_shards_workflow_runs_a_matrix_of_shards_and_merges_them() {
    let template = "ci/github/loadgate-shards.yml";
    let workflow = load(template);
    let jobs = &workflow["jobs"];
    let found = shard_invocations(template, &github_scripts(&workflow));
    let shard_runs: Vec<&RunOpts> = found
        .iter()
        .filter(|(job, _)| job == "shard")
        .filter_map(|(_, c)| match c {
            Command::Run(run) => Some(&**run),
            _ => None,
        })
        .collect();
    assert_eq!(shard_runs.len(), 1, "one run in the shard job");
    let run = shard_runs[0];
    assert!(run.shard.is_some() && run.start_at.is_some() && run.keep_going);
    assert!(run.url.is_some(), "the shards load the one staging URL");
    let merges: Vec<&Command> = found
        .iter()
        .filter(|(job, c)| job == "merge" && matches!(c, Command::Merge(_)))
        .map(|(_, c)| c)
        .collect();
    assert_eq!(merges.len(), 1, "one merge in the merge job");

    // The matrix: every index from 0 to SHARDS - 1, none cancelled by another's failure.
    let shard = &jobs["shard"];
    let indices: Vec<u64> = shard["strategy"]["matrix"]["index"]
        .as_sequence()
        .expect("a matrix of indices")
        .iter()
        .map(|v| v.as_u64().expect("an index"))
        .collect();
    let count = shard["env"]["SHARDS"].as_u64().expect("SHARDS, a number");
    assert_eq!(indices, (0..count).collect::<Vec<_>>());
    assert_eq!(shard["strategy"]["fail-fast"].as_bool(), Some(false));
    // One agreed start for all, from the plan job.
    assert!(as_str(&shard["env"]["START_AT"], "START_AT").contains("needs.plan.outputs.start_at"));
    assert_eq!(as_str(&shard["needs"], "needs"), "plan");
    // The merge runs after every shard, even when one failed (so it can say which is missing),
    // with the baselines fetched and the results downloaded.
    let merge = &jobs["merge"];
    assert_eq!(as_str(&merge["needs"], "needs"), "shard");
    assert_eq!(as_str(&merge["if"], "if"), "always()");
    let uses: Vec<&str> = merge["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s.get("uses").and_then(Value::as_str))
        .collect();
    assert!(
        uses.iter()
            .any(|u| u.starts_with("actions/download-artifact"))
    );
    let scripts = github_scripts(&workflow);
    assert!(scripts.iter().any(|(job, s)| job == "merge"
        && s.contains("refs/notes/loadgate:refs/notes/loadgate")));
}

/// `cargo loadgate` commands run by the containers of a Kubernetes manifest's Jobs, by Job name.
fn k8s_scripts(documents: &[Value]) -> Vec<(String, String)> {
    let mut scripts = Vec::new();
    for doc in documents
        .iter()
        .filter(|d| d["kind"].as_str() == Some("Job"))
    {
        let name = as_str(&doc["metadata"]["name"], "a Job's name");
        for container in doc["spec"]["template"]["spec"]["containers"]
            .as_sequence()
            .expect("a Job has containers")
        {
            for arg in container["args"].as_sequence().into_iter().flatten() {
                scripts.push((name.to_owned(), as_str(arg, "an arg").to_owned()));
            }
        }
    }
    scripts
}

#[test]
fn the_kubernetes_template_is_an_indexed_job_of_shards_and_a_merge() {
    let template = "ci/k8s/loadgate-job.yaml";
    let text = std::fs::read_to_string(workspace_root().join(template)).unwrap();
    // The manifest's documents, split where kubectl splits them.
    let documents: Vec<Value> = text
        .split("\n---\n")
        .map(|doc| serde_yaml_ng::from_str(doc).expect("each document parses"))
        .collect();
    assert_eq!(documents.len(), 3, "the volume, the shards and the merge");
    let job = |name: &str| {
        documents
            .iter()
            .find(|d| {
                d["kind"].as_str() == Some("Job") && d["metadata"]["name"].as_str() == Some(name)
            })
            .unwrap_or_else(|| panic!("no Job `{name}`"))
    };
    let shards = job("loadgate-shards");
    assert_eq!(shards["spec"]["completionMode"].as_str(), Some("Indexed"));
    let completions = shards["spec"]["completions"].as_u64().expect("completions");
    assert_eq!(shards["spec"]["parallelism"].as_u64(), Some(completions));
    let container = &shards["spec"]["template"]["spec"]["containers"][0];
    let shards_env = container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"].as_str() == Some("SHARDS"))
        .expect("SHARDS");
    assert_eq!(
        as_str(&shards_env["value"], "SHARDS"),
        completions.to_string()
    );
    let found = shard_invocations(template, &k8s_scripts(&documents));
    let runs: Vec<&RunOpts> = found
        .iter()
        .filter(|(name, _)| name == "loadgate-shards")
        .filter_map(|(_, c)| match c {
            Command::Run(run) => Some(&**run),
            _ => None,
        })
        .collect();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].shard.is_some() && runs[0].url.is_some() && runs[0].keep_going);
    let args = as_str(&container["args"][0], "args");
    assert!(
        args.contains("--shard \"$JOB_COMPLETION_INDEX/$SHARDS\""),
        "{args}"
    );
    assert!(
        found
            .iter()
            .any(|(name, c)| name == "loadgate-merge" && matches!(c, Command::Merge(_))),
        "the merge Job merges"
    );
    // Both Jobs share the results volume.
    for name in ["loadgate-shards", "loadgate-merge"] {
        let claim = &job(name)["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"];
        assert_eq!(
            claim["claimName"].as_str(),
            Some("loadgate-results"),
            "{name}"
        );
    }
}

/// The `history` commands of `job`, with the `run --save-baseline` they follow: same package,
/// profile and store (a series is one config hash), one of them with `--new-since` (what the
/// summary calls new), and none before the save (the pushed commit's run is part of the series).
fn assert_history_follows_the_save(template: &str, found: &[Invocation], job: &str) {
    let in_job: Vec<&Invocation> = found.iter().filter(|i| i.job == job).collect();
    let save_at = in_job
        .iter()
        .position(|i| i.run().is_some_and(|r| r.save_baseline))
        .unwrap_or_else(|| panic!("{template}: `{job}` saves a baseline"));
    let save = in_job[save_at].run().expect("a run");
    let histories: Vec<(usize, &cargo_loadgate::cli::HistoryOpts)> = in_job
        .iter()
        .enumerate()
        .filter_map(|(at, i)| match &i.command {
            Command::History(h) => Some((at, h.as_ref())),
            _ => None,
        })
        .collect();
    assert!(
        !histories.is_empty(),
        "{template}: `{job}` runs `cargo loadgate history`"
    );
    for (at, h) in &histories {
        let words = in_job[*at].words.join(" ");
        assert!(*at > save_at, "{template}: `{words}` runs after the save");
        assert_eq!(
            h.config.profile, save.config.profile,
            "{template}: `{words}`"
        );
        assert_eq!(
            h.config.package, save.config.package,
            "{template}: `{words}`"
        );
        assert_eq!(
            h.baseline_store, save.baseline_store,
            "{template}: `{words}`"
        );
        assert!(
            !h.json,
            "{template}: `{words}` prints the listing for the log"
        );
        assert_eq!(
            h.out_dir.as_deref(),
            Some(Path::new("target/loadgate/history")),
            "{template}: `{words}` writes inside the uploaded out-dir"
        );
    }
    assert!(
        histories.iter().any(|(_, h)| h.new_since.is_some()),
        "{template}: `{job}` names the commit before the push with --new-since"
    );
}

/// Issue 18: the main branch's job lists the change points of its stored baselines, and appends
/// the new ones to the step summary (which the tool does when `$GITHUB_STEP_SUMMARY` is set).
#[test]
fn the_github_baseline_job_reports_new_change_points() {
    let workflow = load("ci/github/loadgate.yml");
    let found = invocations("ci/github/loadgate.yml", &github_scripts(&workflow));
    assert_history_follows_the_save("ci/github/loadgate.yml", &found, "baseline");
    let steps = workflow["jobs"]["baseline"]["steps"]
        .as_sequence()
        .expect("steps");
    let step = steps
        .iter()
        .find(|s| {
            s.get("run")
                .and_then(Value::as_str)
                .is_some_and(|r| r.contains("cargo loadgate history"))
        })
        .expect("a history step");
    assert_eq!(
        step["if"].as_str(),
        Some("${{ !cancelled() }}"),
        "the history runs after a regression too"
    );
    assert_eq!(
        step["env"]["BEFORE"].as_str(),
        Some("${{ github.event.before }}"),
        "--new-since is the commit before the push"
    );
    let run = as_str(&step["run"], "`run`");
    assert!(
        run.matches("|| [ $? -eq 12 ]").count() == 2,
        "nothing stored yet (12) does not fail the job: {run}"
    );
}

#[test]
fn the_gitlab_baseline_job_reports_new_change_points() {
    let pipeline = load("ci/gitlab/loadgate.gitlab-ci.yml");
    let scripts = gitlab_scripts(&pipeline);
    let found = invocations("ci/gitlab/loadgate.gitlab-ci.yml", &scripts);
    assert_history_follows_the_save(
        "ci/gitlab/loadgate.gitlab-ci.yml",
        &found,
        "loadgate:baseline",
    );
    let script = scripts
        .iter()
        .find(|(job, s)| job == "loadgate:baseline" && s.contains("cargo loadgate history"))
        .map(|(_, s)| s)
        .expect("a history script");
    assert!(
        script.contains("CI_COMMIT_BEFORE_SHA"),
        "--new-since is the commit before the push: {script}"
    );
    assert!(
        script.matches("|| [ $? -eq 12 ] || status=1").count() == 2,
        "nothing stored yet (12) does not fail the job, another failure does: {script}"
    );
}
