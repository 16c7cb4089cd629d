//! `[[accept]]`: intended changes for users who do not write commit trailers (issue 18). Each
//! entry names the commits whose change it accepts, so it applies only while one of them is
//! among the head's commits and never outlives them. It is a top-level array of tables (not a
//! profile's: which change is intended does not depend on how it is measured), and it is no part
//! of the config hash (like `[gate]`, it judges a measurement without changing it).
//!
//! What an entry says is what a `Loadgate-Accept` trailer says (`compare::accept` owns the
//! grammar); this file reads it with its place in the file, and reports every problem at once.

use super::key::{Key, names};
use crate::compare::{AcceptScope, check_operation, parse_change, parse_metric};
use crate::config::source::{Cx, Tbl, Val, array, array_of_tables, string};
use crate::config::types::AcceptConfig;
use crate::result::Metric;

/// The top-level key.
pub(crate) const ACCEPT: &str = "accept";

/// `accept.commits`.
pub(crate) const COMMITS: Key<Vec<String>> = Key::new(
    "commits",
    "the commits whose change is intended, full or abbreviated ids (at least 7 hex digits): the \
     entry applies only while one of them is among the head's commits",
    commits,
);
/// `accept.metric`.
pub(crate) const METRIC: Key<Option<Metric>> = Key::new(
    "metric",
    "`all`, or the metric as results name it: `p50`, `p99`, `error-rate`, `capacity`, \
     `rss-slope`",
    metric,
);
/// `accept.operation`.
pub(crate) const OPERATION: Key<String> = Key::new(
    "operation",
    "the operation whose `p50` or `p99` is meant (optional: without it, the metric of all \
     operations and of each one)",
    |cx, v, _| string(cx, v, "a string (an operation's name)").map(str::to_owned),
);
/// `accept.change`.
pub(crate) const CHANGE: Key<String> = Key::new(
    "change",
    "the accepted change, signed on the metric's bad side: `\"+30%\"`, `\"-10%\"` for \
     capacity, `\"+0.5pp\"`, `\"+2MiB/min\"` (not with `all`)",
    |cx, v, _| string(cx, v, "a string such as \"+30%\"").map(str::to_owned),
);
/// `accept.reason`.
pub(crate) const REASON: Key<String> = Key::new(
    "reason",
    "why the change is intended; shown with the verdict",
    |cx, v, _| string(cx, v, "a string (why the change is intended)").map(str::to_owned),
);

/// The keys of one entry, in the order "expected one of" lists them.
pub(crate) const KEYS: &[&dyn super::key::Element] =
    &[&COMMITS, &METRIC, &OPERATION, &CHANGE, &REASON];

fn commits(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<Vec<String>> {
    let items = array(cx, v, "an array of commit ids, e.g. [\"3f2a91c\"]")?;
    if items.is_empty() {
        cx.error(
            v.file,
            v.span(),
            format!("{what} names no commit"),
            Some("name the commits whose change is intended, e.g. [\"3f2a91c\"]".to_owned()),
        );
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for item in items {
        let Some(id) = string(cx, item, "a string (a commit id)") else {
            ok = false;
            continue;
        };
        if id.len() < 7 || id.len() > 40 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            cx.error(
                item.file,
                item.span(),
                format!("`{id}` is not a commit id"),
                Some(
                    "write a full or abbreviated id of at least 7 hex digits, as `git log \
                     --oneline` prints it"
                        .to_owned(),
                ),
            );
            ok = false;
            continue;
        }
        out.push(id.to_ascii_lowercase());
    }
    ok.then_some(out)
}

/// `None` inside for `all`.
fn metric(cx: &Cx<'_>, v: Val<'_>, _what: &str) -> Option<Option<Metric>> {
    let word = string(cx, v, "a string such as \"p99\" or \"all\"")?;
    if word.eq_ignore_ascii_case("all") {
        return Some(None);
    }
    match parse_metric(word) {
        Ok(m) => Some(Some(m)),
        Err(e) => {
            let (message, help) = e.split_once("; ").unwrap_or((&e, ""));
            cx.error(
                v.file,
                v.span(),
                message.to_owned(),
                (!help.is_empty()).then(|| help.to_owned()),
            );
            None
        }
    }
}

/// Reads every `[[accept]]` entry of `root` (the user's top level), reporting every problem.
pub(crate) fn read(cx: &Cx<'_>, root: &Tbl<'_>, prefix: &str) -> Vec<AcceptConfig> {
    array_of_tables(cx, root, ACCEPT, prefix)
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| entry(cx, item, prefix, i))
        .collect()
}

