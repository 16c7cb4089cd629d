//! `[gate]`: the smallest change that matters, per metric.

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{Cx, Val, array, duration, share, size_rate, string, suggest};
use crate::config::types::{GateConfig, WorkloadConfig};
use std::time::Duration;

/// `gate.p50`: a relative change.
pub(crate) const P50: Key<f64> = Key::qualified("p50", "relative change of p50", |cx, v, what| {
    share(cx, v, what, None)
});
/// `gate.p99`: a relative change.
pub(crate) const P99: Key<f64> = Key::qualified("p99", "relative change of p99", |cx, v, what| {
    share(cx, v, what, None)
});
/// `gate.capacity`.
pub(crate) const CAPACITY: Key<f64> =
    Key::qualified("capacity", "relative loss of capacity", |cx, v, what| {
        share(cx, v, what, Some(1.0))
    });
/// `gate.error-rate`: an absolute increase.
pub(crate) const ERROR_RATE: Key<f64> = Key::new(
    "error-rate",
    "absolute increase of the error rate",
    |cx, v, what| share(cx, v, what, Some(1.0)),
);
/// `gate.rss-slope`.
pub(crate) const RSS_SLOPE: Key<f64> = Key::new(
    "rss-slope",
    "RSS growth that counts as a leak",
    |cx, v, _| size_rate(cx, v),
);

/// `gate.p50-floor`: an absolute change of p50 below which no change is a regression.
pub(crate) const P50_FLOOR: Key<Duration> = Key::qualified(
    "p50-floor",
    "absolute change of p50 below which a change is never a regression",
    |cx, v, _| duration(cx, v),
);
/// `gate.p99-floor`.
pub(crate) const P99_FLOOR: Key<Duration> = Key::qualified(
    "p99-floor",
    "absolute change of p99 below which a change is never a regression",
    |cx, v, _| duration(cx, v),
);

/// `gate.operations`: operations made primary by name (as `gate = true` on each does), so that a
/// profile can gate on them without writing the workload again.
pub(crate) const OPERATIONS: Key<Vec<String>> = Key::new(
    "operations",
    "operations whose p50 and p99 are primary metrics, as with `gate = true` on each, e.g. \
     [\"transactions\"]",
    |cx, v, _| {
        let items = array(cx, v, "an array of operation names, e.g. [\"checkout\"]")?;
        let mut out = Vec::new();
        let mut ok = true;
        for item in items {
            match string(cx, item, "a string (an operation's name)") {
                Some(name) => out.push(name.to_owned()),
                None => ok = false,
            }
        }
        ok.then_some(out)
    },
);

/// `[gate]`.
pub(crate) const SECTION: Section = Section {
    name: "gate",
    keys: &[
        &P50,
        &P99,
        &CAPACITY,
        &ERROR_RATE,
        &RSS_SLOPE,
        &P50_FLOOR,
        &P99_FLOOR,
        &OPERATIONS,
    ],
    check_table: None,
};

/// Pass 2: `[gate]` of one profile.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>) -> Option<GateConfig> {
    let s = &SECTION;
    Some(GateConfig {
        p50_change: look.need(cx, s, &P50)?,
        p99_change: look.need(cx, s, &P99)?,
        capacity_loss: look.need(cx, s, &CAPACITY)?,
        error_rate_increase: look.need(cx, s, &ERROR_RATE)?,
        rss_slope_bytes_per_sec: look.need(cx, s, &RSS_SLOPE)?,
        p50_floor: look.need(cx, s, &P50_FLOOR)?,
        p99_floor: look.need(cx, s, &P99_FLOOR)?,
        // Optional: a bad value was reported where it is written.
        operations: look.read(cx, s, &OPERATIONS).flatten().unwrap_or_default(),
    })
}

