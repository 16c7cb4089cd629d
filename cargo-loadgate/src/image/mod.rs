//! Images without a registry: packing a crate's static binary into a `FROM scratch` image.
