//! The hot path's HTTP/1.1 on the wire: a request encoded once into its bytes, an answer parsed
//! with `httparse` and read to the end its framing gives.
//!
//! Why not hyper here (docs/decisions.md, *A minimal HTTP/1.1 client on the hot path*): per
//! request hyper built an `http::Request` (a `Uri` parse, a `HeaderMap`), moved it through its
//! dispatcher, encoded it, parsed the answer into another `HeaderMap` and collected the body
//! through its `Body` frames. The engine needs none of that: it knows the request's bytes when
//! the session renders them, and of the answer it keeps the status and the body. hyper stays for
//! readiness probes and setup.
//!
//! What is supported is what a load generator meets from HTTP/1.x servers: `Content-Length` and
//! `chunked` bodies (trailers skipped), bodies to the close of the connection, answers without a
//! body (to `HEAD`, 1xx, 204, 304), interim 1xx answers skipped, `Connection: close` and
//! HTTP/1.0 keep-alive. Anything else malformed is an error of kind
//! [`TransportErrorKind::Other`]; a connection that ends before the answer is complete is a
//! [`TransportErrorKind::Reset`], as hyper's incomplete message was.

use crate::measure::TransportErrorKind;
use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Method, header};

/// The most header lines an answer may have (hyper's default is 100).
const MAX_HEADERS: usize = 100;

/// The longest answer head or chunk-size line accepted before the answer is called malformed.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// What follows the request target, up to the `Host` header's value.
const VERSION_HOST: &[u8] = b" HTTP/1.1\r\nhost: ";

/// The header added to a JSON body that has no `content-type` of its own.
const CONTENT_TYPE_JSON: &[u8] = b"content-type: application/json\r\n";

/// The header line of a body's length, up to its digits.
const CONTENT_LENGTH: &[u8] = b"content-length: ";

/// How many decimal digits `n` has.
fn decimal_digits(mut n: usize) -> usize {
    let mut digits = 1;
    while n >= 10 {
        n /= 10;
        digits += 1;
    }
    digits
}

/// One request, encoded for the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireRequest {
    bytes: Bytes,
    /// A `HEAD` request: its answer has no body whatever its headers say.
    head: bool,
    /// The request says `Connection: close`.
    close: bool,
}

