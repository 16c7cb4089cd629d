//! `[[fault]]`: a change to a `[[stub]]`'s answers scheduled inside the soak (issue 15, seed
//! 002): more latency (`"+180ms"`) or a multiple of it (`"3x"`), an error burst (`errors`); or a
//! replica of the target killed (then restarted) or paused (then resumed) (`replica`, `action`);
//! from `at` into the soak's measured part for `for`. A top-level array of tables like `[[stub]]`;
//! `profiles` (required) says which profiles run it. Each profile checks that it serves
//! the stub and that the fault ends within its soak. Every problem is reported at once.

use crate::config::source::{Cx, Tbl, Val, array_of_tables, duration, share, string, suggest};
use crate::config::source::{integer, keyword};
use crate::config::types::{
    DegradedObjective, FaultConfig, FaultTarget, LoadgateConfig, ReplicaAction, StubConfig,
};
use crate::stub::StubFault;
use std::ops::Range;
use std::time::Duration;
use toml::de::DeValue;

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
const REPLICA: &str = "replica";
const ACTION: &str = "action";
const DEGRADED: &str = "degraded";

/// The keys of an entry, in the order "expected one of" lists them.
pub(crate) const KEYS: &[&str] = &[
    NAME, PROFILES, PHASE, AT, FOR, STUB, LATENCY, ERRORS, REPLICA, ACTION, DEGRADED,
];

/// What a `degraded` objective should look like, for messages.
const DEGRADED_EXPECTED: &str = "a table like { p99 = \"1s\", error-rate = \"5%\" }";

/// The words of `action`.
const ACTIONS: [(&str, ReplicaAction); 2] = [
    ("kill", ReplicaAction::Kill),
    ("pause", ReplicaAction::Pause),
];

/// The phases a fault may run in: the soak (at `at`, for `for`), or the whole ramp (a replica
/// fault only: the ramp then measures the capacity without that replica).
const PHASES: &[&str] = &["soak", "ramp"];

/// The phase of a fault that holds through the whole ramp.
pub(crate) const RAMP: &str = "ramp";

