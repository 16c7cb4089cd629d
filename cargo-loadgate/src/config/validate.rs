//! Validation: walks the parsed TOML (with spans) of the user's config and of the built-in
//! defaults, reports every problem at once, and builds the [`LoadgateConfig`] of one profile.
//!
//! Two passes share the same readers. The first reads every key of every table the user wrote —
//! top level and every `[profile.*]` — so a mistake in a profile that is not selected is still
//! found. The second resolves each profile key by key through its layers (see `defaults.toml`) and
//! checks what needs the whole picture: the target, the workload graph, steps against hold. Every
//! profile is resolved, so `check` proves all of them; identical problems are reported once.

use super::elements::profile::{Layer, Look, PROFILE, check_inherits, layers_of, profiles_of};
use super::elements::{
    SECTIONS, abort, gate, generator, profile_keys, ramp, slo, soak, target, top_keys, workload,
};
use super::error::{ConfigError, Diagnostic, Sources};
use super::source::{Cx, SourceFile, Tbl};
use super::types::*;
use std::{
    ops::Range,
    path::{Path, PathBuf},
};
use toml::de::DeTable;

/// How diagnostics name the built-in defaults file.
pub const BUILTIN_PATH: &str = "<built-in defaults>";

/// The built-in defaults and profiles.
pub const BUILTIN_CONFIG: &str = include_str!("defaults.toml");

/// The profiles every configuration has.
pub const BUILTIN_PROFILES: &[&str] = &["default", "quick", "ci", "full"];

/// Where in a file the user's configuration lives.
pub(crate) enum Location {
    /// The whole file (a `loadgate.toml`).
    File,
    /// `[package.metadata.loadgate]` of a `Cargo.toml`.
    Metadata,
}

/// Parses and validates a standalone `loadgate.toml` text and resolves `profile`.
///
/// `path` is only used to name the file in diagnostics and to resolve relative paths in it;
/// `package` is the cargo package the config belongs to, if any (`bin` is checked against its bins).
pub fn parse_config_str(
    text: &str,
    path: &Path,
    package: Option<PackageRef>,
    profile: &str,
) -> Result<LoadgateConfig, ConfigError> {
    validate(
        SourceFile::new(path.to_path_buf(), text.to_owned()),
        Location::File,
        package,
        profile,
    )
}

pub(crate) fn validate(
    user: SourceFile,
    location: Location,
    package: Option<PackageRef>,
    profile: &str,
) -> Result<LoadgateConfig, ConfigError> {
    let files = [
        user,
        SourceFile::new(PathBuf::from(BUILTIN_PATH), BUILTIN_CONFIG.to_owned()),
    ];
    let cx = Cx::new(&files);
    let result = validate_in(&cx, &location, package, profile);
    let diagnostics = cx.into_diagnostics();
    match result {
        Err(e) => Err(e),
        Ok(Some(config)) if diagnostics.is_empty() => Ok(config),
        Ok(_) => Err(invalid(diagnostics, &files)),
    }
}

fn invalid(mut diagnostics: Vec<Diagnostic>, files: &[SourceFile]) -> ConfigError {
    if diagnostics.is_empty() {
        // Only reachable through a bug: no config and no reason. Say so rather than pass.
        diagnostics.push(files[0].diagnostic(
            0..0,
            "the configuration could not be resolved".to_owned(),
            None,
        ));
    }
    let sources: Sources = files
        .iter()
        .filter(|f| diagnostics.iter().any(|d| d.path == f.path))
        .map(|f| (f.path.clone(), f.text.clone()))
        .collect();
    ConfigError::Invalid {
        diagnostics,
        sources,
    }
}

/// Parses a file, reporting every syntax error.
fn parse<'a>(cx: &Cx<'_>, file: usize, text: &'a str) -> Option<DeTable<'a>> {
    let (table, errors) = DeTable::parse_recoverable(text);
    for e in &errors {
        let span = e.span().unwrap_or(0..0);
        let message = e.message().trim().trim_end_matches('.');
        let (first, rest) = message.split_once('\n').unwrap_or((message, ""));
        let help = (!rest.trim().is_empty()).then(|| rest.trim().to_owned());
        cx.error(file, span, format!("invalid TOML: {first}"), help);
    }
    errors.is_empty().then(|| table.into_inner())
}

