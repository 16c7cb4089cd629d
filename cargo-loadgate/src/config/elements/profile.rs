//! The profile-level keys (`[profile.NAME]`, `inherits`) and the layers a profile's keys are
//! looked up through (see `defaults.toml`): [`Look`] is the second pass's reader, key by key.

use super::key::{Key, Section};
use crate::config::source::{Cx, Tbl, Val, string, suggest};
use std::{collections::BTreeMap, ops::Range};
use toml::de::{DeTable, DeValue};

/// The top-level key whose tables are the user's profiles.
pub(crate) const PROFILE: &str = "profile";

/// The profile key naming the profile this one extends.
pub(crate) const INHERITS: &str = "inherits";

/// One layer of the lookup: a table whose keys are section names.
pub(crate) struct Layer<'a> {
    pub file: usize,
    pub root: &'a DeTable<'a>,
    /// A user profile or a built-in profile, rather than a top level.
    pub profile: bool,
    /// The built-in top level (the defaults).
    pub defaults: bool,
}

impl<'a> Layer<'a> {
    /// The value at `path` in this layer.
    pub fn get(&self, path: &[&str]) -> Option<Val<'a>> {
        let (last, parents) = path.split_last()?;
        let mut table = self.root;
        for key in parents {
            match table.get(*key)?.get_ref() {
                DeValue::Table(t) => table = t,
                _ => return None,
            }
        }
        table.get(*last).map(|v| Val { file: self.file, v })
    }
}

/// The layers of one profile, highest priority first: pass 2's reader.
pub(crate) struct Look<'a> {
    pub layers: Vec<Layer<'a>>,
    /// Where to report a problem in the user's config that has no better place.
    pub anchor: (usize, Range<usize>),
    /// How messages name a section, e.g. `[package.metadata.loadgate.workload]`.
    pub prefix: &'a str,
}

impl<'a> Look<'a> {
    /// The value at `path` in the first layer that has one.
    pub fn get(&self, path: &[&str]) -> Option<Val<'a>> {
        self.layers.iter().find_map(|l| l.get(path))
    }

    /// The value at `path` in the first layer `keep` accepts that has one.
    pub fn get_where(&self, path: &[&str], keep: impl Fn(&Layer<'a>) -> bool) -> Option<Val<'a>> {
        self.layers
            .iter()
            .filter(|l| keep(l))
            .find_map(|l| l.get(path))
    }

    /// The user's table of `section` (for a missing key), else the anchor.
    pub fn section_anchor(&self, section: &str) -> (usize, Range<usize>) {
        self.layers
            .iter()
            .filter(|l| l.file == 0)
            .find_map(|l| l.get(&[section]))
            .map_or_else(|| self.anchor.clone(), |v| (v.file, v.span()))
    }

    /// Reads `key` of `section` when some layer sets it.
    pub fn read<T>(&self, cx: &Cx<'_>, section: &Section, key: &Key<T>) -> Option<Option<T>> {
        self.get(&[section.name, key.name])
            .map(|v| key.read(cx, v, section.name))
    }

    /// Reads `key` of `section`; a missing key is reported.
    pub fn need<T>(&self, cx: &Cx<'_>, section: &Section, key: &Key<T>) -> Option<T> {
        let typo = || {
            self.layers
                .iter()
                .filter(|l| l.file == 0)
                .filter_map(|l| l.get(&[section.name]))
                .filter_map(|v| {
                    v.as_table()
                        .map(|t| Tbl::new(v.file, v.span(), String::new(), t))
                })
                .any(|t| t.has_typo_of(key.name))
        };
        match self.get(&[section.name, key.name]) {
            Some(v) => key.read(cx, v, section.name),
            // The unknown key that is probably this one is reported already.
            None if typo() => None,
            None => {
                let (file, span) = self.section_anchor(section.name);
                cx.error(
                    file,
                    span,
                    format!("`[{}{}]` has no `{}`", self.prefix, section.name, key.name),
                    None,
                );
                None
            }
        }
    }
}

/// The `[profile.*]` tables of a root, by name.
pub(crate) fn profiles_of<'a>(
    cx: &Cx<'_>,
    root: &Tbl<'a>,
    prefix: &str,
) -> BTreeMap<String, Tbl<'a>> {
    let mut out = BTreeMap::new();
    if let Some(v) = root.get(PROFILE)
        && let Some(profiles) = Tbl::of(
            cx,
            v,
            format!("`[{prefix}{PROFILE}]`"),
            "a table of profiles",
        )
    {
        for (name, value) in &profiles.entries {
            let label = format!("`[{prefix}{PROFILE}.{}]`", name.get_ref());
            if let Some(t) = Tbl::of(cx, *value, label, "a table (a profile)") {
                out.insert(name.get_ref().to_string(), t);
            }
        }
    }
    out
}

