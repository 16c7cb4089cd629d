//! `[paired]`: how the head is compared with its base, and the design of a paired comparison:
//! base and head booted side by side, the load alternating between them in blocks.

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::duration;
use crate::config::source::{
    Cx, Val, boolean, integer_in, keyword, positive_duration, positive_share,
};
use crate::config::types::{ComparisonMode, PairedConfig};
use crate::config::units::format_duration;
use std::time::Duration;

/// `paired.mode`.
pub(crate) const MODE: Key<ComparisonMode> = Key::qualified(
    "mode",
    "`auto`, `paired` or `stored`: base and head measured side by side in one job, or the head \
     compared with a stored baseline; `auto` pairs when the base can be built",
    mode,
);
/// `paired.pairs`.
pub(crate) const PAIRS: Key<i64> = Key::qualified(
    "pairs",
    "how many block pairs (the most, with `adaptive`)",
    |cx, v, what| integer_in(cx, v, what, 2..=1000),
);
/// `paired.block`.
pub(crate) const BLOCK: Key<Duration> = Key::qualified(
    "block",
    "the measured length of one block",
    positive_duration,
);
/// `paired.warmup`.
pub(crate) const WARMUP: Key<Duration> = Key::qualified(
    "warmup",
    "discarded at the start of every block",
    |cx, v, _| duration(cx, v),
);
/// `paired.at`.
pub(crate) const AT: Key<f64> = Key::qualified(
    "at",
    "the blocks' offered load, as a share of the base's capacity",
    |cx, v, what| positive_share(cx, v, what, None),
);
/// `paired.budget`.
pub(crate) const BUDGET: Key<Duration> = Key::qualified(
    "budget",
    "the most wall time the blocks may take: fewer pairs when it is short (optional)",
    positive_duration,
);
/// `paired.adaptive`.
pub(crate) const ADAPTIVE: Key<bool> = Key::qualified(
    "adaptive",
    "add pairs until the verdict decides or `pairs` is reached (a sequential design)",
    |cx, v, _| boolean(cx, v),
);

/// `[paired]`.
pub(crate) const SECTION: Section = Section {
    name: "paired",
    keys: &[&MODE, &PAIRS, &BLOCK, &WARMUP, &AT, &BUDGET, &ADAPTIVE],
    check_table: None,
};

