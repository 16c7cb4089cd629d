//! A bounded ring buffer of a target's output lines, shared between the task that follows the
//! output and whoever needs the tail (errors, reports).

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, PoisonError},
};

/// How many lines a target's ring keeps by default.
pub const DEFAULT_LOG_LINES: usize = 2000;
/// A longer line is cut to this many bytes, so one runaway line cannot hold the memory.
const MAX_LINE_BYTES: usize = 4096;

/// Which output stream a chunk came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

#[derive(Debug, Default)]
struct Inner {
    lines: VecDeque<String>,
    pending_out: Vec<u8>,
    pending_err: Vec<u8>,
    dropped: u64,
}

/// The last lines a target wrote, stdout and stderr interleaved in arrival order. Cloning shares it.
#[derive(Clone, Debug)]
pub struct LogRing {
    capacity: usize,
    inner: Arc<Mutex<Inner>>,
}

impl LogRing {
    /// A ring that keeps the last `capacity` lines (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Arc::default(),
        }
    }

    /// Appends a chunk of raw output; complete lines are stored, a trailing partial line waits for
    /// the rest of it (and is shown by [`LogRing::tail`] meanwhile).
    pub fn push_chunk(&self, stream: OutputStream, chunk: &[u8]) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Inner {
            lines,
            pending_out,
            pending_err,
            dropped,
        } = &mut *inner;
        let pending = match stream {
            OutputStream::Stdout => pending_out,
            OutputStream::Stderr => pending_err,
        };
        pending.extend_from_slice(chunk);
        while let Some(pos) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=pos).collect();
            push_line(lines, self.capacity, dropped, &line[..line.len() - 1]);
        }
        if pending.len() > MAX_LINE_BYTES {
            let line: Vec<u8> = std::mem::take(pending);
            push_line(lines, self.capacity, dropped, &line);
        }
    }

    /// Appends one complete line.
    pub fn push_line(&self, line: &str) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Inner { lines, dropped, .. } = &mut *inner;
        push_line(lines, self.capacity, dropped, line.as_bytes());
    }

    /// The last `n` lines, oldest first, including partial lines not yet ended by a newline.
    pub fn tail(&self, n: usize) -> Vec<String> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<String> = inner.lines.iter().cloned().collect();
        for pending in [&inner.pending_out, &inner.pending_err] {
            if !pending.is_empty() {
                all.push(clean(pending));
            }
        }
        let skip = all.len().saturating_sub(n);
        all.split_off(skip)
    }

    /// Whether any line (complete or partial) contains `needle`, ignoring ASCII case.
    pub fn contains_ignore_case(&self, needle: &str) -> bool {
        let needle = needle.to_ascii_lowercase();
        self.tail(self.capacity + 2)
            .iter()
            .any(|l| l.to_ascii_lowercase().contains(&needle))
    }

    /// How many lines were pushed out of the ring.
    pub fn dropped(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .dropped
    }
}

fn push_line(lines: &mut VecDeque<String>, capacity: usize, dropped: &mut u64, raw: &[u8]) {
    if lines.len() == capacity {
        lines.pop_front();
        *dropped += 1;
    }
    lines.push_back(clean(raw));
}

/// Lossy UTF-8, without a trailing `\r`, cut to [`MAX_LINE_BYTES`] on a character boundary.
fn clean(raw: &[u8]) -> String {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let mut s = String::from_utf8_lossy(raw).into_owned();
    if s.len() > MAX_LINE_BYTES {
        let mut cut = MAX_LINE_BYTES;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_in_order() {
        let ring = LogRing::new(3);
        for i in 0..5 {
            ring.push_line(&format!("line {i}"));
        }
        assert_eq!(ring.tail(10), ["line 2", "line 3", "line 4"]);
        assert_eq!(ring.tail(2), ["line 3", "line 4"]);
        assert_eq!(ring.dropped(), 2);
    }

    #[test]
    fn joins_chunks_into_lines_per_stream() {
        let ring = LogRing::new(10);
        ring.push_chunk(OutputStream::Stdout, b"hel");
        ring.push_chunk(OutputStream::Stderr, b"boom\r\nerr par");
        ring.push_chunk(OutputStream::Stdout, b"lo\nwor");
        assert_eq!(ring.tail(10), ["boom", "hello", "wor", "err par"]);
        ring.push_chunk(OutputStream::Stdout, b"ld\n");
        assert_eq!(ring.tail(10), ["boom", "hello", "world", "err par"]);
    }

    #[test]
    fn cuts_runaway_lines() {
        let ring = LogRing::new(4);
        ring.push_chunk(OutputStream::Stdout, &vec![b'x'; MAX_LINE_BYTES * 2 + 10]);
        ring.push_chunk(OutputStream::Stdout, b"next\n");
        let tail = ring.tail(4);
        assert_eq!(tail.len(), 2, "{tail:?}");
        assert_eq!(tail[0].len(), MAX_LINE_BYTES + '…'.len_utf8());
        assert_eq!(tail[1], "next");
    }

    #[test]
    fn invalid_utf8_is_lossy_not_fatal() {
        let ring = LogRing::new(2);
        ring.push_chunk(OutputStream::Stderr, b"bad \xff byte\n");
        assert_eq!(ring.tail(1), ["bad \u{fffd} byte"]);
    }

    #[test]
    fn finds_text_ignoring_case() {
        let ring = LogRing::new(2);
        ring.push_line("Error: Address already in use (os error 98)");
        assert!(ring.contains_ignore_case("address already in use"));
        assert!(!ring.contains_ignore_case("permission denied"));
    }
}
