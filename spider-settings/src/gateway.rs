//! A proxy gateway: where it is, the credentials it wants, and the username it is sent.
//!
//! The credentials live only here, outside the URL, so that printing a gateway (Debug,
//! Display, logs, errors, stats) can never show them.

use std::fmt;

use url::Url;

use crate::ProxyEntry;

/// One gateway of a route tier.
#[derive(Clone)]
pub struct Gateway {
    /// The gateway's address, without credentials.
    url: Url,
    user: String,
    password: String,
}

impl Gateway {
    /// Parse a gateway URL; `origin` names where it came from (a setting or a variable)
    /// for the error message, which never repeats the URL's credentials.
    ///
    /// # Errors
    ///
    /// A message saying what to write instead, which never repeats the credentials.
    pub fn parse(text: &str, origin: &str) -> Result<Self, String> {
        let shown = crate::redact_url(text);
        // A URL that does not parse may hide a password anywhere: it is not shown.
        let mut url = Url::parse(text.trim()).map_err(|e| {
            format!(
                "{origin}: a gateway URL does not parse ({e}); write http://USER:PASSWORD@HOST:PORT, \
                 percent-encoding any `@`, `/`, `?` or `#` in the password"
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!("{origin}: gateway `{shown}` is not an http:// or https:// URL with a host"));
        }
        let decode = |part: &str| percent_encoding::percent_decode_str(part).decode_utf8_lossy().into_owned();
        let user = decode(url.username());
        let password = url.password().map(decode).unwrap_or_default();
        // Infallible for http(s) URLs with a host, checked above.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        Ok(Gateway { url, user, password })
    }

    /// The username for one request: `template` with `{user}`, `{geo}` and `{session}`
    /// filled in, each missing part left out with the text just before it. `None` for a
    /// gateway without credentials: it gets no Proxy-Authorization at all.
    pub fn username(&self, template: &str, geo: Option<&str>, session: Option<&str>) -> Option<String> {
        if self.user.is_empty() && self.password.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(template.len() + self.user.len());
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(len) = rest[open..].find('}') else { break };
            let value = match &rest[open..=open + len] {
                "{user}" => Some(self.user.as_str()),
                "{geo}" => geo,
                "{session}" => session,
                _ => None,
            };
            if let Some(value) = value {
                out.push_str(&rest[..open]);
                out.push_str(value);
            }
            rest = &rest[open + len + 1..];
        }
        out.push_str(rest);
        Some(out)
    }

    /// The gateway's address, without its credentials.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The password the gateway wants with every username, for the transport's
    /// Proxy-Authorization; never print it.
    #[doc(hidden)]
    pub fn password(&self) -> &str {
        &self.password
    }
}

/// Only the address: `http://***@gw.example:8000/` when it has credentials.
impl fmt::Display for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.user.is_empty() && self.password.is_empty() {
            write!(f, "{}", self.url)
        } else {
            write!(f, "{}://***@{}", self.url.scheme(), &self.url[url::Position::BeforeHost..])
        }
    }
}

impl fmt::Debug for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Gateway").field(&format_args!("{self}")).finish()
    }
}

/// The tiers of a `proxy` setting with every gateway read: the environment variables it
/// names looked up, each URL parsed with its credentials held apart. A tier without
/// gateways is `direct`.
///
/// # Errors
///
/// A message naming the setting or the variable and what to write instead; it never
/// repeats a credential.
///
/// # Examples
///
/// ```
/// std::env::set_var("DOC_RESIDENTIAL", "http://acct:secret@gate.example:7777");
/// let tiers = spider_settings::resolve_proxy("direct > env:DOC_RESIDENTIAL").unwrap();
/// assert!(tiers[0].is_empty());
/// assert_eq!(tiers[1][0].to_string(), "http://***@gate.example:7777/");
/// ```
pub fn resolve_proxy(spec: &str) -> Result<Vec<Vec<Gateway>>, String> {
    let shown = crate::redact_spec(spec);
    let entries = crate::parse_proxy(spec, false).map_err(|e| format!("proxy = {shown:?}: {e}"))?;
    let mut tiers = Vec::new();
    for tier in entries {
        let mut gateways = Vec::new();
        for entry in tier {
            match entry {
                ProxyEntry::Direct => {}
                ProxyEntry::Url(url) => gateways.push(Gateway::parse(&url, "proxy")?),
                ProxyEntry::Env(var) => {
                    let origin = format!("env:{var}");
                    let value = std::env::var(&var).map_err(|_| {
                        format!(
                            "proxy = \"{origin}\", but {var} is not set; export it with the gateway URL, \
                             such as {var}=http://USER:PASSWORD@gateway.example:8000"
                        )
                    })?;
                    let first = gateways.len();
                    let urls = value.lines().flat_map(|line| crate::split_entries(line, ','));
                    for url in urls.map(str::trim).filter(|u| !u.is_empty()) {
                        gateways.push(Gateway::parse(url, &origin)?);
                    }
                    if gateways.len() == first {
                        return Err(format!("proxy = \"{origin}\", but {var} is empty"));
                    }
                }
            }
        }
        tiers.push(gateways);
    }
    Ok(tiers)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "{user}-country-{geo}-session-{session}";

    #[test]
    fn credentials_never_print() {
        let gateway = Gateway::parse("http://acct%2B1:hunter2@gw.example:8000", "proxy").unwrap();
        assert_eq!(gateway.to_string(), "http://***@gw.example:8000/");
        assert!(!format!("{gateway:?}").contains("hunter2"));
        assert_eq!(gateway.username(TEMPLATE, None, None).unwrap(), "acct+1");
        for bad in ["http://me:hunter2@", "http://me:hunter2", "http://me:hun/ter2@gw"] {
            let error = Gateway::parse(bad, "env:P").unwrap_err();
            assert!(!error.contains("hunter2") && !error.contains("ter2"), "{error}");
        }
        let open = Gateway::parse("http://gw.example:3128", "proxy").unwrap();
        assert_eq!(open.username(TEMPLATE, Some("us"), None), None, "no credentials, no auth");
    }

    #[test]
    fn usernames_leave_out_parts_without_a_value() {
        let gateway = Gateway::parse("http://acct:pw@gw.example:8000", "proxy").unwrap();
        let name = |template, geo, session| gateway.username(template, geo, session).unwrap();
        assert_eq!(name(TEMPLATE, Some("de"), None), "acct-country-de");
        assert_eq!(name(TEMPLATE, None, Some("s1")), "acct-session-s1");
        assert_eq!(name(TEMPLATE, Some("us"), Some("s1")), "acct-country-us-session-s1");
        assert_eq!(name("zone-x-{user}.{geo}", Some("fr"), None), "zone-x-acct.fr");
    }
}
