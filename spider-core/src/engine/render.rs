//! A page rendered in a browser from the answer the crawl fetched, and the browser's own
//! requests sent through the crawl (`render`); which pages go to a browser is `tier.rs`'s.

use bytes::Bytes;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
#[cfg(not(feature = "render"))]
use spider_settings::Render;

use super::protocol::{Outcome, PageSlot};
use super::shared::Shared;
use super::tier::Why;
use crate::request::identity::SentAs;
use crate::request::rendering::Rendering;
use crate::request::Request;
use crate::spider::Spider;

/// The page of `request` as a browser renders it from the answer the crawl fetched
/// (`status`, `headers`, `body`), sent as `worn`: its DOM as the new body, or the outcome
/// of a render that failed (another attempt when the browser went away).
#[cfg(feature = "render")]
#[allow(clippy::too_many_arguments)]
pub(super) async fn render<S: Spider>(
    shared: &Shared<S>,
    request: &Request,
    slot: Option<PageSlot>,
    status: StatusCode,
    headers: &HeaderMap,
    body: &Bytes,
    rendering: &Rendering,
    worn: Option<&SentAs>,
    why: Why,
) -> Result<Bytes, Outcome> {
    use crate::error::reason::Reason;
    use crate::error::Error;
    use crate::sinks::failures::Failure;
    use crate::wire::classify::Trouble;
    use crate::wire::render::{Job, RenderError, Waited};

    let tier = &shared.render;
    let agent = worn
        .and_then(|worn| worn.headers.get(reqwest::header::USER_AGENT))
        .and_then(|agent| agent.to_str().ok())
        .unwrap_or(&tier.agent)
        .to_owned();
    let language = worn
        .and_then(|worn| worn.headers.get(reqwest::header::ACCEPT_LANGUAGE))
        .and_then(|language| language.to_str().ok())
        .map(str::to_owned);
    let cookies = worn.and_then(|worn| shared.exchange.identities().cookie_header(worn, request.url()));
    let identity = worn.map(SentAs::id);
    let job = Job {
        identity: identity.as_deref(),
        url: request.url(),
        status,
        headers,
        body,
        rendering,
        agent: &agent,
        language: language.as_deref(),
        cookies: cookies.as_deref(),
        screenshot: tier.screenshots.is_some(),
    };
    let rendered = tier.browsers.render(&job, &Subrequester { shared, page: request, slot }).await;
    shared.tally.browsers_replaced.add(tier.browsers.take_replaced());
    let rendered = match rendered {
        Ok(rendered) => rendered,
        Err(RenderError::Browser(problem)) => {
            let error = Error::Render { url: request.url().clone(), problem };
            tracing::warn!(target: "spiderling", %error, "render failed: tried again");
            let failure = Failure::error(Reason::Render, &error);
            return Err(Outcome::Trouble {
                request: request.clone(),
                trouble: Trouble::TryAgain,
                retry_after: None,
                failure,
            });
        }
        Err(RenderError::Launch(problem)) => {
            return Err(Outcome::Fatal(Error::Render { url: request.url().clone(), problem }));
        }
    };
    let tally = &shared.tally;
    tally.rendered.add(1);
    tally.rendered_lacking.add(u64::from(why == Why::Lacking));
    tally.rendered_learnt.add(u64::from(why == Why::Learnt));
    tally.subrequests.add(rendered.subrequests);
    tally.subrequests_refused.add(rendered.refused);
    tally.render_actions.add(rendered.actions);
    let waited_out = rendered.waited == Waited::TimedOut && !rendering.wait_for.is_empty();
    tally.render_timeouts.add(u64::from(waited_out || rendered.cut_short));
    if rendered.cut_short {
        tracing::warn!(target: "spiderling", url = %request.url(), actions = rendered.actions, "the page's \
            clicks or scrolls ran out of render_timeout (or of their 50) before they were done: read as it \
                stands");
    }
    if let Some(worn) = worn {
        let mut set = HeaderMap::new();
        for line in &rendered.cookies {
            if let Ok(value) = reqwest::header::HeaderValue::from_str(line) {
                set.append(reqwest::header::SET_COOKIE, value);
            }
        }
        shared.exchange.identities().receive(worn, request.url(), &set);
    }
    if let (Some(dir), Some(png)) = (&tier.screenshots, &rendered.screenshot) {
        let host = request.url().host_str().unwrap_or("page");
        let path = dir.join(format!("{host}-{:032x}.png", request.fingerprint().0));
        let written = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, png));
        if let Err(error) = written {
            tracing::warn!(target: "spiderling", path = %path.display(), %error, "the screenshot of a page \
                whose item never appeared could not be written");
        }
    }
    Ok(Bytes::from(rendered.html))
}

/// Without the `render` feature: a crawl that asks to render is refused as it opens, so
/// only a rule's own mode reaches here.
#[cfg(not(feature = "render"))]
#[allow(clippy::too_many_arguments)]
pub(super) async fn render<S: Spider>(
    _: &Shared<S>,
    request: &Request,
    _: Option<PageSlot>,
    _: StatusCode,
    _: &HeaderMap,
    _: &Bytes,
    rendering: &Rendering,
    _: Option<&SentAs>,
    _: Why,
) -> Result<Bytes, Outcome> {
    let mode = rendering.mode.map_or("auto", Render::name);
    let what = format!("the rule of {} (render = \"{mode}\")", request.url());
    Err(Outcome::Fatal(crate::error::Error::left_out(&what, "render")))
}

/// The browser's requests, sent by the crawl once its dispatcher admits them
/// (`subrequests.rs`), through the exchange as the page's identity and on its route.
#[cfg(feature = "render")]
struct Subrequester<'a, S: Spider> {
    shared: &'a Shared<S>,
    page: &'a Request,
    /// The slot the page's request took, on which its own host's requests may ride.
    slot: Option<PageSlot>,
}

#[cfg(feature = "render")]
#[async_trait::async_trait]
impl<S: Spider> crate::wire::render::Subrequests for Subrequester<'_, S> {
    async fn fetch(&self, request: Request) -> Option<crate::wire::transport::Fetched> {
        use super::protocol::{Ask, Pass};
        use crate::wire::{Exchanged, Judge};

        let shared = self.shared;
        let (reply, pass) = tokio::sync::oneshot::channel();
        shared.asks.send(Ask { url: request.url().clone(), page: self.slot, reply }).ok()?;
        // Held until the answer is read: the slot is the request's till then.
        let Ok(Pass::Go(_permit)) = pass.await else { return None };
        #[cfg(feature = "fleet")]
        if let Some(starts) = &shared.spare_starts {
            if !starts.wait_turn().await {
                return None;
            }
        }
        let request = self.page.subrequest(request);
        let (route, wire) = (shared.spider.route(self.page), shared.spider.impersonate(self.page));
        match shared.exchange.send(&request, route, wire, Judge::Nobody).await {
            Ok(Exchanged::Answer(answered)) => Some(answered.fetched),
            Ok(Exchanged::Failed(error)) => {
                tracing::debug!(target: "spiderling", %error, "a request of the browser got no answer");
                None
            }
            Err(error) => {
                tracing::warn!(target: "spiderling", %error, "a request of the browser was refused");
                None
            }
        }
    }
}
