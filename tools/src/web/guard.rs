//! The SSRF guard of `web_fetch`: which URLs may be fetched and which addresses may be
//! connected to. Every hop of a fetch goes through [`Guard::check`], which resolves the host
//! itself and hands back the only addresses the connection may use.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use url::{Host, Url};

/// Turns a host name into addresses. Replaceable so tests can map names without DNS.
pub trait Resolver: Send + Sync {
    fn lookup(&self, host: String, port: u16) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// The system resolver (through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup(&self, host: String, port: u16) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        async move {
            let addrs = tokio::net::lookup_host((host.as_str(), port)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        }
        .boxed()
    }
}

/// One `web.allowPrivate` entry: an address or CIDR, or a host name, optionally with a port.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AllowTarget {
    Net { addr: IpAddr, prefix: u8 },
    Name(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct AllowEntry {
    target: AllowTarget,
    port: Option<u16>,
}

/// The user's `web.allowPrivate` list: private hosts and networks `web_fetch` may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowPrivate {
    entries: Vec<AllowEntry>,
}

impl AllowPrivate {
    /// Parses the entries (`127.0.0.1:8080`, `10.0.0.0/8`, `[::1]:3000`, `intranet.lan`);
    /// an entry that is none of these is an error naming it.
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        let entries = entries
            .iter()
            .map(|e| {
                parse_entry(e.trim())
                    .ok_or_else(|| format!("`{e}` is not an address, CIDR or host[:port]"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { entries })
    }

    /// Whether `url`'s host and port are on the list (by address or by name, as written in
    /// the URL, without resolving it): `web_search` sends an API key over plain http only to
    /// such a host.
    pub fn allows_url(&self, url: &Url) -> bool {
        let port = url.port_or_known_default().unwrap_or(80);
        match url.host() {
            Some(Host::Ipv4(v4)) => self.allows_addr(IpAddr::V4(v4), port),
            Some(Host::Ipv6(v6)) => self.allows_addr(IpAddr::V6(v6), port),
            Some(Host::Domain(name)) => self.allows_name(name.trim_end_matches('.'), port),
            None => false,
        }
    }

    fn allows_addr(&self, ip: IpAddr, port: u16) -> bool {
        self.entries.iter().any(|e| {
            e.port.is_none_or(|p| p == port)
                && matches!(e.target, AllowTarget::Net { addr, prefix } if in_net(ip, addr, prefix))
        })
    }

    fn allows_name(&self, host: &str, port: u16) -> bool {
        self.entries.iter().any(|e| {
            e.port.is_none_or(|p| p == port)
                && matches!(&e.target, AllowTarget::Name(n) if n.eq_ignore_ascii_case(host))
        })
    }
}

fn parse_entry(entry: &str) -> Option<AllowEntry> {
    if let Some((net, prefix)) = entry.split_once('/') {
        let addr: IpAddr = net.trim_matches(['[', ']']).parse().ok()?;
        let prefix: u8 = prefix.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        return (prefix <= max).then_some(AllowEntry {
            target: AllowTarget::Net { addr, prefix },
            port: None,
        });
    }
    if let Ok(addr) = entry.parse::<IpAddr>() {
        let prefix = if addr.is_ipv4() { 32 } else { 128 };
        return Some(AllowEntry {
            target: AllowTarget::Net { addr, prefix },
            port: None,
        });
    }
    if let Ok(sock) = entry.parse::<std::net::SocketAddr>() {
        let prefix = if sock.is_ipv4() { 32 } else { 128 };
        return Some(AllowEntry {
            target: AllowTarget::Net {
                addr: sock.ip(),
                prefix,
            },
            port: Some(sock.port()),
        });
    }
    let (name, port) = match entry.rsplit_once(':') {
        Some((name, port)) => (name, Some(port.parse().ok()?)),
        None => (entry, None),
    };
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    valid.then(|| AllowEntry {
        target: AllowTarget::Name(name.to_ascii_lowercase()),
        port,
    })
}

fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Host names that lead to the machine itself or to a cloud's metadata service.
const BLOCKED_NAMES: &[&str] = &[
    "localhost",
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
];

/// A hop that may be fetched: the URL (upgraded to https when needed) and the only
/// addresses the connection may use.
#[derive(Debug, Clone)]
pub struct CheckedHop {
    pub url: Url,
    pub host: String,
    pub addrs: Vec<IpAddr>,
}

/// Decides whether a URL may be fetched.
#[derive(Clone)]
pub struct Guard {
    pub allow: AllowPrivate,
    pub resolver: Arc<dyn Resolver>,
}

impl Guard {
    /// Checks `url` and resolves its host once: `Err` names the rule that refused it.
    pub async fn check(&self, mut url: Url) -> Result<CheckedHop, String> {
        match url.scheme() {
            "http" | "https" => {}
            other => {
                return Err(format!(
                    "refused: only http and https URLs are fetched, not `{other}:`"
                ));
            }
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("refused: URLs with credentials (user:password@) are not fetched".into());
        }
        let port = url.port_or_known_default().unwrap_or(443);
        // The url crate has already normalised IPv4 spellings (2130706433, 0x7f.1, 0177.0.0.1).
        let (host, addrs, named) = match url.host() {
            None => return Err("refused: the URL has no host".into()),
            Some(Host::Ipv4(v4)) => (v4.to_string(), vec![IpAddr::V4(v4)], false),
            Some(Host::Ipv6(v6)) => (format!("[{v6}]"), vec![IpAddr::V6(v6)], false),
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                (name, Vec::new(), true)
            }
        };
        let name_allowed = named && self.allow.allows_name(&host, port);
        let addrs = if named {
            if !name_allowed
                && (BLOCKED_NAMES.contains(&host.as_str()) || host.ends_with(".localhost"))
            {
                return Err(format!(
                    "refused: `{host}` names this machine or a cloud metadata service \
                     (allow it with `web.allowPrivate` in your user settings)"
                ));
            }
            let found = self
                .resolver
                .lookup(host.clone(), port)
                .await
                .map_err(|e| format!("could not resolve `{host}`: {e}"))?;
            if found.is_empty() {
                return Err(format!("could not resolve `{host}`: no addresses"));
            }
            found
        } else {
            addrs
        };
        let mut all_allowed_private = true;
        for &ip in &addrs {
            if let Some(rule) = metadata_rule(ip) {
                return Err(format!("refused: {ip} is {rule}"));
            }
            match blocked_rule(ip) {
                Some(rule) if !name_allowed && !self.allow.allows_addr(ip, port) => {
                    return Err(format!(
                        "refused: `{host}` resolves to {ip}, {rule} (allow it with \
                         `web.allowPrivate` in your user settings)"
                    ));
                }
                Some(_) => {}
                None => all_allowed_private = false,
            }
        }
        if url.scheme() == "http" && !all_allowed_private {
            // Plain http only to hosts the user allowed; everything else goes over TLS.
            if url.set_scheme("https").is_err() || (port == 80 && url.set_port(None).is_err()) {
                return Err("refused: could not upgrade the URL to https".into());
            }
        }
        Ok(CheckedHop { url, host, addrs })
    }
}

/// The cloud metadata addresses, refused even when the allow list covers them.
fn metadata_rule(ip: IpAddr) -> Option<&'static str> {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => {
            if v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
                return Some("a cloud metadata address (AWS IPv6)");
            }
            embedded_v4(v6)
        }
    };
    match v4 {
        Some(v4)
            if v4 == Ipv4Addr::new(169, 254, 169, 254)
                || v4 == Ipv4Addr::new(100, 100, 100, 200) =>
        {
            Some("a cloud metadata address")
        }
        _ => None,
    }
}