/// A fault as written: its config, the profiles it names, and where its parts are.
pub(crate) struct RawFault {
    config: FaultConfig,
    profiles: Vec<(String, Range<usize>)>,
    file: usize,
    name_span: Range<usize>,
    /// Where its `stub` or its `replica` is written.
    target_span: Range<usize>,
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
        if let FaultTarget::Replica { replica, action } = &f.target
            && *replica >= config.target.replicas
        {
            let n = config.target.replicas;
            cx.error(
                raw.file,
                raw.target_span.clone(),
                format!(
                    "fault `{}` would {} replica {replica}, and profile `{}` boots {n} ({})",
                    f.name,
                    action.as_str(),
                    config.profile,
                    if n == 1 {
                        "replica 0 alone".to_owned()
                    } else {
                        format!("replicas 0 to {}", n - 1)
                    }
                ),
                Some(format!(
                    "set `[target] replicas = {}` or more in profile `{}`, or name a replica it \
                     boots (from 1: replica 0 stays up)",
                    replica + 1,
                    config.profile
                )),
            );
            continue;
        }
        if let Some(stub) = f.stub()
            && !stubs.iter().any(|s| s.name == stub)
        {
            cx.error(
                raw.file,
                raw.target_span.clone(),
                format!(
                    "fault `{}` changes stub `{stub}`, which profile `{}` does not serve",
                    f.name, config.profile
                ),
                Some(format!(
                    "add \"{}\" to the stub's `profiles`, or give the fault the same `profiles`",
                    config.profile
                )),
            );
            continue;
        }
        if f.phase == RAMP {
            out.push(f.clone());
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
        if let Some(other) = out.iter().find(|o: &&FaultConfig| {
            o.phase != RAMP && o.at < ends + after && f.at < o.at + o.duration + after
        }) {
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
                    Some(
                        "faults run in the soak (phase = \"soak\"), or a replica fault through the \
                         whole ramp (phase = \"ramp\")"
                            .to_owned(),
                    ),
                );
                return None;
            }
            Some(s.to_owned())
        }
        None => Some("soak".to_owned()),
    };
    let in_ramp = phase.as_deref() == Some(RAMP);
    let for_val = t.get(FOR);
    let (at, length) = if in_ramp {
        // Through the whole ramp: applied before its first step, removed when it ends.
        for key in [AT, FOR] {
            if let Some(v) = t.get(key) {
                cx.error(
                    v.file,
                    v.span(),
                    format!("{label} holds through the whole ramp, so it takes no `{key}`"),
                    Some(format!(
                        "leave `{key}` out: a fault in the ramp is applied before its first step \
                         and removed when it ends"
                    )),
                );
            }
        }
        let clean = t.get(AT).is_none() && t.get(FOR).is_none();
        (
            clean.then_some(Duration::ZERO),
            clean.then_some(Duration::ZERO),
        )
    } else {
        let at = t
            .required(cx, AT, &label, "add when it starts, e.g. at = \"10s\"")
            .and_then(|a| duration(cx, a));
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
        (at, length)
    };
    let stub_val = t.get(STUB);
    let replica_val = t.get(REPLICA);
    let target = match (stub_val, replica_val) {
        (Some(_), Some(r)) => {
            cx.error(
                r.file,
                r.span(),
                format!("{label} names both a stub and a replica"),
                Some("a fault acts on one thing: give it `stub` or `replica`, not both".to_owned()),
            );
            None
        }
        (None, Some(r)) => replica_target(cx, &t, r, &label),
        (_, None) if in_ramp => {
            cx.error(
                t.file,
                stub_val.map_or(t.span.clone(), |v| v.span()),
                format!("{label} runs in the ramp, where only a replica fault may run"),
                Some(
                    "a stub fault runs in the soak (phase = \"soak\"); a replica fault \
                     (replica = 1, action = \"kill\") may hold through the ramp, which then \
                     measures the capacity without it"
                        .to_owned(),
                ),
            );
            None
        }
        (_, None) => stub_target(cx, &t, &label, stubs),
    };
    let degraded = match t.get(DEGRADED) {
        None => Some(None),
        Some(v) if in_ramp => {
            cx.error(
                v.file,
                v.span(),
                format!("{label} holds through the whole ramp, which judges its steps by `[slo]`"),
                Some("leave `degraded` out: a degraded objective is judged in the soak".to_owned()),
            );
            None
        }
        Some(v) => degraded_objective(cx, v, &label).map(Some),
    };
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
            target: target?,
            degraded: degraded?,
            location: format!("{}:{line}:{col}", cx.files[t.file].path.display()),
        },
        profiles: profiles?,
        file: t.file,
        name_span: name_val.map_or(t.span.clone(), |n| n.span()),
        target_span: replica_val
            .or(stub_val)
            .map_or(t.span.clone(), |s| s.span()),
        for_span: for_val.map_or(t.span.clone(), |f| f.span()),
    })
}

/// `degraded = { p50, p99, error-rate }`: at least one limit.
fn degraded_objective(cx: &Cx<'_>, v: Val<'_>, label: &str) -> Option<DegradedObjective> {
    let what = format!("`{DEGRADED}` of {label}");
    let table = Tbl::of(cx, v, what.clone(), DEGRADED_EXPECTED)?;
    table.check_keys(cx, &["p50", "p99", "error-rate"]);
    let limit = |key: &str| match table.get(key) {
        None => Some(None),
        Some(d) => {
            crate::config::source::positive_duration(cx, d, &format!("`{key}` of {what}")).map(Some)
        }
    };
    let (p50, p99) = (limit("p50"), limit("p99"));
    let error_rate = match table.get("error-rate") {
        None => Some(None),
        Some(e) => share(cx, e, &format!("`error-rate` of {what}"), Some(1.0)).map(Some),
    };
    let objective = DegradedObjective {
        p50: p50?,
        p99: p99?,
        error_rate: error_rate?,
    };
    // An unknown key was reported already; an empty table sets nothing.
    let empty = matches!(v.get(), DeValue::Table(t) if t.is_empty());
    if empty {
        cx.error(
            v.file,
            v.span(),
            format!("{what} sets no limit"),
            Some(format!("give it a limit: {DEGRADED_EXPECTED}")),
        );
        return None;
    }
    Some(objective)
}

