//! Judging an answer against what the operation expects, and capturing session variables from it.
//!
//! A [`Response`] is a view of one answer that reads the body as JSON at most once, and only when
//! an expectation or a capture needs it; [`Response::check`] and [`Response::capture`] share that
//! read. With the operation's [`PointerSet`] the read looks up its pointers in one pass without
//! building the document. A wrong answer is an error even when it is fast: the engine counts it against the
//! operation and keeps the first few as examples.

use super::pointer::PointerSet;
use super::template::SessionVars;
use crate::config::Expect;
use serde::Serialize;
use serde_json::Value;
use std::{cell::OnceCell, fmt};

/// How much of a body a [`WrongAnswer`] keeps, in characters.
pub const EXCERPT_CHARS: usize = 160;

/// One answer, as the checks and captures see it.
#[derive(Debug)]
pub struct Response<'a> {
    status: u16,
    body: &'a [u8],
    json: OnceCell<Result<Value, String>>,
    /// The operation's pointers, looked up in one pass without building the document.
    pointers: Option<&'a PointerSet>,
    values: OnceCell<Result<Vec<Option<Value>>, String>>,
}

impl<'a> Response<'a> {
    /// Wraps an answer's status and body. Nothing is parsed yet.
    pub fn new(status: u16, body: &'a [u8]) -> Self {
        Response {
            status,
            body,
            json: OnceCell::new(),
            pointers: None,
            values: OnceCell::new(),
        }
    }

    /// Wraps an answer whose checks and captures read only `pointers` (the operation's
    /// [`super::CompiledOperation::pointers`]): they are looked up in one pass over the body, and
    /// the document is never built. Any other pointer falls back to the whole document.
    pub fn with_pointers(status: u16, body: &'a [u8], pointers: &'a PointerSet) -> Self {
        Response {
            pointers: Some(pointers),
            ..Self::new(status, body)
        }
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The body.
    pub fn body(&self) -> &'a [u8] {
        self.body
    }

