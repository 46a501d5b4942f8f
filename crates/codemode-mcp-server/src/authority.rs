//! The strict checks of a request's `Host`, its target's authority and its `Origin`, made
//! before rmcp's own: rmcp reads only the first `Host` and `Origin` header, never the authority
//! of an absolute-form target, and parses an origin leniently (`http://localhost:1.evil.com`
//! passes as `localhost` with no port). Here a request carries exactly one `Host`, at most one
//! `Origin`, and every authority it names is parsed to the letter and must be allowed.

use std::net::Ipv6Addr;

/// A host name (lower case, IPv6 without brackets) and its port, if one was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Authority {
    host: String,
    port: Option<u16>,
}

/// An allowed `Origin`: scheme, host and port (`None`: any port, the `:*` of an entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedOrigin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

/// `http` and `https` only; the port an origin without one implies (RFC 6454 §4).
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A host name of letters, digits, `-` and `.` (which covers IPv4 addresses), or a bracketed
/// IPv6 address; with an optional `:port` of digits. Nothing else: no user info, no path, no
/// empty port, no trailing text.
pub(crate) fn parse_authority(text: &str) -> Option<Authority> {
    let (host, rest) = if let Some(bracketed) = text.strip_prefix('[') {
        let (inside, rest) = bracketed.split_once(']')?;
        let address: Ipv6Addr = inside.parse().ok()?;
        (address.to_string(), rest)
    } else {
        let end = text.find(':').unwrap_or(text.len());
        let (name, rest) = text.split_at(end);
        let valid = !name.is_empty()
            && name.len() <= 253
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        if !valid {
            return None;
        }
        (name.to_ascii_lowercase(), rest)
    };
    let port = match rest {
        "" => None,
        _ => Some(parse_port(rest.strip_prefix(':')?)?),
    };
    Some(Authority { host, port })
}

/// An entry of the allowed hosts: `name`, `name:port`, `[v6]`, `[v6]:port` or a bare IPv6
/// address (`::1`). An entry without a port allows any port.
pub(crate) fn parse_allowed_host(entry: &str) -> Option<Authority> {
    let entry = entry.trim();
    if let Ok(address) = entry.parse::<Ipv6Addr>() {
        return Some(Authority {
            host: address.to_string(),
            port: None,
        });
    }
    parse_authority(entry)
}

/// Whether `authority` is one of `allowed` (an empty list allows every host, as rmcp's does).
pub(crate) fn host_allowed(authority: &Authority, allowed: &[Authority]) -> bool {
    allowed.is_empty()
        || allowed.iter().any(|entry| {
            entry.host == authority.host
                && entry.port.is_none_or(|port| authority.port == Some(port))
        })
}

/// An `Origin` value: `http` or `https`, `://`, an authority, and nothing after it. The port
/// an origin leaves out is its scheme's default.
pub(crate) fn parse_origin(text: &str) -> Option<AllowedOrigin> {
    let (scheme, authority) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default = default_port(&scheme)?;
    let authority = parse_authority(authority)?;
    Some(AllowedOrigin {
        scheme,
        host: authority.host,
        port: Some(authority.port.unwrap_or(default)),
    })
}

/// An entry of the allowed origins: an origin, or an origin without a port followed by `:*`
/// (any port).
pub(crate) fn parse_allowed_origin(entry: &str) -> Option<AllowedOrigin> {
    let entry = entry.trim();
    if let Some(base) = entry.strip_suffix(":*") {
        let (scheme, authority) = base.split_once("://")?;
        let parsed = parse_authority(authority)?;
        if parsed.port.is_some() {
            return None;
        }
        let scheme = scheme.to_ascii_lowercase();
        default_port(&scheme)?;
        return Some(AllowedOrigin {
            scheme,
            host: parsed.host,
            port: None,
        });
    }
    parse_origin(entry)
}

/// Whether `origin` is one of `allowed`.
pub(crate) fn origin_allowed(origin: &AllowedOrigin, allowed: &[AllowedOrigin]) -> bool {
    allowed.iter().any(|entry| {
        entry.scheme == origin.scheme
            && entry.host == origin.host
            && (entry.port.is_none() || entry.port == origin.port)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_parse_to_the_letter() {
        for good in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]",
            "[::1]:65535",
        ] {
            assert!(parse_authority(good).is_some(), "{good}");
        }
        for bad in [
            "",
            "localhost:",
            "localhost:abc",
            "localhost:65536",
            "localhost:8080.evil.com",
            "localhost/path",
            "user@localhost",
            "[::1",
            "[::1]x",
            "[evil]",
            "local host",
        ] {
            assert!(parse_authority(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn origins_parse_to_the_letter() {
        let loopback: Vec<AllowedOrigin> = ["http://localhost:*", "https://[::1]:*"]
            .iter()
            .filter_map(|entry| parse_allowed_origin(entry))
            .collect();
        assert_eq!(loopback.len(), 2);
        for good in [
            "http://localhost",
            "http://localhost:3000",
            "https://[::1]:8443",
        ] {
            let origin = parse_origin(good).expect(good);
            assert!(origin_allowed(&origin, &loopback), "{good}");
        }
        for bad in [
            "http://localhost:3000.evil.com",
            "http://localhost:abc",
            "http://localhost/path",
            "http://localhost:3000/",
            "ftp://localhost",
            "localhost",
            "http://evil@localhost",
        ] {
            assert!(parse_origin(bad).is_none(), "{bad}");
        }
        let evil = parse_origin("https://localhost.evil.com").expect("parses");
        assert!(!origin_allowed(&evil, &loopback));
        let exact = [parse_allowed_origin("https://app.example.com").expect("entry")];
        assert!(origin_allowed(
            &parse_origin("https://app.example.com:443").expect("o"),
            &exact
        ));
        assert!(!origin_allowed(
            &parse_origin("https://app.example.com:444").expect("o"),
            &exact
        ));
    }
}
