//! JSON pointers looked up in one pass over a body, without building the document.
//!
//! An operation's checks and captures name a few pointers (`/items/0/id`, `/count`); the answer
//! may be a 20-item array of objects. Building a `serde_json::Value` of it allocates every key,
//! string and node; walking it with the pointers' tokens as a guide keeps only the values
//! pointed at and skips the rest with [`IgnoredAny`], which still checks that the whole body is
//! JSON. The answers are those of [`Value::pointer`] on the parsed document, duplicate keys
//! included (the last wins), and so are the errors of a body that is not JSON, with one kind of
//! difference: the parts skipped are checked for JSON's grammar only, so a number beyond `f64`'s
//! range, invalid UTF-8 or a lone `\u` surrogate inside a skipped string, which
//! `serde_json::from_slice` refuses, is not an error there.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// A set of JSON pointers compiled into a tree of their tokens.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PointerSet {
    pointers: Vec<String>,
    root: Node,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Node {
    /// The pointers (indices into `PointerSet::pointers`) that end here.
    targets: Vec<usize>,
    children: Vec<Child>,
}

#[derive(Clone, Debug, PartialEq)]
struct Child {
    /// The reference token, unescaped (`~1` is `/`, `~0` is `~`).
    token: String,
    /// The token as an array index, as `Value::pointer` reads one (no sign, no leading zero).
    index: Option<usize>,
    node: Node,
}

impl PointerSet {
    /// Compiles `pointers` (duplicates are looked up once). A pointer that is neither empty nor
    /// starts with `/` points at nothing, as with [`Value::pointer`].
    pub fn new<'a>(pointers: impl IntoIterator<Item = &'a str>) -> Self {
        let mut set = Self::default();
        for pointer in pointers {
            if set.pointers.iter().any(|p| p == pointer) {
                continue;
            }
            let index = set.pointers.len();
            set.pointers.push(pointer.to_owned());
            if !pointer.is_empty() && !pointer.starts_with('/') {
                continue;
            }
            let mut node = &mut set.root;
            for token in pointer.split('/').skip(1) {
                let token = token.replace("~1", "/").replace("~0", "~");
                let at = match node.children.iter().position(|c| c.token == token) {
                    Some(at) => at,
                    None => {
                        node.children.push(Child {
                            index: parse_index(&token),
                            token,
                            node: Node::default(),
                        });
                        node.children.len() - 1
                    }
                };
                node = &mut node.children[at].node;
            }
            node.targets.push(index);
        }
        set
    }

    /// Whether the set has no pointers.
    pub fn is_empty(&self) -> bool {
        self.pointers.is_empty()
    }

    /// The position of `pointer` in the set, for [`PointerSet::lookup`]'s answer.
    pub fn position(&self, pointer: &str) -> Option<usize> {
        self.pointers.iter().position(|p| p == pointer)
    }

    /// The value of every pointer in `body`, in the set's order (`None`: not there), or why the
    /// body is not JSON.
    pub fn lookup(&self, body: &[u8]) -> Result<Vec<Option<Value>>, String> {
        let mut out = vec![None; self.pointers.len()];
        let mut de = serde_json::Deserializer::from_slice(body);
        Walk {
            node: &self.root,
            out: &mut out,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| e.to_string())?;
        Ok(out)
    }
}

/// `Value::pointer`'s reading of an array index.
fn parse_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// Sets every pointer at or under `node` from `value` (the value found there), as
/// `Value::pointer` would.
fn fill(node: &Node, value: &Value, out: &mut [Option<Value>]) {
    for &t in &node.targets {
        out[t] = Some(value.clone());
    }
    for child in &node.children {
        let inner = match value {
            Value::Object(map) => map.get(&child.token),
            Value::Array(items) => child.index.and_then(|i| items.get(i)),
            _ => None,
        };
        match inner {
            Some(v) => fill(&child.node, v, out),
            None => clear(&child.node, out),
        }
    }
}

/// Unsets every pointer at or under `node`: a later duplicate key replaces what an earlier one
/// gave.
fn clear(node: &Node, out: &mut [Option<Value>]) {
    for &t in &node.targets {
        out[t] = None;
    }
    for child in &node.children {
        clear(&child.node, out);
    }
}

