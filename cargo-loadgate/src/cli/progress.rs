//! What `cargo loadgate run` shows while it runs: on a terminal, a progress bar per phase (the
//! step, offered and achieved rate, the current window's p99, elapsed of total) with each step's
//! result printed above it; anywhere else (CI logs, pipes), exactly one plain line per phase start
//! and per step, and nothing per second.
//!
//! The decision is a pure function of the environment ([`OutputMode::decide`]). Colour follows
//! <https://no-color.org>: only on a terminal, never when `NO_COLOR` is set to a non-empty value,
//! and sparingly — the word that says whether a step held and the verdict's word.

use crate::config::format_duration;
use crate::engine::PhaseSpec;
use crate::measure::Progress;
use crate::plan::{StepRecord, StepStatus, format_rate};
use crate::result::{Verdict, VerdictOutcome};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::ffi::OsStr;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How one output stream is written: with live bars, with colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputMode {
    /// Draw progress bars that redraw in place (a terminal that understands cursor movement).
    pub bars: bool,
    /// Colour the few words that carry a decision.
    pub colour: bool,
}

impl OutputMode {
    /// Decides from whether the stream is a terminal, `TERM` and `NO_COLOR`. A `dumb` terminal
    /// (Emacs shells, some CI log viewers that allocate a pty) understands neither cursor
    /// movement nor colour; `NO_COLOR` turns colour off when set and not empty.
    pub fn decide(is_terminal: bool, term: Option<&OsStr>, no_color: Option<&OsStr>) -> Self {
        let capable = is_terminal && term.is_none_or(|t| t != "dumb");
        Self {
            bars: capable,
            colour: capable && no_color.is_none_or(OsStr::is_empty),
        }
    }

    /// The mode of standard error in this process's environment.
    pub fn stderr() -> Self {
        Self::from_env(std::io::stderr().is_terminal())
    }

    /// The mode of standard output in this process's environment.
    pub fn stdout() -> Self {
        Self::from_env(std::io::stdout().is_terminal())
    }

    fn from_env(is_terminal: bool) -> Self {
        Self::decide(
            is_terminal,
            std::env::var_os("TERM").as_deref(),
            std::env::var_os("NO_COLOR").as_deref(),
        )
    }
}

/// The colours used, as SGR codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Colour {
    Green,
    Yellow,
    Red,
}

