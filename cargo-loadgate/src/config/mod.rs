//! Configuration: raw TOML → validated config (every problem reported at once, with file:line:col)
//! → the resolved profile that the rest of the tool reads.

mod types;
mod units;

pub use types::*;
pub use units::{format_duration, parse_duration, parse_percent, parse_size};
