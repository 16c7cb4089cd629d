//! Images without a registry: packing a crate's static binary into a `FROM scratch` image (or, when
//! it cannot be static, the binary with its `ldd` libraries), building a user's Dockerfile, and
//! checking that a named image exists locally. Nothing here ever pulls.

mod cargo;
mod elf;
mod pack;

pub use cargo::{
    BuildMode, build_command, cargo_build, cargo_build_in, host_triple, parse_artifact_line,
    parse_host_triple, rustflags_var,
};
pub use elf::{ElfLinkage, elf_linkage};
pub use pack::{
    ImageRef, LABEL, LABEL_BINARY_SHA256, PackedImage, Packing, binary_dockerfile,
    binary_image_tag, build_dockerfile, inspect_local_image, pack_bin, pack_binary, parse_ldd,
    repository_component, tar_of,
};