impl WireRequest {
    /// The request's bytes: request line, headers and body.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Encodes a request for `target` (origin form: `/` then the path and query; a `#fragment`
    /// is cut off, as a URI's is never sent) on `host`, with `headers` in order, then
    /// `content-type: application/json` when `json` and no `content-type` is given, and `body`.
    /// A `host` among `headers` replaces the URL's (a virtual host behind an address); a
    /// `content-length` or `transfer-encoding` among them is replaced by the body's real length,
    /// sent whenever the body is not empty (as hyper did). `None` when the target is not a valid
    /// origin-form request target (it must start with `/` and hold only visible ASCII).
    pub fn encode(
        method: &Method,
        target: &[&str],
        host: &HeaderValue,
        headers: &[(HeaderName, HeaderValue)],
        json: bool,
        body: &[u8],
    ) -> Option<Self> {
        let first = target.iter().find(|p| !p.is_empty())?;
        if !first.starts_with('/') {
            return None;
        }
        let host = headers
            .iter()
            .rev()
            .find(|(n, _)| *n == header::HOST)
            .map_or(host, |(_, v)| v);
        // The exact length first: a `Vec` filled to its capacity becomes `Bytes` without a
        // second allocation (`Bytes::from` boxes a shared header for a `Vec` with room left).
        let target_bytes = || {
            target
                .iter()
                .flat_map(|p| p.bytes())
                .take_while(|b| *b != b'#')
        };
        let sent = |name: &HeaderName| {
            *name != header::CONTENT_LENGTH
                && *name != header::TRANSFER_ENCODING
                && *name != header::HOST
        };
        let mut has_content_type = false;
        let mut close = false;
        let mut headers_len = 0;
        for (name, value) in headers.iter().filter(|(name, _)| sent(name)) {
            has_content_type |= *name == header::CONTENT_TYPE;
            close |= *name == header::CONNECTION && has_token(value.as_bytes(), b"close");
            headers_len += name.as_str().len() + 2 + value.len() + 2;
        }
        let content_type = json && !has_content_type;
        let length = method.as_str().len()
            + 1
            + target_bytes().count()
            + VERSION_HOST.len()
            + host.len()
            + 2
            + headers_len
            + if content_type {
                CONTENT_TYPE_JSON.len()
            } else {
                0
            }
            + if body.is_empty() {
                0
            } else {
                CONTENT_LENGTH.len() + decimal_digits(body.len()) + 2
            }
            + 2
            + body.len();
        let mut out = Vec::with_capacity(length);
        out.extend_from_slice(method.as_str().as_bytes());
        out.push(b' ');
        for b in target_bytes() {
            if !b.is_ascii_graphic() {
                return None;
            }
            out.push(b);
        }
        out.extend_from_slice(VERSION_HOST);
        out.extend_from_slice(host.as_bytes());
        out.extend_from_slice(b"\r\n");
        for (name, value) in headers.iter().filter(|(name, _)| sent(name)) {
            out.extend_from_slice(name.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if content_type {
            out.extend_from_slice(CONTENT_TYPE_JSON);
        }
        if !body.is_empty() {
            use std::io::Write as _;
            out.extend_from_slice(CONTENT_LENGTH);
            // Writing into a Vec cannot fail.
            let _ = write!(out, "{}\r\n", body.len());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
        debug_assert_eq!(out.len(), length, "the encoded length was computed wrong");
        debug_assert_eq!(
            out.capacity(),
            length,
            "the buffer must be full to become `Bytes` as is"
        );
        Some(Self {
            bytes: Bytes::from(out),
            head: *method == Method::HEAD,
            close,
        })
    }

    /// Whether the request asks the server to close the connection after its answer: the
    /// connection is not used again, whatever the answer says.
    pub fn closes(&self) -> bool {
        self.close
    }

    /// Whether this is a `HEAD` request.
    pub fn is_head(&self) -> bool {
        self.head
    }
}

/// Whether a comma-separated header value (`Connection`) holds `token`, case-insensitively.
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|b| *b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// How an answer's body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    /// No body.
    Empty,
    /// Exactly this many bytes.
    Length(usize),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
}

/// A parsed answer head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    status: u16,
    framing: Framing,
    /// The connection may carry another request after this answer.
    keep_alive: bool,
    /// The head's length in bytes, blank line included.
    len: usize,
}

/// Parses an answer head at the start of `buf`: `Ok(None)` when it is not complete yet.
fn parse_head(buf: &[u8], head_request: bool) -> Result<Option<Head>, TransportErrorKind> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD_BYTES => return Ok(None),
        Ok(httparse::Status::Partial) | Err(_) => return Err(TransportErrorKind::Other),
    };
    let status = response.code.ok_or(TransportErrorKind::Other)?;
    let version = response.version.ok_or(TransportErrorKind::Other)?;
    let mut keep_alive = version >= 1;
    let mut close = false;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut encoded = false;
    for h in response.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let digits = h.value.trim_ascii();
            let value = std::str::from_utf8(digits)
                .ok()
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or(TransportErrorKind::Other)?;
            if length.is_some_and(|l| l != value) {
                return Err(TransportErrorKind::Other);
            }
            length = Some(value);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            encoded = true;
            // The last coding decides: chunked must be the final one to delimit the body.
            chunked = h
                .value
                .rsplit(|b| *b == b',')
                .next()
                .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            if has_token(h.value, b"close") {
                close = true;
            } else if version == 0 && has_token(h.value, b"keep-alive") {
                keep_alive = true;
            }
        }
    }
    let framing = if head_request || (100..200).contains(&status) || status == 204 || status == 304
    {
        Framing::Empty
    } else if encoded {
        // Transfer-Encoding wins over Content-Length (RFC 9112 §6.3).
        if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    if close || framing == Framing::UntilClose {
        keep_alive = false;
    }
    Ok(Some(Head {
        status,
        framing,
        keep_alive,
        len,
    }))
}

/// Where a chunked body's decoder stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkState {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data, this many bytes left.
    Data(usize),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: trailer lines until an empty one.
    Trailer,
    /// The body is complete.
    Done,
}

