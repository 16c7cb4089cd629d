//! `[[audit]]`: requests sent after the run whose answers are checked with the operations'
//! expectation language and compared with loadgate's own counts (issue 15, seed 002's
//! correctness oracle). A top-level array of tables, like `[[accept]]`; `profiles` says which
//! profiles run it (all by default). It is no part of the config hash: it reads the service after
//! the measurement without changing it.
//!
//! The entries are read once, with their places; each profile then keeps the ones that apply to
//! it and checks what depends on the profile: that every count names one of its operations, and
//! that it runs in stored mode (a paired run has two services and no audit of either yet).

use super::operation::{check_json_pointer, expect, request};
use crate::config::source::{Cx, Tbl, Val, array, number, string, suggest, wrong_type};
use crate::config::types::{
    AuditCheck, AuditConfig, AuditOperand, AuditRelation, ComparisonMode, CountKind, CountRef,
    LoadgateConfig,
};
use std::ops::Range;
use toml::de::DeValue;

/// The top-level key.
pub(crate) const AUDIT: &str = "audit";
/// `name`.
const NAME: &str = "name";
/// `profiles`.
const PROFILES: &str = "profiles";
/// `request`.
const REQUEST: &str = "request";
/// `expect`.
const EXPECT: &str = "expect";
/// `check`.
const CHECK: &str = "check";
/// `pointer`, in a check.
const POINTER: &str = "pointer";

/// The keys of an entry, in the order "expected one of" lists them.
const KEYS: &[&str] = &[NAME, PROFILES, REQUEST, EXPECT, CHECK];

/// An audit as written: its config, the profiles it names, and where its parts are.
pub(crate) struct RawAudit {
    config: AuditConfig,
    profiles: Option<Vec<(String, Range<usize>)>>,
    file: usize,
    name_span: Range<usize>,
    /// The counts its checks name, with where each is written.
    counts: Vec<(CountRef, Range<usize>)>,
}

/// Reads every `[[audit]]` entry of `root` (the user's top level), reporting every problem.
pub(crate) fn read(cx: &Cx<'_>, root: &Tbl<'_>, prefix: &str) -> Vec<RawAudit> {
    let Some(v) = root.get(AUDIT) else {
        return Vec::new();
    };
    let Some(items) = array(
        cx,
        v,
        &format!("an array of tables, written [[{prefix}{AUDIT}]]"),
    ) else {
        return Vec::new();
    };
    let audits: Vec<RawAudit> = items
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| entry(cx, item, prefix, i))
        .collect();
    for (i, audit) in audits.iter().enumerate() {
        if audits[..i]
            .iter()
            .any(|a| a.config.name == audit.config.name)
        {
            cx.error(
                audit.file,
                audit.name_span.clone(),
                format!("audit `{}` is defined twice", audit.config.name),
                Some("give each `[[audit]]` its own name".to_owned()),
            );
        }
    }
    audits
}

fn entry(cx: &Cx<'_>, v: Val<'_>, prefix: &str, index: usize) -> Option<RawAudit> {
    let fallback = format!("entry {} of `[[{prefix}{AUDIT}]]`", index + 1);
    let t = Tbl::of(cx, v, fallback.clone(), "a table (an audit)")?;
    t.check_keys(cx, KEYS);
    let name_val = t.get(NAME);
    let name = t
        .required(cx, NAME, &fallback, "add e.g. name = \"ledger\"")
        .and_then(|n| string(cx, n, "a string (the audit's name)"))
        .filter(|s| !s.is_empty());
    let label = name.map_or(fallback, |n| format!("audit `{n}`"));
    let request = t
        .required(
            cx,
            REQUEST,
            &label,
            "add e.g. request = { path = \"/ledger/summary\" }",
        )
        .and_then(|r| {
            let mut uses = Vec::new();
            let request = request(cx, r, &label, &mut uses);
            match uses.first() {
                Some((var, span)) => {
                    cx.error(
                        r.file,
                        span.clone(),
                        format!("{label} uses `{{{{{var}}}}}`, but an audit has no session"),
                        Some("write the request's path and body as they are sent".to_owned()),
                    );
                    None
                }
                None => request,
            }
        });
    let expect = match t.get(EXPECT) {
        Some(e) => expect(cx, e, &label),
        None => Some(Default::default()),
    };
    let profiles = t
        .get(PROFILES)
        .and_then(|p| super::profile::profile_list(cx, p, "[\"audit\"]"));
    let mut counts = Vec::new();
    let checks = match t.get(CHECK) {
        Some(c) => checks(cx, c, &label, &mut counts),
        None => Some(Vec::new()),
    };
    let (line, col) = cx.files[t.file].position(t.span.start);
    let config = AuditConfig {
        name: name?.to_owned(),
        request: request?,
        expect: expect?,
        checks: checks?,
        location: format!("{}:{line}:{col}", cx.files[t.file].path.display()),
    };
    Some(RawAudit {
        config,
        profiles: match t.get(PROFILES) {
            Some(_) => Some(profiles?),
            None => None,
        },
        file: t.file,
        name_span: name_val.map_or(t.span.clone(), |n| n.span()),
        counts,
    })
}

