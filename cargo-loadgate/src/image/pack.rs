//! Packing images without any registry: a tar build context (a Dockerfile `FROM scratch` plus the
//! binary, or a user's Dockerfile with its context) sent to the local engine's build endpoint.
//! Images are tagged by the hash of what went in, so an unchanged binary reuses its image.

use super::{BuildMode, ElfLinkage, cargo_build, elf_linkage, host_triple};
use crate::{
    config::PackageRef,
    targets::{BootEvent, TargetError, docker::is_not_found, ring::LogRing},
};
use bollard::{Docker, query_parameters::BuildImageOptionsBuilder};
use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

/// The label every image and container loadgate makes carries (`loadgate=1`), so `clean` can find them.
pub const LABEL: &str = "loadgate";
/// The label holding the full sha256 of the binary packed into an image.
pub const LABEL_BINARY_SHA256: &str = "loadgate.binary-sha256";
/// Where the binary sits inside a packed image.
const APP_DIR: &str = "app";

/// A local image, by id and by the tag it was found or built under.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ImageRef {
    /// The engine's image id (`sha256:…`).
    pub id: String,
    /// The tag or reference used.
    pub tag: String,
}

/// How a binary was put into its image.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Packing {
    /// A static executable alone in a `FROM scratch` image.
    Static,
    /// A dynamic executable with its `ldd` libraries and loader.
    WithLibraries,
}

/// An image made from the crate's binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedImage {
    /// The image.
    pub image: ImageRef,
    /// The binary that went in.
    pub binary: PathBuf,
    /// How it went in.
    pub packing: Packing,
    /// Whether the image already existed (same binary) and was reused.
    pub reused: bool,
}

/// Looks up a local image; a missing one is [`TargetError::ImageMissing`] at once (never pulled).
pub async fn inspect_local_image(
    docker: &Docker,
    reference: &str,
) -> Result<ImageRef, TargetError> {
    match docker.inspect_image(reference).await {
        Ok(image) => Ok(ImageRef {
            id: image.id.unwrap_or_else(|| reference.to_owned()),
            tag: reference.to_owned(),
        }),
        Err(e) if is_not_found(&e) => Err(TargetError::ImageMissing {
            reference: reference.to_owned(),
        }),
        Err(e) => Err(TargetError::engine(
            format!("inspect image `{reference}`"),
            e,
        )),
    }
}

async fn find_image(docker: &Docker, tag: &str) -> Result<Option<ImageRef>, TargetError> {
    match inspect_local_image(docker, tag).await {
        Ok(image) => Ok(Some(image)),
        Err(TargetError::ImageMissing { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A name Docker accepts as a repository component: lower case, `[a-z0-9._-]`.
pub fn repository_component(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned();
    if s.is_empty() { "bin".to_owned() } else { s }
}

/// The tag of a binary's image: `loadgate/<bin>:<first 12 hex of its sha256>`.
pub fn binary_image_tag(bin: &str, sha256_hex: &str) -> String {
    format!(
        "loadgate/{}:{}",
        repository_component(bin),
        &sha256_hex[..12.min(sha256_hex.len())]
    )
}

/// The shared libraries and loader `ldd` lists, as absolute paths (the vdso has none and is skipped).
pub fn parse_ldd(text: &str) -> Vec<PathBuf> {
    let mut libs = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let path = match line.split_once("=>") {
            Some((_, right)) => right.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(path) = path.filter(|p| p.starts_with('/')) {
            let path = PathBuf::from(path);
            if !libs.contains(&path) {
                libs.push(path);
            }
        }
    }
    libs
}

/// The Dockerfile of a packed binary.
pub fn binary_dockerfile(bin_file: &str, lib_dirs: &[String]) -> String {
    let mut d = String::from("FROM scratch\nCOPY rootfs/ /\n");
    if !lib_dirs.is_empty() {
        d.push_str(&format!("ENV LD_LIBRARY_PATH={}\n", lib_dirs.join(":")));
    }
    d.push_str(&format!("ENTRYPOINT [\"/{APP_DIR}/{bin_file}\"]\n"));
    d
}

/// A deterministic tar (fixed times and owners) of `(path in archive, contents, mode)` entries.
pub fn tar_of(entries: &[(String, Vec<u8>, u32)]) -> Result<Vec<u8>, TargetError> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, data, mode) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(*mode);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, path, data.as_slice())
            .map_err(|e| TargetError::io(format!("add `{path}` to the image build context"), e))?;
    }
    builder
        .into_inner()
        .map_err(|e| TargetError::io("finish the image build context", e))
}