fn validate_in(
    cx: &Cx<'_>,
    location: &Location,
    package: Option<PackageRef>,
    profile: &str,
) -> Result<Option<LoadgateConfig>, ConfigError> {
    let Some(user_doc) = parse(cx, 0, &cx.files[0].text) else {
        return Ok(None);
    };
    let Some(builtin_doc) = parse(cx, 1, &cx.files[1].text) else {
        return Ok(None);
    };
    let empty = DeTable::new();
    let (user_root, anchor, prefix): (&DeTable<'_>, Range<usize>, &str) = match location {
        Location::File => (&user_doc, 0..0, ""),
        Location::Metadata => {
            let found = Layer {
                file: 0,
                root: &user_doc,
                profile: false,
                defaults: false,
            }
            .get(&["package", "metadata", "loadgate"]);
            match found {
                Some(v) => match v.as_table() {
                    Some(t) => (t, v.span(), "package.metadata.loadgate."),
                    None => {
                        cx.error(
                            0,
                            v.span(),
                            format!(
                                "expected a table, found {}",
                                super::source::describe(v.get())
                            ),
                            None,
                        );
                        return Ok(None);
                    }
                },
                None => (&empty, 0..0, "package.metadata.loadgate."),
            }
        }
    };
    let root_name = if prefix.is_empty() {
        "the top level".to_owned()
    } else {
        "`[package.metadata.loadgate]`".to_owned()
    };
    let user = Tbl::new(0, anchor.clone(), root_name, user_root);
    user.check_keys(cx, &top_keys());
    let builtin = Tbl::new(1, 0..0, "the built-in defaults".to_owned(), &builtin_doc);

    // Pass 1: every table as written.
    for (root, file) in [(&user, 0), (&builtin, 1)] {
        let pre = if file == 0 { prefix } else { "" };
        check_sections(cx, root, pre, false);
    }
    let user_profiles = profiles_of(cx, &user, prefix);
    let builtin_profiles = profiles_of(cx, &builtin, "");
    for (name, table) in user_profiles.iter().chain(&builtin_profiles) {
        table.check_keys(cx, &profile_keys());
        check_sections(cx, table, &format!("{prefix}{PROFILE}.{name}."), true);
    }
    let mut available: Vec<String> = BUILTIN_PROFILES.iter().map(|s| s.to_string()).collect();
    for name in builtin_profiles.keys().chain(user_profiles.keys()) {
        if !available.contains(name) {
            available.push(name.clone());
        }
    }
    check_inherits(cx, &user_profiles, &available);
    if !available.iter().any(|a| a == profile) {
        return Err(ConfigError::UnknownProfile {
            name: profile.to_owned(),
            available,
        });
    }

    // Pass 2: resolve every profile; keep the one asked for.
    let mut selected = None;
    for name in &available {
        let look = Look {
            layers: layers_of(
                name,
                &user_profiles,
                &builtin_profiles,
                user_root,
                &builtin_doc,
            ),
            anchor: (0, anchor.clone()),
            prefix,
        };
        let config = build(cx, &look, name, package.clone());
        if name == profile {
            selected = config;
        }
    }
    Ok(selected)
}

/// Pass 1 over one root (top level, or one profile): every section and key as written.
fn check_sections(cx: &Cx<'_>, root: &Tbl<'_>, prefix: &str, in_profile: bool) {
    for section in SECTIONS {
        if let Some(v) = root.get(section.name) {
            section.check(cx, v, prefix, in_profile);
        }
    }
}

