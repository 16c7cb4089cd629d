//! The windowed series: one small record per window (1 s by default) of the measured part of a
//! phase, for slopes and time-to-stable. Memory is one histogram for the open window plus a few
//! numbers per closed window (and its two histograms, where the phase keeps them: below); nothing
//! is kept per request.
//!
//! A generator with several loops (`generator.threads`) keeps one series per loop and merges them
//! window by window ([`WindowMerger`]): counts add, and the percentiles come from the loops'
//! window histograms added together, which each loop hands over as its windows close. Where the
//! phase asks ([`WindowSeries::keep_histograms`]: the shards of `run --shard i/N`), the merged
//! (or one loop's) window histograms stay in the series and are written with it (`histograms`,
//! V2+DEFLATE), so the shards' windows, run in separate processes, merge from them the same way
//! and a merged window's percentiles are exact. Elsewhere they are dropped as each window closes:
//! in memory each is tens of kilobytes, which a long soak would hold for hours.

use super::histogram::LatencyHistogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::time::Duration;

/// Serde helpers writing a `Duration` as fractional milliseconds.
pub mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Writes `value` as fractional milliseconds.
    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(value.as_secs_f64() * 1e3)
    }

    /// Reads fractional milliseconds; negative or non-finite values are rejected.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(ms / 1e3).map_err(serde::de::Error::custom)
    }
}

/// One closed window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Where the window starts, from the start of the measured part of the phase.
    #[serde(rename = "start_ms", with = "millis")]
    pub start: Duration,
    /// The window's length (the last one may be shorter).
    #[serde(rename = "length_ms", with = "millis")]
    pub length: Duration,
    /// Requests sent in the window.
    pub sent: u64,
    /// Requests that got an outcome in the window.
    pub completed: u64,
    /// Of those, the ones that were errors (wrong answers, HTTP and transport errors).
    pub errors: u64,
    /// Of those, the ones answered with an HTTP response (correct, wrong or an HTTP error; not a
    /// timeout or another transport error). `None` in results written before it was recorded
    /// (the key is absent there), so a reader can tell "not recorded" from "no answer".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<u64>,
    /// The median latency, from the intended send time, of requests completed in the window.
    #[serde(rename = "p50_ms", with = "millis")]
    pub p50: Duration,
    /// The 99th percentile latency, from the intended send time, of requests completed in the window.
    #[serde(rename = "p99_ms", with = "millis")]
    pub p99: Duration,
    /// The largest latency, from the intended send time, of requests completed in the window.
    #[serde(rename = "max_ms", with = "millis")]
    pub max: Duration,
    /// Requests that came due in the window and were dropped at the in-flight cap (not in
    /// `completed` or `errors`, which count sent requests). Zero in results written before it was
    /// recorded.
    #[serde(default)]
    pub dropped: u64,
    /// The 99th percentile pacing lag (actual send minus intended send) of requests sent in the
    /// window: the generator's own lateness. Zero in results written before it was recorded.
    #[serde(rename = "lag_p99_ms", with = "millis", default)]
    pub lag_p99: Duration,
    /// The share of one core the generator's loop used over the window (its thread's CPU time over
    /// wall time), when measured: see [`crate::measure::GENERATOR_SATURATED`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_busy: Option<f64>,
}

impl Window {
    /// The answers of the window, zero when they were not recorded (older results).
    pub fn answers(&self) -> u64 {
        self.answered.unwrap_or(0)
    }

    /// Answers received per second in this window: the rate the target achieved, which falls
    /// below the offered rate past its capacity (requests sent per second never does in an open
    /// loop).
    pub fn achieved_rate_per_sec(&self) -> f64 {
        let secs = self.length.as_secs_f64();
        if secs > 0.0 {
            self.answers() as f64 / secs
        } else {
            0.0
        }
    }

    /// The share of the requests that came due in the window and got no correct answer: errors
    /// of sent requests and drops at the in-flight cap, over both. `None` when nothing ended.
    pub fn failure_rate(&self) -> Option<f64> {
        let due = self.completed + self.dropped;
        (due > 0).then(|| (self.errors + self.dropped) as f64 / due as f64)
    }
}

