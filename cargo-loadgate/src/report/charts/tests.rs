//! The charts' tests: a typed result shaped like a real `ci` run (in the shape written before
//! the SLO and answers were recorded), the fixtures of `tests/fixtures/`, and the rendered SVG
//! rasterized to count the pixels of each line.

use super::draw::*;
use super::latency::format_ms;
use super::view::*;
use super::*;
use crate::measure::{OperationMeasurement, Window};
use crate::plan::{
    BreakPoint, CapacitySource, JudgementBasis, RampOutcome, Slopes, SoakOutcome, StepJudgement,
    StepKind, StepOperation, StepRecord,
};
use crate::result::{GitInfo, SloLatencyLimit, SloSummary};
use crate::stats::SlopeEstimate;
use crate::targets::ResourceSample;
use plotters::prelude::RGBColor;
use std::collections::HashSet;
use std::time::Duration;

const CLASSES: [&str; 3] = ["landing", "login", "transfer"];

/// A result shaped like a real `ci` run: five steps (the last broke on p99), a bisection
/// point, a soak with windows and resource samples. Built on the typed fixture `before.json`
/// (its tool, environment and phase template), with no `slo` and no `answered` in its windows,
/// like a result written before either was recorded.
fn result(commit: &str, slowdown: f64, soak: bool) -> RunResult {
    let mut result = crate::result::testing::before();
    let template = result.phases[0].clone();
    let phase_record = |name: &str,
                        operations: Vec<OperationMeasurement>,
                        measured_ms: f64,
                        windows: Vec<Window>| {
        let mut record = template.clone();
        record.measurement.name = name.to_owned();
        record.measurement.operations = operations;
        record.measurement.measured = Duration::from_secs_f64(measured_ms / 1e3);
        record.measurement.windows.window = Duration::from_secs(1);
        record.measurement.windows.windows = windows;
        record
    };
    let ms = |v: f64| Duration::from_secs_f64(v / 1e3);
    let fractions = [0.25, 0.5, 0.75, 1.0, 1.5];
    let mut steps = Vec::new();
    let mut phases = Vec::new();
    let mut points: Vec<(String, f64, bool)> = fractions
        .iter()
        .map(|f| (format!("ramp-{:.0}%", f * 100.0), *f, true))
        .collect();
    points.push(("refine-1".to_owned(), 1.25, false));
    for (phase, fraction, is_step) in points {
        // A slower service is offered the same sessions but completes them later.
        let offered = 180.0 * fraction / slowdown;
        let broke = fraction > 1.1;
        let load = fraction * slowdown;
        let operations: Vec<StepOperation> = CLASSES
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let base = (1.0 + i as f64) * load;
                let p99 = if broke { 260.0 * load } else { base * 12.0 };
                StepOperation {
                    name: (*name).to_owned(),
                    requests: 200,
                    errors: 0,
                    wrong_answers: 0,
                    p50: ms(base),
                    p95: ms(base * 6.0),
                    p99: ms(p99),
                    max: ms(p99 * 1.5),
                }
            })
            .collect();
        let reasons: Vec<String> = if broke {
            vec![format!(
                "`landing` p99 {} > 200 ms",
                format_ms(260.0 * load)
            )]
        } else {
            Vec::new()
        };
        steps.push(StepRecord {
            phase: phase.clone(),
            kind: if is_step {
                StepKind::Step
            } else {
                StepKind::Refine
            },
            fraction,
            sessions_per_sec: 45.0 * fraction,
            offered_rate_per_sec: offered,
            model_rate_per_sec: 200.0 * fraction,
            achieved_rate_per_sec: if broke { offered * 0.8 } else { offered },
            held: StepJudgement {
                holds: !broke,
                reasons,
                unjudged: Vec::new(),
                basis: JudgementBasis::PerClass,
                note: None,
            },
            valid: true,
            invalid_reasons: Vec::new(),
            aborted: None,
            operations,
            lag_p99: ms(0.5),
            dropped: 0,
            confirms: None,
            transient: None,
            generator_limit: false,
            generator_busy: None,
        });
        let operations = CLASSES
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut op = OperationMeasurement::new(*name);
                // Four seconds of the class's third of the load; past the knee half of it
                // answered within the SLO latency.
                op.counters.goodput = (offered * 4.0 / 3.0 * if broke { 0.5 } else { 1.0 }) as u64;
                for k in 1..=100 {
                    op.latency
                        .record(ms(f64::from(k) * 0.1 * (1.0 + i as f64) * load));
                }
                op
            })
            .collect();
        phases.push(phase_record(&phase, operations, 4000.0, Vec::new()));
    }
    let breakpoint = |phase: &str, sessions_per_sec: f64, offered_rate_per_sec: f64| {
        Some(BreakPoint {
            phase: phase.to_owned(),
            sessions_per_sec,
            offered_rate_per_sec,
            reasons: Vec::new(),
        })
    };
    result.git = Some(GitInfo {
        commit: commit.to_owned(),
        dirty: false,
    });
    result.profile = "ci".to_owned();
    result.slo = None;
    result.ramp = Some(RampOutcome {
        steps,
        knee_rate_per_sec: Some(180.0 / slowdown),
        knee_sessions_per_sec: Some(45.0),
        first_break: breakpoint("ramp-150%", 67.5, 270.0),
        lowest_break: breakpoint("refine-1", 56.25, 225.0),
        sentence: String::new(),
        failing_from_first_step: Vec::new(),
        valid: true,
        generator_limit: None,
    });
    result.soak = None;
    result.phases = phases;
    result.resources = Vec::new();
    if soak {
        let windows: Vec<Window> = (0..20)
            .map(|i| Window {
                start: ms(f64::from(i) * 1000.0),
                length: ms(1000.0),
                sent: 100,
                completed: 100,
                errors: 0,
                answered: None,
                p50: ms(1.0),
                p99: ms(8.0 + f64::from(i % 4) + 0.2 * f64::from(i)),
                max: ms(30.0),
                dropped: 0,
                lag_p99: Duration::ZERO,
                generator_busy: None,
            })
            .collect();
        result
            .phases
            .push(phase_record("soak", Vec::new(), 20000.0, windows));
        result.resources = (0..60u32)
            .map(|i| ResourceSample {
                elapsed_s: f64::from(i) + 0.001,
                cpu_seconds: 0.0,
                rss_bytes: 4_000_000 + 30_000 * u64::from(i) + 7_000 * u64::from(i % 3),
                threads: 2,
                fds: 12,
            })
            .collect();
        let slope = |estimate: f64, low: f64, high: f64| {
            Some(SlopeEstimate {
                estimate,
                low,
                high,
            })
        };
        result.soak = Some(SoakOutcome {
            phase: "soak".to_owned(),
            capacity_sessions_per_sec: 45.0,
            capacity_from: CapacitySource::ThisRun,
            at_sessions_per_sec: 27.0,
            offered_rate_per_sec: 108.0,
            model_rate_per_sec: 120.0,
            achieved_rate_per_sec: 108.0,
            slopes: Slopes {
                rss_bytes_per_sec: slope(30000.0, 28000.0, 32000.0),
                p99_seconds_per_sec: slope(0.0002, 0.0001, 0.0003),
                threads_per_sec: None,
                fds_per_sec: None,
            },
            leak: None,
            aborted: None,
            valid: true,
            invalid_reasons: Vec::new(),
            windows: 20,
            samples: 20,
            sampled_s: None,
            lowered: None,
        });
    }
    result
}

