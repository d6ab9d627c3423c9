//! The `frontier` setting: where the fleet's Redis is, a URL given in the settings or held in an environment
//! variable, shown everywhere with its password hidden.

use std::fmt;

/// A Redis URL whose password is never printed: one server (`redis://`, `rediss://` for
/// TLS), or the seed nodes of a Redis Cluster (`redis+cluster://HOST:PORT,HOST:PORT,…`,
/// `rediss+cluster://` for TLS). Over TLS, `?cacert=FILE` names the CA that signed the
/// servers' certificates (else the system's roots are trusted), and `&cert=FILE&key=FILE`
/// a client certificate and its key, as `redis-cli --cacert --cert --key` take them.
#[derive(Clone)]
pub struct RedisAddress {
    url: String,
    shown: String,
    /// A cluster's seed nodes, each as a `redis://` (`rediss://`) URL of its own (with the
    /// password, if any): the client learns the rest of the cluster from the first that
    /// answers.
    cluster: Option<Vec<String>>,
    tls: Option<RedisTls>,
}

/// The files of a TLS connection to Redis, as the URL named them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisTls {
    /// The CA the servers' certificates are checked against (`cacert=`); `None`: the
    /// system's roots.
    pub ca: Option<std::path::PathBuf>,
    /// A client certificate (`cert=`) and its private key (`key=`), PEM files.
    pub client: Option<(std::path::PathBuf, std::path::PathBuf)>,
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
        let (url, files) = tls_files(&url, &shown)?;
        let secure = url.starts_with("rediss");
        let tls = match (secure, files) {
            (true, files) => Some(files),
            (false, files) if files == RedisTls::default() => None,
            (false, _) => {
                return Err(format!(
                "frontier = {shown}: cacert, cert and key are for TLS; write rediss:// (rediss+cluster://)"
            ))
            }
        };
        for scheme in [CLUSTER_SCHEME, TLS_CLUSTER_SCHEME] {
            if let Some(rest) = url.strip_prefix(scheme) {
                let node_scheme = if secure { "rediss" } else { "redis" };
                let cluster = Some(cluster_nodes(rest, &shown, node_scheme)?);
                return Ok(RedisAddress { url, shown, cluster, tls });
            }
        }
        let parsed = url::Url::parse(&url).map_err(|e| {
            format!(
                "frontier = {shown} is not a URL ({e}); write redis://HOST:PORT/DB, such as \
                redis://127.0.0.1:6379/0"
            )
        })?;
        if !matches!(parsed.scheme(), "redis" | "rediss") || parsed.host_str().is_none_or(str::is_empty) {
            return Err(format!(
                "frontier = {shown} is not a Redis URL; write redis://HOST:PORT/DB (rediss:// for TLS), such \
                 as redis://127.0.0.1:6379/0, or redis+cluster://HOST:PORT,HOST:PORT for a Redis Cluster"
            ));
        }
        Ok(RedisAddress { url, shown, cluster: None, tls })
    }

    /// Over TLS, the files the URL named (none: the system's roots, no client
    /// certificate); `None` without TLS.
    pub fn tls(&self) -> Option<&RedisTls> {
        self.tls.as_ref()
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
const TLS_CLUSTER_SCHEME: &str = "rediss+cluster://";

/// `url` without its `cacert`, `cert` and `key` parameters, and the files they name.
fn tls_files(url: &str, shown: &str) -> Result<(String, RedisTls), String> {
    let Some((base, query)) = url.split_once('?') else { return Ok((url.to_owned(), RedisTls::default())) };
    let (mut ca, mut cert, mut key) = (None, None, None);
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value);
        match name {
            "cacert" => ca = Some(std::path::PathBuf::from(value)),
            "cert" => cert = Some(std::path::PathBuf::from(value)),
            "key" => key = Some(std::path::PathBuf::from(value)),
            _ => kept.push(pair),
        }
    }
    let client = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => {
            return Err(format!("frontier = {shown}: a client certificate needs both cert=FILE and key=FILE"))
        }
    };
    let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    Ok((url, RedisTls { ca, client }))
}

fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("v={text}").as_bytes())
        .next()
        .map_or_else(|| text.to_owned(), |(_, value)| value.into_owned())
}

/// The seed nodes of `redis+cluster://[USER:PASSWORD@]HOST:PORT,HOST:PORT,…[/]`, each a
/// URL of `scheme`.
fn cluster_nodes(rest: &str, shown: &str, scheme: &str) -> Result<Vec<String>, String> {
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
        .map(|node| format!("{scheme}://{auth}{node}"))
        .collect();
    let readable = nodes.iter().all(|node| {
        url::Url::parse(node)
            .is_ok_and(|url| url.host_str().is_some_and(|host| !host.is_empty()) && url.port().is_some())
    });
    if nodes.is_empty() || !readable {
        return Err(format!(
            "frontier = {shown} does not name the cluster's nodes; write \
             redis+cluster://HOST:PORT,HOST:PORT,…, such as \
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
    fn tls_files_are_taken_off_the_url_and_only_with_tls() {
        let one =
            RedisAddress::parse("rediss://:pw@127.0.0.1:6380/0?cacert=/etc/ca.pem&cert=c.pem&key=k%20.pem")
                .unwrap();
        assert_eq!(one.url(), "rediss://:pw@127.0.0.1:6380/0");
        let tls = one.tls().unwrap();
        assert_eq!(tls.ca.as_deref(), Some(std::path::Path::new("/etc/ca.pem")));
        assert_eq!(tls.client, Some(("c.pem".into(), "k .pem".into())));
        assert_eq!(RedisAddress::parse("rediss://127.0.0.1:6380").unwrap().tls(), Some(&RedisTls::default()));
        assert!(RedisAddress::parse("redis://127.0.0.1:6379").unwrap().tls().is_none());
        let plain = RedisAddress::parse("redis://127.0.0.1:6379/0?cacert=ca.pem").unwrap_err();
        assert!(plain.contains("write rediss://"), "{plain}");
        let half = RedisAddress::parse("rediss://127.0.0.1:6380/0?cert=c.pem").unwrap_err();
        assert!(half.contains("both cert=FILE and key=FILE"), "{half}");
        let cluster =
            RedisAddress::parse("rediss+cluster://:pw@127.0.0.1:7000,127.0.0.1:7001?cacert=ca.pem").unwrap();
        assert_eq!(
            cluster.cluster_nodes().unwrap(),
            ["rediss://:pw@127.0.0.1:7000", "rediss://:pw@127.0.0.1:7001"]
        );
        assert!(cluster.tls().is_some_and(|tls| tls.ca.is_some()));
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
