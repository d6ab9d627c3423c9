//! Setters for who the crawl's requests claim to be: cookies (on by default, one jar per
//! identity), cookies given before the crawl, the user agents identities draw from, and
//! whether links a person cannot see are followed.

use std::path::PathBuf;

use super::Config;

impl Config {
    /// Keep the cookies sites set, one jar per identity, and send them back as a browser
    /// would (domain, path, expiry, `Secure`); `false` sends none and keeps none
    /// (default true). A blocked identity is retired with its jar.
    #[must_use]
    pub fn cookies(mut self, cookies: bool) -> Self {
        self.cookies = cookies;
        self
    }

    /// Start every identity with this cookie, as if `url` had answered with the
    /// `Set-Cookie` line `set_cookie`: for a session signed in by hand or by code that runs
    /// before the crawl. Each identity made later, including one replacing a retired
    /// identity, starts with a copy. Values are never printed (default: none; a line that
    /// does not parse or is not for `url`'s domain is reported by
    /// [`validate`](Self::validate)).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("members")
    ///     .start_url("https://shop.example/members/")
    ///     .seed_cookie("https://shop.example/", "session=token-from-login; Path=/; Secure");
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub fn seed_cookie(mut self, url: impl Into<String>, set_cookie: impl Into<String>) -> Self {
        self.seed_cookies.0.push((url.into(), set_cookie.into()));
        self
    }

    /// User agents each new identity draws one of and keeps, sending with it the Accept,
    /// Accept-Language and Accept-Encoding its browser family sends (Chromium, Firefox,
    /// Safari; anything else sends only its name). [`header`](Self::header)s win over
    /// those. The robots.txt token stays [`user_agent`](Self::user_agent)'s (default: none,
    /// every request sends `user_agent`).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").user_agents([
    ///     "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    ///     "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
    /// ]);
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub fn user_agents<A: Into<String>>(mut self, agents: impl IntoIterator<Item = A>) -> Self {
        self.user_agents.extend(agents.into_iter().map(Into::into));
        self
    }

    /// As [`user_agents`](Self::user_agents), read from a file when the crawl starts: one
    /// agent a line, blank lines and lines starting with `#` skipped (default: none).
    #[must_use]
    pub fn user_agents_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.user_agents_file = Some(path.into());
        self
    }

    /// Follow links a person cannot see (default false): the classic honeypot, where one
    /// request bans the identity. A link is hidden when it or an element around it has
    /// the `hidden` attribute, an inline style with `display: none` or
    /// `visibility: hidden` (the nearest `visibility` declared decides), or
    /// `aria-hidden="true"` together with an inline style that puts it off-screen
    /// (`position: absolute` or `fixed` with a negative `left` or `top`). Skipped links
    /// are counted in the stats (`skipped_hidden`). Stylesheets are not read: a link hidden
    /// by a class is followed.
    #[must_use]
    pub fn follow_hidden(mut self, follow: bool) -> Self {
        self.follow_hidden = follow;
        self
    }
}
