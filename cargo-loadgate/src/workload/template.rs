//! Request templates compiled once into segments, so that rendering a request on the hot path is
//! concatenation: no parsing, no lookups of variables by name.
//!
//! Placeholders are written `{{name}}` in the path, in header values and in body strings:
//! `{{session}}` is the session's number (unique within a run: each phase numbers its sessions after
//! the previous phases' ones), `{{seq}}` the step's number within its session (from 0),
//! `{{rand}}` a pseudo-random `u64` derived from the seed, the session and the step (the same value
//! wherever it appears in one request), and any other name a session variable captured from an
//! earlier response. Variables are numbered when the workload is compiled; a session keeps their
//! values in a [`SessionVars`] indexed by that number.

use super::pointer::PointerSet;
use crate::config::{BodyTemplate, Expect, WorkloadConfig};
use http::{HeaderName, HeaderValue, Method};
use std::fmt::Write as _;

/// The values of one session's variables, indexed by the numbers [`CompiledWorkload`] gave them.
/// A session starts with every variable unset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionVars {
    values: Vec<Option<String>>,
}

impl SessionVars {
    /// Makes a set of `count` unset variables.
    pub fn new(count: usize) -> Self {
        SessionVars {
            values: vec![None; count],
        }
    }

    /// The value of variable `index`, if it was set.
    pub fn get(&self, index: usize) -> Option<&str> {
        self.values.get(index).and_then(|v| v.as_deref())
    }

    /// Sets variable `index`, growing the set if needed.
    pub fn set(&mut self, index: usize, value: String) {
        if index >= self.values.len() {
            self.values.resize(index + 1, None);
        }
        self.values[index] = Some(value);
    }

    /// Unsets every variable, keeping the allocation, so the set can serve the next session.
    pub fn clear(&mut self) {
        self.values.iter_mut().for_each(|v| *v = None);
    }
}

/// A request ready to send.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderedRequest {
    /// The method.
    pub method: Method,
    /// The path and query, starting with `/`; captured values in it are percent-encoded.
    pub path_and_query: String,
    /// The headers written in the config, in order. `content-type` is not added here (see `json`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body; empty when the operation has none. A `Vec`, not `Bytes`: it is only read, into
    /// the request's bytes, and a `Bytes` of a rendered `String` would allocate again.
    pub body: Vec<u8>,
    /// The body is JSON: the sender adds `content-type: application/json` unless `headers` already
    /// has a `content-type`.
    pub json: bool,
}

/// A workload whose requests are compiled for rendering, with its variable table and, per
/// operation, its captures and expectation.
#[derive(Clone, Debug)]
pub struct CompiledWorkload {
    seed: u64,
    variables: Vec<String>,
    operations: Vec<CompiledOperation>,
}

/// One operation of a [`CompiledWorkload`].
#[derive(Clone, Debug)]
pub struct CompiledOperation {
    /// The operation's name, as in the config.
    pub name: String,
    /// The method.
    pub method: Method,
    /// What a correct answer looks like.
    pub expect: Expect,
    /// Session variables to capture from the answer: (variable index, JSON pointer).
    pub captures: Vec<(usize, String)>,
    /// Every JSON pointer the expectation and the captures read, looked up in one pass.
    pub pointers: PointerSet,
    path: Template,
    headers: Vec<(HeaderName, HeaderTemplate)>,
    body: Option<Template>,
    json: bool,
}

#[derive(Clone, Debug)]
enum HeaderTemplate {
    Static(HeaderValue),
    Dynamic(Template),
}

/// A string split into literal text and placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Template {
    segments: Vec<Segment>,
    escape: Escape,
    literal_len: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Literal(Box<str>),
    Session,
    Seq,
    Rand,
    Var(usize),
}

