//! Name resolution for the crawl's own client: the system's, except that `localhost` and
//! every name under `.localhost` are the loopback address, as RFC 6761 asks and browsers
//! and curl answer, whatever the system's resolver knows of them (glibc knows `localhost`
//! alone). So sites served on this machine under names of their own (`shop.localhost`,
//! `api.localhost`) are crawled as the hosts they are, each with its own robots.txt,
//! cookies and politeness.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The crawl's resolver (see the module).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolver;

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            if is_localhost(&host) {
                let loopback =
                    [SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), SocketAddr::from((Ipv6Addr::LOCALHOST, 0))];
                return Ok(Box::new(loopback.into_iter()) as Addrs);
            }
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            Ok(Box::new(found.into_iter()) as Addrs)
        })
    }
}

/// Whether `host` is `localhost` or a name under it (a trailing dot and case aside).
fn is_localhost(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || host.len() > ".localhost".len()
            && host[host.len() - ".localhost".len()..].eq_ignore_ascii_case(".localhost")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_and_names_under_it_are_the_loopback() {
        for name in ["localhost", "LOCALHOST.", "shop.localhost", "a.b.localhost."] {
            assert!(is_localhost(name), "{name}");
        }
        for name in ["localhost.example", "notlocalhost", "example.com", "localhostx"] {
            assert!(!is_localhost(name), "{name}");
        }
    }

    #[tokio::test]
    async fn a_name_under_localhost_resolves_to_127_0_0_1_first() {
        let name: Name = "site-7.localhost".parse().unwrap();
        let first = Resolver.resolve(name).await.unwrap().next();
        assert_eq!(first, Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))));
    }
}
