//! How the generator reaches a container target: host networking or a port published on
//! 127.0.0.1, decided once per boot from `[target] network` and what the engine says about itself,
//! and recorded with the run.
//!
//! Why host networking is the default where it works (docs/decisions.md, "The network path"): a
//! port published through Docker's userland proxy cost about 0.7 of a core and p99 41 ms at 20k
//! req/s against the same image on the host network at p99 0.86 ms, and collapsed at 40k. A
//! container target measured the proxy as much as the service.
//!
//! With host networking the service gets a free loopback port as `$PORT` and `$HOST=127.0.0.1`
//! (each instance its own port, so a paired run's base and head, or replicas, never clash). A
//! service that ignores `$HOST` and binds every interface still works; the run warns, since on the
//! host's network that exposes it beyond loopback for the length of the run.

use super::TargetError;
use crate::config::NetworkChoice;
use bollard::Docker;
use serde::{Deserialize, Serialize};

/// The path the load took to a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkPath {
    /// Host networking: the service on 127.0.0.1:`$PORT`, nothing between it and the generator.
    Host,
    /// The container's port published on 127.0.0.1 by the engine (its userland proxy, or its
    /// NAT rules when the proxy is off).
    Published,
}

impl NetworkPath {
    /// The path as the config and the result write it: `host`, `published`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Published => "published",
        }
    }
}

/// What a run records about the network path to its container target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkInfo {
    /// The path used.
    pub path: NetworkPath,
    /// What `[target] network` asked for.
    pub asked: NetworkChoice,
    /// Why host networking was not used when `auto` preferred it.
    pub fallback: Option<String>,
    /// Host networking only: whether the service was found listening on every interface
    /// (`0.0.0.0` or `::`) rather than on loopback; `None` when not looked at or not found.
    pub binds_every_interface: Option<bool>,
}

impl NetworkInfo {
    /// The warning a run prints and records, when there is one.
    pub fn warning(&self, port: u16) -> Option<String> {
        (self.binds_every_interface == Some(true)).then(|| {
            format!(
                "the service listens on every interface (port {port}), not only on loopback: on \
                 the host's network it is reachable from outside this machine while the run lasts \
                 (have it bind `$HOST`, which loadgate sets to 127.0.0.1, or set `[target] network \
                 = \"published\"`)"
            )
        })
    }
}

/// What the engine says about where it runs, as far as host networking cares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct EngineSite {
    /// `OSType`: `linux` or `windows`.
    pub(crate) os_type: Option<String>,
    /// `OperatingSystem`, e.g. `Debian GNU/Linux 12 (bookworm)` or `Docker Desktop`.
    pub(crate) operating_system: Option<String>,
    /// `KernelVersion` of the engine's host.
    pub(crate) kernel_version: Option<String>,
    /// Whether `SecurityOptions` says `name=rootless`.
    pub(crate) rootless: bool,
    /// The interface of the engine's default bridge network on the engine's host
    /// (`com.docker.network.bridge.name`, e.g. `docker0`); `None` when the engine has none or
    /// does not say.
    pub(crate) bridge_interface: Option<String>,
}

impl EngineSite {
    /// Asks the engine (`GET /info`). A failure is the engine's, like any other call of the boot:
    /// guessing a path instead would change the run's fingerprint on one flaky answer.
    pub(crate) async fn of(docker: &Docker) -> Result<Self, TargetError> {
        let info = docker
            .info()
            .await
            .map_err(|e| TargetError::engine("describe the engine (GET /info)", e))?;
        Ok(Self {
            os_type: info.os_type,
            operating_system: info.operating_system,
            kernel_version: info.kernel_version,
            rootless: info
                .security_options
                .unwrap_or_default()
                .iter()
                .any(|o| o.split(',').any(|part| part == "name=rootless")),
            // An engine without its default bridge (`--bridge=none`) answers 404: nothing to
            // tell by, which is not the boot's failure.
            bridge_interface: docker
                .inspect_network("bridge", None)
                .await
                .ok()
                .and_then(|n| n.options)
                .and_then(|o| o.get("com.docker.network.bridge.name").cloned())
                .filter(|name| !name.is_empty()),
        })
    }
}