/// Builds the crate's binary and packs it into a `FROM scratch` image, reusing the image when the
/// binary is unchanged. The static build (`+crt-static`) is tried first; when it fails, the host
/// build is packed instead (with its `ldd` libraries, announced by [`BootEvent::DynamicFallback`]).
pub async fn pack_bin(
    docker: &Docker,
    package: &PackageRef,
    bin: &str,
    events: &dyn Fn(BootEvent),
) -> Result<PackedImage, TargetError> {
    let triple = host_triple().await?;
    let on_line = |line: &str| {
        events(BootEvent::BuildOutput {
            line: line.to_owned(),
        })
    };
    events(BootEvent::Building {
        what: format!("{bin} (release, static, {triple})"),
    });
    let mode = BuildMode::Static { triple };
    let binary = match cargo_build(package, bin, &mode, &on_line).await {
        Ok(path) => path,
        Err(TargetError::Build {
            status,
            stderr_tail,
            ..
        }) => {
            let last = stderr_tail.last().cloned().unwrap_or_default();
            events(BootEvent::DynamicFallback {
                reason: format!("the static build failed ({status}): {last}"),
            });
            events(BootEvent::Building {
                what: format!("{bin} (release)"),
            });
            cargo_build(package, bin, &BuildMode::Host, &on_line).await?
        }
        Err(e) => return Err(e),
    };
    events(BootEvent::Built {
        artifact: binary.display().to_string(),
        reused: false,
    });
    pack_binary(docker, &binary, bin, events).await
}

/// Packs an executable into a `FROM scratch` image tagged `loadgate/<bin>:<sha256 prefix>`, or
/// reuses that image when it exists. A static executable goes in alone; a dynamic one (it has a
/// `PT_INTERP`) goes in with the libraries and loader `ldd` lists, announced by
/// [`BootEvent::DynamicFallback`].
pub async fn pack_binary(
    docker: &Docker,
    binary: &Path,
    bin: &str,
    events: &dyn Fn(BootEvent),
) -> Result<PackedImage, TargetError> {
    let bytes = read(binary).await?;
    let packing = match elf_linkage(&bytes) {
        ElfLinkage::Static => Packing::Static,
        ElfLinkage::Dynamic { interpreter } => {
            events(BootEvent::DynamicFallback {
                reason: format!(
                    "{} is not static (it needs {interpreter})",
                    binary.display()
                ),
            });
            Packing::WithLibraries
        }
        ElfLinkage::NotElf => {
            return Err(TargetError::Build {
                command: format!("pack {}", binary.display()),
                status: "not an ELF executable".into(),
                stderr_tail: vec![],
            });
        }
    };
    let binary = binary.to_owned();
    let sha = crate::result::hex_sha256(&bytes);
    let tag = binary_image_tag(bin, &sha);
    if let Some(image) = find_image(docker, &tag).await? {
        events(BootEvent::Built {
            artifact: tag,
            reused: true,
        });
        return Ok(PackedImage {
            image,
            binary,
            packing,
            reused: true,
        });
    }
    let bin_file = repository_component(bin);
    let mut entries = vec![(format!("rootfs/{APP_DIR}/{bin_file}"), bytes, 0o755)];
    let mut lib_dirs = Vec::new();
    if packing == Packing::WithLibraries {
        for lib in ldd(&binary).await? {
            let data = read(&lib).await?;
            if let Some(dir) = lib.parent().map(|d| d.display().to_string())
                && !lib_dirs.contains(&dir)
            {
                lib_dirs.push(dir);
            }
            entries.push((format!("rootfs{}", lib.display()), data, 0o755));
        }
    }
    entries.push((
        "Dockerfile".into(),
        binary_dockerfile(&bin_file, &lib_dirs).into_bytes(),
        0o644,
    ));
    let context = tar_of(&entries)?;
    let packing_label = match packing {
        Packing::Static => "static",
        Packing::WithLibraries => "with-libraries",
    };
    let labels = HashMap::from([
        (LABEL.to_owned(), "1".to_owned()),
        (LABEL_BINARY_SHA256.to_owned(), sha),
        ("loadgate.packing".to_owned(), packing_label.to_owned()),
    ]);
    events(BootEvent::Building {
        what: format!("image {tag}"),
    });
    let image = build_context(docker, context, &tag, &labels, events).await?;
    events(BootEvent::Built {
        artifact: tag,
        reused: false,
    });
    Ok(PackedImage {
        image,
        binary,
        packing,
        reused: false,
    })
}