/// The layers of `profile`, highest priority first.
pub(crate) fn layers_of<'a>(
    profile: &str,
    user_profiles: &BTreeMap<String, Tbl<'a>>,
    builtin_profiles: &BTreeMap<String, Tbl<'a>>,
    user_root: &'a DeTable<'a>,
    builtin_root: &'a DeTable<'a>,
) -> Vec<Layer<'a>> {
    let mut layers = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut name = Some(profile.to_owned());
    while let Some(current) = name.take() {
        if seen.contains(&current) {
            // A cycle; reported once by `check_inherits`.
            break;
        }
        seen.push(current.clone());
        for (profiles, file) in [(user_profiles, 0), (builtin_profiles, 1)] {
            if let Some(t) = profiles.get(&current) {
                layers.push(Layer {
                    file,
                    root: t.raw,
                    profile: true,
                    defaults: false,
                });
            }
        }
        name = user_profiles
            .get(&current)
            .and_then(|t| t.get(INHERITS))
            .and_then(|v| v.get().as_str().map(str::to_owned));
    }
    layers.push(Layer {
        file: 0,
        root: user_root,
        profile: false,
        defaults: false,
    });
    layers.push(Layer {
        file: 1,
        root: builtin_root,
        profile: false,
        defaults: true,
    });
    layers
}