fn checks(
    cx: &Cx<'_>,
    v: Val<'_>,
    label: &str,
    counts: &mut Vec<(CountRef, Range<usize>)>,
) -> Option<Vec<AuditCheck>> {
    const EXPECTED: &str = "a list like [{ pointer = \"/duplicates\", equals = 0 }, { pointer = \"/effects\", at-least = \"acknowledged.transfer\" }]";
    let items = array(cx, v, EXPECTED)?;
    let relations: Vec<&str> = AuditRelation::ALL.iter().map(|(w, _)| *w).collect();
    let keys: Vec<&str> = std::iter::once(POINTER)
        .chain(relations.iter().copied())
        .collect();
    let mut out = Vec::new();
    let mut ok = true;
    for item in items {
        let Some(t) = Tbl::of(cx, item, format!("a `{CHECK}` of {label}"), EXPECTED) else {
            ok = false;
            continue;
        };
        t.check_keys(cx, &keys);
        let pointer = t
            .required(
                cx,
                POINTER,
                &format!("a `{CHECK}` of {label}"),
                "add the JSON pointer of the number to check, e.g. pointer = \"/effects\"",
            )
            .and_then(|p| {
                let s = string(cx, p, "a JSON pointer like \"/effects\"")?;
                match check_json_pointer(s) {
                    Ok(()) => Some(s.to_owned()),
                    Err(e) => {
                        cx.error(p.file, p.span(), e, None);
                        None
                    }
                }
            });
        let written: Vec<(AuditRelation, Val<'_>)> = AuditRelation::ALL
            .iter()
            .filter_map(|(word, relation)| t.get(word).map(|v| (*relation, v)))
            .collect();
        let relation = match written.as_slice() {
            [one] => Some(*one),
            [] => {
                cx.error(
                    t.file,
                    t.span.clone(),
                    format!("a `{CHECK}` of {label} has no comparison"),
                    Some(format!(
                        "add one of {}, e.g. equals = 0",
                        relations
                            .iter()
                            .map(|w| format!("`{w}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                );
                None
            }
            [_, (_, second), ..] => {
                cx.error(
                    second.file,
                    second.span(),
                    format!("a `{CHECK}` of {label} has more than one comparison"),
                    Some(
                        "write one comparison per check; add another check for the other"
                            .to_owned(),
                    ),
                );
                None
            }
        };
        let operand = relation.and_then(|(_, v)| operand(cx, v, counts));
        match (pointer, relation, operand) {
            (Some(pointer), Some((relation, _)), Some(operand)) => out.push(AuditCheck {
                pointer,
                relation,
                operand,
            }),
            _ => ok = false,
        }
    }
    ok.then_some(out)
}

/// A number, or a count written `kind.operation`.
fn operand(
    cx: &Cx<'_>,
    v: Val<'_>,
    counts: &mut Vec<(CountRef, Range<usize>)>,
) -> Option<AuditOperand> {
    match v.get() {
        DeValue::Integer(_) | DeValue::Float(_) => {
            number(cx, v, "a number").map(AuditOperand::Number)
        }
        DeValue::String(s) => {
            let Some((kind, operation)) = s.split_once('.') else {
                cx.error(
                    v.file,
                    v.span(),
                    format!("`{s}` is not a count"),
                    Some(
                        "write a number, or a count as `kind.operation`, e.g. \"acknowledged.transfer\""
                            .to_owned(),
                    ),
                );
                return None;
            };
            let words = CountKind::ALL.iter().map(|(w, _)| *w);
            let kind = CountKind::ALL
                .iter()
                .find(|(w, _)| *w == kind)
                .map(|(_, k)| *k);
            if kind.is_none() {
                let help = match suggest(kind_word(s), words.clone()) {
                    Some(best) => format!("did you mean `{best}.{operation}`?"),
                    None => format!(
                        "a count is one of {}, then `.` and an operation's name",
                        words
                            .map(|w| format!("`{w}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                cx.error(
                    v.file,
                    v.span(),
                    format!("unknown count `{}` in `{s}`", kind_word(s)),
                    Some(help),
                );
            }
            match kind {
                Some(kind) => {
                    let count = CountRef {
                        kind,
                        operation: operation.to_owned(),
                    };
                    counts.push((count.clone(), v.span()));
                    Some(AuditOperand::Count(count))
                }
                None => None,
            }
        }
        _ => {
            wrong_type(cx, v, "a number, or a count like \"acknowledged.transfer\"");
            None
        }
    }
}

/// The part of a count before its first `.`.
fn kind_word(count: &str) -> &str {
    count.split_once('.').map_or(count, |(kind, _)| kind)
}

/// The audits of `raws` that apply to `config`'s profile, checked against it: each count must
/// name one of its operations, and the profile must compare in stored mode. `available` are the
/// profiles a `profiles` list may name.
pub(crate) fn for_profile(
    cx: &Cx<'_>,
    raws: &[RawAudit],
    config: &LoadgateConfig,
    available: &[String],
) -> Vec<AuditConfig> {
    let mut out = Vec::new();
    for raw in raws {
        let owner = format!("audit `{}`", raw.config.name);
        let profiles = raw.profiles.as_deref();
        if !super::profile::keeps(cx, profiles, raw.file, available, &config.profile, &owner) {
            continue;
        }
        let names: Vec<&str> = config
            .workload
            .operations
            .iter()
            .map(|o| o.name.as_str())
            .collect();
        let mut ok = true;
        for (count, span) in &raw.counts {
            if !names.contains(&count.operation.as_str()) {
                let help = suggest(&count.operation, names.iter().copied())
                    .map(|b| format!("did you mean `{}.{b}`?", count.kind.as_str()))
                    .unwrap_or_else(|| {
                        format!(
                            "the operations of profile `{}` are: {}",
                            config.profile,
                            names
                                .iter()
                                .map(|n| format!("`{n}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    });
                cx.error(
                    raw.file,
                    span.clone(),
                    format!("`{count}` names an unknown operation `{}`", count.operation),
                    Some(help),
                );
                ok = false;
            }
        }
        if config.paired.mode != ComparisonMode::Stored {
            cx.error(
                raw.file,
                raw.name_span.clone(),
                format!(
                    "audit `{}` applies to profile `{}`, whose `paired.mode` is `{}`; audits run in stored runs only",
                    raw.config.name,
                    config.profile,
                    config.paired.mode.as_str()
                ),
                Some(format!(
                    "set `[profile.{}.paired] mode = \"stored\"`, or list the profiles that run it in `profiles`",
                    config.profile
                )),
            );
            ok = false;
        }
        if ok {
            out.push(raw.config.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::{one_problem_in, parse};
    use crate::config::{AuditOperand, AuditRelation, CountKind, CountRef};
    use indoc::indoc;
    use test_case::test_case;

    const BASE: &str = indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "transfer"
        request = { method = "PUT", path = "/transfers" }
        [paired]
        mode = "stored"
    "#};

    fn with_audit(audit: &str) -> String {
        format!(
            "{BASE}[[audit]]\nname = \"ledger\"\nrequest = {{ path = \"/ledger/summary\" }}\n{audit}"
        )
    }

    #[test]
    fn an_audit_is_read_with_its_checks_and_kept_by_the_profiles_it_names() {
        let text = with_audit(indoc! {r#"
            expect = { status = 200 }
            profiles = ["ci"]
            check = [
              { pointer = "/duplicates", equals = 0 },
              { pointer = "/effects", at-least = "acknowledged.transfer" },
            ]
        "#});
        let ci = parse(&text, "ci").expect("valid");
        assert_eq!(ci.audit.len(), 1);
        let audit = &ci.audit[0];
        assert_eq!(audit.name, "ledger");
        assert_eq!(audit.expect.status, [200]);
        assert_eq!(audit.location, "loadgate.toml:8:1");
        assert_eq!(audit.checks[0].relation, AuditRelation::Equals);
        assert_eq!(audit.checks[0].operand, AuditOperand::Number(0.0));
        assert_eq!(
            audit.checks[1].operand,
            AuditOperand::Count(CountRef {
                kind: CountKind::Acknowledged,
                operation: "transfer".to_owned()
            })
        );
        // Not named: the default profile has no audit.
        assert!(parse(&text, "default").expect("valid").audit.is_empty());
    }

    // Each case is one mistake in an audit; exactly one problem must be reported, at the given place.
    #[test_case("check = [{ pointer = \"/effects\", at-most = \"logicl.transfer\" }]", 11, 44, "unknown count `logicl` in `logicl.transfer`", Some("did you mean `logical.transfer`?"); "count typo")]
    #[test_case("check = [{ pointer = \"/effects\", at-most = \"logical.transfr\" }]", 11, 44, "`logical.transfr` names an unknown operation `transfr`", Some("did you mean `logical.transfer`?"); "operation typo")]
    #[test_case("check = [{ pointer = \"/effects\", at-most = \"logical\" }]", 11, 44, "`logical` is not a count", Some("write a number, or a count as `kind.operation`, e.g. \"acknowledged.transfer\""); "no operation")]
    #[test_case("check = [{ pointer = \"/effects\" }]", 11, 10, "a `check` of audit `ledger` has no comparison", Some("add one of `equals`, `at-most`, `at-least`, e.g. equals = 0"); "no comparison")]
    #[test_case("check = [{ pointer = \"/effects\", equals = 1, at-most = 2 }]", 11, 56, "a `check` of audit `ledger` has more than one comparison", Some("write one comparison per check; add another check for the other"); "two comparisons")]
    #[test_case("check = [{ pointer = \"effects\", equals = 1 }]", 11, 22, "JSON pointer \"effects\" must start with `/` (or be empty for the whole body)", None; "bad pointer")]
    #[test_case("profiles = [\"cl\"]", 11, 13, "audit `ledger` names an unknown profile `cl`", Some("did you mean `ci`?"); "unknown profile")]
    fn one_problem_is_reported(
        audit: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem_in(&with_audit(&format!("{audit}\n")), line, col, message, help);
    }

    #[test]
    fn an_audit_of_a_session_variable_is_refused() {
        let text = BASE.to_owned()
            + "[[audit]]\nname = \"ledger\"\nrequest = { path = \"/ledger/{{session}}\" }\n";
        one_problem_in(
            &text,
            10,
            20,
            "audit `ledger` uses `{{session}}`, but an audit has no session",
            Some("write the request's path and body as they are sent"),
        );
    }

    #[test]
    fn an_audit_in_a_profile_that_may_run_paired_is_refused_at_its_name() {
        let text = BASE.replace("mode = \"stored\"", "mode = \"auto\"")
            + "[[audit]]\nname = \"ledger\"\nrequest = { path = \"/ledger/summary\" }\nprofiles = [\"quick\"]\n";
        one_problem_in(
            &text,
            9,
            8,
            "audit `ledger` applies to profile `quick`, whose `paired.mode` is `auto`; audits run in stored runs only",
            Some(
                "set `[profile.quick.paired] mode = \"stored\"`, or list the profiles that run it in `profiles`",
            ),
        );
    }
}