fn mode(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<ComparisonMode> {
    let modes = [
        ComparisonMode::Auto,
        ComparisonMode::Paired,
        ComparisonMode::Stored,
    ];
    let choices = modes.map(|m| (m.as_str(), m));
    keyword(cx, v, &choices, "unknown mode", what)
}

/// Pass 2: `[paired]` of one profile; the warm-up must leave some of the block.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>) -> Option<PairedConfig> {
    let s = &SECTION;
    let mode = look.need(cx, s, &MODE);
    let pairs = look.need(cx, s, &PAIRS);
    let block = look.need(cx, s, &BLOCK);
    let warmup = look.need(cx, s, &WARMUP);
    let at = look.need(cx, s, &AT);
    let budget = look.read(cx, s, &BUDGET);
    let adaptive = look.need(cx, s, &ADAPTIVE);
    let budget = match budget {
        Some(b) => Some(b?),
        None => None,
    };
    let (block, warmup) = (block?, warmup?);
    if let Some(budget) = budget {
        let one_pair = 2 * (block + warmup);
        if budget < 2 * one_pair
            && let Some(v) = look.get(&[s.name, BUDGET.name])
        {
            cx.error(
                v.file,
                v.span(),
                format!(
                    "`paired.budget` of {} leaves fewer than 2 pairs of blocks ({} each)",
                    format_duration(budget),
                    format_duration(one_pair)
                ),
                Some("raise the budget, or shorten `paired.block` and `paired.warmup`".to_owned()),
            );
            return None;
        }
    }
    Some(PairedConfig {
        mode: mode?,
        pairs: usize::try_from(pairs?).ok()?,
        block,
        warmup,
        at: at?,
        budget,
        adaptive: adaptive?,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::types::ComparisonMode;
    use crate::config::validate::testing::{one_problem, parse, with_workload};
    use crate::result::{MeasurementMode, config_hash};
    use std::time::Duration;
    use test_case::test_case;

    // Each case is one mistake in `[paired]`; exactly one problem must be reported, at the given
    // place.
    #[test_case("[paired]\nmode = \"pared\"\n", 7, 8, "unknown mode `pared` in `paired.mode`", Some("did you mean `paired`?"); "unknown mode with suggestion")]
    #[test_case("[paired]\nmode = \"both\"\n", 7, 8, "unknown mode `both` in `paired.mode`", Some("one of `auto`, `paired`, `stored`"); "unknown mode without suggestion")]
    #[test_case("[paired]\nmode = true\n", 7, 8, "expected one of \"auto\", \"paired\", \"stored\", found boolean true", None; "mode not a string")]
    #[test_case("[paired]\npairs = 1\n", 7, 9, "`paired.pairs` must be between 2 and 1000, found 1", None; "one pair")]
    #[test_case("[paired]\nbudget = \"20s\"\n", 7, 10, "`paired.budget` of 20s leaves fewer than 2 pairs of blocks (14s each)", Some("raise the budget, or shorten `paired.block` and `paired.warmup`"); "budget below two pairs")]
    #[test_case("[paired]\nblock = \"2s\"\nwarmup = \"500ms\"\nbudget = \"9s\"\n", 9, 10, "`paired.budget` of 9s leaves fewer than 2 pairs of blocks (5s each)", Some("raise the budget, or shorten `paired.block` and `paired.warmup`"); "budget below two pairs of short blocks")]
    #[test_case("[paired]\nadaptive = \"yes\"\n", 7, 12, "expected true or false, found string \"yes\"", None; "adaptive as a string")]
    #[test_case("[paired]\nblock = \"0s\"\n", 7, 9, "`paired.block` must be longer than zero", None; "empty block")]
    #[test_case("[paired]\nat = \"0%\"\n", 7, 6, "`paired.at` must be more than 0%", None; "no load")]
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
    fn the_defaults_and_a_profiles_values_are_read() {
        let cfg = parse(&with_workload(""), "default").unwrap();
        let p = &cfg.paired;
        assert_eq!(p.mode, ComparisonMode::Auto);
        assert_eq!(
            (p.pairs, p.block, p.warmup),
            (12, Duration::from_secs(6), Duration::from_secs(1))
        );
        assert_eq!((p.at, p.budget, p.adaptive), (0.6, None, false));
        let text = with_workload(
            "[profile.ci.paired]\nmode = \"paired\"\npairs = 20\nbudget = \"28s\"\nadaptive = true\n",
        );
        let ci = parse(&text, "ci").unwrap();
        assert_eq!(ci.paired.mode, ComparisonMode::Paired);
        assert_eq!(ci.paired.pairs, 20);
        // Exactly 2 pairs of 2 × (6s + 1s) fit.
        assert_eq!(ci.paired.budget, Some(Duration::from_secs(28)));
        assert!(ci.paired.adaptive);
        assert_eq!(parse(&text, "default").unwrap().paired, cfg.paired);
    }

    /// `[paired]` designs the blocks of a paired run only: a stored run's config hash, and so
    /// every stored baseline, ignores it.
    #[test]
    fn paired_values_change_only_the_paired_config_hash() {
        let plain = parse(&with_workload(""), "default").unwrap();
        let changed = parse(
            &with_workload("[paired]\nmode = \"stored\"\npairs = 30\nblock = \"3s\"\n"),
            "default",
        )
        .unwrap();
        assert_ne!(plain.paired, changed.paired);
        let (stored, paired) = (MeasurementMode::Stored, MeasurementMode::Paired);
        assert_eq!(config_hash(&plain, stored), config_hash(&changed, stored));
        assert_ne!(config_hash(&plain, paired), config_hash(&changed, paired));
        assert_ne!(config_hash(&plain, stored), config_hash(&plain, paired));
    }
}
