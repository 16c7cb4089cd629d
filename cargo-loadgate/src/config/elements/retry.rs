//! `retry = { attempts, on, backoff }`, as `generator.retry` and as an operation's own `retry`
//! (one reader for both), and the check that needs the generator and the workload together: a
//! retried non-idempotent request must carry an `Idempotency-Key` header.

use super::profile::Look;
use crate::config::source::{Cx, Tbl, Val, array, duration, integer_in, keyword, wrong_type};
use crate::config::types::{
    GeneratorConfig, IDEMPOTENCY_KEY, OperationRetry, RetryOn, RetryPolicy, WorkloadConfig,
};
use std::time::Duration;
use toml::de::DeValue;

/// `attempts`.
pub(crate) const ATTEMPTS: &str = "attempts";
/// `on`.
pub(crate) const ON: &str = "on";
/// `backoff`.
pub(crate) const BACKOFF: &str = "backoff";
/// The keys of a retry table, in the order messages list them.
const KEYS: &[&str] = &[ATTEMPTS, ON, BACKOFF];

/// The wait before the first retry when `backoff` is not written.
pub(crate) const DEFAULT_BACKOFF: Duration = Duration::from_millis(50);

/// What a retry table should look like, for messages.
const EXPECTED: &str =
    "a table like { attempts = 3, on = [\"connect\", \"5xx\", \"timeout\"], backoff = \"50ms\" }";

/// The words of `on`, each with the failure it names.
const CAUSES: [(&str, Cause); 3] = [
    ("connect", Cause::Connect),
    ("5xx", Cause::Status5xx),
    ("timeout", Cause::Timeout),
];

#[derive(Clone, Copy)]
enum Cause {
    Connect,
    Status5xx,
    Timeout,
}

