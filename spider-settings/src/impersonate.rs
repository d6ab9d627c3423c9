//! Which browser a crawl's requests look like on the wire.

/// The browser profile requests are sent with: the whole wire of that browser (TLS
/// ClientHello, HTTP/2 preface, header order) and the headers it sends with its User-Agent,
/// or the crawl's own client (`None`). `Auto` starts each host on the crawl's own client
/// and moves the host to Chrome's profile for good when the plain client is refused.
///
/// # Examples
///
/// ```
/// use spider_settings::Impersonate;
///
/// assert_eq!(Impersonate::parse("chrome"), Ok(Impersonate::Chrome));
/// assert!(Impersonate::parse("safari").unwrap_err().contains("\"firefox\""));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Impersonate {
    /// The crawl's own client (reqwest and rustls), its `user_agent` or `user_agents`.
    #[default]
    None,
    /// Chrome's wire and headers.
    Chrome,
    /// Firefox's wire and headers.
    Firefox,
    /// The crawl's own client until a host refuses it, then Chrome's for that host.
    Auto,
}

impl Impersonate {
    /// Every value, as written.
    pub const NAMES: [&'static str; 4] = ["none", "chrome", "firefox", "auto"];

    /// The value `text` names.
    ///
    /// # Errors
    ///
    /// A message naming the values there are.
    pub fn parse(text: &str) -> Result<Impersonate, String> {
        match text.trim() {
            "none" => Ok(Impersonate::None),
            "chrome" => Ok(Impersonate::Chrome),
            "firefox" => Ok(Impersonate::Firefox),
            "auto" => Ok(Impersonate::Auto),
            other => {
                let hint = crate::keys::did_you_mean(other, &Impersonate::NAMES);
                Err(format!(
                    "`{other}` is no browser profile{hint}; write \"chrome\", \"firefox\", \"auto\" (plain \
                        until a host refuses it) or \"none\""
                ))
            }
        }
    }

    /// The value as written.
    pub fn name(self) -> &'static str {
        match self {
            Impersonate::None => "none",
            Impersonate::Chrome => "chrome",
            Impersonate::Firefox => "firefox",
            Impersonate::Auto => "auto",
        }
    }
}
