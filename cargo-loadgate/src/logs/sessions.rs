//! Sessions from requests: the requests sharing a key (a client address, a cookie, a header or a
//! field) form one session until an inactivity gap longer than `--session-gap` ends it.
//!
//! Memory holds only the sessions open at the moment (swept as the log's clock passes their gap),
//! so it is flat in the length of the log.

use super::parse::LogLine;
use std::collections::HashMap;
use std::fmt;

/// What ties the requests of one session together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionKey {
    /// The client address (`%h`, or the JSON `client` field).
    Client,
    /// A cookie of that name, from a logged `Cookie` header.
    Cookie(String),
    /// A logged request header, written as an extra field (`x_user=…`: lower case, `-` as `_`).
    Header(String),
    /// An extra field of the line (`name=value`) or a JSON member.
    Field(String),
}

impl SessionKey {
    /// Parses `client`, `cookie:NAME`, `header:NAME` or `field:NAME`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("expected `client`, `cookie:NAME`, `header:NAME` or `field:NAME`, got `{s}`")
        };
        match s.split_once(':') {
            None if s == "client" => Ok(Self::Client),
            Some((kind, name)) if !name.is_empty() => match kind {
                "cookie" => Ok(Self::Cookie(name.to_owned())),
                "header" => Ok(Self::Header(name.to_ascii_lowercase().replace('-', "_"))),
                "field" => Ok(Self::Field(name.to_owned())),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }

    /// The key's value on `line`, if it has one (`-` and empty count as none).
    pub fn value<'a>(&self, line: &LogLine<'a>, cookie_field: &str) -> Option<&'a [u8]> {
        let v = match self {
            Self::Client => Some(line.client),
            Self::Cookie(name) => line.extra.cookie(name, cookie_field),
            Self::Header(name) | Self::Field(name) => line.extra.field(name),
        }?;
        (!v.is_empty() && v != b"-").then_some(v)
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Client => f.write_str("client"),
            Self::Cookie(n) => write!(f, "cookie:{n}"),
            Self::Header(n) => write!(f, "header:{n}"),
            Self::Field(n) => write!(f, "field:{n}"),
        }
    }
}

/// Where sessions go as they are formed.
pub trait SessionSink {
    /// A session starts at operation `op` at `time_us`.
    fn start(&mut self, op: usize, time_us: i64);
    /// A session goes from `from` to `to` after `think_us` (the gap less the answer time).
    fn step(&mut self, from: usize, to: usize, think_us: i64);
    /// A session ends after `last`; `counts` are its visits per operation.
    fn end(&mut self, last: usize, counts: &[u64]);
}

#[derive(Debug)]
struct Open {
    last_op: usize,
    /// When the last request's answer was complete (its start plus its answer time).
    last_end_us: i64,
    counts: Vec<u64>,
}

/// Forms sessions from requests in time order.
#[derive(Debug)]
pub struct Sessionizer {
    open: HashMap<Box<[u8]>, Open>,
    gap_us: i64,
    operations: usize,
    now_us: i64,
    last_sweep_us: i64,
    /// Requests whose start lies before the end of the session's previous answer: the think time
    /// is taken as 0 for them.
    pub overlapping: u64,
    /// Sessions formed so far.
    pub sessions: u64,
}

impl Sessionizer {
    /// A sessionizer over `operations` operations ending sessions after `gap_us` of silence.
    pub fn new(operations: usize, gap_us: i64) -> Self {
        Self {
            open: HashMap::new(),
            gap_us,
            operations,
            now_us: i64::MIN,
            last_sweep_us: i64::MIN,
            overlapping: 0,
            sessions: 0,
        }
    }

