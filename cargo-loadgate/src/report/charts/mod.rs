//! SVG charts of a run (issue #6): latency percentiles and throughput against offered load with
//! the knee marked, and the soak's RSS and p99 series with their Theil–Sen slopes.
//!
//! They read the run result in its JSON form, as written to the out-dir or as stored in a
//! baseline, so any result on disk can be drawn (and an older or partial one draws what it has).
//! Like the other reporters they compute nothing the run did not measure, except what a chart
//! needs to draw a stored figure: the p90 of each step is read from the step's stored latency
//! histogram (the step records keep p50, p95, p99 and max), the goodput rate is the phase's
//! goodput count over its measured time, and a stored slope gets its Theil–Sen intercept (the
//! median of y − slope·x over the plotted points) so it can be drawn as a line.
//!
//! Drawn with plotters' SVG backend, which writes `<text>` elements and needs no font files.

mod draw;
mod latency;
mod soak;
mod throughput;
mod view;

pub use latency::render_latency;
pub use soak::render_soak;
pub use throughput::render_throughput;

use plotters::prelude::DrawingAreaErrorKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The file name of the latency chart.
pub const LATENCY_CHART: &str = "latency.svg";
/// The file name of the throughput chart.
pub const THROUGHPUT_CHART: &str = "throughput.svg";
/// The file name of the soak chart.
pub const SOAK_CHART: &str = "soak.svg";

/// Why a chart could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// plotters failed while drawing into the SVG string.
    #[error("failed to draw {chart}")]
    Draw {
        /// The chart's file name.
        chart: &'static str,
        /// The cause.
        #[source]
        source: DrawingAreaErrorKind<std::io::Error>,
    },
    /// The chart or its directory could not be written, or a stale chart removed.
    #[error("failed to write chart {}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Writes the run's charts into `dir` and returns their paths.
///
/// `latency.svg` and `throughput.svg` are written when the run has ramp steps, `soak.svg` when it
/// has a soak; `base`, the baseline's stored result, is drawn dashed beside the head in the first
/// two. A chart that has nothing to draw is not written, and one left in `dir` by an earlier run
/// is removed, so the directory never shows another run's chart beside this run's result.
pub fn write_charts(
    dir: &Path,
    head: &Value,
    base: Option<&Value>,
) -> Result<Vec<PathBuf>, ChartError> {
    std::fs::create_dir_all(dir).map_err(|source| ChartError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let charts = [
        (LATENCY_CHART, render_latency(head, base)?),
        (THROUGHPUT_CHART, render_throughput(head, base)?),
        (SOAK_CHART, render_soak(head)?),
    ];
    let mut written = Vec::new();
    for (name, svg) in charts {
        let path = dir.join(name);
        match svg {
            Some(svg) => {
                write_atomic(&path, svg.as_bytes())?;
                written.push(path);
            }
            None => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(ChartError::Write { path, source: e });
                }
                _ => {}
            },
        }
    }
    Ok(written)
}

/// Writes `bytes` to `path` through a temporary file in the same directory, so a reader never
/// sees half a chart.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ChartError> {
    // Readable like any file the user writes (0644 minus the umask), not 0600 like a temporary
    // file: charts are meant to be published as CI artifacts.
    crate::result::write_file_atomic(path, bytes).map_err(|source| ChartError::Write {
        path: path.to_owned(),
        source,
    })
}
#[cfg(test)]
mod tests {
    use super::draw::*;
    use super::latency::format_ms;
    use super::view::*;
    use super::*;
    use crate::measure::LatencyHistogram;
    use plotters::prelude::RGBColor;
    use serde_json::json;
    use std::collections::HashSet;
    use std::time::Duration;

    const CLASSES: [&str; 3] = ["landing", "login", "transfer"];

    fn histogram(ms: &[f64]) -> String {
        let mut h = LatencyHistogram::new();
        for v in ms {
            h.record(Duration::from_secs_f64(v / 1e3));
        }
        h.encode()
    }

