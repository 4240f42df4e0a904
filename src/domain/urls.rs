//! URL rules: what counts as an http(s) link, how a `callback_url` is
//! normalised, and which addresses are not public so that hds never calls into
//! a private network (SSRF; guide: "Callback URLs and private networks").
//! The same `non_public_reason` judges the host at create time and every
//! resolved address at delivery time; nothing here does I/O.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{Ipv4Net, Ipv6Net};
use url::{Host, Url};

/// IPv4 ranges that are not publicly routable, first match wins (IANA IPv4
/// Special-Purpose Address Registry, RFC 6890 and its updates). Blocks the
/// registry marks globally reachable but where no webhook receiver lives
/// (192.0.0.9/32 and 192.0.0.10/32 anycast, 192.88.99.0/24 6to4 relays) are
/// refused with their block: refusing them costs nothing real.
const V4_RANGES: &[(Ipv4Net, &str)] = &[
    (v4(0, 0, 0, 0, 8), "\"this network\" (RFC 791)"),
    (v4(10, 0, 0, 0, 8), "private (RFC 1918)"),
    (v4(100, 64, 0, 0, 10), "carrier-grade NAT (RFC 6598)"),
    (v4(127, 0, 0, 0, 8), "loopback"),
    (
        v4(169, 254, 169, 254, 32),
        "link-local (cloud metadata service)",
    ),
    (v4(169, 254, 0, 0, 16), "link-local"),
    (v4(172, 16, 0, 0, 12), "private (RFC 1918)"),
    (v4(192, 0, 0, 0, 24), "IETF protocol assignments (RFC 6890)"),
    (v4(192, 0, 2, 0, 24), "documentation (RFC 5737)"),
    (v4(192, 88, 99, 0, 24), "6to4 relay anycast (RFC 7526)"),
    (v4(192, 168, 0, 0, 16), "private (RFC 1918)"),
    (v4(198, 18, 0, 0, 15), "benchmarking (RFC 2544)"),
    (v4(198, 51, 100, 0, 24), "documentation (RFC 5737)"),
    (v4(203, 0, 113, 0, 24), "documentation (RFC 5737)"),
    (v4(224, 0, 0, 0, 4), "multicast"),
    (v4(255, 255, 255, 255, 32), "broadcast"),
    (v4(240, 0, 0, 0, 4), "reserved (RFC 1112)"),
];

/// IPv6 ranges refused outright, first match wins (IANA IPv6 Special-Purpose
/// Address Registry). Forms that embed an IPv4 address and reach it
/// (IPv4-mapped, NAT64 64:ff9b::/96, 6to4) are not here: `non_public_v6`
/// judges them by that address. Anything outside 2000::/3 that no row names is
/// refused too (see `non_public_v6`).
///
/// 2001::/23 (IETF protocol assignments) is refused whole. The registry marks
/// a few of its blocks globally reachable (2001:1::1 and 2001:1::2 anycast,
/// 2001:3::/32 AMT, 2001:4:112::/48 AS112, 2001:20::/28 ORCHIDv2), but none of
/// them is where a webhook receiver lives, and ORCHIDs are identifiers, not
/// locators.
const V6_RANGES: &[(Ipv6Net, &str)] = &[
    (v6([0, 0, 0, 0, 0, 0, 0, 0], 128), "unspecified"),
    (v6([0, 0, 0, 0, 0, 0, 0, 1], 128), "loopback"),
    (
        v6([0, 0, 0, 0, 0xffff, 0, 0, 0], 96),
        "IPv4-translated (RFC 2765)",
    ),
    (
        v6([0, 0, 0, 0, 0, 0, 0, 0], 96),
        "IPv4-compatible (deprecated, RFC 4291)",
    ),
    (
        v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48),
        "local-use NAT64 (RFC 8215)",
    ),
    (
        v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64),
        "discard-only (RFC 6666)",
    ),
    (v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32), "Teredo (RFC 4380)"),
    (
        v6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48),
        "benchmarking (RFC 5180)",
    ),
    (
        v6([0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28),
        "ORCHID (deprecated, RFC 4843)",
    ),
    (
        v6([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28),
        "ORCHIDv2 (RFC 7343)",
    ),
    (
        v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23),
        "IETF protocol assignments (RFC 2928)",
    ),
    (
        v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32),
        "documentation (RFC 3849)",
    ),
    (
        v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20),
        "documentation (RFC 9637)",
    ),
    (
        v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16),
        "segment routing SIDs (RFC 9602)",
    ),
    (
        v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),
        "unique-local (RFC 4193)",
    ),
    (v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), "link-local"),
    (
        v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10),
        "site-local (deprecated, RFC 3879)",
    ),
    (v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), "multicast"),
];

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

