//! The Prometheus text exposition format (0.0.4, and the OpenMetrics text it overlaps) as far as a
//! `prometheus` probe reads it: each sample `name{label="value",…} value [timestamp]`, the
//! `# TYPE` of each family (which makes a series a counter or a gauge), and the series selectors
//! a probe names (`name` or `name{label="value",…}`). Parsing only: `targets::probe` scrapes.

use super::probe::SeriesKind;
use std::collections::HashMap;

/// A series a probe keeps: a metric name and the labels a sample must carry (others may be
/// there too). Several samples matching one selector are summed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    /// The metric name.
    pub name: String,
    /// `(label, value)` pairs every matching sample carries.
    pub labels: Vec<(String, String)>,
}

/// One sample line.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The metric name.
    pub name: String,
    /// Its labels, as written.
    pub labels: Vec<(String, String)>,
    /// Its value.
    pub value: f64,
}

/// A scrape, parsed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exposition {
    /// The sample lines, in order.
    pub samples: Vec<Sample>,
    /// Family name → its `# TYPE` (`counter`, `gauge`, `histogram`, `summary`, `untyped`, …).
    types: HashMap<String, String>,
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':'
}

fn is_name_byte(b: u8) -> bool {
    is_name_start(b) || b.is_ascii_digit()
}

/// A cursor over one line.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_spaces(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// A metric name (`label` false) or a label name.
    fn name(&mut self, label: bool) -> Result<&'a str, String> {
        let start = self.at;
        match self.peek() {
            Some(b) if is_name_start(b) && !(label && b == b':') => self.at += 1,
            _ => {
                return Err(format!(
                    "expected a {} at column {}",
                    if label { "label name" } else { "metric name" },
                    start + 1
                ));
            }
        }
        while let Some(b) = self.peek() {
            if !is_name_byte(b) || (label && b == b':') {
                break;
            }
            self.at += 1;
        }
        let text = self.text;
        Ok(&text[start..self.at])
    }

    /// A double-quoted label value with `\\`, `\"` and `\n` escapes.
    fn quoted(&mut self) -> Result<String, String> {
        if !self.eat(b'"') {
            return Err(format!(
                "expected a quoted label value at column {}",
                self.at + 1
            ));
        }
        let mut out = String::new();
        let text = self.text;
        let mut chars = text[self.at..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.at += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, other)) => out.push(other),
                    None => break,
                },
                c => out.push(c),
            }
        }
        Err("a label value is not closed by `\"`".to_owned())
    }

    /// `{label="value",…}` (the `{` not yet eaten), or nothing.
    fn labels(&mut self) -> Result<Vec<(String, String)>, String> {
        let mut labels = Vec::new();
        if !self.eat(b'{') {
            return Ok(labels);
        }
        loop {
            self.skip_spaces();
            if self.eat(b'}') {
                return Ok(labels);
            }
            let name = self.name(true)?.to_owned();
            self.skip_spaces();
            if !self.eat(b'=') {
                return Err(format!("expected `=` after label `{name}`"));
            }
            self.skip_spaces();
            let value = self.quoted()?;
            labels.push((name, value));
            self.skip_spaces();
            if self.eat(b'}') {
                return Ok(labels);
            }
            if !self.eat(b',') {
                return Err(format!(
                    "expected `,` or `}}` after label `{}`",
                    labels.last().map_or("", |(n, _)| n.as_str())
                ));
            }
        }
    }
}

impl Selector {
    /// Reads `name` or `name{label="value",…}`; the error says what is wrong, for people.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut c = Cursor { text, at: 0 };
        let name = c.name(false)?.to_owned();
        let labels = c.labels()?;
        c.skip_spaces();
        if c.at != text.len() {
            return Err(format!("unexpected `{}` after the series", &text[c.at..]));
        }
        Ok(Self { name, labels })
    }

    /// Whether `sample` is one of this series'.
    pub fn matches(&self, sample: &Sample) -> bool {
        sample.name == self.name
            && self
                .labels
                .iter()
                .all(|wanted| sample.labels.iter().any(|have| have == wanted))
    }
}

/// Parses a scrape. A line that is not a comment, a blank or a sample is an error naming it.
pub fn parse(text: &str) -> Result<Exposition, String> {
    let mut out = Exposition::default();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.split_whitespace();
            match words.next() {
                Some("EOF") => break,
                Some("TYPE") => {
                    if let (Some(family), Some(kind)) = (words.next(), words.next()) {
                        out.types
                            .insert(family.to_owned(), kind.to_ascii_lowercase());
                    }
                }
                _ => {}
            }
            continue;
        }
        let sample = sample(line).map_err(|e| format!("line {}: {e}: {line}", index + 1))?;
        out.samples.push(sample);
    }
    Ok(out)
}

fn sample(line: &str) -> Result<Sample, String> {
    let mut c = Cursor { text: line, at: 0 };
    let name = c.name(false)?.to_owned();
    let labels = c.labels()?;
    c.skip_spaces();
    let rest = &line[c.at..];
    // The value, then an optional timestamp (and in OpenMetrics an exemplar after ` # `).
    let value_text = rest.split_whitespace().next().ok_or("no value")?;
    let value = match value_text {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v
            .parse::<f64>()
            .map_err(|_| format!("`{v}` is not a number"))?,
    };
    Ok(Sample {
        name,
        labels,
        value,
    })
}

impl Exposition {
    /// The samples `selector` matches whose value is finite.
    pub fn matching<'a>(&'a self, selector: &'a Selector) -> impl Iterator<Item = &'a Sample> {
        self.samples
            .iter()
            .filter(|s| selector.matches(s) && s.value.is_finite())
    }

