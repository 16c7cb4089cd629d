//! `[[workload.operation]]` and `workload.entry`: operations, their requests, checks, captures and
//! transitions, and the checks that need the whole graph (names resolve, probabilities sum to at most 1, every
//! operation is reachable, sessions can end, every template variable is captured on some path).

use crate::config::source::{
    Cx, StringEntry, Tbl, Val, array, boolean, integer_in, number, string, string_map, suggest,
    wrong_type,
};
use crate::config::types::{
    BodyTemplate, Capture, EntryPoint, Expect, OperationConfig, OperationRetry, RequestTemplate,
    ThinkTime, Transition,
};
use std::{collections::BTreeSet, ops::Range, time::Duration};
use toml::de::DeValue;

/// Template variables every session has: its number, the request's number within it, and a
/// seeded random number (the workload module gives them their values).
pub const BUILTIN_VARIABLES: &[&str] = &["session", "seq", "rand"];

/// The HTTP methods a request may use.
pub const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// The keys of `[[workload.operation]]`, of its inline tables (`request`, `expect`, `next`) and
/// of `workload.entry`, each named once: the key lists below, the readers and the resolved
/// listing (`config/render.rs`) all use these.
pub(crate) mod keys {
    /// `name`.
    pub(crate) const NAME: &str = "name";
    /// `request`.
    pub(crate) const REQUEST: &str = "request";
    /// `expect`.
    pub(crate) const EXPECT: &str = "expect";
    /// `capture`.
    pub(crate) const CAPTURE: &str = "capture";
    /// `next`.
    pub(crate) const NEXT: &str = "next";
    /// `gate`.
    pub(crate) const GATE: &str = "gate";
    /// `retry`.
    pub(crate) const RETRY: &str = "retry";
    /// `idempotent`.
    pub(crate) const IDEMPOTENT: &str = "idempotent";
    /// `method`.
    pub(crate) const METHOD: &str = "method";
    /// `path`.
    pub(crate) const PATH: &str = "path";
    /// `headers`.
    pub(crate) const HEADERS: &str = "headers";
    /// `json`.
    pub(crate) const JSON: &str = "json";
    /// `body`.
    pub(crate) const BODY: &str = "body";
    /// `status`.
    pub(crate) const STATUS: &str = "status";
    /// `body-contains`.
    pub(crate) const BODY_CONTAINS: &str = "body-contains";
    /// `json-pointer`.
    pub(crate) const JSON_POINTER: &str = "json-pointer";
    /// `json-equals`.
    pub(crate) const JSON_EQUALS: &str = "json-equals";
    /// `to`.
    pub(crate) const TO: &str = "to";
    /// `p`.
    pub(crate) const P: &str = "p";
    /// `think`.
    pub(crate) const THINK: &str = "think";
    /// `weight`.
    pub(crate) const WEIGHT: &str = "weight";
    /// `think = { fixed = … }`.
    pub(crate) const FIXED: &str = "fixed";
    /// `think = { uniform = [low, high] }`.
    pub(crate) const UNIFORM: &str = "uniform";
}

const OPERATION_KEYS: &[&str] = &[
    keys::NAME,
    keys::REQUEST,
    keys::EXPECT,
    keys::CAPTURE,
    keys::NEXT,
    keys::GATE,
    keys::RETRY,
    keys::IDEMPOTENT,
];
const REQUEST_KEYS: &[&str] = &[
    keys::METHOD,
    keys::PATH,
    keys::HEADERS,
    keys::JSON,
    keys::BODY,
];
const EXPECT_KEYS: &[&str] = &[
    keys::STATUS,
    keys::BODY_CONTAINS,
    keys::JSON_POINTER,
    keys::JSON_EQUALS,
];
const NEXT_KEYS: &[&str] = &[keys::TO, keys::P, keys::THINK];
const ENTRY_KEYS: &[&str] = &[keys::TO, keys::WEIGHT];

/// Splits `s` into the names of the `{{name}}` placeholders it uses.
///
/// A name is ASCII letters, digits, `_`, `-` and `.`, optionally padded with spaces inside the
/// braces (the grammar of `workload::template`). Where that module would send text that looks like
/// a broken placeholder literally (`{{` without `}}`, `{{ a b }}`), validation refuses it, so a typo
/// is never sent to the service as text.
pub fn template_variables(s: &str) -> Result<Vec<&str>, String> {
    super::placeholder::placeholders(s)?
        .into_iter()
        .map(|inner| {
            let name = inner.trim();
            if is_variable_name(name) {
                Ok(name)
            } else {
                Err(format!(
                    "`{{{{{inner}}}}}` is not a variable name; write e.g. `{{{{token}}}}`"
                ))
            }
        })
        .collect()
}

/// Whether `name` can be used as `{{name}}`.
fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Checks a JSON pointer (RFC 6901): empty, or `/`-separated with `~` only as `~0` or `~1`.
pub fn check_json_pointer(p: &str) -> Result<(), String> {
    if !p.is_empty() && !p.starts_with('/') {
        return Err(format!(
            "JSON pointer {p:?} must start with `/` (or be empty for the whole body)"
        ));
    }
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!(
                "JSON pointer {p:?} has a `~` that is not `~0` or `~1`"
            ));
        }
    }
    Ok(())
}

/// An operation as written, before names are resolved to indices.
pub(crate) struct RawOp {
    pub file: usize,
    pub name: String,
    pub name_span: Range<usize>,
    pub request: RequestTemplate,
    pub expect: Expect,
    pub capture: Vec<Capture>,
    pub next: Vec<RawNext>,
    pub next_span: Option<Range<usize>>,
    /// Template variables used by the request, with the span of the string using each.
    pub uses: Vec<(String, Range<usize>)>,
    /// `gate = true`: the operation's latencies are primary metrics.
    pub gate: bool,
    /// `retry`: its own policy, none, or the generator's.
    pub retry: OperationRetry,
    /// `idempotent = true`.
    pub idempotent: bool,
}

