//! The descriptors of the config's keys and sections: each key is named once, in its section's
//! table, with what it means and how its value is read. Both passes go through the same
//! [`Key::read`]: the first (every table as written) through [`Section::check`], the second (one
//! profile, through its layers) through [`super::profile::Look`].

use crate::config::source::{Cx, Tbl, Val, unknown_help};

/// Reads one value, reporting every problem in it; `None` when it has one. The `&str` is how
/// messages name the key (e.g. "`timeout`", "`gate.p50`"); readers whose messages do not name it
/// ignore it.
pub(crate) type Parse<T> = fn(&Cx<'_>, Val<'_>, &str) -> Option<T>;

/// How messages name a key.
#[derive(Clone, Copy)]
enum Label {
    /// "`timeout`".
    Plain,
    /// "`gate.p50`": with the name of the table it is in.
    Qualified,
}

/// One key of a section (or of a table inside one): its name, its meaning and its reader.
pub(crate) struct Key<T> {
    /// The key as written in TOML.
    pub name: &'static str,
    /// What it means: the "meaning" column of its row in docs/config.md.
    pub doc: &'static str,
    label: Label,
    parse: Parse<T>,
    /// Set only at the top level: a profile may not change it.
    fixed: bool,
}

impl<T> Key<T> {
    /// A key that messages name by its name alone.
    pub const fn new(name: &'static str, doc: &'static str, parse: Parse<T>) -> Self {
        Key {
            name,
            doc,
            label: Label::Plain,
            parse,
            fixed: false,
        }
    }

    /// A key that messages name with its table, e.g. "`soak.at`".
    pub const fn qualified(name: &'static str, doc: &'static str, parse: Parse<T>) -> Self {
        Key {
            label: Label::Qualified,
            ..Key::new(name, doc, parse)
        }
    }

    /// A key that only the top level may set (which service is tested is not a matter of profile).
    pub const fn fixed(name: &'static str, doc: &'static str, parse: Parse<T>) -> Self {
        Key {
            fixed: true,
            ..Key::new(name, doc, parse)
        }
    }

    /// How messages name this key when it is in the table `parent`.
    pub fn what(&self, parent: &str) -> String {
        match self.label {
            Label::Plain => format!("`{}`", self.name),
            Label::Qualified => format!("`{parent}.{}`", self.name),
        }
    }

    /// Reads `v` as this key's value, written in the table `parent`.
    pub fn read(&self, cx: &Cx<'_>, v: Val<'_>, parent: &str) -> Option<T> {
        (self.parse)(cx, v, &self.what(parent))
    }
}

/// A key as the first pass sees it: a name to allow, and a value to check.
pub(crate) trait Element {
    /// The key as written in TOML.
    fn name(&self) -> &'static str;
    /// What it means (docs/config.md).
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "read by the test that keeps docs/config.md in step"
        )
    )]
    fn doc(&self) -> &'static str;
    /// Whether only the top level may set it.
    fn fixed(&self) -> bool;
    /// Reads `v` for its problems alone, in the table `parent` (named `table` in messages).
    fn check(&self, cx: &Cx<'_>, v: Val<'_>, parent: &str, table: &str);
}

impl<T> Element for Key<T> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn doc(&self) -> &'static str {
        self.doc
    }

    fn fixed(&self) -> bool {
        self.fixed
    }

    fn check(&self, cx: &Cx<'_>, v: Val<'_>, parent: &str, _table: &str) {
        let _ = self.read(cx, v, parent);
    }
}

/// A key whose value is a table of keys of its own (`target.ready`), looked up key by key.
pub(crate) struct SubTable {
    /// The key as written in TOML.
    pub name: &'static str,
    /// What it means (docs/config.md).
    pub doc: &'static str,
    /// What a value that is not a table should have been.
    pub expected: &'static str,
    /// Its keys, in the order "expected one of" lists them.
    pub keys: &'static [&'static dyn Element],
}

impl Element for SubTable {
    fn name(&self) -> &'static str {
        self.name
    }

    fn doc(&self) -> &'static str {
        self.doc
    }

    fn fixed(&self) -> bool {
        false
    }

    fn check(&self, cx: &Cx<'_>, v: Val<'_>, _parent: &str, table: &str) {
        let label = format!("`{}` in {table}", self.name);
        let Some(t) = Tbl::of(cx, v, label, self.expected) else {
            return;
        };
        t.check_keys(cx, &names(self.keys));
        for (k, value) in &t.entries {
            if let Some(key) = find(self.keys, k.get_ref()) {
                key.check(cx, *value, self.name, &t.name);
            }
        }
    }
}

/// A top-level section (`[generator]`, …) and the keys it allows.
pub(crate) struct Section {
    /// The section's name, e.g. `generator`.
    pub name: &'static str,
    /// Its keys, in the order "expected one of" lists them.
    pub keys: &'static [&'static dyn Element],
    /// Checks of the table as written that concern several keys at once; the flag says whether
    /// the table is a profile's.
    pub check_table: Option<fn(&Cx<'_>, &Tbl<'_>, bool)>,
}

impl Section {
    /// Pass 1: the section's table `v` as written, under `prefix` (e.g. `profile.ci.`).
    pub fn check(&self, cx: &Cx<'_>, v: Val<'_>, prefix: &str, in_profile: bool) {
        let label = format!("`[{prefix}{}]`", self.name);
        let Some(t) = Tbl::of(cx, v, label, "a table") else {
            return;
        };
        for (key, value) in &t.entries {
            let name = key.get_ref().as_ref();
            match find(self.keys, name) {
                Some(k) if in_profile && k.fixed() => cx.error(
                    t.file,
                    key.span(),
                    format!("`{name}` cannot be set in a profile"),
                    Some("a profile changes how the target is measured, not which target; set it in the top-level `[target]`".to_owned()),
                ),
                Some(k) => k.check(cx, *value, self.name, &t.name),
                None => cx.error(
                    t.file,
                    key.span(),
                    format!("unknown key `{name}` in {}", t.name),
                    unknown_help(name, &names(self.keys)),
                ),
            }
        }
        if let Some(check) = self.check_table {
            check(cx, &t, in_profile);
        }
    }
}

/// The names of `keys`, in order.
pub(crate) fn names(keys: &[&dyn Element]) -> Vec<&'static str> {
    keys.iter().map(|k| k.name()).collect()
}

fn find(keys: &'static [&'static dyn Element], name: &str) -> Option<&'static dyn Element> {
    keys.iter().copied().find(|k| k.name() == name)
}

/// "`a`, `b` or `c`": the names of `keys` as a message lists alternatives.
pub(crate) fn one_of<T>(keys: &[&Key<T>]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("`{}`", k.name)).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}
