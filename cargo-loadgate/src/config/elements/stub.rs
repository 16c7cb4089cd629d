//! `[[stub]]`: a downstream stub that loadgate serves on 127.0.0.1 beside the target (issue 15,
//! seed 000): its routes and answers, a seeded latency distribution, an error share and a timeout
//! share. The target learns its address from the environment variable `env` names. A top-level
//! array of tables like `[[audit]]`; `profiles` says which profiles serve it (all by default).
//! Every problem is reported at once, at its place.

use crate::config::source::{
    Cx, Tbl, Val, array, array_of_tables, duration, integer_in, share, string, suggest, wrong_type,
};
use crate::config::types::{LoadgateConfig, StubConfig};
use crate::stub::{Latency, Route, TablePoint, parse_quantile_name};
use std::ops::Range;
use toml::de::DeValue;

/// The top-level key.
pub(crate) const STUB: &str = "stub";
/// `name`.
const NAME: &str = "name";
/// `env`.
const ENV: &str = "env";
/// `port`.
const PORT: &str = "port";
/// `profiles`.
const PROFILES: &str = "profiles";
/// `latency`.
const LATENCY: &str = "latency";
/// `errors`.
const ERRORS: &str = "errors";
/// `error-status`.
const ERROR_STATUS: &str = "error-status";
/// `timeouts`.
const TIMEOUTS: &str = "timeouts";
/// `route`.
const ROUTE: &str = "route";

/// The keys of an entry, in the order "expected one of" lists them.
pub(crate) const KEYS: &[&str] = &[
    NAME,
    ENV,
    PORT,
    PROFILES,
    LATENCY,
    ERRORS,
    ERROR_STATUS,
    TIMEOUTS,
    ROUTE,
];

/// `route.method`.
const METHOD: &str = "method";
/// `route.path`.
const PATH: &str = "path";
/// `route.status`.
const STATUS: &str = "status";
/// `route.body`.
const BODY: &str = "body";
/// `route.content-type`.
const CONTENT_TYPE: &str = "content-type";

/// The keys of a route.
pub(crate) const ROUTE_KEYS: &[&str] = &[METHOD, PATH, STATUS, BODY, CONTENT_TYPE, LATENCY];

/// The keys of a latency table besides its percentiles (`min`, `p50`, `p99.9`, `max`).
const LATENCY_KIND: &str = "kind";
/// `latency.mean`.
const LATENCY_MEAN: &str = "mean";

/// What a latency is written as, for messages.
const LATENCY_EXPECTED: &str = "a duration like \"20ms\", or a table like { p50 = \"20ms\", p99 = \
                                \"180ms\" }, { kind = \"lognormal\", p50 = \"20ms\", p99 = \
                                \"180ms\" } or { kind = \"exponential\", mean = \"20ms\" }";

/// A stub as written: its config, the profiles it names, and where its parts are.
pub(crate) struct RawStub {
    config: StubConfig,
    profiles: Option<Vec<(String, Range<usize>)>>,
    file: usize,
    name_span: Range<usize>,
    env_span: Range<usize>,
    port_span: Option<Range<usize>>,
}

/// Reads every `[[stub]]` entry of `root` (the user's top level), reporting every problem: each
/// entry's, then names, `env` and ports used twice.
pub(crate) fn read(cx: &Cx<'_>, root: &Tbl<'_>, prefix: &str) -> Vec<RawStub> {
    let stubs: Vec<RawStub> = array_of_tables(cx, root, STUB, prefix)
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| entry(cx, item, prefix, i))
        .collect();
    for (i, stub) in stubs.iter().enumerate() {
        let before = &stubs[..i];
        if let Some(first) = before.iter().find(|s| s.config.name == stub.config.name) {
            cx.error(
                stub.file,
                stub.name_span.clone(),
                format!("stub `{}` is declared twice", stub.config.name),
                Some(format!(
                    "the first is at {}; give each `[[stub]]` its own name",
                    first.config.location
                )),
            );
        }
        if let Some(first) = before.iter().find(|s| s.config.env == stub.config.env) {
            cx.error(
                stub.file,
                stub.env_span.clone(),
                format!(
                    "stubs `{}` and `{}` both set the target's `{}`",
                    first.config.name, stub.config.name, stub.config.env
                ),
                Some("give each stub its own environment variable".to_owned()),
            );
        }
        if stub.config.port != 0
            && let Some(first) = before.iter().find(|s| s.config.port == stub.config.port)
        {
            cx.error(
                stub.file,
                stub.port_span.clone().unwrap_or(stub.name_span.clone()),
                format!(
                    "stubs `{}` and `{}` both listen on port {}",
                    first.config.name, stub.config.name, stub.config.port
                ),
                Some("leave `port` out to take a free one".to_owned()),
            );
        }
    }
    stubs
}

