//! The `url` target: a service that is already running. Nothing is booted; the URL must point at
//! the loopback interface unless the user allowed a remote one, because loadgate sends real load.

use super::TargetError;
use reqwest::Url;
use std::net::IpAddr;

/// Checks a target URL and returns its base (scheme, host, port, and path without a trailing `/`).
///
/// The host must be loopback (`127.0.0.0/8`, `::1` or `localhost`) unless `allow_remote` is set.
pub fn check_target_url(url: &str, allow_remote: bool) -> Result<String, TargetError> {
    let invalid = |reason: &str| TargetError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let parsed = Url::parse(url.trim()).map_err(|e| invalid(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid("the scheme must be http or https"));
    }
    let host = parsed
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| invalid("it has no host"))?;
    if !allow_remote && !is_loopback_host(host) {
        return Err(TargetError::RemoteRefused {
            url: url.to_owned(),
        });
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(invalid("a base url has no query or fragment"));
    }
    Ok(parsed.as_str().trim_end_matches('/').to_owned())
}

/// Whether a URL host (as `Url::host_str` gives it, IPv6 in brackets) is the loopback interface.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.eq_ignore_ascii_case("localhost") || bare.eq_ignore_ascii_case("localhost."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case("http://127.0.0.1:8080", "http://127.0.0.1:8080")]
    #[test_case("http://127.1.2.3:9/", "http://127.1.2.3:9")]
    #[test_case("http://[::1]:8080/", "http://[::1]:8080")]
    #[test_case("http://localhost:3000", "http://localhost:3000")]
    #[test_case("http://LOCALHOST:3000/api/", "http://localhost:3000/api")]
    #[test_case("https://127.0.0.1", "https://127.0.0.1")]
    fn loopback_is_accepted(url: &str, base: &str) {
        assert_eq!(check_target_url(url, false).expect("accepted"), base);
    }

    #[test_case("http://10.0.0.1:8080")]
    #[test_case("http://example.com")]
    #[test_case("http://[2001:db8::1]:80")]
    #[test_case("http://0.0.0.0:8080")]
    #[test_case("http://localhost.example.com")]
    #[test_case("http://128.0.0.1")]
    fn remote_is_refused(url: &str) {
        assert!(
            matches!(
                check_target_url(url, false),
                Err(TargetError::RemoteRefused { .. })
            ),
            "{url}"
        );
        assert!(
            check_target_url(url, true).is_ok(),
            "{url} with allow_remote"
        );
    }

    #[test_case("127.0.0.1:8080" ; "no scheme")]
    #[test_case("ftp://127.0.0.1" ; "wrong scheme")]
    #[test_case("http://" ; "no host")]
    #[test_case("http://127.0.0.1:8080/?x=1" ; "query")]
    #[test_case("not a url" ; "garbage")]
    fn invalid_urls(url: &str) {
        assert!(
            matches!(
                check_target_url(url, true),
                Err(TargetError::InvalidUrl { .. })
            ),
            "{url}"
        );
    }
}