/// `text` in `colour` when `on`, else `text` unchanged.
fn paint(text: &str, colour: Colour, on: bool) -> String {
    if !on {
        return text.to_owned();
    }
    let code = match colour {
        Colour::Green => 32,
        Colour::Yellow => 33,
        Colour::Red => 31,
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// One line per finished ramp step or bisection point: offered and achieved rate, and whether it
/// held and why not. With `colour`, `held` is green, `broke` yellow (a step that breaks is how the
/// knee is found, not a failure) and `INVALID` red.
pub fn step_line(record: &StepRecord, colour: bool) -> String {
    let verdict = match record.status() {
        StepStatus::Invalid => format!(
            "{} ({})",
            paint("INVALID", Colour::Red, colour),
            record.invalid_reasons.join("; ")
        ),
        StepStatus::GeneratorLimit => format!(
            "{} ({})",
            paint("generator limit", Colour::Yellow, colour),
            record.invalid_reasons.join("; ")
        ),
        StepStatus::Transient => format!(
            "transient: {}",
            record
                .transient
                .as_deref()
                .unwrap_or("held when measured again")
        ),
        StepStatus::Held => paint("held", Colour::Green, colour),
        StepStatus::TooFewRequests => format!(
            "not judged: {}",
            record.held.note.as_deref().unwrap_or("too few requests")
        ),
        StepStatus::Aborted | StepStatus::Broke => format!(
            "{}: {}",
            paint("broke", Colour::Yellow, colour),
            record.held.reasons.join("; ")
        ),
    };
    format!(
        "{}: offered {}, achieved {}: {verdict}",
        record.phase,
        format_rate(record.offered_rate_per_sec),
        format_rate(record.achieved_rate_per_sec)
    )
}

/// The line after the spike phase: its admission behaviour and time to stable SLO.
pub fn spike_line(spike: &crate::plan::SpikeOutcome) -> String {
    crate::report::spike_sentence(spike)
}

/// The line that announces a phase: its session rate, the request rate that implies, how long it
/// is measured and after what warm-up.
pub fn phase_line(spec: &PhaseSpec, offered_rate_per_sec: f64) -> String {
    format!(
        "Running {}: {:.1} sessions/s ≈ {} for {} after a {} warm-up",
        spec.name,
        spec.sessions_per_sec,
        format_rate(offered_rate_per_sec),
        format_duration(spec.duration),
        format_duration(spec.warmup)
    )
}

/// Colours the verdict's word in the text `gate::render_verdict` made (`verdict: PASS: …`): pass
/// green, regression red, inconclusive and no baseline yellow. Without `colour`, or when the
/// text does not hold the word, the text comes back unchanged.
pub fn paint_verdict(rendered: &str, verdict: &Verdict, colour: bool) -> String {
    let tint = match verdict.outcome {
        VerdictOutcome::Pass => Colour::Green,
        VerdictOutcome::Regression => Colour::Red,
        VerdictOutcome::Inconclusive | VerdictOutcome::NoBaseline => Colour::Yellow,
    };
    let word = super::gate::verdict_word(verdict.outcome);
    if !colour {
        return rendered.to_owned();
    }
    rendered.replacen(
        &format!("verdict: {word}:"),
        &format!("verdict: {}:", paint(&word, tint, true)),
        1,
    )
}

/// What a ramp step, bisection point or the soak is called on its bar: `ramp 3/5`, `bisect 2/3`,
/// `soak`. `ramp_index` counts the ramp steps started so far, this one included.
fn step_label(phase: &str, ramp_index: usize, ramp_total: usize, refine_total: u32) -> String {
    if phase.starts_with("ramp-") {
        format!("ramp {ramp_index}/{ramp_total}")
    } else if let Some(point) = phase.strip_prefix("refine-") {
        format!("bisect {point}/{refine_total}")
    } else {
        phase.to_owned()
    }
}

/// The counters of one progress report, kept to turn the next one into rates.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Counts {
    elapsed: Duration,
    sent: u64,
    answered: u64,
    dropped: u64,
}

impl Counts {
    fn of(p: &Progress) -> Self {
        Self {
            elapsed: p.elapsed,
            sent: p.sent,
            answered: p.answered,
            dropped: p.dropped,
        }
    }
}

/// Offered (sent or dropped) and achieved (sent) requests per second between two reports.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rates {
    offered: f64,
    achieved: f64,
}

/// The rates between `before` and `now`, or `None` when no time passed.
fn rates_between(before: Counts, now: Counts) -> Option<Rates> {
    let secs = now.elapsed.saturating_sub(before.elapsed).as_secs_f64();
    if secs <= 0.0 {
        return None;
    }
    let sent = now.sent.saturating_sub(before.sent) as f64;
    let answered = now.answered.saturating_sub(before.answered) as f64;
    let dropped = now.dropped.saturating_sub(before.dropped) as f64;
    Some(Rates {
        offered: (sent + dropped) / secs,
        achieved: answered / secs,
    })
}

/// The text beside a phase's bar: elapsed of total (first, so that a narrow terminal cuts the
/// figures rather than the time), whether the warm-up runs, the offered and achieved rates since
/// the last report, and the p99 latency (from the intended send time) of the window that closed
/// with this report when one did.
fn bar_message(p: &Progress, rates: Option<Rates>, total: Duration) -> String {
    let mut text = format!("{:.1}/{:.1}s", p.elapsed.as_secs_f64(), total.as_secs_f64());
    if p.warming_up {
        text.push_str(" warm-up");
    }
    if let Some(r) = rates {
        text.push_str(&format!(
            " offered {} req/s, achieved {}",
            format_rate(r.offered),
            format_rate(r.achieved)
        ));
    }
    if let Some(w) = p.window.as_ref().filter(|_| !p.warming_up) {
        text.push_str(&format!(", p99 {:.1} ms", w.p99.as_secs_f64() * 1e3));
    }
    if p.dropped > 0 {
        text.push_str(&format!(", {} dropped", p.dropped));
    }
    text
}

