//! `[spike]`: a sudden step of the session rate from the soak's load to a share of capacity, held
//! for a while, then back to the soak's load inside the same phase (docs/phases.md).

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{Cx, duration, positive_duration, positive_share};
use crate::config::types::{SoakConfig, SpikeConfig};
use crate::config::units::format_percent;
use std::time::Duration;

/// `spike.to`.
pub(crate) const TO: Key<f64> = Key::qualified(
    "to",
    "the load during the spike, as a share of capacity (the baseline's when there is one)",
    |cx, v, what| positive_share(cx, v, what, None),
);
/// `spike.for`.
pub(crate) const FOR: Key<Duration> = Key::new(
    "for",
    "how long the spike lasts; `\"0s\"` disables it",
    |cx, v, _| duration(cx, v),
);
/// `spike.before`.
pub(crate) const BEFORE: Key<Duration> = Key::new(
    "before",
    "measured at the soak's load before the spike: the level it is compared with",
    positive_duration,
);
/// `spike.after`.
pub(crate) const AFTER: Key<Duration> = Key::new(
    "after",
    "measured at the soak's load after the spike: how long recovery is watched",
    positive_duration,
);

/// `[spike]`.
pub(crate) const SECTION: Section = Section {
    name: "spike",
    keys: &[&TO, &FOR, &BEFORE, &AFTER],
    check_table: None,
};

/// Pass 2: `[spike]` of one profile. A spike whose load is not above the soak's (from which it
/// steps) is not a spike, reported at `to`.
pub(crate) fn build(
    cx: &Cx<'_>,
    look: &Look<'_>,
    profile: &str,
    soak: Option<&SoakConfig>,
) -> Option<SpikeConfig> {
    let s = &SECTION;
    let to = look.need(cx, s, &TO);
    let duration = look.need(cx, s, &FOR);
    let before = look.need(cx, s, &BEFORE);
    let after = look.need(cx, s, &AFTER);
    let spike = SpikeConfig {
        to: to?,
        duration: duration?,
        before: before?,
        after: after?,
    };
    if let Some(soak) = soak
        && !spike.duration.is_zero()
        && spike.to <= soak.at
        && let Some(v) = look.get(&[s.name, TO.name])
    {
        cx.error(
            v.file,
            v.span(),
            format!(
                "in profile `{profile}`, {} ({}) is not above the soak's load ({}) it steps up from",
                TO.what(s.name),
                format_percent(spike.to),
                format_percent(soak.at)
            ),
            Some("a spike steps up from `[soak] at`; write a higher `to`, e.g. \"300%\"".to_owned()),
        );
        return None;
    }
    Some(spike)
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::{one_problem, parse, with_workload};
    use std::time::Duration;
    use test_case::test_case;

    // Each case is one mistake in `[spike]`; exactly one problem must be reported, at the given place.
    #[test_case("[spike]\nto = \"0%\"\n", 7, 6, "`spike.to` must be more than 0%", None; "spike to zero")]
    #[test_case("[spike]\nfor = \"ten\"\n", 7, 7, "`ten` is not a duration", Some("write e.g. \"30s\", \"250ms\" or \"2m\""); "spike for garbage")]
    #[test_case("[spike]\nafter = \"0s\"\n", 7, 9, "`after` must be longer than zero", None; "spike after zero")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(text, line, col, message, help);
    }

    /// A spike that does not step up is reported at its `to`, once for each profile it is in.
    #[test]
    fn a_spike_not_above_the_soak_is_reported_in_every_profile() {
        let err = parse(
            &with_workload("[spike]\nfor = \"5s\"\nto = \"50%\"\n"),
            "default",
        )
        .expect_err("invalid");
        let diags = err.diagnostics();
        let messages: Vec<&str> = diags.iter().map(|d| d.message.as_str()).collect();
        assert!(messages.len() >= 3, "{messages:?}");
        assert_eq!(
            messages[0],
            "in profile `default`, `spike.to` (50%) is not above the soak's load (60%) it steps up from"
        );
        assert!(messages.iter().any(|m| m.starts_with("in profile `quick`")));
        // Each at the value of `to`.
        let at = (diags[0].line, diags[0].col);
        assert!(diags.iter().all(|d| (d.line, d.col) == at), "{at:?}");
    }

    #[test]
    fn a_spike_is_off_by_default_and_read_when_declared() {
        let cfg = parse(&with_workload(""), "default").expect("valid");
        assert!(cfg.spike.is_disabled());
        let cfg = parse(
            &with_workload(
                "[spike]\nto = \"300%\"\nfor = \"10s\"\nbefore = \"5s\"\nafter = \"30s\"\n",
            ),
            "default",
        )
        .expect("valid");
        assert_eq!(cfg.spike.to, 3.0);
        assert_eq!(cfg.spike.duration, Duration::from_secs(10));
        assert_eq!(cfg.spike.before, Duration::from_secs(5));
        assert_eq!(cfg.spike.after, Duration::from_secs(30));
    }
}