    /// The body parsed as JSON (the first call parses, later calls reuse the result), or why it is
    /// not JSON.
    fn json(&self) -> Result<&Value, &str> {
        self.json
            .get_or_init(|| serde_json::from_slice(self.body).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }

    /// The value at `pointer` (`None`: not there), or why the body is not JSON.
    fn pointer(&self, pointer: &str) -> Result<Option<&Value>, &str> {
        if let Some(set) = self.pointers
            && let Some(at) = set.position(pointer)
        {
            let values = self
                .values
                .get_or_init(|| set.lookup(self.body))
                .as_ref()
                .map_err(String::as_str)?;
            return Ok(values[at].as_ref());
        }
        Ok(self.json()?.pointer(pointer))
    }

    /// Checks the answer against `expect`: the status is one of those listed (any 2xx when none
    /// is), the body contains the text, the JSON pointers exist and the pointed values equal the
    /// expected ones (numbers compare by value, so `1` equals `1.0`). The first part that fails is
    /// reported.
    pub fn check(&self, expect: &Expect) -> Result<(), WrongAnswer> {
        let status_ok = if expect.status.is_empty() {
            (200..300).contains(&self.status)
        } else {
            expect.status.contains(&self.status)
        };
        if !status_ok {
            return Err(self.wrong(WrongAnswerKind::Status {
                expected: expect.status.clone(),
            }));
        }
        if let Some(text) = &expect.body_contains
            && !contains(self.body, text.as_bytes())
        {
            return Err(self.wrong(WrongAnswerKind::BodyMissing { text: text.clone() }));
        }
        if expect.json_pointer.is_empty() && expect.json_equals.is_empty() {
            return Ok(());
        }
        let not_json = |error: &str| {
            self.wrong(WrongAnswerKind::NotJson {
                error: error.to_owned(),
            })
        };
        for pointer in &expect.json_pointer {
            if self.pointer(pointer).map_err(not_json)?.is_none() {
                return Err(self.wrong(WrongAnswerKind::PointerMissing {
                    pointer: pointer.clone(),
                }));
            }
        }
        for (pointer, expected) in &expect.json_equals {
            match self.pointer(pointer).map_err(not_json)? {
                None => {
                    return Err(self.wrong(WrongAnswerKind::PointerMissing {
                        pointer: pointer.clone(),
                    }));
                }
                Some(actual) if !json_eq(actual, expected) => {
                    return Err(self.wrong(WrongAnswerKind::ValueDiffers {
                        pointer: pointer.clone(),
                        expected: Box::new(expected.clone()),
                        actual: Box::new(actual.clone()),
                    }));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Takes each `(variable index, JSON pointer)` from the body into `vars`: a string as it is, a
    /// number or a boolean as its JSON text. Nothing is stored unless every capture succeeds.
    pub fn capture(
        &self,
        captures: &[(usize, String)],
        vars: &mut SessionVars,
    ) -> Result<(), CaptureError> {
        if captures.is_empty() {
            return Ok(());
        }
        // Every capture is found first, then each is stored: nothing is stored unless all are
        // there, and no list of the values is made (the lookups are cached).
        let found = |variable: usize, pointer: &String| {
            let fail = |kind| CaptureError {
                variable,
                pointer: pointer.clone(),
                kind,
            };
            match self.pointer(pointer) {
                Err(error) => Err(fail(CaptureErrorKind::NotJson {
                    error: error.to_owned(),
                })),
                Ok(None) => Err(fail(CaptureErrorKind::Missing)),
                Ok(Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_)))) => Ok(v),
                Ok(Some(v)) => Err(fail(CaptureErrorKind::Unsupported {
                    found: json_type(v),
                })),
            }
        };
        for (variable, pointer) in captures {
            found(*variable, pointer)?;
        }
        for (variable, pointer) in captures {
            let value = match found(*variable, pointer)? {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            vars.set(*variable, value);
        }
        Ok(())
    }

    fn wrong(&self, kind: WrongAnswerKind) -> WrongAnswer {
        WrongAnswer {
            kind,
            status: self.status,
            body_len: self.body.len(),
            excerpt: excerpt(self.body),
        }
    }
}

/// Checks one answer against `expect` (see [`Response::check`]). Use a [`Response`] to check and
/// capture from the same answer with one parse.
pub fn check(expect: &Expect, status: u16, body: &[u8]) -> Result<(), WrongAnswer> {
    Response::new(status, body).check(expect)
}

/// Captures session variables from one body (see [`Response::capture`]).
pub fn capture(
    captures: &[(usize, String)],
    body: &[u8],
    vars: &mut SessionVars,
) -> Result<(), CaptureError> {
    Response::new(0, body).capture(captures, vars)
}

/// An answer that is not the one the operation expects: what was expected, and what came.
#[derive(Clone, Debug, PartialEq, Serialize, thiserror::Error)]
pub struct WrongAnswer {
    /// Which expectation failed.
    pub kind: WrongAnswerKind,
    /// The status that came.
    pub status: u16,
    /// The length of the body that came, in bytes.
    pub body_len: usize,
    /// The start of the body (at most [`EXCERPT_CHARS`] characters, invalid UTF-8 replaced,
    /// control characters escaped, `…` when cut).
    pub excerpt: String,
}

/// The expectation a [`WrongAnswer`] failed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum WrongAnswerKind {
    /// The status is not among those expected (any 2xx when `expected` is empty).
    Status {
        /// The accepted statuses.
        expected: Vec<u16>,
    },
    /// The body does not contain the expected text.
    BodyMissing {
        /// The text.
        text: String,
    },
    /// A JSON expectation is set and the body is not JSON.
    NotJson {
        /// What the parser said.
        error: String,
    },
    /// A JSON pointer that should exist does not.
    PointerMissing {
        /// The pointer.
        pointer: String,
    },
    /// A JSON pointer's value differs from the expected one.
    ValueDiffers {
        /// The pointer.
        pointer: String,
        /// The expected value.
        expected: Box<Value>,
        /// The value that came.
        actual: Box<Value>,
    },
}

impl fmt::Display for WrongAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = self.status;
        match &self.kind {
            WrongAnswerKind::Status { expected } if expected.is_empty() => {
                write!(f, "expected a 2xx status, got {status}")?;
            }
            WrongAnswerKind::Status { expected } => {
                let list: Vec<String> = expected.iter().map(u16::to_string).collect();
                write!(f, "expected status {}, got {status}", list.join(" or "))?;
            }
            WrongAnswerKind::BodyMissing { text } => {
                write!(
                    f,
                    "expected the body to contain {text:?}, got status {status} without it"
                )?;
            }
            WrongAnswerKind::NotJson { error } => {
                write!(
                    f,
                    "expected a JSON body, got status {status} and a body that is not JSON ({error})"
                )?;
            }
            WrongAnswerKind::PointerMissing { pointer } => {
                write!(
                    f,
                    "expected JSON pointer `{pointer}` to exist, got status {status} without it"
                )?;
            }
            WrongAnswerKind::ValueDiffers {
                pointer,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "expected `{pointer}` to equal {expected}, got {actual} (status {status})"
                )?;
            }
        }
        write!(f, "; body ({} bytes): {}", self.body_len, self.excerpt)
    }
}