/// The names of every stub declared, for the faults that name one.
pub(crate) fn names(raws: &[RawStub]) -> Vec<String> {
    raws.iter().map(|r| r.config.name.clone()).collect()
}

/// The stubs of `raws` that `config`'s profile serves (those without `profiles`, and those whose
/// `profiles` name it), checked against it: every profile named exists (`available`), and no
/// stub's `env` is one the profile's target env sets already.
pub(crate) fn for_profile(
    cx: &Cx<'_>,
    raws: &[RawStub],
    config: &LoadgateConfig,
    available: &[String],
) -> Vec<StubConfig> {
    let mut out = Vec::new();
    for raw in raws {
        let owner = format!("stub `{}`", raw.config.name);
        let profiles = raw.profiles.as_deref();
        if !super::profile::keeps(cx, profiles, raw.file, available, &config.profile, &owner) {
            continue;
        }
        if config.target.env.contains_key(&raw.config.env) {
            cx.error(
                raw.file,
                raw.env_span.clone(),
                format!(
                    "stub `{}` sets the target's `{}`, which `[target] env` sets too",
                    raw.config.name, raw.config.env
                ),
                Some(format!(
                    "remove `{}` from `[target] env` (in every profile that serves the stub): the \
                     stub gives it its URL",
                    raw.config.env
                )),
            );
            continue;
        }
        out.push(raw.config.clone());
    }
    out
}

fn entry(cx: &Cx<'_>, v: Val<'_>, prefix: &str, index: usize) -> Option<RawStub> {
    let fallback = format!("entry {} of `[[{prefix}{STUB}]]`", index + 1);
    let t = Tbl::of(cx, v, fallback.clone(), "a table (a stub)")?;
    t.check_keys(cx, KEYS);
    let name_val = t.get(NAME);
    let name = t
        .required(cx, NAME, &fallback, "add e.g. name = \"prices\"")
        .and_then(|n| stub_name(cx, n));
    let label = name.as_deref().map_or(fallback, |n| format!("stub `{n}`"));
    let env_val = t.get(ENV);
    let env = t
        .required(
            cx,
            ENV,
            &label,
            "name the target's environment variable that gets the stub's URL, e.g. env = \
             \"PRICES_URL\"",
        )
        .and_then(|e| env_name(cx, e));
    let port_val = t.get(PORT);
    let port = match port_val {
        Some(p) => integer_in(cx, p, "a stub's port", 1..=65535).map(|n| n as u16),
        None => Some(0),
    };
    let latency = match t.get(LATENCY) {
        Some(l) => latency(cx, l, &label),
        None => Some(Latency::NONE),
    };
    let errors = match t.get(ERRORS) {
        Some(e) => share(cx, e, "a stub's `errors`", Some(1.0)),
        None => Some(0.0),
    };
    let error_status = match t.get(ERROR_STATUS) {
        Some(s) => integer_in(cx, s, "`error-status`", 400..=599).map(|n| n as u16),
        None => Some(503),
    };
    let timeouts = match t.get(TIMEOUTS) {
        Some(x) => share(cx, x, "a stub's `timeouts`", Some(1.0)),
        None => Some(0.0),
    };
    let routes = t
        .required(
            cx,
            ROUTE,
            &label,
            "add its routes, e.g. [[stub.route]] path = \"/price\" and body = '{\"price\": 42}'",
        )
        .and_then(|r| routes(cx, r, &label));
    let profiles = match t.get(PROFILES) {
        Some(p) => Some(Some(super::profile::profile_list(
            cx,
            p,
            "[\"downstream\"]",
        )?)),
        None => Some(None),
    };
    let (line, col) = cx.files[t.file].position(t.span.start);
    let config = StubConfig {
        name: name?,
        env: env?,
        port: port?,
        latency: latency?,
        errors: errors?,
        error_status: error_status?,
        timeouts: timeouts?,
        routes: routes?,
        location: format!("{}:{line}:{col}", cx.files[t.file].path.display()),
    };
    Some(RawStub {
        config,
        profiles: profiles?,
        file: t.file,
        name_span: name_val.map_or(t.span.clone(), |n| n.span()),
        env_span: env_val.map_or(t.span.clone(), |e| e.span()),
        port_span: port_val.map(|p| p.span()),
    })
}