const fn v6(s: [u16; 8], len: u8) -> Ipv6Net {
    Ipv6Net::new_assert(
        Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]),
        len,
    )
}

/// Why `ip` is not publicly routable ("loopback", "private (RFC 1918)",
/// "carrier-grade NAT (RFC 6598)", "IPv4-mapped 127.0.0.1, loopback" …), or
/// None when it is. IPv6 forms that embed an IPv4 address are judged by that
/// address where that is how the address is reached (IPv4-mapped, NAT64
/// 64:ff9b::/96, 6to4 2002::/16) and named for it; the others (IPv4-translated,
/// IPv4-compatible, local-use NAT64, Teredo) are refused whole.
pub fn non_public_reason(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4).map(str::to_owned),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

/// True for addresses reachable on the public internet:
/// `non_public_reason(ip).is_none()`.
pub fn is_public_ip(ip: IpAddr) -> bool {
    non_public_reason(ip).is_none()
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    V4_RANGES
        .iter()
        .find(|(net, _)| net.contains(&ip))
        .map(|&(_, why)| why)
}

fn non_public_v6(ip: Ipv6Addr) -> Option<String> {
    let seg = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // Reached through the embedded IPv4 address: a dual-stack socket connects
    // to it (mapped), the operator's NAT64 gateway does (RFC 6052 well-known
    // prefix), or a 6to4 relay does (RFC 3056).
    let via = if let Some(v4) = ip.to_ipv4_mapped() {
        Some(("IPv4-mapped", v4))
    } else if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(("NAT64 (RFC 6052)", embedded(seg[6], seg[7])))
    } else if seg[0] == 0x2002 {
        Some(("6to4 (RFC 3056)", embedded(seg[1], seg[2])))
    } else {
        None
    };
    if let Some((form, v4)) = via {
        return non_public_v4(v4).map(|why| format!("{form} {v4}, {why}"));
    }
    if let Some((_, why)) = V6_RANGES.iter().find(|(net, _)| net.contains(&ip)) {
        return Some((*why).to_owned());
    }
    // Global unicast is 2000::/3; IANA has allocated nothing public outside it.
    if seg[0] & 0xe000 != 0x2000 {
        return Some("reserved by the IETF (outside global unicast 2000::/3)".to_owned());
    }
    None
}

/// Parses and checks a `callback_url` and returns its normalised serialisation
/// (WHATWG URL, `Url::as_str`), which is what hds stores, returns and sends:
/// `https://example.com\@127.0.0.1/` becomes `https://example.com/@127.0.0.1/`,
/// so no other parser can read another host into it later.
///
/// Refused: a scheme other than https (http too with `allow_private`),
/// credentials, a fragment (never sent to the receiver, so a URL that needs one
/// cannot work; Stripe refuses them too), and unless `allow_private`, an IP
/// host for which `non_public_reason` gives a reason, or a name that is local
/// by construction (`localhost`, `*.localhost`, `*.local`, `*.internal`, a
/// single label). Names are judged again, by every address they resolve to,
/// at delivery time.
pub fn normalise_callback_url(raw: &str, allow_private: bool) -> Result<String, String> {
    if raw.len() > MAX_URL {
        return Err(format!(
            "callback_url is {} bytes long; at most {MAX_URL}",
            raw.len()
        ));
    }
    let u = Url::parse(raw).map_err(|e| {
        format!("callback_url is not a valid absolute URL ({e}); send e.g. https://hooks.example.com/hds")
    })?;
    if u.scheme() != "https" && !(allow_private && u.scheme() == "http") {
        let allowed = if allow_private {
            "http or https"
        } else {
            "https"
        };
        return Err(format!(
            "callback_url must use {allowed}, not `{}:`",
            u.scheme()
        ));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(
            "callback_url must not carry credentials (user:password@); verify deliveries with the Source's webhook secret instead"
                .into(),
        );
    }
    if u.fragment().is_some() {
        return Err(
            "callback_url must not have a fragment (#…): it is never sent to the receiver; remove it".into(),
        );
    }
    let host = u.host().ok_or("callback_url needs a host")?;
    if u.port() == Some(0) {
        return Err("callback_url has port 0, which nothing can listen on; give the receiver's port or none (443 for https)".into());
    }
    if !allow_private {
        check_host(host)?;
    }
    // Stored and sent normalised, which may be longer than what was sent
    // (percent-encoding, punycode): the limit holds for what is kept.
    if u.as_str().len() > MAX_URL {
        return Err(format!(
            "callback_url is {} bytes long once normalised; at most {MAX_URL}",
            u.as_str().len()
        ));
    }
    Ok(u.as_str().to_owned())
}