/// A series of windows, filled by events whose times never go backwards.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowSeries {
    /// The length of every window.
    #[serde(rename = "window_ms", with = "millis")]
    pub window: Duration,
    /// The closed windows, in order, without gaps.
    pub windows: Vec<Window>,
    /// The histograms of the closed windows, in order, by index into `windows`: what merging the
    /// series with another's needs ([`WindowMerger`]). Empty in results written before they were
    /// kept, and in a loop's own series while its histograms go to the loops' merge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<WindowHistograms>,
    #[serde(skip)]
    open: Option<OpenWindow>,
    /// The histograms of the closed windows not yet taken ([`WindowSeries::take_histograms`]),
    /// kept only once [`WindowSeries::retain_histograms`] asked for them.
    #[serde(skip)]
    retained: Option<Vec<WindowHistograms>>,
    /// Whether closed windows' histograms are kept in `histograms` ([`WindowSeries::keep_histograms`]).
    #[serde(skip)]
    keep: bool,
}

/// The histograms of one closed window, for merging it with the same window of other loops (or
/// of other shards, read back from their results).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowHistograms {
    /// The window's index in its series.
    pub index: usize,
    /// Latency from the intended send time of the requests completed in the window.
    pub latency: LatencyHistogram,
    /// Pacing lag of the requests sent in the window.
    pub lag: LatencyHistogram,
}

#[derive(Clone, Debug, PartialEq)]
struct OpenWindow {
    index: u64,
    sent: u64,
    completed: u64,
    errors: u64,
    answered: u64,
    dropped: u64,
    latency: LatencyHistogram,
    lag: LatencyHistogram,
}

impl OpenWindow {
    fn new(index: u64) -> Self {
        Self {
            index,
            sent: 0,
            completed: 0,
            errors: 0,
            answered: 0,
            dropped: 0,
            latency: LatencyHistogram::new(),
            lag: LatencyHistogram::new(),
        }
    }
}

impl WindowSeries {
    /// Creates an empty series of windows of length `window` (clamped to at least 1 ms).
    pub fn new(window: Duration) -> Self {
        Self {
            window: window.max(Duration::from_millis(1)),
            windows: Vec::new(),
            histograms: Vec::new(),
            open: None,
            retained: None,
            keep: false,
        }
    }

    /// Keeps the histograms of every window that closes from now on in the series
    /// (`histograms`, written with it), for `cargo loadgate merge` to add the windows of shards
    /// from. Off by default: each costs tens of kilobytes of memory for the whole phase.
    pub fn keep_histograms(&mut self) {
        self.keep = true;
    }

    /// Keeps the histograms of every window that closes from now on, until
    /// [`WindowSeries::take_histograms`] takes them (a loop of several hands them to the merge).
    pub fn retain_histograms(&mut self) {
        self.retained.get_or_insert_with(Vec::new);
    }

