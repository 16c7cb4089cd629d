//! The config's sections, one file each (as cargo-nextest's `config/elements`): each holds its keys'
//! descriptors (name, meaning, reader), named once and read through [`key::Key::read`] by both
//! passes of `validate`, the building of its validated type, and its own checks.

pub(crate) mod abort;
pub(crate) mod gate;
pub(crate) mod generator;
pub(crate) mod key;
pub(crate) mod operation;
pub(crate) mod profile;
pub(crate) mod ramp;
pub(crate) mod slo;
pub(crate) mod soak;
pub(crate) mod target;
pub(crate) mod workload;

use key::Section;

/// Every section, in the order messages list them.
pub(crate) const SECTIONS: [&Section; 8] = [
    &target::SECTION,
    &slo::SECTION,
    &workload::SECTION,
    &generator::SECTION,
    &ramp::SECTION,
    &soak::SECTION,
    &abort::SECTION,
    &gate::SECTION,
];

/// The keys of the top level: the sections and the profiles.
pub(crate) fn top_keys() -> Vec<&'static str> {
    SECTIONS
        .iter()
        .map(|s| s.name)
        .chain([profile::PROFILE])
        .collect()
}

/// The keys of a profile: `inherits` and the sections.
pub(crate) fn profile_keys() -> Vec<&'static str> {
    std::iter::once(profile::INHERITS)
        .chain(SECTIONS.iter().map(|s| s.name))
        .collect()
}
