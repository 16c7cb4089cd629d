//! Reporters: they format what the run measured and what the comparison decided, and compute
//! nothing of their own. JUnit, the Markdown summary and the SVG charts.

mod charts;
mod junit;
mod markdown;
mod multi;

pub use charts::{
    ChartError, LATENCY_CHART, SOAK_CHART, THROUGHPUT_CHART, render_latency, render_soak,
    render_throughput, write_charts,
};
pub use junit::{junit_report, write_junit};
pub use markdown::markdown_summary;
pub use multi::{ReportError, ReportRun, render_markdown, render_terminal, run_labels};