    /// Adds a request of operation `op` under `key`, starting at `start_us` and answered after
    /// `answer_us`.
    pub fn push(
        &mut self,
        sink: &mut impl SessionSink,
        key: &[u8],
        op: usize,
        start_us: i64,
        answer_us: i64,
    ) {
        self.now_us = self.now_us.max(start_us);
        if self.now_us.saturating_sub(self.last_sweep_us) > self.gap_us / 4 {
            self.sweep(sink, false);
            self.last_sweep_us = self.now_us;
        }
        let end_us = start_us + answer_us.max(0);
        match self.open.get_mut(key) {
            Some(s) if start_us - s.last_end_us <= self.gap_us => {
                let think = start_us - s.last_end_us;
                if think < 0 {
                    self.overlapping += 1;
                }
                sink.step(s.last_op, op, think.max(0));
                s.last_op = op;
                s.last_end_us = s.last_end_us.max(end_us);
                s.counts[op] += 1;
            }
            Some(s) => {
                sink.end(s.last_op, &s.counts);
                s.counts.iter_mut().for_each(|c| *c = 0);
                s.counts[op] = 1;
                s.last_op = op;
                s.last_end_us = end_us;
                self.sessions += 1;
                sink.start(op, start_us);
            }
            None => {
                let mut counts = vec![0; self.operations];
                counts[op] = 1;
                self.open.insert(
                    key.into(),
                    Open {
                        last_op: op,
                        last_end_us: end_us,
                        counts,
                    },
                );
                self.sessions += 1;
                sink.start(op, start_us);
            }
        }
    }

    /// Ends every open session (the log is over).
    pub fn finish(&mut self, sink: &mut impl SessionSink) {
        self.sweep(sink, true);
    }

    fn sweep(&mut self, sink: &mut impl SessionSink, all: bool) {
        let (now, gap) = (self.now_us, self.gap_us);
        self.open.retain(|_, s| {
            let keep = !all && now.saturating_sub(s.last_end_us) <= gap;
            if !keep {
                sink.end(s.last_op, &s.counts);
            }
            keep
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Record(Vec<String>);

    impl SessionSink for Record {
        fn start(&mut self, op: usize, t: i64) {
            self.0.push(format!("start {op} at {t}"));
        }
        fn step(&mut self, from: usize, to: usize, think: i64) {
            self.0.push(format!("{from}->{to} after {think}"));
        }
        fn end(&mut self, last: usize, counts: &[u64]) {
            self.0.push(format!("end after {last} {counts:?}"));
        }
    }

    #[test]
    fn a_gap_ends_a_session_and_keys_keep_sessions_apart() {
        let mut s = Sessionizer::new(2, 100);
        let mut r = Record::default();
        s.push(&mut r, b"a", 0, 0, 10);
        s.push(&mut r, b"b", 0, 5, 0);
        s.push(&mut r, b"a", 1, 50, 5); // think 40
        s.push(&mut r, b"a", 0, 300, 0); // gap 245 > 100: a new session
        s.finish(&mut r);
        assert_eq!(s.sessions, 3);
        // A sweep ends sessions in no particular order.
        r.0.sort();
        let mut expected = vec![
                "start 0 at 0",
                "start 0 at 5",
                "0->1 after 40",
                // The sweep at 300 ends b (silent since 5) and a (silent since 55).
                "end after 0 [1, 0]",
                "end after 1 [1, 1]",
                "start 0 at 300",
                "end after 0 [1, 0]",
            ];
        expected.sort_unstable();
        assert_eq!(r.0, expected);
    }

    #[test]
    fn overlapping_requests_think_zero() {
        let mut s = Sessionizer::new(1, 1_000);
        let mut r = Record::default();
        s.push(&mut r, b"a", 0, 0, 50);
        s.push(&mut r, b"a", 0, 20, 5);
        assert_eq!(s.overlapping, 1);
        assert_eq!(r.0[1], "0->0 after 0");
    }

    #[test]
    fn keys_parse() {
        assert_eq!(SessionKey::parse("client"), Ok(SessionKey::Client));
        assert_eq!(
            SessionKey::parse("header:X-User"),
            Ok(SessionKey::Header("x_user".to_owned()))
        );
        assert_eq!(
            SessionKey::parse("cookie:sid").unwrap().to_string(),
            "cookie:sid"
        );
        assert!(SessionKey::parse("ip").is_err());
        assert!(SessionKey::parse("field:").is_err());
    }
}