/// A transition as written.
pub(crate) struct RawNext {
    pub to: String,
    pub to_span: Range<usize>,
    pub p: f64,
    pub think: ThinkTime,
}

/// An entry as written.
pub(crate) struct RawEntry {
    pub file: usize,
    pub to: String,
    pub span: Range<usize>,
    pub weight: f64,
}

/// Reads `workload.operation`. Operations with a name are kept even when other parts are wrong, so
/// the graph checks do not report a missing operation that merely had a typo elsewhere.
pub(crate) fn operations(cx: &Cx<'_>, v: Val<'_>, section: &str) -> Vec<RawOp> {
    let Some(items) = array(cx, v, "an array of tables, written [[workload.operation]]") else {
        return Vec::new();
    };
    items
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| operation(cx, item, section, i))
        .collect()
}

fn operation(cx: &Cx<'_>, v: Val<'_>, section: &str, index: usize) -> Option<RawOp> {
    let fallback = format!("operation {} of `{section}.operation`", index + 1);
    let table = Tbl::of(cx, v, fallback.clone(), "a table (an operation)")?;
    let name_val = table.get(keys::NAME);
    let name = name_val.and_then(|n| string(cx, n, "a string (the operation's name)"));
    let label = name.map_or(fallback, |n| format!("operation `{n}`"));
    let table = Tbl {
        name: label.clone(),
        ..table
    };
    table.check_keys(cx, OPERATION_KEYS);
    let (name, name_span) = match (name, name_val) {
        (Some(name), Some(val)) if !name.is_empty() => (name.to_owned(), val.span()),
        (Some(_), Some(val)) => {
            cx.error(
                val.file,
                val.span(),
                "an operation's name must not be empty",
                None,
            );
            return None;
        }
        (None, Some(_)) => return None,
        (_, None) => {
            cx.error(
                table.file,
                table.span.clone(),
                format!("{label} has no `name`"),
                None,
            );
            return None;
        }
    };
    let mut uses = Vec::new();
    let request = match table.get(keys::REQUEST) {
        Some(r) => request(cx, r, &label, &mut uses),
        None if table.has_typo_of(keys::REQUEST) => None,
        None => {
            cx.error(
                table.file,
                name_span.clone(),
                format!("{label} has no `request`"),
                Some("add e.g. request = { method = \"GET\", path = \"/\" }".to_owned()),
            );
            None
        }
    };
    let expect = table.get(keys::EXPECT).and_then(|e| expect(cx, e, &label));
    let capture = table
        .get(keys::CAPTURE)
        .and_then(|c| captures(cx, c, &label))
        .unwrap_or_default();
    let next = table
        .get(keys::NEXT)
        .map(|n| transitions(cx, n, &label))
        .unwrap_or_default();
    let gate = table
        .get(keys::GATE)
        .and_then(|g| boolean(cx, g))
        .unwrap_or(false);
    let retry = table
        .get(keys::RETRY)
        .and_then(|r| super::retry::operation_retry(cx, r, &label))
        .unwrap_or_default();
    let idempotent = table
        .get(keys::IDEMPOTENT)
        .and_then(|i| boolean(cx, i))
        .unwrap_or(false);
    Some(RawOp {
        file: table.file,
        name,
        name_span,
        request: request.unwrap_or(RequestTemplate {
            method: "GET".to_owned(),
            path: "/".to_owned(),
            headers: Vec::new(),
            body: None,
        }),
        expect: expect.unwrap_or_default(),
        capture,
        next,
        next_span: table.get(keys::NEXT).map(|n| n.span()),
        uses,
        gate,
        retry,
        idempotent,
    })
}

/// Records the template variables of `s` (found at `v`), reporting bad syntax.
fn template(cx: &Cx<'_>, v: Val<'_>, s: &str, uses: &mut Vec<(String, Range<usize>)>) -> bool {
    match template_variables(s) {
        Ok(names) => {
            uses.extend(names.into_iter().map(|n| (n.to_owned(), v.span())));
            true
        }
        Err(e) => {
            cx.error(v.file, v.span(), e, None);
            false
        }
    }
}

