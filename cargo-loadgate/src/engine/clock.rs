//! The engine's clock: `CLOCK_MONOTONIC`, read through the vDSO (about 20 ns a read), as offsets
//! from a phase's origin. The same clock arms the pacing timer, so an intended time and the
//! timer's deadline are the same number.

use nix::sys::time::TimeSpec;
use nix::time::ClockId;
use std::time::Duration;

/// A monotonic clock whose readings are offsets from an origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    origin: Duration,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn start() -> Self {
        Self {
            origin: monotonic_now(),
        }
    }

    /// A clock whose origin is the absolute `CLOCK_MONOTONIC` reading `origin`: the loops of one
    /// phase share one, so that an intended time means the same instant on each of them.
    pub fn with_origin(origin: Duration) -> Self {
        Self { origin }
    }

    /// Time since the origin.
    pub fn now(&self) -> Duration {
        monotonic_now().saturating_sub(self.origin)
    }

    /// The offset of an absolute `CLOCK_MONOTONIC` reading (zero for one before the origin).
    pub fn offset_of(&self, absolute: Duration) -> Duration {
        absolute.saturating_sub(self.origin)
    }

    /// The absolute `CLOCK_MONOTONIC` reading of offset `at`.
    pub fn absolute(&self, at: Duration) -> Duration {
        self.origin + at
    }
}

/// The raw `CLOCK_MONOTONIC` reading.
pub fn monotonic_now() -> Duration {
    // `clock_gettime` fails only for an unknown clock or a bad pointer, and this call passes
    // neither: the zero is never read, it only keeps the hot path free of a panic branch.
    let ts = nix::time::clock_gettime(ClockId::CLOCK_MONOTONIC).unwrap_or(TimeSpec::new(0, 0));
    Duration::new(
        u64::try_from(ts.tv_sec()).unwrap_or(0),
        u32::try_from(ts.tv_nsec()).unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_never_goes_backwards_and_tracks_wall_time() {
        let clock = Clock::start();
        let mut last = clock.now();
        for _ in 0..10_000 {
            let now = clock.now();
            assert!(now >= last);
            last = now;
        }
        std::thread::sleep(Duration::from_millis(20));
        let now = clock.now();
        assert!(
            now >= Duration::from_millis(20) && now < Duration::from_secs(5),
            "{now:?}"
        );
        assert_eq!(clock.absolute(now) - clock.absolute(Duration::ZERO), now);
        assert_eq!(clock.offset_of(clock.absolute(now)), now);
        assert_eq!(clock.offset_of(Duration::ZERO), Duration::ZERO);
    }
}
