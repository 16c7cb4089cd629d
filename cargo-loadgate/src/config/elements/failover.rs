//! `generator.failover = { attempts, on, backoff, eject }` (or `false`): how the generator's client
//! moves sessions between the replicas of a target booted with `[target] replicas` above one, and
//! the checks that need the target and the workload: a policy with one replica has nothing to
//! fail over to, and one that sends an attempt again after it may have reached the service needs
//! idempotent operations (as `retry` does).

use super::profile::Look;
use super::retry::{ATTEMPTS, BACKOFF, NON_IDEMPOTENT, ON};
use crate::config::source::{Cx, Tbl, Val, array, duration, integer_in, keyword, wrong_type};
use crate::config::types::{
    FailoverOn, FailoverPolicy, GeneratorConfig, IDEMPOTENCY_KEY, TargetConfig, WorkloadConfig,
};
use toml::de::DeValue;

/// `eject`.
pub(crate) const EJECT: &str = "eject";
/// The keys of a failover table, in the order messages list them.
const KEYS: &[&str] = &[ATTEMPTS, ON, BACKOFF, EJECT];

/// The most replicas one logical operation's attempts may go to.
pub(crate) const MAX_ATTEMPTS: i64 = 16;

/// What a failover table should look like, for messages.
const EXPECTED: &str = "false, or a table like { attempts = 2, on = [\"connect\", \"reset\"], \
                        backoff = \"0ms\", eject = \"1s\" }";

/// The words of `on`.
const CAUSES: [(&str, Cause); 4] = [
    ("connect", Cause::Connect),
    ("reset", Cause::Reset),
    ("timeout", Cause::Timeout),
    ("5xx", Cause::Status5xx),
];

#[derive(Clone, Copy)]
enum Cause {
    Connect,
    Reset,
    Timeout,
    Status5xx,
}

