//! The host a request is for, as the crawl keys it.

use std::sync::Arc;

use url::Url;

/// The key of a host's queue, slots and robots.txt: its origin, `scheme://host:port`
/// (RFC 9309 scopes robots.txt the same way), so two servers on one machine are two hosts.
pub type HostKey = Arc<str>;

/// The host key of `url`, when it has a host.
///
/// # Examples
///
/// ```
/// use spider_core::host_key;
/// use url::Url;
///
/// let url = Url::parse("https://Books.Example/catalogue/").unwrap();
/// assert_eq!(host_key(&url).as_deref(), Some("https://books.example:443"));
/// ```
pub fn host_key(url: &Url) -> Option<HostKey> {
    let mut key = String::new();
    write_host_key(url, &mut key).then(|| Arc::from(key))
}

/// Write `url`'s host key into `key` (emptied first), without the formatting machinery
/// or an allocation when `key` is large enough: every link a page holds is keyed.
/// `false` when the URL has no host.
pub(crate) fn write_host_key(url: &Url, key: &mut String) -> bool {
    key.clear();
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else { return false };
    key.reserve(url.scheme().len() + host.len() + 9);
    key.push_str(url.scheme());
    key.push_str("://");
    key.push_str(host);
    key.push(':');
    let mut digits = [0u8; 5];
    let mut at = digits.len();
    let mut rest = port;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    key.extend(digits[at..].iter().map(|&digit| char::from(digit)));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_key_is_the_origin_with_its_port_spelled_out() {
        let key = |url: &str| host_key(&Url::parse(url).unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(key("http://a.example/x").as_deref(), Some("http://a.example:80"));
        assert_eq!(key("https://127.0.0.1:8/").as_deref(), Some("https://127.0.0.1:8"));
        assert_eq!(key("http://[::1]:65535/").as_deref(), Some("http://[::1]:65535"));
        assert_eq!(key("data:text/plain,x"), None);
    }
}