    /// The histograms of the windows closed since the last call, in order (none unless
    /// [`WindowSeries::retain_histograms`] was called).
    pub fn take_histograms(&mut self) -> Vec<WindowHistograms> {
        self.retained
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The histograms not taken yet (retained for the loops' merge, or kept in the series), in
    /// order of their windows, and no more from now on.
    pub fn release_histograms(&mut self) -> Vec<WindowHistograms> {
        let mut out = self.retained.take().unwrap_or_default();
        out.append(&mut self.histograms);
        out.sort_by_key(|h| h.index);
        out
    }

    fn index_of(&self, at: Duration) -> u64 {
        u64::try_from(at.as_nanos() / self.window.as_nanos()).unwrap_or(u64::MAX)
    }

    /// The window holding time `at`, opening it (and closing the ones before) as needed.
    fn window_at(&mut self, at: Duration) -> &mut OpenWindow {
        let index = self.index_of(at);
        self.close_before(index);
        self.open.get_or_insert_with(|| OpenWindow::new(index))
    }

    /// Closes every window that ends at or before window `index` starts, filling gaps with empty windows.
    fn close_before(&mut self, index: u64) {
        let next = match &self.open {
            Some(open) if open.index >= index => return,
            Some(_) => {
                let open = self.open.take().expect("checked above");
                let next = open.index + 1;
                self.push(open, self.window);
                next
            }
            None => self.windows.len() as u64,
        };
        for gap in next..index {
            self.push(OpenWindow::new(gap), self.window);
        }
    }

    fn push(&mut self, open: OpenWindow, length: Duration) {
        let start = self
            .window
            .saturating_mul(u32::try_from(open.index).unwrap_or(u32::MAX));
        self.windows.push(Window {
            start,
            length,
            sent: open.sent,
            completed: open.completed,
            errors: open.errors,
            answered: Some(open.answered),
            p50: open.latency.quantile(0.5),
            p99: open.latency.quantile(0.99),
            max: open.latency.max(),
            dropped: open.dropped,
            lag_p99: open.lag.quantile(0.99),
            generator_busy: None,
        });
        let histograms = WindowHistograms {
            index: self.windows.len() - 1,
            latency: open.latency,
            lag: open.lag,
        };
        match &mut self.retained {
            Some(retained) => retained.push(histograms),
            None if self.keep => self.histograms.push(histograms),
            None => {}
        }
    }

    /// Counts a request sent at `at`, `lag` after its intended time.
    pub fn record_sent(&mut self, at: Duration, lag: Duration) {
        let open = self.window_at(at);
        open.sent += 1;
        open.lag.record(lag);
    }

    /// Counts a request that came due at `at` and was dropped at the in-flight cap.
    pub fn record_dropped(&mut self, at: Duration) {
        self.window_at(at).dropped += 1;
    }

    /// Records the generator's busy share on the closed windows from index `from` on (those closed
    /// since the generator's CPU was last read).
    pub fn set_generator_busy(&mut self, from: usize, busy: f64) {
        for w in self.windows.iter_mut().skip(from) {
            w.generator_busy = Some(busy);
        }
    }

    /// Counts a request that got its outcome at `at`, with its latency from the intended send time;
    /// `error` says whether it was one, `answered` whether an HTTP response came back.
    pub fn record_completed(
        &mut self,
        at: Duration,
        latency: Duration,
        error: bool,
        answered: bool,
    ) {
        let open = self.window_at(at);
        open.completed += 1;
        open.errors += u64::from(error);
        open.answered += u64::from(answered);
        open.latency.record(latency);
    }

    /// Answers received before `end` (from the start of the series), counting a window that `end`
    /// cuts by the share of it that lies before `end`.
    pub fn answered_before(&self, end: Duration) -> f64 {
        self.windows
            .iter()
            .take_while(|w| w.start < end)
            .map(|w| {
                let inside = end.saturating_sub(w.start).min(w.length);
                if inside >= w.length || w.length.is_zero() {
                    w.answers() as f64
                } else {
                    w.answers() as f64 * inside.as_secs_f64() / w.length.as_secs_f64()
                }
            })
            .sum()
    }

    /// Closes every window that ended at or before `now`; the window holding `now` stays open.
    pub fn roll_to(&mut self, now: Duration) -> &[Window] {
        let index = self.index_of(now);
        self.close_before(index);
        &self.windows
    }

    /// Closes the open window as the last one, cut at `end`.
    pub fn finish(&mut self, end: Duration) {
        let index = self.index_of(end);
        self.close_before(index);
        let open = self.open.take().unwrap_or_else(|| OpenWindow::new(index));
        let start = self
            .window
            .saturating_mul(u32::try_from(open.index).unwrap_or(u32::MAX));
        let length = end.saturating_sub(start).min(self.window);
        if length > Duration::ZERO || open.completed > 0 || open.sent > 0 || open.dropped > 0 {
            self.push(open, length);
        }
    }
}

/// Merges the windows of several loops index by index: counts are summed, the percentiles of
/// latency and lag are read from the loops' histograms added together (HdrHistogram add, no
/// approximation), and the generator's busy share is the busiest loop's (a loop is the unit that
/// saturates: one loop at 100% of its core is the limit however idle the others are).
#[derive(Debug)]
pub struct WindowMerger {
    loops: usize,
    /// The index of the next window to hand out.
    next: usize,
    partial: BTreeMap<usize, Partial>,
    /// The merged histograms of the windows handed out, in order (only with `keep`).
    merged: Vec<WindowHistograms>,
    /// Whether the merged histograms are kept ([`WindowMerger::keeping_histograms`]).
    keep: bool,
}

#[derive(Debug)]
struct Partial {
    window: Window,
    latency: LatencyHistogram,
    lag: LatencyHistogram,
    parts: usize,
}

impl WindowMerger {
    /// A merger of the windows of `loops` loops.
    pub fn new(loops: usize) -> Self {
        Self {
            loops: loops.max(1),
            next: 0,
            partial: BTreeMap::new(),
            merged: Vec::new(),
            keep: true,
        }
    }

    /// Whether the merged histograms of the windows are kept (the default) for
    /// [`WindowMerger::finish_with_histograms`], or dropped once each window is merged: a
    /// generator's loops keep them only for a shard's result.
    pub fn keeping_histograms(mut self, keep: bool) -> Self {
        self.keep = keep;
        self
    }

    /// Adds one loop's closed window with its histograms.
    pub fn add(&mut self, window: &Window, histograms: WindowHistograms) {
        let WindowHistograms {
            index,
            latency,
            lag,
        } = histograms;
        match self.partial.entry(index) {
            Entry::Vacant(slot) => {
                slot.insert(Partial {
                    window: window.clone(),
                    latency,
                    lag,
                    parts: 1,
                });
            }
            Entry::Occupied(mut slot) => {
                let p = slot.get_mut();
                let w = &mut p.window;
                w.length = w.length.max(window.length);
                w.sent += window.sent;
                w.completed += window.completed;
                w.errors += window.errors;
                w.answered = match (w.answered, window.answered) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
                };
                w.dropped += window.dropped;
                w.generator_busy = match (w.generator_busy, window.generator_busy) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                p.latency.merge(&latency);
                p.lag.merge(&lag);
                p.parts += 1;
            }
        }
    }

    /// The merged windows that every loop has closed, in order from the first not handed out yet.
    pub fn complete(&mut self) -> Vec<Window> {
        let mut out = Vec::new();
        while self
            .partial
            .get(&self.next)
            .is_some_and(|p| p.parts >= self.loops)
        {
            out.extend(self.take_next());
        }
        out
    }

    /// Every window left, in order, once the loops have ended: a loop whose series ended earlier
    /// (its phase was cut sooner) simply adds nothing to the last windows.
    pub fn finish(mut self) -> Vec<Window> {
        self.finish_with_histograms().0
    }

    /// [`WindowMerger::finish`], with the merged histograms of every window handed out, then and
    /// before, by index.
    pub fn finish_with_histograms(&mut self) -> (Vec<Window>, Vec<WindowHistograms>) {
        let mut windows = Vec::new();
        for (index, p) in std::mem::take(&mut self.partial) {
            let (window, histograms) = p.merged(index);
            windows.push(window);
            if self.keep {
                self.merged.push(histograms);
            }
        }
        (windows, std::mem::take(&mut self.merged))
    }

    fn take_next(&mut self) -> Option<Window> {
        let p = self.partial.remove(&self.next)?;
        let (window, histograms) = p.merged(self.next);
        self.next += 1;
        if self.keep {
            self.merged.push(histograms);
        }
        Some(window)
    }
}

impl Partial {
    fn merged(self, index: usize) -> (Window, WindowHistograms) {
        let window = Window {
            p50: self.latency.quantile(0.5),
            p99: self.latency.quantile(0.99),
            max: self.latency.max(),
            lag_p99: self.lag.quantile(0.99),
            ..self.window
        };
        let histograms = WindowHistograms {
            index,
            latency: self.latency,
            lag: self.lag,
        };
        (window, histograms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn events_fall_into_their_windows_and_gaps_are_filled() {
        let mut s = WindowSeries::new(Duration::from_secs(1));
        s.record_sent(100 * MS, MS);
        s.record_completed(150 * MS, 50 * MS, false, true);
        s.record_sent(900 * MS, 3 * MS);
        s.record_dropped(950 * MS);
        // Nothing in window 1; window 2 gets an error.
        s.record_completed(2_500 * MS, 1_600 * MS, true, false);
        s.finish(2_750 * MS);
        let w = &s.windows;
        assert_eq!(w.len(), 3);
        assert_eq!((w[0].sent, w[0].completed, w[0].errors), (2, 1, 0));
        assert_eq!((w[0].dropped, w[0].lag_p99.as_millis()), (1, 3));
        assert_eq!(w[0].failure_rate(), Some(0.5), "one answer, one drop");
        assert_eq!(w[1].failure_rate(), None);
        assert_eq!((w[1].sent, w[1].completed), (0, 0));
        assert_eq!((w[2].completed, w[2].errors), (1, 1));
        assert_eq!(w[2].start, 2_000 * MS);
        assert_eq!(w[2].length, 750 * MS);
        // Two sent, one answered: the achieved rate counts answers.
        assert!((w[0].achieved_rate_per_sec() - 1.0).abs() < 1e-9);
        assert_eq!(w[2].answered, Some(0), "a transport error is no answer");
        let p99 = w[2].p99.as_millis();
        assert!((1_599..=1_601).contains(&p99), "{p99}");
    }

    #[test]
    fn roll_to_closes_finished_windows_only() {
        let mut s = WindowSeries::new(Duration::from_secs(1));
        s.record_sent(10 * MS, Duration::ZERO);
        assert_eq!(s.roll_to(999 * MS).len(), 0);
        assert_eq!(s.roll_to(3_000 * MS).len(), 3);
        s.record_sent(3_100 * MS, Duration::ZERO);
        s.finish(3_500 * MS);
        assert_eq!(s.windows.len(), 4);
        assert_eq!(s.windows[3].sent, 1);
    }

    #[test]
    fn percentiles_per_window_are_monotonic() {
        let mut s = WindowSeries::new(Duration::from_secs(1));
        for i in 1..=1000u64 {
            s.record_completed(
                Duration::from_micros(i * 900),
                Duration::from_micros(i * 37),
                false,
                true,
            );
        }
        s.finish(Duration::from_secs(1));
        let w = &s.windows[0];
        assert!(w.p50 <= w.p99 && w.p99 <= w.max, "{w:?}");
    }

    #[test]
    fn series_round_trips_through_json() {
        let mut s = WindowSeries::new(Duration::from_secs(1));
        s.record_completed(10 * MS, 5 * MS, false, true);
        s.finish(Duration::from_secs(1));
        let json = serde_json::to_string(&s).expect("serializes");
        let back: WindowSeries = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back.windows.len(), 1);
        assert_eq!(back.windows[0].completed, 1);
        assert_eq!(back.windows[0].answered, Some(1));
    }

    #[test]
    fn windows_written_before_answers_were_counted_still_load() {
        let json = r#"{"start_ms":0.0,"length_ms":1000.0,"sent":3,"completed":3,"errors":0,
            "p50_ms":1.0,"p99_ms":2.0,"max_ms":2.0}"#;
        let w: Window = serde_json::from_str(json).expect("deserializes");
        assert_eq!(w.answered, None);
        assert_eq!(w.answers(), 0);
        // Written back as it was read: without the key, not as zero answers.
        let back = serde_json::to_value(&w).expect("serializes");
        assert!(back.get("answered").is_none(), "{back}");
        let none_answered = Window {
            answered: Some(0),
            ..w
        };
        let back = serde_json::to_value(&none_answered).expect("serializes");
        assert_eq!(back["answered"], 0);
        assert_eq!(
            (w.dropped, w.lag_p99, w.generator_busy),
            (0, Duration::ZERO, None)
        );
    }

