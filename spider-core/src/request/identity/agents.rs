//! User agents and the headers that go with them: a request claiming to be Firefox sends
//! what Firefox sends, because headers that contradict their agent are what anti-bot
//! systems look for first.

use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, ACCEPT, ACCEPT_ENCODING, ACCEPT_LANGUAGE, USER_AGENT,
};

use crate::error::Error;

/// The agents identities draw from, each with its header set; empty when the crawl sends
/// its one `user_agent` (set on the clients) and no header set of a browser.
#[derive(Debug, Default)]
pub(crate) struct Agents {
    sets: Vec<HeaderMap>,
}

impl Agents {
    /// A header set per agent; headers the crawl's own `headers` name are left out, so
    /// those win.
    pub(crate) fn new(agents: &[String], own: &[(String, String)]) -> Result<Self, Error> {
        let overridden =
            |name: &HeaderName| own.iter().any(|(own, _)| own.eq_ignore_ascii_case(name.as_str()));
        let mut sets = Vec::with_capacity(agents.len());
        for agent in agents {
            let value = HeaderValue::from_str(agent)
                .map_err(|_| Error::Config(format!("user agent {agent:?} is not a valid header value")))?;
            let mut set = HeaderMap::new();
            let claimed =
                family(agent).headers().into_iter().map(|(name, v)| (name, HeaderValue::from_static(v)));
            for (name, value) in std::iter::once((USER_AGENT, value)).chain(claimed) {
                if !overridden(&name) {
                    set.insert(name, value);
                }
            }
            sets.push(set);
        }
        Ok(Agents { sets })
    }

    /// How many agents there are to draw from.
    pub(crate) fn len(&self) -> usize {
        self.sets.len()
    }

    /// The header set of agent `index`; none without agents.
    pub(crate) fn headers(&self, index: usize) -> HeaderMap {
        self.sets.get(index).cloned().unwrap_or_default()
    }

    /// The index of the agent named `agent`, for an identity resumed from a state file.
    pub(crate) fn find(&self, agent: &str) -> Option<usize> {
        self.sets.iter().position(|set| set.get(USER_AGENT).is_some_and(|value| value == agent))
    }

    /// The agent string of `index`, saved with its identity.
    pub(crate) fn name(&self, index: usize) -> Option<&str> {
        self.sets.get(index)?.get(USER_AGENT)?.to_str().ok()
    }
}

/// Browser families by the headers they send with a page request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Chromium,
    Firefox,
    Safari,
    /// A crawler or anything else: only its User-Agent, as an honest client sends.
    Other,
}

/// What an agent string claims to be. Chromium-based browsers also say "Safari", and
/// Safari says "Version/", so the order of the tests matters.
fn family(agent: &str) -> Family {
    if agent.contains("Firefox/") {
        Family::Firefox
    } else if agent.contains("Chrome/") || agent.contains("CriOS/") || agent.contains("Edg/") {
        Family::Chromium
    } else if agent.contains("Safari/") && agent.contains("Version/") {
        Family::Safari
    } else {
        Family::Other
    }
}

/// Accept-Encoding lists what the client decodes (gzip, deflate, brotli), never more: a
/// claimed `zstd` would bring answers that cannot be read.
const ENCODINGS: &str = "gzip, deflate, br";

impl Family {
    fn headers(self) -> Vec<(HeaderName, &'static str)> {
        let (accept, language) = match self {
            Family::Chromium => (
                "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,\
                 */*;q=0.8",
                "en-US,en;q=0.9",
            ),
            Family::Firefox => {
                ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "en-US,en;q=0.5")
            }
            Family::Safari => {
                ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "en-US,en;q=0.9")
            }
            Family::Other => return Vec::new(),
        };
        vec![(ACCEPT, accept), (ACCEPT_LANGUAGE, language), (ACCEPT_ENCODING, ENCODINGS)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
    const CHROME: &str =
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 \
            Safari/537.36";
    const SAFARI: &str =
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 \
            Safari/605.1.15";

    #[test]
    fn each_agent_claims_the_headers_of_its_family() {
        assert_eq!(family(FIREFOX), Family::Firefox);
        assert_eq!(family(CHROME), Family::Chromium);
        assert_eq!(family(SAFARI), Family::Safari);
        assert_eq!(family("spiderling/1.0"), Family::Other);
        let agents = Agents::new(&[FIREFOX.to_owned(), "spiderling/1.0".to_owned()], &[]).unwrap();
        let firefox = agents.headers(0);
        assert_eq!(firefox[ACCEPT_LANGUAGE], "en-US,en;q=0.5");
        assert_eq!(firefox[USER_AGENT], FIREFOX);
        assert_eq!(agents.headers(1).len(), 1, "a crawler sends only its name");
        assert_eq!(agents.find(FIREFOX), Some(0));
    }

    #[test]
    fn the_crawls_own_headers_win() {
        let own = [("accept-language".to_owned(), "de-DE".to_owned())];
        let agents = Agents::new(&[CHROME.to_owned()], &own).unwrap();
        assert!(agents.headers(0).get(ACCEPT_LANGUAGE).is_none());
        assert!(agents.headers(0).get(ACCEPT).is_some());
    }
}