/// The live view of one phase, handed to the generator thread. It is updated once a second from
/// the engine's progress hook (indicatif limits the drawing rate); in plain mode it does nothing.
#[derive(Clone, Debug)]
pub struct PhaseBar {
    bar: Option<ProgressBar>,
    total: Duration,
    /// The previous report's counters (only the generator thread reports; the lock is never
    /// contended).
    before: Arc<Mutex<Counts>>,
}

impl PhaseBar {
    /// A view that shows nothing.
    pub fn none() -> Self {
        Self {
            bar: None,
            total: Duration::ZERO,
            before: Arc::default(),
        }
    }

    /// Shows the phase's live figures.
    pub fn update(&self, p: &Progress) {
        if let Some(bar) = &self.bar {
            let now = Counts::of(p);
            let before = std::mem::replace(
                &mut *self.before.lock().unwrap_or_else(PoisonError::into_inner),
                now,
            );
            bar.set_message(bar_message(p, rates_between(before, now), self.total));
            bar.set_position(u64::try_from(p.elapsed.as_millis()).unwrap_or(u64::MAX));
        }
    }
}

/// The progress display of one run: phase start lines, step lines, and on a terminal the bar of
/// the running phase. Shared between the plan's observer and the phase runner (both on the run's
/// task); the bar itself is updated from the generator thread through a [`PhaseBar`].
#[derive(Debug)]
pub struct RunDisplay {
    mode: OutputMode,
    ramp_total: usize,
    refine_total: u32,
    state: Mutex<DisplayState>,
}

#[derive(Debug, Default)]
struct DisplayState {
    /// The running phase's view, until its result line is printed.
    current: Option<PhaseBar>,
    /// Ramp steps started so far.
    ramp_started: usize,
}

impl RunDisplay {
    /// A display for a plan of `ramp_total` ramp steps and up to `refine_total` bisection points,
    /// written to standard error in `mode`.
    pub fn new(mode: OutputMode, ramp_total: usize, refine_total: u32) -> Self {
        Self {
            mode,
            ramp_total,
            refine_total,
            state: Mutex::new(DisplayState::default()),
        }
    }

    /// Whether step lines are coloured.
    pub fn colour(&self) -> bool {
        self.mode.colour
    }