    /// The sum of the finite values of the samples `selector` matches; `None` when none does (or
    /// none is finite).
    pub fn value(&self, selector: &Selector) -> Option<f64> {
        let values: Vec<f64> = self.matching(selector).map(|s| s.value).collect();
        (!values.is_empty()).then(|| values.iter().sum())
    }

    /// Whether samples named `name` are a counter (kept as a rate) or a gauge, by their family's
    /// `# TYPE`: a counter's samples, and a histogram's or summary's `_count`, `_sum` and
    /// `_bucket`, are counters; anything else is a gauge. Without a `# TYPE`, a name ending in
    /// `_total` is a counter (the naming convention).
    pub fn kind(&self, name: &str) -> SeriesKind {
        if let Some(kind) = self.types.get(name) {
            return if kind == "counter" {
                SeriesKind::Counter
            } else {
                SeriesKind::Gauge
            };
        }
        for suffix in ["_total", "_count", "_sum", "_bucket", "_created"] {
            let Some(family) = name.strip_suffix(suffix) else {
                continue;
            };
            if let Some(kind) = self.types.get(family) {
                return match (kind.as_str(), suffix) {
                    ("counter", "_total")
                    | ("histogram" | "summary", "_count" | "_sum" | "_bucket") => {
                        SeriesKind::Counter
                    }
                    _ => SeriesKind::Gauge,
                };
            }
        }
        if name.ends_with("_total") {
            SeriesKind::Counter
        } else {
            SeriesKind::Gauge
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRAPE: &str = r#"# HELP http_requests_total Requests answered.
# TYPE http_requests_total counter
http_requests_total{route="/login",code="200"} 1027 1395066363000
http_requests_total{route="/login",code="500"} 3
http_requests_total{route="/accounts",code="200"} 12.5e2
# TYPE pool_waiting gauge
pool_waiting 4
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.1"} 20
latency_seconds_bucket{le="+Inf"} 24
latency_seconds_count 24
latency_seconds_sum 1.75
# TYPE rpc summary
rpc{quantile="0.99"} 0.2
rpc_count 9
tricky{path="a \"quoted\", \\ {brace}",x="1",} NaN
process_cpu_seconds_total 12.25
queue_depth -1
# EOF
ignored 1
"#;

    #[test]
    fn a_scrape_is_read_with_its_labels_and_values() {
        let e = parse(SCRAPE).expect("valid");
        assert_eq!(e.samples.len(), 13);
        assert_eq!(
            e.samples[0],
            Sample {
                name: "http_requests_total".into(),
                labels: vec![
                    ("route".into(), "/login".into()),
                    ("code".into(), "200".into())
                ],
                value: 1027.0
            }
        );
        let tricky = e.samples.iter().find(|s| s.name == "tricky").unwrap();
        assert_eq!(tricky.labels[0].1, "a \"quoted\", \\ {brace}");
        assert!(tricky.value.is_nan());
    }

    #[test]
    fn a_selector_sums_the_samples_it_matches() {
        let e = parse(SCRAPE).expect("valid");
        let value = |s: &str| e.value(&Selector::parse(s).expect("a selector"));
        assert_eq!(value("http_requests_total"), Some(2280.0));
        assert_eq!(value("http_requests_total{route=\"/login\"}"), Some(1030.0));
        assert_eq!(
            value("http_requests_total{route=\"/login\", code=\"500\"}"),
            Some(3.0)
        );
        assert_eq!(value("http_requests_total{route=\"/nope\"}"), None);
        assert_eq!(value("pool_waiting"), Some(4.0));
        assert_eq!(value("queue_depth"), Some(-1.0));
        // NaN is no value; after `# EOF` nothing is read.
        assert_eq!(value("tricky"), None);
        assert_eq!(value("ignored"), None);
    }

    #[test]
    fn the_kind_follows_the_familys_type_or_the_name() {
        let e = parse(SCRAPE).expect("valid");
        for (name, kind) in [
            ("http_requests_total", SeriesKind::Counter),
            ("pool_waiting", SeriesKind::Gauge),
            ("latency_seconds_count", SeriesKind::Counter),
            ("latency_seconds_sum", SeriesKind::Counter),
            ("latency_seconds_bucket", SeriesKind::Counter),
            ("rpc", SeriesKind::Gauge),
            ("rpc_count", SeriesKind::Counter),
            ("process_cpu_seconds_total", SeriesKind::Counter),
            ("queue_depth", SeriesKind::Gauge),
        ] {
            assert_eq!(e.kind(name), kind, "{name}");
        }
    }

    #[test]
    fn bad_lines_and_selectors_say_what_is_wrong() {
        let err = parse("ok 1\n9lives 2\n").expect_err("a bad name");
        assert_eq!(err, "line 2: expected a metric name at column 1: 9lives 2");
        let err = parse("x{a=\"1\" 2\n").expect_err("unclosed labels");
        assert!(err.contains("expected `,` or `}` after label `a`"), "{err}");
        let err = parse("x two\n").expect_err("not a number");
        assert!(err.contains("`two` is not a number"), "{err}");
        assert!(parse("x\n").expect_err("no value").contains("no value"));

        assert_eq!(
            Selector::parse("pool{db=\"main\"}"),
            Ok(Selector {
                name: "pool".into(),
                labels: vec![("db".into(), "main".into())]
            })
        );
        for (bad, why) in [
            ("", "expected a metric name"),
            ("pool{db=main}", "expected a quoted label value"),
            (
                "pool{db=\"main\"} extra",
                "unexpected `extra` after the series",
            ),
            ("pool{:x=\"1\"}", "expected a label name"),
        ] {
            let err = Selector::parse(bad).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
