//! Reporters: they format what the run measured and what the comparison decided, and compute
//! nothing of their own. JUnit today; Markdown, terminal tables and charts follow.

mod junit;

pub use junit::{junit_report, write_junit};
