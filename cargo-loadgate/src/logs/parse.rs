//! One access-log line to a [`LogLine`]: the common and combined formats by a hand-written splitter
//! over bytes (no allocation per line), and JSON lines with configurable field names.
//!
//! Common: `host ident user [time] "METHOD PATH PROTO" status bytes`; combined adds
//! `"referer" "user-agent"`. Anything after that is read as extra fields: `name=value`,
//! `name="value"` or bare quoted strings (a logged `Cookie` header, say). The time may carry a
//! fraction of a second (`[03/Dec/2026:12:00:00.123456 +0000]`), which think times need: a log
//! with whole seconds only cannot tell a 500 ms think from a 1 s one.

use serde_json::{Map, Value};

/// The log formats `--format` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// NCSA common log format (and any extra fields after it).
    Common,
    /// NCSA combined format: common plus referer and user agent (and any extra fields).
    Combined,
    /// One JSON object per line, with the field names of [`JsonFields`].
    Json,
}

impl std::fmt::Display for LogFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LogFormat::Common => "common",
            LogFormat::Combined => "combined",
            LogFormat::Json => "json",
        })
    }
}

/// The JSON field names of each part of a request (`--json-fields ts=…,path=…`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct JsonFields {
    /// The request's arrival: RFC 3339 text, seconds since the Unix epoch, or a common-log time.
    pub ts: String,
    /// The request method.
    pub method: String,
    /// The request path (with or without the query).
    pub path: String,
    /// The answer's status.
    pub status: String,
    /// The answer time in seconds (a number or numeric text); optional in the line.
    pub answer: String,
    /// The client address.
    pub client: String,
    /// A logged `Cookie` header, read by `--session-key cookie:NAME`.
    pub cookie: String,
}

impl Default for JsonFields {
    fn default() -> Self {
        Self {
            ts: "ts".to_owned(),
            method: "method".to_owned(),
            path: "path".to_owned(),
            status: "status".to_owned(),
            answer: "rt".to_owned(),
            client: "client".to_owned(),
            cookie: "cookie".to_owned(),
        }
    }
}

impl JsonFields {
    /// Applies `--json-fields` overrides, `part=field` separated by commas.
    pub fn with_overrides(mut self, spec: &str) -> Result<Self, String> {
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (part, field) = item
                .split_once('=')
                .ok_or_else(|| format!("expected PART=FIELD in `--json-fields`, got `{item}`"))?;
            let slot = match part.trim() {
                "ts" | "time" => &mut self.ts,
                "method" => &mut self.method,
                "path" => &mut self.path,
                "status" => &mut self.status,
                "rt" | "answer" => &mut self.answer,
                "client" => &mut self.client,
                "cookie" => &mut self.cookie,
                other => {
                    return Err(format!(
                        "unknown part `{other}` in `--json-fields`; the parts are ts, method, path, status, rt, client, cookie"
                    ));
                }
            };
            field.trim().clone_into(slot);
        }
        Ok(self)
    }
}

/// One request as the log shows it. Text borrows from the line (or from the JSON object parsed
/// from it).
#[derive(Clone, Debug, PartialEq)]
pub struct LogLine<'a> {
    /// When the request arrived, in microseconds since the Unix epoch.
    pub time_us: i64,
    /// The client address.
    pub client: &'a [u8],
    /// The authenticated user (`%u`), `-` when none.
    pub remote_user: &'a [u8],
    /// The request method.
    pub method: &'a [u8],
    /// The request path, without the query.
    pub path: &'a [u8],
    /// The answer's status.
    pub status: u16,
    /// The answer time in microseconds, when the line has one (field `rt`, in seconds).
    pub answer_us: Option<i64>,
    /// Where the extra fields are.
    pub extra: Extra<'a>,
}

