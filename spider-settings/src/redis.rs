//! The `frontier` setting: where the fleet's Redis is, a URL given in the settings or held in an environment
//! variable, shown everywhere with its password hidden.

use std::fmt;

/// A Redis URL whose password is never printed.
#[derive(Clone)]
pub struct RedisAddress {
    url: String,
    shown: String,
}

impl RedisAddress {
    /// `redis://…` / `rediss://…`, or `env:VAR` naming a variable that holds one.
    ///
    /// # Errors
    ///
    /// A message saying what to write instead; it never holds the password.
    pub fn parse(text: &str) -> Result<RedisAddress, String> {
        let text = text.trim();
        let url = match text.strip_prefix("env:") {
            Some(var) => std::env::var(var).map_err(|_| {
                format!(
                    "frontier = {text}: the environment variable {var} is not set; set it to a redis:// URL"
                )
            })?,
            None => text.to_owned(),
        };
        let shown = crate::redact_url(&url);
        let parsed = url::Url::parse(&url).map_err(|e| {
            format!("frontier = {shown} is not a URL ({e}); write redis://HOST:PORT/DB, such as redis://127.0.0.1:6379/0")
        })?;
        if !matches!(parsed.scheme(), "redis" | "rediss") || parsed.host_str().is_none_or(str::is_empty) {
            return Err(format!(
                "frontier = {shown} is not a Redis URL; write redis://HOST:PORT/DB (rediss:// for TLS), such as redis://127.0.0.1:6379/0"
            ));
        }
        Ok(RedisAddress { url, shown })
    }

    /// The URL itself, for the client only.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl fmt::Display for RedisAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for RedisAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_hidden_in_every_printed_form() {
        let address = RedisAddress::parse("redis://:hunter2@127.0.0.1:6379/0").unwrap();
        assert_eq!(address.to_string(), "redis://***@127.0.0.1:6379/0");
        assert!(!format!("{address:?}").contains("hunter2"));
        assert!(address.url().contains("hunter2"));
    }

    #[test]
    fn a_url_from_the_environment_and_mistakes_explained() {
        std::env::set_var("SPIDERLING_FLEET_TEST_URL", "redis://:pw@10.0.0.2:6380/1");
        let address = RedisAddress::parse("env:SPIDERLING_FLEET_TEST_URL").unwrap();
        assert_eq!(address.to_string(), "redis://***@10.0.0.2:6380/1");
        let missing = RedisAddress::parse("env:SPIDERLING_FLEET_TEST_NOT_SET").unwrap_err();
        assert!(missing.contains("SPIDERLING_FLEET_TEST_NOT_SET is not set"), "{missing}");
        let http = RedisAddress::parse("http://user:secret@127.0.0.1:6379").unwrap_err();
        assert!(http.contains("not a Redis URL") && !http.contains("secret"), "{http}");
    }
}
