//! URL rules: what counts as an http(s) link, and which callback hosts are
//! refused so that hds never calls into a private network (SSRF; guide: "POST /v1/actions", `callback_url`).

use std::net::IpAddr;

/// `callback_url` must be https and must not point at a loopback, private,
/// link-local or otherwise internal host (no SSRF). Names are checked
/// again after DNS resolution at delivery time.
pub fn check_callback_url(raw: &str, allow_private: bool) -> Result<(), String> {
    let u = url::Url::parse(raw).map_err(|e| format!("callback_url is not a valid URL: {e}"))?;
    if u.scheme() != "https" && !(allow_private && u.scheme() == "http") {
        return Err("callback_url must use https".into());
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err("callback_url must not carry credentials".into());
    }
    let host = u.host_str().ok_or("callback_url needs a host")?;
    if allow_private {
        return Ok(());
    }
    // `localhost.` and `localhost` are the same name.
    let host = host.trim_end_matches('.');
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        if !is_public_ip(ip) {
            return Err(format!("callback_url host {ip} is not a public address"));
        }
    } else if host == "localhost"
        || host.ends_with(".localhost")
        || host.ends_with(".local")
        || host.ends_with(".internal")
        || !host.contains('.')
    {
        return Err(format!(
            "callback_url host `{host}` is not publicly reachable"
        ));
    }
    Ok(())
}

/// True for addresses reachable on the public internet. IPv6 forms that embed
/// an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by that address.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_unspecified()
                || v4.is_documentation()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64/10 carrier-grade NAT
                || (o[0] == 198 && (o[1] & 0xfe) == 18) // 198.18/15 benchmarking
                || (o[0] == 192 && o[1] == 0 && o[2] == 0) // 192.0.0/24 protocol assignments
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            let seg = v6.segments();
            let v4_at = |hi: u16, lo: u16| {
                IpAddr::V4(std::net::Ipv4Addr::from(
                    (u32::from(hi) << 16) | u32::from(lo),
                ))
            };
            if v6.is_loopback() || v6.is_unspecified() || v6.is_multicast() {
                return false;
            }
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_ip(IpAddr::V4(v4));
            }
            if seg[..6] == [0; 6] {
                return is_public_ip(v4_at(seg[6], seg[7])); // ::a.b.c.d (IPv4-compatible)
            }
            if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0; 4] {
                return is_public_ip(v4_at(seg[6], seg[7])); // 64:ff9b::/96 NAT64
            }
            if seg[0] == 0x2002 {
                return is_public_ip(v4_at(seg[1], seg[2])); // 2002::/16 6to4
            }
            !((seg[0] & 0xfe00) == 0xfc00 // unique local
                || (seg[0] & 0xffc0) == 0xfe80 // link local
                || (seg[0] & 0xffc0) == 0xfec0 // site local (deprecated)
                || (seg[0] == 0x2001 && seg[1] == 0x0db8)) // documentation
        }
    }
}

pub fn is_http_url(raw: &str) -> bool {
    url::Url::parse(raw)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_callback_hosts_are_refused() {
        for bad in [
            "http://example.com/h",
            "https://127.0.0.1/h",
            "https://10.1.2.3/",
            "https://[::1]/",
            "https://localhost/",
            "https://169.254.169.254/",
            "https://[::127.0.0.1]/",
            "https://[64:ff9b::a00:1]/",
            "https://[2002:7f00:1::]/",
            "https://[fec0::1]/",
            "https://224.0.0.1/",
            "https://localhost./",
            "https://db.internal./",
        ] {
            assert!(check_callback_url(bad, false).is_err(), "{bad}");
        }
        assert!(check_callback_url("https://hooks.example.com/x", false).is_ok());
        assert!(check_callback_url("http://127.0.0.1:9/x", true).is_ok());
    }
}