/// A result with nothing to draw: no ramp, no soak, no phase, no sample.
fn empty() -> RunResult {
    let mut result = crate::result::testing::before();
    result.ramp = None;
    result.soak = None;
    result.phases = Vec::new();
    result.resources = Vec::new();
    result
}

fn steps(result: &mut RunResult) -> &mut Vec<StepRecord> {
    &mut result.ramp.as_mut().unwrap().steps
}

/// The PNG rendering of `svg` (text is not drawn: resvg is built without fonts).
fn rasterize(svg: &str) -> resvg::tiny_skia::Pixmap {
    let tree = resvg::usvg::Tree::from_str(svg, &resvg::usvg::Options::default()).unwrap();
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap
}

/// Pixels within a small tolerance of `color` (anti-aliasing blends only the edges).
fn count(pixmap: &resvg::tiny_skia::Pixmap, color: RGBColor) -> usize {
    let close = |a: u8, b: u8| a.abs_diff(b) <= 3;
    pixmap
        .pixels()
        .iter()
        .filter(|p| {
            let c = p.demultiply();
            c.alpha() == 255
                && close(c.red(), color.0)
                && close(c.green(), color.1)
                && close(c.blue(), color.2)
        })
        .count()
}

fn distinct_colors(pixmap: &resvg::tiny_skia::Pixmap) -> usize {
    pixmap
        .pixels()
        .iter()
        .map(|p| (p.red(), p.green(), p.blue(), p.alpha()))
        .collect::<HashSet<_>>()
        .len()
}

fn non_white_share(pixmap: &resvg::tiny_skia::Pixmap) -> f64 {
    let ink = pixmap
        .pixels()
        .iter()
        .filter(|p| (p.red(), p.green(), p.blue()) != (255, 255, 255))
        .count();
    ink as f64 / pixmap.pixels().len() as f64
}

const HEAD: &str = "3f2a91c0aa5f7c2d2ad1ac2b0ff13a1e5d2b7c11";
const BASE: &str = "1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e";

