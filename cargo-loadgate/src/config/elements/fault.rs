//! `[[fault]]`: a change to a `[[stub]]`'s answers scheduled inside the soak (issue 15, seed
//! 002): more latency (`"+180ms"`) or a multiple of it (`"3x"`), an error burst (`errors`), from
//! `at` into the soak's measured part for `for`. A top-level array of tables like `[[stub]]`;
//! `profiles` (required) says which profiles run it. Each profile checks that it serves
//! the stub and that the fault ends within its soak. Every problem is reported at once.

use crate::config::source::{Cx, Tbl, Val, array_of_tables, duration, share, string, suggest};
use crate::config::types::{FaultConfig, LoadgateConfig, StubConfig};
use crate::stub::StubFault;
use std::ops::Range;
use std::time::Duration;

/// The top-level key.
pub(crate) const FAULT: &str = "fault";
const NAME: &str = "name";
const PROFILES: &str = "profiles";
const PHASE: &str = "phase";
const AT: &str = "at";
const FOR: &str = "for";
const STUB: &str = "stub";
const LATENCY: &str = "latency";
const ERRORS: &str = "errors";

/// The keys of an entry, in the order "expected one of" lists them.
pub(crate) const KEYS: &[&str] = &[NAME, PROFILES, PHASE, AT, FOR, STUB, LATENCY, ERRORS];

/// The phases a fault may run in.
const PHASES: &[&str] = &["soak"];

/// A fault as written: its config, the profiles it names, and where its parts are.
pub(crate) struct RawFault {
    config: FaultConfig,
    profiles: Vec<(String, Range<usize>)>,
    file: usize,
    name_span: Range<usize>,
    stub_span: Range<usize>,
    for_span: Range<usize>,
}

/// Reads every `[[fault]]` of `root` (the user's top level), checking each names a declared stub
/// (`stubs`, every `[[stub]]`'s name) and that names are unique.
pub(crate) fn read(cx: &Cx<'_>, root: &Tbl<'_>, prefix: &str, stubs: &[String]) -> Vec<RawFault> {
    let faults: Vec<RawFault> = array_of_tables(cx, root, FAULT, prefix)
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| entry(cx, item, prefix, i, stubs))
        .collect();
    for (i, fault) in faults.iter().enumerate() {
        if let Some(first) = faults[..i]
            .iter()
            .find(|f| f.config.name == fault.config.name)
        {
            cx.error(
                fault.file,
                fault.name_span.clone(),
                format!("fault `{}` is declared twice", fault.config.name),
                Some(format!(
                    "the first is at {}; give each `[[fault]]` its own name",
                    first.config.location
                )),
            );
        }
    }
    faults
}

/// The faults of `raws` that `config`'s profile runs, checked against it: the profiles named
/// exist, the profile serves the fault's stub (`stubs`, the profile's), it soaks, and the fault
/// ends within its soak.
pub(crate) fn for_profile(
    cx: &Cx<'_>,
    raws: &[RawFault],
    config: &LoadgateConfig,
    stubs: &[StubConfig],
    available: &[String],
) -> Vec<FaultConfig> {
    let mut out = Vec::new();
    for raw in raws {
        let owner = format!("fault `{}`", raw.config.name);
        let profiles = Some(raw.profiles.as_slice());
        if !super::profile::keeps(cx, profiles, raw.file, available, &config.profile, &owner) {
            continue;
        }
        let f = &raw.config;
        if !stubs.iter().any(|s| s.name == f.stub) {
            cx.error(
                raw.file,
                raw.stub_span.clone(),
                format!(
                    "fault `{}` changes stub `{}`, which profile `{}` does not serve",
                    f.name, f.stub, config.profile
                ),
                Some(format!(
                    "add \"{}\" to the stub's `profiles`, or give the fault the same `profiles`",
                    config.profile
                )),
            );
            continue;
        }
        let soak = config.soak.duration;
        let ends = f.at + f.duration;
        // The time to stable SLO after the removal needs `[recovery] windows` of the phase's 1 s
        // windows.
        let after = crate::engine::WINDOW * config.recovery.windows.max(1) as u32;
        if ends + after > soak {
            cx.error(
                raw.file,
                raw.for_span.clone(),
                format!(
                    "fault `{}` ends {} into the soak, and the {} after it that recovery needs \
                     ([recovery] windows × the soak's window) go past its {} in profile `{}`",
                    f.name,
                    crate::config::format_duration(ends),
                    crate::config::format_duration(after),
                    crate::config::format_duration(soak),
                    config.profile
                ),
                Some(
                    "a fault is applied and removed inside its phase, so that the time to stable \
                     SLO after it is measured: move `at` earlier, shorten `for`, or lengthen \
                     `[soak] duration`"
                        .to_owned(),
                ),
            );
            continue;
        }
        // One fault at a time, each with its recovery read before the next: on one stub a
        // second would replace the first (and the first's removal end both), and a fault inside
        // another's recovery would be read as that one's.
        if let Some(other) = out
            .iter()
            .find(|o: &&FaultConfig| o.at < ends + after && f.at < o.at + o.duration + after)
        {
            cx.error(
                raw.file,
                raw.for_span.clone(),
                format!(
                    "faults `{}` and `{}` overlap, counting the {} after each that its recovery \
                     is read from",
                    other.name,
                    f.name,
                    crate::config::format_duration(after)
                ),
                Some("schedule one after the other's recovery, or combine them".to_owned()),
            );
            continue;
        }
        out.push(f.clone());
    }
    out
}