/// The extra fields of a line, looked up on demand.
#[derive(Clone, Debug, PartialEq)]
pub enum Extra<'a> {
    /// The bytes after the common or combined part.
    Text(&'a [u8]),
    /// The JSON object.
    Json(&'a Map<String, Value>),
}

impl<'a> Extra<'a> {
    /// The value of the field `name`: `name=value` or `name="value"` in text, a string or
    /// number member in JSON.
    pub fn field(&self, name: &str) -> Option<&'a [u8]> {
        match self {
            Extra::Text(text) => text_field(text, name.as_bytes()),
            Extra::Json(map) => match map.get(name)? {
                Value::String(s) => Some(s.as_bytes()),
                _ => None,
            },
        }
    }

    /// The value of cookie `name` in any quoted extra field (text) or in `cookie_field` (JSON).
    pub fn cookie(&self, name: &str, cookie_field: &str) -> Option<&'a [u8]> {
        match self {
            Extra::Text(text) => {
                let mut rest = *text;
                while let Some((value, after)) = next_token(rest) {
                    if let Some(v) = cookie_value(value, name.as_bytes()) {
                        return Some(v);
                    }
                    rest = after;
                }
                None
            }
            Extra::Json(map) => match map.get(cookie_field)? {
                Value::String(s) => cookie_value(s.as_bytes(), name.as_bytes()),
                _ => None,
            },
        }
    }
}

/// Why a line could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadLine {
    /// The fields are not where the format puts them.
    Shape,
    /// The time is not a time.
    Time,
    /// The request line is not `METHOD PATH PROTO`.
    Request,
    /// The status is not a number from 100 to 999.
    Status,
    /// The line is not a JSON object, or a required member is missing.
    Json,
}

impl BadLine {
    /// What was wrong, for the report.
    pub fn describe(self) -> &'static str {
        match self {
            BadLine::Shape => "fields are not where the format puts them",
            BadLine::Time => "the time is not a time",
            BadLine::Request => "the request is not `METHOD PATH PROTOCOL`",
            BadLine::Status => "the status is not a number",
            BadLine::Json => "not a JSON object with the configured fields",
        }
    }
}

/// Reads one line (without its line break) in `format`. `scratch` holds a JSON line's object so
/// the result can borrow from it.
pub fn parse_line<'a>(
    format: LogFormat,
    fields: &JsonFields,
    line: &'a [u8],
    scratch: &'a mut Option<Map<String, Value>>,
) -> Result<LogLine<'a>, BadLine> {
    match format {
        LogFormat::Common | LogFormat::Combined => parse_clf(line, format == LogFormat::Combined),
        LogFormat::Json => parse_json(line, fields, scratch),
    }
}

fn parse_clf(line: &[u8], combined: bool) -> Result<LogLine<'_>, BadLine> {
    let (client, rest) = word(line).ok_or(BadLine::Shape)?;
    let (_ident, rest) = word(rest).ok_or(BadLine::Shape)?;
    let (remote_user, rest) = word(rest).ok_or(BadLine::Shape)?;
    let rest = rest.strip_prefix(b"[").ok_or(BadLine::Shape)?;
    let close = rest.iter().position(|&b| b == b']').ok_or(BadLine::Shape)?;
    let time_us = parse_clf_time(&rest[..close]).ok_or(BadLine::Time)?;
    let rest = skip_spaces(&rest[close + 1..]);
    let (request, rest) = quoted(rest).ok_or(BadLine::Shape)?;
    let (method, path) = split_request(request).ok_or(BadLine::Request)?;
    let (status, rest) = word(rest).ok_or(BadLine::Shape)?;
    let status = parse_status(status).ok_or(BadLine::Status)?;
    let (_bytes, mut rest) = word(rest).ok_or(BadLine::Shape)?;
    if combined {
        let (_referer, after) = quoted(rest).ok_or(BadLine::Shape)?;
        let (_agent, after) = quoted(after).ok_or(BadLine::Shape)?;
        rest = after;
    }
    let answer_us = text_field(rest, b"rt").and_then(parse_seconds_us);
    Ok(LogLine {
        time_us,
        client,
        remote_user,
        method,
        path: strip_query(path),
        status,
        answer_us,
        extra: Extra::Text(rest),
    })
}

