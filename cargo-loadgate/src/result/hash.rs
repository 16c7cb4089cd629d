//! The hashes that decide which measurements are comparable: the config hash and sha256 itself.
//! (The schedule hash is computed where the schedule is built, in `workload/`.)

use crate::config::LoadgateConfig;
use sha2::{Digest, Sha256};

/// sha256 (hex) of the resolved configuration, leaving out where it was read from.
pub fn config_hash(config: &LoadgateConfig) -> String {
    let mut value = serde_json::to_value(config).unwrap_or(serde_json::Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.remove("source");
    }
    hex_sha256(value.to_string().as_bytes())
}

/// Lowercase hex sha256 of `bytes`.
pub fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_connections_enter_the_config_hash_only_when_set() {
        let toml = |extra: &str| format!("{}\n[generator]\n{extra}", crate::config::MINIMAL_CONFIG);
        let parse = |text: String| {
            crate::config::parse_config_str(&text, std::path::Path::new("l.toml"), None, "default")
                .expect("config")
        };
        let unset = parse(toml(""));
        let zero = parse(toml("connections = 0\n"));
        let three = parse(toml("connections = 3\n"));
        // 0 is left out of the serialized config: configs from before the key hash as before.
        let generator = serde_json::to_value(&unset.generator).expect("json");
        assert!(generator.get("connections").is_none(), "{generator}");
        assert!(generator.get("max_in_flight").is_some(), "{generator}");
        assert_eq!(config_hash(&unset), config_hash(&zero));
        assert_ne!(config_hash(&unset), config_hash(&three));
    }

    #[test]
    fn sha256_is_lowercase_hex() {
        assert_eq!(
            hex_sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
