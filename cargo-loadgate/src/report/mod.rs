//! Reporters: they format what the run measured and what the comparison decided, and compute
//! nothing of their own. JUnit, the Markdown summary, the SVG charts, the multi-run report, the
//! ramp's step table, and the one table renderer they all draw with.

mod charts;
mod headroom;
mod junit;
mod markdown;
mod multi;
mod probes;
mod replicas;
mod spike;
mod steps;
mod stress;
mod stubs;
mod table;

pub use charts::{
    ChartError, HISTORY_CHART, LATENCY_CHART, PAIRS_CHART, SOAK_CHART, SPIKE_CHART, STRESS_CHART,
    THROUGHPUT_CHART, history_chart_name, render_history, render_latency, render_pairs,
    render_soak, render_spike, render_stress, render_throughput, write_charts,
};
pub use headroom::{headroom_comparison_line, headroom_lines};
pub use junit::{junit_report, write_junit};
pub use markdown::markdown_summary;
pub use multi::{ReportError, ReportRun, render_markdown, render_terminal, run_labels};
pub use probes::{probe_lines, probe_markdown};
pub use replicas::{replica_lines, replica_markdown, replica_words};
pub use spike::{burst_rows, check_line, recovery_check_line, spike_sentence};
pub use steps::render_step_table;
pub use stress::{stress_rows, stress_sentence, stress_word};
pub use stubs::{stub_line, stub_markdown};
pub use table::{Align, Cell, Table, display_width, table};
