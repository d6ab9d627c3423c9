//! One identity's cookie jar: `cookie_store` keeps the rules (domain, path, expiry,
//! `Secure`, `HttpOnly`; `SameSite` means nothing to a crawler and is ignored). Values are
//! secrets, like credentials: nothing here prints one, and `Debug` shows names only.

use cookie_store::CookieStore;
use reqwest::header::{HeaderMap, HeaderValue, SET_COOKIE};
use url::Url;

#[derive(Clone, Default)]
pub(crate) struct Jar {
    store: CookieStore,
}

impl std::fmt::Debug for Jar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.store.iter_unexpired().map(|c| c.name())).finish()
    }
}

impl Jar {
    /// Whether it holds no cookie.
    pub(crate) fn is_empty(&self) -> bool {
        self.store.iter_any().next().is_none()
    }

    /// The `Cookie` header for a request to `url`, if any cookie goes there.
    pub(crate) fn header(&self, url: &Url) -> Option<HeaderValue> {
        let pairs: Vec<String> =
            self.store.get_request_values(url).map(|(name, value)| format!("{name}={value}")).collect();
        if pairs.is_empty() {
            return None;
        }
        let mut value = HeaderValue::from_str(&pairs.join("; ")).ok()?;
        value.set_sensitive(true);
        Some(value)
    }

    /// Keep the cookies of an answer from `url`; returns how many were taken.
    pub(crate) fn receive(&mut self, url: &Url, headers: &HeaderMap) -> usize {
        headers
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .filter(|line| self.take(line, url).is_ok())
            .count()
    }

    /// Keep one `Set-Cookie` line as if `url` had answered with it. The error names the
    /// cookie, never its value.
    pub(crate) fn take(&mut self, line: &str, url: &Url) -> Result<(), String> {
        let name = line.split_once('=').map_or(line, |(name, _)| name).trim();
        let cookie =
            cookie_store::RawCookie::parse(line).map_err(|_| format!("{name:?} is not a Set-Cookie line"))?;
        match self.store.insert_raw(&cookie, url) {
            Ok(_) => {
                tracing::debug!(
                    target: "spiderling",
                    cookie = %cookie.name(),
                    host = url.host_str().unwrap_or(""),
                    "cookie kept"
                );
                Ok(())
            }
            Err(_) => Err(format!("cookie {:?} is not for {}", cookie.name(), url.host_str().unwrap_or(""))),
        }
    }

    /// The jar as JSON, for the state file: session cookies too, since the crawl goes on.
    pub(crate) fn to_json(&self) -> Result<String, String> {
        let mut bytes = Vec::new();
        cookie_store::serde::json::save_incl_expired_and_nonpersistent(&self.store, &mut bytes)
            .map_err(|e| format!("cookie jar not saved: {e}"))?;
        String::from_utf8(bytes).map_err(|e| format!("cookie jar not saved: {e}"))
    }

    /// A jar saved by [`to_json`](Self::to_json); cookies expired since are dropped.
    pub(crate) fn from_json(json: &str) -> Result<Self, String> {
        let store = cookie_store::serde::json::load(json.as_bytes())
            .map_err(|_| "a saved cookie jar does not read".to_owned())?;
        Ok(Jar { store })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    /// The cookies the jar sends to `to`, sorted: the store keeps no order.
    fn sent(jar: &Jar, to: &str) -> Vec<String> {
        let header = jar.header(&url(to)).map(|h| h.to_str().unwrap().to_owned()).unwrap_or_default();
        let mut pairs: Vec<String> =
            header.split("; ").filter(|p| !p.is_empty()).map(str::to_owned).collect();
        pairs.sort();
        pairs
    }

    #[test]
    fn cookies_go_back_to_their_domain_and_path_only() {
        let mut jar = Jar::default();
        let shop = url("http://shop.example/cart/");
        jar.take("sid=abc; Path=/", &shop).unwrap();
        jar.take("step=2; Path=/cart", &shop).unwrap();
        jar.take("wide=1; Domain=shop.example; Path=/", &shop).unwrap();
        jar.take("here=1", &shop).unwrap();
        assert_eq!(sent(&jar, "http://shop.example/cart/x"), ["here=1", "sid=abc", "step=2", "wide=1"]);
        // Without a Path, a cookie is for the folder of the page that set it.
        assert_eq!(sent(&jar, "http://shop.example/"), ["sid=abc", "wide=1"]);
        assert_eq!(sent(&jar, "http://www.shop.example/"), ["wide=1"]);
        assert!(jar.header(&url("http://other.example/")).is_none());
        assert!(jar.take("evil=1; Domain=other.example", &shop).is_err());
        assert!(!format!("{jar:?}").contains("abc"), "names only");
    }

    #[test]
    fn secure_and_expired_cookies() {
        let mut jar = Jar::default();
        let https = url("https://shop.example/");
        jar.take("s=1; Secure", &https).unwrap();
        assert!(jar.header(&url("http://shop.example/")).is_none(), "Secure stays off plain HTTP");
        jar.take("s=1; Secure; Max-Age=0", &https).unwrap();
        assert!(jar.header(&https).is_none(), "expired by the server");
    }

    #[test]
    fn a_jar_survives_its_json() {
        let mut jar = Jar::default();
        let shop = url("http://shop.example/");
        jar.take("sid=abc", &shop).unwrap();
        let again = Jar::from_json(&jar.to_json().unwrap()).unwrap();
        assert_eq!(sent(&again, "http://shop.example/"), ["sid=abc"]);
    }
}