#[test]
fn latency_chart_draws_a_line_per_class_with_the_slo_and_the_knee() {
    let head = result(HEAD, 1.0, true);
    let svg = render_latency(&head, None).unwrap().unwrap();
    assert!(svg.contains("knee 180 req/s"), "knee label missing");
    assert!(svg.contains("SLO p99 200 ms"), "SLO line missing");
    assert!(svg.contains("head 3f2a91c"));
    let png = rasterize(&svg);
    for (i, class) in CLASSES.iter().enumerate() {
        // Its markers alone give 650 to 900 pixels of its colour, with its four lines 2100 to
        // 2600 (measured): the lines are there.
        let n = count(&png, class_color(i));
        assert!(n > 1500, "class {class}: only {n} pixels of its colour");
    }
    assert!(count(&png, SLO_COLOR) > 200, "the SLO line is not drawn");
    assert!(distinct_colors(&png) > 50);
    assert!(non_white_share(&png) > 0.02);
    assert!(!svg.contains("not judged"));
}

/// Regression: the SLO line was guessed from break reasons, so a ramp where nothing broke on
/// latency had none. The recorded `[slo]` now gives every limit.
#[test]
fn the_slo_line_comes_from_the_recorded_slo() {
    let mut head = result(HEAD, 1.0, false);
    for step in steps(&mut head) {
        step.held.reasons.clear();
    }
    let limit = |quantile: f64, label: &str, limit_ms: f64| SloLatencyLimit {
        quantile,
        label: label.to_owned(),
        limit_ms,
    };
    head.slo = Some(SloSummary {
        latency: vec![limit(0.5, "p50", 50.0), limit(0.99, "p99", 250.0)],
        error_rate: 0.01,
        min_requests: 100,
        recovery_limit_ms: None,
    });
    let svg = render_latency(&head, None).unwrap().unwrap();
    assert!(svg.contains("SLO p50 50 ms"), "{svg}");
    assert!(svg.contains("SLO p99 250 ms"));
    assert!(!svg.contains("SLO p99 200 ms"));
}

#[test]
fn without_a_recorded_slo_the_limits_are_read_from_break_reasons() {
    let mut head = result(HEAD, 1.0, false);
    assert_eq!(
        ramp_view("head", &head).slo,
        [SloLimit {
            label: "p99".to_owned(),
            ms: 200.0
        }]
    );
    for step in steps(&mut head) {
        if !step.held.holds {
            step.held.reasons = vec!["all classes pooled p99 310 ms > 180 ms".to_owned()];
        }
    }
    let view = ramp_view("head", &head);
    assert_eq!(view.slo.len(), 1);
    assert!((view.slo[0].ms - 180.0).abs() < 1e-9);
}

#[test]
fn classes_the_slo_did_not_judge_are_drawn_hollow_and_explained() {
    let mut head = result(HEAD, 1.0, false);
    steps(&mut head)[0].held.unjudged = vec!["landing".to_owned()];
    let view = ramp_view("head", &head);
    let judged: Vec<bool> = view.steps[0].classes.iter().map(|c| c.judged).collect();
    assert_eq!(judged, [false, true, true]);
    let svg = render_latency(&head, None).unwrap().unwrap();
    assert!(svg.contains("not judged (slo.min-requests)"));
}

/// Regression: a step with too few requests to judge (neither held nor broke) was drawn as
/// having broken the SLO.
#[test]
fn a_step_with_too_few_requests_is_not_drawn_as_broken() {
    let mut head = result(HEAD, 1.0, false);
    let too_few = StepJudgement {
        holds: false,
        reasons: Vec::new(),
        unjudged: Vec::new(),
        basis: JudgementBasis::TooFewRequests,
        note: None,
    };
    let steps = steps(&mut head);
    steps[0].held = too_few.clone();
    // Aborted, the same step broke.
    steps[1].held = too_few;
    steps[1].aborted = Some("p99 past 5 s".to_owned());
    let view = ramp_view("head", &head);
    assert_eq!(view.steps[0].state, StepState::TooFew);
    assert_eq!(view.steps[1].state, StepState::Broke);
    let svg = render_throughput(&head, None).unwrap().unwrap();
    assert!(svg.contains("too few requests to judge"));
}

#[cfg(unix)]
#[test]
fn charts_are_readable_like_other_written_files() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let written = write_charts(dir.path(), &result(HEAD, 1.0, false), None).unwrap();
    let reference = dir.path().join("reference");
    std::fs::write(&reference, "").unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // 0644 minus the umask (a normal file create, 0666 minus the umask, minus group and other
    // write), not the 0600 of a temporary file.
    assert_eq!(
        mode(&written[0]),
        mode(&reference) & crate::result::WRITTEN_FILE_MODE
    );
}

#[test]
fn the_base_is_drawn_lighter_beside_the_head() {
    let head = result(HEAD, 1.2, true);
    let base = result(BASE, 1.0, true);
    let svg = render_latency(&head, Some(&base)).unwrap().unwrap();
    assert!(svg.contains("base 1b2c3d4"));
    let png = rasterize(&svg);
    for i in 0..CLASSES.len() {
        assert!(count(&png, class_color(i)) > 300);
        assert!(
            count(&png, lighter(class_color(i))) > 50,
            "base line of class {i} missing"
        );
    }
    let svg = render_throughput(&head, Some(&base)).unwrap().unwrap();
    let png = rasterize(&svg);
    assert!(count(&png, SERIES_COLOR) > 150);
    assert!(count(&png, lighter(SERIES_COLOR)) > 100);
}