    fn state(&self) -> std::sync::MutexGuard<'_, DisplayState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Announces a phase with one line and, on a terminal, starts its bar below that line.
    pub fn phase_starting(&self, spec: &PhaseSpec, offered_rate_per_sec: f64) {
        self.line(&format!("     {}", phase_line(spec, offered_rate_per_sec)));
        if !self.mode.bars {
            return;
        }
        let mut state = self.state();
        if spec.name.starts_with("ramp-") {
            state.ramp_started += 1;
        }
        let total = spec.warmup + spec.duration;
        // Set up hidden, then shown: the first frame drawn is complete.
        let bar = ProgressBar::hidden();
        bar.set_length(u64::try_from(total.as_millis()).unwrap_or(u64::MAX));
        // The template is fixed and known to parse; should it ever not, the default style stays.
        if let Ok(style) = ProgressStyle::with_template("{prefix:>12} [{bar:16}] {wide_msg}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(step_label(
            &spec.name,
            state.ramp_started,
            self.ramp_total,
            self.refine_total,
        ));
        bar.set_message(format!("0.0/{:.1}s starting", total.as_secs_f64()));
        bar.set_draw_target(ProgressDrawTarget::stderr());
        state.current = Some(PhaseBar {
            bar: Some(bar),
            total,
            before: Arc::default(),
        });
    }

    /// The view of the running phase, for the generator thread.
    pub fn phase_bar(&self) -> PhaseBar {
        self.state().current.clone().unwrap_or_else(PhaseBar::none)
    }

    /// Prints a line to standard error. A bar still shown belongs to a phase that is over (lines
    /// come between phases), so it is cleared first and the line stays in the scroll-back.
    pub fn line(&self, text: &str) {
        self.clear();
        eprintln!("{text}");
    }

    /// Removes the bar of the last phase, if one is shown.
    pub fn clear(&self) {
        if let Some(PhaseBar { bar: Some(bar), .. }) = self.state().current.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for RunDisplay {
    /// A run that ends with an error leaves no half-drawn bar above its error message.
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Window;
    use crate::plan::{StepJudgement, StepKind};
    use test_case::test_case;

    #[test_case(true, Some("xterm-256color"), None, true, true; "a terminal")]
    #[test_case(true, None, None, true, true; "a terminal without TERM")]
    #[test_case(false, Some("xterm-256color"), None, false, false; "a pipe or CI log")]
    #[test_case(true, Some("dumb"), None, false, false; "a dumb terminal")]
    #[test_case(true, Some("xterm"), Some("1"), true, false; "NO_COLOR set")]
    #[test_case(true, Some("xterm"), Some(""), true, true; "NO_COLOR empty counts as unset")]
    #[test_case(false, Some("xterm"), Some(""), false, false; "no colour into a pipe")]
    fn the_mode_follows_the_terminal_term_and_no_color(
        is_terminal: bool,
        term: Option<&str>,
        no_color: Option<&str>,
        bars: bool,
        colour: bool,
    ) {
        assert_eq!(
            OutputMode::decide(is_terminal, term.map(OsStr::new), no_color.map(OsStr::new)),
            OutputMode { bars, colour }
        );
    }

    fn record(valid: bool, holds: bool) -> StepRecord {
        StepRecord {
            phase: "ramp-50%".to_owned(),
            kind: StepKind::Step,
            fraction: 0.5,
            sessions_per_sec: 10.0,
            offered_rate_per_sec: 123.4,
            model_rate_per_sec: 125.0,
            achieved_rate_per_sec: 122.9,
            held: StepJudgement {
                holds,
                reasons: if holds {
                    Vec::new()
                } else {
                    vec!["`landing` p99 340 ms > 200 ms".to_owned()]
                },
                unjudged: Vec::new(),
                ..StepJudgement::default()
            },
            valid,
            invalid_reasons: if valid {
                Vec::new()
            } else {
                vec!["pacing lag p99 80 ms > 50 ms".to_owned()]
            },
            aborted: None,
            operations: Vec::new(),
            lag_p99: Duration::from_millis(1),
            dropped: 0,
            confirms: None,
            transient: None,
            generator_limit: false,
            generator_busy: None,
        }
    }

    #[test]
    fn plain_step_lines_are_what_ci_logs_show() {
        assert_eq!(
            step_line(&record(true, true), false),
            "ramp-50%: offered 123, achieved 123: held"
        );
        assert_eq!(
            step_line(&record(true, false), false),
            "ramp-50%: offered 123, achieved 123: broke: `landing` p99 340 ms > 200 ms"
        );
        assert_eq!(
            step_line(&record(false, false), false),
            "ramp-50%: offered 123, achieved 123: INVALID (pacing lag p99 80 ms > 50 ms)"
        );
    }

    #[test]
    fn colour_touches_only_the_decision_word() {
        assert_eq!(
            step_line(&record(true, true), true),
            "ramp-50%: offered 123, achieved 123: \x1b[32mheld\x1b[0m"
        );
        assert_eq!(
            step_line(&record(true, false), true),
            "ramp-50%: offered 123, achieved 123: \x1b[33mbroke\x1b[0m: `landing` p99 340 ms > 200 ms"
        );
        assert!(step_line(&record(false, false), true).contains("\x1b[31mINVALID\x1b[0m ("));
    }

    #[test]
    fn the_verdict_word_is_coloured_where_gate_renders_it() {
        let verdict = Verdict::no_baseline(vec!["no baseline stored for 9c41d07".to_owned()]);
        let rendered = super::super::gate::render_verdict(&[], None, &verdict);
        assert_eq!(paint_verdict(&rendered, &verdict, false), rendered);
        let painted = paint_verdict(&rendered, &verdict, true);
        assert!(
            painted.contains("verdict: \x1b[33mNO BASELINE\x1b[0m: no baseline matches"),
            "{painted:?}"
        );
    }

    #[test]
    fn the_phase_line_names_rate_duration_and_warm_up() {
        let spec = PhaseSpec {
            name: "ramp-25%".to_owned(),
            sessions_per_sec: 5.0,
            duration: Duration::from_secs(2),
            warmup: Duration::from_millis(500),
            seed: 7,
            first_session: 0,
            keep_window_histograms: false,
        };
        assert_eq!(
            phase_line(&spec, 61.7),
            "Running ramp-25%: 5.0 sessions/s ≈ 61.7 for 2s after a 500ms warm-up"
        );
    }

    #[test]
    fn bars_are_labelled_by_step() {
        assert_eq!(step_label("ramp-50%", 3, 5, 2), "ramp 3/5");
        assert_eq!(step_label("refine-2", 5, 5, 3), "bisect 2/3");
        assert_eq!(step_label("soak", 5, 5, 3), "soak");
    }

    #[test]
    fn rates_come_from_the_counters_between_two_reports() {
        let at = |ms, sent, answered, dropped| Counts {
            elapsed: Duration::from_millis(ms),
            sent,
            answered,
            dropped,
        };
        // Achieved counts answers: past the knee they fall behind what was sent.
        assert_eq!(
            rates_between(at(1000, 100, 90, 0), at(2000, 220, 170, 10)),
            Some(Rates {
                offered: 130.0,
                achieved: 80.0
            })
        );
        assert_eq!(
            rates_between(Counts::default(), at(500, 50, 50, 0)),
            Some(Rates {
                offered: 100.0,
                achieved: 100.0
            })
        );
        assert_eq!(rates_between(at(1000, 1, 1, 0), at(1000, 1, 1, 0)), None);
    }

    #[test]
    fn the_bar_message_shows_time_then_rates_and_p99() {
        let mut p = Progress {
            phase: "ramp-50%".to_owned(),
            elapsed: Duration::from_millis(1000),
            warming_up: true,
            sent: 80,
            answered: 78,
            in_flight: 2,
            dropped: 0,
            window: None,
        };
        let total = Duration::from_millis(4500);
        let rates = Some(Rates {
            offered: 123.4,
            achieved: 120.0,
        });
        assert_eq!(bar_message(&p, None, total), "1.0/4.5s warm-up");
        assert_eq!(
            bar_message(&p, rates, total),
            "1.0/4.5s warm-up offered 123 req/s, achieved 120"
        );
        p.warming_up = false;
        p.elapsed = Duration::from_millis(3000);
        p.window = Some(Window {
            start: Duration::from_secs(1),
            length: Duration::from_secs(1),
            sent: 120,
            completed: 120,
            errors: 0,
            answered: Some(120),
            p50: Duration::from_micros(900),
            p99: Duration::from_micros(4100),
            max: Duration::from_millis(7),
            dropped: 0,
            lag_p99: Duration::ZERO,
            generator_busy: None,
        });
        assert_eq!(
            bar_message(&p, rates, total),
            "3.0/4.5s offered 123 req/s, achieved 120, p99 4.1 ms"
        );
        p.dropped = 5;
        p.window = None;
        assert_eq!(
            bar_message(&p, rates, total),
            "3.0/4.5s offered 123 req/s, achieved 120, 5 dropped"
        );
    }

    #[test]
    fn a_bar_keeps_the_counters_of_the_last_report() {
        let bar = PhaseBar {
            bar: Some(ProgressBar::hidden()),
            total: Duration::from_secs(3),
            before: Arc::default(),
        };
        let p = |ms, sent| Progress {
            phase: "soak".to_owned(),
            elapsed: Duration::from_millis(ms),
            warming_up: false,
            sent,
            answered: sent,
            in_flight: 0,
            dropped: 0,
            window: None,
        };
        bar.update(&p(1000, 100));
        bar.update(&p(2000, 250));
        assert_eq!(
            *bar.before.lock().unwrap(),
            Counts {
                elapsed: Duration::from_millis(2000),
                sent: 250,
                answered: 250,
                dropped: 0
            }
        );
        assert_eq!(bar.bar.as_ref().map(ProgressBar::position), Some(2000));
    }

    #[test]
    fn a_plain_display_hands_out_views_that_show_nothing() {
        let display = RunDisplay::new(
            OutputMode {
                bars: false,
                colour: false,
            },
            3,
            1,
        );
        let spec = PhaseSpec {
            name: "ramp-25%".to_owned(),
            sessions_per_sec: 5.0,
            duration: Duration::from_secs(2),
            warmup: Duration::from_millis(500),
            seed: 7,
            first_session: 0,
            keep_window_histograms: false,
        };
        display.phase_starting(&spec, 61.7);
        assert!(display.phase_bar().bar.is_none());
        assert!(!display.colour());
    }
}