    #[test]
    fn answers_before_an_end_count_the_cut_window_by_its_share() {
        let mut s = WindowSeries::new(Duration::from_secs(1));
        for at in [100, 200, 1_100, 1_200, 1_300, 1_400, 2_500] {
            s.record_completed(at * MS, MS, false, true);
        }
        s.finish(3_000 * MS);
        assert!((s.answered_before(2_000 * MS) - 6.0).abs() < 1e-9);
        assert!((s.answered_before(1_500 * MS) - 4.0).abs() < 1e-9);
        assert!((s.answered_before(Duration::from_secs(10)) - 7.0).abs() < 1e-9);
        assert!(s.answered_before(Duration::ZERO).abs() < 1e-9);
    }

    /// Two loops' series of the same phase: loop A answers fast, loop B slow in window 1.
    fn two_loops() -> (WindowSeries, WindowSeries) {
        let mut a = WindowSeries::new(Duration::from_secs(1));
        let mut b = WindowSeries::new(Duration::from_secs(1));
        a.retain_histograms();
        b.retain_histograms();
        for i in 0..100u64 {
            let at = Duration::from_millis(i * 20);
            a.record_sent(at, Duration::from_micros(50));
            a.record_completed(at, MS, false, true);
            b.record_sent(at, if at >= 1_000 * MS { 30 * MS } else { MS });
            let slow = at >= 1_000 * MS;
            b.record_completed(at, if slow { 100 * MS } else { MS }, slow, true);
        }
        b.record_dropped(1_500 * MS);
        a.finish(2_000 * MS);
        b.finish(2_000 * MS);
        (a, b)
    }