#[test]
fn throughput_chart_draws_points_the_reference_and_the_knee() {
    let svg = render_throughput(&result(HEAD, 1.0, false), None)
        .unwrap()
        .unwrap();
    assert!(svg.contains("knee 180 req/s"));
    let png = rasterize(&svg);
    // Markers alone: about 300 pixels; with the line about 1400 (measured).
    let n = count(&png, SERIES_COLOR);
    assert!(n > 800, "the head's line is lost: {n} pixels");
    let n = count(&png, GOODPUT_COLOR);
    assert!(n > 800, "the goodput line is lost: {n} pixels");
    assert!(count(&png, KNEE_COLOR) > 200, "the knee line is lost");
    assert!(non_white_share(&png) > 0.02);
}

#[test]
fn the_throughput_chart_draws_the_production_load_where_the_headroom_puts_it() {
    let mut head = result(HEAD, 1.0, false);
    let plain = render_throughput(&head, None).unwrap().unwrap();
    assert!(!plain.contains("production load"));
    assert_eq!(count(&rasterize(&plain), PRODUCTION_COLOR), 0);
    let ramp = head.ramp.clone().expect("a ramp");
    // The workload's rate: the 100% step's sessions. The knee held at 100%, so the line is at
    // the knee's offered rate.
    let p = ramp.steps[3].sessions_per_sec;
    head.headroom = Some(crate::compare::headroom(
        &ramp,
        &crate::compare::ProductionLoad {
            sessions_per_sec: p,
            requests_per_session: Some(3.0),
        },
        Some(1.2),
    ));
    let (x, label) = ramp_view("head", &head)
        .production
        .expect("a production point");
    assert!((x - ramp.knee_rate_per_sec.unwrap()).abs() < 1e-9, "{x}");
    assert_eq!(
        label,
        format!("production load {} sessions/s", crate::plan::format_rate(p))
    );
    let svg = render_throughput(&head, None).unwrap().unwrap();
    assert!(svg.contains(&label), "the label is drawn");
    assert!(
        svg.contains("production load (headroom)"),
        "the legend names it"
    );
    let n = count(&rasterize(&svg), PRODUCTION_COLOR);
    assert!(n > 200, "the production line is lost: {n} pixels");
}

/// Regression: "achieved" was requests sent, and the chart called it "sent"; it now counts
/// answers, and older results (whose windows lack `answered`) still say what they hold.
#[test]
fn the_throughput_chart_says_whether_achieved_counts_answers() {
    let mut head = result(HEAD, 1.0, true);
    let svg = render_throughput(&head, None).unwrap().unwrap();
    assert!(svg.contains("sent (older result)"));
    assert!(!svg.contains("answered"));
    for phase in &mut head.phases {
        for w in &mut phase.measurement.windows.windows {
            w.answered = Some(100);
        }
    }
    let svg = render_throughput(&head, None).unwrap().unwrap();
    assert!(svg.contains("answered"));
    assert!(svg.contains("Answers received (any outcome)"));
    assert!(!svg.contains("sent (older result)"));
}

/// Regression: the charts took "some window has answers > 0" for "answers were recorded", so a
/// new run in which no window got a single answer was labelled "sent (older result)".
#[test]
fn a_new_run_without_a_single_answer_is_not_labelled_an_older_result() {
    let mut head = result(HEAD, 1.0, true);
    for phase in &mut head.phases {
        for w in &mut phase.measurement.windows.windows {
            w.answered = Some(0);
        }
    }
    let svg = render_throughput(&head, None).unwrap().unwrap();
    assert!(svg.contains("answered"), "{svg}");
    assert!(!svg.contains("sent (older result)"));
}

#[test]
fn soak_chart_draws_both_series_and_their_fits() {
    let head = result(HEAD, 1.0, true);
    let svg = render_soak(&head).unwrap().unwrap();
    assert!(svg.contains("Soak at 108 req/s offered (60% of the capacity)"));
    assert!(svg.contains("Theil–Sen +29.3 KiB/s"), "{svg}");
    let png = rasterize(&svg);
    // Markers alone: about 1100 pixels; with both series' lines about 1700 (measured).
    let n = count(&png, SERIES_COLOR);
    assert!(n > 1350, "a series' line is lost: {n} pixels");
    assert!(count(&png, FIT_COLOR) > 300, "a fitted line is lost");
}