fn stub_name(cx: &Cx<'_>, v: Val<'_>) -> Option<String> {
    let s = string(cx, v, "a string (the stub's name)")?;
    if !crate::config::source::is_entry_name(s) {
        cx.error(
            v.file,
            v.span(),
            format!("stub name {s:?} is not a name"),
            Some("use letters, digits, `_` and `-`, e.g. \"prices\"".to_owned()),
        );
        return None;
    }
    Some(s.to_owned())
}

fn env_name(cx: &Cx<'_>, v: Val<'_>) -> Option<String> {
    let s = string(cx, v, "a string (an environment variable's name)")?;
    let ok = !s.is_empty()
        && !s.as_bytes()[0].is_ascii_digit()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !ok {
        cx.error(
            v.file,
            v.span(),
            format!("{s:?} is not an environment variable's name"),
            Some("use letters, digits and `_`, e.g. \"PRICES_URL\"".to_owned()),
        );
        return None;
    }
    Some(s.to_owned())
}

/// The routes of a stub: at least one, each with its path.
fn routes(cx: &Cx<'_>, v: Val<'_>, label: &str) -> Option<Vec<Route>> {
    let items = array(
        cx,
        v,
        "an array of tables, written [[stub.route]] (a stub's routes)",
    )?;
    if items.is_empty() {
        cx.error(
            v.file,
            v.span(),
            format!("{label} has no routes"),
            Some("add one, e.g. [[stub.route]] path = \"/price\"".to_owned()),
        );
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (i, item) in items.into_iter().enumerate() {
        match route(cx, item, &format!("route {} of {label}", i + 1)) {
            Some(r) => out.push(r),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn route(cx: &Cx<'_>, v: Val<'_>, label: &str) -> Option<Route> {
    let t = Tbl::of(cx, v, label.to_owned(), "a table (a stub's route)")?;
    t.check_keys(cx, ROUTE_KEYS);
    let method = match t.get(METHOD) {
        Some(m) => {
            let s = string(cx, m, "a string (an HTTP method, e.g. \"GET\")")?;
            let token = !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphabetic());
            if !token {
                cx.error(
                    m.file,
                    m.span(),
                    format!("{s:?} is not an HTTP method"),
                    Some(
                        "e.g. \"GET\" or \"POST\"; leave it out to answer every method".to_owned(),
                    ),
                );
                return None;
            }
            Some(s.to_ascii_uppercase())
        }
        None => None,
    };
    let path = t
        .required(cx, PATH, label, "add e.g. path = \"/price\"")
        .and_then(|p| {
            let s = string(cx, p, "a string (a path, e.g. \"/price\")")?;
            if !s.starts_with('/') || s.contains(['?', '#', ' ']) {
                cx.error(
                    p.file,
                    p.span(),
                    format!("`path` {s:?} is not a path"),
                    Some(
                        "write the path without its query, e.g. \"/price\", or a prefix ending \
                         in `*`, e.g. \"/fraud/*\""
                            .to_owned(),
                    ),
                );
                return None;
            }
            if s.find('*').is_some_and(|i| i + 1 != s.len()) {
                cx.error(
                    p.file,
                    p.span(),
                    format!("`path` {s:?} has a `*` before its end"),
                    Some("a `*` may only end a path, as a prefix: \"/fraud/*\"".to_owned()),
                );
                return None;
            }
            Some(s.to_owned())
        });
    let status = match t.get(STATUS) {
        Some(s) => integer_in(cx, s, "`status`", 200..=599).map(|n| n as u16),
        None => Some(200),
    };
    let body = match t.get(BODY) {
        Some(b) => string(cx, b, "a string (the answer's body)").map(str::to_owned),
        None => Some(String::new()),
    };
    let content_type = match t.get(CONTENT_TYPE) {
        Some(c) => {
            string(cx, c, "a string (a media type, e.g. \"application/json\")").map(str::to_owned)
        }
        None => Some("application/json".to_owned()),
    };
    let latency = match t.get(LATENCY) {
        Some(l) => Some(Some(latency(cx, l, label)?)),
        None => Some(None),
    };
    Some(Route {
        method,
        path: path?,
        status: status?,
        body: body?,
        content_type: content_type?,
        latency: latency?,
    })
}

/// A latency: a duration (fixed), or a table: `{ kind = "exponential", mean = … }`,
/// `{ kind = "lognormal", p50 = …, p99 = … }`, or percentiles (`min`, `p50`, `p99.9`, `max`; a
/// table, the default kind).
fn latency(cx: &Cx<'_>, v: Val<'_>, label: &str) -> Option<Latency> {
    match v.get() {
        DeValue::String(_) => duration(cx, v).map(|delay| Latency::Fixed { delay }),
        DeValue::Table(_) => latency_table(cx, v, label),
        _ => {
            wrong_type(cx, v, LATENCY_EXPECTED);
            None
        }
    }
}

fn latency_table(cx: &Cx<'_>, v: Val<'_>, label: &str) -> Option<Latency> {
    let t = Tbl::of(cx, v, format!("the `latency` of {label}"), LATENCY_EXPECTED)?;
    let kind = match t.get(LATENCY_KIND) {
        Some(k) => Some(crate::config::source::keyword(
            cx,
            k,
            &[
                ("exponential", Kind::Exponential),
                ("lognormal", Kind::Lognormal),
                ("table", Kind::Table),
            ],
            "unknown latency kind",
            "`latency.kind`",
        )?),
        None => None,
    };
    let kind = kind.unwrap_or(if t.get(LATENCY_MEAN).is_some() {
        Kind::Exponential
    } else {
        Kind::Table
    });
    // Every key: `kind`, `mean`, or a percentile.
    let mut ok = true;
    let mut points: Vec<(f64, std::time::Duration, Range<usize>)> = Vec::new();
    let mut mean = None;
    for (key, item) in &t.entries {
        let name: &str = key.get_ref().as_ref();
        if name == LATENCY_KIND {
            continue;
        }
        if name == LATENCY_MEAN {
            if kind != Kind::Exponential {
                cx.error(
                    t.file,
                    key.span(),
                    "`mean` is an exponential latency's".to_owned(),
                    Some("write kind = \"exponential\", mean = \"20ms\"".to_owned()),
                );
                ok = false;
                continue;
            }
            match duration(cx, *item) {
                Some(d) if !d.is_zero() => mean = Some(d),
                Some(_) => {
                    cx.error(
                        item.file,
                        item.span(),
                        "an exponential latency's `mean` must be longer than zero".to_owned(),
                        None,
                    );
                    ok = false;
                }
                None => ok = false,
            }
            continue;
        }
        let Some(q) = parse_quantile_name(name) else {
            let help = match suggest(name, ["p50", "p99", "min", "max", "mean", "kind"]) {
                Some(best) => format!("did you mean `{best}`?"),
                None => "a latency table's keys are percentiles (`min`, `p50`, `p99`, `p99.9`, \
                         `max`), `kind` and `mean`"
                    .to_owned(),
            };
            cx.error(
                t.file,
                key.span(),
                format!("unknown key `{name}` in {}", t.name),
                Some(help),
            );
            ok = false;
            continue;
        };
        if kind == Kind::Exponential {
            cx.error(
                t.file,
                key.span(),
                format!("an exponential latency has only a `mean`, not `{name}`"),
                Some("leave out `kind` to give a percentile table".to_owned()),
            );
            ok = false;
            continue;
        }
        match duration(cx, *item) {
            Some(d) => points.push((q, d, item.span())),
            None => ok = false,
        }
    }
    if !ok {
        return None;
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    match kind {
        Kind::Exponential => match mean {
            Some(mean) => Some(Latency::Exponential { mean }),
            None => {
                cx.error(
                    t.file,
                    t.span.clone(),
                    format!("{} has no `mean`", t.name),
                    Some("add e.g. mean = \"20ms\"".to_owned()),
                );
                None
            }
        },
        Kind::Lognormal => {
            let at = |q: f64| points.iter().find(|p| p.0 == q);
            let (Some(p50), Some(p99)) = (at(0.5), at(0.99)) else {
                cx.error(
                    t.file,
                    t.span.clone(),
                    format!("{} is lognormal: it takes `p50` and `p99`", t.name),
                    Some(
                        "e.g. { kind = \"lognormal\", p50 = \"20ms\", p99 = \"180ms\" }".to_owned(),
                    ),
                );
                return None;
            };
            if points.len() != 2 {
                cx.error(
                    t.file,
                    t.span.clone(),
                    format!("{} is lognormal: it takes `p50` and `p99` only", t.name),
                    Some("leave out `kind` for a table through every percentile".to_owned()),
                );
                return None;
            }
            if p99.1 < p50.1 || p50.1.is_zero() {
                cx.error(
                    t.file,
                    p99.2.clone(),
                    format!(
                        "a lognormal latency needs 0 < p50 ≤ p99, found p50 {} and p99 {}",
                        crate::config::format_duration(p50.1),
                        crate::config::format_duration(p99.1)
                    ),
                    None,
                );
                return None;
            }
            Some(Latency::Lognormal {
                p50: p50.1,
                p99: p99.1,
            })
        }
        Kind::Table => {
            if points.is_empty() {
                cx.error(
                    t.file,
                    t.span.clone(),
                    format!("{} names no percentile", t.name),
                    Some("e.g. { p50 = \"20ms\", p99 = \"180ms\" }".to_owned()),
                );
                return None;
            }
            for pair in points.windows(2) {
                if pair[1].1 < pair[0].1 {
                    cx.error(
                        t.file,
                        pair[1].2.clone(),
                        format!(
                            "{} {} is shorter than {} {}",
                            crate::stub::quantile_name(pair[1].0),
                            crate::config::format_duration(pair[1].1),
                            crate::stub::quantile_name(pair[0].0),
                            crate::config::format_duration(pair[0].1)
                        ),
                        Some("a higher percentile is at least as long".to_owned()),
                    );
                    return None;
                }
            }
            Some(Latency::Table {
                points: points
                    .into_iter()
                    .map(|(quantile, delay, _)| TablePoint { quantile, delay })
                    .collect(),
            })
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Exponential,
    Lognormal,
    Table,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::validate::testing::{parse, with_workload};
    use std::time::Duration;

    fn with(stubs: &str) -> String {
        stubs.to_owned()
    }

    fn parse_ok(text: &str) -> LoadgateConfig {
        parse(&with_workload(text), "default").unwrap_or_else(|e| panic!("{text}\n{e}"))
    }

    /// `text` after the smallest workload has one problem, whose message or help says `says`.
    fn assert_one_error(text: &str, says: &str) {
        let text = with_workload(text);
        let err = parse(&text, "default").expect_err("the config is invalid");
        let diags = err.diagnostics();
        assert_eq!(diags.len(), 1, "{text}\n{err}");
        let d = &diags[0];
        let help = d.help.as_deref().unwrap_or_default();
        assert!(
            d.message.contains(says) || help.contains(says),
            "{text}\n{err}"
        );
    }

    #[test]
    fn a_stub_reads_with_its_defaults_and_routes() {
        let cfg = parse_ok(&with(
            "[[stub]]\nname = \"prices\"\nenv = \"PRICES_URL\"\n\n[[stub.route]]\npath = \"/price\"\nbody = '{\"price\": 42}'\n",
        ));
        let s = &cfg.stubs[0];
        assert_eq!(s.name, "prices");
        assert_eq!(s.env, "PRICES_URL");
        assert_eq!(s.port, 0);
        assert_eq!(s.latency, Latency::NONE);
        assert_eq!((s.errors, s.error_status, s.timeouts), (0.0, 503, 0.0));
        assert_eq!(s.routes[0].path, "/price");
        assert_eq!(s.routes[0].status, 200);
        assert_eq!(s.routes[0].method, None);
        assert_eq!(s.routes[0].content_type, "application/json");
    }

    #[test]
    fn each_latency_form_reads() {
        let read = |latency: &str| {
            let cfg = parse_ok(&with(&format!(
                "[[stub]]\nname = \"s\"\nenv = \"S_URL\"\nlatency = {latency}\n[[stub.route]]\npath = \"/\"\n"
            )));
            cfg.stubs[0].latency.clone()
        };
        let ms = Duration::from_millis;
        assert_eq!(read("\"20ms\""), Latency::Fixed { delay: ms(20) });
        assert_eq!(
            read("{ mean = \"20ms\" }"),
            Latency::Exponential { mean: ms(20) }
        );
        assert_eq!(
            read("{ kind = \"lognormal\", p50 = \"20ms\", p99 = \"180ms\" }"),
            Latency::Lognormal {
                p50: ms(20),
                p99: ms(180)
            }
        );
        assert_eq!(
            read("{ p99 = \"180ms\", p50 = \"20ms\" }"),
            Latency::Table {
                points: vec![
                    TablePoint {
                        quantile: 0.5,
                        delay: ms(20)
                    },
                    TablePoint {
                        quantile: 0.99,
                        delay: ms(180)
                    },
                ]
            }
        );
    }

    #[test]
    fn bad_stubs_are_reported_at_their_place() {
        let base = "[[stub]]\nname = \"s\"\nenv = \"S_URL\"\n";
        assert_one_error(
            &with(&format!(
                "{base}latency = {{ p50 = \"20ms\", p99 = \"5ms\" }}\n[[stub.route]]\npath = \"/\"\n"
            )),
            "p99 5ms is shorter than p50 20ms",
        );
        assert_one_error(
            &with(&format!(
                "{base}latency = {{ kind = \"lognormal\", p50 = \"20ms\" }}\n[[stub.route]]\npath = \"/\"\n"
            )),
            "it takes `p50` and `p99`",
        );
        assert_one_error(
            &with(&format!(
                "{base}latency = {{ p50 = \"20ms\", p42x = \"1ms\" }}\n[[stub.route]]\npath = \"/\"\n"
            )),
            "unknown key `p42x`",
        );
        assert_one_error(&with(base), "has no `route`");
        assert_one_error(
            &with(&format!("{base}[[stub.route]]\npath = \"price\"\n")),
            "is not a path",
        );
        assert_one_error(
            &with(&format!(
                "{base}errors = \"120%\"\n[[stub.route]]\npath = \"/\"\n"
            )),
            "must be at most 100%",
        );
        assert_one_error(
            &with(&format!(
                "{base}[[stub.route]]\npath = \"/\"\n\n[[stub]]\nname = \"s\"\nenv = \"T_URL\"\n[[stub.route]]\npath = \"/\"\n"
            )),
            "stub `s` is declared twice",
        );
        assert_one_error(
            &with("[[stub]]\nname = \"s\"\nenv = \"1URL\"\n[[stub.route]]\npath = \"/\"\n"),
            "is not an environment variable's name",
        );
        assert_one_error(
            &with(&format!(
                "{base}profiles = [\"nope\"]\n[[stub.route]]\npath = \"/\"\n"
            )),
            "nope",
        );
    }

    #[test]
    fn a_stub_env_the_target_sets_too_is_an_error() {
        let text = "[target]\nenv = { S_URL = \"x\" }\n\n[[stub]]\nname = \"s\"\nenv = \"S_URL\"\n[[stub.route]]\npath = \"/\"\n";
        assert_one_error(text, "which `[target] env` sets too");
    }

    #[test]
    fn profiles_keep_a_stub_to_the_profiles_that_name_it() {
        let text = with(
            "[[stub]]\nname = \"s\"\nenv = \"S_URL\"\nprofiles = [\"quick\"]\n[[stub.route]]\npath = \"/\"\n",
        );
        assert!(parse_ok(&text).stubs.is_empty());
        let quick = parse(&with_workload(&text), "quick").expect("config");
        assert_eq!(quick.stubs.len(), 1);
    }

    #[test]
    fn the_listing_reads_back_as_the_same_stubs() {
        let text = with_workload(
            "[[stub]]\nname = \"prices\"\nenv = \"PRICES_URL\"\nport = 18080\n\
             latency = { \"p99.9\" = \"300ms\", p50 = \"20ms\", p99 = \"180ms\" }\n\
             errors = \"1.5%\"\ntimeouts = 0.005\n\
             [[stub.route]]\nmethod = \"get\"\npath = \"/price\"\nbody = '{\"price\": 42}'\n\
             latency = { mean = \"5ms\" }\n\
             [[stub.route]]\npath = \"/fraud/*\"\nstatus = 204\ncontent-type = \"text/plain\"\n\n\
             [[stub]]\nname = \"ln\"\nenv = \"LN_URL\"\n\
             latency = { kind = \"lognormal\", p50 = \"2ms\", p99 = \"9ms\" }\n\
             [[stub.route]]\npath = \"/\"\n",
        );
        let cfg = parse(&text, "default").unwrap_or_else(|e| panic!("{text}\n{e}"));
        assert_eq!(cfg.stubs.len(), 2);
        assert_eq!(cfg.stubs[0].routes[0].method.as_deref(), Some("GET"));
        let listing = crate::config::render_resolved(&cfg);
        assert!(listing.contains("\"p99.9\" = \"300ms\""), "{listing}");
        let again = parse(&listing, "default").unwrap_or_else(|e| panic!("{listing}\n{e}"));
        let clear = |c: &LoadgateConfig| -> Vec<StubConfig> {
            c.stubs
                .iter()
                .map(|s| StubConfig {
                    location: String::new(),
                    ..s.clone()
                })
                .collect()
        };
        assert_eq!(clear(&again), clear(&cfg));
    }
}
