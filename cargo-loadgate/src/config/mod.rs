//! Configuration: raw TOML → validated config (every problem reported at once, with file:line:col)
//! → the resolved profile that the rest of the tool reads.
//!
//! [`load`] finds the config like cargo finds a package (`[package.metadata.loadgate]` in the
//! package's Cargo.toml, or a `loadgate.toml` beside it), [`parse_config_str`] validates a text,
//! and [`render_diagnostics`] / [`render_resolved`] format what a person reads. The built-in
//! defaults and profiles are in `defaults.toml`; docs/config.md describes every key.

mod elements;
mod error;
mod find;
mod render;
mod source;
mod types;
mod units;
mod validate;

pub use elements::data::{
    DEFAULT_STEP_TIMEOUT, DataReference, SEED as DATA_SEED, TARGET as DATA_TARGET,
    TIER_TEMPLATE as DATA_TIER, VAR as DATA_VAR, data_references, render_data,
};
pub use elements::dependency::{
    FIELDS as DEPENDENCY_FIELDS, boot_order, postgres_ready_command, references, render_references,
    url_host_port,
};
pub use elements::operation::{
    BUILTIN_VARIABLES, METHODS, check_json_pointer, expected_requests_per_session,
    template_variables,
};
pub use elements::probe::DEFAULT_METRICS_PATH;
#[cfg(test)]
pub(crate) use error::MINIMAL_CONFIG;
pub use error::{ConfigError, Diagnostic, Sources};
pub use find::{CONFIG_FILE_NAME, LoadOpts, load};
pub use render::{render_diagnostics, render_resolved};
pub use types::*;
pub use units::{
    format_duration, format_factor, format_millis, format_number, format_percent, format_size,
    format_size_rate, parse_duration, parse_factor, parse_percent, parse_size, parse_size_rate,
};
pub use validate::{BUILTIN_CONFIG, BUILTIN_PATH, BUILTIN_PROFILES, parse_config_str};
