//! The browsers a crawl can look like on the wire (`impersonate`): for each, the headers it
//! sends with a page it navigates to, their order, and the agents an identity draws from
//! (one per platform). The wire under them (TLS ClientHello, HTTP/2 preface) is
//! `wire::browser`'s; an identity keeps one profile for life, so its agent, its client
//! hints and its wire never disagree.
//!
//! Chrome's headers and their order are what Debian's Chromium sends on a navigation,
//! read by the sandbox's fingerprint site; the versions are those of the TLS and HTTP/2
//! profiles of `wreq-util` the wire uses, so the User-Agent names the browser the
//! ClientHello is.

use std::sync::LazyLock;

use rand::Rng;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// A browser family with a wire of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Browser {
    Chrome,
    Firefox,
}

/// The platforms an identity's agent says it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Platform {
    Windows,
    MacOs,
    Linux,
}

const PLATFORMS: [Platform; 3] = [Platform::Windows, Platform::MacOs, Platform::Linux];

/// A browser on a platform: one identity's wire and headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Profile {
    pub(crate) browser: Browser,
    pub(crate) platform: Platform,
}

/// The major versions the agents claim: those of the wire's profiles.
const CHROME_MAJOR: &str = "149";
const FIREFOX_MAJOR: &str = "151";

/// Chrome's navigation headers in the order Chromium sends them (the wire writes them so); the request's own
/// (`cookie`, `referer`, a form's `content-type`...) take their places in it.
#[cfg(feature = "impersonate")]
const CHROME_ORDER: &[&str] = &[
    "Host",
    "Connection",
    "Content-Length",
    "Cache-Control",
    "sec-ch-ua",
    "sec-ch-ua-mobile",
    "sec-ch-ua-platform",
    "Origin",
    "Content-Type",
    "Upgrade-Insecure-Requests",
    "User-Agent",
    "Accept",
    "Sec-Fetch-Site",
    "Sec-Fetch-Mode",
    "Sec-Fetch-User",
    "Sec-Fetch-Dest",
    "Referer",
    "Accept-Encoding",
    "Accept-Language",
    "Cookie",
    "If-None-Match",
    "If-Modified-Since",
    "priority",
];

/// Firefox's, as its releases send them (`te: trailers` last, over HTTP/2).
#[cfg(feature = "impersonate")]
const FIREFOX_ORDER: &[&str] = &[
    "host",
    "user-agent",
    "accept",
    "accept-language",
    "accept-encoding",
    "content-type",
    "content-length",
    "origin",
    "referer",
    "cookie",
    "upgrade-insecure-requests",
    "sec-fetch-dest",
    "sec-fetch-mode",
    "sec-fetch-site",
    "sec-fetch-user",
    "if-modified-since",
    "if-none-match",
    "priority",
    "te",
];

impl Profile {
    /// A profile of `browser` on a platform drawn at random.
    pub(crate) fn draw(browser: Browser, rng: &mut impl Rng) -> Profile {
        Profile { browser, platform: PLATFORMS[rng.random_range(0..PLATFORMS.len())] }
    }

    /// The profile whose agent is `agent`, for an identity resumed from a state file.
    pub(crate) fn of_agent(agent: &str) -> Option<Profile> {
        [Browser::Chrome, Browser::Firefox]
            .into_iter()
            .flat_map(|browser| PLATFORMS.map(|platform| Profile { browser, platform }))
            .find(|profile| profile.agent() == agent)
    }

    /// The User-Agent.
    pub(crate) fn agent(self) -> String {
        match (self.browser, self.platform) {
            (Browser::Chrome, platform) => format!(
                "Mozilla/5.0 ({}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{CHROME_MAJOR}.0.0.0 \
                    Safari/537.36",
                match platform {
                    Platform::Windows => "Windows NT 10.0; Win64; x64",
                    Platform::MacOs => "Macintosh; Intel Mac OS X 10_15_7",
                    Platform::Linux => "X11; Linux x86_64",
                }
            ),
            (Browser::Firefox, platform) => format!(
                "Mozilla/5.0 ({}; rv:{FIREFOX_MAJOR}.0) Gecko/20100101 Firefox/{FIREFOX_MAJOR}.0",
                match platform {
                    Platform::Windows => "Windows NT 10.0; Win64; x64",
                    Platform::MacOs => "Macintosh; Intel Mac OS X 10.15",
                    Platform::Linux => "X11; Linux x86_64",
                }
            ),
        }
    }