#[test]
fn a_run_without_a_soak_gets_no_soak_chart() {
    let head = result(HEAD, 1.0, false);
    assert_eq!(render_soak(&head).unwrap(), None);
    let dir = tempfile::tempdir().unwrap();
    // A soak chart left by an earlier run must not stay beside this run's result.
    std::fs::write(dir.path().join(SOAK_CHART), "old").unwrap();
    let written = write_charts(dir.path(), &head, None).unwrap();
    assert_eq!(
        written,
        vec![
            dir.path().join(LATENCY_CHART),
            dir.path().join(THROUGHPUT_CHART)
        ]
    );
    assert!(!dir.path().join(SOAK_CHART).exists());
}

#[test]
fn write_charts_writes_all_three_when_there_is_a_soak() {
    let dir = tempfile::tempdir().unwrap();
    let head = result(HEAD, 1.0, true);
    let written = write_charts(&dir.path().join("out"), &head, None).unwrap();
    assert_eq!(written.len(), 3);
    for path in written {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("<svg"), "{}", path.display());
    }
}

#[test]
fn empty_or_partial_results_draw_what_exists_without_panicking() {
    let empty = empty();
    assert_eq!(render_latency(&empty, None).unwrap(), None);
    assert_eq!(render_throughput(&empty, None).unwrap(), None);
    assert_eq!(render_soak(&empty).unwrap(), None);
    let mut no_steps = result(HEAD, 1.0, false);
    steps(&mut no_steps).clear();
    assert_eq!(render_latency(&no_steps, Some(&empty)).unwrap(), None);
    assert_eq!(render_throughput(&no_steps, None).unwrap(), None);
    // An aborted soak with no windows and no samples has nothing to draw.
    let mut aborted = result(HEAD, 1.0, true);
    aborted.soak.as_mut().unwrap().aborted = Some("p99 over 5 s".to_owned());
    aborted.phases.pop();
    aborted.resources.clear();
    assert_eq!(render_soak(&aborted).unwrap(), None);
    // A step with no requests, a step without figures, a phase without a histogram.
    let mut partial = result(HEAD, 1.0, false);
    steps(&mut partial)[0].operations[0].requests = 0;
    steps(&mut partial)[1].operations.clear();
    // Not measured: the model's rate is drawn instead.
    steps(&mut partial)[2].offered_rate_per_sec = 0.0;
    partial.phases[3].measurement.operations.clear();
    partial.ramp.as_mut().unwrap().knee_rate_per_sec = None;
    assert!(render_latency(&partial, None).unwrap().is_some());
    assert!(render_throughput(&partial, None).unwrap().is_some());
    // Only the RSS series of a soak whose phase is missing its windows.
    let mut rss_only = result(HEAD, 1.0, true);
    rss_only.phases[6].measurement.windows.windows.clear();
    let svg = render_soak(&rss_only).unwrap().unwrap();
    assert!(svg.contains("RSS (MiB)") && !svg.contains("p99 latency"));
}

#[test]
fn a_wide_range_switches_to_a_log_axis() {
    let mut head = result(HEAD, 1.0, false);
    steps(&mut head)[0].operations[0].p50 = Duration::from_micros(50);
    let svg = render_latency(&head, None).unwrap().unwrap();
    assert!(svg.contains("(log scale)"));
    // Within two decades the axis stays linear.
    let mut narrow = result(HEAD, 1.0, false);
    narrow.phases.clear();
    let ms = |v: f64| Duration::from_secs_f64(v / 1e3);
    for (i, step) in steps(&mut narrow).iter_mut().enumerate() {
        let i = i as f64;
        for op in &mut step.operations {
            op.p50 = ms(10.0 + i);
            op.p99 = ms(40.0 + 10.0 * i);
            op.max = ms(80.0 + 20.0 * i);
        }
    }
    let svg = render_latency(&narrow, None).unwrap().unwrap();
    assert!(!svg.contains("(log scale)"));
}

#[test]
fn a_ramp_where_nothing_broke_shows_no_knee_only_its_highest_step() {
    let mut head = result(HEAD, 1.0, false);
    let ramp = head.ramp.as_mut().unwrap();
    ramp.lowest_break = None;
    ramp.first_break = None;
    for chart in [
        render_latency(&head, None).unwrap().unwrap(),
        render_throughput(&head, None).unwrap().unwrap(),
    ] {
        assert!(chart.contains("held through 180 req/s, nothing broke"));
        assert!(!chart.contains("knee 180"));
    }
}

#[test]
fn slo_limits_are_read_back_from_break_reasons() {
    let limit = |label: &str, ms: f64| {
        Some(SloLimit {
            label: label.to_owned(),
            ms,
        })
    };
    assert_eq!(
        parse_slo_reason("`login` p99 340 ms > 200 ms"),
        limit("p99", 200.0)
    );
    assert_eq!(
        parse_slo_reason("`a` p99.9 12.50 s > 1.50 s"),
        limit("p99.9", 1500.0)
    );
    assert_eq!(parse_slo_reason("`a` errors 3.0% > 1.0%"), None);
    assert_eq!(parse_slo_reason("aborted: p99 over 5 s"), None);
}