fn entry(
    cx: &Cx<'_>,
    v: Val<'_>,
    prefix: &str,
    index: usize,
    stubs: &[String],
) -> Option<RawFault> {
    let fallback = format!("entry {} of `[[{prefix}{FAULT}]]`", index + 1);
    let t = Tbl::of(cx, v, fallback.clone(), "a table (a fault)")?;
    t.check_keys(cx, KEYS);
    let name_val = t.get(NAME);
    let name = t
        .required(cx, NAME, &fallback, "add e.g. name = \"slow-fraud\"")
        .and_then(|n| {
            let s = string(cx, n, "a string (the fault's name)")?;
            if s.is_empty() {
                cx.error(
                    n.file,
                    n.span(),
                    "a fault's `name` is empty".to_owned(),
                    Some("name it, e.g. name = \"slow-fraud\"".to_owned()),
                );
                return None;
            }
            Some(s.to_owned())
        });
    let label = name.as_deref().map_or(fallback, |n| format!("fault `{n}`"));
    let phase = match t.get(PHASE) {
        Some(p) => {
            let s = string(cx, p, "a string (a phase: \"soak\")")?;
            if !PHASES.contains(&s) {
                cx.error(
                    p.file,
                    p.span(),
                    format!("a fault cannot run in phase `{s}`"),
                    Some("faults run in the soak: phase = \"soak\"".to_owned()),
                );
                return None;
            }
            Some(s.to_owned())
        }
        None => Some("soak".to_owned()),
    };
    let at = t
        .required(cx, AT, &label, "add when it starts, e.g. at = \"10s\"")
        .and_then(|a| duration(cx, a));
    let for_val = t.get(FOR);
    let length = t
        .required(cx, FOR, &label, "add how long it holds, e.g. for = \"10s\"")
        .and_then(|f| {
            let d = duration(cx, f)?;
            if d.is_zero() {
                cx.error(
                    f.file,
                    f.span(),
                    "a fault's `for` must be longer than zero".to_owned(),
                    None,
                );
                return None;
            }
            Some(d)
        });
    let stub_val = t.get(STUB);
    let stub = t
        .required(
            cx,
            STUB,
            &label,
            "name the `[[stub]]` it changes, e.g. stub = \"fraud\"",
        )
        .and_then(|s| {
            let name = string(cx, s, "a string (a stub's name)")?;
            if !stubs.iter().any(|n| n == name) {
                let help = match suggest(name, stubs.iter().map(String::as_str)) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => format!("declare it with [[stub]] name = \"{name}\""),
                };
                cx.error(
                    s.file,
                    s.span(),
                    format!("{label} changes stub `{name}`, which is not declared"),
                    Some(help),
                );
                return None;
            }
            Some(name.to_owned())
        });
    let latency = match t.get(LATENCY) {
        Some(l) => Some(Some(latency_change(cx, l)?)),
        None => Some(None),
    };
    let errors = match t.get(ERRORS) {
        Some(e) => Some(Some(share(cx, e, "a fault's `errors`", Some(1.0))?)),
        None => Some(None),
    };
    let (latency, errors) = (latency?, errors?);
    if latency.is_none() && errors.is_none() {
        cx.error(
            t.file,
            t.span.clone(),
            format!("{label} changes nothing"),
            Some("give it latency = \"+180ms\" (or \"3x\"), errors = \"50%\", or both".to_owned()),
        );
        return None;
    }
    let (extra, factor) = latency.unwrap_or((Duration::ZERO, 1.0));
    // Required: a fault must fit the soak of every profile that runs it, and the built-in ones'
    // soaks differ (`quick`'s is 5 s).
    let profiles = t
        .required(
            cx,
            PROFILES,
            &label,
            "name the profiles that run it, e.g. profiles = [\"faults\"]: it must fit each one's \
             soak",
        )
        .and_then(|p| super::profile::profile_list(cx, p, "[\"faults\"]"));
    let (line, col) = cx.files[t.file].position(t.span.start);
    Some(RawFault {
        config: FaultConfig {
            name: name?,
            phase: phase?,
            at: at?,
            duration: length?,
            stub: stub?,
            change: StubFault {
                extra,
                factor,
                errors,
            },
            location: format!("{}:{line}:{col}", cx.files[t.file].path.display()),
        },
        profiles: profiles?,
        file: t.file,
        name_span: name_val.map_or(t.span.clone(), |n| n.span()),
        stub_span: stub_val.map_or(t.span.clone(), |s| s.span()),
        for_span: for_val.map_or(t.span.clone(), |f| f.span()),
    })
}