    #[test]
    fn merged_windows_sum_counts_and_read_percentiles_from_the_added_histograms() {
        let (mut a, mut b) = two_loops();
        let mut merger = WindowMerger::new(2);
        let ha = a.take_histograms();
        for (w, h) in a.windows.iter().zip(ha) {
            merger.add(w, h);
        }
        // Only loop A has reported: nothing is complete yet.
        assert_eq!(merger.complete(), vec![]);
        let hb = b.take_histograms();
        assert_eq!(hb.len(), 2, "every closed window's histograms were kept");
        assert!(b.take_histograms().is_empty(), "taken once");
        merger.add(&b.windows[0], hb[0].clone());
        let first = merger.complete();
        assert_eq!(first.len(), 1);
        merger.add(&b.windows[1], hb[1].clone());
        let merged: Vec<Window> = first.into_iter().chain(merger.finish()).collect();
        assert_eq!(merged.len(), 2);
        let (w0, w1) = (&merged[0], &merged[1]);
        assert_eq!((w0.sent, w0.completed, w0.errors), (100, 100, 0));
        assert_eq!(
            (w1.sent, w1.completed, w1.errors, w1.dropped),
            (100, 100, 50, 1)
        );
        assert_eq!(w1.answered, Some(100));
        // Window 1: half the answers took 100 ms. The merged median is a fast one, the merged p99
        // a slow one: neither loop's own p99 (1 ms and 100 ms) nor their mean.
        let mut both = LatencyHistogram::new();
        for _ in 0..50 {
            both.record(MS);
            both.record(100 * MS);
        }
        assert_eq!(w1.p50, both.quantile(0.5));
        assert_eq!(w1.p99, both.quantile(0.99));
        assert_eq!(w1.max, both.max());
        assert!(w1.p99 >= 99 * MS && w1.p50 <= 2 * MS, "{w1:?}");
        // Lag: half of window 1's sends were 30 ms late.
        assert!(w1.lag_p99 >= 29 * MS, "{w1:?}");
        assert!(w0.lag_p99 <= 2 * MS, "{w0:?}");
    }