/// What this process's side looks like, as far as reaching the engine's containers cares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LocalSite {
    /// This machine's kernel release ([`local_kernel`]).
    pub(crate) kernel: Option<String>,
    /// The network interfaces of this process's network namespace (`/sys/class/net`, which
    /// shows the namespace of whoever mounted it: a container sees its own); `None` when
    /// unreadable.
    pub(crate) interfaces: Option<Vec<String>>,
    /// Whether this process runs in a container (`/.dockerenv`, `/run/.containerenv`, or a
    /// container runtime in `/proc/1/cgroup`).
    pub(crate) in_container: bool,
}

impl LocalSite {
    /// This process's side, read from `/proc` and `/sys`.
    pub(crate) fn here() -> Self {
        let interfaces = std::fs::read_dir("/sys/class/net").ok().map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        });
        let cgroup = std::fs::read_to_string("/proc/1/cgroup").unwrap_or_default();
        let in_container = std::path::Path::new("/.dockerenv").exists()
            || std::path::Path::new("/run/.containerenv").exists()
            || ["docker", "kubepods", "containerd", "libpod", "lxc"]
                .iter()
                .any(|runtime| cgroup.contains(runtime));
        Self {
            kernel: local_kernel(),
            interfaces,
            in_container,
        }
    }
}

/// Why the engine's containers cannot be reached on this process's loopback at all, or `None`
/// when they can (or nothing tells). The engine's bridge interface lives in its host's network
/// namespace: when this process cannot see it, loadgate runs in another namespace (a job
/// container with the engine's socket mounted, or beside a Docker-in-Docker engine), where
/// neither the engine's host network nor a port it publishes on 127.0.0.1 is this loopback.
/// Without this the boot would only time out waiting for readiness.
///
/// Only asked of a process in a container, and of an engine that [`host_unavailable`] takes for
/// this machine's: a rootless engine's bridge lives in its own namespace, and Docker Desktop's,
/// Colima's or Lima's inside a VM, yet their published ports do reach this loopback, which is the
/// fallback they get; and on a host a missing bridge (a Podman that makes its own only once a
/// container exists) says nothing about namespaces.
pub(crate) fn engine_elsewhere(site: &EngineSite, local: &LocalSite) -> Option<String> {
    if !local.in_container || host_unavailable(site, local.kernel.as_deref()).is_some() {
        return None;
    }
    let bridge = site.bridge_interface.as_deref()?;
    let interfaces = local.interfaces.as_ref()?;
    (!interfaces.iter().any(|i| i == bridge)).then(|| {
        format!(
            "the engine's bridge `{bridge}` is not an interface of this network namespace, so \
             loadgate runs in another one than the engine's host (in a container with the \
             engine's socket, or beside a Docker-in-Docker engine); neither the engine's host \
             network nor a port it publishes on 127.0.0.1 is this loopback"
        )
    })
}

/// This machine's kernel release (`/proc/sys/kernel/osrelease`), to tell whether the engine runs
/// on it.
pub(crate) fn local_kernel() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Why the engine's host network is not this machine's loopback, or `None` when it is.
pub(crate) fn host_unavailable(site: &EngineSite, local_kernel: Option<&str>) -> Option<String> {
    if let Some(os) = site.os_type.as_deref()
        && os != "linux"
    {
        return Some(format!("the engine runs {os} containers"));
    }
    if let Some(os) = site.operating_system.as_deref()
        && os.contains("Docker Desktop")
    {
        return Some(format!(
            "the engine is {os}, whose containers run in a VM: its host network is not this \
             machine's loopback"
        ));
    }
    if site.rootless {
        return Some(
            "the engine is rootless: its host network is its own namespace, not this machine's \
             loopback"
                .to_owned(),
        );
    }
    match (site.kernel_version.as_deref(), local_kernel) {
        (Some(engine), Some(here)) if engine != here => Some(format!(
            "the engine runs on kernel {engine} and this machine on {here}: it is another \
             machine or a VM"
        )),
        _ => None,
    }
}

/// Why `auto` does not take the host network for a target loadgate did not build: its image may
/// listen on a fixed port, which only a published port maps to `[target] port`.
pub(crate) const NOT_BUILT_HERE: &str = "loadgate did not build this image, so it cannot know that \
     the service listens on `$PORT` (set `[target] network = \"host\"` if it does)";

