//! One request on its task: answer it (from the cache, or fetched on its route), judge
//! the answer, parse, encode the items (or, for a sitemap, read it: `sitemap`); what it
//! reports back is an [`Outcome`].

mod items;
mod sitemap;
#[cfg(test)]
mod tests;

use std::time::SystemTime;

use super::protocol::{Byproducts, Job, Miss, Outcome, Sample};
use super::render;
use super::shared::Shared;
use super::tier::{Choice, Why};
use crate::error::extract::ExtractError;
use crate::error::reason::Reason;
use crate::error::Error;
use crate::extract::hidden::HiddenLinks;
use crate::extract::page::Page;
use crate::request::Request;
use crate::schedule::cache::{CacheWrite, Cached, Entry};
use crate::schedule::robots::{self, RobotsAnswer};
use crate::sinks::failures::Failure;
use crate::sinks::warc::Archived;
use crate::spider::{Cx, Spider};
use crate::wire::block::Answer;
use crate::wire::classify::{self, Trouble};
use crate::wire::interstitial::{interstitial, Interstitial};
use crate::wire::redirect::{next_hop, Hop};
use crate::wire::route::Routed;
use crate::wire::transport::Fetched;
use crate::wire::{Answered, Exchanged, Judge, Overturned};
use items::Unsorted;

/// Fetch robots.txt. A redirect (RFC 9309 asks to follow five) goes back to the dispatcher
/// as the next hop, so each hop waits for a slot and a rate token.
pub(super) async fn fetch_robots<S: Spider>(shared: &Shared<S>, job: Job, notes: &mut Byproducts) -> Outcome {
    let request = &job.request;
    let fetched = match answer(shared, request, job.cached, true, notes).await {
        Fetch::Answer { fetched, .. } => fetched,
        Fetch::Failed(error) => return Outcome::RobotsUnavailable(robots::unreachable(&error)),
        Fetch::Fatal(error) => return Outcome::Fatal(error),
    };
    shared.tally.status(fetched.status.as_u16());
    match robots::read_answer(request, &fetched, &shared.robots_token, &shared.scope) {
        RobotsAnswer::Rules(rules, memo) => Outcome::Robots(rules, memo),
        RobotsAnswer::Redirect(next) => Outcome::RobotsRedirect(*next),
        RobotsAnswer::Unavailable(reason) => Outcome::RobotsUnavailable(reason),
    }
}

