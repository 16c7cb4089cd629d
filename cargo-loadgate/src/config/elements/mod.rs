//! The config's sections, one file each (as cargo-nextest's `config/elements`): each holds its keys'
//! descriptors (name, meaning, reader), named once and read through [`key::Key::read`] by both
//! passes of `validate`, the building of its validated type, and its own checks.

pub(crate) mod abort;
pub(crate) mod accept;
pub(crate) mod audit;
pub(crate) mod data;
pub(crate) mod dependency;
pub(crate) mod failover;
pub(crate) mod fault;
pub(crate) mod gate;
pub(crate) mod generator;
pub(crate) mod key;
pub(crate) mod operation;
pub(crate) mod paired;
pub(crate) mod placeholder;
pub(crate) mod probe;
pub(crate) mod profile;
pub(crate) mod ramp;
pub(crate) mod recovery;
pub(crate) mod retry;
pub(crate) mod slo;
pub(crate) mod soak;
pub(crate) mod spike;
pub(crate) mod stress;
pub(crate) mod stub;
pub(crate) mod target;
pub(crate) mod workload;

use key::Section;

/// Every section, in the order messages list them.
pub(crate) const SECTIONS: [&Section; 14] = [
    &target::SECTION,
    &slo::SECTION,
    &workload::SECTION,
    &generator::SECTION,
    &ramp::SECTION,
    &soak::SECTION,
    &spike::SECTION,
    &stress::SECTION,
    &recovery::SECTION,
    &abort::SECTION,
    &gate::SECTION,
    &paired::SECTION,
    &data::SECTION,
    &data::TEARDOWN,
];

/// The keys of the top level: the sections and the profiles.
pub(crate) fn top_keys() -> Vec<&'static str> {
    SECTIONS
        .iter()
        .map(|s| s.name)
        .chain([
            accept::ACCEPT,
            audit::AUDIT,
            dependency::DEPENDENCY,
            fault::FAULT,
            probe::PROBE,
            profile::PROFILE,
            stub::STUB,
        ])
        .collect()
}

/// The keys of a profile: `inherits` and the sections.
pub(crate) fn profile_keys() -> Vec<&'static str> {
    std::iter::once(profile::INHERITS)
        .chain(SECTIONS.iter().map(|s| s.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/config.md describes every key: each section's table has a row for each key, whose
    /// meaning is the key's `doc`.
    #[test]
    fn docs_config_md_has_a_row_for_every_key_with_its_meaning() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/config.md");
        let docs = std::fs::read_to_string(path).expect("docs/config.md is readable");
        let accept = key::Section {
            name: accept::ACCEPT,
            keys: accept::KEYS,
            check_table: None,
        };
        let dependency = key::Section {
            name: dependency::DEPENDENCY,
            keys: dependency::KEYS,
            check_table: None,
        };
        let probe = key::Section {
            name: probe::PROBE,
            keys: probe::KEYS,
            check_table: None,
        };
        for (section, heading) in SECTIONS
            .iter()
            .map(|s| (*s, format!("## `[{}]`", s.name)))
            .chain([
                (&accept, format!("## `[[{}]]`", accept::ACCEPT)),
                (&dependency, format!("## `[[{}]]`", dependency::DEPENDENCY)),
                (&probe, format!("## `[[{}]]`", probe::PROBE)),
            ])
        {
            let start = docs
                .find(&heading)
                .unwrap_or_else(|| panic!("no {heading}"));
            let rest = &docs[start + heading.len()..];
            let table = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
            for key in section.keys {
                let row = table
                    .lines()
                    .find(|l| {
                        l.starts_with("| `")
                            && l.split(" | ")
                                .next()
                                .is_some_and(|k| k.contains(&format!("`{}`", key.name())))
                    })
                    .unwrap_or_else(|| panic!("{heading} has no row for `{}`", key.name()));
                assert!(
                    row.contains(key.doc()),
                    "the row of `{}` in {heading} does not say {:?}: {row}",
                    key.name(),
                    key.doc()
                );
            }
        }
    }
}