pub(crate) fn request(
    cx: &Cx<'_>,
    v: Val<'_>,
    label: &str,
    uses: &mut Vec<(String, Range<usize>)>,
) -> Option<RequestTemplate> {
    let table = Tbl::of(
        cx,
        v,
        format!("`request` of {label}"),
        "a table like { method = \"GET\", path = \"/\" }",
    )?;
    table.check_keys(cx, REQUEST_KEYS);
    let mut ok = true;
    let method = match table.get(keys::METHOD) {
        None => Some("GET".to_owned()),
        Some(m) => string(cx, m, "an HTTP method like \"GET\"").and_then(|s| {
            if METHODS.contains(&s) {
                Some(s.to_owned())
            } else {
                let upper = s.to_ascii_uppercase();
                let help = if METHODS.contains(&upper.as_str()) {
                    Some(format!("methods are case-sensitive; write `{upper}`"))
                } else {
                    suggest(s, METHODS.iter().copied())
                        .map(|b| format!("did you mean `{b}`?"))
                        .or_else(|| Some(format!("use one of {}", METHODS.join(", "))))
                };
                cx.error(m.file, m.span(), format!("unknown HTTP method `{s}`"), help);
                None
            }
        }),
    };
    let path = match table.get(keys::PATH) {
        None => {
            cx.error(
                table.file,
                table.span.clone(),
                format!("`request` of {label} has no `path`"),
                None,
            );
            None
        }
        Some(p) => string(cx, p, "a path like \"/login\"").and_then(|s| {
            if !s.starts_with('/') {
                cx.error(
                    p.file,
                    p.span(),
                    format!("path {s:?} must start with `/`"),
                    None,
                );
                return None;
            }
            if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
                cx.error(
                    p.file,
                    p.span(),
                    format!("path {s:?} contains whitespace; percent-encode it"),
                    None,
                );
                return None;
            }
            template(cx, p, s, uses).then(|| s.to_owned())
        }),
    };
    let mut headers = Vec::new();
    if let Some(h) = table.get(keys::HEADERS) {
        match string_map(cx, h, format!("`headers` of {label}")) {
            Some(entries) => {
                for StringEntry {
                    key: name,
                    value,
                    key_span,
                    value_span: span,
                } in entries
                {
                    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                        cx.error(
                            h.file,
                            key_span,
                            format!("`{name}` is not a valid header name"),
                            None,
                        );
                        ok = false;
                    }
                    if http::HeaderValue::from_str(&value).is_err() {
                        cx.error(
                            h.file,
                            span.clone(),
                            format!("the value of header `{name}` is not a valid header value"),
                            None,
                        );
                        ok = false;
                    }
                    match template_variables(&value) {
                        Ok(names) => {
                            uses.extend(names.into_iter().map(|n| (n.to_owned(), span.clone())))
                        }
                        Err(e) => {
                            cx.error(h.file, span.clone(), e, None);
                            ok = false;
                        }
                    }
                    headers.push((name, value));
                }
            }
            None => ok = false,
        }
    }
    let body = match (table.get(keys::JSON), table.get(keys::BODY)) {
        (Some(_), Some(b)) => {
            cx.error(
                b.file,
                b.span(),
                format!("`request` of {label} has both `json` and `body`"),
                Some("keep one of them".to_owned()),
            );
            ok = false;
            None
        }
        (Some(j), None) => match to_json(cx, j, uses) {
            Some(value) => Some(BodyTemplate::Json(value)),
            None => {
                ok = false;
                None
            }
        },
        (None, Some(b)) => match string(cx, b, "a string (the raw body)") {
            Some(s) if template(cx, b, s, uses) => Some(BodyTemplate::Raw(s.to_owned())),
            _ => {
                ok = false;
                None
            }
        },
        (None, None) => None,
    };
    let (method, path) = (method?, path?);
    ok.then_some(RequestTemplate {
        method,
        path,
        headers,
        body,
    })
}

/// Converts a TOML value to JSON, collecting the template variables of its strings.
fn to_json(
    cx: &Cx<'_>,
    v: Val<'_>,
    uses: &mut Vec<(String, Range<usize>)>,
) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    Some(match v.get() {
        DeValue::String(s) => {
            if !template(cx, v, s, uses) {
                return None;
            }
            J::String(s.to_string())
        }
        DeValue::Integer(_) => J::from(integer_in(cx, v, "a JSON integer", i64::MIN..=i64::MAX)?),
        DeValue::Float(_) => {
            let x = number(cx, v, "a number")?;
            J::from(serde_json::Number::from_f64(x)?)
        }
        DeValue::Boolean(b) => J::Bool(*b),
        DeValue::Datetime(_) => {
            wrong_type(cx, v, "a JSON value (write dates as strings)");
            return None;
        }
        DeValue::Array(items) => {
            let mut out = Vec::new();
            let mut ok = true;
            for item in items.iter() {
                match to_json(
                    cx,
                    Val {
                        file: v.file,
                        v: item,
                    },
                    uses,
                ) {
                    Some(x) => out.push(x),
                    None => ok = false,
                }
            }
            if !ok {
                return None;
            }
            J::Array(out)
        }
        DeValue::Table(_) => {
            let table = Tbl::of(cx, v, String::new(), "a table")?;
            let mut out = serde_json::Map::new();
            let mut ok = true;
            for (key, value) in &table.entries {
                match to_json(cx, *value, uses) {
                    Some(x) => {
                        out.insert(key.get_ref().to_string(), x);
                    }
                    None => ok = false,
                }
            }
            if !ok {
                return None;
            }
            J::Object(out)
        }
    })
}

fn pointer(cx: &Cx<'_>, file: usize, span: Range<usize>, p: &str) -> Option<String> {
    match check_json_pointer(p) {
        Ok(()) => Some(p.to_owned()),
        Err(e) => {
            cx.error(
                file,
                span,
                e,
                Some("write e.g. \"/token\" or \"/0/id\"".to_owned()),
            );
            None
        }
    }
}

