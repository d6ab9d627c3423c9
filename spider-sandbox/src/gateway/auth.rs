//! Proxy-Authorization: Basic credentials and the provider username template.
//!
//! Rotating-proxy providers carry targeting in the username:
//! `{user}-country-{geo}-session-{id}`, each part optional. The gateway reads the same
//! template, so a crawler's proxy configuration is exercised as it would be in production.

use hyper::header::HeaderValue;

use super::GatewayConfig;

/// What an accepted username asked for.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Claims {
    /// The exit country, lower-cased.
    pub(crate) country: Option<String>,
    /// The sticky-session id.
    pub(crate) session: Option<String>,
}

/// The claims of a Proxy-Authorization header whose base user and password match
/// `config`; `None` for anything else, which the gateway answers with 407.
pub(crate) fn authenticate(header: Option<&HeaderValue>, config: &GatewayConfig) -> Option<Claims> {
    let value = header?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(decode_base64(encoded.trim())?).ok()?;
    let (username, password) = decoded.split_once(':')?;
    if password != config.password {
        return None;
    }
    claims(username.strip_prefix(config.user.as_str())?)
}

/// Read the `-country-X` and `-session-Y` parts after the base user; any other part,
/// a repeated one or an empty value is a wrong username.
fn claims(rest: &str) -> Option<Claims> {
    let mut claims = Claims::default();
    if rest.is_empty() {
        return Some(claims);
    }
    let mut parts = rest.strip_prefix('-')?.split('-');
    while let Some(key) = parts.next() {
        let value = parts.next().filter(|v| !v.is_empty())?;
        let slot = match key {
            "country" => &mut claims.country,
            "session" => &mut claims.session,
            _ => return None,
        };
        if slot.replace(value.to_owned()).is_some() {
            return None;
        }
    }
    claims.country = claims.country.map(|c| c.to_ascii_lowercase());
    Some(claims)
}

/// Standard base64 (RFC 4648, padding optional); `None` on any other character.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for byte in text.trim_end_matches('=').bytes() {
        let sextet = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(sextet);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(value: &str) -> HeaderValue {
        HeaderValue::from_str(value).unwrap_or_else(|e| panic!("{e}"))
    }

    fn claims_of(credentials: &str) -> Option<Claims> {
        // base64 of the credentials, computed by hand for the few the tests use.
        let encoded = match credentials {
            "sandbox:sandbox-s3cret" => "c2FuZGJveDpzYW5kYm94LXMzY3JldA==",
            "sandbox-country-DE-session-abc:sandbox-s3cret" => {
                "c2FuZGJveC1jb3VudHJ5LURFLXNlc3Npb24tYWJjOnNhbmRib3gtczNjcmV0"
            }
            "sandbox:wrong" => "c2FuZGJveDp3cm9uZw==",
            other => panic!("no encoding for {other}"),
        };
        authenticate(Some(&header(&format!("Basic {encoded}"))), &GatewayConfig::default())
    }

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(decode_base64("c2FuZGJveDp3cm9uZw==").as_deref(), Some(&b"sandbox:wrong"[..]));
        assert_eq!(decode_base64("c2FuZGJveDp3cm9uZw").as_deref(), Some(&b"sandbox:wrong"[..]));
        assert_eq!(decode_base64("YQ").as_deref(), Some(&b"a"[..]));
        assert_eq!(decode_base64("a b"), None);
    }

    #[test]
    fn the_base_user_with_the_password_is_accepted() {
        assert_eq!(claims_of("sandbox:sandbox-s3cret"), Some(Claims::default()));
        assert_eq!(claims_of("sandbox:wrong"), None);
        assert_eq!(authenticate(None, &GatewayConfig::default()), None);
        assert_eq!(authenticate(Some(&header("Bearer c2FuZGJveA==")), &GatewayConfig::default()), None);
    }

    #[test]
    fn country_and_session_come_from_the_username() {
        let claims = claims_of("sandbox-country-DE-session-abc:sandbox-s3cret");
        assert_eq!(claims, Some(Claims { country: Some("de".into()), session: Some("abc".into()) }));
    }

    #[test]
    fn the_username_template_is_strict() {
        assert_eq!(claims(""), Some(Claims::default()));
        assert_eq!(claims("-session-a-country-us").and_then(|c| c.country), Some("us".into()));
        for wrong in ["x", "-country", "-country-", "-city-paris", "-session-a-session-b", "-country-de-"] {
            assert_eq!(claims(wrong), None, "{wrong}");
        }
    }
}