    #[test]
    fn the_merged_busy_share_is_the_busiest_loops() {
        let window = |busy: Option<f64>| Window {
            start: Duration::ZERO,
            length: Duration::from_secs(1),
            sent: 1,
            completed: 1,
            errors: 0,
            answered: Some(1),
            p50: MS,
            p99: MS,
            max: MS,
            dropped: 0,
            lag_p99: Duration::ZERO,
            generator_busy: busy,
        };
        let h = || WindowHistograms {
            index: 0,
            latency: LatencyHistogram::new(),
            lag: LatencyHistogram::new(),
        };
        let mut merger = WindowMerger::new(3);
        merger.add(&window(Some(0.2)), h());
        merger.add(&window(Some(0.95)), h());
        merger.add(&window(None), h());
        let merged = merger.complete();
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].generator_busy, Some(0.95));
        assert_eq!(merged[0].sent, 3);
    }

    #[test]
    fn a_series_keeps_its_histograms_in_itself_unless_asked_to_hand_them_over() {
        // Not kept unless asked: they would cost memory for the whole phase.
        let mut plain = WindowSeries::new(Duration::from_secs(1));
        plain.record_completed(10 * MS, MS, false, true);
        plain.finish(Duration::from_secs(2));
        assert!(plain.histograms.is_empty() && !plain.windows.is_empty());

        let mut s = WindowSeries::new(Duration::from_secs(1));
        s.keep_histograms();
        s.record_completed(10 * MS, MS, false, true);
        s.finish(Duration::from_secs(2));
        assert!(s.take_histograms().is_empty());
        assert_eq!(s.histograms.len(), s.windows.len());
        assert_eq!(s.histograms[0].latency.count(), 1);
        // Written and read back whole: a shard's windows merge from what its result holds.
        let text = serde_json::to_string(&s).unwrap();
        let back: WindowSeries = serde_json::from_str(&text).unwrap();
        assert_eq!(back.histograms, s.histograms);
    }
}
