//! The `frontier` setting: where the fleet's Redis is, a URL given in the settings or held in an environment
//! variable, shown everywhere with its password hidden.

use std::fmt;

/// A Redis URL whose password is never printed: one server (`redis://`, `rediss://`), or
/// the seed nodes of a Redis Cluster (`redis+cluster://HOST:PORT,HOST:PORT,…`).
#[derive(Clone)]
pub struct RedisAddress {
    url: String,
    shown: String,
    /// A cluster's seed nodes, each as a `redis://` URL of its own (with the password, if
    /// any): the client learns the rest of the cluster from the first that answers.
    cluster: Option<Vec<String>>,
}

impl RedisAddress {
    /// `redis://…` / `rediss://…` / `redis+cluster://…`, or `env:VAR` naming a variable
    /// that holds one.
    ///
    /// # Errors
    ///
    /// A message saying what to write instead; it never holds the password.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_settings::RedisAddress;
    ///
    /// let one = RedisAddress::parse("redis://127.0.0.1:6379/0")?;
    /// assert!(one.cluster_nodes().is_none());
    /// let cluster = RedisAddress::parse("redis+cluster://:pw@10.0.0.1:7000,10.0.0.2:7000")?;
    /// assert_eq!(cluster.cluster_nodes().map(<[String]>::len), Some(2));
    /// assert_eq!(cluster.to_string(), "redis+cluster://***@10.0.0.1:7000,10.0.0.2:7000");
    /// # Ok::<(), String>(())
    /// ```
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
        if let Some(rest) = url.strip_prefix(CLUSTER_SCHEME) {
            let cluster = Some(cluster_nodes(rest, &shown)?);
            return Ok(RedisAddress { url, shown, cluster });
        }
        let parsed = url::Url::parse(&url).map_err(|e| {
            format!("frontier = {shown} is not a URL ({e}); write redis://HOST:PORT/DB, such as redis://127.0.0.1:6379/0")
        })?;
        if !matches!(parsed.scheme(), "redis" | "rediss") || parsed.host_str().is_none_or(str::is_empty) {
            return Err(format!(
                "frontier = {shown} is not a Redis URL; write redis://HOST:PORT/DB (rediss:// for TLS), such as \
                 redis://127.0.0.1:6379/0, or redis+cluster://HOST:PORT,HOST:PORT for a Redis Cluster"
            ));
        }
        Ok(RedisAddress { url, shown, cluster: None })
    }

    /// The URL itself, for the client only.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `text` with every form of this address that holds the password replaced by the
    /// address as shown: for messages that quote what the client said.
    pub fn hide(&self, text: &str) -> String {
        let mut text = text.replace(&self.url, &self.shown);
        for node in self.cluster.iter().flatten() {
            text = text.replace(node.as_str(), &crate::redact_url(node));
        }
        text
    }

    /// A cluster's seed nodes as `redis://` URLs (for the client only: they hold the
    /// password); `None` for one server.
    pub fn cluster_nodes(&self) -> Option<&[String]> {
        self.cluster.as_deref()
    }
}

const CLUSTER_SCHEME: &str = "redis+cluster://";

/// The seed nodes of `redis+cluster://[USER:PASSWORD@]HOST:PORT,HOST:PORT,…[/]`.
fn cluster_nodes(rest: &str, shown: &str) -> Result<Vec<String>, String> {
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (auth, hosts) = match rest.rfind('@') {
        Some(at) => (&rest[..=at], &rest[at + 1..]),
        None => ("", rest),
    };
    if hosts.contains('/') {
        return Err(format!(
            "frontier = {shown}: a Redis Cluster has one database only; drop the /DB after the nodes"
        ));
    }
    let nodes: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|node| !node.is_empty())
        .map(|node| format!("redis://{auth}{node}"))
        .collect();
    let readable = nodes.iter().all(|node| {
        url::Url::parse(node)
            .is_ok_and(|url| url.host_str().is_some_and(|host| !host.is_empty()) && url.port().is_some())
    });
    if nodes.is_empty() || !readable {
        return Err(format!(
            "frontier = {shown} does not name the cluster's nodes; write redis+cluster://HOST:PORT,HOST:PORT,…, such as \
             redis+cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002"
        ));
    }
    Ok(nodes)
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

    #[test]
    fn a_cluster_is_its_seed_nodes_each_with_the_password() {
        let address =
            RedisAddress::parse("redis+cluster://:hunter2@127.0.0.1:7000, 127.0.0.1:7001/").unwrap();
        assert_eq!(
            address.cluster_nodes().unwrap(),
            ["redis://:hunter2@127.0.0.1:7000", "redis://:hunter2@127.0.0.1:7001"]
        );
        assert!(!address.to_string().contains("hunter2") && !format!("{address:?}").contains("hunter2"));
        let database = RedisAddress::parse("redis+cluster://127.0.0.1:7000/2").unwrap_err();
        assert!(database.contains("one database"), "{database}");
        for bad in ["redis+cluster://", "redis+cluster://127.0.0.1", "redis+cluster://:pw@,"] {
            let problem = RedisAddress::parse(bad).unwrap_err();
            assert!(
                problem.contains("does not name the cluster's nodes") && !problem.contains("pw"),
                "{problem}"
            );
        }
    }
}