/// How a variable's value is written where it is substituted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Escape {
    /// As one opaque value in a URI: everything but `A–Z a–z 0–9 - _ . ! ~ * ' ( )` is
    /// percent-encoded (what JavaScript's `encodeURIComponent` does), so a token containing `/`,
    /// `?`, `&` or `+` cannot change the path or the query.
    Uri,
    /// Inside a JSON string: quotes, backslashes and control characters are escaped.
    JsonString,
    /// As is (header values, raw bodies).
    None,
}

/// A workload that cannot be compiled. Validation rules these out; they are still reported, never
/// a panic.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The method is not a valid HTTP method token.
    #[error("operation `{operation}` has an invalid method `{method}`")]
    InvalidMethod {
        /// The operation.
        operation: String,
        /// The method as written.
        method: String,
    },
    /// A header name is not a valid HTTP header name.
    #[error("operation `{operation}` has an invalid header name `{name}`")]
    InvalidHeaderName {
        /// The operation.
        operation: String,
        /// The header name as written.
        name: String,
    },
    /// A header value without placeholders is not a valid HTTP header value.
    #[error(
        "operation `{operation}` has an invalid value for header `{name}`\nhint: header values cannot contain control characters such as line breaks"
    )]
    InvalidHeaderValue {
        /// The operation.
        operation: String,
        /// The header name.
        name: String,
    },
    /// The JSON body could not be serialized.
    #[error("operation `{operation}` has a JSON body that cannot be serialized")]
    Json {
        /// The operation.
        operation: String,
        /// What serde_json said.
        #[source]
        source: serde_json::Error,
    },
}

/// A request that cannot be rendered. The engine ends the session and counts it as abandoned.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RenderError {
    /// A placeholder names a session variable that has not been captured (yet) in this session.
    #[error(
        "operation `{operation}` uses `{{{{{variable}}}}}`, which this session has not captured"
    )]
    MissingVariable {
        /// The operation.
        operation: String,
        /// The variable's name.
        variable: String,
    },
    /// A captured value makes a header value invalid (a line break, say).
    #[error(
        "operation `{operation}`: the value of header `{header}` is invalid after substitution\nhint: a captured value contains a control character"
    )]
    InvalidHeaderValue {
        /// The operation.
        operation: String,
        /// The header name.
        header: String,
    },
    /// The operation index is out of range.
    #[error("the workload has no operation number {operation}")]
    UnknownOperation {
        /// The index asked for.
        operation: usize,
    },
}