/// Reports `inherits` values that name no profile and inheritance cycles (each cycle once).
/// Reports each name of a `profiles` list (`[[audit]]`, `[[dependency]]`) that is not one of
/// `available`, as "`{owner}` names an unknown profile `…`", with the nearest name or the list.
/// A top-level entry's `profiles`: a list of profile names, each with where it is written
/// (`example` shows one in the message, e.g. `["audit"]`). Checked against the profiles that exist
/// by [`keeps`].
pub(crate) fn profile_list(
    cx: &Cx<'_>,
    v: crate::config::source::Val<'_>,
    example: &str,
) -> Option<Vec<(String, Range<usize>)>> {
    let items =
        crate::config::source::array(cx, v, &format!("a list of profile names, e.g. {example}"))?;
    let mut out = Vec::new();
    let mut ok = true;
    for item in items {
        match crate::config::source::string(cx, item, "a string (a profile's name)") {
            Some(s) => out.push((s.to_owned(), item.span())),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// Whether a top-level entry (`owner`, e.g. "stub `fraud`") with `profiles` (none: every profile)
/// applies to `profile`; each name it gives is checked against `available` first.
pub(crate) fn keeps(
    cx: &Cx<'_>,
    profiles: Option<&[(String, Range<usize>)]>,
    file: usize,
    available: &[String],
    profile: &str,
    owner: &str,
) -> bool {
    let Some(profiles) = profiles else {
        return true;
    };
    check_profile_names(cx, file, profiles, available, owner);
    profiles.iter().any(|(name, _)| name == profile)
}

pub(crate) fn check_profile_names(
    cx: &Cx<'_>,
    file: usize,
    names: &[(String, Range<usize>)],
    available: &[String],
    owner: &str,
) {
    for (name, span) in names {
        if !available.contains(name) {
            let help = suggest(name, available.iter().map(String::as_str))
                .map(|b| format!("did you mean `{b}`?"))
                .unwrap_or_else(|| format!("the profiles are: {}", available.join(", ")));
            cx.error(
                file,
                span.clone(),
                format!("{owner} names an unknown profile `{name}`"),
                Some(help),
            );
        }
    }
}

pub(crate) fn check_inherits(
    cx: &Cx<'_>,
    user_profiles: &BTreeMap<String, Tbl<'_>>,
    available: &[String],
) {
    let parent = |name: &str| -> Option<(String, Val<'_>)> {
        let v = user_profiles.get(name)?.get(INHERITS)?;
        Some((v.get().as_str()?.to_owned(), v))
    };
    for (name, table) in user_profiles {
        let Some(v) = table.get(INHERITS) else {
            continue;
        };
        let Some(target) = string(cx, v, "a profile name") else {
            continue;
        };
        if !available.iter().any(|a| a == target) {
            let help = suggest(target, available.iter().map(String::as_str))
                .map(|b| format!("did you mean `{b}`?"))
                .unwrap_or_else(|| format!("available profiles: {}", available.join(", ")));
            cx.error(
                v.file,
                v.span(),
                format!("profile `{name}` inherits from an unknown profile `{target}`"),
                Some(help),
            );
            continue;
        }
        // Follow the chain; a cycle through `name` is reported at the smallest name in it.
        let mut chain = vec![name.clone()];
        let mut current = target.to_owned();
        loop {
            if current == *name {
                chain.push(current);
                if chain[..chain.len() - 1].iter().all(|c| c >= name) {
                    cx.error(
                        v.file,
                        v.span(),
                        format!("profile inheritance makes a cycle: {}", chain.join(" → ")),
                        Some(format!("remove one of these `{INHERITS}`")),
                    );
                }
                break;
            }
            if chain.contains(&current) {
                break;
            }
            chain.push(current.clone());
            match parent(&current) {
                Some((next, _)) => current = next,
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::{one_problem, parse};
    use indoc::indoc;
    use std::time::Duration;
    use test_case::test_case;

    // Each case is one mistake in `[profile]`; exactly one problem must be reported, at the given place.
    #[test_case("[profile.ci.target]\nbin = \"app\"\n", 7, 1, "`bin` cannot be set in a profile", Some("a profile changes how the target is measured, not which target; set it in the top-level `[target]`"); "bin in a profile")]
    #[test_case("[profile.ci.ramp]\nhodl = \"1s\"\n", 7, 1, "unknown key `hodl` in `[profile.ci.ramp]`", Some("did you mean `hold`?"); "unknown key in a profile")]
    #[test_case("[profile.ci]\nramps = {}\n", 7, 1, "unknown key `ramps` in `[profile.ci]`", Some("did you mean `ramp`?"); "unknown section in a profile")]
    #[test_case("[profile.mine]\ninherits = \"qiuck\"\n", 7, 12, "profile `mine` inherits from an unknown profile `qiuck`", Some("did you mean `quick`?"); "inherits unknown profile")]
    #[test_case("[profile.a]\ninherits = \"b\"\n[profile.b]\ninherits = \"a\"\n", 7, 12, "profile inheritance makes a cycle: a → b → a", Some("remove one of these `inherits`"); "inheritance cycle")]
    #[test_case("[profile.a]\ninherits = \"a\"\n", 7, 12, "profile inheritance makes a cycle: a → a", Some("remove one of these `inherits`"); "profile inherits itself")]
    #[test_case("[profile.quick.ramp]\nwarmup = \"3s\"\n", 7, 10, "in profile `quick`, `warmup` (3s) is not shorter than `hold` (2s)", Some("the warmup is excluded from each step's figures, so it must leave some of the hold to measure"); "warmup longer than a profile's hold")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(text, line, col, message, help);
    }

    const LAYERED: &str = indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }

        [ramp]
        hold = "3s"
        refine = 4

        [soak]
        window = "2s"

        [profile.quick.ramp]
        hold = "1s"

        [profile.mine]
        inherits = "quick"
        ramp = { hold = "1500ms" }
        soak = { at = "50%" }

        [profile.theirs]
        inherits = "mine"
        gate = { p99 = "20%" }
    "#};

    #[test]
    fn profiles_layer_user_over_builtin_over_top_level_over_defaults() {
        let default = parse(LAYERED, "default").unwrap();
        assert_eq!(default.ramp.hold, Duration::from_secs(3), "user top level");
        assert_eq!(default.ramp.refine, 4, "user top level");
        assert_eq!(
            default.ramp.warmup,
            Duration::from_secs(1),
            "built-in default"
        );
        assert_eq!(default.ramp.steps.len(), 5, "built-in default");

        let quick = parse(LAYERED, "quick").unwrap();
        assert_eq!(
            quick.ramp.hold,
            Duration::from_secs(1),
            "user [profile.quick]"
        );
        assert_eq!(
            quick.ramp.warmup,
            Duration::from_millis(500),
            "built-in [profile.quick]"
        );
        assert_eq!(
            quick.ramp.refine, 1,
            "built-in [profile.quick] beats the user's top level"
        );
        assert_eq!(quick.ramp.steps, vec![0.25, 0.5, 1.0]);
        assert_eq!(quick.soak.window, Duration::from_secs(2), "user top level");
        assert_eq!(quick.soak.at, 0.6, "built-in default");

        let mine = parse(LAYERED, "mine").unwrap();
        assert_eq!(
            mine.ramp.hold,
            Duration::from_millis(1500),
            "user [profile.mine]"
        );
        assert_eq!(
            mine.ramp.warmup,
            Duration::from_millis(500),
            "inherited from quick"
        );
        assert_eq!(
            mine.soak.duration,
            Duration::from_secs(5),
            "inherited from built-in quick"
        );
        assert_eq!(mine.soak.at, 0.5);

        let theirs = parse(LAYERED, "theirs").unwrap();
        assert_eq!(theirs.profile, "theirs");
        assert_eq!(theirs.gate.p99_change, 0.2);
        assert_eq!(
            theirs.ramp.hold,
            Duration::from_millis(1500),
            "two steps up the chain"
        );
        assert_eq!(theirs.gate.p50_change, 0.05, "built-in default");

        let full = parse(LAYERED, "full").unwrap();
        assert_eq!(
            (full.ramp.hold, full.ramp.refine),
            (Duration::from_secs(10), 3)
        );
        assert_eq!(full.soak.duration, Duration::from_secs(120));
    }

    #[test]
    fn an_unknown_profile_lists_the_available_ones() {
        let err = parse(LAYERED, "quik").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown profile `quik`\nhint: available profiles: default, quick, ci, full, mine, theirs"
        );
    }
}
