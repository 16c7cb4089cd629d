//! Which sessions of a schedule one sender takes: the one sharding rule of the project.
//!
//! Session k goes to shard k mod N. A session's path and think times depend only on the seed and
//! k (`schedule.rs`), so the shards of a schedule hold exactly its sessions, each once, at the same
//! intended times: the union of the shards is the schedule. The rule serves both the loops of one
//! generator (`generator.threads`, `engine/loops.rs`) and the processes of `run --shard i/N`, and
//! the two compose ([`Shard::split`]): loop j of T in process i of N takes the sessions
//! k ≡ i + N·j (mod N·T).

use std::fmt;
use std::str::FromStr;

/// The sessions of a schedule whose index is `index` modulo `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shard {
    /// This shard's number, from 0.
    pub index: usize,
    /// How many shards share the schedule (at least 1).
    pub count: usize,
}

/// The most shards of one run: far more generator machines than any run uses, and small enough
/// that a shard split into loops ([`Shard::split`]: count × loops, index + count × loop) never
/// overflows.
pub const MAX_SHARDS: usize = 100_000;

impl Shard {
    /// The whole schedule: one shard.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Whether session `session` (its index in the schedule) is this shard's.
    pub fn owns(self, session: u64) -> bool {
        let count = self.count.max(1) as u64;
        session % count == self.index as u64
    }

    /// Shard `inner` of this shard's sessions: the sessions k ≡ self.index (mod self.count) whose
    /// rank among them, (k − self.index) / self.count, is ≡ inner.index (mod inner.count); that is
    /// k ≡ self.index + self.count·inner.index (mod self.count·inner.count). Splitting the whole
    /// schedule gives `inner` itself; the `inner.count` parts of a shard hold its sessions, each
    /// once.
    pub fn split(self, inner: Shard) -> Shard {
        let count = self.count.max(1);
        Shard {
            index: self.index + count * inner.index,
            count: count.saturating_mul(inner.count.max(1)),
        }
    }

    /// Whether this is the whole schedule.
    pub fn is_whole(self) -> bool {
        self.count <= 1
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why `i/N` is not a shard.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardParseError {
    /// Not of the form `i/N` with two unsigned integers.
    #[error("expected INDEX/COUNT such as 0/4, got `{0}`")]
    Form(String),
    /// `N` is zero.
    #[error("the shard count must be at least 1, got `{0}`")]
    ZeroCount(String),
    /// `N` is more than [`MAX_SHARDS`].
    #[error("at most {max} shards, got `{text}`")]
    TooMany {
        /// What was given.
        text: String,
        /// [`MAX_SHARDS`].
        max: usize,
    },
    /// `i` is not below `N` (shards are numbered from 0).
    #[error(
        "shard index {index} is out of range for {count} shards: shards are numbered 0 to {last}"
    )]
    OutOfRange {
        /// The index given.
        index: usize,
        /// The count given.
        count: usize,
        /// The last index there is.
        last: usize,
    },
}

impl FromStr for Shard {
    type Err = ShardParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let form = || ShardParseError::Form(s.to_owned());
        let (index, count) = s.trim().split_once('/').ok_or_else(form)?;
        let index: usize = index.trim().parse().map_err(|_| form())?;
        let count: usize = count.trim().parse().map_err(|_| form())?;
        if count == 0 {
            return Err(ShardParseError::ZeroCount(s.to_owned()));
        }
        if count > MAX_SHARDS {
            return Err(ShardParseError::TooMany {
                text: s.to_owned(),
                max: MAX_SHARDS,
            });
        }
        if index >= count {
            return Err(ShardParseError::OutOfRange {
                index,
                count,
                last: count - 1,
            });
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use test_case::test_case;

    #[test_case("0/4", Shard { index: 0, count: 4 }; "first")]
    #[test_case("3/4", Shard { index: 3, count: 4 }; "last")]
    #[test_case(" 0/1 ", Shard::WHOLE; "one shard")]
    fn shards_parse(text: &str, expected: Shard) {
        assert_eq!(text.parse::<Shard>(), Ok(expected));
        assert_eq!(expected.to_string().parse::<Shard>(), Ok(expected));
    }

    #[test_case("4/4", "shard index 4 is out of range for 4 shards: shards are numbered 0 to 3"; "index past the end")]
    #[test_case("0/0", "the shard count must be at least 1, got `0/0`"; "no shards")]
    #[test_case("0/18446744073709551615", "at most 100000 shards, got `0/18446744073709551615`"; "so many that a split would overflow")]
    #[test_case("1", "expected INDEX/COUNT such as 0/4, got `1`"; "no slash")]
    #[test_case("-1/4", "expected INDEX/COUNT such as 0/4, got `-1/4`"; "negative")]
    #[test_case("a/b", "expected INDEX/COUNT such as 0/4, got `a/b`"; "not numbers")]
    fn bad_shards_say_why(text: &str, message: &str) {
        let err = text.parse::<Shard>().expect_err("refused");
        assert_eq!(err.to_string(), message);
    }

    proptest! {
        /// The loops of the process shards partition the sessions: every session belongs to
        /// exactly one (process, loop) pair, and to the loop's process.
        #[test]
        fn split_shards_partition_the_sessions(
            processes in 1usize..6,
            loops in 1usize..5,
            session in 0u64..10_000,
        ) {
            let mut owners = 0;
            for p in 0..processes {
                let process = Shard { index: p, count: processes };
                for l in 0..loops {
                    let part = process.split(Shard { index: l, count: loops });
                    if part.owns(session) {
                        owners += 1;
                        prop_assert!(process.owns(session));
                    }
                }
            }
            prop_assert_eq!(owners, 1);
        }
    }

    #[test]
    fn splitting_the_whole_is_the_identity() {
        let loop_shard = Shard { index: 2, count: 3 };
        assert_eq!(Shard::WHOLE.split(loop_shard), loop_shard);
        assert_eq!(loop_shard.split(Shard::WHOLE), loop_shard);
    }
}