fn entry(cx: &Cx<'_>, v: Val<'_>, prefix: &str, index: usize) -> Option<AcceptConfig> {
    let label = format!("entry {} of `[[{prefix}{ACCEPT}]]`", index + 1);
    let t = Tbl::of(cx, v, label.clone(), "a table (an accepted change)")?;
    t.check_keys(cx, &names(KEYS));
    let missing = |key: &str, example: &str| {
        if !t.has_typo_of(key) {
            cx.error(
                t.file,
                t.span.clone(),
                format!("{label} has no `{key}`"),
                Some(format!("add e.g. {key} = {example}")),
            );
        }
    };
    let commits = match t.get(COMMITS.name) {
        Some(c) => COMMITS.read(cx, c, ACCEPT),
        None => {
            missing(COMMITS.name, "[\"3f2a91c\"]");
            None
        }
    };
    let metric = match t.get(METRIC.name) {
        Some(m) => METRIC.read(cx, m, ACCEPT),
        None => {
            missing(METRIC.name, "\"p99\"");
            None
        }
    };
    let reason = match t.get(REASON.name) {
        Some(r) => REASON.read(cx, r, ACCEPT),
        None => {
            missing(REASON.name, "\"a new feature\"");
            None
        }
    };
    let operation = t
        .get(OPERATION.name)
        .map(|o| (o, OPERATION.read(cx, o, ACCEPT)));
    let change = t.get(CHANGE.name).map(|c| (c, CHANGE.read(cx, c, ACCEPT)));
    let metric = metric?;
    let (scope, amount) = match (metric, change) {
        (None, Some((c, _))) => {
            cx.error(
                c.file,
                c.span(),
                "`change` cannot be given with `metric = \"all\"`: it accepts any change",
                Some("remove `change`, or name one metric".to_owned()),
            );
            return None;
        }
        (None, None) => {
            if let Some((o, _)) = operation {
                cx.error(
                    o.file,
                    o.span(),
                    "`operation` cannot be given with `metric = \"all\"`",
                    None,
                );
                return None;
            }
            (AcceptScope::All, 0.0)
        }
        (Some(m), None) => {
            missing(CHANGE.name, "\"+30%\"");
            let _ = m;
            return None;
        }
        (Some(m), Some((c, text))) => {
            let amount = match parse_change(m, &text?) {
                Ok(a) => a,
                Err(e) => {
                    let (message, help) = e.split_once("; ").unwrap_or((&e, ""));
                    cx.error(
                        c.file,
                        c.span(),
                        message.to_owned(),
                        (!help.is_empty()).then(|| help.to_owned()),
                    );
                    return None;
                }
            };
            let operation = match operation {
                Some((o, name)) => {
                    if let Err(e) = check_operation(m) {
                        let (message, help) = e.split_once("; ").unwrap_or((&e, ""));
                        cx.error(o.file, o.span(), message.to_owned(), Some(help.to_owned()));
                        return None;
                    }
                    Some(name?)
                }
                None => None,
            };
            (
                AcceptScope::Metric {
                    metric: m,
                    operation,
                },
                amount,
            )
        }
    };
    let (line, col) = cx.files[t.file].position(t.span.start);
    Some(AcceptConfig {
        commits: commits?,
        scope,
        amount,
        reason: reason?,
        location: format!("{}:{line}:{col}", cx.files[t.file].path.display()),
    })
}

#[cfg(test)]
mod tests {
    use crate::compare::AcceptScope;
    use crate::config::validate::testing::{one_problem, parse, with_workload};
    use crate::result::Metric;
    use indoc::indoc;
    use test_case::test_case;

