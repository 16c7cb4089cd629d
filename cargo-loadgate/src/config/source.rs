//! Walking a parsed TOML document with its spans: the files being read, the diagnostics collected
//! so far, and small typed readers that report a problem instead of stopping at it.

use super::error::Diagnostic;
use super::units;
use std::{
    cell::{Cell, RefCell},
    ops::Range,
    path::PathBuf,
    time::Duration,
};
use toml::de::{DeString, DeTable, DeValue};

pub(crate) type Spanned<T> = toml::Spanned<T>;

/// A file whose text diagnostics point into.
#[derive(Debug)]
pub(crate) struct SourceFile {
    pub path: PathBuf,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub fn new(path: PathBuf, text: String) -> Self {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        SourceFile {
            path,
            text,
            line_starts,
        }
    }

    /// The 1-based line and column (in characters) of a byte offset.
    pub fn position(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self
            .line_starts
            .partition_point(|&start| start <= offset)
            .max(1);
        let start = self.line_starts[line - 1];
        let col = self
            .text
            .get(start..offset)
            .map_or(1, |s| s.chars().count() + 1);
        (line, col)
    }

    pub fn diagnostic(
        &self,
        span: Range<usize>,
        message: String,
        help: Option<String>,
    ) -> Diagnostic {
        let (line, col) = self.position(span.start);
        let len = self
            .text
            .get(span.clone())
            .map_or(1, |s| s.chars().count().max(1));
        Diagnostic {
            path: self.path.clone(),
            line,
            col,
            len,
            message,
            help,
        }
    }
}

/// The files being validated and the problems found so far.
pub(crate) struct Cx<'s> {
    pub files: &'s [SourceFile],
    diags: RefCell<Vec<Diagnostic>>,
    /// Every report, including those dropped as duplicates: callers compare it before and after a
    /// step to know whether that step found a problem, which must not depend on an earlier pass.
    reports: Cell<usize>,
}

impl<'s> Cx<'s> {
    pub fn new(files: &'s [SourceFile]) -> Self {
        Cx {
            files,
            diags: RefCell::new(Vec::new()),
            reports: Cell::new(0),
        }
    }

    /// Records a problem at `span` of file `file`.
    pub fn error(
        &self,
        file: usize,
        span: Range<usize>,
        message: impl Into<String>,
        help: Option<String>,
    ) {
        self.reports.set(self.reports.get() + 1);
        let diag = self.files[file].diagnostic(span, message.into(), help);
        let mut diags = self.diags.borrow_mut();
        if !diags.contains(&diag) {
            diags.push(diag);
        }
    }

    /// How many problems have been reported so far, counting repeats.
    pub fn error_count(&self) -> usize {
        self.reports.get()
    }

    /// Every problem, in file order.
    pub fn into_diagnostics(self) -> Vec<Diagnostic> {
        let files = self.files;
        let mut diags = self.diags.into_inner();
        let file_index = |d: &Diagnostic| {
            files
                .iter()
                .position(|f| f.path == d.path)
                .unwrap_or(usize::MAX)
        };
        diags.sort_by_key(|d| (file_index(d), d.line, d.col));
        diags
    }
}

/// A value in one of the files.
#[derive(Clone, Copy)]
pub(crate) struct Val<'a> {
    pub file: usize,
    pub v: &'a Spanned<DeValue<'a>>,
}

impl<'a> Val<'a> {
    pub fn span(&self) -> Range<usize> {
        self.v.span()
    }

    pub fn get(&self) -> &'a DeValue<'a> {
        self.v.get_ref()
    }

    pub fn as_table(&self) -> Option<&'a DeTable<'a>> {
        match self.get() {
            DeValue::Table(t) => Some(t),
            _ => None,
        }
    }
}

/// A table in one of the files, its entries in the order written.
pub(crate) struct Tbl<'a> {
    pub file: usize,
    pub span: Range<usize>,
    /// How messages name it, e.g. "`[workload]`" or "operation `login`".
    pub name: String,
    pub entries: Vec<(&'a Spanned<DeString<'a>>, Val<'a>)>,
    /// The table itself, to walk paths through it.
    pub raw: &'a DeTable<'a>,
}

impl<'a> Tbl<'a> {
    pub fn new(file: usize, span: Range<usize>, name: String, table: &'a DeTable<'a>) -> Self {
        let mut entries: Vec<_> = table.iter().map(|(k, v)| (k, Val { file, v })).collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        Tbl {
            file,
            span,
            name,
            entries,
            raw: table,
        }
    }