/// Builds a user's Dockerfile with its context, tagged `loadgate/dockerfile-<hash>` by the hash of
/// the Dockerfile and the context, and reuses the image when neither changed. The top-level
/// `target/` and `.git/` of the context are left out (cargo's output has no place in a build context).
pub async fn build_dockerfile(
    docker: &Docker,
    dockerfile: &Path,
    context: &Path,
    events: &dyn Fn(BootEvent),
) -> Result<(ImageRef, bool), TargetError> {
    let dockerfile_text = read(dockerfile).await?;
    let context_dir = context.to_owned();
    let mut entries = tokio::task::spawn_blocking(move || context_entries(&context_dir))
        .await
        .map_err(|e| TargetError::io("read the build context", std::io::Error::other(e)))??;
    entries.push((".loadgate.Dockerfile".into(), dockerfile_text, 0o644));
    let tar = tar_of(&entries)?;
    let tag = format!(
        "loadgate/dockerfile-{}",
        &crate::result::hex_sha256(&tar)[..12]
    );
    if let Some(image) = find_image(docker, &tag).await? {
        events(BootEvent::Built {
            artifact: tag,
            reused: true,
        });
        return Ok((image, true));
    }
    events(BootEvent::Building {
        what: format!("image {tag} from {}", dockerfile.display()),
    });
    let labels = HashMap::from([(LABEL.to_owned(), "1".to_owned())]);
    let image = build_context(docker, tar, &tag, &labels, events).await?;
    events(BootEvent::Built {
        artifact: tag,
        reused: false,
    });
    Ok((image, false))
}

fn context_entries(root: &Path) -> Result<Vec<(String, Vec<u8>, u32)>, TargetError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        let mut items: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| TargetError::io(format!("read build context {}", dir.display()), e))?
            .filter_map(Result::ok)
            .collect();
        items.sort_by_key(|e| e.file_name());
        for item in items {
            let path = item.path();
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            if dir == root && matches!(rel.as_str(), "target" | ".git") {
                continue;
            }
            let meta = std::fs::metadata(&path)
                .map_err(|e| TargetError::io(format!("read {}", path.display()), e))?;
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let data = std::fs::read(&path)
                    .map_err(|e| TargetError::io(format!("read {}", path.display()), e))?;
                out.push((rel, data, meta.permissions().mode() & 0o7777));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

async fn build_context(
    docker: &Docker,
    context: Vec<u8>,
    tag: &str,
    labels: &HashMap<String, String>,
    events: &dyn Fn(BootEvent),
) -> Result<ImageRef, TargetError> {
    let dockerfile = if tar_has(&context, ".loadgate.Dockerfile") {
        ".loadgate.Dockerfile"
    } else {
        "Dockerfile"
    };
    let options = BuildImageOptionsBuilder::new()
        .dockerfile(dockerfile)
        .t(tag)
        .rm(true)
        .forcerm(true)
        .labels(labels)
        .build();
    let log = LogRing::new(40);
    let mut stream = docker.build_image(options, None, Some(bollard::body_full(context.into())));
    let fail = |status: String, log: &LogRing| TargetError::Build {
        command: format!("docker build -t {tag} (through the engine API)"),
        status,
        stderr_tail: log.tail(20),
    };
    while let Some(item) = stream.next().await {
        match item {
            Ok(info) => {
                if let Some(text) = info.stream.as_deref() {
                    for line in text.lines().filter(|l| !l.trim().is_empty()) {
                        log.push_line(line);
                        events(BootEvent::BuildOutput {
                            line: line.to_owned(),
                        });
                    }
                }
                if let Some(detail) = info.error_detail {
                    return Err(fail(
                        detail.message.unwrap_or_else(|| "build error".into()),
                        &log,
                    ));
                }
            }
            Err(bollard::errors::Error::DockerStreamError { error }) => {
                return Err(fail(error, &log));
            }
            Err(e) => return Err(TargetError::engine(format!("build image {tag}"), e)),
        }
    }
    match find_image(docker, tag).await? {
        Some(image) => Ok(image),
        None => Err(fail("the engine reported no image".into(), &log)),
    }
}

fn tar_has(tar: &[u8], name: &str) -> bool {
    let mut archive = tar::Archive::new(tar);
    archive
        .entries()
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .any(|e| e.path().is_ok_and(|p| p == Path::new(name)))
        })
        .unwrap_or(false)
}