fn parse_json<'a>(
    line: &'a [u8],
    fields: &JsonFields,
    scratch: &'a mut Option<Map<String, Value>>,
) -> Result<LogLine<'a>, BadLine> {
    let map: Map<String, Value> = serde_json::from_slice(line).map_err(|_| BadLine::Json)?;
    let map: &'a Map<String, Value> = scratch.insert(map);
    let text = |name: &str| match map.get(name) {
        Some(Value::String(s)) => Some(s.as_bytes()),
        _ => None,
    };
    let time_us = match map.get(&fields.ts).ok_or(BadLine::Json)? {
        Value::Number(n) => n.as_f64().map(|s| (s * 1e6).round() as i64),
        Value::String(s) => parse_rfc3339(s.as_bytes()).or_else(|| parse_clf_time(s.as_bytes())),
        _ => None,
    }
    .ok_or(BadLine::Time)?;
    let path = text(&fields.path).ok_or(BadLine::Json)?;
    let method = text(&fields.method).unwrap_or(b"GET");
    let status = match map.get(&fields.status).ok_or(BadLine::Json)? {
        Value::Number(n) => n.as_u64().and_then(|s| u16::try_from(s).ok()),
        Value::String(s) => parse_status(s.as_bytes()),
        _ => None,
    }
    .filter(|s| (100..1000).contains(s))
    .ok_or(BadLine::Status)?;
    let answer_us = match map.get(&fields.answer) {
        Some(Value::Number(n)) => n.as_f64().map(|s| (s * 1e6).round() as i64),
        Some(Value::String(s)) => parse_seconds_us(s.as_bytes()),
        _ => None,
    };
    Ok(LogLine {
        time_us,
        client: text(&fields.client).unwrap_or(b"-"),
        remote_user: b"-",
        method,
        path: strip_query(path),
        status,
        answer_us,
        extra: Extra::Json(map),
    })
}

/// The first space-delimited word and what follows it (spaces skipped).
fn word(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let s = skip_spaces(s);
    if s.is_empty() {
        return None;
    }
    let end = s.iter().position(|&b| b == b' ').unwrap_or(s.len());
    Some((&s[..end], skip_spaces(&s[end..])))
}

fn skip_spaces(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| b != b' ').unwrap_or(s.len());
    &s[start..]
}

/// A `"…"` string (backslash escapes skipped over, not decoded) and what follows it.
fn quoted(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let s = skip_spaces(s).strip_prefix(b"\"")?;
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return Some((&s[..i], skip_spaces(&s[i + 1..]))),
            _ => i += 1,
        }
    }
    None
}

/// The next extra token: a quoted string's content, or a bare word.
fn next_token(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let s = skip_spaces(s);
    if s.is_empty() {
        None
    } else if s[0] == b'"' {
        quoted(s)
    } else {
        // `name="value with spaces"` is one token.
        let eq_quote = s.windows(2).position(|w| w == b"=\"");
        let space = s.iter().position(|&b| b == b' ');
        match (eq_quote, space) {
            (Some(q), Some(sp)) if q < sp => {
                let (_, after) = quoted(&s[q + 1..])?;
                let consumed = s.len() - after.len();
                Some((&s[..consumed], after))
            }
            (_, Some(sp)) => Some((&s[..sp], skip_spaces(&s[sp..]))),
            (_, None) => Some((s, &[])),
        }
    }
}

/// The value of `name=value` or `name="value"` among the extra tokens.
fn text_field<'a>(mut s: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    loop {
        let t = skip_spaces(s);
        if t.is_empty() {
            return None;
        }
        if t[0] == b'"' {
            s = quoted(t)?.1;
            continue;
        }
        if t.len() > name.len() && t.starts_with(name) && t[name.len()] == b'=' {
            let value = &t[name.len() + 1..];
            return if value.first() == Some(&b'"') {
                quoted(value).map(|(v, _)| v)
            } else {
                Some(&value[..value.iter().position(|&b| b == b' ').unwrap_or(value.len())])
            };
        }
        s = next_token(t)?.1;
    }
}