/// Pass 2: one profile, section by section through its layers.
fn build(
    cx: &Cx<'_>,
    look: &Look<'_>,
    profile: &str,
    package: Option<PackageRef>,
) -> Option<LoadgateConfig> {
    let target = target::build(cx, look, package.as_ref());
    let slo = slo::build(cx, look);
    let workload = workload::build(cx, look);
    let generator = generator::build(cx, look);
    let ramp = ramp::build(cx, look, profile);
    let soak = soak::build(cx, look);
    let abort = abort::build(cx, look);
    let gate = gate::build(cx, look);
    Some(LoadgateConfig {
        source: ConfigSource {
            path: cx.files[0].path.clone(),
            package,
        },
        profile: profile.to_owned(),
        target: target?,
        slo: slo?,
        workload: workload?,
        generator: generator?,
        ramp: ramp?,
        soak: soak?,
        abort: abort?,
        gate: gate?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use indoc::indoc;
    use std::time::Duration;
    use test_case::test_case;

    pub(crate) fn package(bins: &[&str]) -> PackageRef {
        PackageRef {
            name: "app".to_owned(),
            manifest_path: PathBuf::from("/ws/app/Cargo.toml"),
            workspace_root: PathBuf::from("/ws"),
            target_directory: PathBuf::from("/ws/target"),
            bins: bins.iter().map(|b| b.to_string()).collect(),
        }
    }

    fn parse(text: &str, profile: &str) -> Result<LoadgateConfig, ConfigError> {
        parse_config_str(
            text,
            Path::new("loadgate.toml"),
            Some(package(&["app"])),
            profile,
        )
    }

    const WORKLOAD: &str = indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
    "#};

    fn with_workload(text: &str) -> String {
        format!("{WORKLOAD}{text}")
    }

    // Each case is one mistake; exactly one problem must be reported, at the given place.
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-secs = 10
    "#}, 2, 1, "unknown key `sessions-per-secs` in `[workload]`", Some("did you mean `sessions-per-sec`?"); "unknown key with suggestion")]
    #[test_case("[ramps]\nhold = \"1s\"\n", 6, 2, "unknown key `ramps` in the top level", Some("did you mean `ramp`?"); "unknown section")]
    #[test_case("[ramp]\nhold = 5\n", 7, 8, "expected a duration like \"30s\", found integer 5", None; "duration given as integer")]
    #[test_case("[ramp]\nhold = \"5 parsecs\"\n", 7, 8, "unknown duration unit `parsecs` in `5 parsecs`", Some("use ns, us, ms, s, m or h"); "unknown duration unit")]
    #[test_case("[ramp]\nhold = \"0s\"\n", 7, 8, "`hold` must be longer than zero", None; "zero hold")]
    #[test_case("[target]\nport = 70000\n", 7, 8, "a port must be between 1 and 65535, found 70000", None; "port out of range")]
    #[test_case("[target]\nport = \"80\"\n", 7, 8, "expected an integer (a port), found string \"80\"", None; "port as string")]
    #[test_case("[target]\ncpus = 0\n", 7, 8, "`cpus` must be greater than 0, found 0", None; "zero cpus")]
    #[test_case("[target]\nmemory = \"lots\"\n", 7, 10, "`lots` is not a size", Some("write e.g. \"512MiB\""); "memory without number")]
    #[test_case("[target]\nmemory = \"1TB\"\n", 7, 10, "unknown size unit `TB` in `1TB`", Some("use B, KiB, MiB, GiB, KB, MB or GB"); "unknown size unit")]
    #[test_case("[slo]\nerror-rate = 2.0\n", 7, 14, "`error-rate` must be at most 100%, found 200%", Some("a bare number is a fraction: 0.01 means 1%"); "error rate above one")]
    #[test_case("[slo]\nerror-rate = true\n", 7, 14, "expected a percentage like \"1%\" or a fraction like 0.01, found boolean true", None; "error rate as boolean")]
    #[test_case("[target]\nbin = \"app\"\nimage = \"x:1\"\n", 8, 1, "`image` and `bin` both name the target", Some("give only one of `bin`, `image`, `dockerfile` or `url`"); "two target sources")]
    #[test_case("[target]\nbin = \"ap\"\n", 7, 7, "package `app` has no binary target `ap`", Some("did you mean `app`? its binaries are: `app`"); "unknown bin")]
    #[test_case("[target]\nurl = \"https://127.0.0.1\"\n", 7, 7, "\"https://127.0.0.1\" uses https, which loadgate does not speak", Some("load goes to a service on loopback over plain http"); "https url")]
    #[test_case("[target]\ncontext = \".\"\nimage = \"x:1\"\n", 7, 1, "`context` is only used with `dockerfile`", None; "context without dockerfile")]
    #[test_case("[target]\nenv = { A = 1 }\n", 7, 13, "expected a string (quote numbers and booleans), found integer 1", None; "env value not a string")]
    #[test_case("[target]\nready = { http = \"health\" }\n", 7, 18, "path \"health\" must start with `/`", None; "ready path without slash")]
    #[test_case("[ramp]\nsteps = [\"50%\", \"25%\"]\n", 7, 17, "ramp steps must increase", Some("list them from the lightest load to the heaviest"); "steps not increasing")]
    #[test_case("[ramp]\nsteps = []\n", 7, 9, "`steps` lists no steps", None; "no steps")]
    #[test_case("[ramp]\nrefine = -1\n", 7, 10, "`refine` must be between 0 and 20, found -1", None; "negative refine")]
    #[test_case("[soak]\nat = \"0%\"\n", 7, 6, "`soak.at` must be more than 0%", None; "soak at zero")]
    #[test_case("[gate]\nrss-slope = \"2MiB\"\n", 7, 13, "`2MiB` is not a rate", Some("write e.g. \"2MiB/min\""); "rss slope without time")]
    #[test_case("[generator]\nmax-in-flight = 0\n", 7, 17, "`max-in-flight` must be at least 1, found 0", None; "zero in flight")]
    #[test_case("[generator]\nconnections = 300\n", 7, 15, "`connections` must be between 0 and 256, found 300", None; "connections past the cap")]
    #[test_case("[profile.ci.target]\nbin = \"app\"\n", 7, 1, "`bin` cannot be set in a profile", Some("a profile changes how the target is measured, not which target; set it in the top-level `[target]`"); "bin in a profile")]
    #[test_case("[profile.ci.ramp]\nhodl = \"1s\"\n", 7, 1, "unknown key `hodl` in `[profile.ci.ramp]`", Some("did you mean `hold`?"); "unknown key in a profile")]
    #[test_case("[profile.ci]\nramps = {}\n", 7, 1, "unknown key `ramps` in `[profile.ci]`", Some("did you mean `ramp`?"); "unknown section in a profile")]
    #[test_case("[profile.mine]\ninherits = \"qiuck\"\n", 7, 12, "profile `mine` inherits from an unknown profile `qiuck`", Some("did you mean `quick`?"); "inherits unknown profile")]
    #[test_case("[profile.a]\ninherits = \"b\"\n[profile.b]\ninherits = \"a\"\n", 7, 12, "profile inheritance makes a cycle: a → b → a", Some("remove one of these `inherits`"); "inheritance cycle")]
    #[test_case("[profile.a]\ninherits = \"a\"\n", 7, 12, "profile inheritance makes a cycle: a → a", Some("remove one of these `inherits`"); "profile inherits itself")]
    #[test_case("[profile.quick.ramp]\nwarmup = \"3s\"\n", 7, 10, "in profile `quick`, `warmup` (3s) is not shorter than `hold` (2s)", Some("the warmup is excluded from each step's figures, so it must leave some of the hold to measure"); "warmup longer than a profile's hold")]
    fn one_problem_is_reported(
        extra: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        let text = if extra.contains("[workload]") {
            extra.to_owned() + &WORKLOAD[11..]
        } else {
            with_workload(extra)
        };
        let err = parse(&text, "default").expect_err("the config is invalid");
        let diags = err.diagnostics();
        assert_eq!(diags.len(), 1, "{text}\n{err}");
        let d = &diags[0];
        assert_eq!(
            (d.line, d.col, d.message.as_str(), d.help.as_deref()),
            (line, col, message, help),
            "{text}\n{err}"
        );
    }

    // Mistakes in the workload: the file is written in full.
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        [[workload.operation]]
        name = "home"
        request = { path = "/b" }
    "#}, 7, 8, "operation `home` is defined twice", Some("the first definition is on line 4; rename one of them"); "duplicate operation")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "hom", p = 0.5 }]
    "#}, 6, 16, "a transition of `home` names an unknown operation `hom`", Some("did you mean `home`?"); "unknown transition target")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        entry = "start"
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
    "#}, 3, 9, "`entry` names an unknown operation `start`", Some("the operations are: `home`"); "unknown entry")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "a", p = 0.7 }, { to = "b", p = 0.5 }]
        [[workload.operation]]
        name = "a"
        request = { path = "/a" }
        [[workload.operation]]
        name = "b"
        request = { path = "/b" }
    "#}, 6, 8, "the transitions of `home` sum to 1.2, more than 1", Some("the probabilities of one operation's `next` must sum to at most 1; the rest ends the session"); "probabilities above one")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        [[workload.operation]]
        name = "orphan"
        request = { path = "/o" }
    "#}, 7, 8, "operation `orphan` is unreachable from the entry operations", Some("add a transition to it (`next`) or list it in `workload.entry`"); "unreachable operation")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "home", p = 1.0 }]
    "#}, 6, 8, "sessions that reach `home` never end", Some("from here every transition's probabilities sum to 1 in a loop; lower one so sessions can leave"); "sessions never end")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/", headers = { Authorization = "Bearer {{token}}" } }
    "#}, 5, 53, "`{{token}}` is never captured on any path to `home`", Some("no operation captures it; capture it in an earlier operation, e.g. capture = { token = \"/token\" }"); "variable never captured")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        entry = [{ to = "home" }, { to = "login" }]
        [[workload.operation]]
        name = "home"
        request = { path = "/{{token}}" }
        [[workload.operation]]
        name = "login"
        request = { method = "POST", path = "/login" }
        capture = { token = "/token" }
        next = [{ to = "home", p = 0.5 }]
        [[workload.operation]]
        name = "later"
        request = { path = "/later" }
    "#}, 13, 8, "operation `later` is unreachable from the entry operations", Some("add a transition to it (`next`) or list it in `workload.entry`"); "a variable captured on some path is fine")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "next", p = 0.5 }]
        [[workload.operation]]
        name = "next"
        request = { path = "/n/{{sesion}}" }
    "#}, 9, 20, "`{{sesion}}` is never captured on any path to `next`", Some("did you mean `{{session}}`? no operation captures it; capture it in an earlier operation, e.g. capture = { sesion = \"/sesion\" }"); "misspelt built-in variable")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "home", p = 0.5, think = { uniform = ["3s", "1s"] } }]
    "#}, 6, 53, "uniform think time has its low bound 3s above its high bound 1s", Some("write the shorter duration first"); "uniform think reversed")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        capture = { token = "token" }
    "#}, 6, 21, "JSON pointer \"token\" must start with `/` (or be empty for the whole body)", Some("write e.g. \"/token\" or \"/0/id\""); "capture pointer without slash")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        expect = { json-pointer = "/a~2" }
    "#}, 6, 27, "JSON pointer \"/a~2\" has a `~` that is not `~0` or `~1`", Some("write e.g. \"/token\" or \"/0/id\""); "bad escape in a pointer")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { method = "GTE", path = "/" }
    "#}, 5, 22, "unknown HTTP method `GTE`", Some("did you mean `GET`?"); "unknown method")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { method = "post", path = "/" }
    "#}, 5, 22, "unknown HTTP method `post`", Some("methods are case-sensitive; write `POST`"); "lowercase method")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/", json = {}, body = "x" }
    "#}, 5, 43, "`request` of operation `home` has both `json` and `body`", Some("keep one of them"); "json and body")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "home" }
    "#}, 5, 20, "path \"home\" must start with `/`", None; "path without slash")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/{{session" }
    "#}, 5, 20, "`{{` without a closing `}}` in \"/{{session\"", None; "unclosed placeholder")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        capture = { session = "/id" }
    "#}, 6, 13, "`session` is a built-in variable and cannot be captured", None; "capture of a built-in")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        expect = { status = [200, 999] }
    "#}, 6, 27, "a status code must be between 100 and 599, found 999", None; "status out of range")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "home", p = 1.5 }]
    "#}, 6, 28, "a probability must be in (0, 1], found 1.5", None; "probability above one")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        reqest = { path = "/" }
    "#}, 5, 1, "unknown key `reqest` in operation `home`", Some("did you mean `request`?"); "typo in an operation key")]
    #[test_case(indoc! {r#"
        [workload]
        seed = 1
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
    "#}, 1, 1, "`[workload]` has no `sessions-per-sec`", None; "missing rate")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
    "#}, 1, 1, "the workload has no operations", Some("add one, e.g.\n[[workload.operation]]\nname = \"home\"\nrequest = { path = \"/\" }"); "no operations")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" 
    "#}, 5, 23, "invalid TOML: unclosed inline table, expected `}`", None; "toml syntax error")]
    fn one_workload_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        let err = parse(text, "default").expect_err("the config is invalid");
        let diags = err.diagnostics();
        assert_eq!(diags.len(), 1, "{text}\n{err}");
        let d = &diags[0];
        assert_eq!(
            (d.line, d.col, d.message.as_str(), d.help.as_deref()),
            (line, col, message, help),
            "{text}\n{err}"
        );
    }

    #[test]
    fn every_problem_is_rendered_at_once() {
        let text = indoc! {r#"
            [target]
            bin = "app"
            port = 0
            memroy = "256MiB"

            [workload]
            sessions-per-secs = 20
            entry = "landing"

            [[workload.operation]]
            name = "landing"
            request = { method = "GTE", path = "/" }
            next = [{ to = "logn", p = 0.8, think = "1s" }]

            [[workload.operation]]
            name = "login"
            request = { method = "POST", path = "/login", headers = { Authorization = "Bearer {{token}}" } }

            [ramp]
            hold = 5
        "#};
        let err = parse(text, "default").expect_err("the config is invalid");
        let ConfigError::Invalid {
            diagnostics,
            sources,
        } = &err
        else {
            panic!("{err}")
        };
        insta::assert_snapshot!(crate::config::render_diagnostics(diagnostics, sources));
    }

    #[test]
    fn the_display_of_invalid_is_the_rendering() {
        let err = parse("[ramp]\nhold = 5\n", "default").expect_err("the config is invalid");
        let ConfigError::Invalid {
            diagnostics,
            sources,
        } = &err
        else {
            panic!("{err}")
        };
        assert_eq!(
            err.to_string(),
            crate::config::render_diagnostics(diagnostics, sources)
        );
    }

    #[test]
    fn metadata_spans_point_into_cargo_toml() {
        let text = indoc! {r#"
            [package]
            name = "app"
            version = "0.1.0"
            edition = "2024"

            [package.metadata.loadgate.target]
            bin = "app"
            prot = 8080

            [package.metadata.loadgate.workload]
            sessions-per-sec = -1
            [[package.metadata.loadgate.workload.operation]]
            name = "home"
            request = { path = "/" }

            [package.metadata.loadgate.profile.ci.ramp]
            hold = "4"

            [dependencies]
        "#};
        let err = validate(
            SourceFile::new(PathBuf::from("app/Cargo.toml"), text.to_owned()),
            Location::Metadata,
            Some(package(&["app"])),
            "default",
        )
        .expect_err("the config is invalid");
        let ConfigError::Invalid {
            diagnostics,
            sources,
        } = &err
        else {
            panic!("{err}")
        };
        insta::assert_snapshot!(crate::config::render_diagnostics(diagnostics, sources));
    }

    #[test]
    fn metadata_config_loads() {
        let text = "[package]\nname = \"app\"\n\n[package.metadata.loadgate]\nworkload = { sessions-per-sec = 5, operation = [{ name = \"home\", request = { path = \"/\" } }] }\n"
            .to_owned();
        let cfg = validate(
            SourceFile::new(PathBuf::from("app/Cargo.toml"), text),
            Location::Metadata,
            Some(package(&["app"])),
            "ci",
        )
        .expect("valid");
        assert_eq!(
            cfg.target.source,
            TargetSource::Bin {
                name: "app".to_owned()
            }
        );
        assert_eq!(cfg.workload.sessions_per_sec, 5.0);
        assert_eq!(cfg.ramp.hold, Duration::from_secs(4));
    }

    const LAYERED: &str = indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }

        [ramp]
        hold = "3s"
        refine = 4

        [soak]
        window = "2s"

        [profile.quick.ramp]
        hold = "1s"

        [profile.mine]
        inherits = "quick"
        ramp = { hold = "1500ms" }
        soak = { at = "50%" }

        [profile.theirs]
        inherits = "mine"
        gate = { p99 = "20%" }
    "#};

    #[test]
    fn profiles_layer_user_over_builtin_over_top_level_over_defaults() {
        let default = parse(LAYERED, "default").unwrap();
        assert_eq!(default.ramp.hold, Duration::from_secs(3), "user top level");
        assert_eq!(default.ramp.refine, 4, "user top level");
        assert_eq!(
            default.ramp.warmup,
            Duration::from_secs(1),
            "built-in default"
        );
        assert_eq!(default.ramp.steps.len(), 6, "built-in default");

        let quick = parse(LAYERED, "quick").unwrap();
        assert_eq!(
            quick.ramp.hold,
            Duration::from_secs(1),
            "user [profile.quick]"
        );
        assert_eq!(
            quick.ramp.warmup,
            Duration::from_millis(500),
            "built-in [profile.quick]"
        );
        assert_eq!(
            quick.ramp.refine, 1,
            "built-in [profile.quick] beats the user's top level"
        );
        assert_eq!(quick.ramp.steps, vec![0.25, 0.5, 1.0]);
        assert_eq!(quick.soak.window, Duration::from_secs(2), "user top level");
        assert_eq!(quick.soak.at, 0.6, "built-in default");

        let mine = parse(LAYERED, "mine").unwrap();
        assert_eq!(
            mine.ramp.hold,
            Duration::from_millis(1500),
            "user [profile.mine]"
        );
        assert_eq!(
            mine.ramp.warmup,
            Duration::from_millis(500),
            "inherited from quick"
        );
        assert_eq!(
            mine.soak.duration,
            Duration::from_secs(5),
            "inherited from built-in quick"
        );
        assert_eq!(mine.soak.at, 0.5);

        let theirs = parse(LAYERED, "theirs").unwrap();
        assert_eq!(theirs.profile, "theirs");
        assert_eq!(theirs.gate.p99_change, 0.2);
        assert_eq!(
            theirs.ramp.hold,
            Duration::from_millis(1500),
            "two steps up the chain"
        );
        assert_eq!(theirs.gate.p50_change, 0.05, "built-in default");

        let full = parse(LAYERED, "full").unwrap();
        assert_eq!(
            (full.ramp.hold, full.ramp.refine),
            (Duration::from_secs(10), 3)
        );
        assert_eq!(full.soak.duration, Duration::from_secs(120));
    }

    #[test]
    fn an_unknown_profile_lists_the_available_ones() {
        let err = parse(LAYERED, "quik").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown profile `quik`\nhint: available profiles: default, quick, ci, full, mine, theirs"
        );
    }

    #[test]
    fn the_default_p99_applies_only_when_no_latency_limit_is_given() {
        let cfg = parse(WORKLOAD, "default").unwrap();
        assert_eq!(
            cfg.slo.latency,
            vec![LatencyLimit {
                quantile: 0.99,
                limit: Duration::from_millis(200)
            }]
        );
        let cfg = parse(
            &with_workload("[slo]\np50 = \"20ms\"\np999 = \"1s\"\n"),
            "default",
        )
        .unwrap();
        assert_eq!(
            cfg.slo.latency,
            vec![
                LatencyLimit {
                    quantile: 0.5,
                    limit: Duration::from_millis(20)
                },
                LatencyLimit {
                    quantile: 0.999,
                    limit: Duration::from_secs(1)
                },
            ]
        );
    }

    #[test]
    fn a_profile_url_replaces_the_target() {
        let text = with_workload(
            "[target]\nbin = \"app\"\n[profile.staging.target]\nurl = \"http://127.0.0.1:9000/\"\n",
        );
        assert_eq!(
            parse(&text, "default").unwrap().target.source,
            TargetSource::Bin {
                name: "app".to_owned()
            }
        );
        assert_eq!(
            parse(&text, "staging").unwrap().target.source,
            TargetSource::Url {
                url: "http://127.0.0.1:9000".to_owned()
            }
        );
    }

    #[test]
    fn the_target_defaults_to_the_only_bin_or_a_loopback_url() {
        let one = parse_config_str(
            WORKLOAD,
            Path::new("loadgate.toml"),
            Some(package(&["app"])),
            "default",
        )
        .unwrap();
        assert_eq!(
            one.target.source,
            TargetSource::Bin {
                name: "app".to_owned()
            }
        );
        let none = parse_config_str(WORKLOAD, Path::new("loadgate.toml"), None, "default").unwrap();
        assert_eq!(
            none.target.source,
            TargetSource::Url {
                url: "http://127.0.0.1:8080".to_owned()
            }
        );
        let two = Some(package(&["app", "app-admin"]));
        let err =
            parse_config_str(WORKLOAD, Path::new("loadgate.toml"), two, "default").unwrap_err();
        assert_eq!(
            err.diagnostics()[0].message,
            "no target: package `app` has several binaries (app, app-admin)"
        );
    }

    #[test]
    fn a_dockerfile_resolves_against_the_config_directory() {
        let text = with_workload("[target]\ndockerfile = \"docker/Dockerfile\"\ncontext = \".\"\n");
        let cfg =
            parse_config_str(&text, Path::new("/ws/app/loadgate.toml"), None, "default").unwrap();
        assert_eq!(
            cfg.target.source,
            TargetSource::Dockerfile {
                path: PathBuf::from("/ws/app/docker/Dockerfile"),
                context: PathBuf::from("/ws/app/.")
            }
        );
    }

    #[test]
    fn a_full_operation_is_read_in_every_part() {
        let text = indoc! {r#"
            [workload]
            sessions-per-sec = 2.5
            entry = [{ to = "a", weight = 3 }, { to = "b", weight = 1 }]
            [[workload.operation]]
            name = "a"
            request = { method = "POST", path = "/a/{{session}}", headers = { X-B = "2", X-A = "1" }, json = { n = 1, s = "{{seq}}", l = [true, 1.5] } }
            expect = { status = [200, 201], body-contains = "ok", json-pointer = "/id", json-equals = { "/status" = "booked" } }
            capture = { id = "/id" }
            next = [{ to = "b", p = 0.5, think = "1s" }, { to = "a", p = 0.25, think = { fixed = "2s" } }]
            [[workload.operation]]
            name = "b"
            request = { path = "/b/{{id}}", body = "raw {{session}}" }
            next = [{ to = "a", p = 1, think = { uniform = ["1s", "3s"] } }]
        "#};
        let cfg = parse_config_str(text, Path::new("loadgate.toml"), None, "default").unwrap();
        let w = &cfg.workload;
        assert_eq!(
            w.entry,
            vec![
                EntryPoint {
                    operation: 0,
                    p: 0.75
                },
                EntryPoint {
                    operation: 1,
                    p: 0.25
                }
            ]
        );
        let a = &w.operations[0];
        assert_eq!(
            a.request.headers,
            vec![
                ("X-B".to_owned(), "2".to_owned()),
                ("X-A".to_owned(), "1".to_owned())
            ]
        );
        assert_eq!(
            a.request.body,
            Some(BodyTemplate::Json(
                serde_json::json!({ "n": 1, "s": "{{seq}}", "l": [true, 1.5] })
            ))
        );
        assert_eq!(a.expect.status, vec![200, 201]);
        assert_eq!(
            a.expect.json_equals,
            vec![("/status".to_owned(), serde_json::json!("booked"))]
        );
        assert_eq!(
            a.capture,
            vec![Capture {
                variable: "id".to_owned(),
                pointer: "/id".to_owned()
            }]
        );
        assert_eq!(
            a.next,
            vec![
                Transition {
                    to: 1,
                    p: 0.5,
                    think: ThinkTime::Exponential(Duration::from_secs(1))
                },
                Transition {
                    to: 0,
                    p: 0.25,
                    think: ThinkTime::Fixed(Duration::from_secs(2))
                },
            ]
        );
        let b = &w.operations[1];
        assert_eq!(b.request.method, "GET");
        assert_eq!(
            b.request.body,
            Some(BodyTemplate::Raw("raw {{session}}".to_owned()))
        );
        assert_eq!(
            b.next[0].think,
            ThinkTime::Uniform(Duration::from_secs(1), Duration::from_secs(3))
        );
    }

    #[test]
    fn the_built_in_defaults_are_valid_for_every_profile() {
        for profile in BUILTIN_PROFILES {
            let cfg =
                parse_config_str(WORKLOAD, Path::new("loadgate.toml"), None, profile).unwrap();
            assert_eq!(cfg.profile, *profile);
        }
    }

    fn demo_package() -> PackageRef {
        PackageRef {
            name: "demo-service".to_owned(),
            ..package(&["demo-service"])
        }
    }

    fn demo_config() -> String {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/demo-service/loadgate.toml");
        std::fs::read_to_string(path).expect("the demo's loadgate.toml is readable")
    }

    #[test_case("default")]
    #[test_case("quick")]
    #[test_case("ci")]
    #[test_case("full")]
    fn the_demo_config_loads_for_every_built_in_profile(profile: &str) {
        let demo = demo_package();
        let cfg = parse_config_str(
            &demo_config(),
            Path::new("fixtures/demo-service/loadgate.toml"),
            Some(demo),
            profile,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            cfg.target.source,
            TargetSource::Bin {
                name: "demo-service".to_owned()
            }
        );
        assert_eq!(cfg.target.memory_bytes, Some(256 * 1024 * 1024));
        let per_session = crate::config::elements::operation::expected_requests_per_session(
            &cfg.workload.entry,
            &cfg.workload.operations,
        );
        let rate = per_session * cfg.workload.sessions_per_sec;
        assert!(
            (180.0..=220.0).contains(&rate),
            "the demo's rate at 100% is {rate} requests/s"
        );
    }

    #[test]
    fn the_demo_override_example_works_when_uncommented() {
        let demo = demo_config();
        let start = demo
            .find("# [profile.ci.soak]")
            .expect("the example is in the demo config");
        let example: String = demo[start..]
            .lines()
            .map(|l| format!("{}\n", l.trim_start_matches("# ")))
            .collect();
        let text = format!("{}{example}", &demo[..start]);
        let path = Path::new("loadgate.toml");
        let ci = parse_config_str(&text, path, Some(demo_package()), "ci")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ci.soak.duration, Duration::from_secs(30));
        assert_eq!(ci.ramp.hold, Duration::from_secs(4));
        let nightly = parse_config_str(&text, path, Some(demo_package()), "nightly").unwrap();
        assert_eq!(nightly.ramp.steps, vec![0.25, 0.5, 1.0, 1.5, 2.0]);
        assert_eq!(
            nightly.ramp.hold,
            Duration::from_secs(10),
            "inherited from full"
        );
    }

    /// Never panic on user input: every damaged variant of the demo config is answered with a
    /// config or with problems that all point inside the file.
    #[test]
    fn damaged_configs_are_reported_not_panicked_on() {
        let demo = demo_config();
        let lines: Vec<&str> = demo.lines().collect();
        let mut variants: Vec<String> = (0..lines.len())
            .map(|skip| {
                lines
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != skip)
                    .map(|(_, l)| format!("{l}\n"))
                    .collect()
            })
            .collect();
        variants.extend(
            (0..demo.len())
                .step_by(13)
                .filter(|&i| demo.is_char_boundary(i))
                .map(|i| demo[..i].to_owned()),
        );
        for text in &variants {
            if let Err(err) = parse_config_str(
                text,
                Path::new("loadgate.toml"),
                Some(demo_package()),
                "quick",
            ) {
                let line_count = text.lines().count().max(1);
                for d in err.diagnostics() {
                    assert!(d.line >= 1 && d.line <= line_count + 1, "{d} in\n{text}");
                }
                let _ = err.to_string();
            }
        }
    }

    #[test]
    fn the_demo_config_resolves_to_this_listing() {
        let demo = demo_package();
        let cfg = parse_config_str(
            &demo_config(),
            Path::new("fixtures/demo-service/loadgate.toml"),
            Some(demo),
            "quick",
        )
        .unwrap();
        insta::assert_snapshot!(crate::config::render_resolved(&cfg));
    }

    /// The config hash of every stored baseline is taken over this serialized form, so a
    /// refactoring of `config/` must leave it byte for byte as it was: the demo config and the
    /// built-in defaults, in every built-in profile, pinned by the sha256 of their JSON.
    #[test]
    fn the_serialized_config_does_not_change() {
        let demo = demo_config();
        let demo_path = Path::new("fixtures/demo-service/loadgate.toml");
        let hash = |cfg: &LoadgateConfig| {
            let json = serde_json::to_value(cfg).expect("the config serializes");
            crate::result::hex_sha256(json.to_string().as_bytes())
        };
        let mut got = Vec::new();
        for profile in BUILTIN_PROFILES {
            let cfg = parse_config_str(&demo, demo_path, Some(demo_package()), profile).unwrap();
            got.push(format!("demo {profile} {}", hash(&cfg)));
        }
        for profile in BUILTIN_PROFILES {
            let cfg =
                parse_config_str(WORKLOAD, Path::new("loadgate.toml"), None, profile).unwrap();
            got.push(format!("defaults {profile} {}", hash(&cfg)));
        }
        assert_eq!(got, PINNED_SERIALIZED_CONFIG, "{}", got.join("\n"));
    }

    const PINNED_SERIALIZED_CONFIG: &[&str] = &[
        "demo default 1eac79e59f153c67cd5a2da3dd6d663e4c7e4839771df90901eac4dcc5ae2ebf",
        "demo quick ae801f860132285b4837474c54f5c462814416d36006a0470dd85e293c75e503",
        "demo ci f23182b56f71cce22da94ebe18df71da1608eec9b11aa60a7e8d749aae308a26",
        "demo full 585aab259e4228e226c7a3878dc832bb93e0823d8cceca9cd35ef013aa09c2f0",
        "defaults default 3ca1883482a715aa598ecdfccf45ec7adafe02b2f752092a2884f7b64691b359",
        "defaults quick b8c3c122c4c48cc36435f19a3c2d0993a8a5bceb5cf4f291c17548140bb65dfa",
        "defaults ci af3cc5e92d0ba38eb0b1457e9c4b8ff54f11934e74e9adb03f0b0e509fc467c8",
        "defaults full dd8d871081ee74fb6a55362693c0a2ea10b2790d826cfab04205cf2c5ba06bce",
    ];

    #[test]
    fn the_resolved_listing_reads_back_as_the_same_config() {
        let demo = demo_package();
        let path = Path::new("fixtures/demo-service/loadgate.toml");
        for profile in BUILTIN_PROFILES {
            let cfg = parse_config_str(&demo_config(), path, Some(demo.clone()), profile).unwrap();
            let listing = crate::config::render_resolved(&cfg);
            let again = parse_config_str(&listing, path, Some(demo.clone()), "default")
                .unwrap_or_else(|e| panic!("{listing}\n{e}"));
            assert_eq!(
                LoadgateConfig {
                    profile: profile.to_string(),
                    ..again
                },
                cfg
            );
        }
    }
}
