//! Route patterns: which operation a logged request is. A pattern is an optional method and a path
//! whose `{name}` or `{{name}}` placeholders (or `*`) match any text within one segment; by default
//! the selected config's operations are the patterns (their method and request path, each `{{…}}`
//! a wildcard). Paths that match no pattern are grouped with their ids normalized and counted.

use crate::config::WorkloadConfig;
use std::collections::HashMap;

/// The most distinct unmatched groups kept; the rest are counted together, so a log of random
/// paths cannot grow memory without bound.
pub const MAX_UNMATCHED_GROUPS: usize = 1_000;

/// One pattern naming an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The operation it names.
    pub operation: String,
    /// The method it needs, upper case; any when `None`.
    pub method: Option<String>,
    /// The pattern as written, for messages.
    pub pattern: String,
    segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    /// Exactly this text.
    Literal(Vec<u8>),
    /// Literal pieces with a wildcard between each two (and at the ends when empty).
    Glob(Vec<Vec<u8>>),
}

impl Route {
    /// Parses `[METHOD ]/path/{id}/more=operation`, as `--route` takes it.
    pub fn parse_arg(arg: &str) -> Result<Self, String> {
        let (pattern, operation) = arg
            .rsplit_once('=')
            .filter(|(p, o)| !p.trim().is_empty() && !o.trim().is_empty())
            .ok_or_else(|| {
                format!("expected `[METHOD ]PATH=OPERATION` in `--route`, got `{arg}`")
            })?;
        let pattern = pattern.trim();
        let (method, path) = match pattern.split_once(' ') {
            Some((m, p)) => (Some(m.trim().to_ascii_uppercase()), p.trim()),
            None => (None, pattern),
        };
        Self::new(operation.trim(), method, path)
    }

    /// A route for `operation` over `path` (placeholders `{x}`, `{{x}}` or `*`).
    pub fn new(operation: &str, method: Option<String>, path: &str) -> Result<Self, String> {
        let path = path.split(['?', '#']).next().unwrap_or(path);
        if !path.starts_with('/') {
            return Err(format!("route `{path}` must start with `/`"));
        }
        let segments = path[1..].split('/').map(segment).collect();
        Ok(Self {
            operation: operation.to_owned(),
            method,
            pattern: path.to_owned(),
            segments,
        })
    }

    /// Whether `method path` is this route's.
    pub fn matches(&self, method: &[u8], path: &[u8]) -> bool {
        if let Some(m) = &self.method
            && m.as_bytes() != method
        {
            return false;
        }
        let path = path.strip_prefix(b"/").unwrap_or(path);
        let mut parts = path.split(|&b| b == b'/');
        for seg in &self.segments {
            match parts.next() {
                Some(part) if seg.matches(part) => {}
                _ => return false,
            }
        }
        parts.next().is_none()
    }

    /// How many segments are literal: with several matching routes the most specific wins.
    fn specificity(&self) -> usize {
        self.segments
            .iter()
            .filter(|s| matches!(s, Segment::Literal(_)))
            .count()
    }
}

fn segment(text: &str) -> Segment {
    let mut pieces = Vec::new();
    let mut rest = text;
    let mut glob = false;
    loop {
        let next = [
            rest.find("{{").map(|i| (i, "}}")),
            rest.find('{').map(|i| (i, "}")),
            rest.find('*').map(|i| (i, "")),
        ]
        .into_iter()
        .flatten()
        .min_by_key(|(i, _)| *i);
        match next {
            Some((i, close)) => {
                glob = true;
                pieces.push(rest.as_bytes()[..i].to_vec());
                let after = &rest[i..];
                let skip = if close.is_empty() {
                    1
                } else {
                    after.find(close).map_or(after.len(), |e| e + close.len())
                };
                rest = &after[skip..];
            }
            None => {
                pieces.push(rest.as_bytes().to_vec());
                break;
            }
        }
    }
    if glob {
        Segment::Glob(pieces)
    } else {
        Segment::Literal(text.as_bytes().to_vec())
    }
}