/// A replica fault: `replica = N` (from 1) and `action`, without a stub's `latency` or `errors`.
fn replica_target(cx: &Cx<'_>, t: &Tbl<'_>, r: Val<'_>, label: &str) -> Option<FaultTarget> {
    for key in [LATENCY, ERRORS] {
        if let Some(v) = t.get(key) {
            cx.error(
                v.file,
                v.span(),
                format!("{label} acts on a replica, and `{key}` changes a stub's answers"),
                Some(format!(
                    "leave `{key}` out, or write a second fault on the stub"
                )),
            );
        }
    }
    let replica = integer(cx, r, "an integer (a replica, from 1)");
    let max = super::target::MAX_REPLICAS - 1;
    if let Some(n) = replica
        && (n < 0 || n > max)
    {
        cx.error(
            r.file,
            r.span(),
            format!("a fault's `replica` must be between 1 and {max}, found {n}"),
            None,
        );
        return None;
    }
    let replica = replica.map(|n| n as u32);
    if replica == Some(0) {
        cx.error(
            r.file,
            r.span(),
            format!("{label} acts on replica 0, which stays up"),
            Some(
                "replica 0 is the one whose resources are sampled: fault replica 1 or up, with \
                 `[target] replicas = 2` or more"
                    .to_owned(),
            ),
        );
        return None;
    }
    let action = t
        .required(
            cx,
            ACTION,
            label,
            "say what is done to it: action = \"kill\" (restarted after `for`) or \"pause\" \
             (resumed after `for`)",
        )
        .and_then(|a| {
            keyword(
                cx,
                a,
                &ACTIONS,
                "unknown action",
                &format!("`{ACTION}` of {label}"),
            )
        });
    if t.get(LATENCY).is_some() || t.get(ERRORS).is_some() {
        return None;
    }
    Some(FaultTarget::Replica {
        replica: replica?,
        action: action?,
    })
}

