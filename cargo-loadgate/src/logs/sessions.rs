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

/// How a session's end was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// A gap longer than the session gap followed it: it ended.
    Ended,
    /// The log ended within the gap of its last request, so its end is unknown; it started more
    /// than two gaps before the log's end.
    Cut,
    /// It started within two session gaps of the log's end, whether or not it was seen ending.
    /// Sessions that started earlier had a gap to end in and a gap to be seen ending, so the cut
    /// ones among them are the rare ones longer than a gap, and choosing sessions by their start
    /// does not favour short ones (as keeping the late ones that happened to end would).
    Late,
}

/// One session, as it is handed over once its end is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session<'a> {
    /// When its first request started, in microseconds since the epoch.
    pub start_us: i64,
    /// Its first operation.
    pub first: usize,
    /// Each later request: its operation and the think time before it, in microseconds (the gap
    /// less the previous answer time).
    pub steps: &'a [(usize, i64)],
    /// Its requests per operation.
    pub counts: &'a [u64],
    /// How its end was seen.
    pub end: SessionEnd,
}

impl Session<'_> {
    /// Its last operation.
    pub fn last(&self) -> usize {
        self.steps.last().map_or(self.first, |s| s.0)
    }
}

/// Where sessions go as they are formed.
pub trait SessionSink {
    /// A session whose end is known, or the log's end cut.
    fn session(&mut self, session: &Session<'_>);
}

#[derive(Debug)]
struct Open {
    start_us: i64,
    first: usize,
    steps: Vec<(usize, i64)>,
    /// When the last request's answer was complete (its start plus its answer time).
    last_end_us: i64,
    counts: Vec<u64>,
}

impl Open {
    fn new(operations: usize, op: usize, start_us: i64, end_us: i64) -> Self {
        let mut counts = vec![0; operations];
        if let Some(c) = counts.get_mut(op) {
            *c = 1;
        }
        Self {
            start_us,
            first: op,
            steps: Vec::new(),
            last_end_us: end_us,
            counts,
        }
    }

    fn emit(&self, sink: &mut impl SessionSink, end: SessionEnd) {
        sink.session(&Session {
            start_us: self.start_us,
            first: self.first,
            steps: &self.steps,
            counts: &self.counts,
            end,
        });
    }
}

/// Forms sessions from requests in time order.
///
/// A session is handed to the sink when a gap longer than the session gap follows it, and at
/// [`Sessionizer::finish`] the open ones as censored: the log's end leaves their end unknown.
#[derive(Debug)]
pub struct Sessionizer {
    open: HashMap<Box<[u8]>, Open>,
    /// Ended sessions that started less than two gaps ago: whether they are late is known only
    /// when the log's end is (bounded by the arrivals of two gaps, so memory stays flat).
    pending: Vec<Open>,
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
            pending: Vec::new(),
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
                s.steps.push((op, think.max(0)));
                s.last_end_us = s.last_end_us.max(end_us);
                s.counts[op] += 1;
            }
            Some(s) => {
                let next = Open::new(self.operations, op, start_us, end_us);
                self.pending.push(std::mem::replace(s, next));
                self.sessions += 1;
            }
            None => {
                let next = Open::new(self.operations, op, start_us, end_us);
                self.open.insert(key.into(), next);
                self.sessions += 1;
            }
        }
    }

    /// Hands over every open session: the log is over.
    pub fn finish(&mut self, sink: &mut impl SessionSink) {
        self.sweep(sink, true);
    }

    fn sweep(&mut self, sink: &mut impl SessionSink, at_end: bool) {
        let (now, gap) = (self.now_us, self.gap_us);
        let pending = &mut self.pending;
        self.open.retain(|_, s| {
            let silent = now.saturating_sub(s.last_end_us) > gap;
            if silent || at_end {
                pending.push(std::mem::replace(s, Open::new(0, 0, 0, 0)));
            }
            !silent && !at_end
        });
        let late_after = now.saturating_sub(gap.saturating_mul(2));
        self.pending.retain(|s| {
            let late = s.start_us >= late_after;
            let silent = now.saturating_sub(s.last_end_us) > gap;
            if !late {
                s.emit(
                    sink,
                    if silent {
                        SessionEnd::Ended
                    } else {
                        SessionEnd::Cut
                    },
                );
            } else if at_end {
                s.emit(sink, SessionEnd::Late);
            }
            late && !at_end
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Record(Vec<String>);

    impl SessionSink for Record {
        fn session(&mut self, s: &Session<'_>) {
            self.0.push(format!(
                "at {} from {} via {:?} to {} {:?} {:?}",
                s.start_us,
                s.first,
                s.steps,
                s.last(),
                s.counts,
                s.end
            ));
        }
    }

    #[test]
    fn a_gap_ends_a_session_and_keys_keep_sessions_apart() {
        let mut s = Sessionizer::new(2, 100);
        let mut r = Record::default();
        s.push(&mut r, b"a", 0, 0, 10);
        s.push(&mut r, b"b", 0, 5, 0);
        s.push(&mut r, b"a", 1, 50, 5); // think 40
        s.push(&mut r, b"a", 0, 300, 0); // 245 after a's last answer: b and a ended
        s.push(&mut r, b"c", 1, 360, 0);
        s.finish(&mut r);
        assert_eq!(s.sessions, 4);
        // A sweep hands sessions over in no particular order.
        r.0.sort();
        let mut expected = vec![
            "at 0 from 0 via [(1, 40)] to 1 [1, 1] Ended",
            "at 5 from 0 via [] to 0 [1, 0] Ended",
            // At the log's end (360): a started 60 before it, c at it: both within 2 gaps.
            "at 300 from 0 via [] to 0 [1, 0] Late",
            "at 360 from 1 via [] to 1 [0, 1] Late",
        ];
        expected.sort_unstable();
        assert_eq!(r.0, expected);
    }

    #[test]
    fn a_session_open_at_the_end_but_started_earlier_is_cut_and_a_late_one_is_late_even_ended() {
        let mut s = Sessionizer::new(1, 100);
        let mut r = Record::default();
        for t in [0, 80, 160, 240, 320] {
            s.push(&mut r, b"a", 0, t, 0);
        }
        s.push(&mut r, b"b", 0, 190, 0); // ended by 320, but started within 200 of the end
        s.finish(&mut r);
        r.0.sort();
        assert_eq!(
            r.0,
            [
                "at 0 from 0 via [(0, 80), (0, 80), (0, 80), (0, 80)] to 0 [5] Cut",
                "at 190 from 0 via [] to 0 [1] Late",
            ]
        );
    }

    #[test]
    fn overlapping_requests_think_zero() {
        let mut s = Sessionizer::new(1, 1_000);
        let mut r = Record::default();
        s.push(&mut r, b"a", 0, 0, 50);
        s.push(&mut r, b"a", 0, 20, 5);
        s.finish(&mut r);
        assert_eq!(s.overlapping, 1);
        assert!(r.0[0].contains("via [(0, 0)]"), "{:?}", r.0);
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