/// Fetch one page, classify the answer and, for a 2xx, parse it and write its items (or
/// read it, when the request is a sitemap).
pub(super) async fn crawl_page<S: Spider>(shared: &Shared<S>, job: Job, notes: &mut Byproducts) -> Outcome {
    let (request, slot) = (job.request, job.slot);
    let (fetched, blocked, consent, new_identity, sent) =
        match answer(shared, &request, job.cached, false, notes).await {
            Fetch::Answer { fetched, blocked, consent, new_identity, sent } => {
                (fetched, blocked, consent, new_identity, sent)
            }
            Fetch::Fatal(error) => return Outcome::Fatal(error),
            Fetch::Failed(error) if error.is_transport() => {
                let failure = Failure::error(error.transport_reason(), &error);
                return Outcome::Trouble { request, trouble: Trouble::TryAgain, retry_after: None, failure };
            }
            Fetch::Failed(error) => {
                let reason = match error {
                    Error::BodyTooLarge { .. } => Reason::BodyTooLarge,
                    _ => Reason::Fetch,
                };
                return Outcome::failed(&request, Failure::error(reason, &error));
            }
        };
    let status = fetched.status;
    shared.tally.status(status.as_u16());
    if sent.is_some() {
        shared.tally.bytes.add(fetched.body.len() as u64);
    }
    if !blocked && status.is_redirection() {
        return redirect(shared, &request, &fetched);
    }
    if blocked || !status.is_success() {
        let code = status.as_u16();
        let retry_after = classify::retry_after(&fetched.headers);
        // 403 and 429 keep their configured reactions; a challenge or a marked page is
        // always worth another identity.
        let (reason, trouble) = if consent {
            let first = sent.as_ref().is_some_and(|sent| sent.first);
            (Reason::ConsentWall, Trouble::PassWall { first })
        } else if blocked && !matches!(code, 403 | 429) {
            (Reason::Blocked, Trouble::SwitchIdentity)
        } else {
            let trouble = classify::classify_status(
                status,
                retry_after.is_some(),
                request.attempts > 0,
                &shared.retry_statuses,
            );
            (Reason::of_status(code), trouble)
        };
        let failure = Failure::status(reason, code);
        return match trouble {
            Trouble::GiveUp => Outcome::failed(&request, failure),
            Trouble::SlowDown | Trouble::SwitchIdentity if new_identity => {
                Outcome::Trouble { request, trouble: Trouble::SwitchIdentity, retry_after: None, failure }
            }
            trouble => Outcome::Trouble { request, trouble, retry_after, failure },
        };
    }
    if request.is_sitemap() {
        return sitemap::read(shared, request, fetched.body).await;
    }

    let (url, method, attempts) = (request.url().clone(), request.method().clone(), request.attempts + 1);
    let rendering = shared.spider.rendering(&request);
    let worn = sent.as_ref().map(|sent| sent.routed.identity.clone());
    let (mut headers, mut body) = (fetched.headers, fetched.body);
    let choice = if crate::extract::content_type::is_html(&headers, &body) {
        shared.render.choose(&rendering)
    } else {
        Choice::AsSent
    };
    let mut rendered = false;
    if let Choice::Render(why) = choice {
        match render::render(shared, &request, slot, status, &headers, &body, &rendering, worn.as_ref(), why)
            .await
        {
            Ok(html) => (headers, body, rendered) = (as_rendered(headers), html, true),
            Err(outcome) => return outcome,
        }
    }
    let mut read = read_page(shared, request.clone(), status, headers.clone(), body, rendered).await;
    if choice == Choice::AsSentThenRender {
        let lacked = read.cx.lacks();
        shared.render.learn(&rendering, lacked);
        if lacked && read.wall.is_none() {
            let body = read.body.clone();
            let why = Why::Lacking;
            match render::render(
                shared,
                &request,
                slot,
                status,
                &headers,
                &body,
                &rendering,
                worn.as_ref(),
                why,
            )
            .await
            {
                Ok(html) => read = read_page(shared, request, status, as_rendered(headers), html, true).await,
                Err(outcome) => return outcome,
            }
        }
    }
    let Read { cx, parsed, request, hidden, wall, .. } = read;
    // Of the page as it was read last: a page read again after its render counts its
    // hidden links once.
    shared.tally.skipped_hidden.add(hidden);
    if let (Some(wall), Some(sent)) = (wall, sent) {
        return soft_block(shared, request, &sent, status.as_u16(), wall, notes);
    }
    // Items emitted before an error are kept: nothing scraped is lost.
    let mut cx = cx;
    let sorted = match items::sort(shared, &request, std::mem::take(&mut cx.items)).await {
        Ok(sorted) => sorted,
        Err(Unsorted::Encode(error)) => return Outcome::Fatal(error),
        Err(Unsorted::Keys(error)) => {
            let failure = Failure::error(Reason::Fetch, &error);
            return Outcome::Trouble { request, trouble: Trouble::TryAgain, retry_after: None, failure };
        }
    };
    if let Err(source) = parsed {
        // An item found only in part is a failed item, an answer that is not the JSON asked
        // for a failed JSON read; any other error a failed parse.
        let reason = match source.downcast_ref::<Error>() {
            _ if source.is::<ExtractError>() => Reason::Item,
            Some(Error::Json { .. }) => Reason::Json,
            Some(Error::ParseTooLong { .. }) => Reason::ParseTooLong,
            _ => Reason::Parse,
        };
        let error = Error::Spider { url: url.clone(), source };
        let failed = Some((url, method, attempts, Failure::error(reason, &error)));
        return Outcome::Parsed { sorted, follows: cx.follows, failed, not_html: cx.not_html, missed: None };
    }
    let missed = cx.no_item.map(|rule| Miss { url, method, rule });
    Outcome::Parsed { sorted, follows: cx.follows, failed: None, not_html: cx.not_html, missed }
}

