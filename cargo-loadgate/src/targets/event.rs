//! Progress events of booting a target, so that the command line can print one line per step
//! without the library printing anything.

use std::time::Duration;

/// One step of [`boot`](super::boot).
#[derive(Clone, Debug, PartialEq)]
pub enum BootEvent {
    /// A build started: the binary (`cargo build …`) or an image.
    Building {
        /// What is being built, for a person.
        what: String,
    },
    /// One line cargo or the image builder wrote while building (cargo's human diagnostics).
    BuildOutput {
        /// The line, without its newline.
        line: String,
    },
    /// A build finished, or an existing artifact was reused.
    Built {
        /// The binary path or the image tag.
        artifact: String,
        /// Whether an existing image was reused because the binary was unchanged.
        reused: bool,
    },
    /// The binary could not be packed as a static executable; its shared libraries (from `ldd`) and
    /// the dynamic loader are copied into the image instead.
    DynamicFallback {
        /// Why the static build was not used.
        reason: String,
    },
    /// The container or process is being started.
    Starting {
        /// What is started, for a person.
        what: String,
    },
    /// Something the person running the gate should know about how the target runs (a fallback,
    /// an exposure); also recorded with the run where it matters.
    Warning {
        /// The warning, a sentence fragment.
        message: String,
    },
    /// The readiness check succeeded.
    Ready {
        /// How long after the start it succeeded.
        after: Duration,
    },
}