impl CompiledWorkload {
    /// Compiles every operation of `w`: methods and header names parsed, JSON bodies serialized
    /// once to a template, placeholders resolved to builtins or numbered variables.
    ///
    /// Variables are numbered in order of first appearance: every captured variable first (in
    /// operation order), then names that are used but never captured (validation forbids those;
    /// rendering them fails with [`RenderError::MissingVariable`]).
    pub fn new(w: &WorkloadConfig) -> Result<Self, CompileError> {
        let mut variables: Vec<String> = Vec::new();
        for op in &w.operations {
            for capture in &op.capture {
                variable_index(&mut variables, &capture.variable);
            }
        }
        let mut operations = Vec::with_capacity(w.operations.len());
        for op in &w.operations {
            let name = op.name.clone();
            let method = Method::from_bytes(op.request.method.as_bytes()).map_err(|_| {
                CompileError::InvalidMethod {
                    operation: name.clone(),
                    method: op.request.method.clone(),
                }
            })?;
            let path = Template::parse(&op.request.path, Escape::Uri, &mut variables);
            let mut headers = Vec::with_capacity(op.request.headers.len());
            for (header, value) in &op.request.headers {
                let header_name = HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
                    CompileError::InvalidHeaderName {
                        operation: name.clone(),
                        name: header.clone(),
                    }
                })?;
                let template = Template::parse(value, Escape::None, &mut variables);
                let compiled = match template.as_static() {
                    Some(text) => {
                        HeaderTemplate::Static(HeaderValue::from_str(text).map_err(|_| {
                            CompileError::InvalidHeaderValue {
                                operation: name.clone(),
                                name: header.clone(),
                            }
                        })?)
                    }
                    None => HeaderTemplate::Dynamic(template),
                };
                headers.push((header_name, compiled));
            }
            let (body, json) = match &op.request.body {
                None => (None, false),
                Some(BodyTemplate::Raw(text)) => (
                    Some(Template::parse(text, Escape::None, &mut variables)),
                    false,
                ),
                Some(BodyTemplate::Json(value)) => {
                    // Serialized once. A placeholder can only sit inside a JSON string here: `{{`
                    // never occurs outside strings in serialized JSON (an object opens with `{"`
                    // or `{}`), and a placeholder's name cannot contain `"`. So every variable in
                    // this template is substituted into a string and escaped as such.
                    let text =
                        serde_json::to_string(value).map_err(|source| CompileError::Json {
                            operation: name.clone(),
                            source,
                        })?;
                    (
                        Some(Template::parse(&text, Escape::JsonString, &mut variables)),
                        true,
                    )
                }
            };
            let captures = op
                .capture
                .iter()
                .map(|c| {
                    (
                        variable_index(&mut variables, &c.variable),
                        c.pointer.clone(),
                    )
                })
                .collect::<Vec<_>>();
            let pointers = PointerSet::new(
                op.expect
                    .json_pointer
                    .iter()
                    .chain(op.expect.json_equals.iter().map(|(p, _)| p))
                    .chain(captures.iter().map(|(_, p)| p))
                    .map(String::as_str),
            );
            operations.push(CompiledOperation {
                name,
                method,
                expect: op.expect.clone(),
                captures,
                pointers,
                path,
                headers,
                body,
                json,
            });
        }
        Ok(CompiledWorkload {
            seed: w.seed,
            variables,
            operations,
        })
    }

    /// The compiled operations, in the config's order.
    pub fn operations(&self) -> &[CompiledOperation] {
        &self.operations
    }

    /// The variable table: the name of each variable, by index.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }

    /// The index of the variable called `name`, if the workload uses one.
    pub fn variable_index(&self, name: &str) -> Option<usize> {
        self.variables.iter().position(|v| v == name)
    }

    /// A fresh, empty set of variables for a new session.
    pub fn new_session_vars(&self) -> SessionVars {
        SessionVars::new(self.variables.len())
    }

    /// The request of operation `op` when nothing in it varies (no placeholder in its path, its
    /// headers or its body): the same for every session and step, so the engine encodes it once
    /// per phase instead of once per request. `None` when something varies, or when it cannot
    /// be rendered (it then fails per request, as before).
    pub fn render_static(&self, op: usize) -> Option<RenderedRequest> {
        let operation = self.operations.get(op)?;
        operation.path.as_static()?;
        let headers_static = operation
            .headers
            .iter()
            .all(|(_, value)| matches!(value, HeaderTemplate::Static(_)));
        let body_static = operation
            .body
            .as_ref()
            .is_none_or(|body| body.as_static().is_some());
        if !(headers_static && body_static) {
            return None;
        }
        self.render(op, 0, 0, &self.new_session_vars()).ok()
    }

    /// Renders step `seq` (from 0) of session `session` when it visits operation `op`, with the
    /// session's variables.
    pub fn render(
        &self,
        op: usize,
        session: u64,
        seq: u32,
        vars: &SessionVars,
    ) -> Result<RenderedRequest, RenderError> {
        let operation = self
            .operations
            .get(op)
            .ok_or(RenderError::UnknownOperation { operation: op })?;
        let ctx = Context {
            session,
            seq,
            rand: request_rand(self.seed, session, seq),
            vars,
            variables: &self.variables,
            operation: &operation.name,
        };
        let path_and_query = operation.path.render(&ctx)?;
        let mut headers = Vec::with_capacity(operation.headers.len());
        for (name, value) in &operation.headers {
            let value = match value {
                HeaderTemplate::Static(value) => value.clone(),
                HeaderTemplate::Dynamic(template) => HeaderValue::try_from(template.render(&ctx)?)
                    .map_err(|_| RenderError::InvalidHeaderValue {
                        operation: operation.name.clone(),
                        header: name.as_str().to_owned(),
                    })?,
            };
            headers.push((name.clone(), value));
        }
        let body = match &operation.body {
            None => Vec::new(),
            Some(template) => template.render(&ctx)?.into_bytes(),
        };
        Ok(RenderedRequest {
            method: operation.method.clone(),
            path_and_query,
            headers,
            body,
            json: operation.json,
        })
    }
}