/// Decodes as much of a chunked body as `buf` holds, consuming it from `buf` and appending the
/// data to `body`.
fn decode_chunked(
    state: &mut ChunkState,
    buf: &mut BytesMut,
    body: &mut BytesMut,
) -> Result<(), TransportErrorKind> {
    loop {
        match *state {
            ChunkState::Size | ChunkState::Trailer => {
                let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
                    if buf.len() > MAX_HEAD_BYTES {
                        return Err(TransportErrorKind::Other);
                    }
                    return Ok(());
                };
                let line = buf.split_to(end + 2);
                let line = &line[..end];
                if *state == ChunkState::Trailer {
                    if line.is_empty() {
                        *state = ChunkState::Done;
                    }
                    continue;
                }
                let size = line.split(|b| *b == b';').next().unwrap_or_default();
                let size = std::str::from_utf8(size.trim_ascii())
                    .ok()
                    .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit()))
                    .and_then(|s| usize::from_str_radix(s, 16).ok())
                    .ok_or(TransportErrorKind::Other)?;
                *state = if size == 0 {
                    ChunkState::Trailer
                } else {
                    ChunkState::Data(size)
                };
            }
            ChunkState::Data(left) => {
                if buf.is_empty() {
                    return Ok(());
                }
                let take = left.min(buf.len());
                body.extend_from_slice(&buf[..take]);
                buf.advance(take);
                *state = if take == left {
                    ChunkState::DataEnd
                } else {
                    ChunkState::Data(left - take)
                };
            }
            ChunkState::DataEnd => {
                if buf.len() < 2 {
                    return Ok(());
                }
                if &buf[..2] != b"\r\n" {
                    return Err(TransportErrorKind::Other);
                }
                buf.advance(2);
                *state = ChunkState::Size;
            }
            ChunkState::Done => return Ok(()),
        }
    }
}

/// What a connection must do to read one answer: fill `buf` (bytes already read are kept there
/// between answers) until [`AnswerReader::poll`] returns the answer.
#[derive(Debug)]
pub(super) struct AnswerReader {
    head_request: bool,
    head: Option<Head>,
    chunk: ChunkState,
    body: BytesMut,
}

/// One complete answer and whether its connection can carry another request.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Parsed {
    pub status: u16,
    pub body: Bytes,
    pub keep_alive: bool,
}

impl AnswerReader {
    /// A reader for the answer to a request (`head_request`: a `HEAD`).
    pub(super) fn new(head_request: bool) -> Self {
        Self {
            head_request,
            head: None,
            chunk: ChunkState::Size,
            body: BytesMut::new(),
        }
    }