/// The path for `choice` on an engine at `site`, with the reason `auto` did not take the host
/// network, or the error when `host` was asked for and cannot work. `listens_on_port_env`: the
/// target is the package's own binary, which listens on `$PORT` as a process target must; an
/// `image` or a `dockerfile` may not, and `auto` publishes its port.
pub(crate) fn decide(
    choice: NetworkChoice,
    site: &EngineSite,
    local: &LocalSite,
    listens_on_port_env: bool,
) -> Result<(NetworkPath, Option<String>), TargetError> {
    if let Some(reason) = engine_elsewhere(site, local) {
        return Err(TargetError::EngineNetworkElsewhere { reason });
    }
    let local_kernel = local.kernel.as_deref();
    match choice {
        NetworkChoice::Published => Ok((NetworkPath::Published, None)),
        NetworkChoice::Host => match host_unavailable(site, local_kernel) {
            None => Ok((NetworkPath::Host, None)),
            Some(reason) => Err(TargetError::HostNetworkUnavailable { reason }),
        },
        NetworkChoice::Auto => Ok(match host_unavailable(site, local_kernel) {
            None if listens_on_port_env => (NetworkPath::Host, None),
            None => (NetworkPath::Published, Some(NOT_BUILT_HERE.to_owned())),
            Some(reason) => (NetworkPath::Published, Some(reason)),
        }),
    }
}

/// How a TCP listener on a port is bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListenScope {
    /// 127.0.0.0/8, `::1` or `::ffff:127.x.x.x`.
    Loopback,
    /// `0.0.0.0` or `::`.
    Every,
    /// Some other address.
    Other,
}

/// The listeners on `port` in a `/proc/net/tcp` (or `tcp6`, with `v6`) table.
pub(crate) fn listeners(table: &str, v6: bool, port: u16) -> Vec<ListenScope> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let local = fields.nth(1)?;
            let state = fields.nth(1)?;
            let (addr, hex_port) = local.rsplit_once(':')?;
            (state == LISTEN && u16::from_str_radix(hex_port, 16).ok()? == port)
                .then(|| scope(addr, v6))
        })
        .collect()
}

/// The scope of an address as `/proc/net/tcp{,6}` writes it: each 32-bit word in the host's byte
/// order.
fn scope(addr: &str, v6: bool) -> ListenScope {
    // The bytes of one 32-bit word as the kernel wrote it (little endian), in network order.
    let word =
        |hex: &str| -> Option<[u8; 4]> { u32::from_str_radix(hex, 16).ok().map(u32::to_le_bytes) };
    if !v6 {
        return match word(addr) {
            Some([0, 0, 0, 0]) => ListenScope::Every,
            Some([127, ..]) => ListenScope::Loopback,
            _ => ListenScope::Other,
        };
    }
    if addr.len() != 32 {
        return ListenScope::Other;
    }
    let words: Option<Vec<[u8; 4]>> = (0..4).map(|i| word(&addr[i * 8..i * 8 + 8])).collect();
    let Some(words) = words else {
        return ListenScope::Other;
    };
    match words.as_slice() {
        [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]] => ListenScope::Every,
        [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]] => ListenScope::Loopback,
        [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0xff, 0xff], [127, ..]] => ListenScope::Loopback,
        [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0xff, 0xff], [0, 0, 0, 0]] => ListenScope::Every,
        _ => ListenScope::Other,
    }
}