/// `normalise_callback_url` without the result, for callers that only check.
pub fn check_callback_url(raw: &str, allow_private: bool) -> Result<(), String> {
    normalise_callback_url(raw, allow_private).map(drop)
}

fn check_host(host: Host<&str>) -> Result<(), String> {
    let ip = match host {
        Host::Ipv4(v4) => IpAddr::V4(v4),
        Host::Ipv6(v6) => IpAddr::V6(v6),
        Host::Domain(name) => {
            // `localhost.` and `localhost` are the same name. The parser has
            // already lowercased it and turned IPv4 spellings (0x7f.1, 2130706433)
            // into `Host::Ipv4`.
            let name = name.trim_end_matches('.');
            if name == "localhost"
                || name.ends_with(".localhost")
                || name.ends_with(".local")
                || name.ends_with(".internal")
                || !name.contains('.')
            {
                return Err(format!(
                    "callback_url host `{name}` is a local name, not reachable from the internet; use a public host name"
                ));
            }
            return Ok(());
        }
    };
    match non_public_reason(ip) {
        Some(why) => Err(format!(
            "callback_url host {ip} is not a public address ({why}); use a public host"
        )),
        None => Ok(()),
    }
}

pub fn is_http_url(raw: &str) -> bool {
    Url::parse(raw).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

/// Whether a URL carries a `user:password@` part. A link a reviewer opens
/// must not: `https://bank.example.com@evil.example/` reads as the bank and
/// opens evil.example.
pub fn has_credentials(raw: &str) -> bool {
    Url::parse(raw).is_ok_and(|u| !u.username().is_empty() || u.password().is_some())
}

/// What a link field is told when its URL carries credentials.
pub fn credentials_refused(field: &str) -> String {
    format!(
        "{field} must not carry a user:password@ part: a link such as https://bank.example.com@evil.example/ shows one host and opens another"
    )
}

/// The longest URL an Action takes (`open_url`, `callback_url`, a link
/// control's or context block's `url`), in bytes (guide: "Limits"). Browsers
/// and proxies commonly stop near 2,000; every read and webhook repeats it.
pub const MAX_URL: usize = 2048;

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(ip: &str) -> Option<String> {
        non_public_reason(ip.parse().unwrap())
    }

    /// Each refused class, by an address in it, and the reason it is named for.
    #[test]
    fn every_non_public_class_is_named() {
        for (ip, why) in [
            ("0.1.2.3", "\"this network\""),
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.1.2.3", "private (RFC 1918)"),
            ("172.16.0.1", "private (RFC 1918)"),
            ("172.31.255.255", "private (RFC 1918)"),
            ("192.168.1.1", "private (RFC 1918)"),
            ("169.254.169.254", "cloud metadata"),
            ("169.254.0.1", "link-local"),
            ("100.64.0.1", "carrier-grade NAT (RFC 6598)"),
            ("100.127.255.254", "carrier-grade NAT (RFC 6598)"),
            ("255.255.255.255", "broadcast"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("192.0.2.1", "documentation"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.9", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.1", "benchmarking"),
            ("192.0.0.8", "IETF protocol assignments"),
            ("240.0.0.1", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("ff02::1", "multicast"),
            ("fc00::1", "unique-local"),
            ("fd00:ec2::254", "unique-local"),
            ("fe80::1", "link-local"),
            ("fec0::1", "site-local"),
            ("2001:db8::1", "documentation (RFC 3849)"),
            ("3fff::1", "documentation (RFC 9637)"),
            ("100::1", "discard-only (RFC 6666)"),
            ("::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1, loopback"),
            (
                "::ffff:169.254.169.254",
                "IPv4-mapped 169.254.169.254, link-local",
            ),
            ("::ffff:0:7f00:1", "IPv4-translated (RFC 2765)"),
            ("::ffff:0:808:808", "IPv4-translated (RFC 2765)"),
            ("::127.0.0.1", "IPv4-compatible"),
            ("::8.8.8.8", "IPv4-compatible"),
            ("64:ff9b::7f00:1", "NAT64 (RFC 6052) 127.0.0.1, loopback"),
            (
                "64:ff9b::a9fe:a9fe",
                "NAT64 (RFC 6052) 169.254.169.254, link-local",
            ),
            ("64:ff9b:1::a9fe:a9fe", "local-use NAT64 (RFC 8215)"),
            ("64:ff9b:1::808:808", "local-use NAT64 (RFC 8215)"),
            ("2002:7f00:1::", "6to4 (RFC 3056) 127.0.0.1, loopback"),
            ("2002:a00:1::1", "6to4 (RFC 3056) 10.0.0.1, private"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo (RFC 4380)"),
            ("2001:2::1", "benchmarking (RFC 5180)"),
            ("2001:10::1", "ORCHID"),
            ("2001:20::1", "ORCHIDv2"),
            ("2001:1::1", "IETF protocol assignments"),
            ("2001:4:112::1", "IETF protocol assignments"),
            ("5f00::1", "segment routing"),
            ("4000::1", "outside global unicast"),
            ("64:ff9b:2::1", "outside global unicast"),
        ] {
            let got = reason(ip).unwrap_or_else(|| panic!("{ip} passed as public"));
            assert!(got.contains(why), "{ip}: {got:?} does not name {why:?}");
            assert!(!is_public_ip(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn public_addresses_pass_and_embedded_ones_by_their_ipv4() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "169.253.1.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001:82a::200e",
            "2001:200::1", // just past 2001::/23
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(reason(ip), None, "{ip}");
            assert!(is_public_ip(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn callback_urls_on_non_public_hosts_are_refused() {
        for bad in [
            "https://[::ffff:0:7f00:1]/",
            "https://[64:ff9b:1::a9fe:a9fe]/",
            "https://[100::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            "https://127.0.0.1/h",
            "https://0x7f.1/",
            "https://2130706433/",
            "https://10.1.2.3/",
            "https://[::1]/",
            "https://169.254.169.254/latest/meta-data/",
            "https://100.64.0.1/",
            "https://[::127.0.0.1]/",
            "https://[64:ff9b::a00:1]/",
            "https://[2002:7f00:1::]/",
            "https://[fec0::1]/",
            "https://[fd00::1]/",
            "https://[fe80::1]/",
            "https://224.0.0.1/",
            "https://localhost/",
            "https://LOCALHOST./",
            "https://app.localhost/",
            "https://printer.local/",
            "https://db.internal./",
            "https://intranet/",
        ] {
            let err = normalise_callback_url(bad, false).expect_err(bad);
            assert!(err.starts_with("callback_url host"), "{bad}: {err}");
        }
    }

    #[test]
    fn callback_urls_without_https_credentials_or_with_a_fragment_are_refused() {
        for (bad, why) in [
            ("http://example.com/h", "must use https"),
            ("ftp://example.com/h", "must use https"),
            ("https://user:pw@example.com/h", "credentials"),
            ("https://user@example.com/h", "credentials"),
            ("https://example.com/h#frag", "fragment"),
            ("https://example.com/h#", "fragment"),
            ("https://1.1.1.1:0/h", "port 0"),
            ("/relative/path", "not a valid absolute URL"),
            ("https://", "not a valid absolute URL"),
        ] {
            let err = normalise_callback_url(bad, false).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
        // For development, http is allowed too, and the refusal says so.
        let err = normalise_callback_url("ftp://127.0.0.1/h", true).expect_err("ftp");
        assert!(err.contains("must use http or https, not `ftp:`"), "{err}");
    }

    /// What is stored and sent is the WHATWG serialisation: a backslash is a
    /// path separator, so the `@…` part is path, not the host.
    #[test]
    fn the_normalised_url_is_what_the_parser_read() {
        for (raw, normal) in [
            (
                r"https://example.com\@127.0.0.1/",
                "https://example.com/@127.0.0.1/",
            ),
            ("https://Hooks.Example.COM", "https://hooks.example.com/"),
            (
                "https://hooks.example.com:443/a/../b",
                "https://hooks.example.com/b",
            ),
            (
                "https://hooks.example.com/a b",
                "https://hooks.example.com/a%20b",
            ),
            ("https://bücher.example/", "https://xn--bcher-kva.example/"),
            ("https://[2606:4700:0::1111]/", "https://[2606:4700::1111]/"),
        ] {
            assert_eq!(
                normalise_callback_url(raw, false).as_deref(),
                Ok(normal),
                "{raw}"
            );
        }
    }

    #[test]
    fn allow_private_accepts_http_and_private_hosts() {
        assert_eq!(
            normalise_callback_url("http://127.0.0.1:9/x", true).as_deref(),
            Ok("http://127.0.0.1:9/x")
        );
        assert!(normalise_callback_url("https://[::ffff:0:7f00:1]/", true).is_ok());
        assert!(normalise_callback_url("https://localhost/", true).is_ok());
        // Still a URL, still without credentials or a fragment.
        assert!(normalise_callback_url("ftp://127.0.0.1/", true).is_err());
        assert!(normalise_callback_url("http://u:p@127.0.0.1/", true).is_err());
        assert!(normalise_callback_url("http://127.0.0.1/#x", true).is_err());
        assert!(check_callback_url("https://hooks.example.com/x", false).is_ok());
    }
}
