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
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    Some(Arc::from(format!("{}://{host}:{port}", url.scheme())))
}