pub(crate) fn expect(cx: &Cx<'_>, v: Val<'_>, label: &str) -> Option<Expect> {
    let table = Tbl::of(
        cx,
        v,
        format!("`expect` of {label}"),
        "a table like { status = 200 }",
    )?;
    table.check_keys(cx, EXPECT_KEYS);
    let mut ok = true;
    let mut status = Vec::new();
    if let Some(s) = table.get(keys::STATUS) {
        let items = match s.get() {
            DeValue::Array(_) => array(cx, s, "").unwrap_or_default(),
            _ => vec![s],
        };
        if items.is_empty() {
            cx.error(s.file, s.span(), "`status` lists no status codes", None);
            ok = false;
        }
        for item in items {
            match integer_in(cx, item, "a status code", 100..=599) {
                Some(code) => status.push(code as u16),
                None => ok = false,
            }
        }
    }
    let body_contains = match table.get(keys::BODY_CONTAINS) {
        Some(b) => match string(cx, b, "a string") {
            Some(s) => Some(s.to_owned()),
            None => {
                ok = false;
                None
            }
        },
        None => None,
    };
    let mut json_pointer = Vec::new();
    if let Some(p) = table.get(keys::JSON_POINTER) {
        let items = match p.get() {
            DeValue::Array(_) => array(cx, p, "").unwrap_or_default(),
            _ => vec![p],
        };
        for item in items {
            match string(cx, item, "a JSON pointer like \"/token\"")
                .and_then(|s| pointer(cx, item.file, item.span(), s))
            {
                Some(s) => json_pointer.push(s),
                None => ok = false,
            }
        }
    }
    let mut json_equals = Vec::new();
    if let Some(e) = table.get(keys::JSON_EQUALS) {
        match Tbl::of(
            cx,
            e,
            format!("`json-equals` of {label}"),
            "a table like { \"/status\" = \"booked\" }",
        ) {
            Some(eq) => {
                for (key, value) in &eq.entries {
                    let p = pointer(cx, eq.file, key.span(), key.get_ref());
                    let mut ignored = Vec::new();
                    let x = to_json(cx, *value, &mut ignored);
                    match (p, x) {
                        (Some(p), Some(x)) => json_equals.push((p, x)),
                        _ => ok = false,
                    }
                }
            }
            None => ok = false,
        }
    }
    ok.then_some(Expect {
        status,
        body_contains,
        json_pointer,
        json_equals,
    })
}

fn captures(cx: &Cx<'_>, v: Val<'_>, label: &str) -> Option<Vec<Capture>> {
    let entries = string_map(cx, v, format!("`capture` of {label}"))?;
    let mut out = Vec::new();
    for StringEntry {
        key: variable,
        value: p,
        key_span,
        value_span: span,
    } in entries
    {
        if !is_variable_name(&variable) {
            cx.error(
                v.file,
                key_span,
                format!("`{variable}` is not a variable name"),
                Some("use letters, digits, `_`, `-` and `.`".to_owned()),
            );
        } else if BUILTIN_VARIABLES.contains(&variable.as_str()) {
            cx.error(
                v.file,
                key_span,
                format!("`{variable}` is a built-in variable and cannot be captured"),
                None,
            );
        }
        if let Some(pointer) = pointer(cx, v.file, span, &p) {
            out.push(Capture { variable, pointer });
        }
    }
    Some(out)
}

fn transitions(cx: &Cx<'_>, v: Val<'_>, label: &str) -> Vec<RawNext> {
    let Some(items) = array(
        cx,
        v,
        "an array like [{ to = \"login\", p = 0.5, think = \"1s\" }]",
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let Some(t) = Tbl::of(
            cx,
            item,
            format!("`next` of {label}"),
            "a table like { to = \"login\", p = 0.5 }",
        ) else {
            continue;
        };
        t.check_keys(cx, NEXT_KEYS);
        let to = match t.get(keys::TO) {
            Some(to) => string(cx, to, "an operation name").map(|s| (s.to_owned(), to.span())),
            None => {
                cx.error(
                    t.file,
                    t.span.clone(),
                    format!("a transition of {label} has no `to`"),
                    None,
                );
                None
            }
        };
        let p = match t.get(keys::P) {
            Some(p) => probability(cx, p),
            None => {
                cx.error(
                    t.file,
                    t.span.clone(),
                    format!("a transition of {label} has no `p`"),
                    Some("add its probability, e.g. p = 0.5; the probabilities that are left end the session".to_owned()),
                );
                None
            }
        };
        let think = match t.get(keys::THINK) {
            Some(th) => think(cx, th),
            None => Some(ThinkTime::Fixed(Duration::ZERO)),
        };
        if let (Some((to, to_span)), Some(p), Some(think)) = (to, p, think) {
            out.push(RawNext {
                to,
                to_span,
                p,
                think,
            });
        }
    }
    out
}

fn probability(cx: &Cx<'_>, v: Val<'_>) -> Option<f64> {
    let p = number(cx, v, "a probability like 0.5")?;
    if p > 0.0 && p <= 1.0 {
        Some(p)
    } else {
        cx.error(
            v.file,
            v.span(),
            format!("a probability must be in (0, 1], found {p}"),
            None,
        );
        None
    }
}

fn think(cx: &Cx<'_>, v: Val<'_>) -> Option<ThinkTime> {
    const EXPECTED: &str =
        "a think time like \"1s\", { fixed = \"1s\" } or { uniform = [\"1s\", \"3s\"] }";
    match v.get() {
        DeValue::String(_) => crate::config::source::duration(cx, v).map(ThinkTime::Exponential),
        DeValue::Table(_) => {
            let t = Tbl::of(cx, v, "`think`".to_owned(), EXPECTED)?;
            t.check_keys(cx, &[keys::FIXED, keys::UNIFORM]);
            match (t.get(keys::FIXED), t.get(keys::UNIFORM)) {
                (Some(f), None) => crate::config::source::duration(cx, f).map(ThinkTime::Fixed),
                (None, Some(u)) => {
                    let bounds = array(cx, u, "two durations like [\"1s\", \"3s\"]")?;
                    if bounds.len() != 2 {
                        cx.error(
                            u.file,
                            u.span(),
                            format!("`uniform` takes two durations, found {}", bounds.len()),
                            None,
                        );
                        return None;
                    }
                    let low = crate::config::source::duration(cx, bounds[0]);
                    let high = crate::config::source::duration(cx, bounds[1]);
                    let (low, high) = (low?, high?);
                    if low > high {
                        cx.error(
                            u.file,
                            u.span(),
                            format!(
                                "uniform think time has its low bound {} above its high bound {}",
                                crate::config::units::format_duration(low),
                                crate::config::units::format_duration(high)
                            ),
                            Some("write the shorter duration first".to_owned()),
                        );
                        return None;
                    }
                    Some(ThinkTime::Uniform(low, high))
                }
                (Some(_), Some(u)) => {
                    cx.error(
                        u.file,
                        u.span(),
                        "a think time is either `fixed` or `uniform`, not both",
                        None,
                    );
                    None
                }
                (None, None) => {
                    wrong_type(cx, v, EXPECTED);
                    None
                }
            }
        }
        _ => {
            wrong_type(cx, v, EXPECTED);
            None
        }
    }
}