/// A session variable that could not be captured. The engine ends the session and counts it as
/// abandoned: its later requests would be sent without the value they need.
#[derive(Clone, Debug, PartialEq, Serialize, thiserror::Error)]
#[error("failed to capture session variable {variable} from `{pointer}`: {kind}")]
pub struct CaptureError {
    /// The variable's index (its name is in [`super::CompiledWorkload::variables`]).
    pub variable: usize,
    /// The JSON pointer.
    pub pointer: String,
    /// What went wrong.
    pub kind: CaptureErrorKind,
}

/// Why a capture failed.
#[derive(Clone, Debug, PartialEq, Serialize, thiserror::Error)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum CaptureErrorKind {
    /// The body is not JSON.
    #[error("the body is not JSON ({error})")]
    NotJson {
        /// What the parser said.
        error: String,
    },
    /// The pointer does not exist in the body.
    #[error("the pointer is not in the body")]
    Missing,
    /// The pointed value is null, an array or an object.
    #[error("the value is {found}; only strings, numbers and booleans can be captured")]
    Unsupported {
        /// The JSON type found.
        found: &'static str,
    },
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// JSON equality where numbers compare by value: integers exactly, otherwise as `f64`.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    haystack
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == first)
        .any(|(i, _)| haystack[i + 1..].starts_with(rest))
}

