//! The fingerprint site: the demo bookshop behind a check of how each client looks on the
//! wire, as bot walls in front of real sites check it before any rate limit does.
//!
//! A request is let through when its connection's JA4 is a browser's, the browser spoke
//! HTTP/2 with that browser's preface, and its headers are the ones that browser sends
//! with its User-Agent, in its order. Anything else is refused with 403 and the reason,
//! the first check it failed. `/wire` echoes what the site saw, refused or not.
//!
//! The browsers' values were read off the real ones by this site's own readers: Debian's
//! headless Chromium, which `tests/it/wire.rs` drives here and checks is still let through,
//! and Debian's Firefox ESR (see [`BROWSERS`]).

use hyper::header::{HeaderMap, USER_AGENT};
use serde_json::json;

use crate::demo::DemoSite;
use crate::wire::Wire;

/// The demo bookshop, served over TLS behind a wire check.
///
/// # Examples
///
/// ```
/// use spider_sandbox::{DemoSite, FingerprintSite, Sandbox};
///
/// let site = Sandbox::fingerprint(FingerprintSite { demo: DemoSite::default(), http1_only: false })?;
/// assert!(site.url().starts_with("https://localhost:"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct FingerprintSite {
    /// The shop behind the check.
    pub demo: DemoSite,
    /// Offer HTTP/1.1 only (ALPN `http/1.1`), as an older server does, to see a client's
    /// HTTP/1.1 headers as written (`/wire`'s `http1_names`); the check itself still wants
    /// a browser's HTTP/2 (default false).
    pub http1_only: bool,
}

/// A browser family as the site knows it.
#[derive(Debug)]
pub(crate) struct Browser {
    /// Its name, as the refusals and the echo say it.
    pub(crate) name: &'static str,
    /// The JA4s its releases send.
    ja4: &'static [&'static str],
    /// Its HTTP/2 preface in Akamai's form.
    h2: &'static [&'static str],
    /// Whether an agent string claims this family.
    claims: fn(&str) -> bool,
    /// Headers it sends with every page request.
    required: &'static [&'static str],
    /// Headers it never sends.
    never: &'static [&'static str],
    /// The order of the headers it sends with a page request; those present must come
    /// in this order.
    order: &'static [&'static str],
}

fn claims_chromium(agent: &str) -> bool {
    agent.contains("Chrome/") && !agent.contains("Firefox/")
}

fn claims_firefox(agent: &str) -> bool {
    agent.contains("Firefox/")
}

/// The browsers let through. Chromium's values are what Debian's Chromium 148 sent this
/// site (its JA4 and HTTP/2 preface have been Chrome's since version 131), and the JA4 of
/// Debian's Chromium 156, whose hello carries one extension more (51764, 0xca34), its
/// HTTP/2 preface unchanged; Firefox's what
/// Debian's Firefox ESR 140 sent it, headless, driven by hand through Marionette (the
/// tests drive Chromium only), the same as the JA4 and Akamai fingerprint published for
/// Firefox's releases since 135.
pub(crate) const BROWSERS: &[Browser] = &[
    Browser {
        name: "chromium",
        ja4: &["t13d1516h2_8daaf6152771_d8a2da3f94cd", "t13d1517h2_8daaf6152771_cb7bf5808d99"],
        h2: &["1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p"],
        claims: claims_chromium,
        required: &[
            "sec-ch-ua",
            "sec-ch-ua-mobile",
            "sec-ch-ua-platform",
            "sec-fetch-site",
            "accept-language",
        ],
        never: &["te"],
        order: &[
            "sec-ch-ua",
            "sec-ch-ua-mobile",
            "sec-ch-ua-platform",
            "upgrade-insecure-requests",
            "user-agent",
            "accept",
            "sec-fetch-site",
            "sec-fetch-mode",
            "sec-fetch-user",
            "sec-fetch-dest",
            "accept-encoding",
            "accept-language",
            "priority",
        ],
    },
    Browser {
        name: "firefox",
        ja4: &["t13d1717h2_5b57614c22b0_3cbfd9057e0d"],
        h2: &["1:65536;2:0;4:131072;5:16384|12517377|0|m,p,a,s"],
        claims: claims_firefox,
        required: &["sec-fetch-site", "accept-language"],
        never: &["sec-ch-ua"],
        order: &[
            "user-agent",
            "accept",
            "accept-language",
            "accept-encoding",
            "upgrade-insecure-requests",
            "sec-fetch-dest",
            "sec-fetch-mode",
            "sec-fetch-site",
            "sec-fetch-user",
            "priority",
            "te",
        ],
    },
];

