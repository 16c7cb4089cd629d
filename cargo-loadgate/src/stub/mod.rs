//! Downstream stubs (issue 15, seed 000): fake dependencies that loadgate serves on loopback
//! beside the target, each with its routes, a seeded latency distribution, an error share and a
//! timeout share. The service learns a stub's address from the environment variable the config
//! names. A stub records what it served (its delays, per second and per state of its faults), so
//! that a report can tell the dependency's latency from the service's own, and so that a fault on
//! a stub is verified from the stub's side.

pub mod fault;
pub mod latency;
pub mod server;

pub use latency::{Latency, TablePoint, parse_quantile_name, quantile_name};
pub use server::{
    Applied, Route, RouteRecord, RunningStub, StubController, StubFault, StubPercentiles,
    StubRecord, StubSecond, StubSpec,
};

use crate::config::StubConfig;
use crate::targets::TargetError;

/// The stubs of one run, serving from before the target boots until the run ends (or they are
/// dropped: each stops on its own thread).
#[derive(Debug, Default)]
pub struct StubSet {
    running: Vec<(String, RunningStub)>,
}

impl StubSet {
    /// Starts every stub of `configs`, their streams derived from the workload's `seed`. A stub
    /// that cannot listen (its port taken) stops those already started and is an error.
    pub fn start(configs: &[StubConfig], seed: u64) -> Result<Self, TargetError> {
        let mut set = StubSet::default();
        for config in configs {
            match RunningStub::start(config.spec(seed)) {
                Ok(stub) => set.running.push((config.env.clone(), stub)),
                Err(source) => {
                    return Err(TargetError::StubListen {
                        name: config.name.clone(),
                        port: config.port,
                        source,
                    });
                }
            }
        }
        Ok(set)
    }

    /// Whether no stub runs.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// The target's environment the stubs give it: each `env` with its stub's URL.
    pub fn env(&self) -> Vec<(String, String)> {
        self.running
            .iter()
            .map(|(env, stub)| (env.clone(), stub.url()))
            .collect()
    }

    /// Each stub's name, URL and environment variable, for the terminal.
    pub fn lines(&self) -> Vec<String> {
        self.running
            .iter()
            .map(|(env, stub)| {
                format!(
                    "{} at {} (${env}; latency {})",
                    stub.name(),
                    stub.url(),
                    stub.latency().describe()
                )
            })
            .collect()
    }

    /// The stub named `name`.
    pub fn get(&self, name: &str) -> Option<&RunningStub> {
        self.running
            .iter()
            .map(|(_, s)| s)
            .find(|s| s.name() == name)
    }

    /// Every stub's figures so far.
    pub fn records(&self) -> Vec<StubRecord> {
        self.running.iter().map(|(_, s)| s.record()).collect()
    }

    /// Stops every stub and returns their figures.
    pub fn stop(self) -> Vec<StubRecord> {
        self.running.into_iter().map(|(_, s)| s.stop()).collect()
    }
}