/// Reads a retry table (`what` names it in messages, e.g. "`retry`").
pub(crate) fn policy(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<RetryPolicy> {
    let table = Tbl::of(cx, v, what.to_owned(), EXPECTED)?;
    table.check_keys(cx, KEYS);
    let attempts = table
        .required(
            cx,
            ATTEMPTS,
            what,
            "add the most attempts per logical operation, the first included, e.g. attempts = 3",
        )
        .and_then(|a| integer_in(cx, a, &format!("`{ATTEMPTS}` of {what}"), 1..=100))
        .map(|n| n as u32);
    let on = match table.get(ON) {
        None => Some(RetryOn::ALL),
        Some(o) => on(cx, o, what),
    };
    let backoff = match table.get(BACKOFF) {
        None => Some(DEFAULT_BACKOFF),
        Some(b) => duration(cx, b),
    };
    Some(RetryPolicy {
        attempts: attempts?,
        on: on?,
        backoff: backoff?,
    })
}

/// Reads `on`: a list of `connect`, `5xx` and `timeout`, none twice.
fn on(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<RetryOn> {
    let items = array(cx, v, "a list like [\"connect\", \"5xx\", \"timeout\"]")?;
    if items.is_empty() {
        cx.error(
            v.file,
            v.span(),
            format!("`{ON}` of {what} names no failure"),
            Some(
                "name at least one of `connect`, `5xx`, `timeout`, or leave `on` out for all three"
                    .to_owned(),
            ),
        );
        return None;
    }
    let mut out = RetryOn::default();
    let mut ok = true;
    for item in items {
        let place = format!("`{ON}` of {what}");
        match keyword(cx, item, &CAUSES, "unknown failure", &place) {
            Some(Cause::Connect) => out.connect = true,
            Some(Cause::Status5xx) => out.status_5xx = true,
            Some(Cause::Timeout) => out.timeout = true,
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// Reads an operation's `retry`: `false`, or a retry table.
pub(crate) fn operation_retry(cx: &Cx<'_>, v: Val<'_>, label: &str) -> Option<OperationRetry> {
    match v.get() {
        DeValue::Boolean(false) => Some(OperationRetry::Off),
        DeValue::Table(_) => {
            policy(cx, v, &format!("`retry` of {label}")).map(OperationRetry::Policy)
        }
        DeValue::Boolean(true) => {
            cx.error(
                v.file,
                v.span(),
                format!("`retry = true` of {label} does not say how to retry"),
                Some(format!(
                    "leave `retry` out to follow `generator.retry`, or write {EXPECTED}"
                )),
            );
            None
        }
        _ => {
            wrong_type(cx, v, &format!("false or {EXPECTED}"));
            None
        }
    }
}

/// Methods whose repetition is not harmless (RFC 9110 §9.2.2: POST and PATCH are not
/// idempotent): a retry of one can book its effect twice unless the service dedups it by key.
pub(crate) const NON_IDEMPOTENT: &[&str] = &["POST", "PATCH"];

/// Reports every retried operation whose method is not idempotent and whose request has no
/// `Idempotency-Key` header, unless it says `idempotent = true`. Each problem points at the
/// operation's name.
pub(crate) fn check_idempotency(
    cx: &Cx<'_>,
    look: &Look<'_>,
    generator: &GeneratorConfig,
    workload: &WorkloadConfig,
) {
    let items = look
        .get(&["workload", "operation"])
        .and_then(|v| match v.get() {
            DeValue::Array(items) => Some((v.file, items)),
            _ => None,
        });
    for (i, op) in workload.operations.iter().enumerate() {
        if op.retry_policy(generator.retry.as_ref()).is_none()
            || !NON_IDEMPOTENT.contains(&op.request.method.as_str())
            || op.idempotent
            || op.has_idempotency_key()
        {
            continue;
        }
        let at = items
            .and_then(|(file, items)| {
                let item = Val {
                    file,
                    v: items.get(i)?,
                };
                let name = item.as_table()?.get("name")?;
                Some((file, name.span()))
            })
            .unwrap_or_else(|| look.section_anchor("workload"));
        let by = if op.retry.is_inherit() {
            "`generator.retry`"
        } else {
            "its own `retry`"
        };
        cx.error(
            at.0,
            at.1,
            format!(
                "operation `{}` ({}) is retried by {by} but its request has no `{IDEMPOTENCY_KEY}` header",
                op.name, op.request.method
            ),
            Some(format!(
                "a retry could book its effect twice; add headers = {{ {IDEMPOTENCY_KEY} = \"{{{{session}}}}-{{{{seq}}}}\" }}, \
                 or `idempotent = true` if the service dedups it otherwise, or `retry = false`"
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::{one_problem, one_problem_in, parse, with_workload};
    use crate::config::{OperationRetry, RetryOn, RetryPolicy};
    use indoc::indoc;
    use std::time::Duration;
    use test_case::test_case;

    // Each case is one mistake in `generator.retry`; exactly one problem, at the given place.
    #[test_case("[generator]\nretry = { attempts = 0 }\n", 7, 22, "`attempts` of `retry` must be between 1 and 100, found 0", None; "zero attempts")]
    #[test_case("[generator]\nretry = { attempts = 2, on = [\"5xx\", \"timout\"] }\n", 7, 38, "unknown failure `timout` in `on` of `retry`", Some("did you mean `timeout`?"); "unknown on word with suggestion")]
    #[test_case("[generator]\nretry = { attempts = 2, on = [\"dns\"] }\n", 7, 31, "unknown failure `dns` in `on` of `retry`", Some("one of `connect`, `5xx`, `timeout`"); "unknown on word without suggestion")]
    #[test_case("[generator]\nretry = { attempts = 2, on = [] }\n", 7, 30, "`on` of `retry` names no failure", Some("name at least one of `connect`, `5xx`, `timeout`, or leave `on` out for all three"); "empty on")]
    #[test_case("[generator]\nretry = { on = [\"5xx\"] }\n", 7, 9, "`retry` has no `attempts`", Some("add the most attempts per logical operation, the first included, e.g. attempts = 3"); "no attempts")]
    #[test_case("[generator]\nretry = { attempts = 2, backof = \"1s\" }\n", 7, 25, "unknown key `backof` in `retry`", Some("did you mean `backoff`?"); "typo in a key")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(text, line, col, message, help);
    }

    const TRANSFER: &str = indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "transfer"
        request = { method = "POST", path = "/transfers" }
    "#};

    const HELP: &str = "a retry could book its effect twice; add headers = { Idempotency-Key = \"{{session}}-{{seq}}\" }, or `idempotent = true` if the service dedups it otherwise, or `retry = false`";

    #[test]
    fn a_retried_post_without_an_idempotency_key_is_an_error_at_its_name() {
        one_problem_in(
            &format!("{TRANSFER}[generator]\nretry = {{ attempts = 3 }}\n"),
            4,
            8,
            "operation `transfer` (POST) is retried by `generator.retry` but its request has no `Idempotency-Key` header",
            Some(HELP),
        );
        // Its own policy is named as such.
        let own = TRANSFER.replace(
            "path = \"/transfers\" }",
            "path = \"/transfers\" }\nretry = { attempts = 2 }",
        );
        one_problem_in(
            &own,
            4,
            8,
            "operation `transfer` (POST) is retried by its own `retry` but its request has no `Idempotency-Key` header",
            Some(HELP),
        );
    }

    #[test_case("request = { method = \"POST\", path = \"/transfers\", headers = { idempotency-key = \"k-{{session}}\" } }" ; "a key in any case")]
    #[test_case("request = { method = \"POST\", path = \"/transfers\" }\nidempotent = true" ; "idempotent by the author's word")]
    #[test_case("request = { method = \"POST\", path = \"/transfers\" }\nretry = false" ; "retry off for the operation")]
    #[test_case("request = { method = \"PUT\", path = \"/transfers\" }" ; "an idempotent method")]
    fn a_retried_request_that_is_safe_to_repeat_is_valid(request: &str) {
        let text = TRANSFER.replace(
            "request = { method = \"POST\", path = \"/transfers\" }",
            request,
        ) + "[generator]\nretry = { attempts = 3, on = [\"5xx\"], backoff = \"10ms\" }\n";
        let cfg = parse(&text, "default").expect("valid");
        let op = &cfg.workload.operations[0];
        let policy = op.retry_policy(cfg.generator.retry.as_ref());
        if op.retry == OperationRetry::Off {
            assert_eq!(policy, None);
        } else {
            assert_eq!(
                policy,
                Some(&RetryPolicy {
                    attempts: 3,
                    on: RetryOn {
                        status_5xx: true,
                        ..RetryOn::default()
                    },
                    backoff: Duration::from_millis(10),
                })
            );
        }
    }

    #[test]
    fn every_problem_of_retries_is_reported_at_once() {
        let text = format!(
            "{TRANSFER}[generator]\nretry = {{ attempts = 0, on = [\"5xx\", \"conect\"] }}\n[profile.ci.generator]\nretry = {{ attempts = 2 }}\n"
        );
        let err = parse(&text, "default").expect_err("invalid");
        let messages: Vec<String> = err
            .diagnostics()
            .iter()
            .map(|d| format!("{}:{} {}", d.line, d.col, d.message))
            .collect();
        assert!(
            messages.contains(
                &"7:22 `attempts` of `retry` must be between 1 and 100, found 0".to_owned()
            ),
            "{messages:?}"
        );
        assert!(
            messages.contains(&"7:38 unknown failure `conect` in `on` of `retry`".to_owned()),
            "{messages:?}"
        );
        // The profile `ci` retries the POST: reported too, in the same pass.
        assert!(
            messages
                .iter()
                .any(|m| m.starts_with("4:8 operation `transfer` (POST) is retried")),
            "{messages:?}"
        );
    }

    #[test]
    fn retries_are_off_by_default_and_leave_the_serialized_config_alone() {
        let cfg = parse(&with_workload(""), "default").expect("valid");
        assert_eq!(cfg.generator.retry, None);
        let json = serde_json::to_value(&cfg.generator).expect("serializes");
        assert!(json.get("retry").is_none(), "{json}");
        let op = serde_json::to_value(&cfg.workload.operations[0]).expect("serializes");
        assert!(op.get("retry").is_none(), "{op}");
        let retried = parse(
            &with_workload("[generator]\nretry = { attempts = 2 }\n"),
            "default",
        )
        .expect("valid");
        let json = serde_json::to_value(&retried.generator).expect("serializes");
        assert_eq!(json["retry"]["attempts"], 2, "{json}");
    }

    /// `cargo loadgate check` lists the policies, and the listing reads back as the same config.
    #[test]
    fn the_resolved_listing_shows_retries_and_reads_back() {
        let text = indoc! {r#"
            [workload]
            sessions-per-sec = 10
            [[workload.operation]]
            name = "home"
            request = { path = "/" }
            retry = false
            next = [{ to = "buy", p = 0.5 }]
            [[workload.operation]]
            name = "buy"
            request = { method = "POST", path = "/buy" }
            idempotent = true
            retry = { attempts = 4, on = ["timeout"], backoff = "5ms" }
            [generator]
            retry = { attempts = 2, on = ["connect", "5xx"] }
        "#};
        let path = std::path::Path::new("loadgate.toml");
        let cfg = crate::config::parse_config_str(text, path, None, "default").expect("valid");
        let listing = crate::config::render_resolved(&cfg);
        for line in [
            "retry = false\n",
            "retry = { attempts = 4, on = [\"timeout\"], backoff = \"5ms\" }\nidempotent = true\n",
            "retry = { attempts = 2, on = [\"connect\", \"5xx\"], backoff = \"50ms\" }\n",
        ] {
            assert!(listing.contains(line), "{line:?} in\n{listing}");
        }
        let again = crate::config::parse_config_str(&listing, path, None, "default")
            .unwrap_or_else(|e| panic!("{listing}\n{e}"));
        assert_eq!(again, cfg);
    }

    #[test]
    fn retry_true_on_an_operation_is_refused() {
        let text = TRANSFER.replace(
            "path = \"/transfers\" }",
            "path = \"/transfers\" }\nretry = true",
        );
        one_problem_in(
            &text,
            6,
            9,
            "`retry = true` of operation `transfer` does not say how to retry",
            Some(
                "leave `retry` out to follow `generator.retry`, or write a table like { attempts = 3, on = [\"connect\", \"5xx\", \"timeout\"], backoff = \"50ms\" }",
            ),
        );
    }
}