/// A result as first written in format 1 and the demo run of `before.json` (no `slo`, no
/// `answered`), read through the typed reader, draw what they hold.
#[test]
fn older_results_read_typed_draw_what_they_hold() {
    let first = crate::result::result_from_str(crate::result::testing::FIRST).unwrap();
    assert_eq!(render_latency(&first, None).unwrap(), None);
    assert_eq!(render_throughput(&first, None).unwrap(), None);
    assert_eq!(render_soak(&first).unwrap(), None);
    let before = crate::result::testing::before();
    assert_eq!(before.slo, None);
    let latency = render_latency(&before, None).unwrap().unwrap();
    assert!(latency.contains("this result predates recording the SLO"));
    let throughput = render_throughput(&before, None).unwrap().unwrap();
    assert!(throughput.contains("sent (older result)"));
    assert!(render_soak(&before).unwrap().is_some());
}

#[test]
fn the_pairs_chart_draws_a_point_per_used_pair_the_threshold_and_the_estimate() {
    let paired = crate::result::testing::paired();
    let svg = render_pairs(&paired).unwrap().unwrap();
    assert!(svg.contains("Per-pair ratios, head / base"), "{svg}");
    assert!(svg.contains("p50 threshold +5.0%"), "{svg}");
    assert!(svg.contains("p50 Hodges–Lehmann +9.0%"), "{svg}");
    assert!(svg.contains("1 pair(s) left out"), "{svg}");
    assert!(
        svg.contains("3 of 4 pair(s) used, order AB BA BA AB"),
        "{svg}"
    );
    // Three pairs used: three p50 circles and three p99 triangles (pair 2 is left out).
    assert_eq!(
        svg.matches("<circle").count(),
        3 + 1,
        "three points and the legend's"
    );
    let png = rasterize(&svg);
    // Measured: about 130 pixels of the p50's colour (four circles, one in the legend) and 820
    // of the p99's (four triangles and its dashed estimate line).
    assert!(count(&png, SERIES_COLOR) > 90, "the p50 points are lost");
    assert!(
        count(&png, pairs::P99_COLOR) > 500,
        "the p99 points or estimate are lost"
    );
    assert!(count(&png, SLO_COLOR) > 300, "the threshold line is lost");
    assert!(count(&png, FIT_COLOR) > 300, "the estimate line is lost");
    assert!(non_white_share(&png) > 0.01);
}

#[test]
fn a_stored_run_gets_no_pairs_chart_and_a_paired_one_does() {
    let stored = result(HEAD, 1.0, true);
    assert_eq!(render_pairs(&stored).unwrap(), None);
    let dir = tempfile::tempdir().unwrap();
    // A pairs chart left by an earlier paired run must not stay beside a stored run's result.
    std::fs::write(dir.path().join(PAIRS_CHART), "old").unwrap();
    let written = write_charts(dir.path(), &stored, None).unwrap();
    assert!(!written.contains(&dir.path().join(PAIRS_CHART)));
    assert!(!dir.path().join(PAIRS_CHART).exists());

    let paired = crate::result::testing::paired();
    let written = write_charts(dir.path(), &paired, None).unwrap();
    assert!(
        written.contains(&dir.path().join(PAIRS_CHART)),
        "{written:?}"
    );
    let text = std::fs::read_to_string(dir.path().join(PAIRS_CHART)).unwrap();
    assert!(text.starts_with("<svg"));
}

#[test]
fn a_paired_run_without_usable_pairs_gets_no_pairs_chart() {
    let mut paired = crate::result::testing::paired();
    let record = paired.paired.as_mut().unwrap();
    for p in &mut record.pairs {
        p.used = false;
    }
    assert_eq!(render_pairs(&paired).unwrap(), None);
    paired.paired = None;
    assert_eq!(render_pairs(&paired).unwrap(), None);
}

/// A history of 8 commits: one without a result, an accepted step at the 5th, a change point
/// there with its location interval two commits wide.
fn history_doc() -> (crate::result::HistoryResult, crate::result::MetricHistory) {
    use crate::result::{
        BreakReason, HISTORY_FORMAT_VERSION, HistoryChange, HistoryCommit, HistoryPoint,
        HistoryResult, Metric, MetricHistory, Scale,
    };
    let id = |i: usize| format!("{i:x}{}", "0".repeat(39));
    let commits: Vec<HistoryCommit> = (0..8)
        .map(|i| HistoryCommit {
            commit: id(i),
            accepted: i == 4,
            accepts: Vec::new(),
            in_series: i != 2,
            reason: (i == 2).then_some(BreakReason::NoResult),
            detail: None,
        })
        .collect();
    let points = (0..8)
        .filter(|&i| i != 2)
        .map(|i| {
            let v = if i >= 4 { 12.0 } else { 10.0 };
            HistoryPoint {
                commit: id(i),
                estimate: v,
                low: v * 0.95,
                high: v * 1.05,
                confidence: 0.95,
            }
        })
        .collect();
    let metric = MetricHistory {
        metric: Metric::P99,
        operation: Some("log in".to_owned()),
        scale: Scale::Ratio,
        unit: "ms".to_owned(),
        points,
        change_points: vec![HistoryChange {
            commit: id(4),
            estimate: 1.2,
            low: 1.1,
            high: 1.3,
            confidence: 0.95,
            p_value: 0.01,
            earliest: id(3),
            latest: id(4),
            accepted: true,
            accepted_by: Some("`Loadgate-Accept: p99 +25%` in 4000000".to_owned()),
            sentence: String::new(),
        }],
    };
    let doc = HistoryResult {
        format_version: HISTORY_FORMAT_VERSION,
        store: "dir:/s".to_owned(),
        rev: "HEAD".to_owned(),
        head: id(7),
        since: None,
        limited: false,
        series: None,
        commits,
        breaks: Vec::new(),
        metrics: vec![metric.clone()],
        warnings: Vec::new(),
    };
    (doc, metric)
}

