//! The address check of `web_fetch` (server-side request forgery): a page
//! the model names must not reach the user's machine, their network or a
//! cloud metadata service. A host is resolved first and every address it
//! resolves to is checked; the connection then goes only to the addresses
//! that passed (see `WebFetchTool`), so a second, different DNS answer
//! cannot slip in between check and connect.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why `ip` may not be fetched, or `None` for a public address.
pub fn refused(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => {
            // ::ffff:a.b.c.d reaches the IPv4 host a.b.c.d.
            if let Some(v4) = v6.to_ipv4_mapped() {
                return refused_v4(v4);
            }
            refused_v6(v6)
        }
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        // 169.254.169.254 is the metadata service of AWS, GCP and Azure.
        Some("a link-local address (cloud metadata lives here)")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a carrier-grade NAT address (100.64.0.0/10)")
    } else if ip.is_unspecified() || a == 0 {
        Some("an unspecified address (0.0.0.0/8)")
    } else if ip.is_broadcast() || a >= 224 {
        Some("a multicast, broadcast or reserved address")
    } else if a == 192 && b == 0 && c == 0 {
        Some("an IETF protocol address (192.0.0.0/24)")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("a benchmarking address (198.18.0.0/15)")
    } else {
        None
    }
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if first & 0xfe00 == 0xfc00 {
        // fd00:ec2::254 is AWS's IPv6 metadata service.
        Some("a unique-local address (fc00::/7)")
    } else if first & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if first & 0xff00 == 0xff00 {
        Some("a multicast address")
    } else if ip.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64 (64:ff9b::/96) reaches the IPv4 address in its last bits.
        let [.., g, h] = ip.segments();
        refused_v4(Ipv4Addr::new(
            (g >> 8) as u8,
            g as u8,
            (h >> 8) as u8,
            h as u8,
        ))
    } else {
        None
    }
}

/// Resolves `host` (a name or an IP literal, brackets allowed) for `port`
/// and returns the addresses that pass the check, or why none does.
pub async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .collect(),
    };
    let mut reasons = Vec::new();
    let allowed: Vec<SocketAddr> = addrs
        .into_iter()
        .filter(|addr| match refused(addr.ip()) {
            Some(why) => {
                reasons.push(format!("{} is {why}", addr.ip()));
                false
            }
            None => true,
        })
        .collect();
    if allowed.is_empty() {
        let why = match reasons.is_empty() {
            true => "it has no address".to_owned(),
            false => reasons.join(", "),
        };
        return Err(format!(
            "refused to fetch from {host}: {why}; web_fetch reaches public addresses only \
             (set \"web_fetch.allow_private\": true in $ZOT_HOME/config.json to allow these)"
        ));
    }
    Ok(allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_refused_public_ones_pass() {
        for refused_ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
        ] {
            let ip: IpAddr = refused_ip.parse().unwrap();
            assert!(refused(ip).is_some(), "{refused_ip} should be refused");
        }
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "100.128.0.1",
            "2606:2800:220:1::248",
            "::ffff:8.8.8.8",
        ] {
            let ip: IpAddr = public.parse().unwrap();
            assert_eq!(refused(ip), None, "{public} should pass");
        }
    }

    #[tokio::test]
    async fn names_are_checked_after_resolution() {
        let err = resolve("localhost", 80).await.unwrap_err();
        assert!(err.contains("is a loopback address"), "{err}");
        assert!(err.contains("web_fetch.allow_private"), "{err}");
        let ok = resolve("[2606:2800:220:1::248]", 443).await.unwrap();
        assert_eq!(ok[0].port(), 443);
    }
}