/// Reads `workload.entry`: one name, or a weighted list.
pub(crate) fn entries(cx: &Cx<'_>, v: Val<'_>) -> Option<Vec<RawEntry>> {
    const EXPECTED: &str = "an operation name, or a list like [{ to = \"landing\", weight = 3 }]";
    match v.get() {
        DeValue::String(s) => Some(vec![RawEntry {
            file: v.file,
            to: s.to_string(),
            span: v.span(),
            weight: 1.0,
        }]),
        DeValue::Array(_) => {
            let items = array(cx, v, EXPECTED)?;
            if items.is_empty() {
                cx.error(v.file, v.span(), "`entry` lists no operations", None);
                return None;
            }
            let mut out = Vec::new();
            let mut ok = true;
            for item in items {
                let Some(t) = Tbl::of(
                    cx,
                    item,
                    "an entry of `entry`".to_owned(),
                    "a table like { to = \"landing\", weight = 3 }",
                ) else {
                    ok = false;
                    continue;
                };
                t.check_keys(cx, ENTRY_KEYS);
                let to = match t.get(keys::TO) {
                    Some(to) => {
                        string(cx, to, "an operation name").map(|s| (s.to_owned(), to.span()))
                    }
                    None => {
                        cx.error(t.file, t.span.clone(), "an entry has no `to`", None);
                        None
                    }
                };
                let weight = match t.get(keys::WEIGHT) {
                    Some(w) => crate::config::source::positive_number(cx, w, "a weight"),
                    None => Some(1.0),
                };
                match (to, weight) {
                    (Some((to, span)), Some(weight)) => out.push(RawEntry {
                        file: v.file,
                        to,
                        span,
                        weight,
                    }),
                    _ => ok = false,
                }
            }
            ok.then_some(out)
        }
        _ => {
            wrong_type(cx, v, EXPECTED);
            None
        }
    }
}