/// A stub fault: `stub`, with `latency`, `errors` or both, and no `action`.
fn stub_target(cx: &Cx<'_>, t: &Tbl<'_>, label: &str, stubs: &[String]) -> Option<FaultTarget> {
    if let Some(a) = t.get(ACTION) {
        cx.error(
            a.file,
            a.span(),
            format!("{label} has an `action`, which only a replica fault takes"),
            Some("a stub fault says what it changes with `latency` and `errors`".to_owned()),
        );
        return None;
    }
    let stub = t
        .required(
            cx,
            STUB,
            label,
            "name the `[[stub]]` it changes (e.g. stub = \"fraud\"), or the replica it acts on \
             (e.g. replica = 1)",
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
    Some(FaultTarget::Stub {
        stub: stub?,
        change: StubFault {
            extra,
            factor,
            errors,
        },
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
        let change = |f: &FaultConfig| match &f.target {
            FaultTarget::Stub { stub, change } => {
                assert_eq!(stub, "fraud");
                *change
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(change(slow).extra, Duration::from_millis(180));
        assert_eq!(slow.describe(), "latency +180ms");
        let burst = &cfg.faults[1];
        assert_eq!(change(burst).factor, 3.0);
        assert_eq!(change(burst).errors, Some(0.5));
        assert_eq!(burst.describe(), "latency ×3, errors 50%");
    }

    #[test]
    fn a_replica_fault_reads_with_its_action() {
        let cfg = parse_ok(
            "[target]\nreplicas = 2\n\
             [[fault]]\nname = \"kill-one\"\nreplica = 1\naction = \"kill\"\nat = \"5s\"\nfor = \"10s\"\nprofiles = [\"default\"]\n",
        );
        let f = &cfg.faults[0];
        assert_eq!(
            f.target,
            FaultTarget::Replica {
                replica: 1,
                action: ReplicaAction::Kill
            }
        );
        assert_eq!(f.describe(), "kill replica 1");
        assert_eq!(f.stub(), None);
        assert_eq!(f.identity()["action"], "kill");
    }

    #[test]
    fn bad_replica_faults_are_reported_at_their_place() {
        let two = "[target]\nreplicas = 2\n";
        let base = "[[fault]]\nname = \"f\"\nat = \"1s\"\nfor = \"1s\"\nprofiles = [\"default\"]\n";
        assert_one_error(
            &format!("{base}replica = 1\naction = \"kill\"\n"),
            "would kill replica 1, and profile `default` boots 1 (replica 0 alone)",
        );
        assert_one_error(
            &format!("{two}{base}replica = 0\naction = \"kill\"\n"),
            "acts on replica 0, which stays up",
        );
        assert_one_error(&format!("{two}{base}replica = 1\n"), "has no `action`");
        assert_one_error(
            &format!("{two}{base}replica = 1\naction = \"stop\"\n"),
            "unknown action `stop`",
        );
        assert_one_error(
            &format!("{two}{base}replica = 1\naction = \"pause\"\nlatency = \"+1ms\"\n"),
            "acts on a replica, and `latency` changes a stub's answers",
        );
        assert_one_error(
            &format!("{two}{base}replica = 1\nstub = \"fraud\"\naction = \"kill\"\n"),
            "names both a stub and a replica",
        );
        assert_one_error(
            &format!("{two}{base}stub = \"fraud\"\nerrors = \"1%\"\naction = \"kill\"\n"),
            "which only a replica fault takes",
        );
        let ramp = "[[fault]]\nname = \"f\"\nphase = \"ramp\"\nprofiles = [\"default\"]\n";
        assert_one_error(
            &format!("{two}{ramp}replica = 1\naction = \"kill\"\nat = \"1s\"\n"),
            "holds through the whole ramp, so it takes no `at`",
        );
        assert_one_error(
            &format!("{two}{ramp}stub = \"fraud\"\nlatency = \"+1ms\"\n"),
            "runs in the ramp, where only a replica fault may run",
        );
    }

    #[test]
    fn a_degraded_objective_reads_and_bad_ones_are_reported() {
        let cfg = parse_ok(
            "[[fault]]\nname = \"slow\"\nstub = \"fraud\"\nat = \"5s\"\nfor = \"10s\"\nlatency = \"+180ms\"\nprofiles = [\"default\"]\n\
             degraded = { p99 = \"1s\", error-rate = \"2%\" }\n",
        );
        assert_eq!(
            cfg.faults[0].degraded,
            Some(DegradedObjective {
                p50: None,
                p99: Some(Duration::from_secs(1)),
                error_rate: Some(0.02),
            })
        );
        assert!(cfg.faults[0].identity()["degraded"].is_object());
        let base = "[[fault]]\nname = \"f\"\nstub = \"fraud\"\nat = \"1s\"\nfor = \"1s\"\nerrors = \"1%\"\nprofiles = [\"default\"]\n";
        assert_one_error(&format!("{base}degraded = {{}}\n"), "sets no limit");
        assert_one_error(
            &format!("{base}degraded = {{ p90 = \"1s\" }}\n"),
            "unknown key `p90`",
        );
        assert_one_error(
            &format!("{base}degraded = {{ error-rate = \"120%\" }}\n"),
            "must be at most 100%",
        );
        assert_one_error(
            "[target]\nreplicas = 2\n[[fault]]\nname = \"f\"\nphase = \"ramp\"\nreplica = 1\naction = \"kill\"\nprofiles = [\"default\"]\ndegraded = { p99 = \"1s\" }\n",
            "holds through the whole ramp, which judges its steps by `[slo]`",
        );
    }

    #[test]
    fn a_replica_fault_may_hold_through_the_ramp() {
        let cfg = parse_ok(
            "[target]\nreplicas = 2\n\
             [[fault]]\nname = \"one-left\"\nphase = \"ramp\"\nreplica = 1\naction = \"kill\"\nprofiles = [\"default\"]\n\
             [[fault]]\nname = \"later\"\nreplica = 1\naction = \"pause\"\nat = \"1s\"\nfor = \"2s\"\nprofiles = [\"default\"]\n",
        );
        let ramp = &cfg.faults[0];
        assert_eq!(ramp.phase, "ramp");
        assert_eq!((ramp.at, ramp.duration), (Duration::ZERO, Duration::ZERO));
        // A ramp fault does not overlap the soak's.
        assert_eq!(cfg.faults[1].phase, "soak");
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
            &format!("{base}for = \"1s\"\nphase = \"spike\"\nlatency = \"+1ms\"\n"),
            "cannot run in phase `spike`",
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
             [[fault]]\nname = \"x\"\nstub = \"fraud\"\nat = \"10s\"\nfor = \"1s\"\nlatency = \"2.5x\"\nprofiles = [\"default\"]\n\
             degraded = {{ p99 = \"1s\", error-rate = \"5%\" }}\n\
             [[fault]]\nname = \"down\"\nreplica = 1\naction = \"pause\"\nat = \"17s\"\nfor = \"2s\"\nprofiles = [\"default\"]\n\
             degraded = {{ p50 = \"300ms\" }}\n\
             [[fault]]\nname = \"ramp\"\nphase = \"ramp\"\nreplica = 1\naction = \"kill\"\nprofiles = [\"default\"]\n\
             [target]\nreplicas = 2\n"
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
