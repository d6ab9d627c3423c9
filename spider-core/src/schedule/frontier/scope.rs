//! Which URLs a crawl may visit at all: http(s), inside the allowed domains.

use url::Url;

/// The allowed domains, lowercased; empty means every domain.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    domains: Vec<String>,
}

impl Scope {
    pub(crate) fn new(domains: &[String]) -> Self {
        let domains = domains
            .iter()
            .map(|d| d.trim().trim_start_matches('.').to_ascii_lowercase())
            .filter(|d| !d.is_empty())
            .collect();
        Scope { domains }
    }

    /// A domain allows itself and its subdomains: `books.example` allows
    /// `www.books.example` but not `notbooks.example`.
    pub(crate) fn allows(&self, url: &Url) -> bool {
        if !matches!(url.scheme(), "http" | "https") {
            return false;
        }
        let Some(host) = url.host_str() else {
            return false;
        };
        self.domains.is_empty()
            || self.domains.iter().any(|domain| {
                host == domain
                    || host.strip_suffix(domain.as_str()).is_some_and(|prefix| prefix.ends_with('.'))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(domains: &[&str], url: &str) -> bool {
        let domains: Vec<String> = domains.iter().map(|d| (*d).to_owned()).collect();
        Url::parse(url).is_ok_and(|url| Scope::new(&domains).allows(&url))
    }

    #[test]
    fn subdomains_are_inside_and_lookalikes_are_not() {
        assert!(allows(&["books.example"], "https://books.example/a"));
        assert!(allows(&["books.example"], "https://www.books.example/a"));
        assert!(allows(&["Books.Example"], "https://BOOKS.example:8443/a"));
        assert!(!allows(&["books.example"], "https://notbooks.example/a"));
        assert!(!allows(&["books.example"], "https://books.example.evil/a"));
        assert!(!allows(&["books.example"], "mailto:shop@books.example"));
        assert!(allows(&[], "http://anything.example/"));
    }
}