#[test]
fn the_history_chart_draws_points_the_change_point_and_the_accepted_step() {
    let (doc, metric) = history_doc();
    assert_eq!(history_chart_name(&metric), "history-p99-log_in.svg");
    let svg = render_history(&doc, &metric).unwrap().unwrap();
    assert!(svg.contains("p99 of `log in` over 8 commit(s)"), "{svg}");
    assert!(svg.contains("+20.0% at 4000000 (accepted)"), "{svg}");
    assert!(svg.contains("accepted 4000000"), "{svg}");
    let png = rasterize(&svg);
    // Measured: 256 pixels of the series' colour (seven markers and their bars), 434 of the
    // change point's (its dashed line; the band is lighter), 508 of the accepted step's line.
    assert!(count(&png, SERIES_COLOR) > 150, "the points are lost");
    assert!(
        count(&png, history::CHANGE_COLOR) > 200,
        "the change point is lost"
    );
    assert!(
        count(&png, history::ACCEPT_COLOR) > 250,
        "the accepted step is lost"
    );
    // A metric without points draws nothing.
    let mut empty = metric;
    empty.points.clear();
    assert!(render_history(&doc, &empty).unwrap().is_none());
}

/// A spike over the `result` fixture's soak windows (20 s): from 5 s to 10 s, stable 3 s later.
fn with_spike(mut head: RunResult, recovery: crate::plan::Recovery) -> RunResult {
    use crate::plan::{Admission, AdmissionFigures, SpikeOutcome};
    head.spike = Some(SpikeOutcome {
        phase: "soak".to_owned(),
        capacity_sessions_per_sec: 100.0,
        capacity_from: CapacitySource::ThisRun,
        from_sessions_per_sec: 60.0,
        to_sessions_per_sec: 300.0,
        starts: Duration::from_secs(5),
        ends: Duration::from_secs(10),
        admission: AdmissionFigures {
            admission: Admission::Queued,
            goodput_before_per_sec: 100.0,
            goodput_during_per_sec: 100.0,
            rejected_share: 0.0,
            transport_failure_share: 0.0,
            p50: Duration::from_millis(1),
            p99: Duration::from_millis(12),
        },
        recovery,
        recovery_windows: 3,
        check: None,
        aborted: None,
        valid: true,
        invalid_reasons: Vec::new(),
    });
    head
}

#[test]
fn spike_chart_draws_the_rates_the_p99_and_the_moment_of_stability() {
    let recovered = crate::plan::Recovery::Recovered {
        after: Duration::from_secs(3),
        confirmed_after: Duration::from_secs(6),
    };
    let mut head = with_spike(result(HEAD, 1.0, true), recovered);
    // A third of the answers during the spike fail.
    for record in head
        .phases
        .iter_mut()
        .filter(|p| p.measurement.name == "soak")
    {
        for w in &mut record.measurement.windows.windows {
            if (5..10).contains(&w.start.as_secs()) {
                w.errors = 33;
            }
        }
    }
    let svg = render_spike(&head).unwrap().expect("a spike chart");
    assert!(
        svg.contains("Spike from 60.0 to 300 sessions/s: queued"),
        "{svg}"
    );
    assert!(
        svg.contains("Stable SLO again 3.0 s after the spike"),
        "{svg}"
    );
    assert!(svg.contains("answered correctly"), "{svg}");
    let png = rasterize(&svg);
    // Both panels' series (sent, and the p99 of each window) are drawn in the series colour.
    assert!(count(&png, SERIES_COLOR) > 600, "a series is lost");
    assert!(
        count(&png, GOODPUT_COLOR) > 300,
        "the correct answers are lost"
    );
    assert!(count(&png, SLO_COLOR) > 200, "the failures are lost");

    // Not stable within the phase: no line, and the legend says so.
    let never = crate::plan::Recovery::NotRecovered {
        observed: Duration::from_secs(10),
        longest_run: 1,
    };
    let svg = render_spike(&with_spike(result(HEAD, 1.0, true), never))
        .unwrap()
        .unwrap();
    assert!(svg.contains("not stable again in the phase"), "{svg}");

    // No spike, or a spike whose phase is missing: no chart, and write_charts removes an old one.
    let plain = result(HEAD, 1.0, true);
    assert_eq!(render_spike(&plain).unwrap(), None);
    let mut orphan = with_spike(result(HEAD, 1.0, false), recovered_at(3));
    orphan.phases.retain(|p| p.measurement.name != "soak");
    assert_eq!(render_spike(&orphan).unwrap(), None);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(SPIKE_CHART), "old").unwrap();
    write_charts(dir.path(), &plain, None).unwrap();
    assert!(!dir.path().join(SPIKE_CHART).exists());
    let written = write_charts(dir.path(), &head, None).unwrap();
    assert!(
        written.contains(&dir.path().join(SPIKE_CHART)),
        "{written:?}"
    );
}

