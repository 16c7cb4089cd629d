//! SVG charts of a run (issue #6): latency percentiles and throughput against offered load with
//! the knee marked, the soak's RSS and p99 series with their Theil–Sen slopes, and a paired run's
//! per-pair ratios head / base (issue 13), a spike phase second by second (issue 15), the probes'
//! series through the soak (issue 16), and one metric over the commits of a history (issue 18).
//!
//! They read the typed run result ([`RunResult`], as written to the out-dir or read back from a
//! baseline with `result::read`), through the views of `view.rs`; an older or partial result
//! draws what it has. `draw.rs` holds the drawing helpers the charts (`latency.rs`,
//! `throughput.rs`, `soak.rs`, `pairs.rs`) share. Like the other reporters they compute nothing the run did
//! not measure, except what a chart needs to draw a stored figure: the p90 of each step is read from the step's stored latency
//! histogram (the step records keep p50, p95, p99 and max), the goodput rate is the phase's
//! goodput count over its measured time, and a stored slope gets its Theil–Sen intercept (the
//! median of y − slope·x over the plotted points) so it can be drawn as a line (`stats::theil_sen_intercept`).
//!
//! Drawn with plotters' SVG backend, which writes `<text>` elements and needs no font files.

mod draw;
mod history;
mod latency;
mod pairs;
mod probes;
mod soak;
mod spike;
mod throughput;
mod view;

pub use history::{HISTORY_CHART, history_chart_name, render_history};
pub use latency::render_latency;
pub use pairs::render_pairs;
pub use probes::render_probes;
pub use soak::render_soak;
pub use spike::{render_spike, render_stress};
pub use throughput::render_throughput;

use crate::result::RunResult;
use plotters::prelude::DrawingAreaErrorKind;
use std::path::{Path, PathBuf};

/// The file name of the latency chart.
pub const LATENCY_CHART: &str = "latency.svg";
/// The file name of the throughput chart.
pub const THROUGHPUT_CHART: &str = "throughput.svg";
/// The file name of the soak chart.
pub const SOAK_CHART: &str = "soak.svg";
/// The file name of a paired run's chart of the per-pair ratios.
pub const PAIRS_CHART: &str = "pairs.svg";
/// The file name of the chart of a spike phase, second by second.
pub const SPIKE_CHART: &str = "spike.svg";
/// The file name of the chart of a stress phase, second by second.
pub const STRESS_CHART: &str = "stress.svg";
/// The file name of the chart of the probes' series through the soak.
pub const PROBES_CHART: &str = "probes.svg";

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
/// has a soak, `pairs.svg` when it is a paired run with pairs used, `spike.svg` when it has a
/// spike, `stress.svg` when it has a stress, `probes.svg` when a probe has samples through the soak; `base`, the baseline's stored
/// result, is drawn dashed beside the head in the first two. A chart that has nothing to draw is not written, and one left in `dir` by an earlier run
/// is removed, so the directory never shows another run's chart beside this run's result.
pub fn write_charts(
    dir: &Path,
    head: &RunResult,
    base: Option<&RunResult>,
) -> Result<Vec<PathBuf>, ChartError> {
    std::fs::create_dir_all(dir).map_err(|source| ChartError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let charts = [
        (LATENCY_CHART, render_latency(head, base)?),
        (THROUGHPUT_CHART, render_throughput(head, base)?),
        (SOAK_CHART, render_soak(head)?),
        (PAIRS_CHART, render_pairs(head)?),
        (SPIKE_CHART, render_spike(head)?),
        (STRESS_CHART, render_stress(head)?),
        (PROBES_CHART, render_probes(head)?),
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
mod tests;