/// Why a request was refused: the layer that gave it away, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) layer: &'static str,
    pub(crate) reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "refused ({}): {}", self.layer, self.reason)
    }
}

/// The check: the browser the request is taken for, or why it is taken for none.
pub(crate) fn judge(wire: Option<&Wire>, headers: &HeaderMap) -> Result<&'static Browser, Refusal> {
    let refuse = |layer, reason: String| Refusal { layer, reason };
    let Some(wire) = wire else {
        return Err(refuse("tls", "not over TLS".to_owned()));
    };
    let first = wire.hello.ja4_unresumed();
    let browser = BROWSERS
        .iter()
        .find(|b| b.ja4.contains(&first.as_str()))
        .ok_or_else(|| refuse("tls", format!("JA4 {} is no browser's ClientHello", wire.ja4)))?;
    let h2 = wire.h2_fingerprint().ok_or_else(|| {
        refuse("http2", format!("{} speaks HTTP/2 here, this client {:?}", browser.name, wire.alpn))
    })?;
    if !browser.h2.contains(&h2.as_str()) {
        return Err(refuse("http2", format!("preface {h2} is not {}'s", browser.name)));
    }
    let agent = headers.get(USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !(browser.claims)(agent) {
        return Err(refuse("headers", format!("User-Agent {agent:?} on {}'s TLS", browser.name)));
    }
    if let Some(missing) = browser.required.iter().find(|name| !headers.contains_key(**name)) {
        return Err(refuse("headers", format!("{} sends {missing}", browser.name)));
    }
    if let Some(extra) = browser.never.iter().find(|name| headers.contains_key(**name)) {
        return Err(refuse("headers", format!("{} never sends {extra}", browser.name)));
    }
    if let Some(hints) = headers.get("sec-ch-ua").and_then(|v| v.to_str().ok()) {
        let major = agent.split("Chrome/").nth(1).and_then(|v| v.split('.').next()).unwrap_or("");
        if !hints.contains(&format!("v=\"{major}\"")) {
            return Err(refuse(
                "headers",
                format!("sec-ch-ua {hints} does not name the agent's version {major}"),
            ));
        }
    }
    let sent: Vec<&str> =
        headers.keys().map(|name| name.as_str()).filter(|n| browser.order.contains(n)).collect();
    let expected: Vec<&str> = browser.order.iter().copied().filter(|n| sent.contains(n)).collect();
    if sent != expected {
        return Err(refuse(
            "headers",
            format!(
                "headers in the order {}, {} sends {}",
                sent.join(", "),
                browser.name,
                expected.join(", ")
            ),
        ));
    }
    Ok(browser)
}

/// The echo of `/wire`: what the site saw of this request, and what it made of it.
pub(crate) fn echo(wire: Option<&Wire>, version: &str, headers: &HeaderMap) -> String {
    let verdict = match judge(wire, headers) {
        Ok(browser) => format!("let through as {}", browser.name),
        Err(refusal) => refusal.to_string(),
    };
    let order: Vec<&str> = headers.keys().map(|name| name.as_str()).collect();
    // Cookie values are the client's secrets: their names only.
    let shown: Vec<(&str, String)> = headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes());
            let value = if name == "cookie" {
                value
                    .split(';')
                    .filter_map(|pair| pair.split_once('='))
                    .map(|(n, _)| n.trim())
                    .collect::<Vec<_>>()
                    .join("; ")
            } else {
                value.into_owned()
            };
            (name.as_str(), value)
        })
        .collect();
    json!({
        "http_version": version,
        "alpn": wire.and_then(|w| w.alpn.clone()),
        "ja3": wire.map(|w| &w.ja3),
        "ja3_hash": wire.map(|w| &w.ja3_hash),
        "ja4": wire.map(|w| &w.ja4),
        "h2": wire.and_then(Wire::h2_fingerprint),
        "header_order": order,
        "http1_names": wire.and_then(|w| w.http1_names.clone()),
        "headers": shown,
        "user_agent": headers.get(USER_AGENT).and_then(|v| v.to_str().ok()),
        "verdict": verdict,
    })
    .to_string()
}