/// Whether something listens on `port` on every interface, from this machine's TCP tables (the
/// host's, which a host-networked container shares); `None` when no listener on the port was
/// found or the tables could not be read.
pub(crate) fn binds_every_interface(port: u16) -> Option<bool> {
    let mut found = Vec::new();
    for (path, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        if let Ok(table) = std::fs::read_to_string(path) {
            found.extend(listeners(&table, v6, port));
        }
    }
    if found.is_empty() {
        return None;
    }
    Some(found.contains(&ListenScope::Every))
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    fn linux(os: &str, kernel: &str) -> EngineSite {
        EngineSite {
            os_type: Some("linux".into()),
            operating_system: Some(os.into()),
            kernel_version: Some(kernel.into()),
            rootless: false,
            bridge_interface: Some("docker0".into()),
        }
    }

    /// This side on `kernel`, in the engine host's namespace (it sees `docker0`).
    fn here(kernel: Option<&str>) -> LocalSite {
        LocalSite {
            kernel: kernel.map(str::to_owned),
            interfaces: Some(vec!["lo".into(), "eth0".into(), "docker0".into()]),
            in_container: false,
        }
    }

    #[test]
    fn an_engine_whose_bridge_is_not_here_is_refused_on_every_path() {
        let site = linux("Debian GNU/Linux 12 (bookworm)", "6.1.0");
        // A job container's own namespace: its loopback and its end of a veth.
        let container = LocalSite {
            kernel: Some("6.1.0".into()),
            interfaces: Some(vec!["lo".into(), "eth0".into()]),
            in_container: true,
        };
        for choice in [
            NetworkChoice::Auto,
            NetworkChoice::Host,
            NetworkChoice::Published,
        ] {
            let err = decide(choice, &site, &container, true).expect_err("refused");
            assert!(
                matches!(&err, TargetError::EngineNetworkElsewhere { reason } if reason.contains("`docker0`")),
                "{err}"
            );
        }
    }

    #[test_case(None, Some(vec!["lo".into()]) ; "an engine without a default bridge")]
    #[test_case(Some("docker0".into()), None ; "no interface list here")]
    fn nothing_to_tell_by_is_not_a_refusal(
        bridge: Option<String>,
        interfaces: Option<Vec<String>>,
    ) {
        let site = EngineSite {
            bridge_interface: bridge,
            ..linux("Debian", "6.1.0")
        };
        let local = LocalSite {
            kernel: Some("6.1.0".into()),
            interfaces,
            in_container: true,
        };
        assert_eq!(
            decide(NetworkChoice::Auto, &site, &local, true).expect("decides"),
            (NetworkPath::Host, None)
        );
    }

    /// Engines whose bridge is never in this namespace, yet whose published ports reach this
    /// loopback, and a host without the bridge: none is refused (the review's regression).
    #[test_case(EngineSite { rootless: true, ..linux("Ubuntu 24.04", "6.1.0") }, true ; "a rootless engine, from a container")]
    #[test_case(linux("Docker Desktop", "6.10.14-linuxkit"), true ; "docker desktop, from a container")]
    #[test_case(linux("Ubuntu 24.04", "6.8.0-1"), true ; "an engine on another kernel, from a container")]
    #[test_case(linux("Fedora", "6.1.0"), false ; "a host without the engine's bridge yet")]
    fn a_bridge_missing_here_refuses_only_a_container_beside_a_local_engine(
        site: EngineSite,
        in_container: bool,
    ) {
        let local = LocalSite {
            kernel: Some("6.1.0".into()),
            interfaces: Some(vec!["lo".into(), "eth0".into()]),
            in_container,
        };
        assert_eq!(engine_elsewhere(&site, &local), None);
        assert!(decide(NetworkChoice::Auto, &site, &local, true).is_ok());
    }

    #[test]
    fn this_process_s_interfaces_are_read_from_sys_class_net() {
        let local = LocalSite::here();
        let interfaces = local.interfaces.expect("/sys/class/net is readable");
        assert!(interfaces.iter().any(|i| i == "lo"), "{interfaces:?}");
    }

    #[test]
    fn an_engine_on_this_kernel_gets_host_networking_under_auto_and_host() {
        let site = linux("Debian GNU/Linux 12 (bookworm)", "6.1.0-18-amd64");
        for choice in [NetworkChoice::Auto, NetworkChoice::Host] {
            assert_eq!(
                decide(choice, &site, &here(Some("6.1.0-18-amd64")), true).expect("decides"),
                (NetworkPath::Host, None)
            );
        }
        assert_eq!(
            decide(
                NetworkChoice::Published,
                &site,
                &here(Some("6.1.0-18-amd64")),
                true
            )
            .expect("decides"),
            (NetworkPath::Published, None)
        );
    }

    #[test]
    fn auto_publishes_the_port_of_an_image_it_did_not_build_and_host_is_still_allowed() {
        let site = linux("Debian GNU/Linux 12 (bookworm)", "6.1.0");
        let (path, why) =
            decide(NetworkChoice::Auto, &site, &here(Some("6.1.0")), false).expect("decides");
        assert_eq!(path, NetworkPath::Published);
        assert_eq!(why.as_deref(), Some(NOT_BUILT_HERE));
        assert_eq!(
            decide(NetworkChoice::Host, &site, &here(Some("6.1.0")), false).expect("decides"),
            (NetworkPath::Host, None)
        );
    }

    #[test_case(linux("Docker Desktop", "6.10.14-linuxkit"), "Docker Desktop" ; "docker desktop")]
    #[test_case(linux("Ubuntu 24.04", "6.8.0-1"), "another machine or a VM" ; "another kernel")]
    #[test_case(EngineSite { rootless: true, ..linux("Ubuntu 24.04", "6.1.0") }, "rootless" ; "rootless")]
    #[test_case(EngineSite { os_type: Some("windows".into()), ..linux("Windows Server", "10.0") }, "windows containers" ; "windows")]
    fn auto_falls_back_to_a_published_port_and_says_why_and_host_is_an_error(
        site: EngineSite,
        why: &str,
    ) {
        let (path, fallback) =
            decide(NetworkChoice::Auto, &site, &here(Some("6.1.0")), true).expect("decides");
        assert_eq!(path, NetworkPath::Published);
        let fallback = fallback.expect("a stated fallback");
        assert!(fallback.contains(why), "{fallback}");
        let err = decide(NetworkChoice::Host, &site, &here(Some("6.1.0")), true)
            .expect_err("host refused");
        assert!(
            matches!(&err, TargetError::HostNetworkUnavailable { reason } if reason.contains(why)),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_local_kernel_does_not_refuse_host_networking() {
        let site = linux("Debian", "6.1.0");
        assert_eq!(
            decide(NetworkChoice::Auto, &site, &here(None), true)
                .expect("decides")
                .0,
            NetworkPath::Host
        );
    }

    /// Lines as the kernel writes them (trimmed to the fields read).
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A0E2 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
   2: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0
   3: 0200000A:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0 100 0 0 10 0
";
    const TCP6: &str =
        "  sl  local_address                         remote_address                        st
   0: 00000000000000000000000001000000:A0E3 00000000000000000000000000000000:0000 0A
   1: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A
   2: 0000000000000000FFFF00000100007F:A0E4 00000000000000000000000000000000:0000 0A
";

    #[test_case(TCP, false, 0xA0E2, &[ListenScope::Loopback] ; "v4 loopback")]
    #[test_case(TCP, false, 0x1F90, &[ListenScope::Every] ; "v4 any, the established one not counted")]
    #[test_case(TCP, false, 0x0050, &[ListenScope::Other] ; "v4 another address")]
    #[test_case(TCP, false, 0x1234, &[] ; "v4 nothing")]
    #[test_case(TCP6, true, 0xA0E3, &[ListenScope::Loopback] ; "v6 loopback")]
    #[test_case(TCP6, true, 0x1F91, &[ListenScope::Every] ; "v6 any")]
    #[test_case(TCP6, true, 0xA0E4, &[ListenScope::Loopback] ; "v4 mapped loopback")]
    fn listeners_are_read_from_the_kernels_tables(
        table: &str,
        v6: bool,
        port: u16,
        expected: &[ListenScope],
    ) {
        assert_eq!(listeners(table, v6, port), expected);
    }

    #[test]
    fn the_listener_of_this_process_is_found_with_its_scope() {
        let on_loopback = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = on_loopback.local_addr().expect("addr").port();
        assert_eq!(binds_every_interface(port), Some(false));
        let everywhere = std::net::TcpListener::bind("0.0.0.0:0").expect("bind");
        let port = everywhere.local_addr().expect("addr").port();
        assert_eq!(binds_every_interface(port), Some(true));
        drop((on_loopback, everywhere));
    }

    #[test]
    fn the_warning_names_the_port_and_the_way_out() {
        let info = NetworkInfo {
            path: NetworkPath::Host,
            asked: NetworkChoice::Auto,
            fallback: None,
            binds_every_interface: Some(true),
        };
        let warning = info.warning(41234).expect("warns");
        assert!(
            warning.contains("port 41234") && warning.contains("$HOST"),
            "{warning}"
        );
        assert_eq!(
            NetworkInfo {
                binds_every_interface: Some(false),
                ..info.clone()
            }
            .warning(41234),
            None
        );
    }
}
