//! A sitemap's 2xx answer on its task: read on the parse pool, instead of `parse`; the
//! URLs it lists become requests through [`Spider::sitemap_request`], the sitemaps an index
//! lists sitemap requests, all one level deeper; why it was not read whole, a failure.

use bytes::Bytes;

use crate::engine::protocol::Outcome;
use crate::engine::shared::Shared;
use crate::error::reason::Reason;
use crate::extract::sitemap::{self, Limits, Problem};
use crate::request::Request;
use crate::sinks::failures::Failure;
use crate::spider::Spider;

/// Read the sitemap `request` was answered with (`body`), and say what comes of it.
pub(in crate::engine) async fn read<S: Spider>(shared: &Shared<S>, request: Request, body: Bytes) -> Outcome {
    let (base, since) = (request.url().clone(), shared.sitemap_since);
    let read = shared.pool.run(move || sitemap::read(&body, &base, since, Limits::PROTOCOL)).await;
    let Ok(listing) = read else {
        return Outcome::failed(&request, Failure::bare(Reason::Panic));
    };
    let entries = listing.pages.len() + listing.sitemaps.len();
    let pages = listing.pages.into_iter().filter_map(|url| shared.spider.sitemap_request(url));
    let sitemaps = listing.sitemaps.into_iter().map(Request::sitemap);
    let follows: Vec<Request> =
        pages.chain(sitemaps).map(|follow| follow.child_of(request.depth(), request.session_key())).collect();
    let failed = listing.problem.map(|problem| {
        let detail = match &problem {
            Problem::Malformed(_) => format!("{problem}; the {entries} URLs before it were taken"),
            _ => problem.to_string(),
        };
        let failure = Failure::error(problem.reason(), &detail);
        (request.url().clone(), request.method().clone(), request.attempts + 1, failure)
    });
    Outcome::Sitemap { follows, failed }
}
