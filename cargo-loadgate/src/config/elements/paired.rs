//! `[paired]`: how the head is compared with its base, and the design of a paired comparison:
//! base and head booted side by side, the load alternating between them in blocks.

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::duration;
use crate::config::source::{
    Cx, Val, integer_in, positive_duration, positive_share, string, suggest,
};
use crate::config::types::{ComparisonMode, PairedConfig};
use crate::config::units::format_duration;
use std::time::Duration;

/// The modes, as written.
const MODES: [&str; 3] = ["auto", "paired", "stored"];

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
    boolean,
);

/// `[paired]`.
pub(crate) const SECTION: Section = Section {
    name: "paired",
    keys: &[&MODE, &PAIRS, &BLOCK, &WARMUP, &AT, &BUDGET, &ADAPTIVE],
    check_table: None,
};

fn mode(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<ComparisonMode> {
    let word = string(cx, v, "one of \"auto\", \"paired\", \"stored\"")?;
    match word {
        "auto" => Some(ComparisonMode::Auto),
        "paired" => Some(ComparisonMode::Paired),
        "stored" => Some(ComparisonMode::Stored),
        other => {
            let help = match suggest(other, MODES) {
                Some(s) => format!("did you mean `{s}`?"),
                None => "one of `auto`, `paired`, `stored`".to_owned(),
            };
            cx.error(
                v.file,
                v.span(),
                format!("unknown {what} `{other}`"),
                Some(help),
            );
            None
        }
    }
}

fn boolean(cx: &Cx<'_>, v: Val<'_>, _what: &str) -> Option<bool> {
    match v.get() {
        toml::de::DeValue::Boolean(b) => Some(*b),
        _ => {
            crate::config::source::wrong_type(cx, v, "true or false");
            None
        }
    }
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