/// What the spider's `parse` made of a page.
struct Read<S: Spider> {
    cx: Cx<S::Item>,
    parsed: crate::error::Result,
    /// The request, back from the page.
    request: Request,
    /// The body it read, for a render after it.
    body: bytes::Bytes,
    /// Links it skipped as hidden.
    hidden: u64,
    /// What stood in for the page, when it gave nothing.
    wall: Option<Interstitial>,
}

/// Hand the page (`rendered` by a browser or as sent) to the spider's `parse`.
async fn read_page<S: Spider>(
    shared: &Shared<S>,
    request: Request,
    status: reqwest::StatusCode,
    headers: reqwest::header::HeaderMap,
    body: bytes::Bytes,
    rendered: bool,
) -> Read<S> {
    let mut cx = Cx::for_request(&request);
    let html = crate::extract::content_type::is_html(&headers, &body);
    let (url, pool, kept) = (request.url().clone(), shared.pool.clone(), body.clone());
    let hidden = HiddenLinks::new(shared.follow_hidden);
    let mut page = Page::new(url, status, headers, body, request, SystemTime::now(), pool, hidden.clone());
    if rendered {
        page = page.rendered();
    }
    let facts = page.shared_facts();
    let parsed = shared.spider.parse(page, &mut cx).await;
    // Only a page that gave no item is asked whether something stood in for it; of a
    // hand-written `parse` (which judges no rule's duty), only one that gave nothing at
    // all: a page it made requests of (a login form it submitted) is the page it expected.
    let judged_by_rules = cx.lacking.is_some();
    let gave_nothing = cx.items.is_empty() && (judged_by_rules || cx.follows.is_empty());
    let wall = if html && gave_nothing && parsed.is_ok() { interstitial(&kept) } else { None };
    Read { cx, parsed, request: facts.request.clone(), body: kept, hidden: hidden.skipped(), wall }
}