    /// The headers the browser sends when it navigates to a page, in its order. The
    /// `accept-encoding` it claims is what the wire decodes. Made once per profile: every
    /// request of an identity sends them.
    pub(crate) fn headers(self) -> HeaderMap {
        static MADE: LazyLock<Vec<(Profile, HeaderMap)>> = LazyLock::new(|| {
            [Browser::Chrome, Browser::Firefox]
                .into_iter()
                .flat_map(|browser| PLATFORMS.map(|platform| Profile { browser, platform }))
                .map(|profile| (profile, profile.make_headers()))
                .collect()
        });
        MADE.iter().find(|(made, _)| *made == self).map(|(_, headers)| headers.clone()).unwrap_or_default()
    }

    fn make_headers(self) -> HeaderMap {
        let agent = self.agent();
        let platform = match self.platform {
            Platform::Windows => "\"Windows\"",
            Platform::MacOs => "\"macOS\"",
            Platform::Linux => "\"Linux\"",
        };
        let hints = format!(
            "\"Google Chrome\";v=\"{CHROME_MAJOR}\", \"Chromium\";v=\"{CHROME_MAJOR}\", \
                \"Not)A;Brand\";v=\"24\""
        );
        let pairs: Vec<(&str, &str)> = match self.browser {
            Browser::Chrome => vec![
                // Over HTTP/2 the wire leaves it out, as connection-specific.
                ("connection", "keep-alive"),
                ("sec-ch-ua", &hints),
                ("sec-ch-ua-mobile", "?0"),
                ("sec-ch-ua-platform", platform),
                ("upgrade-insecure-requests", "1"),
                ("user-agent", &agent),
                (
                    "accept",
                    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,\
                     */*;q=0.8,application/signed-exchange;v=b3;q=0.7",
                ),
                ("sec-fetch-site", "none"),
                ("sec-fetch-mode", "navigate"),
                ("sec-fetch-user", "?1"),
                ("sec-fetch-dest", "document"),
                ("accept-encoding", "gzip, deflate, br, zstd"),
                ("accept-language", "en-US,en;q=0.9"),
                ("priority", "u=0, i"),
            ],
            Browser::Firefox => vec![
                ("user-agent", &agent),
                ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
                ("accept-language", "en-US,en;q=0.5"),
                ("accept-encoding", "gzip, deflate, br, zstd"),
                ("upgrade-insecure-requests", "1"),
                ("sec-fetch-dest", "document"),
                ("sec-fetch-mode", "navigate"),
                ("sec-fetch-site", "none"),
                ("sec-fetch-user", "?1"),
                ("priority", "u=0, i"),
                ("te", "trailers"),
            ],
        };
        let mut headers = HeaderMap::with_capacity(pairs.len());
        for (name, value) in pairs {
            // Every value above is visible ASCII.
            if let Ok(value) = HeaderValue::from_str(value) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
        headers
    }

    /// The order the browser writes headers in.
    #[cfg(feature = "impersonate")]
    pub(crate) fn order(self) -> &'static [&'static str] {
        match self.browser {
            Browser::Chrome => CHROME_ORDER,
            Browser::Firefox => FIREFOX_ORDER,
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn a_profiles_headers_agree_with_its_agent_and_come_in_its_order() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for browser in [Browser::Chrome, Browser::Firefox] {
            for _ in 0..8 {
                let profile = Profile::draw(browser, &mut rng);
                let headers = profile.headers();
                assert_eq!(headers["user-agent"], profile.agent().as_str());
                assert_eq!(Profile::of_agent(&profile.agent()), Some(profile));
                #[cfg(feature = "impersonate")]
                {
                    let names: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
                    let ordered: Vec<String> = profile
                        .order()
                        .iter()
                        .map(|name| name.to_ascii_lowercase())
                        .filter(|name| names.contains(&name.as_str()))
                        .collect();
                    assert_eq!(names, ordered, "{browser:?}'s headers are in its order");
                }
            }
        }
        let chrome = Profile { browser: Browser::Chrome, platform: Platform::MacOs };
        assert!(chrome.headers()["sec-ch-ua"].to_str().unwrap().contains(&format!("v=\"{CHROME_MAJOR}\"")));
        assert_eq!(chrome.headers()["sec-ch-ua-platform"], "\"macOS\"");
        let firefox = Profile { browser: Browser::Firefox, platform: Platform::Linux };
        assert!(firefox.headers().get("sec-ch-ua").is_none(), "Firefox sends no client hints");
    }
}