/// The value of cookie `name` in a `Cookie` header value (`a=1; b=2`).
fn cookie_value<'a>(header: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    header.split(|&b| b == b';').find_map(|pair| {
        let pair = skip_spaces(pair);
        let eq = pair.iter().position(|&b| b == b'=')?;
        (&pair[..eq] == name).then(|| &pair[eq + 1..])
    })
}

fn split_request(request: &[u8]) -> Option<(&[u8], &[u8])> {
    let sp = request.iter().position(|&b| b == b' ')?;
    let method = &request[..sp];
    let rest = &request[sp + 1..];
    let path = match rest.iter().position(|&b| b == b' ') {
        Some(end) => &rest[..end],
        None => rest,
    };
    (!method.is_empty() && method.iter().all(u8::is_ascii_uppercase) && path.first() == Some(&b'/'))
        .then_some((method, path))
}

fn strip_query(path: &[u8]) -> &[u8] {
    match path.iter().position(|&b| b == b'?' || b == b'#') {
        Some(q) => &path[..q],
        None => path,
    }
}

fn parse_status(s: &[u8]) -> Option<u16> {
    (s.len() == 3 && s.iter().all(u8::is_ascii_digit)).then(|| {
        s.iter()
            .fold(0u16, |acc, &d| acc * 10 + u16::from(d - b'0'))
    })
}

/// Seconds as decimal text (`0.000123`) to microseconds.
pub fn parse_seconds_us(s: &[u8]) -> Option<i64> {
    let (whole, frac) = match s.iter().position(|&b| b == b'.') {
        Some(dot) => (&s[..dot], &s[dot + 1..]),
        None => (s, &[][..]),
    };
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    let whole = digits(whole)?;
    let micros = fraction_us(frac)?;
    whole.checked_mul(1_000_000)?.checked_add(micros)
}

fn digits(s: &[u8]) -> Option<i64> {
    if s.len() > 15 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        s.iter()
            .fold(0i64, |acc, &d| acc * 10 + i64::from(d - b'0')),
    )
}

/// The first six digits of a decimal fraction as microseconds (the rest truncated).
fn fraction_us(frac: &[u8]) -> Option<i64> {
    if !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut us = 0i64;
    for i in 0..6 {
        us = us * 10 + frac.get(i).map_or(0, |&d| i64::from(d - b'0'));
    }
    Some(us)
}

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// `10/Oct/2000:13:55:36[.ffffff] -0700` to microseconds since the Unix epoch.
pub fn parse_clf_time(s: &[u8]) -> Option<i64> {
    if s.len() < 26 || s[2] != b'/' || s[6] != b'/' || s[11] != b':' {
        return None;
    }
    let day = digits(&s[0..2])?;
    let month = MONTHS.iter().position(|m| &s[3..6] == *m)? as i64 + 1;
    let year = digits(&s[7..11])?;
    let (seconds, frac_us, rest) = clock(&s[12..])?;
    let rest = rest.strip_prefix(b" ")?;
    let offset = zone(rest)?;
    Some(epoch_us(year, month, day, seconds, frac_us) - offset * 1_000_000)
}

/// `2026-12-03T12:00:00[.ffffff](Z|±hh:mm)` to microseconds since the Unix epoch.
pub fn parse_rfc3339(s: &[u8]) -> Option<i64> {
    if s.len() < 20 || s[4] != b'-' || s[7] != b'-' || !matches!(s[10], b'T' | b't' | b' ') {
        return None;
    }
    let year = digits(&s[0..4])?;
    let month = digits(&s[5..7])?;
    let day = digits(&s[8..10])?;
    let (seconds, frac_us, rest) = clock(&s[11..])?;
    let offset = match rest {
        b"Z" | b"z" => 0,
        _ => zone(rest)?,
    };
    Some(epoch_us(year, month, day, seconds, frac_us) - offset * 1_000_000)
}