    /// Consumes what it can of `buf`. `Ok(Some)` with the answer once complete, leaving any
    /// bytes after it in `buf`; `Ok(None)` when more bytes are needed. `eof` says the peer has
    /// closed: then an answer delimited by the close is complete, and any other is a reset.
    pub(super) fn poll(
        &mut self,
        buf: &mut BytesMut,
        eof: bool,
    ) -> Result<Option<Parsed>, TransportErrorKind> {
        let head = loop {
            if let Some(head) = self.head {
                break head;
            }
            match parse_head(buf, self.head_request)? {
                Some(head) if (100..200).contains(&head.status) => {
                    // An interim answer (100 Continue, 103 Early Hints): the final one follows;
                    // 101 would switch protocols, which a load generator does not ask for.
                    if head.status == 101 {
                        return Err(TransportErrorKind::Other);
                    }
                    buf.advance(head.len);
                }
                Some(head) => {
                    buf.advance(head.len);
                    self.head = Some(head);
                }
                None if eof => return Err(TransportErrorKind::Reset),
                None => return Ok(None),
            }
        };
        let done = |body: Bytes| {
            Ok(Some(Parsed {
                status: head.status,
                body,
                keep_alive: head.keep_alive,
            }))
        };
        match head.framing {
            Framing::Empty => done(Bytes::new()),
            // Split off, not copied: the body shares `buf`'s memory. The answer is classified and
            // dropped before its connection reads again (in the poll that received it; a failed
            // attempt kept through a retry's wait is copied off first), so the next read's
            // `reserve` finds `buf` the only owner and reuses it without allocating. A body kept
            // longer keeps its bytes; the reads go on past it, in a new buffer once `buf`'s
            // allocation is used up.
            Framing::Length(n) if buf.len() >= n => done(buf.split_to(n).freeze()),
            Framing::Length(_) if eof => Err(TransportErrorKind::Reset),
            Framing::Length(_) => Ok(None),
            Framing::Chunked => {
                decode_chunked(&mut self.chunk, buf, &mut self.body)?;
                if self.chunk == ChunkState::Done {
                    done(std::mem::take(&mut self.body).freeze())
                } else if eof {
                    Err(TransportErrorKind::Reset)
                } else {
                    Ok(None)
                }
            }
            Framing::UntilClose if eof => done(buf.split().freeze()),
            Framing::UntilClose => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(
        chunks: &[&[u8]],
        head_request: bool,
    ) -> Result<(Parsed, Vec<u8>), TransportErrorKind> {
        let mut reader = AnswerReader::new(head_request);
        let mut buf = BytesMut::new();
        for (i, chunk) in chunks.iter().enumerate() {
            buf.extend_from_slice(chunk);
            if let Some(p) = reader.poll(&mut buf, false)? {
                assert_eq!(i, chunks.len() - 1, "complete before its last byte");
                return Ok((p, buf.to_vec()));
            }
        }
        reader
            .poll(&mut buf, true)?
            .map(|p| (p, buf.to_vec()))
            .ok_or(TransportErrorKind::Reset)
    }

    /// Feeds `bytes` one byte at a time: the parser must not depend on how reads split them.
    fn bytewise(bytes: &[u8], head_request: bool) -> Result<(Parsed, Vec<u8>), TransportErrorKind> {
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        read_all(&chunks, head_request)
    }

    #[test]
    fn a_request_is_encoded_with_host_first_and_the_real_body_length() {
        let host = HeaderValue::from_static("127.0.0.1:8080");
        let headers = vec![
            (header::ACCEPT, HeaderValue::from_static("*/*")),
            (header::CONTENT_LENGTH, HeaderValue::from_static("999")),
        ];
        let r = WireRequest::encode(
            &Method::POST,
            &["/api", "/items?q=a%20b"],
            &host,
            &headers,
            true,
            b"{}",
        )
        .expect("valid");
        assert_eq!(
            std::str::from_utf8(r.bytes()).expect("ascii"),
            "POST /api/items?q=a%20b HTTP/1.1\r\nhost: 127.0.0.1:8080\r\naccept: */*\r\n\
             content-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
        );
        let get =
            WireRequest::encode(&Method::GET, &["", "/"], &host, &[], false, b"").expect("valid");
        assert_eq!(
            get.bytes(),
            b"GET / HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n\r\n"
        );
        let head =
            WireRequest::encode(&Method::HEAD, &["/x"], &host, &[], false, b"").expect("valid");
        assert!(head.is_head() && !get.is_head());
        // An empty body has no length, as with hyper; a given content-type is kept and not
        // doubled; a given host replaces the URL's; a fragment is not sent; a request that asks
        // for the close says so.
        let typed = vec![
            (header::CONTENT_TYPE, HeaderValue::from_static("text/plain")),
            (header::HOST, HeaderValue::from_static("shop.example")),
            (header::CONNECTION, HeaderValue::from_static("Close")),
        ];
        let post = WireRequest::encode(&Method::POST, &["/x?q=1#top"], &host, &typed, true, b"")
            .expect("valid");
        assert_eq!(
            std::str::from_utf8(post.bytes()).expect("ascii"),
            "POST /x?q=1 HTTP/1.1\r\nhost: shop.example\r\ncontent-type: text/plain\r\n\
             connection: Close\r\n\r\n"
        );
        assert!(post.closes() && !get.closes());
        for bad in ["x", "/a b", "/a\r\nevil: 1", "/é"] {
            assert!(
                WireRequest::encode(&Method::GET, &[bad], &host, &[], false, b"").is_none(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_encoded_length_is_computed_exactly_for_every_part() {
        // `encode` sizes its buffer before writing (a debug assertion checks it): each part that
        // adds to the length, alone and together, at the digit counts' edges.
        for (n, digits) in [(0, 1), (9, 1), (10, 2), (99, 2), (100, 3), (12_345, 5)] {
            assert_eq!(decimal_digits(n), digits, "{n}");
        }
        let host = HeaderValue::from_static("127.0.0.1:8080");
        let headers = [
            (header::HOST, HeaderValue::from_static("shop.example")),
            (
                header::TRANSFER_ENCODING,
                HeaderValue::from_static("chunked"),
            ),
            (header::ACCEPT, HeaderValue::from_static("*/*")),
            (
                HeaderName::from_static("x-trace"),
                HeaderValue::from_static(""),
            ),
        ];
        for body_len in [0, 1, 9, 10, 100, 12_345] {
            for json in [false, true] {
                for headers in [&headers[..], &headers[..1], &[]] {
                    let body = vec![b'x'; body_len];
                    let r = WireRequest::encode(
                        &Method::PUT,
                        &["/api", "/a?b=c#frag"],
                        &host,
                        headers,
                        json,
                        &body,
                    )
                    .expect("valid");
                    let text = std::str::from_utf8(r.bytes()).expect("ascii");
                    assert!(
                        text.starts_with("PUT /api/a?b=c HTTP/1.1\r\nhost: "),
                        "{text}"
                    );
                    assert!(text.ends_with(std::str::from_utf8(&body).expect("ascii")));
                    assert_eq!(
                        text.contains(&format!("content-length: {body_len}\r\n")),
                        body_len > 0
                    );
                    assert_eq!(text.contains("content-type: application/json\r\n"), json);
                }
            }
        }
    }

    #[test]
    fn content_length_answers_are_read_to_their_length_however_the_reads_split() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n\r\nhelloHTTP/1.1";
        let (p, rest) = bytewise(&wire[..wire.len() - 8], false).expect("answer");
        assert_eq!(
            (p.status, &p.body[..], p.keep_alive),
            (200, &b"hello"[..], true)
        );
        assert!(rest.is_empty());
        // Bytes after the answer stay for the next one.
        let (_, rest) = read_all(&[wire], false).expect("answer");
        assert_eq!(rest, b"HTTP/1.1");
        // Closed early: a reset, as an incomplete message was.
        assert_eq!(
            read_all(&[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"], false),
            Err(TransportErrorKind::Reset)
        );
        assert_eq!(
            read_all(&[b"HTTP/1.1 200 O"], false),
            Err(TransportErrorKind::Reset)
        );
        assert_eq!(read_all(&[b""], false), Err(TransportErrorKind::Reset));
    }

    /// A body shares the connection's buffer; once it is dropped, the next read reuses that
    /// buffer (no allocation per answer), and a body still held keeps its bytes whatever the
    /// buffer reads next.
    #[test]
    fn a_body_shares_the_read_buffer_which_is_reused_once_it_is_dropped() {
        use super::super::pool::READ_CHUNK as CHUNK;
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let read = |buf: &mut BytesMut, wire: &[u8]| {
            buf.reserve(CHUNK);
            buf.extend_from_slice(wire);
            AnswerReader::new(false)
                .poll(buf, false)
                .expect("valid")
                .expect("complete")
        };
        let mut buf = BytesMut::with_capacity(2 * CHUNK);
        let (base, end) = (buf.as_ptr() as usize, buf.as_ptr() as usize + 2 * CHUNK);
        let inside = |buf: &BytesMut| {
            let at = buf.as_ptr() as usize;
            (base..end).contains(&at) && at + buf.capacity() <= end
        };
        for round in 0..1_000 {
            let p = read(&mut buf, wire);
            assert!(inside(&buf), "round {round}: the same allocation");
            assert_eq!(&p.body[..], b"hello");
            assert!(buf.is_empty());
        }
        // Held bodies keep their bytes: later reads go on past them, then in a buffer of their
        // own once this one is used up.
        let held: Vec<Parsed> = (0..1_000_u32)
            .map(|n| {
                let body = format!("{n:05}");
                read(
                    &mut buf,
                    format!("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{body}").as_bytes(),
                )
            })
            .collect();
        assert!(!inside(&buf), "a new buffer once the first is used up");
        for (n, p) in held.iter().enumerate() {
            assert_eq!(p.body, format!("{n:05}").as_bytes());
        }
    }

    #[test]
    fn chunked_answers_are_decoded_with_extensions_and_trailers_however_the_reads_split() {
        let wire = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: gzip, chunked\r\n\
                     Content-Length: 3\r\n\r\n5;ext=1\r\nhello\r\n1\r\n,\r\n6\r\n world\r\n0\r\nT: v\r\n\r\n";
        let (p, rest) = bytewise(wire, false).expect("answer");
        assert_eq!((p.status, &p.body[..]), (201, &b"hello, world"[..]));
        assert!(p.keep_alive && rest.is_empty());
        let (p, _) = read_all(&[wire], false).expect("answer");
        assert_eq!(&p.body[..], b"hello, world");
        // A bad size or a missing CRLF after the data is malformed; a cut is a reset.
        for bad in [
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY0\r\n\r\n",
        ] {
            assert_eq!(
                read_all(&[bad], false),
                Err(TransportErrorKind::Other),
                "{bad:?}"
            );
        }
        assert_eq!(
            read_all(
                &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe"],
                false
            ),
            Err(TransportErrorKind::Reset)
        );
    }

    #[test]
    fn bodies_without_length_end_at_the_close_and_end_the_connection() {
        let (p, _) =
            read_all(&[b"HTTP/1.1 200 OK\r\n\r\nuntil ", b"close"], false).expect("answer");
        assert_eq!((&p.body[..], p.keep_alive), (&b"until close"[..], false));
        // A coding other than chunked last: delimited by the close too.
        let (p, _) = read_all(
            &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz"],
            false,
        )
        .expect("answer");
        assert_eq!((&p.body[..], p.keep_alive), (&b"zz"[..], false));
    }

    #[test]
    fn answers_without_a_body_and_interim_answers() {
        // HEAD: the length describes the body not sent.
        let (p, rest) =
            bytewise(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", true).expect("answer");
        assert_eq!((p.status, p.body.len(), rest.len()), (200, 0, 0));
        for status in ["204 No Content", "304 Not Modified"] {
            let wire = format!("HTTP/1.1 {status}\r\nContent-Length: 9\r\n\r\n");
            let (p, _) = bytewise(wire.as_bytes(), false).expect("answer");
            assert!(p.body.is_empty() && p.keep_alive);
        }
        let (p, _) = bytewise(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
              HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            false,
        )
        .expect("answer");
        assert_eq!((p.status, &p.body[..]), (200, &b"ok"[..]));
        assert_eq!(
            read_all(&[b"HTTP/1.1 101 Switching Protocols\r\n\r\n"], false),
            Err(TransportErrorKind::Other)
        );
    }

    #[test]
    fn keep_alive_follows_the_version_and_the_connection_header() {
        let keep = |wire: &[u8]| read_all(&[wire], false).expect("answer").0.keep_alive;
        assert!(keep(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(!keep(
            b"HTTP/1.1 200 OK\r\nConnection: foo, Close\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(!keep(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(keep(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
        ));
        // A close wins over a keep-alive in the same header.
        assert!(!keep(
            b"HTTP/1.0 200 OK\r\nConnection: close, keep-alive\r\nContent-Length: 0\r\n\r\n"
        ));
    }

    #[test]
    fn malformed_answers_are_errors_of_kind_other() {
        for bad in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\nab\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\nab\r\n0\r\n\r\n",
            b"SMTP ready\r\n\r\n",
        ] {
            assert_eq!(
                read_all(&[bad], false),
                Err(TransportErrorKind::Other),
                "{bad:?}"
            );
        }
        // A head that never ends is cut off at the limit.
        let mut endless = b"HTTP/1.1 200 OK\r\n".to_vec();
        endless.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES + 1));
        let mut buf = BytesMut::from(&endless[..]);
        assert_eq!(
            AnswerReader::new(false).poll(&mut buf, false),
            Err(TransportErrorKind::Other)
        );
        // Equal duplicate lengths are fine.
        let (p, _) = read_all(
            &[b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab"],
            false,
        )
        .expect("answer");
        assert_eq!(&p.body[..], b"ab");
    }
}