/// Reports each name in `gate.operations` of this profile that `workload` has no operation of,
/// where it is written.
pub(crate) fn check_operations(cx: &Cx<'_>, look: &Look<'_>, workload: &WorkloadConfig) {
    let Some(list) = look.get(&[SECTION.name, OPERATIONS.name]) else {
        return;
    };
    let toml::de::DeValue::Array(items) = list.get() else {
        return;
    };
    let names: Vec<&str> = workload
        .operations
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    for item in items {
        let item = Val {
            file: list.file,
            v: item,
        };
        let Some(name) = item.get().as_str() else {
            continue;
        };
        if names.contains(&name) {
            continue;
        }
        cx.error(
            item.file,
            item.span(),
            format!("`gate.operations` names operation `{name}`, which the workload has not"),
            Some(match suggest(name, names.iter().copied()) {
                Some(best) => format!("did you mean `{best}`?"),
                None => format!(
                    "its operations: {}",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::one_problem;
    use test_case::test_case;

    // Each case is one mistake in `[gate]`; exactly one problem must be reported, at the given place.
    #[test_case("[gate]\nrss-slope = \"2MiB\"\n", 7, 13, "`2MiB` is not a rate", Some("write e.g. \"2MiB/min\""); "rss slope without time")]
    #[test_case("[gate]\np50-floor = \"50\"\n", 7, 13, "`50` has no unit", Some("write e.g. \"50s\" or \"50ms\""); "floor without a unit")]
    #[test_case("[gate]\np99-floor = 0.5\n", 7, 13, "expected a duration like \"30s\", found float 0.5", None; "floor as a number")]
    #[test_case("[gate]\noperations = [\"hom\"]\n", 7, 15, "`gate.operations` names operation `hom`, which the workload has not", Some("did you mean `home`?"); "an operation the workload has not")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(text, line, col, message, help);
    }

    #[test]
    fn the_floors_are_read_and_default_to_the_measured_ones() {
        use crate::config::validate::testing::{parse, with_workload};
        use std::time::Duration;
        let cfg = parse(&with_workload(""), "default").unwrap();
        assert_eq!(cfg.gate.p50_floor, Duration::from_micros(40));
        assert_eq!(cfg.gate.p99_floor, Duration::from_micros(200));
        let text = with_workload("[gate]\np50-floor = \"50us\"\np99-floor = \"2ms\"\n");
        let cfg = parse(&text, "default").unwrap();
        assert_eq!(cfg.gate.p50_floor, Duration::from_micros(50));
        assert_eq!(cfg.gate.p99_floor, Duration::from_millis(2));
        // 50 µs over a 400 µs p50 is 12.5%, above the 5% relative threshold.
        assert!((cfg.gate.p50_delta(0.4) - 0.125).abs() < 1e-12);
        assert_eq!(cfg.gate.p50_delta(2.0), 0.05);
    }

    /// `[gate] operations` makes operations primary by name, in the workload's order, beside
    /// those written with `gate = true`; a profile can set it alone.
    #[test]
    fn operations_named_in_the_gate_are_primary() {
        use crate::config::validate::testing::parse;
        let text = "[workload]\nsessions-per-sec = 10\n\
            entry = [{ to = \"home\", weight = 1 }, { to = \"buy\", weight = 1 }, \
            { to = \"list\", weight = 1 }]\n\
            [[workload.operation]]\nname = \"home\"\nrequest = { path = \"/\" }\n\
            [[workload.operation]]\nname = \"buy\"\nrequest = { path = \"/buy\" }\ngate = true\n\
            [[workload.operation]]\nname = \"list\"\nrequest = { path = \"/list\" }\n\
            [profile.db.gate]\noperations = [\"list\", \"home\"]\n"
            .to_owned();
        let cfg = parse(&text, "default").unwrap();
        assert!(cfg.gate.operations.is_empty());
        assert_eq!(cfg.gated_operations(), ["buy"]);
        let db = parse(&text, "db").unwrap();
        assert_eq!(db.gate.operations, ["list", "home"]);
        assert_eq!(db.gated_operations(), ["home", "buy", "list"]);
        // Without it the serialized gate is as it was (the config hash and stored keys keep).
        assert!(
            !serde_json::to_string(&cfg.gate)
                .unwrap()
                .contains("operations")
        );
    }
}