/// `HH:MM:SS[.ffffff]` and the rest: seconds of the day, microseconds, the rest.
fn clock(s: &[u8]) -> Option<(i64, i64, &[u8])> {
    if s.len() < 8 || s[2] != b':' || s[5] != b':' {
        return None;
    }
    let (h, m, sec) = (digits(&s[0..2])?, digits(&s[3..5])?, digits(&s[6..8])?);
    if h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[8..];
    let mut frac_us = 0;
    if let Some(after) = rest.strip_prefix(b".") {
        let end = after
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(after.len());
        if end == 0 {
            return None;
        }
        frac_us = fraction_us(&after[..end])?;
        rest = &after[end..];
    }
    Some((h * 3600 + m * 60 + sec, frac_us, rest))
}

/// `+hhmm`, `-hhmm` or `±hh:mm` to seconds east of UTC.
fn zone(s: &[u8]) -> Option<i64> {
    let sign = match s.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (h, m) = match s.len() {
        5 => (digits(&s[1..3])?, digits(&s[3..5])?),
        6 if s[3] == b':' => (digits(&s[1..3])?, digits(&s[4..6])?),
        _ => return None,
    };
    Some(sign * (h * 3600 + m * 60))
}

fn epoch_us(year: i64, month: i64, day: i64, seconds: i64, frac_us: i64) -> i64 {
    (days_from_civil(year, month, day) * 86_400 + seconds) * 1_000_000 + frac_us
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm); also what
/// `run --start-at` reads an RFC 3339 instant with.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Microseconds since the epoch as a common-log time in UTC with microseconds, the form the
/// demo writes (and tests and benches generate).
pub fn format_clf_time(time_us: i64) -> String {
    let secs = time_us.div_euclid(1_000_000);
    let micros = time_us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{d:02}/{}/{y:04}:{:02}:{:02}:{:02}.{micros:06} +0000",
        std::str::from_utf8(MONTHS[(m - 1) as usize]).unwrap_or("Jan"),
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

/// Microseconds since the epoch as RFC 3339 in UTC (`2026-12-03T12:00:00Z`, microseconds shown
/// when not zero).
pub fn format_rfc3339(time_us: i64) -> String {
    let secs = time_us.div_euclid(1_000_000);
    let micros = time_us.rem_euclid(1_000_000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let frac = if micros == 0 {
        String::new()
    } else {
        format!(".{micros:06}")
    };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{frac}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    const DEMO: &[u8] = b"127.0.0.1 - user-7 [03/Dec/2026:12:00:01.250000 +0000] \"GET /accounts/acc-1/transactions?x=1 HTTP/1.1\" 200 812 \"-\" \"loadgate\" rt=0.000150 user=user-7";

    #[test]
    fn a_demo_line_is_read() {
        let mut scratch = None;
        let line = parse_line(
            LogFormat::Combined,
            &JsonFields::default(),
            DEMO,
            &mut scratch,
        )
        .unwrap();
        assert_eq!(line.client, b"127.0.0.1");
        assert_eq!(line.remote_user, b"user-7");
        assert_eq!(line.method, b"GET");
        assert_eq!(line.path, b"/accounts/acc-1/transactions");
        assert_eq!(line.status, 200);
        assert_eq!(line.answer_us, Some(150));
        assert_eq!(line.extra.field("user"), Some(&b"user-7"[..]));
        assert_eq!(line.extra.field("nope"), None);
        // 2026-12-03T12:00:01.25Z
        assert_eq!(
            line.time_us,
            parse_rfc3339(b"2026-12-03T12:00:01.25Z").unwrap()
        );
        assert_eq!(
            format_clf_time(line.time_us),
            "03/Dec/2026:12:00:01.250000 +0000"
        );
    }

    #[test]
    fn the_apache_example_is_read_in_both_formats() {
        let common = br#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
        let mut scratch = None;
        let line = parse_line(
            LogFormat::Common,
            &JsonFields::default(),
            common,
            &mut scratch,
        )
        .unwrap();
        // 2000-10-10T20:55:36Z = 971211336.
        assert_eq!(line.time_us, 971_211_336_000_000);
        assert_eq!(line.answer_us, None);
        let combined = br#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)" "sid=abc; theme=dark""#;
        let line = parse_line(
            LogFormat::Combined,
            &JsonFields::default(),
            combined,
            &mut scratch,
        )
        .unwrap();
        assert_eq!(line.extra.cookie("sid", "cookie"), Some(&b"abc"[..]));
        assert_eq!(line.extra.cookie("theme", "cookie"), Some(&b"dark"[..]));
        assert_eq!(line.extra.cookie("x", "cookie"), None);
        // A combined line is not a common one short of fields, but a common line is not combined.
        assert_eq!(
            parse_line(
                LogFormat::Combined,
                &JsonFields::default(),
                common,
                &mut scratch
            ),
            Err(BadLine::Shape)
        );
    }

    #[test_case(b"" => BadLine::Shape; "empty")]
    #[test_case(b"garbage" => BadLine::Shape; "one word")]
    #[test_case(b"1.2.3.4 - - [10/Oct/2000:13:55:36] \"GET / HTTP/1.1\" 200 1" => BadLine::Time; "no zone")]
    #[test_case(b"1.2.3.4 - - [99/Oct/2000:13:55:36 +0000 \"GET / HTTP/1.1\" 200 1" => BadLine::Shape; "unclosed bracket")]
    #[test_case(b"1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] \"-\" 400 1" => BadLine::Request; "no request line")]
    #[test_case(b"1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] \"GET / HTTP/1.1\" ok 1" => BadLine::Status; "status not a number")]
    #[test_case(b"1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] \"GET / HTTP/1.1 200 1" => BadLine::Shape; "unclosed quote")]
    fn malformed_common_lines_say_why(line: &[u8]) -> BadLine {
        parse_line(LogFormat::Common, &JsonFields::default(), line, &mut None).unwrap_err()
    }

    #[test]
    fn json_lines_with_renamed_fields() {
        let fields = JsonFields::default()
            .with_overrides("ts=@timestamp, path=url, rt=duration")
            .unwrap();
        let line = br#"{"@timestamp":"2026-12-03T13:00:01.5+01:00","method":"POST","url":"/login?next=/","status":"201","duration":0.002,"user":"alice"}"#;
        let mut scratch = None;
        let parsed = parse_line(LogFormat::Json, &fields, line, &mut scratch).unwrap();
        assert_eq!(
            parsed.time_us,
            parse_rfc3339(b"2026-12-03T12:00:01.5Z").unwrap()
        );
        assert_eq!(parsed.path, b"/login");
        assert_eq!(parsed.method, b"POST");
        assert_eq!(parsed.status, 201);
        assert_eq!(parsed.answer_us, Some(2000));
        assert_eq!(parsed.extra.field("user"), Some(&b"alice"[..]));
        let epoch = br#"{"ts":1764763200.25,"path":"/","status":200}"#;
        let parsed =
            parse_line(LogFormat::Json, &JsonFields::default(), epoch, &mut scratch).unwrap();
        assert_eq!(parsed.time_us, 1_764_763_200_250_000);
        assert_eq!(
            parse_line(LogFormat::Json, &fields, b"{\"url\":\"/\"}", &mut scratch),
            Err(BadLine::Json)
        );
        assert!(JsonFields::default().with_overrides("tz=x").is_err());
        assert!(JsonFields::default().with_overrides("ts").is_err());
    }

    #[test]
    fn times_round_trip_across_dates() {
        for t in [
            0i64,
            951_782_400_123_456,
            1_764_763_200_000_001,
            4_102_444_800_000_000,
        ] {
            let text = format_clf_time(t);
            assert_eq!(parse_clf_time(text.as_bytes()), Some(t), "{text}");
        }
        assert_eq!(
            format_rfc3339(1_764_763_200_000_000),
            "2025-12-03T12:00:00Z"
        );
        assert_eq!(
            parse_rfc3339(format_rfc3339(951_782_400_123_456).as_bytes()),
            Some(951_782_400_123_456)
        );
        assert_eq!(parse_seconds_us(b"1.5"), Some(1_500_000));
        assert_eq!(parse_seconds_us(b".25"), Some(250_000));
        assert_eq!(parse_seconds_us(b"x"), None);
        assert_eq!(parse_seconds_us(b"."), None);
    }
}