fn variable_index(variables: &mut Vec<String>, name: &str) -> usize {
    match variables.iter().position(|v| v == name) {
        Some(index) => index,
        None => {
            variables.push(name.to_owned());
            variables.len() - 1
        }
    }
}

struct Context<'a> {
    session: u64,
    seq: u32,
    rand: u64,
    vars: &'a SessionVars,
    variables: &'a [String],
    operation: &'a str,
}

impl Template {
    /// Splits `text` at its placeholders. `{{` not followed by a name and `}}` stays literal text.
    fn parse(text: &str, escape: Escape, variables: &mut Vec<String>) -> Template {
        let mut segments = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let after = &rest[open + 2..];
            let placeholder = after.find("}}").and_then(|close| {
                let name = after[..close].trim();
                let valid = !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
                valid.then_some((name, close))
            });
            match placeholder {
                Some((name, close)) => {
                    literal.push_str(&rest[..open]);
                    if !literal.is_empty() {
                        segments.push(Segment::Literal(std::mem::take(&mut literal).into()));
                    }
                    segments.push(match name {
                        "session" => Segment::Session,
                        "seq" => Segment::Seq,
                        "rand" => Segment::Rand,
                        _ => Segment::Var(variable_index(variables, name)),
                    });
                    rest = &after[close + 2..];
                }
                None => {
                    literal.push_str(&rest[..open + 2]);
                    rest = after;
                }
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            segments.push(Segment::Literal(literal.into()));
        }
        let literal_len = segments
            .iter()
            .map(|s| match s {
                Segment::Literal(text) => text.len(),
                _ => 0,
            })
            .sum();
        Template {
            segments,
            escape,
            literal_len,
        }
    }

    /// The text of a template without placeholders.
    fn as_static(&self) -> Option<&str> {
        match self.segments.as_slice() {
            [] => Some(""),
            [Segment::Literal(text)] => Some(text),
            _ => None,
        }
    }

    fn render(&self, ctx: &Context<'_>) -> Result<String, RenderError> {
        let mut out = String::with_capacity(self.literal_len + 16 * self.segments.len());
        for segment in &self.segments {
            // Writing integers to a String cannot fail.
            match segment {
                Segment::Literal(text) => out.push_str(text),
                Segment::Session => {
                    let _ = write!(out, "{}", ctx.session);
                }
                Segment::Seq => {
                    let _ = write!(out, "{}", ctx.seq);
                }
                Segment::Rand => {
                    let _ = write!(out, "{}", ctx.rand);
                }
                Segment::Var(index) => {
                    let value =
                        ctx.vars
                            .get(*index)
                            .ok_or_else(|| RenderError::MissingVariable {
                                operation: ctx.operation.to_owned(),
                                variable: ctx.variables.get(*index).cloned().unwrap_or_default(),
                            })?;
                    match self.escape {
                        Escape::Uri => percent_encode(value, &mut out),
                        Escape::JsonString => json_escape(value, &mut out),
                        Escape::None => out.push_str(value),
                    }
                }
            }
        }
        Ok(out)
    }
}