fn excerpt(body: &[u8]) -> String {
    if body.is_empty() {
        return "(empty)".to_owned();
    }
    // Decode a little more than needed so a cut multi-byte character at the end does not show.
    let head = &body[..body.len().min(EXCERPT_CHARS * 4)];
    let text = String::from_utf8_lossy(head);
    let mut out = String::with_capacity(EXCERPT_CHARS + 8);
    for (chars, c) in text.chars().enumerate() {
        if chars == EXCERPT_CHARS {
            out.push('…');
            return out;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if head.len() < body.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use test_case::test_case;

    fn expect() -> Expect {
        Expect::default()
    }

    #[test_case(&[], 200, true; "empty list accepts 200")]
    #[test_case(&[], 204, true; "empty list accepts 204")]
    #[test_case(&[], 299, true; "empty list accepts 299")]
    #[test_case(&[], 301, false; "empty list refuses 301")]
    #[test_case(&[], 500, false; "empty list refuses 500")]
    #[test_case(&[201, 409], 409, true; "listed status")]
    #[test_case(&[201], 200, false; "unlisted 2xx")]
    fn status(list: &[u16], status: u16, ok: bool) {
        let e = Expect {
            status: list.to_vec(),
            ..expect()
        };
        assert_eq!(check(&e, status, b"").is_ok(), ok);
    }

    #[test]
    fn body_contains() {
        let e = Expect {
            body_contains: Some("\"ok\"".to_owned()),
            ..expect()
        };
        assert!(check(&e, 200, br#"{"state":"ok"}"#).is_ok());
        let err = check(&e, 200, br#"{"state":"bad"}"#).unwrap_err();
        assert_eq!(
            err.kind,
            WrongAnswerKind::BodyMissing {
                text: "\"ok\"".to_owned()
            }
        );
        assert!(check(&e, 200, b"").is_err());
        assert!(check(&e, 200, b"\"o").is_err());
    }

    #[test]
    fn json_pointers_must_exist() {
        let e = Expect {
            json_pointer: vec!["/token".to_owned(), "/items/1/id".to_owned()],
            ..expect()
        };
        assert!(check(&e, 200, br#"{"token":"t","items":[{},{"id":null}]}"#).is_ok());
        let err = check(&e, 200, br#"{"token":"t","items":[{}]}"#).unwrap_err();
        assert_eq!(
            err.kind,
            WrongAnswerKind::PointerMissing {
                pointer: "/items/1/id".to_owned()
            }
        );
    }

    #[test_case(json!("done"), br#"{"s":"done"}"#, true; "equal strings")]
    #[test_case(json!("done"), br#"{"s":"pending"}"#, false; "different strings")]
    #[test_case(json!(1), br#"{"s":1.0}"#, true; "integer equals float")]
    #[test_case(json!(-3), br#"{"s":-3}"#, true; "negative integer")]
    #[test_case(json!(1), br#"{"s":"1"}"#, false; "number is not string")]
    #[test_case(json!([1, {"a": 2}]), br#"{"s":[1.0,{"a":2}]}"#, true; "nested numbers")]
    #[test_case(json!({"a": 1}), br#"{"s":{"a":1,"b":2}}"#, false; "extra key")]
    #[test_case(json!(null), br#"{"s":null}"#, true; "null")]
    fn json_equals(expected: Value, body: &[u8], ok: bool) {
        let e = Expect {
            json_equals: vec![("/s".to_owned(), expected)],
            ..expect()
        };
        assert_eq!(
            check(&e, 200, body).is_ok(),
            ok,
            "{:?}",
            check(&e, 200, body)
        );
    }

    #[test]
    fn json_equals_on_a_missing_pointer() {
        let e = Expect {
            json_equals: vec![("/s".to_owned(), json!(1))],
            ..expect()
        };
        let err = check(&e, 200, b"{}").unwrap_err();
        assert!(matches!(err.kind, WrongAnswerKind::PointerMissing { .. }));
    }

    #[test]
    fn a_body_that_is_not_json_fails_a_json_expectation_only() {
        let pointer = Expect {
            json_pointer: vec!["/a".to_owned()],
            ..expect()
        };
        let err = check(&pointer, 200, b"<html>").unwrap_err();
        assert!(matches!(err.kind, WrongAnswerKind::NotJson { .. }));
        assert!(check(&expect(), 200, b"<html>").is_ok());
    }

    #[test]
    fn json_is_parsed_only_when_needed_and_once() {
        let r = Response::new(200, b"not json");
        r.check(&expect()).unwrap();
        assert!(r.json.get().is_none(), "no JSON expectation, no parse");
        let r = Response::new(200, br#"{"t":"x"}"#);
        let e = Expect {
            json_pointer: vec!["/t".to_owned()],
            ..expect()
        };
        r.check(&e).unwrap();
        let parsed: *const Value = r.json().unwrap();
        let mut vars = SessionVars::new(1);
        r.capture(&[(0, "/t".to_owned())], &mut vars).unwrap();
        assert!(
            std::ptr::eq(parsed, r.json().unwrap()),
            "the capture reused the parse"
        );
        assert_eq!(vars.get(0), Some("x"));
    }

    #[test]
    fn a_wrong_status_is_reported_before_the_body_is_parsed() {
        let e = Expect {
            status: vec![200],
            json_pointer: vec!["/a".to_owned()],
            ..expect()
        };
        let r = Response::new(503, b"overloaded");
        let err = r.check(&e).unwrap_err();
        assert_eq!(
            err.kind,
            WrongAnswerKind::Status {
                expected: vec![200]
            }
        );
        assert!(r.json.get().is_none());
    }

    #[test_case(br#"{"t":"abc"}"#, Some("abc"); "string as is")]
    #[test_case(br#"{"t":"a\"b"}"#, Some("a\"b"); "string unescaped")]
    #[test_case(br#"{"t":42}"#, Some("42"); "integer")]
    #[test_case(br#"{"t":1.5}"#, Some("1.5"); "float")]
    #[test_case(br#"{"t":true}"#, Some("true"); "boolean")]
    #[test_case(br#"{"t":null}"#, None; "null")]
    #[test_case(br#"{"t":[1]}"#, None; "array")]
    #[test_case(br#"{"t":{}}"#, None; "object")]
    #[test_case(br#"{"u":1}"#, None; "missing")]
    #[test_case(b"<html>", None; "not json")]
    fn capture_values(body: &[u8], value: Option<&str>) {
        let mut vars = SessionVars::new(1);
        let result = capture(&[(0, "/t".to_owned())], body, &mut vars);
        assert_eq!(result.is_ok(), value.is_some(), "{result:?}");
        assert_eq!(vars.get(0), value);
    }

    #[test]
    fn a_failed_capture_stores_nothing() {
        let mut vars = SessionVars::new(2);
        let captures = [(0, "/a".to_owned()), (1, "/b".to_owned())];
        let err = capture(&captures, br#"{"a":"x"}"#, &mut vars).unwrap_err();
        assert_eq!(err.variable, 1);
        assert_eq!(err.kind, CaptureErrorKind::Missing);
        assert_eq!(vars.get(0), None);
        assert_eq!(
            err.to_string(),
            "failed to capture session variable 1 from `/b`: the pointer is not in the body"
        );
    }

    #[test]
    fn of_several_failed_captures_the_first_is_reported_and_none_is_stored() {
        let mut vars = SessionVars::new(3);
        let captures = [
            (0, "/a".to_owned()),
            (1, "/list".to_owned()),
            (2, "/missing".to_owned()),
        ];
        let err = capture(&captures, br#"{"a":"x","list":[1]}"#, &mut vars).unwrap_err();
        assert_eq!(err.variable, 1);
        assert_eq!(
            err.kind,
            CaptureErrorKind::Unsupported { found: "an array" }
        );
        assert_eq!((vars.get(0), vars.get(1), vars.get(2)), (None, None, None));
        // With the same pointers looked up in one pass, as the engine does.
        let pointers = PointerSet::new(captures.iter().map(|(_, p)| p.as_str()));
        let body = br#"{"a":"x","list":[1]}"#;
        let err = Response::with_pointers(200, body, &pointers)
            .capture(&captures, &mut vars)
            .unwrap_err();
        assert_eq!(err.variable, 1);
        assert_eq!(vars.get(0), None);
    }

    #[test]
    fn no_captures_need_no_json() {
        let mut vars = SessionVars::new(0);
        assert!(capture(&[], b"<html>", &mut vars).is_ok());
    }

    #[test]
    fn the_excerpt_is_cut_and_escaped() {
        let long = "é".repeat(EXCERPT_CHARS * 3);
        let cut = excerpt(long.as_bytes());
        assert_eq!(cut.chars().count(), EXCERPT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(excerpt(b"a\r\nb\x00"), "a\\r\\nb\\u{0}");
        assert_eq!(excerpt(b""), "(empty)");
        assert_eq!(excerpt(b"\xff ok"), "\u{fffd} ok");
        assert_eq!(
            excerpt("x".repeat(EXCERPT_CHARS).as_bytes()).len(),
            EXCERPT_CHARS
        );
    }

    #[test]
    fn wrong_answers_read_well() {
        let cases = [
            (
                Expect {
                    status: vec![200, 201],
                    ..expect()
                },
                503,
                &b"Service Unavailable"[..],
            ),
            (expect(), 404, &b""[..]),
            (
                Expect {
                    body_contains: Some("balance".to_owned()),
                    ..expect()
                },
                200,
                &b"{}"[..],
            ),
            (
                Expect {
                    json_pointer: vec!["/token".to_owned()],
                    ..expect()
                },
                200,
                &b"<html>oops</html>"[..],
            ),
            (
                Expect {
                    json_pointer: vec!["/token".to_owned()],
                    ..expect()
                },
                200,
                &br#"{"error":"locked"}"#[..],
            ),
            (
                Expect {
                    json_equals: vec![("/state".to_owned(), json!("done"))],
                    ..expect()
                },
                200,
                &br#"{"state":"pending"}"#[..],
            ),
        ];
        let messages: Vec<String> = cases
            .iter()
            .map(|(e, status, body)| check(e, *status, body).unwrap_err().to_string())
            .collect();
        insta::assert_snapshot!(messages.join("\n"));
    }
}