/// Walks one JSON value with `node` as its guide.
struct Walk<'n, 'o> {
    node: &'n Node,
    out: &'o mut [Option<Value>],
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if !self.node.targets.is_empty() {
            // A pointer ends here: the value itself is wanted (and any deeper ones from it).
            let value = Value::deserialize(d)?;
            fill(self.node, &value, self.out);
            return Ok(());
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Walk { node, out } = self;
        while let Some(key) = map.next_key_seed(Key(&node.children))? {
            match key {
                Some(at) => {
                    let child = &node.children[at].node;
                    clear(child, out);
                    map.next_value_seed(Walk {
                        node: child,
                        out: &mut *out,
                    })?;
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Walk { node, out } = self;
        let mut i = 0_usize;
        loop {
            let more = match node.children.iter().find(|c| c.index == Some(i)) {
                Some(child) => seq
                    .next_element_seed(Walk {
                        node: &child.node,
                        out: &mut *out,
                    })?
                    .is_some(),
                None => seq.next_element::<IgnoredAny>()?.is_some(),
            };
            if !more {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A map key, matched against the children's tokens without allocating.
struct Key<'n>(&'n [Child]);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|c| c.token == v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// No empty pointer among them: that one asks for the whole document, which the walk then
    /// builds (tested on its own below).
    const POINTERS: [&str; 11] = [
        "/a",
        "/a/b",
        "/items/0/id",
        "/items/1",
        "/items/01",
        "/x~1y",
        "/m~0n",
        "/items/-",
        "/missing/deep",
        "no-slash",
        "/a/b/c",
    ];

    /// The reference: the whole document, then `Value::pointer`.
    fn reference(body: &[u8], pointers: &[&str]) -> Result<Vec<Option<Value>>, String> {
        let doc: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        Ok(pointers.iter().map(|p| doc.pointer(p).cloned()).collect())
    }

    #[test]
    fn answers_as_value_pointer_does_on_the_parsed_document() {
        let set = PointerSet::new(POINTERS);
        for body in [
            &br#"{"a":{"b":1},"items":[{"id":"x"},{"id":2}],"x/y":true,"m~n":null}"#[..],
            br#"{"a":{"b":1},"a":{"c":2}}"#,
            br#"{"a":{"b":{"c":[1,2]}},"a":{"b":{"c":3}}}"#,
            br#"{"items":[[1],[2,3]],"a":"s"}"#,
            br#"[1,2,3]"#,
            br#""just a string""#,
            b"  null  ",
            br#"{"a":1} trailing"#,
            br#"{"a":"#,
            b"",
            br#"{"a":{"b":1e999}}"#,
        ] {
            assert_eq!(
                set.lookup(body),
                reference(body, &POINTERS),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn the_empty_pointer_is_the_whole_document() {
        let pointers = ["", "/a/0"];
        let set = PointerSet::new(pointers);
        for body in [&br#"{"a":[{"b":1}],"c":2}"#[..], b"[1]", b"{", b"1 2"] {
            assert_eq!(set.lookup(body), reference(body, &pointers));
        }
    }

    #[test]
    fn duplicates_are_looked_up_once_and_found_by_position() {
        let set = PointerSet::new(["/a", "/b", "/a"]);
        assert_eq!(set.position("/b"), Some(1));
        assert_eq!(set.position("/c"), None);
        assert_eq!(
            set.lookup(br#"{"a":1,"b":[true]}"#),
            Ok(vec![Some(Value::from(1)), Some(Value::from(vec![true]))])
        );
        assert!(PointerSet::new([]).is_empty());
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-5_i64..5).prop_map(Value::from),
            "[abm~/]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[abm~/]{1,2}|items|0|1", inner), 0..4)
                    .prop_map(|kv| { Value::Object(kv.into_iter().collect()) }),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_document_answers_as_the_reference(doc in arb_json()) {
            let body = serde_json::to_vec(&doc).expect("json");
            let pointers = ["/a", "/b/0", "/a/b", "/items/1/a", "/0", "/1/b", "/m~0", "/~1"];
            let set = PointerSet::new(pointers);
            prop_assert_eq!(set.lookup(&body), reference(&body, &pointers));
        }
    }
}