/// The headers of a page the browser rendered: its DOM is UTF-8 HTML, whatever the answer
/// said of its encoding.
fn as_rendered(mut headers: reqwest::header::HeaderMap) -> reqwest::header::HeaderMap {
    use reqwest::header::{HeaderValue, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.remove(CONTENT_LENGTH);
    headers.remove(CONTENT_ENCODING);
    headers
}

/// The answer to `request`: the cached one when the job brought it (after the server
/// confirmed it with a 304, when revalidating), else fetched. A new answer worth keeping
/// (robots.txt's unless 5xx or 429; a page's 2xx or 3xx, never a blocked one) goes in
/// `notes` for the dispatcher to store.
async fn answer<S: Spider>(
    shared: &Shared<S>,
    request: &Request,
    cached: Option<Cached>,
    robots: bool,
    notes: &mut Byproducts,
) -> Fetch {
    let cached = match cached {
        Some(cached) if !cached.revalidate => return from_cache(shared, request, cached),
        // Nothing to confirm it with: fetched again.
        Some(cached) if !cached.has_validators() => None,
        cached => cached,
    };
    #[cfg(feature = "fleet")]
    if let Some(starts) = shared.spare_starts.as_ref().filter(|_| request.start_lapsed) {
        // Its lease's start under the fleet's rate went by while it waited for a slot: a
        // fresh one, or none within the horizon (tried again later, as a timeout is).
        if !starts.wait_turn().await {
            return Fetch::Failed(Error::Timeout { url: request.url().clone() });
        }
    }
    let conditional = cached.as_ref().map(|cached| cached.conditional(request));
    let fetch = fetch_routed(shared, conditional.as_ref().unwrap_or(request), &mut notes.sample).await;
    match (fetch, cached) {
        (Fetch::Answer { fetched, .. }, Some(cached))
            if fetched.status == reqwest::StatusCode::NOT_MODIFIED =>
        {
            shared.tally.revalidated.add(1);
            notes.archive = shared.archive.as_ref().map(|agent| {
                let method = request.method().as_str();
                Archived::new(
                    request.url(),
                    method,
                    agent,
                    fetched.status,
                    fetched.version,
                    &fetched.headers,
                    b"",
                )
            });
            notes.cache = Some(CacheWrite::Touch(cached.fingerprint()));
            from_cache(shared, request, cached)
        }
        (Fetch::Answer { fetched, blocked, consent, new_identity, sent }, _) => {
            let status = fetched.status;
            if let Some(agent) = &shared.archive {
                notes.archive = Some(Archived::new(
                    request.url(),
                    request.method().as_str(),
                    agent,
                    status,
                    fetched.version,
                    &fetched.headers,
                    &fetched.body,
                ));
            }
            let keep = if robots {
                !(status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS)
            } else {
                status.is_success() || status.is_redirection()
            };
            if shared.caching && keep && !blocked {
                let fingerprint = request.fingerprint();
                // With an archive, the body is left to its record, written by the dispatcher.
                let archived = notes.archive.as_ref().map(Archived::digest);
                let entry =
                    Entry::new(fingerprint, request, status, &fetched.headers, &fetched.body, archived);
                notes.cache = entry.map(CacheWrite::Store);
            }
            Fetch::Answer { fetched, blocked, consent, new_identity, sent }
        }
        (other, _) => other,
    }
}

/// A cached answer as if it had just arrived: never blocked (blocked answers are not
/// kept), nothing crossed the network.
fn from_cache<S: Spider>(shared: &Shared<S>, request: &Request, cached: Cached) -> Fetch {
    shared.tally.from_cache.add(1);
    match cached.answer() {
        Ok((status, headers, body)) => {
            let fetched = Fetched {
                status,
                headers,
                body,
                sent: 0,
                received: 0,
                version: reqwest::Version::HTTP_11,
                peer: None,
            };
            Fetch::Answer { fetched, blocked: false, consent: false, new_identity: false, sent: None }
        }
        Err(problem) => Fetch::Failed(Error::Cache { url: request.url().clone(), problem }),
    }
}

/// How an answer from the network was had: its route, for a soft block found by the
/// parse, and the cookies it set.
struct Sent {
    routed: Routed,
    kept: usize,
    /// The identity's first answer.
    first: bool,
}

/// What became of sending a request on its route (one per request, so its large answer
/// is not boxed).
#[allow(clippy::large_enum_variant)]
enum Fetch {
    Answer {
        fetched: Fetched,
        /// Whether the answer means this identity is blocked (see `block`).
        blocked: bool,
        /// Whether the block was a wall that set a cookie: the same identity tries again.
        consent: bool,
        /// Whether a retry leaves with another exit identity, so a block is met by
        /// switching rather than by slowing the host down.
        new_identity: bool,
        /// How it was sent, unless the answer came from the cache (maybe confirmed by a
        /// 304).
        sent: Option<Sent>,
    },
    /// Not answered; the error says why.
    Failed(Error),
    /// A mistake no request can get past: the crawl stops.
    Fatal(Error),
}

/// Send `request` through the exchange on the route the spider's `route` hook chooses,
/// judged by its `is_blocked` hook and the block rules; count what the answer was and
/// leave its verdict and latency in `sample`, for the gauges.
async fn fetch_routed<S: Spider>(
    shared: &Shared<S>,
    request: &Request,
    sample: &mut Option<Sample>,
) -> Fetch {
    let judge = |answer: &Answer<'_>| shared.spider.is_blocked(answer);
    let (route, wire) = (shared.spider.route(request), shared.spider.impersonate(request));
    let sent = shared.exchange.send(request, route, wire, Judge::Spider(&judge)).await;
    match sent {
        Err(error) => Fetch::Fatal(error),
        Ok(Exchanged::Failed(error)) => Fetch::Failed(error),
        Ok(Exchanged::Answer(Answered {
            fetched,
            blocked,
            consent,
            kept,
            first,
            new_identity,
            follows_identity,
            refused_plain,
            sent_at,
            latency,
            routed,
        })) => {
            let impersonated = routed.identity.profile.is_some();
            shared.tally.impersonated.add(u64::from(impersonated));
            shared.tally.http2.add(u64::from(fetched.version == reqwest::Version::HTTP_2));
            shared.tally.refused_plain.add(u64::from(refused_plain));
            if blocked {
                shared.tally.blocked.add(1);
                shared.tally.blocked_impersonated.add(u64::from(impersonated));
            }
            if fetched.status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                shared.tally.throttled.add(1);
            }
            // Through a gateway the peer is the gateway, which says nothing of the server.
            let server = fetched.peer.filter(|_| !routed.proxied());
            *sample = Some(Sample { blocked, follows_identity, sent_at, latency, server });
            let sent = Sent { routed, kept, first };
            Fetch::Answer { fetched, blocked: blocked || consent, consent, new_identity, sent: Some(sent) }
        }
    }
}