async fn read(path: &Path) -> Result<Vec<u8>, TargetError> {
    tokio::fs::read(path)
        .await
        .map_err(|e| TargetError::io(format!("read {}", path.display()), e))
}

async fn ldd(binary: &Path) -> Result<Vec<PathBuf>, TargetError> {
    let out = tokio::process::Command::new("ldd")
        .arg(binary)
        .output()
        .await
        .map_err(|e| TargetError::io(format!("run `ldd {}`", binary.display()), e))?;
    if !out.status.success() {
        return Err(TargetError::Build {
            command: format!("ldd {}", binary.display()),
            status: out.status.to_string(),
            stderr_tail: String::from_utf8_lossy(&out.stderr)
                .lines()
                .map(str::to_owned)
                .collect(),
        });
    }
    Ok(parse_ldd(&String::from_utf8_lossy(&out.stdout)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use indoc::indoc;
    use test_case::test_case;

    #[test]
    fn ldd_output_lists_libraries_and_loader() {
        let text = indoc! {"
            \tlinux-vdso.so.1 (0x00007ffd5a1f2000)
            \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f0c1c000000)
            \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0c1be00000)
            \t/lib64/ld-linux-x86-64.so.2 (0x00007f0c1c0a0000)
            \tlibmissing.so => not found
        "};
        assert_eq!(
            parse_ldd(text),
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
        assert!(parse_ldd("\tstatically linked\n").is_empty());
    }

    #[test_case("demo-service", "demo-service")]
    #[test_case("My_Bin", "my_bin")]
    #[test_case("a+b", "a-b")]
    #[test_case("__", "bin")]
    fn repository_components(bin: &str, expected: &str) {
        assert_eq!(repository_component(bin), expected);
    }

    #[test]
    fn tag_uses_12_hex_of_the_hash() {
        let sha = crate::result::hex_sha256(b"binary");
        assert_eq!(sha.len(), 64);
        assert_eq!(
            binary_image_tag("demo-service", &sha),
            format!("loadgate/demo-service:{}", &sha[..12])
        );
    }

    #[test]
    fn dockerfiles() {
        insta::assert_snapshot!(binary_dockerfile("demo-service", &[]), @r#"
        FROM scratch
        COPY rootfs/ /
        ENTRYPOINT ["/app/demo-service"]
        "#);
        insta::assert_snapshot!(binary_dockerfile("svc", &["/lib/x86_64-linux-gnu".into(), "/lib64".into()]), @r#"
        FROM scratch
        COPY rootfs/ /
        ENV LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/lib64
        ENTRYPOINT ["/app/svc"]
        "#);
    }

    #[test]
    fn context_tar_is_deterministic_and_readable() {
        let entries = vec![
            ("Dockerfile".to_owned(), b"FROM scratch\n".to_vec(), 0o644),
            ("rootfs/app/x".to_owned(), vec![1, 2, 3], 0o755),
        ];
        let a = tar_of(&entries).expect("tar");
        assert_eq!(a, tar_of(&entries).expect("tar"));
        assert!(tar_has(&a, "rootfs/app/x"));
        assert!(!tar_has(&a, ".loadgate.Dockerfile"));
        let mut archive = tar::Archive::new(a.as_slice());
        let modes: Vec<u32> = archive
            .entries()
            .expect("entries")
            .map(|e| e.expect("entry").header().mode().expect("mode"))
            .collect();
        assert_eq!(modes, [0o644, 0o755]);
    }

    #[test]
    fn context_skips_target_and_git() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (p, c) in [
            ("Dockerfile", "FROM scratch"),
            ("src/main.rs", "fn main() {}"),
            ("target/big", "x"),
            (".git/HEAD", "ref"),
        ] {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, c).expect("write");
        }
        let names: Vec<String> = context_entries(dir.path())
            .expect("entries")
            .into_iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(names, ["Dockerfile", "src/main.rs"]);
    }
}