/// The IPv4 address inside an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 IPv6 address.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible; :: and ::1 are handled as IPv6).
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(low),
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(low),
        // 64:ff9b::/96 (NAT64) and 64:ff9b:1::/48 (local-use NAT64).
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x64, 0xff9b, 1, ..] => Some(low),
        // 2002:AABB:CCDD::/48 (6to4).
        [0x2002, a, b, ..] => Some(Ipv4Addr::new(
            (a >> 8) as u8,
            a as u8,
            (b >> 8) as u8,
            b as u8,
        )),
        _ => None,
    }
}

/// Why `ip` may not be reached without the user's allow list, or `None` for a public address.
pub fn blocked_rule(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_rule(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return v4_rule(v4)
                    .map(|_| "an IPv4-mapped, NAT64 or 6to4 form of a private address");
            }
            let s = v6.segments();
            if v6.is_loopback() {
                Some("a loopback address")
            } else if v6.is_unspecified() {
                Some("the unspecified address")
            } else if s[0] & 0xfe00 == 0xfc00 {
                Some("a unique-local address (fc00::/7)")
            } else if s[0] & 0xffc0 == 0xfe80 || s[0] & 0xffc0 == 0xfec0 {
                Some("a link-local or site-local address")
            } else if s[0] & 0xff00 == 0xff00 {
                Some("a multicast address")
            } else if s[0] == 0x2001 && s[1] == 0x0db8 {
                Some("a documentation address (2001:db8::/32)")
            } else if s[0] == 0x0100 && s[1..4] == [0, 0, 0] {
                Some("a discard-only address (100::/64)")
            } else {
                None
            }
        }
    }
}

fn v4_rule(v4: Ipv4Addr) -> Option<&'static str> {
    let o = v4.octets();
    if v4.is_loopback() {
        Some("a loopback address (127.0.0.0/8)")
    } else if v4.is_private() {
        Some("a private address (10/8, 172.16/12, 192.168/16)")
    } else if v4.is_link_local() {
        Some("a link-local address (169.254/16)")
    } else if o[0] == 100 && o[1] & 0xc0 == 64 {
        Some("a carrier-grade NAT address (100.64/10)")
    } else if v4.is_unspecified() || o[0] == 0 {
        Some("an unspecified address (0.0.0.0/8)")
    } else if v4.is_broadcast() {
        Some("the broadcast address")
    } else if v4.is_multicast() || o[0] >= 240 {
        Some("a multicast or reserved address")
    } else if v4.is_documentation() || (o[0] == 198 && (o[1] & 0xfe) == 18) {
        Some("a documentation or benchmarking address")
    } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
        Some("an IETF protocol assignment (192.0.0.0/24)")
    } else {
        None
    }
}
