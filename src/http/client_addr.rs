//! Who is asking, by network address (guide: "Rate limiting"): the TCP peer, or
//! behind a trusted reverse proxy the address that proxy forwarded. Used to key
//! the per-address budget; never for access decisions.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use ipnet::IpNet;

use crate::config::Config;

/// `--trusted-proxy` values: an address (`10.0.0.5`, `::1`) or a network
/// (`10.0.0.0/8`, `fd00::/8`).
pub fn parse_proxy(s: &str) -> Result<IpNet, String> {
    let s = s.trim();
    s.parse::<IpNet>()
        .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("`{s}` is neither an IP address nor a CIDR network"))
}

/// The request's rate-limit key: the client's address (`resolve`), an IPv6
/// one cut to its /64 (`bucket`). None when the server did not record the peer
/// (no `ConnectInfo`): every such request shares that one key.
pub fn key(parts: &Parts, config: &Config) -> Option<IpAddr> {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(a)| a.ip());
    bucket(resolve(
        peer,
        &parts.headers,
        &config.trusted_proxies,
        config.client_ip_header.as_str(),
    ))
}

/// The peer, unless the peer is a trusted proxy: then the rightmost address in
/// `header` that is not itself a trusted proxy (each proxy appends the address
/// it saw, so everything left of that could be the client's invention). A
/// trusted peer that sent no usable header is the client itself.
pub fn resolve(
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    trusted: &[IpNet],
    header: &str,
) -> Option<IpAddr> {
    // IPv4-mapped IPv6 (`::ffff:1.2.3.4`, a dual-stack listener) is the IPv4 address.
    let peer = peer?.to_canonical();
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return Some(peer);
    }
    // Repeated header lines are one comma-separated list, in order (RFC 9110 §5.3).
    // Split the raw bytes: a line with one unreadable entry (a client's own
    // junk before what the proxy appended) still yields the proxy's entries.
    let entries: Vec<&str> = headers
        .get_all(header)
        .iter()
        .flat_map(|v| v.as_bytes().split(|b| *b == b','))
        .map(|e| std::str::from_utf8(e).unwrap_or(""))
        .collect();
    let mut client = peer;
    for entry in entries.iter().rev() {
        // An entry hds cannot read ends the walk: trust stops at garbage.
        let Some(ip) = parse_entry(entry) else {
            break;
        };
        client = ip;
        if !is_trusted(&ip) {
            break;
        }
    }
    Some(client)
}

/// One forwarded entry: `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1` or
/// `[2001:db8::1]:443`; or an element of RFC 7239's `Forwarded` header
/// (`for=192.0.2.60;proto=https`, `for="[2001:db8::1]:443"`), whose `for`
/// parameter is the address (`for=unknown` and obfuscated ones are unreadable).
fn parse_entry(entry: &str) -> Option<IpAddr> {
    let mut entry = entry.trim();
    if entry.contains('=') {
        entry = entry.split(';').find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("for")
                .then(|| value.trim().trim_matches('"'))
        })?;
    }
    let bare = entry
        .strip_prefix('[')
        .and_then(|e| e.strip_suffix(']'))
        .unwrap_or(entry);
    bare.parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .map(|ip| ip.to_canonical())
}