/// A page that gave no item and was an interstitial (see `wire::interstitial`): never
/// kept in the cache, and met as a block would have been, or as a wall to pass when it
/// set a cookie.
fn soft_block<S: Spider>(
    shared: &Shared<S>,
    request: Request,
    sent: &Sent,
    status: u16,
    wall: Interstitial,
    notes: &mut Byproducts,
) -> Outcome {
    notes.cache = None;
    tracing::debug!(target: "spiderling", url = %request.url(), wall = wall.as_str(), "an interstitial stood \
        in for the page");
    if sent.kept > 0 {
        let failure = Failure::status(Reason::ConsentWall, status);
        let trouble = Trouble::PassWall { first: sent.first };
        return Outcome::Trouble { request, trouble, retry_after: None, failure };
    }
    shared.tally.blocked.add(1);
    shared.tally.blocked_impersonated.add(u64::from(sent.routed.identity.profile.is_some()));
    let Overturned { follows_identity, refused_plain } = shared.exchange.overturn(&sent.routed, &request);
    shared.tally.refused_plain.add(u64::from(refused_plain));
    if let Some(sample) = &mut notes.sample {
        (sample.blocked, sample.follows_identity) = (true, follows_identity);
    }
    let failure = Failure::status(Reason::Blocked, status);
    Outcome::Trouble { request, trouble: Trouble::SwitchIdentity, retry_after: None, failure }
}

/// The failure a redirect the crawl cannot follow is, or the next hop for the frontier.
fn redirect<S: Spider>(shared: &Shared<S>, request: &Request, fetched: &Fetched) -> Outcome {
    match next_hop(request, fetched.status, &fetched.headers, shared.max_redirects) {
        Hop::To(next) => Outcome::Redirect(*next),
        Hop::NotRedirect | Hop::NoTarget => {
            Outcome::failed(request, Failure::status(Reason::BadRedirect, fetched.status.as_u16()))
        }
        Hop::Loop(chain) => Outcome::failed(request, Failure::error(Reason::RedirectLoop, &chain)),
        Hop::TooMany => {
            let error = Error::TooManyRedirects { url: request.url().clone(), limit: shared.max_redirects };
            Outcome::failed(request, Failure::error(Reason::TooManyRedirects, &error))
        }
    }
}