    #[test]
    fn entries_are_read_with_their_place() {
        let text = with_workload(indoc! {r#"
            [[accept]]
            commits = ["3F2A91C", "9b0c2d1e"]
            metric = "p50"
            operation = "home"
            change = "+20%"
            reason = "a slower hash on purpose"

            [[accept]]
            commits = ["77be010"]
            metric = "all"
            reason = "a rewrite"
        "#});
        let config = parse(&text, "ci").expect("valid");
        assert_eq!(config.accept.len(), 2);
        let first = &config.accept[0];
        assert_eq!(first.commits, ["3f2a91c", "9b0c2d1e"]);
        assert_eq!(
            first.scope,
            AcceptScope::Metric {
                metric: Metric::P50,
                operation: Some("home".to_owned())
            }
        );
        assert!((first.amount - 0.2).abs() < 1e-12);
        assert_eq!(first.reason, "a slower hash on purpose");
        assert_eq!(first.location, "loadgate.toml:6:1");
        assert_eq!(config.accept[1].scope, AcceptScope::All);
    }

    #[test]
    fn accepts_stay_out_of_the_config_hash() {
        let plain = parse(&with_workload(""), "default").unwrap();
        let accepting = parse(
            &with_workload(indoc! {r#"
                [[accept]]
                commits = ["3f2a91c"]
                metric = "p99"
                change = "+15%"
                reason = "r"
            "#}),
            "default",
        )
        .unwrap();
        use crate::result::{MeasurementMode, config_hash, legacy_config_hash};
        assert_eq!(
            config_hash(&plain, MeasurementMode::Stored),
            config_hash(&accepting, MeasurementMode::Stored)
        );
        assert_eq!(legacy_config_hash(&plain), legacy_config_hash(&accepting));
    }

    // Each case is one mistake in an entry (after the 5 lines of the smallest workload); exactly
    // one problem is reported, at its place.
    #[test_case("[[accept]]\ncommits = [\"3f2a91c\"]\nmetric = \"p99\"\nchange = \"15%\"\nreason = \"r\"\n", 9, 10, "the change `15%` has no sign", Some("write e.g. `+15%`"); "no sign")]
    #[test_case("[[accept]]\ncommits = [\"3f2a91c\"]\nmetric = \"latency\"\nchange = \"+15%\"\nreason = \"r\"\n", 8, 10, "unknown metric `latency`", Some("expected `all`, `p50`, `p99`, `error-rate`, `capacity`, `rss-slope`"); "unknown metric")]
    #[test_case("[[accept]]\ncommits = [\"main\"]\nmetric = \"p99\"\nchange = \"+15%\"\nreason = \"r\"\n", 7, 12, "`main` is not a commit id", Some("write a full or abbreviated id of at least 7 hex digits, as `git log --oneline` prints it"); "not a commit")]
    #[test_case("[[accept]]\ncommits = []\nmetric = \"p99\"\nchange = \"+15%\"\nreason = \"r\"\n", 7, 11, "`commits` names no commit", Some("name the commits whose change is intended, e.g. [\"3f2a91c\"]"); "no commits")]
    #[test_case("[[accept]]\ncommits = [\"3f2a91c\"]\nmetric = \"p99\"\nchange = \"+15%\"\n", 6, 1, "entry 1 of `[[accept]]` has no `reason`", Some("add e.g. reason = \"a new feature\""); "no reason")]
    #[test_case("[[accept]]\ncommits = [\"3f2a91c\"]\nmetric = \"p99\"\nreason = \"r\"\n", 6, 1, "entry 1 of `[[accept]]` has no `change`", Some("add e.g. change = \"+30%\""); "no change")]
    #[test_case("[[accept]]\ncommits = [\"3f2a91c\"]\nmetric = \"all\"\nchange = \"+15%\"\nreason = \"r\"\n", 9, 10, "`change` cannot be given with `metric = \"all\"`: it accepts any change", Some("remove `change`, or name one metric"); "all with change")]
    #[test_case("[[accept]]\ncommits = [\"3f2a91c\"]\nmetric = \"capacity\"\noperation = \"home\"\nchange = \"-10%\"\nreason = \"r\"\n", 9, 13, "capacity is not compared per operation", Some("only p50 and p99 take `of <operation>`"); "capacity per operation")]
    #[test_case("[[accept]]\ncommits = [\"3f2a91c\"]\nmetric = \"p99\"\nchnage = \"+15%\"\nreason = \"r\"\n", 9, 1, "unknown key `chnage` in entry 1 of `[[accept]]`", Some("did you mean `change`?"); "typo")]
    #[test_case("[profile.ci]\naccept = 1\n", 7, 1, "unknown key `accept` in `[profile.ci]`", Some("expected one of `inherits`, `target`, `slo`, `workload`, `generator`, `ramp`, `soak`, `spike`, `stress`, `recovery`, `abort`, `gate`, `paired`, `data`, `teardown`"); "in a profile")]
    fn one_problem_is_reported(
        extra: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(extra, line, col, message, help);
    }
}
