//! The open-loop generator: connections, pacing, timing, checks and captures.