/// The stress chart: the `result` fixture's soak windows (20 s) as a stress phase, the overload
/// from 5 s to 8 s, the stretches compared shaded lightly, its conclusion in the subtitle; none
/// without a stress, and write_charts removes an old one.
#[test]
fn stress_chart_draws_the_overload_and_the_stretches_compared() {
    let mut head = result(HEAD, 1.0, true);
    let mut stress = crate::plan::stress_testing::outcome();
    stress.phase = "soak".to_owned();
    stress.starts = Duration::from_secs(5);
    stress.ends = Duration::from_secs(8);
    stress.compared_from = Duration::from_secs(15);
    head.stress = Some(stress);
    let svg = render_stress(&head).unwrap().expect("a stress chart");
    assert!(
        svg.contains("Stress from 60.0 to 200 sessions/s and back: lasting harm"),
        "{svg}"
    );
    assert!(svg.contains("lasting harm: p99 +40.0%"), "{svg}");
    assert!(
        svg.contains("Stable SLO again 4.0 s after the overload"),
        "{svg}"
    );
    assert!(svg.contains("lightly: the stretches compared"), "{svg}");
    assert!(svg.contains("time into the soak phase"), "{svg}");
    let png = rasterize(&svg);
    assert!(count(&png, SERIES_COLOR) > 600, "a series is lost");
    let plain = result(HEAD, 1.0, true);
    assert_eq!(render_stress(&plain).unwrap(), None);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(STRESS_CHART), "old").unwrap();
    write_charts(dir.path(), &plain, None).unwrap();
    assert!(!dir.path().join(STRESS_CHART).exists());
    let written = write_charts(dir.path(), &head, None).unwrap();
    assert!(
        written.contains(&dir.path().join(STRESS_CHART)),
        "{written:?}"
    );
}

fn recovered_at(secs: u64) -> crate::plan::Recovery {
    crate::plan::Recovery::Recovered {
        after: Duration::from_secs(secs),
        confirmed_after: Duration::from_secs(secs + 3),
    }
}

/// The probes' chart: a panel per series with samples in the soak's window, each with its slope;
/// none without a soak window or a sampled probe.
#[test]
fn the_probes_chart_draws_each_series_through_the_soak_with_its_slope() {
    use crate::measure::probe::{ProbeRecorder, SeriesKind};
    let mut head = result(HEAD, 1.0, true);
    assert_eq!(render_probes(&head).unwrap(), None, "no probe");
    let mut r = ProbeRecorder::new("app", "prometheus", "target", &[]);
    for t in 0..=40 {
        let t = f64::from(t);
        r.push_named(
            t,
            &[
                ("waiting".to_owned(), SeriesKind::Gauge, Some(2.0 + 0.5 * t)),
                (
                    "requests_total".to_owned(),
                    SeriesKind::Counter,
                    Some(100.0 * t),
                ),
            ],
        );
    }
    let mut probe = r.finish();
    probe.fit_soak_slopes(10.0, 40.0);
    head.probes = vec![probe];
    // The fixture's soak has no sampled window yet: nothing to draw.
    head.soak.as_mut().unwrap().sampled_s = None;
    assert_eq!(render_probes(&head).unwrap(), None, "no soak window");
    head.soak.as_mut().unwrap().sampled_s = Some([10.0, 40.0]);
    let svg = render_probes(&head).unwrap().expect("a probes chart");
    assert!(svg.contains("Probes through the soak"), "{svg}");
    assert!(svg.contains("app · waiting"), "{svg}");
    assert!(svg.contains("app · requests_total"), "{svg}");
    // 0.5 a second is +30 a minute.
    assert!(svg.contains("Theil–Sen +30 per min"), "{svg}");
    let png = rasterize(&svg);
    assert!(count(&png, FIT_COLOR) > 100, "a fitted line is lost");
    let dir = tempfile::tempdir().unwrap();
    let written = write_charts(dir.path(), &head, None).unwrap();
    assert!(
        written.contains(&dir.path().join(PROBES_CHART)),
        "{written:?}"
    );
}
