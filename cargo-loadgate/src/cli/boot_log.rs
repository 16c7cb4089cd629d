//! What a person sees of a target's boot, and where the build's own lines go.
//!
//! cargo's and the image builder's lines (`Compiling …`, `Step 1/6 : FROM scratch`, …) are
//! written to `build.log` in the out-dir, not to the terminal: a CI log should show what the gate
//! did, one line per build ("Built image … in 2.1 s"). A failed build still shows the tail of
//! those lines, which the error carries (`TargetError::Build`), and the log keeps all of them.

use crate::targets::BootEvent;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// The file name of the build log in the out-dir.
pub const BUILD_LOG: &str = "build.log";

/// Prints boot events to stderr and writes build output to the build log.
#[derive(Debug)]
pub(crate) struct BootReporter {
    path: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The open log, once a build line arrived.
    file: Option<File>,
    /// The log could not be opened or written: build lines go to stderr instead, so none is lost.
    unwritable: bool,
    /// When the current build started.
    since: Option<Instant>,
}

impl BootReporter {
    /// A reporter writing build output to `out_dir/build.log`. A log left by an earlier run is
    /// replaced when this run's first build line arrives, so the file never shows another run's
    /// build beside this run's result.
    pub(crate) fn new(out_dir: &Path) -> Self {
        Self {
            path: out_dir.join(BUILD_LOG),
            state: Mutex::new(State::default()),
        }
    }

    /// Reports one boot event: a line on stderr, or a line in the build log.
    pub(crate) fn event(&self, event: BootEvent) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            BootEvent::Building { what } => {
                state.since = Some(Instant::now());
                eprintln!("    Building {what} (output in {})", self.path.display());
            }
            BootEvent::BuildOutput { line } => {
                if !state.unwritable && state.file.is_none() {
                    match open_log(&self.path) {
                        Ok(file) => state.file = Some(file),
                        Err(e) => {
                            state.unwritable = true;
                            eprintln!(
                                "     Warning cannot write the build log {}: {e}; build output follows here",
                                self.path.display()
                            );
                        }
                    }
                }
                let written = state
                    .file
                    .as_mut()
                    .is_some_and(|file| writeln!(file, "{line}").is_ok());
                if !written {
                    state.file = None;
                    state.unwritable = true;
                    eprintln!("{line}");
                }
            }
            BootEvent::Built { artifact, reused } => {
                let took = state.since.take().map(|t| t.elapsed());
                if reused {
                    eprintln!("      Reused {artifact} (binary unchanged)");
                } else {
                    match took {
                        Some(took) => {
                            eprintln!("       Built {artifact} in {:.1} s", took.as_secs_f64())
                        }
                        None => eprintln!("       Built {artifact}"),
                    }
                }
            }
            BootEvent::DynamicFallback { reason } => {
                eprintln!("     Warning {reason}; packing the binary with its shared libraries")
            }
            BootEvent::Starting { what } => eprintln!("    Starting {what}"),
            BootEvent::Warning { message } => eprintln!("     Warning {message}"),
            BootEvent::Ready { after } => {
                eprintln!("       Ready after {} ms", after.as_millis())
            }
        }
    }
}

/// Creates (or truncates) the log, with its directory.
fn open_log(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    File::create(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_lines_go_to_the_log_and_replace_an_earlier_one() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join(BUILD_LOG), "an earlier run's build\n").unwrap();
        let reporter = BootReporter::new(&out);
        reporter.event(BootEvent::Building {
            what: "image loadgate/demo".into(),
        });
        for line in ["Step 1/6 : FROM scratch", "Step 2/6 : COPY demo /demo"] {
            reporter.event(BootEvent::BuildOutput { line: line.into() });
        }
        reporter.event(BootEvent::Built {
            artifact: "loadgate/demo:abc".into(),
            reused: false,
        });
        assert_eq!(
            std::fs::read_to_string(&reporter.path).unwrap(),
            "Step 1/6 : FROM scratch\nStep 2/6 : COPY demo /demo\n"
        );
    }

    #[test]
    fn a_boot_without_a_build_leaves_no_log() {
        let dir = tempfile::tempdir().unwrap();
        let reporter = BootReporter::new(dir.path());
        reporter.event(BootEvent::Starting {
            what: "process".into(),
        });
        assert!(!reporter.path.exists());
    }

    #[test]
    fn an_unwritable_log_is_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        // The out-dir is a file: the log cannot be created beneath it.
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, "").unwrap();
        let reporter = BootReporter::new(&blocked);
        reporter.event(BootEvent::BuildOutput {
            line: "Compiling demo".into(),
        });
        reporter.event(BootEvent::BuildOutput {
            line: "Finished".into(),
        });
        assert!(!reporter.path.exists());
    }
}