/// The budget's key: an IPv4 address, or an IPv6 address's /64 (one subscriber
/// owns at least a /64 and can use any address in it).
pub fn bucket(ip: Option<IpAddr>) -> Option<IpAddr> {
    match ip? {
        IpAddr::V4(v4) => Some(IpAddr::V4(v4)),
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !(u128::from(u64::MAX));
            Some(IpAddr::V6(Ipv6Addr::from(prefix)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_elements_give_their_for_address() {
        for (entry, ip) in [
            (
                "for=192.0.2.60;proto=https;by=203.0.113.43",
                Some("192.0.2.60"),
            ),
            (
                "For=\"[2001:db8:cafe::17]:4711\"",
                Some("2001:db8:cafe::17"),
            ),
            ("for=\"[2001:db8::1]\"", Some("2001:db8::1")),
            ("proto=https; for=198.51.100.7:8443", Some("198.51.100.7")),
            ("for=unknown", None),
            ("for=_hidden", None),
            ("proto=https", None),
            ("198.51.100.1", Some("198.51.100.1")),
        ] {
            assert_eq!(
                parse_entry(entry),
                ip.map(|i| i.parse::<IpAddr>().unwrap()),
                "{entry}"
            );
        }
        let mut h = HeaderMap::new();
        h.append(
            "forwarded",
            "for=198.51.100.9, for=10.0.0.2".parse().unwrap(),
        );
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let peer = Some("10.0.0.1".parse().unwrap());
        assert_eq!(
            resolve(peer, &h, &trusted, "forwarded"),
            Some("198.51.100.9".parse().unwrap())
        );
    }

    fn xff(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|s| parse_proxy(s).unwrap()).collect()
    }

    #[test]
    fn proxies_parse_as_addresses_or_networks() {
        assert_eq!(parse_proxy("10.0.0.5").unwrap().to_string(), "10.0.0.5/32");
        assert_eq!(
            parse_proxy(" 10.0.0.0/8").unwrap().to_string(),
            "10.0.0.0/8"
        );
        assert_eq!(parse_proxy("::1").unwrap().to_string(), "::1/128");
        assert_eq!(parse_proxy("fd00::/8").unwrap().to_string(), "fd00::/8");
        for bad in ["", "proxy.example", "10.0.0.0/33", "10.0.0.1:80"] {
            assert!(parse_proxy(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let h = xff(&["198.51.100.7"]);
        let got = resolve(
            Some(ip("203.0.113.1")),
            &h,
            &nets(&["10.0.0.0/8"]),
            "x-forwarded-for",
        );
        assert_eq!(got, Some(ip("203.0.113.1")));
        // No proxies configured: the header is never read.
        let got = resolve(Some(ip("10.0.0.1")), &h, &[], "x-forwarded-for");
        assert_eq!(got, Some(ip("10.0.0.1")));
    }

    /// nginx appends the peer to the client's own header line: junk bytes
    /// the client wrote there must not hide the entry the proxy added.
    #[test]
    fn an_unreadable_entry_does_not_hide_the_proxys_entry() {
        let mut h = HeaderMap::new();
        h.append(
            "x-forwarded-for",
            axum::http::HeaderValue::from_bytes(b"\xff\xfejunk, 198.51.100.7").unwrap(),
        );
        let got = resolve(
            Some(ip("127.0.0.1")),
            &h,
            &nets(&["127.0.0.1"]),
            "x-forwarded-for",
        );
        assert_eq!(got, Some(ip("198.51.100.7")));
    }

    #[test]
    fn behind_a_trusted_proxy_the_rightmost_untrusted_entry_is_the_client() {
        let trusted = nets(&["10.0.0.0/8"]);
        let peer = Some(ip("10.0.0.1"));
        // The client wrote "1.1.1.1"; the proxy appended what it saw.
        let h = xff(&["1.1.1.1, 198.51.100.7"]);
        assert_eq!(
            resolve(peer, &h, &trusted, "x-forwarded-for"),
            Some(ip("198.51.100.7"))
        );
        // A chain of trusted proxies is skipped; repeated lines are one list.
        let h = xff(&["1.1.1.1, 198.51.100.7", "10.0.0.9"]);
        assert_eq!(
            resolve(peer, &h, &trusted, "x-forwarded-for"),
            Some(ip("198.51.100.7"))
        );
        // Ports and brackets are tolerated; IPv4-mapped IPv6 is IPv4.
        let h = xff(&["[2001:db8::5]:443"]);
        assert_eq!(
            resolve(peer, &h, &trusted, "x-forwarded-for"),
            Some(ip("2001:db8::5"))
        );
        for entry in [
            "198.51.100.8:1234",
            "::ffff:198.51.100.8",
            "[::ffff:198.51.100.8]:80",
        ] {
            let h = xff(&[entry]);
            assert_eq!(
                resolve(peer, &h, &trusted, "x-forwarded-for"),
                Some(ip("198.51.100.8")),
                "{entry}"
            );
        }
    }

    #[test]
    fn a_trusted_peer_without_a_usable_header_is_the_client() {
        let trusted = nets(&["10.0.0.0/8"]);
        let peer = Some(ip("10.0.0.1"));
        assert_eq!(
            resolve(peer, &HeaderMap::new(), &trusted, "x-forwarded-for"),
            peer
        );
        // Garbage stops the walk where it stands.
        let h = xff(&["198.51.100.7, unknown"]);
        assert_eq!(resolve(peer, &h, &trusted, "x-forwarded-for"), peer);
        let h = xff(&["garbage, 198.51.100.7"]);
        assert_eq!(
            resolve(peer, &h, &trusted, "x-forwarded-for"),
            Some(ip("198.51.100.7"))
        );
        // All entries trusted: the farthest one.
        let h = xff(&["10.0.0.3, 10.0.0.2"]);
        assert_eq!(
            resolve(peer, &h, &trusted, "x-forwarded-for"),
            Some(ip("10.0.0.3"))
        );
    }

    #[test]
    fn another_header_can_be_named() {
        let mut h = xff(&["1.1.1.1"]);
        h.insert("x-real-ip", "198.51.100.7".parse().unwrap());
        let trusted = nets(&["127.0.0.1"]);
        let got = resolve(Some(ip("127.0.0.1")), &h, &trusted, "x-real-ip");
        assert_eq!(got, Some(ip("198.51.100.7")));
    }

    #[test]
    fn no_peer_is_the_shared_unknown_client() {
        assert_eq!(
            resolve(
                None,
                &xff(&["1.1.1.1"]),
                &nets(&["0.0.0.0/0"]),
                "x-forwarded-for"
            ),
            None
        );
        assert_eq!(bucket(None), None);
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64() {
        assert_eq!(
            bucket(Some(ip("2001:db8:1:2:aaaa::1"))),
            Some(ip("2001:db8:1:2::"))
        );
        assert_eq!(
            bucket(Some(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"))),
            bucket(Some(ip("2001:db8:1:2::9")))
        );
        assert_ne!(
            bucket(Some(ip("2001:db8:1:3::1"))),
            bucket(Some(ip("2001:db8:1:2::1")))
        );
        assert_eq!(bucket(Some(ip("198.51.100.7"))), Some(ip("198.51.100.7")));
    }
}