/// Reads `generator.failover`: `false`, or a table whose keys left out take
/// [`FailoverPolicy::DEFAULT`]'s values.
pub(crate) fn policy(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<FailoverPolicy> {
    match v.get() {
        DeValue::Boolean(false) => return Some(FailoverPolicy::OFF),
        DeValue::Table(_) => {}
        DeValue::Boolean(true) => {
            cx.error(
                v.file,
                v.span(),
                "`failover = true` does not say how to fail over".to_owned(),
                Some(format!(
                    "leave it out for the default (one attempt on the next replica after a \
                     connect error, the failed replica ejected for 1s), or write {EXPECTED}"
                )),
            );
            return None;
        }
        _ => {
            wrong_type(cx, v, EXPECTED);
            return None;
        }
    }
    let table = Tbl::of(cx, v, what.to_owned(), EXPECTED)?;
    table.check_keys(cx, KEYS);
    let default = FailoverPolicy::DEFAULT;
    let attempts = match table.get(ATTEMPTS) {
        None => Some(default.attempts),
        Some(a) => integer_in(cx, a, &format!("`{ATTEMPTS}` of {what}"), 1..=MAX_ATTEMPTS)
            .map(|n| n as u32),
    };
    let on = match table.get(ON) {
        None => Some(default.on),
        Some(o) => on(cx, o, what),
    };
    let backoff = match table.get(BACKOFF) {
        None => Some(default.backoff),
        Some(b) => duration(cx, b),
    };
    let eject = match table.get(EJECT) {
        None => Some(default.eject),
        Some(e) => duration(cx, e),
    };
    Some(FailoverPolicy {
        attempts: attempts?,
        on: on?,
        backoff: backoff?,
        eject: eject?,
    })
}

/// Reads `on`: a list of `connect`, `reset`, `timeout` and `5xx`, at least one.
fn on(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<FailoverOn> {
    let items = array(cx, v, "a list like [\"connect\", \"reset\"]")?;
    if items.is_empty() {
        cx.error(
            v.file,
            v.span(),
            format!("`{ON}` of {what} names no failure"),
            Some(
                "name at least one of `connect`, `reset`, `timeout`, `5xx`, or write \
                 `failover = false` to turn it off"
                    .to_owned(),
            ),
        );
        return None;
    }
    let mut out = FailoverOn::default();
    let mut ok = true;
    for item in items {
        let place = format!("`{ON}` of {what}");
        match keyword(cx, item, &CAUSES, "unknown failure", &place) {
            Some(Cause::Connect) => out.connect = true,
            Some(Cause::Reset) => out.reset = true,
            Some(Cause::Timeout) => out.timeout = true,
            Some(Cause::Status5xx) => out.status_5xx = true,
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// The checks of `generator.failover` against `[target]` and the workload, each pointing at the
/// place that decides it:
/// - a failover policy written for a target of one replica has no replica to go to;
/// - a policy that sends an attempt again after a reset, a timeout or a 5xx (which may have
///   reached the service) needs every non-idempotent operation to carry an `Idempotency-Key`
///   header or say `idempotent = true`.
pub(crate) fn check(
    cx: &Cx<'_>,
    look: &Look<'_>,
    target: &TargetConfig,
    generator: &GeneratorConfig,
    workload: &WorkloadConfig,
) {
    let Some(written) = look.get(&["generator", "failover"]) else {
        return;
    };
    let Some(policy) = &generator.failover else {
        return;
    };
    if target.replicas < 2 && *policy != FailoverPolicy::OFF {
        cx.error(
            written.file,
            written.span(),
            "`generator.failover` has no replica to fail over to: the target is one instance"
                .to_owned(),
            Some("set `[target] replicas = 2` (or more), or leave `failover` out".to_owned()),
        );
        return;
    }
    if target.replicas < 2 || !policy.may_repeat_effects() {
        return;
    }
    for op in &workload.operations {
        if !NON_IDEMPOTENT.contains(&op.request.method.as_str())
            || op.idempotent
            || op.has_idempotency_key()
        {
            continue;
        }
        cx.error(
            written.file,
            written.span(),
            format!(
                "`generator.failover` sends operation `{}` ({}) again after a failure that may \
                 have reached the service, but its request has no `{IDEMPOTENCY_KEY}` header",
                op.name, op.request.method
            ),
            Some(format!(
                "the other replica could book its effect twice; add headers = {{ \
                 {IDEMPOTENCY_KEY} = \"{{{{session}}}}-{{{{seq}}}}\" }} to it (the replicas must \
                 share the store the key is checked in), or `idempotent = true` if the service \
                 dedups it otherwise, or fail over on `connect` alone"
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::{one_problem, parse, with_workload};
    use crate::config::{FailoverOn, FailoverPolicy};
    use std::time::Duration;
    use test_case::test_case;

    const TWO: &str = "[target]\nreplicas = 2\n";

    // Each case is one mistake in `generator.failover`; exactly one problem, at the given place
    // (the smallest workload takes lines 1 to 5, `[target]` 6 and 7).
    #[test_case("[generator]\nfailover = { attempts = 0 }\n", 9, 25, "`attempts` of `failover` must be between 1 and 16, found 0", None; "zero attempts")]
    #[test_case("[generator]\nfailover = { on = [\"rest\"] }\n", 9, 20, "unknown failure `rest` in `on` of `failover`", Some("did you mean `reset`?"); "unknown on word")]
    #[test_case("[generator]\nfailover = { on = [] }\n", 9, 19, "`on` of `failover` names no failure", Some("name at least one of `connect`, `reset`, `timeout`, `5xx`, or write `failover = false` to turn it off"); "empty on")]
    #[test_case("[generator]\nfailover = { ejcet = \"1s\" }\n", 9, 14, "unknown key `ejcet` in `failover`", Some("did you mean `eject`?"); "typo in a key")]
    #[test_case("[generator]\nfailover = true\n", 9, 12, "`failover = true` does not say how to fail over", Some("leave it out for the default (one attempt on the next replica after a connect error, the failed replica ejected for 1s), or write false, or a table like { attempts = 2, on = [\"connect\", \"reset\"], backoff = \"0ms\", eject = \"1s\" }"); "true")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(&format!("{TWO}{text}"), line, col, message, help);
    }

    #[test]
    fn left_out_keys_take_the_defaults_and_false_turns_it_off() {
        let config = parse(
            &with_workload(&format!(
                "{TWO}[generator]\nfailover = {{ on = [\"connect\", \"reset\"], eject = \"250ms\" }}\n"
            )),
            "default",
        )
        .expect("valid");
        assert_eq!(
            config.generator.failover,
            Some(FailoverPolicy {
                attempts: 2,
                on: FailoverOn {
                    connect: true,
                    reset: true,
                    timeout: false,
                    status_5xx: false,
                },
                backoff: Duration::ZERO,
                eject: Duration::from_millis(250),
            })
        );
        assert_eq!(config.target.replicas, 2);
        let off = parse(
            &with_workload(&format!("{TWO}[generator]\nfailover = false\n")),
            "default",
        )
        .expect("valid");
        assert_eq!(off.generator.failover, Some(FailoverPolicy::OFF));
        assert_eq!(off.generator.failover_policy().attempts, 1);
        let default = parse(&with_workload(TWO), "default").expect("valid");
        assert_eq!(default.generator.failover, None);
        assert_eq!(
            default.generator.failover_policy(),
            &FailoverPolicy::DEFAULT
        );
    }

    #[test]
    fn a_policy_without_replicas_is_refused_at_the_policy() {
        one_problem(
            "[generator]\nfailover = { attempts = 3 }\n",
            7,
            12,
            "`generator.failover` has no replica to fail over to: the target is one instance",
            Some("set `[target] replicas = 2` (or more), or leave `failover` out"),
        );
    }

    #[test]
    fn failing_over_after_a_reset_needs_idempotent_operations() {
        let text = "[workload]\nsessions-per-sec = 10\n[[workload.operation]]\nname = \"pay\"\n\
                    request = { method = \"POST\", path = \"/pay\" }\n\
                    [target]\nreplicas = 2\n[generator]\nfailover = { on = [\"connect\", \"reset\"] }\n";
        let err = parse(text, "default").expect_err("invalid");
        let diags = err.diagnostics();
        assert_eq!(diags.len(), 1, "{err}");
        assert_eq!((diags[0].line, diags[0].col), (9, 12), "{err}");
        assert!(
            diags[0]
                .message
                .contains("sends operation `pay` (POST) again"),
            "{err}"
        );
        // On connect errors alone the request never reached the service: nothing to dedup.
        let connect = text.replace("[\"connect\", \"reset\"]", "[\"connect\"]");
        parse(&connect, "default").expect("a connect failover needs no key");
        let keyed = text.replace(
            "path = \"/pay\"",
            "path = \"/pay\", headers = { Idempotency-Key = \"{{session}}-{{seq}}\" }",
        );
        parse(&keyed, "default").expect("a keyed operation may fail over after a reset");
    }

    #[test_case(0, 7, 12, "`replicas` must be between 1 and 16, found 0"; "zero")]
    #[test_case(17, 7, 12, "`replicas` must be between 1 and 16, found 17"; "too many")]
    fn replicas_out_of_range_are_refused(n: u32, line: usize, col: usize, message: &str) {
        one_problem(
            &format!("[target]\nreplicas = {n}\n"),
            line,
            col,
            message,
            None,
        );
    }
}