/// `"+180ms"` (added to every delay) or `"3x"` (every delay multiplied): (extra, factor).
fn latency_change(cx: &Cx<'_>, v: Val<'_>) -> Option<(Duration, f64)> {
    let s = string(cx, v, "a string like \"+180ms\" or \"3x\"")?;
    let help = || {
        Some(
            "write \"+180ms\" to add to every delay of the stub, or \"3x\" to multiply them"
                .to_owned(),
        )
    };
    if let Some(rest) = s.strip_prefix('+') {
        return match crate::config::parse_duration(rest) {
            Ok(d) if !d.is_zero() => Some((d, 1.0)),
            Ok(_) => {
                cx.error(
                    v.file,
                    v.span(),
                    "a fault's added latency must be more than zero".to_owned(),
                    help(),
                );
                None
            }
            Err(e) => {
                cx.error(
                    v.file,
                    v.span(),
                    format!("`latency` {s:?} is not an added duration: {e}"),
                    help(),
                );
                None
            }
        };
    }
    match crate::config::parse_factor(s) {
        Ok(k) if k > 1000.0 => {
            cx.error(
                v.file,
                v.span(),
                format!("`latency` {s:?} multiplies by more than 1000"),
                help(),
            );
            None
        }
        Ok(k) if k > 0.0 && k != 1.0 => Some((Duration::ZERO, k)),
        Ok(_) => {
            cx.error(
                v.file,
                v.span(),
                format!("`latency` {s:?} changes nothing"),
                help(),
            );
            None
        }
        Err(_) => {
            cx.error(
                v.file,
                v.span(),
                format!("`latency` {s:?} is neither an added duration nor a multiple"),
                help(),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::validate::testing::{parse, with_workload};

    const STUB_TOML: &str =
        "[[stub]]\nname = \"fraud\"\nenv = \"FRAUD_URL\"\n[[stub.route]]\npath = \"/\"\n";

    fn parse_ok(text: &str) -> LoadgateConfig {
        let text = with_workload(&format!("{STUB_TOML}{text}"));
        parse(&text, "default").unwrap_or_else(|e| panic!("{text}\n{e}"))
    }

    fn assert_one_error(text: &str, says: &str) {
        let text = with_workload(&format!("{STUB_TOML}{text}"));
        let err = parse(&text, "default").expect_err("the config is invalid");
        let diags = err.diagnostics();
        assert_eq!(diags.len(), 1, "{text}\n{err}");
        let d = &diags[0];
        let help = d.help.as_deref().unwrap_or_default();
        assert!(
            d.message.contains(says) || help.contains(says),
            "{says:?} in\n{text}\n{err}"
        );
    }

    #[test]
    fn a_fault_reads_with_its_change() {
        let cfg = parse_ok(
            "[[fault]]\nname = \"slow\"\nstub = \"fraud\"\nat = \"5s\"\nfor = \"10s\"\nlatency = \"+180ms\"\nprofiles = [\"default\"]\n\n\
             [[fault]]\nname = \"burst\"\nstub = \"fraud\"\nat = \"21s\"\nfor = \"2s\"\nlatency = \"3x\"\nerrors = \"50%\"\nprofiles = [\"default\"]\n",
        );
        let slow = &cfg.faults[0];
        assert_eq!(slow.phase, "soak");
        assert_eq!(
            (slow.at, slow.duration),
            (Duration::from_secs(5), Duration::from_secs(10))
        );
        assert_eq!(slow.change.extra, Duration::from_millis(180));
        assert_eq!(slow.describe(), "latency +180ms");
        let burst = &cfg.faults[1];
        assert_eq!(burst.change.factor, 3.0);
        assert_eq!(burst.change.errors, Some(0.5));
        assert_eq!(burst.describe(), "latency ×3, errors 50%");
    }

    #[test]
    fn bad_faults_are_reported_at_their_place() {
        let base =
            "[[fault]]\nname = \"f\"\nstub = \"fraud\"\nat = \"1s\"\nprofiles = [\"default\"]\n";
        assert_one_error(&format!("{base}for = \"10s\"\n"), "changes nothing");
        assert_one_error(
            "[[fault]]\nname = \"f\"\nstub = \"frud\"\nat = \"5s\"\nfor = \"1s\"\nlatency = \"+1ms\"\nprofiles = [\"default\"]\n",
            "did you mean `fraud`?",
        );
        // The default soak is 30 s.
        assert_one_error(
            "[[fault]]\nname = \"f\"\nstub = \"fraud\"\nat = \"5s\"\nfor = \"26s\"\nlatency = \"+1ms\"\nprofiles = [\"default\"]\n",
            "ends 31s into the soak, and the 5s after it",
        );
        assert_one_error(
            &format!("{base}for = \"1s\"\nlatency = \"180ms\"\n"),
            "neither an added duration nor a multiple",
        );
        assert_one_error(
            &format!("{base}for = \"1s\"\nlatency = \"1x\"\n"),
            "changes nothing",
        );
        assert_one_error(
            &format!("{base}for = \"0s\"\nlatency = \"+1ms\"\n"),
            "longer than zero",
        );
        assert_one_error(
            &format!("{base}for = \"1s\"\nphase = \"ramp\"\nlatency = \"+1ms\"\n"),
            "cannot run in phase `ramp`",
        );
        assert_one_error(
            &format!("{base}for = \"1s\"\nerrors = \"150%\"\n"),
            "must be at most 100%",
        );
        assert_one_error(
            &format!(
                "{base}for = \"1s\"\nerrors = \"1%\"\n\n\
                 [[fault]]\nname = \"f\"\nstub = \"fraud\"\nat = \"10s\"\nfor = \"1s\"\nerrors = \"2%\"\nprofiles = [\"default\"]\n"
            ),
            "fault `f` is declared twice",
        );
        assert_one_error(
            &format!(
                "{base}for = \"1s\"\nerrors = \"1%\"\n\n\
                 [[fault]]\nname = \"g\"\nstub = \"fraud\"\nat = \"1500ms\"\nfor = \"1s\"\nerrors = \"2%\"\nprofiles = [\"default\"]\n"
            ),
            "faults `f` and `g` overlap, counting the 5s after each",
        );
    }

    #[test]
    fn a_fault_names_its_profiles() {
        assert_one_error(
            "[[fault]]\nname = \"f\"\nstub = \"fraud\"\nat = \"1s\"\nfor = \"1s\"\nerrors = \"1%\"\n",
            "fault `f` has no `profiles`",
        );
    }

    #[test]
    fn a_fault_on_a_stub_its_profile_does_not_serve_is_an_error() {
        let text = with_workload(
            "[recovery]\nwindows = 1\n[[stub]]\nname = \"fraud\"\nenv = \"FRAUD_URL\"\nprofiles = [\"quick\"]\n[[stub.route]]\npath = \"/\"\n\
             [[fault]]\nname = \"f\"\nstub = \"fraud\"\nat = \"1s\"\nfor = \"1s\"\nerrors = \"10%\"\nprofiles = [\"default\", \"quick\"]\n",
        );
        let err = parse(&text, "quick").expect_err("invalid in `default`");
        assert!(
            err.to_string()
                .contains("which profile `default` does not serve"),
            "{err}"
        );
        let scoped = text.replace("[\"default\", \"quick\"]", "[\"quick\"]");
        let quick = parse(&scoped, "quick").expect("valid");
        assert_eq!(quick.faults.len(), 1);
        assert!(parse(&scoped, "default").expect("valid").faults.is_empty());
    }

    #[test]
    fn the_listing_reads_back_as_the_same_faults() {
        let text = with_workload(&format!(
            "{STUB_TOML}[[fault]]\nname = \"slow\"\nstub = \"fraud\"\nat = \"1s\"\nfor = \"2s\"\nlatency = \"+180ms\"\nerrors = \"5%\"\nprofiles = [\"default\"]\n\
             [[fault]]\nname = \"x\"\nstub = \"fraud\"\nat = \"10s\"\nfor = \"1s\"\nlatency = \"2.5x\"\nprofiles = [\"default\"]\n"
        ));
        let cfg = parse(&text, "default").expect("valid");
        let listing = crate::config::render_resolved(&cfg);
        let again = parse(&listing, "default").unwrap_or_else(|e| panic!("{listing}\n{e}"));
        let clear = |c: &LoadgateConfig| -> Vec<FaultConfig> {
            c.faults
                .iter()
                .map(|f| FaultConfig {
                    location: String::new(),
                    ..f.clone()
                })
                .collect()
        };
        assert_eq!(clear(&again), clear(&cfg));
    }
}
