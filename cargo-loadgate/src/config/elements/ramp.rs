//! `[ramp]`: the capacity search, steps then bisection.

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{
    Cx, Val, array, duration, integer_in, positive_duration, positive_share,
};
use crate::config::types::RampConfig;
use crate::config::units::format_duration;
use std::time::Duration;

/// `ramp.steps`.
pub(crate) const STEPS: Key<Vec<f64>> = Key::new(
    "steps",
    "offered load as a share of the workload rate",
    steps,
);
/// `ramp.hold`.
pub(crate) const HOLD: Key<Duration> =
    Key::new("hold", "how long each step is measured", positive_duration);
/// `ramp.warmup`.
pub(crate) const WARMUP: Key<Duration> =
    Key::new("warmup", "excluded from each step's figures", |cx, v, _| {
        duration(cx, v)
    });
/// `ramp.refine`.
pub(crate) const REFINE: Key<i64> = Key::new(
    "refine",
    "bisection iterations between the last step that held and the first that broke",
    |cx, v, what| integer_in(cx, v, what, 0..=20),
);

/// `[ramp]`.
pub(crate) const SECTION: Section = Section {
    name: "ramp",
    keys: &[&STEPS, &HOLD, &WARMUP, &REFINE],
    check_table: None,
};

fn steps(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<Vec<f64>> {
    let items = array(cx, v, "an array of percentages like [\"50%\", \"100%\"]")?;
    if items.is_empty() {
        cx.error(v.file, v.span(), format!("{what} lists no steps"), None);
        return None;
    }
    let mut out: Vec<f64> = Vec::new();
    for item in items {
        let step = positive_share(cx, item, "a step", None)?;
        if let Some(&last) = out.last()
            && step <= last
        {
            cx.error(
                item.file,
                item.span(),
                "ramp steps must increase",
                Some("list them from the lightest load to the heaviest".to_owned()),
            );
            return None;
        }
        out.push(step);
    }
    Some(out)
}

/// Pass 2: `[ramp]` of `profile`; the warmup must leave some of the hold.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>, profile: &str) -> Option<RampConfig> {
    let s = &SECTION;
    let steps = look.need(cx, s, &STEPS);
    let hold = look.need(cx, s, &HOLD);
    let warmup_val = look.get(&[s.name, WARMUP.name]);
    let warmup = look.need(cx, s, &WARMUP);
    let refine = look.need(cx, s, &REFINE);
    let (hold, warmup) = (hold?, warmup?);
    if warmup >= hold
        && let Some(v) = warmup_val
    {
        cx.error(
            v.file,
            v.span(),
            format!(
                "in profile `{profile}`, {} ({}) is not shorter than {} ({})",
                WARMUP.what(s.name),
                format_duration(warmup),
                HOLD.what(s.name),
                format_duration(hold)
            ),
            Some("the warmup is excluded from each step's figures, so it must leave some of the hold to measure".to_owned()),
        );
        return None;
    }
    Some(RampConfig {
        steps: steps?,
        hold,
        warmup,
        refine: refine? as u32,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::one_problem;
    use test_case::test_case;

    // Each case is one mistake in `[ramp]`; exactly one problem must be reported, at the given place.
    #[test_case("[ramp]\nhold = 5\n", 7, 8, "expected a duration like \"30s\", found integer 5", None; "duration given as integer")]
    #[test_case("[ramp]\nhold = \"5 parsecs\"\n", 7, 8, "unknown duration unit `parsecs` in `5 parsecs`", Some("use ns, us, ms, s, m or h"); "unknown duration unit")]
    #[test_case("[ramp]\nhold = \"0s\"\n", 7, 8, "`hold` must be longer than zero", None; "zero hold")]
    #[test_case("[ramp]\nsteps = [\"50%\", \"25%\"]\n", 7, 17, "ramp steps must increase", Some("list them from the lightest load to the heaviest"); "steps not increasing")]
    #[test_case("[ramp]\nsteps = []\n", 7, 9, "`steps` lists no steps", None; "no steps")]
    #[test_case("[ramp]\nrefine = -1\n", 7, 10, "`refine` must be between 0 and 20, found -1", None; "negative refine")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(text, line, col, message, help);
    }
}
