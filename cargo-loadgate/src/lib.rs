//! cargo-loadgate: a cargo subcommand and CI gate for the performance of HTTP services.
//!
//! Data flows one way: config → plan → engine events → measure → result → compare → verdict →
//! reporters. Each stage is one module; the binary (`main.rs`) only parses, dispatches and renders.

pub mod baseline;
pub mod calibrate;
pub mod cli;
pub mod compare;
pub mod config;
pub mod engine;
pub mod image;
pub mod logs;
pub mod measure;
pub mod plan;
pub mod report;
pub mod result;
pub mod stats;
pub mod stub;
pub mod targets;
pub mod workload;
