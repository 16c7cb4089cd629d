//! Reporters: they format what the run measured and what the comparison decided, and compute
//! nothing of their own. JUnit and the Markdown summary today; charts follow.

mod junit;
mod markdown;

pub use junit::{junit_report, write_junit};
pub use markdown::markdown_summary;