    /// A result shaped like a real `ci` run: five steps (the last broke on p99), a bisection
    /// point, a soak with windows and resource samples.
    fn result(commit: &str, slowdown: f64, soak: bool) -> Value {
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
            let operations: Vec<Value> = CLASSES
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let base = (1.0 + i as f64) * load;
                    let p99 = if broke { 260.0 * load } else { base * 12.0 };
                    json!({
                        "name": name, "requests": 200, "errors": 0, "wrong_answers": 0,
                        "p50_ms": base, "p95_ms": base * 6.0, "p99_ms": p99, "max_ms": p99 * 1.5,
                    })
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
            steps.push(json!({
                "phase": phase, "kind": if is_step { "step" } else { "refine" },
                "fraction": fraction, "sessions_per_sec": 45.0 * fraction,
                "offered_rate_per_sec": offered, "model_rate_per_sec": 200.0 * fraction,
                "achieved_rate_per_sec": if broke { offered * 0.8 } else { offered },
                "held": {"holds": !broke, "reasons": reasons, "unjudged": []},
                "valid": true, "invalid_reasons": [], "aborted": null,
                "operations": operations, "lag_p99_ms": 0.5, "dropped": 0,
            }));
            phases.push(json!({
                "name": phase,
                "operations": CLASSES.iter().enumerate().map(|(i, name)| json!({
                    "name": name,
                    // Four seconds of the class's third of the load; past the knee half of it
                    // answered within the SLO latency.
                    "counters": {"goodput": (offered * 4.0 / 3.0 * if broke { 0.5 } else { 1.0 }) as u64},
                    "latency": histogram(&(1..=100).map(|k| f64::from(k) * 0.1 * (1.0 + i as f64) * load).collect::<Vec<_>>()),
                })).collect::<Vec<_>>(),
                "measured_ms": 4000.0,
                "windows": {"window_ms": 1000.0, "windows": []},
            }));
        }
        let mut result = json!({
            "format_version": 1,
            "git": {"commit": commit, "dirty": false},
            "profile": "ci",
            "ramp": {
                "steps": steps, "knee_rate_per_sec": 180.0 / slowdown, "knee_sessions_per_sec": 45.0,
                "first_break": {"phase": "ramp-150%", "sessions_per_sec": 67.5, "offered_rate_per_sec": 270.0, "reasons": []},
                "lowest_break": {"phase": "refine-1", "sessions_per_sec": 56.25, "offered_rate_per_sec": 225.0, "reasons": []},
                "sentence": "", "failing_from_first_step": [],
                "valid": true,
            },
            "soak": null,
            "phases": phases,
            "resources": [],
        });
        if soak {
            let windows: Vec<Value> = (0..20)
                .map(|i| {
                    json!({
                        "start_ms": f64::from(i) * 1000.0, "length_ms": 1000.0, "sent": 100,
                        "completed": 100, "errors": 0, "p50_ms": 1.0,
                        "p99_ms": 8.0 + f64::from(i % 4) + 0.2 * f64::from(i), "max_ms": 30.0,
                    })
                })
                .collect();
            result["phases"].as_array_mut().unwrap().push(json!({
                "name": "soak", "operations": [], "measured_ms": 20000.0,
                "windows": {"window_ms": 1000.0, "windows": windows},
            }));
            result["resources"] = (0..60)
                .map(|i| json!({
                    "elapsed_s": f64::from(i) + 0.001, "cpu_seconds": 0.0,
                    "rss_bytes": 4_000_000 + 30_000 * i + 7_000 * (i % 3), "threads": 2, "fds": 12,
                }))
                .collect::<Vec<_>>()
                .into();
            result["soak"] = json!({
                "phase": "soak", "capacity_sessions_per_sec": 45.0, "capacity_from": "this-run",
                "at_sessions_per_sec": 27.0, "offered_rate_per_sec": 108.0,
                "model_rate_per_sec": 120.0, "achieved_rate_per_sec": 108.0,
                "slopes": {
                    "rss_bytes_per_sec": {"estimate": 30000.0, "low": 28000.0, "high": 32000.0},
                    "p99_seconds_per_sec": {"estimate": 0.0002, "low": 0.0001, "high": 0.0003},
                    "threads_per_sec": null, "fds_per_sec": null,
                },
                "leak": null, "aborted": null, "valid": true, "invalid_reasons": [],
                "windows": 20, "samples": 20,
            });
        }
        result
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
        for step in head["ramp"]["steps"].as_array_mut().unwrap() {
            step["held"]["reasons"] = json!([]);
        }
        head["slo"] = json!({
            "latency": [
                {"quantile": 0.5, "label": "p50", "limit_ms": 50.0},
                {"quantile": 0.99, "label": "p99", "limit_ms": 250.0},
            ],
            "error_rate": 0.01, "min_requests": 100,
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
        for step in head["ramp"]["steps"].as_array_mut().unwrap() {
            if step["held"]["holds"] == json!(false) {
                step["held"]["reasons"] = json!(["all classes pooled p99 310 ms > 180 ms"]);
            }
        }
        let view = ramp_view("head", &head);
        assert_eq!(view.slo.len(), 1);
        assert!((view.slo[0].ms - 180.0).abs() < 1e-9);
    }

    #[test]
    fn classes_the_slo_did_not_judge_are_drawn_hollow_and_explained() {
        let mut head = result(HEAD, 1.0, false);
        head["ramp"]["steps"][0]["held"]["unjudged"] = json!(["landing"]);
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
        let steps = head["ramp"]["steps"].as_array_mut().unwrap();
        steps[0]["held"] =
            json!({"holds": false, "reasons": [], "unjudged": [], "basis": "too-few-requests"});
        // Aborted, the same step broke.
        steps[1]["held"] =
            json!({"holds": false, "reasons": [], "unjudged": [], "basis": "too-few-requests"});
        steps[1]["aborted"] = json!("p99 past 5 s");
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
        assert!(count(&png, SERIES_COLOR) > 300);
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

    /// Regression: "achieved" was requests sent, and the chart called it "sent"; it now counts
    /// answers, and older results (whose windows lack `answered`) still say what they hold.
    #[test]
    fn the_throughput_chart_says_whether_achieved_counts_answers() {
        let mut head = result(HEAD, 1.0, true);
        let svg = render_throughput(&head, None).unwrap().unwrap();
        assert!(svg.contains("sent (older result)"));
        assert!(!svg.contains("answered"));
        for phase in head["phases"].as_array_mut().unwrap() {
            for w in phase["windows"]["windows"].as_array_mut().unwrap() {
                w["answered"] = json!(100);
            }
        }
        let svg = render_throughput(&head, None).unwrap().unwrap();
        assert!(svg.contains("answered"));
        assert!(svg.contains("Answers received (any outcome)"));
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
        let empty = json!({});
        assert_eq!(render_latency(&empty, None).unwrap(), None);
        assert_eq!(render_throughput(&empty, None).unwrap(), None);
        assert_eq!(render_soak(&empty).unwrap(), None);
        let mut no_steps = result(HEAD, 1.0, false);
        no_steps["ramp"]["steps"] = json!([]);
        assert_eq!(render_latency(&no_steps, Some(&empty)).unwrap(), None);
        assert_eq!(render_throughput(&no_steps, None).unwrap(), None);
        // An aborted soak with no windows and no samples has nothing to draw.
        let mut aborted = result(HEAD, 1.0, true);
        aborted["soak"]["aborted"] = json!("p99 over 5 s");
        aborted["phases"].as_array_mut().unwrap().pop();
        aborted["resources"] = json!([]);
        assert_eq!(render_soak(&aborted).unwrap(), None);
        // A step with no requests, a step without figures, a phase without a histogram.
        let mut partial = result(HEAD, 1.0, false);
        partial["ramp"]["steps"][0]["operations"][0]["requests"] = json!(0);
        partial["ramp"]["steps"][1]["operations"] = json!(null);
        partial["ramp"]["steps"][2]["offered_rate_per_sec"] = json!(null);
        partial["phases"][3]["operations"] = json!("garbage");
        partial["ramp"]["knee_rate_per_sec"] = json!(null);
        assert!(render_latency(&partial, None).unwrap().is_some());
        assert!(render_throughput(&partial, None).unwrap().is_some());
        // Only the RSS series of a soak whose phase is missing its windows.
        let mut rss_only = result(HEAD, 1.0, true);
        rss_only["phases"][6]["windows"]["windows"] = json!([]);
        let svg = render_soak(&rss_only).unwrap().unwrap();
        assert!(svg.contains("RSS (MiB)") && !svg.contains("p99 latency"));
    }

    #[test]
    fn a_wide_range_switches_to_a_log_axis() {
        let mut head = result(HEAD, 1.0, false);
        head["ramp"]["steps"][0]["operations"][0]["p50_ms"] = json!(0.05);
        let svg = render_latency(&head, None).unwrap().unwrap();
        assert!(svg.contains("(log scale)"));
        // Within two decades the axis stays linear.
        let mut narrow = result(HEAD, 1.0, false);
        narrow["phases"] = json!([]);
        for (i, step) in narrow["ramp"]["steps"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            let i = i as f64;
            for op in step["operations"].as_array_mut().unwrap() {
                op["p50_ms"] = json!(10.0 + i);
                op["p99_ms"] = json!(40.0 + 10.0 * i);
                op["max_ms"] = json!(80.0 + 20.0 * i);
            }
        }
        let svg = render_latency(&narrow, None).unwrap().unwrap();
        assert!(!svg.contains("(log scale)"));
    }

    #[test]
    fn a_ramp_where_nothing_broke_shows_no_knee_only_its_highest_step() {
        let mut head = result(HEAD, 1.0, false);
        head["ramp"]["lowest_break"] = json!(null);
        head["ramp"]["first_break"] = json!(null);
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

    #[test]
    fn the_intercept_is_the_median_of_the_residuals() {
        let points = [(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (3.0, 100.0)];
        // Residuals 1, 1, 1, 94 for slope 2: the outlier does not move the line.
        assert_eq!(theil_sen_intercept(&points, 2.0), Some(1.0));
        assert_eq!(theil_sen_intercept(&[], 2.0), None);
    }
}