impl CompiledWorkload {
    /// The wait before retry `retry` (1 for the first) of step `seq` of session `session` under
    /// `policy`: `backoff × 2^(retry − 1)`, times a factor in [0.5, 1) drawn from the seed, the
    /// session, the step and the retry (equal jitter, so retries of many sessions that failed
    /// together do not return together, and the same seed waits the same). At most an hour.
    pub fn retry_backoff(
        &self,
        policy: &crate::config::RetryPolicy,
        session: u64,
        seq: u32,
        retry: u32,
    ) -> std::time::Duration {
        const MAX: std::time::Duration = std::time::Duration::from_secs(3600);
        let doubling = 2f64.powi(i32::try_from(retry.saturating_sub(1)).unwrap_or(i32::MAX));
        let draw = splitmix64(request_rand(self.seed, session, seq) ^ u64::from(retry));
        // The top 53 bits as a uniform number in [0, 1).
        let unit = (draw >> 11) as f64 / (1u64 << 53) as f64;
        let secs = policy.backoff.as_secs_f64() * doubling * (0.5 + 0.5 * unit);
        std::time::Duration::try_from_secs_f64(secs).map_or(MAX, |d| d.min(MAX))
    }
}

/// The `{{rand}}` of one request: SplitMix64 over the seed, the session and the step, so it is
/// reproducible and different for every request.
fn request_rand(seed: u64, session: u64, seq: u32) -> u64 {
    splitmix64(splitmix64(seed ^ splitmix64(session)) ^ u64::from(seq))
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn percent_encode(value: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in value.as_bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'_' | b'.' | b'!' | b'~' | b'*' | b'\'' | b'(' | b')'
            )
        {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
}

fn json_escape(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Capture, EntryPoint, OperationConfig, RequestTemplate, WorkloadConfig};
    use serde_json::json;
    use test_case::test_case;

    fn op(name: &str, request: RequestTemplate, capture: &[(&str, &str)]) -> OperationConfig {
        OperationConfig {
            name: name.to_owned(),
            request,
            expect: Expect {
                status: vec![200],
                body_contains: None,
                json_pointer: Vec::new(),
                json_equals: Vec::new(),
            },
            capture: capture
                .iter()
                .map(|(variable, pointer)| Capture {
                    variable: (*variable).to_owned(),
                    pointer: (*pointer).to_owned(),
                })
                .collect(),
            next: Vec::new(),
            gate: false,
            retry: crate::config::OperationRetry::Inherit,
            idempotent: false,
        }
    }

    fn get(path: &str) -> RequestTemplate {
        RequestTemplate {
            method: "GET".to_owned(),
            path: path.to_owned(),
            headers: Vec::new(),
            body: None,
        }
    }

    fn workload(operations: Vec<OperationConfig>) -> WorkloadConfig {
        WorkloadConfig {
            seed: 42,
            sessions_per_sec: 1.0,
            entry: vec![EntryPoint {
                operation: 0,
                p: 1.0,
            }],
            operations,
        }
    }

    /// login captures `token` and `account`; transfer uses them everywhere a placeholder can be.
    fn banking() -> CompiledWorkload {
        let login = op(
            "login",
            RequestTemplate {
                method: "POST".to_owned(),
                path: "/login".to_owned(),
                headers: vec![("x-session".to_owned(), "s{{session}}".to_owned())],
                body: Some(BodyTemplate::Json(
                    json!({ "user": "u{{session}}", "n": 3, "tags": ["{{seq}}"] }),
                )),
            },
            &[("token", "/token"), ("account", "/account/id")],
        );
        let transfer = op(
            "transfer",
            RequestTemplate {
                method: "POST".to_owned(),
                path: "/accounts/{{account}}/transfer?seq={{seq}}&r={{rand}}".to_owned(),
                headers: vec![
                    ("authorization".to_owned(), "Bearer {{ token }}".to_owned()),
                    ("accept".to_owned(), "application/json".to_owned()),
                ],
                body: Some(BodyTemplate::Json(
                    json!({ "from": "{{account}}", "memo": "by {{token}} #{{seq}}" }),
                )),
            },
            &[],
        );
        let raw = op(
            "raw",
            RequestTemplate {
                method: "PUT".to_owned(),
                path: "/raw".to_owned(),
                headers: Vec::new(),
                body: Some(BodyTemplate::Raw(
                    "token={{token}}; {{not a placeholder}} {{".to_owned(),
                )),
            },
            &[],
        );
        CompiledWorkload::new(&workload(vec![login, transfer, raw])).unwrap()
    }

    fn vars(w: &CompiledWorkload, values: &[(&str, &str)]) -> SessionVars {
        let mut vars = w.new_session_vars();
        for (name, value) in values {
            vars.set(w.variable_index(name).unwrap(), (*value).to_owned());
        }
        vars
    }

    #[test]
    fn a_request_without_placeholders_is_rendered_once_as_every_time() {
        let fixed = op(
            "fixed",
            RequestTemplate {
                method: "POST".to_owned(),
                path: "/items?x=1&y={{}}".to_owned(),
                headers: vec![("accept".to_owned(), "application/json".to_owned())],
                body: Some(BodyTemplate::Json(json!({ "a": [1, "two"], "b": null }))),
            },
            &[],
        );
        let varying = [
            get("/s/{{session}}"),
            get("/r?q={{rand}}"),
            RequestTemplate {
                headers: vec![("x-seq".to_owned(), "{{seq}}".to_owned())],
                ..get("/")
            },
            RequestTemplate {
                body: Some(BodyTemplate::Raw("n={{seq}}".to_owned())),
                ..get("/")
            },
            RequestTemplate {
                body: Some(BodyTemplate::Json(json!({ "s": "{{session}}" }))),
                ..get("/")
            },
        ];
        let mut operations = vec![fixed];
        operations.extend(
            varying
                .into_iter()
                .enumerate()
                .map(|(i, request)| op(&format!("varying-{i}"), request, &[])),
        );
        let n = operations.len();
        let w = CompiledWorkload::new(&workload(operations)).unwrap();
        let once = w.render_static(0).expect("nothing in it varies");
        let vars = w.new_session_vars();
        for (session, seq) in [(0, 0), (7, 3), (u64::MAX, u32::MAX)] {
            assert_eq!(w.render(0, session, seq, &vars).unwrap(), once);
        }
        for i in 1..n {
            assert_eq!(w.render_static(i), None, "operation {i} varies");
        }
        assert_eq!(w.render_static(n), None, "no such operation");
        // The banking workload varies everywhere but in `raw`'s path: every operation renders per
        // request.
        let banking = banking();
        assert!((0..3).all(|i| banking.render_static(i).is_none()));
    }

    #[test]
    fn variables_are_numbered_captures_first() {
        let w = banking();
        assert_eq!(w.variables(), ["token", "account"]);
        assert_eq!(
            w.operations()[0].captures,
            [(0, "/token".to_owned()), (1, "/account/id".to_owned())]
        );
        assert_eq!(w.operations()[0].expect.status, [200]);
        assert_eq!(w.variable_index("session"), None);
    }

    #[test]
    fn session_and_seq_fill_path_headers_and_json_body() {
        let w = banking();
        let r = w.render(0, 17, 0, &w.new_session_vars()).unwrap();
        assert_eq!(r.method, Method::POST);
        assert_eq!(r.path_and_query, "/login");
        assert_eq!(
            r.headers,
            [(
                HeaderName::from_static("x-session"),
                HeaderValue::from_static("s17")
            )]
        );
        assert!(r.json);
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body, json!({ "user": "u17", "n": 3, "tags": ["0"] }));
    }

    #[test]
    fn captured_variables_fill_every_place() {
        let w = banking();
        let v = vars(&w, &[("token", "abc"), ("account", "A-1")]);
        let r = w.render(1, 5, 3, &v).unwrap();
        let rand = request_rand(42, 5, 3);
        assert_eq!(
            r.path_and_query,
            format!("/accounts/A-1/transfer?seq=3&r={rand}")
        );
        assert_eq!(r.headers[0].1, "Bearer abc");
        assert_eq!(r.headers[1].1, "application/json");
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body, json!({ "from": "A-1", "memo": "by abc #3" }));
    }

    #[test]
    fn a_raw_body_is_substituted_as_is_and_non_placeholders_stay() {
        let w = banking();
        let v = vars(&w, &[("token", "a\"b")]);
        let r = w.render(2, 0, 0, &v).unwrap();
        assert!(!r.json);
        assert_eq!(r.method, Method::PUT);
        assert_eq!(&r.body[..], b"token=a\"b; {{not a placeholder}} {{");
    }

    #[test_case("plain", "plain"; "unreserved stays")]
    #[test_case("a/b?c&d=e+f#g", "a%2Fb%3Fc%26d%3De%2Bf%23g"; "delimiters are encoded")]
    #[test_case("x y%z", "x%20y%25z"; "space and percent")]
    #[test_case("ü", "%C3%BC"; "utf8 bytes")]
    fn a_captured_value_in_the_path_is_percent_encoded(value: &str, encoded: &str) {
        let w = banking();
        let v = vars(&w, &[("token", "t"), ("account", value)]);
        let r = w.render(1, 0, 0, &v).unwrap();
        assert!(
            r.path_and_query
                .starts_with(&format!("/accounts/{encoded}/transfer?")),
            "{}",
            r.path_and_query
        );
        assert!(r.path_and_query.parse::<http::uri::PathAndQuery>().is_ok());
    }

    #[test]
    fn a_captured_value_with_quotes_is_escaped_in_json() {
        let mut request = get("/notes");
        request.body = Some(BodyTemplate::Json(
            json!({ "memo": "by {{token}} #{{seq}}", "{{token}}": ["{{token}}"] }),
        ));
        let w = CompiledWorkload::new(&workload(vec![op("note", request, &[("token", "/t")])]))
            .unwrap();
        let nasty = "he said \"hi\" \\ then\nleft\u{1}";
        let r = w.render(0, 0, 0, &vars(&w, &[("token", nasty)])).unwrap();
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["memo"], format!("by {nasty} #0"));
        assert_eq!(body[nasty], json!([nasty]));
    }

    #[test]
    fn a_missing_variable_is_an_error() {
        let w = banking();
        let v = vars(&w, &[("token", "abc")]);
        let err = w.render(1, 0, 0, &v).unwrap_err();
        assert_eq!(
            err,
            RenderError::MissingVariable {
                operation: "transfer".to_owned(),
                variable: "account".to_owned()
            }
        );
        assert_eq!(
            err.to_string(),
            "operation `transfer` uses `{{account}}`, which this session has not captured"
        );
    }

    #[test]
    fn a_variable_never_captured_is_an_error_not_a_panic() {
        let w = CompiledWorkload::new(&workload(vec![op("a", get("/x/{{ghost}}"), &[])])).unwrap();
        assert_eq!(w.variables(), ["ghost"]);
        let err = w.render(0, 0, 0, &w.new_session_vars()).unwrap_err();
        assert!(
            matches!(err, RenderError::MissingVariable { ref variable, .. } if variable == "ghost")
        );
        // A SessionVars smaller than the table (built by hand) is no panic either.
        assert!(w.render(0, 0, 0, &SessionVars::default()).is_err());
        assert_eq!(
            w.render(9, 0, 0, &SessionVars::default()).unwrap_err(),
            RenderError::UnknownOperation { operation: 9 }
        );
    }

    #[test]
    fn a_captured_line_break_in_a_header_is_an_error() {
        let w = banking();
        let v = vars(&w, &[("token", "abc\r\nx-evil: 1"), ("account", "1")]);
        let err = w.render(1, 0, 0, &v).unwrap_err();
        assert!(
            matches!(err, RenderError::InvalidHeaderValue { ref header, .. } if header == "authorization")
        );
    }

    #[test]
    fn rand_is_reproducible_and_differs_per_request() {
        let w = CompiledWorkload::new(&workload(vec![op("a", get("/{{rand}}/{{rand}}"), &[])]))
            .unwrap();
        let v = w.new_session_vars();
        let render = |session, seq| w.render(0, session, seq, &v).unwrap().path_and_query;
        assert_eq!(render(1, 1), render(1, 1));
        assert_ne!(render(1, 1), render(1, 2));
        assert_ne!(render(1, 1), render(2, 1));
        let path = render(3, 4);
        let parts: Vec<&str> = path.split('/').collect();
        assert_eq!(parts[1], parts[2], "one value per request");
    }

    #[test_case("GE T", "invalid method"; "method")]
    #[test_case("GET", "invalid header name"; "header name")]
    fn invalid_requests_are_compile_errors(method: &str, message: &str) {
        let mut request = get("/");
        request.method = method.to_owned();
        request.headers = vec![("bad header".to_owned(), "v".to_owned())];
        let err = CompiledWorkload::new(&workload(vec![op("a", request, &[])])).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }

    #[test]
    fn an_invalid_static_header_value_is_a_compile_error() {
        let mut request = get("/");
        request.headers = vec![("x".to_owned(), "a\nb".to_owned())];
        let err = CompiledWorkload::new(&workload(vec![op("a", request, &[])])).unwrap_err();
        assert!(
            matches!(err, CompileError::InvalidHeaderValue { .. }),
            "{err}"
        );
    }

    #[test]
    fn session_vars_clear_for_the_next_session() {
        let mut v = SessionVars::new(1);
        v.set(0, "x".to_owned());
        v.set(3, "y".to_owned());
        assert_eq!(v.get(3), Some("y"));
        v.clear();
        assert_eq!(v.get(0), None);
        assert_eq!(v.get(3), None);
        assert_eq!(v.get(99), None);
    }

    /// The backoff is a pure function of the seed, the session, the step and the retry: no
    /// clock, no state. Retry n waits between half and all of `backoff × 2^(n−1)`.
    #[test]
    fn retry_backoff_doubles_with_seeded_jitter_and_repeats_for_the_same_seed() {
        let policy = crate::config::RetryPolicy {
            attempts: 5,
            on: crate::config::RetryOn::ALL,
            backoff: std::time::Duration::from_millis(40),
        };
        let w = CompiledWorkload::new(&workload(vec![op("a", get("/"), &[])])).unwrap();
        for retry in 1..=4u32 {
            let full = 40.0 * 2f64.powi(retry as i32 - 1);
            let waits: Vec<f64> = (0..200u64)
                .map(|session| w.retry_backoff(&policy, session, 0, retry).as_secs_f64() * 1e3)
                .collect();
            assert!(
                waits.iter().all(|&ms| ms >= full / 2.0 && ms < full),
                "retry {retry}: {waits:?}"
            );
            // Jittered: the sessions do not all wait the same.
            let spread = waits.iter().cloned().fold(f64::MIN, f64::max)
                - waits.iter().cloned().fold(f64::MAX, f64::min);
            assert!(spread > full / 4.0, "retry {retry}: spread {spread}");
        }
        let again = CompiledWorkload::new(&workload(vec![op("a", get("/"), &[])])).unwrap();
        assert_eq!(
            w.retry_backoff(&policy, 7, 2, 3),
            again.retry_backoff(&policy, 7, 2, 3)
        );
        assert_ne!(
            w.retry_backoff(&policy, 7, 2, 3),
            w.retry_backoff(&policy, 8, 2, 3)
        );
        let huge = crate::config::RetryPolicy {
            backoff: std::time::Duration::from_secs(3000),
            ..policy
        };
        assert_eq!(
            w.retry_backoff(&huge, 1, 0, 100),
            std::time::Duration::from_secs(3600),
            "capped, never overflowing"
        );
    }
}