/// Resolves names to indices and checks the graph. `workload_span` is where to report a problem
/// that has no better place (no operations at all).
pub(crate) fn resolve(
    cx: &Cx<'_>,
    ops: &[RawOp],
    entry: Option<Vec<RawEntry>>,
    workload_at: (usize, Range<usize>),
) -> Option<(Vec<EntryPoint>, Vec<OperationConfig>)> {
    let before = cx.error_count();
    if ops.is_empty() {
        cx.error(
            workload_at.0,
            workload_at.1.clone(),
            "the workload has no operations",
            Some("add one, e.g.\n[[workload.operation]]\nname = \"home\"\nrequest = { path = \"/\" }".to_owned()),
        );
        return None;
    }
    let names: Vec<&str> = ops.iter().map(|o| o.name.as_str()).collect();
    let index_of = |name: &str| names.iter().position(|&n| n == name);
    for (i, op) in ops.iter().enumerate() {
        if let Some(first) = index_of(&op.name)
            && first != i
        {
            let (line, _) = cx.files[ops[first].file].position(ops[first].name_span.start);
            cx.error(
                op.file,
                op.name_span.clone(),
                format!("operation `{}` is defined twice", op.name),
                Some(format!(
                    "the first definition is on line {line}; rename one of them"
                )),
            );
        }
    }
    let unknown = |file: usize, span: Range<usize>, name: &str, what: &str| {
        let help = suggest(name, names.iter().copied())
            .map(|b| format!("did you mean `{b}`?"))
            .unwrap_or_else(|| {
                format!(
                    "the operations are: {}",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
        cx.error(
            file,
            span,
            format!("{what} names an unknown operation `{name}`"),
            Some(help),
        );
    };
    let entry = entry.unwrap_or_else(|| {
        vec![RawEntry {
            file: ops[0].file,
            to: ops[0].name.clone(),
            span: ops[0].name_span.clone(),
            weight: 1.0,
        }]
    });
    let mut entry_points = Vec::new();
    for e in &entry {
        match index_of(&e.to) {
            Some(i) => entry_points.push((i, e.weight)),
            None => unknown(e.file, e.span.clone(), &e.to, "`entry`"),
        }
    }
    let mut edges: Vec<Vec<Transition>> = vec![Vec::new(); ops.len()];
    for (i, op) in ops.iter().enumerate() {
        for n in &op.next {
            match index_of(&n.to) {
                Some(to) => edges[i].push(Transition {
                    to,
                    p: n.p,
                    think: n.think,
                }),
                None => unknown(
                    op.file,
                    n.to_span.clone(),
                    &n.to,
                    &format!("a transition of `{}`", op.name),
                ),
            }
        }
        let sum: f64 = op.next.iter().map(|n| n.p).sum();
        if sum > 1.0 + 1e-9 {
            let span = op.next_span.clone().unwrap_or_else(|| op.name_span.clone());
            cx.error(
                op.file,
                span,
                format!("the transitions of `{}` sum to {}, more than 1", op.name, crate::config::units::format_number(sum)),
                Some("the probabilities of one operation's `next` must sum to at most 1; the rest ends the session".to_owned()),
            );
        }
    }
    if cx.error_count() > before {
        return None;
    }
    // Reachability from the entries.
    let mut reachable = vec![false; ops.len()];
    let mut stack: Vec<usize> = entry_points.iter().map(|&(i, _)| i).collect();
    while let Some(i) = stack.pop() {
        if !std::mem::replace(&mut reachable[i], true) {
            stack.extend(edges[i].iter().map(|t| t.to));
        }
    }
    for (i, op) in ops.iter().enumerate() {
        if !reachable[i] {
            cx.error(
                op.file,
                op.name_span.clone(),
                format!(
                    "operation `{}` is unreachable from the entry operations",
                    op.name
                ),
                Some("add a transition to it (`next`) or list it in `workload.entry`".to_owned()),
            );
        }
    }
    // A session ends when an operation's probabilities leave some rest; one that can never reach
    // such an operation would run forever.
    let mut can_end: Vec<bool> = edges
        .iter()
        .map(|e| e.iter().map(|t| t.p).sum::<f64>() < 1.0 - 1e-9)
        .collect();
    loop {
        let mut changed = false;
        for i in 0..ops.len() {
            if !can_end[i] && edges[i].iter().any(|t| can_end[t.to]) {
                can_end[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if let Some(i) = (0..ops.len()).find(|&i| reachable[i] && !can_end[i]) {
        let op = &ops[i];
        cx.error(
            op.file,
            op.next_span.clone().unwrap_or_else(|| op.name_span.clone()),
            format!("sessions that reach `{}` never end", op.name),
            Some("from here every transition's probabilities sum to 1 in a loop; lower one so sessions can leave".to_owned()),
        );
    }
    // Which variables may have been captured on arrival at each operation (a union over paths).
    let mut may: Vec<BTreeSet<&str>> = vec![BTreeSet::new(); ops.len()];
    loop {
        let mut changed = false;
        for (i, op) in ops.iter().enumerate() {
            let out: Vec<&str> = may[i]
                .iter()
                .copied()
                .chain(op.capture.iter().map(|c| c.variable.as_str()))
                .collect();
            for t in &edges[i] {
                for &var in &out {
                    changed |= may[t.to].insert(var);
                }
            }
        }
        if !changed {
            break;
        }
    }
    for (i, op) in ops.iter().enumerate() {
        for (var, span) in &op.uses {
            if BUILTIN_VARIABLES.contains(&var.as_str()) || may[i].contains(var.as_str()) {
                continue;
            }
            let capturers: Vec<&str> = ops
                .iter()
                .filter(|o| o.capture.iter().any(|c| &c.variable == var))
                .map(|o| o.name.as_str())
                .collect();
            let help = if capturers.is_empty() {
                let builtin = suggest(var, BUILTIN_VARIABLES.iter().copied())
                    .map(|b| format!("did you mean `{{{{{b}}}}}`? "));
                format!(
                    "{}no operation captures it; capture it in an earlier operation, e.g. capture = {{ {var} = \"/{var}\" }}",
                    builtin.unwrap_or_default()
                )
            } else {
                format!(
                    "{} captures it, but no path from an entry reaches `{}` through it",
                    capturers
                        .iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    op.name
                )
            };
            cx.error(
                op.file,
                span.clone(),
                format!(
                    "`{{{{{var}}}}}` is never captured on any path to `{}`",
                    op.name
                ),
                Some(help),
            );
        }
    }
    if cx.error_count() > before {
        return None;
    }
    let total: f64 = entry_points.iter().map(|&(_, w)| w).sum();
    let entry = entry_points
        .into_iter()
        .map(|(operation, w)| EntryPoint {
            operation,
            p: w / total,
        })
        .collect();
    let operations = ops
        .iter()
        .zip(edges)
        .map(|(op, next)| OperationConfig {
            name: op.name.clone(),
            request: op.request.clone(),
            expect: op.expect.clone(),
            capture: op.capture.clone(),
            next,
            gate: op.gate,
            retry: op.retry.clone(),
            idempotent: op.idempotent,
        })
        .collect();
    Some((entry, operations))
}

/// The mean number of requests a session sends: the expected visits of every operation, solved
/// exactly from visits = entry + Pᵀ·visits (the model is an absorbing Markov chain).
pub fn expected_requests_per_session(entry: &[EntryPoint], ops: &[OperationConfig]) -> f64 {
    let n = ops.len();
    if n == 0 {
        return 0.0;
    }
    // (I − Pᵀ)·v = e, by Gaussian elimination with partial pivoting.
    let mut m = vec![vec![0.0; n + 1]; n];
    for (i, row) in m.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for (from, op) in ops.iter().enumerate() {
        for t in &op.next {
            m[t.to][from] -= t.p;
        }
    }
    for e in entry {
        m[e.operation][n] += e.p;
    }
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))
            .unwrap_or(col);
        m.swap(col, pivot);
        let p = m[col][col];
        if p.abs() < 1e-12 {
            return f64::INFINITY;
        }
        for x in &mut m[col][col..] {
            *x /= p;
        }
        let pivot_row = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            let factor = row[col];
            if r != col && factor != 0.0 {
                for (x, y) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                    *x -= factor * y;
                }
            }
        }
    }
    m.iter().map(|row| row[n]).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_config_str;
    use crate::config::validate::testing::one_problem_in;
    use indoc::indoc;
    use std::path::Path;
    use test_case::test_case;

    #[test_case("/a/{{session}}/{{seq}}", &["session", "seq"])]
    #[test_case("no placeholders", &[])]
    #[test_case("Bearer {{token}}", &["token"])]
    #[test_case("{{account-id}}x}}", &["account-id"])]
    #[test_case("{{ token }} and {{a.b}}", &["token", "a.b"])]
    fn template_variables_are_found(s: &str, expected: &[&str]) {
        assert_eq!(template_variables(s).unwrap(), expected);
    }

    #[test_case("{{token"; "unclosed")]
    #[test_case("{{ to ken }}"; "space inside the name")]
    #[test_case("{{}}"; "empty")]
    #[test_case("{{to$ken}}"; "punctuation")]
    fn bad_templates_are_refused(s: &str) {
        assert!(template_variables(s).is_err(), "{s} accepted");
    }

    #[test_case("", true)]
    #[test_case("/token", true)]
    #[test_case("/a~1b/~0", true)]
    #[test_case("token", false)]
    #[test_case("/a~2", false)]
    fn json_pointers_are_checked(p: &str, valid: bool) {
        assert_eq!(check_json_pointer(p).is_ok(), valid, "{p}");
    }

    fn op(name: &str, next: &[(usize, f64)]) -> OperationConfig {
        OperationConfig {
            name: name.to_owned(),
            request: RequestTemplate {
                method: "GET".into(),
                path: "/".into(),
                headers: vec![],
                body: None,
            },
            expect: Expect {
                status: vec![],
                body_contains: None,
                json_pointer: vec![],
                json_equals: vec![],
            },
            capture: vec![],
            next: next
                .iter()
                .map(|&(to, p)| Transition {
                    to,
                    p,
                    think: ThinkTime::Fixed(Duration::ZERO),
                })
                .collect(),
            gate: false,
            retry: crate::config::OperationRetry::Inherit,
            idempotent: false,
        }
    }

    #[test]
    fn expected_requests_follow_the_chain() {
        let entry = [EntryPoint {
            operation: 0,
            p: 1.0,
        }];
        // a → b with 0.5: 1 + 0.5 requests.
        let chain = [op("a", &[(1, 0.5)]), op("b", &[])];
        assert!((expected_requests_per_session(&entry, &chain) - 1.5).abs() < 1e-9);
        // a loops on itself with 0.5: a geometric series, 2 requests.
        let looped = [op("a", &[(0, 0.5)])];
        assert!((expected_requests_per_session(&entry, &looped) - 2.0).abs() < 1e-9);
        // A loop that never ends has no finite mean.
        let endless = [op("a", &[(0, 1.0)])];
        assert!(expected_requests_per_session(&entry, &endless).is_infinite());
    }

    // Mistakes in an operation or the graph of operations: the file is written in full.
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        [[workload.operation]]
        name = "home"
        request = { path = "/b" }
    "#}, 7, 8, "operation `home` is defined twice", Some("the first definition is on line 4; rename one of them"); "duplicate operation")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "hom", p = 0.5 }]
    "#}, 6, 16, "a transition of `home` names an unknown operation `hom`", Some("did you mean `home`?"); "unknown transition target")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        entry = "start"
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
    "#}, 3, 9, "`entry` names an unknown operation `start`", Some("the operations are: `home`"); "unknown entry")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "a", p = 0.7 }, { to = "b", p = 0.5 }]
        [[workload.operation]]
        name = "a"
        request = { path = "/a" }
        [[workload.operation]]
        name = "b"
        request = { path = "/b" }
    "#}, 6, 8, "the transitions of `home` sum to 1.2, more than 1", Some("the probabilities of one operation's `next` must sum to at most 1; the rest ends the session"); "probabilities above one")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        [[workload.operation]]
        name = "orphan"
        request = { path = "/o" }
    "#}, 7, 8, "operation `orphan` is unreachable from the entry operations", Some("add a transition to it (`next`) or list it in `workload.entry`"); "unreachable operation")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "home", p = 1.0 }]
    "#}, 6, 8, "sessions that reach `home` never end", Some("from here every transition's probabilities sum to 1 in a loop; lower one so sessions can leave"); "sessions never end")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/", headers = { Authorization = "Bearer {{token}}" } }
    "#}, 5, 53, "`{{token}}` is never captured on any path to `home`", Some("no operation captures it; capture it in an earlier operation, e.g. capture = { token = \"/token\" }"); "variable never captured")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        entry = [{ to = "home" }, { to = "login" }]
        [[workload.operation]]
        name = "home"
        request = { path = "/{{token}}" }
        [[workload.operation]]
        name = "login"
        request = { method = "POST", path = "/login" }
        capture = { token = "/token" }
        next = [{ to = "home", p = 0.5 }]
        [[workload.operation]]
        name = "later"
        request = { path = "/later" }
    "#}, 13, 8, "operation `later` is unreachable from the entry operations", Some("add a transition to it (`next`) or list it in `workload.entry`"); "a variable captured on some path is fine")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "next", p = 0.5 }]
        [[workload.operation]]
        name = "next"
        request = { path = "/n/{{sesion}}" }
    "#}, 9, 20, "`{{sesion}}` is never captured on any path to `next`", Some("did you mean `{{session}}`? no operation captures it; capture it in an earlier operation, e.g. capture = { sesion = \"/sesion\" }"); "misspelt built-in variable")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "home", p = 0.5, think = { uniform = ["3s", "1s"] } }]
    "#}, 6, 53, "uniform think time has its low bound 3s above its high bound 1s", Some("write the shorter duration first"); "uniform think reversed")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        capture = { token = "token" }
    "#}, 6, 21, "JSON pointer \"token\" must start with `/` (or be empty for the whole body)", Some("write e.g. \"/token\" or \"/0/id\""); "capture pointer without slash")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        expect = { json-pointer = "/a~2" }
    "#}, 6, 27, "JSON pointer \"/a~2\" has a `~` that is not `~0` or `~1`", Some("write e.g. \"/token\" or \"/0/id\""); "bad escape in a pointer")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { method = "GTE", path = "/" }
    "#}, 5, 22, "unknown HTTP method `GTE`", Some("did you mean `GET`?"); "unknown method")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { method = "post", path = "/" }
    "#}, 5, 22, "unknown HTTP method `post`", Some("methods are case-sensitive; write `POST`"); "lowercase method")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/", json = {}, body = "x" }
    "#}, 5, 43, "`request` of operation `home` has both `json` and `body`", Some("keep one of them"); "json and body")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "home" }
    "#}, 5, 20, "path \"home\" must start with `/`", None; "path without slash")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/{{session" }
    "#}, 5, 20, "`{{` without a closing `}}` in \"/{{session\"", None; "unclosed placeholder")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        capture = { session = "/id" }
    "#}, 6, 13, "`session` is a built-in variable and cannot be captured", None; "capture of a built-in")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        expect = { status = [200, 999] }
    "#}, 6, 27, "a status code must be between 100 and 599, found 999", None; "status out of range")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "home", p = 1.5 }]
    "#}, 6, 28, "a probability must be in (0, 1], found 1.5", None; "probability above one")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        reqest = { path = "/" }
    "#}, 5, 1, "unknown key `reqest` in operation `home`", Some("did you mean `request`?"); "typo in an operation key")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        gate = "yes"
    "#}, 6, 8, "expected true or false, found string \"yes\"", None; "gate as a string")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        gates = true
    "#}, 6, 1, "unknown key `gates` in operation `home`", Some("did you mean `gate`?"); "typo of gate")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem_in(text, line, col, message, help);
    }

    #[test]
    fn a_full_operation_is_read_in_every_part() {
        let text = indoc! {r#"
            [workload]
            sessions-per-sec = 2.5
            entry = [{ to = "a", weight = 3 }, { to = "b", weight = 1 }]
            [[workload.operation]]
            name = "a"
            request = { method = "POST", path = "/a/{{session}}", headers = { X-B = "2", X-A = "1" }, json = { n = 1, s = "{{seq}}", l = [true, 1.5] } }
            expect = { status = [200, 201], body-contains = "ok", json-pointer = "/id", json-equals = { "/status" = "booked" } }
            capture = { id = "/id" }
            next = [{ to = "b", p = 0.5, think = "1s" }, { to = "a", p = 0.25, think = { fixed = "2s" } }]
            [[workload.operation]]
            name = "b"
            request = { path = "/b/{{id}}", body = "raw {{session}}" }
            next = [{ to = "a", p = 1, think = { uniform = ["1s", "3s"] } }]
        "#};
        let cfg = parse_config_str(text, Path::new("loadgate.toml"), None, "default").unwrap();
        let w = &cfg.workload;
        assert_eq!(
            w.entry,
            vec![
                EntryPoint {
                    operation: 0,
                    p: 0.75
                },
                EntryPoint {
                    operation: 1,
                    p: 0.25
                }
            ]
        );
        let a = &w.operations[0];
        assert_eq!(
            a.request.headers,
            vec![
                ("X-B".to_owned(), "2".to_owned()),
                ("X-A".to_owned(), "1".to_owned())
            ]
        );
        assert_eq!(
            a.request.body,
            Some(BodyTemplate::Json(
                serde_json::json!({ "n": 1, "s": "{{seq}}", "l": [true, 1.5] })
            ))
        );
        assert_eq!(a.expect.status, vec![200, 201]);
        assert_eq!(
            a.expect.json_equals,
            vec![("/status".to_owned(), serde_json::json!("booked"))]
        );
        assert_eq!(
            a.capture,
            vec![Capture {
                variable: "id".to_owned(),
                pointer: "/id".to_owned()
            }]
        );
        assert_eq!(
            a.next,
            vec![
                Transition {
                    to: 1,
                    p: 0.5,
                    think: ThinkTime::Exponential(Duration::from_secs(1))
                },
                Transition {
                    to: 0,
                    p: 0.25,
                    think: ThinkTime::Fixed(Duration::from_secs(2))
                },
            ]
        );
        let b = &w.operations[1];
        assert_eq!(b.request.method, "GET");
        assert_eq!(
            b.request.body,
            Some(BodyTemplate::Raw("raw {{session}}".to_owned()))
        );
        assert_eq!(
            b.next[0].think,
            ThinkTime::Uniform(Duration::from_secs(1), Duration::from_secs(3))
        );
    }

    #[test]
    fn gate_marks_an_operation_and_leaves_the_config_hash_alone() {
        use crate::result::{MeasurementMode, config_hash};
        let text = |gate: &str| {
            format!(
                "[workload]\nsessions-per-sec = 10\n\
                 [[workload.operation]]\nname = \"home\"\nrequest = {{ path = \"/\" }}\n\
                 next = [{{ to = \"buy\", p = 0.5 }}]\n\
                 [[workload.operation]]\nname = \"buy\"\nrequest = {{ path = \"/buy\" }}\n{gate}"
            )
        };
        let parse = |t: &str| parse_config_str(t, Path::new("loadgate.toml"), None, "default");
        let plain = parse(&text("")).unwrap();
        let off = parse(&text("gate = false\n")).unwrap();
        let gated = parse(&text("gate = true\n")).unwrap();
        let flags = |c: &crate::config::LoadgateConfig| {
            c.workload
                .operations
                .iter()
                .map(|o| o.gate)
                .collect::<Vec<_>>()
        };
        assert_eq!(flags(&plain), [false, false]);
        assert_eq!(flags(&off), [false, false]);
        assert_eq!(flags(&gated), [false, true]);
        for mode in [MeasurementMode::Stored, MeasurementMode::Paired] {
            assert_eq!(config_hash(&plain, mode), config_hash(&gated, mode));
        }
    }
}
