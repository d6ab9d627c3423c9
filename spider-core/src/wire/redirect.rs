//! Where a redirect leads. Redirects are never followed by the client: the crawl sends
//! each hop back through the dispatcher (a page's through the frontier, so a target is
//! deduplicated and admitted like any link; a robots.txt's waits for a slot and a token
//! like its first request), while the start hook and `Robots::fetch` follow theirs at
//! once; all of them read the hop here, so a loop or a chain too long is the same thing
//! everywhere.

use reqwest::header::{HeaderMap, LOCATION};
use reqwest::StatusCode;

use crate::request::Request;

/// The hop an answer asks for.
#[derive(Debug)]
pub(crate) enum Hop {
    /// The answer is no redirect.
    NotRedirect,
    /// The request for the next hop.
    To(Box<Request>),
    /// A redirect without a `Location` that resolves against the request's URL.
    NoTarget,
    /// A hop back to a URL of the chain, the request's own included: the chain, as
    /// `a → b → a`.
    Loop(String),
    /// The chain already has `limit` hops.
    TooMany,
}

/// The hop `status` and `headers`, answering `request`, ask for, when the chain may have
/// at most `limit` hops.
pub(crate) fn next_hop(request: &Request, status: StatusCode, headers: &HeaderMap, limit: u8) -> Hop {
    if !status.is_redirection() {
        return Hop::NotRedirect;
    }
    let target = headers
        .get(LOCATION)
        .and_then(|location| location.to_str().ok())
        .and_then(|location| request.url().join(location).ok());
    let Some(target) = target else { return Hop::NoTarget };
    if request.passed(&target) {
        return Hop::Loop(request.chain_to(&target));
    }
    if request.redirects >= limit {
        return Hop::TooMany;
    }
    Hop::To(Box::new(request.redirected(target, status.as_u16())))
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn to(location: &'static str) -> HeaderMap {
        HeaderMap::from_iter([(LOCATION, HeaderValue::from_static(location))])
    }

    #[test]
    fn a_hop_a_loop_a_missing_target_and_a_chain_too_long() {
        let first = Request::get("http://h.example/a").unwrap();
        let found = StatusCode::FOUND;
        let Hop::To(second) = next_hop(&first, found, &to("/b"), 2) else { panic!("a hop") };
        assert_eq!(second.url().as_str(), "http://h.example/b");
        match next_hop(&second, found, &to("/a"), 2) {
            Hop::Loop(chain) => {
                assert_eq!(chain, "http://h.example/a → http://h.example/b → http://h.example/a")
            }
            other => panic!("{other:?}"),
        }
        let Hop::To(third) = next_hop(&second, found, &to("/c"), 2) else { panic!("a hop") };
        assert!(matches!(next_hop(&third, found, &to("/d"), 2), Hop::TooMany));
        assert!(matches!(next_hop(&first, found, &HeaderMap::new(), 2), Hop::NoTarget));
        assert!(matches!(next_hop(&first, StatusCode::OK, &to("/b"), 2), Hop::NotRedirect));
    }
}