impl Segment {
    fn matches(&self, part: &[u8]) -> bool {
        match self {
            Segment::Literal(l) => l == part,
            Segment::Glob(pieces) => {
                // A wildcard matches at least one byte: `/accounts//transactions` is not an id.
                let (first, rest) = pieces.split_first().expect("a glob has pieces");
                let Some(mut tail) = part.strip_prefix(first.as_slice()) else {
                    return false;
                };
                let (last, middle) = rest.split_last().expect("a glob has a wildcard");
                for piece in middle {
                    // The wildcard before `piece` takes at least one byte: none left, no match
                    // (two wildcards side by side, `{a}{b}`, leave an empty piece between them).
                    let Some(after) = tail.get(1..) else {
                        return false;
                    };
                    let Some(at) = find(after, piece) else {
                        return false;
                    };
                    tail = &after[at + piece.len()..];
                }
                tail.len() > last.len() && tail.ends_with(last)
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The routes of a workload: each operation's method and request path.
pub fn routes_from_workload(w: &WorkloadConfig) -> Vec<Route> {
    w.operations
        .iter()
        .filter_map(|op| {
            Route::new(&op.name, Some(op.request.method.clone()), &op.request.path).ok()
        })
        .collect()
}

/// The routes, their operations and what matched what.
#[derive(Clone, Debug)]
pub struct RouteTable {
    routes: Vec<Route>,
    /// Per route: index of its operation in [`RouteTable::operations`].
    route_op: Vec<usize>,
    /// The operations, in the order their first route was given.
    operations: Vec<String>,
    /// Per route: the lines it matched.
    matched: Vec<u64>,
    unmatched: HashMap<Vec<u8>, u64>,
    unmatched_other: u64,
    scratch: Vec<u8>,
}

/// A group of paths no route matched.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UnmatchedGroup {
    /// `METHOD /path/{id}` with ids normalized.
    pub group: String,
    /// The lines in it.
    pub lines: u64,
}

impl RouteTable {
    /// A table over `routes`, most specific first among those that match.
    pub fn new(routes: Vec<Route>) -> Self {
        let mut operations: Vec<String> = Vec::new();
        let route_op = routes
            .iter()
            .map(|r| {
                operations
                    .iter()
                    .position(|o| *o == r.operation)
                    .unwrap_or_else(|| {
                        operations.push(r.operation.clone());
                        operations.len() - 1
                    })
            })
            .collect();
        Self {
            matched: vec![0; routes.len()],
            routes,
            route_op,
            operations,
            unmatched: HashMap::new(),
            unmatched_other: 0,
            scratch: Vec::new(),
        }
    }

    /// The operation names, by index.
    pub fn operations(&self) -> &[String] {
        &self.operations
    }

    /// The routes.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The operation of `method path`, or `None` (then it is counted in its unmatched group).
    pub fn classify(&mut self, method: &[u8], path: &[u8]) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (i, r) in self.routes.iter().enumerate() {
            if r.matches(method, path) {
                let s = r.specificity();
                if best.is_none_or(|(_, bs)| s > bs) {
                    best = Some((i, s));
                }
            }
        }
        if let Some((i, _)) = best {
            self.matched[i] += 1;
            return Some(self.route_op[i]);
        }
        normalize_into(&mut self.scratch, method, path);
        if let Some(n) = self.unmatched.get_mut(self.scratch.as_slice()) {
            *n += 1;
        } else if self.unmatched.len() < MAX_UNMATCHED_GROUPS {
            self.unmatched.insert(self.scratch.clone(), 1);
        } else {
            self.unmatched_other += 1;
        }
        None
    }

    /// The unmatched groups, most lines first (ties by name), and the lines beyond the groups
    /// kept.
    pub fn unmatched(&self) -> (Vec<UnmatchedGroup>, u64) {
        let mut groups: Vec<UnmatchedGroup> = self
            .unmatched
            .iter()
            .map(|(g, &lines)| UnmatchedGroup {
                group: String::from_utf8_lossy(g).into_owned(),
                lines,
            })
            .collect();
        groups.sort_by(|a, b| b.lines.cmp(&a.lines).then_with(|| a.group.cmp(&b.group)));
        (groups, self.unmatched_other)
    }

    /// The routes that matched no line.
    pub fn unused(&self) -> Vec<&Route> {
        self.routes
            .iter()
            .zip(&self.matched)
            .filter(|(_, n)| **n == 0)
            .map(|(r, _)| r)
            .collect()
    }
}

/// `METHOD /path` with every segment that looks like an id (it holds a digit and is not a short
/// version tag like `v2`) replaced by `{id}`.
fn normalize_into(out: &mut Vec<u8>, method: &[u8], path: &[u8]) {
    out.clear();
    out.extend_from_slice(method);
    out.push(b' ');
    let path = path.strip_prefix(b"/").unwrap_or(path);
    for seg in path.split(|&b| b == b'/') {
        out.push(b'/');
        let version = seg.len() <= 3 && seg.first() == Some(&b'v');
        if seg.iter().any(u8::is_ascii_digit) && !version {
            out.extend_from_slice(b"{id}");
        } else {
            out.extend_from_slice(seg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case("/accounts/{id}/transactions=transactions", "GET", "/accounts/acc-1/transactions", true; "brace id")]
    #[test_case("/accounts/{{account}}/transactions=t", "GET", "/accounts/acc-1/transactions", true; "config placeholder")]
    #[test_case("/accounts/*/transactions=t", "GET", "/accounts//transactions", false; "empty segment is no id")]
    #[test_case("/accounts/{id}/transactions=t", "GET", "/accounts/acc-1", false; "too short")]
    #[test_case("/accounts/{id}=t", "GET", "/accounts/acc-1/transactions", false; "too long")]
    #[test_case("POST /transfers=transfer", "GET", "/transfers", false; "method differs")]
    #[test_case("post /transfers=transfer", "POST", "/transfers", true; "method upper-cased")]
    #[test_case("/items/item-{id}.json=item", "GET", "/items/item-42.json", true; "glob within a segment")]
    #[test_case("/items/item-{id}.json=item", "GET", "/items/item-.json", false; "glob needs a byte")]
    #[test_case("/k/{a}-{b}=k", "GET", "/k/1-2", true; "two wildcards")]
    #[test_case("/k/{a}-{b}=k", "GET", "/k/12", false; "missing separator")]
    #[test_case("/a/**=x", "GET", "/a/", false; "adjacent wildcards on an empty segment do not panic")]
    #[test_case("/a/{x}{y}=x", "GET", "/a/q", false; "adjacent wildcards need a byte each")]
    #[test_case("/a/{x}{y}=x", "GET", "/a/qr", true; "adjacent wildcards with a byte each")]
    #[test_case("/=landing", "GET", "/", true; "root")]
    #[test_case("/=landing", "GET", "/x", false; "root is not everything")]
    fn patterns_match(arg: &str, method: &str, path: &str, expected: bool) {
        let route = Route::parse_arg(arg).unwrap();
        assert_eq!(route.matches(method.as_bytes(), path.as_bytes()), expected);
    }

    #[test_case("/x"; "no operation")]
    #[test_case("x=op"; "no slash")]
    #[test_case("=op"; "no path")]
    fn bad_route_args_are_refused(arg: &str) {
        assert!(Route::parse_arg(arg).is_err());
    }

    #[test]
    fn the_most_specific_route_wins_and_unmatched_paths_are_grouped() {
        let mut table = RouteTable::new(vec![
            Route::parse_arg("/accounts/{id}=account").unwrap(),
            Route::parse_arg("/accounts/summary=summary").unwrap(),
            Route::parse_arg("/never=never").unwrap(),
        ]);
        assert_eq!(table.classify(b"GET", b"/accounts/summary"), Some(1));
        assert_eq!(table.classify(b"GET", b"/accounts/a1"), Some(0));
        for id in ["1", "2", "3"] {
            assert_eq!(
                table.classify(b"GET", format!("/img/{id}.png").as_bytes()),
                None
            );
        }
        assert_eq!(table.classify(b"GET", b"/v2/health"), None);
        let (groups, other) = table.unmatched();
        assert_eq!(
            groups,
            vec![
                UnmatchedGroup {
                    group: "GET /img/{id}".to_owned(),
                    lines: 3
                },
                UnmatchedGroup {
                    group: "GET /v2/health".to_owned(),
                    lines: 1
                },
            ]
        );
        assert_eq!(other, 0);
        let unused: Vec<&str> = table.unused().iter().map(|r| r.pattern.as_str()).collect();
        assert_eq!(unused, ["/never"]);
    }

    #[test]
    fn unmatched_groups_are_bounded() {
        let mut table = RouteTable::new(vec![]);
        for i in 0..MAX_UNMATCHED_GROUPS + 10 {
            table.classify(
                b"GET",
                format!("/p{}/x", "a".repeat(i % 50) + &"b".repeat(i / 50)).as_bytes(),
            );
        }
        let (groups, other) = table.unmatched();
        assert_eq!(groups.len(), MAX_UNMATCHED_GROUPS);
        assert_eq!(other, 10);
    }
}