    /// Reads `v` as a table, reporting anything else.
    pub fn of(cx: &Cx<'_>, v: Val<'a>, name: String, expected: &str) -> Option<Self> {
        match v.as_table() {
            Some(t) => Some(Tbl::new(v.file, v.span(), name, t)),
            None => {
                cx.error(
                    v.file,
                    v.span(),
                    format!("expected {expected}, found {}", describe(v.get())),
                    None,
                );
                None
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<Val<'a>> {
        self.entries
            .iter()
            .find(|(k, _)| k.get_ref() == key)
            .map(|(_, v)| *v)
    }

    pub fn key_span(&self, key: &str) -> Option<Range<usize>> {
        self.entries
            .iter()
            .find(|(k, _)| k.get_ref() == key)
            .map(|(k, _)| k.span())
    }

    /// The value of `key`, or one problem at this table, "{owner} has no `key`", with `help` —
    /// unless a key written here is a typo of it, which the unknown key's problem already names.
    pub fn required(&self, cx: &Cx<'_>, key: &str, owner: &str, help: &str) -> Option<Val<'a>> {
        let value = self.get(key);
        if value.is_none() && !self.has_typo_of(key) {
            cx.error(
                self.file,
                self.span.clone(),
                format!("{owner} has no `{key}`"),
                Some(help.to_owned()),
            );
        }
        value
    }

    /// Whether a key written here looks like a typo of `key` (so a missing `key` need not be
    /// reported as well as the unknown one).
    pub fn has_typo_of(&self, key: &str) -> bool {
        self.entries
            .iter()
            .any(|(k, _)| k.get_ref() != key && suggest(k.get_ref(), [key]).is_some())
    }

    /// Reports every key not in `allowed`, suggesting the nearest allowed one.
    pub fn check_keys(&self, cx: &Cx<'_>, allowed: &[&str]) {
        for (key, _) in &self.entries {
            if !allowed.contains(&key.get_ref().as_ref()) {
                cx.error(
                    self.file,
                    key.span(),
                    format!("unknown key `{}` in {}", key.get_ref(), self.name),
                    unknown_help(key.get_ref(), allowed),
                );
            }
        }
    }
}

/// "did you mean `x`?" when a candidate is close, else the list of what is allowed.
pub(crate) fn unknown_help(word: &str, candidates: &[&str]) -> Option<String> {
    match suggest(word, candidates.iter().copied()) {
        Some(best) => Some(format!("did you mean `{best}`?")),
        None if candidates.is_empty() => None,
        None => Some(format!(
            "expected one of {}",
            candidates
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The candidate nearest to `word`, when it is near enough to be a likely typo.
pub(crate) fn suggest<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    candidates
        .into_iter()
        .map(|c| {
            (
                strsim::damerau_levenshtein(&word.to_lowercase(), &c.to_lowercase()),
                c,
            )
        })
        .filter(|&(d, c)| d <= (c.chars().count() / 3).max(1))
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Names a value for "found …": `integer 30`, `string "x"`, `a table`.
pub(crate) fn describe(v: &DeValue<'_>) -> String {
    match v {
        DeValue::String(s) => {
            let s: String = if s.chars().count() > 40 {
                s.chars().take(40).chain("…".chars()).collect()
            } else {
                s.to_string()
            };
            format!("string {s:?}")
        }
        DeValue::Integer(i) => format!("integer {i}"),
        DeValue::Float(f) => format!("float {f}"),
        DeValue::Boolean(b) => format!("boolean {b}"),
        DeValue::Datetime(d) => format!("datetime {d}"),
        DeValue::Array(_) => "an array".to_owned(),
        DeValue::Table(_) => "a table".to_owned(),
    }
}

/// Reports `expected …, found …` at `v`.
pub(crate) fn wrong_type(cx: &Cx<'_>, v: Val<'_>, expected: &str) {
    cx.error(
        v.file,
        v.span(),
        format!("expected {expected}, found {}", describe(v.get())),
        None,
    );
}

/// Splits a units error ("`30` has no unit; write e.g. …") into message and help.
fn units_error(cx: &Cx<'_>, v: Val<'_>, err: String) {
    match err.split_once("; ") {
        Some((message, help)) => cx.error(v.file, v.span(), message, Some(help.to_owned())),
        None => cx.error(v.file, v.span(), err, None),
    }
}

pub(crate) fn string<'a>(cx: &Cx<'_>, v: Val<'a>, expected: &str) -> Option<&'a str> {
    match v.get() {
        DeValue::String(s) => Some(s.as_ref()),
        _ => {
            wrong_type(cx, v, expected);
            None
        }
    }
}

/// A string that must be one of `choices` (each as written, with the value it stands for): that
/// value, or one problem at `v`, "{unknown} `word` in {place}", with the closest choice or the
/// list as its help.
pub(crate) fn keyword<T: Copy>(
    cx: &Cx<'_>,
    v: Val<'_>,
    choices: &[(&str, T)],
    unknown: &str,
    place: &str,
) -> Option<T> {
    let words = || choices.iter().map(|(w, _)| *w);
    let listed = |quote: &str| {
        words()
            .map(|w| format!("{quote}{w}{quote}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let word = string(cx, v, &format!("one of {}", listed("\"")))?;
    if let Some((_, value)) = choices.iter().find(|(w, _)| *w == word) {
        return Some(*value);
    }
    let help = match suggest(word, words()) {
        Some(s) => format!("did you mean `{s}`?"),
        None => format!("one of {}", listed("`")),
    };
    cx.error(
        v.file,
        v.span(),
        format!("{unknown} `{word}` in {place}"),
        Some(help),
    );
    None
}

/// `true` or `false`, reporting anything else (a string `"yes"` included).
pub(crate) fn boolean(cx: &Cx<'_>, v: Val<'_>) -> Option<bool> {
    match v.get() {
        DeValue::Boolean(b) => Some(*b),
        _ => {
            wrong_type(cx, v, "true or false");
            None
        }
    }
}

pub(crate) fn integer(cx: &Cx<'_>, v: Val<'_>, expected: &str) -> Option<i64> {
    match v.get() {
        DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
            Ok(n) => Some(n),
            Err(_) => {
                cx.error(
                    v.file,
                    v.span(),
                    format!("integer {i} is out of range"),
                    None,
                );
                None
            }
        },
        _ => {
            wrong_type(cx, v, expected);
            None
        }
    }
}

/// An integer in `range`, reporting one outside it with `what` (e.g. "port").
pub(crate) fn integer_in(
    cx: &Cx<'_>,
    v: Val<'_>,
    what: &str,
    range: std::ops::RangeInclusive<i64>,
) -> Option<i64> {
    let n = integer(cx, v, &format!("an integer ({what})"))?;
    if range.contains(&n) {
        Some(n)
    } else if *range.end() == i64::MAX {
        cx.error(
            v.file,
            v.span(),
            format!("{what} must be at least {}, found {n}", range.start()),
            None,
        );
        None
    } else {
        cx.error(
            v.file,
            v.span(),
            format!(
                "{what} must be between {} and {}, found {n}",
                range.start(),
                range.end()
            ),
            None,
        );
        None
    }
}

/// A number, integer or float.
pub(crate) fn number(cx: &Cx<'_>, v: Val<'_>, expected: &str) -> Option<f64> {
    let n = match v.get() {
        DeValue::Integer(_) => integer(cx, v, expected)? as f64,
        DeValue::Float(f) => match f.as_str().replace('_', "").parse::<f64>() {
            Ok(x) => x,
            Err(_) => {
                wrong_type(cx, v, expected);
                return None;
            }
        },
        _ => {
            wrong_type(cx, v, expected);
            return None;
        }
    };
    if n.is_finite() {
        Some(n)
    } else {
        cx.error(
            v.file,
            v.span(),
            format!("expected a finite number, found {n}"),
            None,
        );
        None
    }
}

/// A number greater than zero.
pub(crate) fn positive_number(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<f64> {
    let n = number(cx, v, &format!("a number ({what})"))?;
    if n > 0.0 {
        Some(n)
    } else {
        cx.error(
            v.file,
            v.span(),
            format!("{what} must be greater than 0, found {n}"),
            None,
        );
        None
    }
}

pub(crate) fn duration(cx: &Cx<'_>, v: Val<'_>) -> Option<Duration> {
    let s = string(cx, v, "a duration like \"30s\"")?;
    units::parse_duration(s)
        .map_err(|e| units_error(cx, v, e))
        .ok()
}

pub(crate) fn positive_duration(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<Duration> {
    let d = duration(cx, v)?;
    if d.is_zero() {
        cx.error(
            v.file,
            v.span(),
            format!("{what} must be longer than zero"),
            None,
        );
        None
    } else {
        Some(d)
    }
}

pub(crate) fn size(cx: &Cx<'_>, v: Val<'_>) -> Option<u64> {
    let s = string(cx, v, "a size like \"512MiB\"")?;
    let bytes = units::parse_size(s)
        .map_err(|e| units_error(cx, v, e))
        .ok()?;
    if bytes == 0 {
        cx.error(
            v.file,
            v.span(),
            "a size must be more than zero bytes",
            None,
        );
        return None;
    }
    Some(bytes)
}

pub(crate) fn size_rate(cx: &Cx<'_>, v: Val<'_>) -> Option<f64> {
    let s = string(cx, v, "a growth rate like \"2MiB/min\"")?;
    units::parse_size_rate(s)
        .map_err(|e| units_error(cx, v, e))
        .ok()
}

/// A share written `"1%"` or as a number; `max` bounds it (1.0 for a fraction of all requests).
pub(crate) fn share(cx: &Cx<'_>, v: Val<'_>, what: &str, max: Option<f64>) -> Option<f64> {
    let x = match v.get() {
        DeValue::String(s) => units::parse_percent(s)
            .map_err(|e| units_error(cx, v, e))
            .ok()?,
        DeValue::Integer(_) | DeValue::Float(_) => number(cx, v, "")?,
        _ => {
            wrong_type(cx, v, "a percentage like \"1%\" or a fraction like 0.01");
            return None;
        }
    };
    if x < 0.0 {
        cx.error(
            v.file,
            v.span(),
            format!("{what} must be zero or more"),
            None,
        );
        return None;
    }
    if let Some(max) = max
        && x > max
    {
        cx.error(
            v.file,
            v.span(),
            format!(
                "{what} must be at most {}, found {}",
                units::format_percent(max),
                units::format_percent(x)
            ),
            Some("a bare number is a fraction: 0.01 means 1%".to_owned()),
        );
        return None;
    }
    Some(x)
}

/// A share above zero; `max` bounds it as in [`share`].
pub(crate) fn positive_share(cx: &Cx<'_>, v: Val<'_>, what: &str, max: Option<f64>) -> Option<f64> {
    let x = share(cx, v, what, max)?;
    if x > 0.0 {
        Some(x)
    } else {
        cx.error(
            v.file,
            v.span(),
            format!("{what} must be more than 0%"),
            None,
        );
        None
    }
}

/// Whether `s` is the name of a config entry (a dependency, a probe, a stub): letters, digits,
/// `_` and `-`, at least one.
pub(crate) fn is_entry_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// An array, reporting anything else.
pub(crate) fn array<'a>(cx: &Cx<'_>, v: Val<'a>, expected: &str) -> Option<Vec<Val<'a>>> {
    match v.get() {
        DeValue::Array(items) => Some(
            items
                .iter()
                .map(|item| Val {
                    file: v.file,
                    v: item,
                })
                .collect(),
        ),
        _ => {
            wrong_type(cx, v, expected);
            None
        }
    }
}

/// The items of the array of tables `key` of `root` (`[[accept]]`, `[[dependency]]`), none when it
/// is absent; anything but an array is reported.
pub(crate) fn array_of_tables<'a>(
    cx: &Cx<'_>,
    root: &Tbl<'a>,
    key: &str,
    prefix: &str,
) -> Vec<Val<'a>> {
    root.get(key)
        .and_then(|v| {
            array(
                cx,
                v,
                &format!("an array of tables, written [[{prefix}{key}]]"),
            )
        })
        .unwrap_or_default()
}

/// One entry of a table of strings: key, value, and where each is written.
pub(crate) struct StringEntry {
    pub key: String,
    pub value: String,
    pub key_span: Range<usize>,
    pub value_span: Range<usize>,
}

/// A table of strings, in the order written.
pub(crate) fn string_map(cx: &Cx<'_>, v: Val<'_>, name: String) -> Option<Vec<StringEntry>> {
    let table = Tbl::of(cx, v, name, "a table of strings like { NAME = \"value\" }")?;
    let mut out = Vec::new();
    let mut ok = true;
    for (key, value) in &table.entries {
        match value.get() {
            DeValue::String(s) => out.push(StringEntry {
                key: key.get_ref().to_string(),
                value: s.to_string(),
                key_span: key.span(),
                value_span: value.span(),
            }),
            _ => {
                wrong_type(cx, *value, "a string (quote numbers and booleans)");
                ok = false;
            }
        }
    }
    ok.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test]
    fn positions_are_one_based_and_count_characters() {
        let file = SourceFile::new("x.toml".into(), "a = 1\nµb = 2\n".to_owned());
        assert_eq!(file.position(0), (1, 1));
        assert_eq!(file.position(4), (1, 5));
        assert_eq!(file.position(6), (2, 1));
        // `µ` is two bytes but one column.
        assert_eq!(file.position(8), (2, 2));
    }

    #[test_case("sessions-per-secs", Some("sessions-per-sec"))]
    #[test_case("seeed", Some("seed"))]
    #[test_case("banana", None)]
    fn suggestions_are_close_or_absent(word: &str, expected: Option<&str>) {
        assert_eq!(
            suggest(word, ["seed", "sessions-per-sec", "entry", "operation"]),
            expected
        );
    }
}
