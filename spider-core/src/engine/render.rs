//! Which pages the engine renders in a browser, and the browser's requests sent through
//! the crawl (`render`): `never`, `always`, or `auto`, which reads the answer as sent first
//! and renders only a page that lacks what its rule reads, learning per rule which pages
//! need a browser and checking one in [`RECHECK`] of those again as sent.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use spider_settings::{Config, Render};

use super::protocol::{Outcome, PageSlot};
use super::Shared;
use crate::request::identity::SentAs;
use crate::request::rendering::Rendering;
use crate::request::Request;
use crate::spider::Spider;

/// Pages of a rule lacking their item or links as sent, in a row, before auto mode renders
/// the rule's pages at once.
const LEARN_AFTER: u32 = 3;
/// One page in this many of a rule learnt to need a browser is read as sent first, so a
/// site that starts sending its pages whole is noticed.
const RECHECK: u32 = 10;

/// How a page is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Choice {
    /// As the server sent it.
    AsSent,
    /// Rendered first, for this reason.
    Render(Why),
    /// As sent, then rendered if it lacks what its rule reads (auto mode).
    AsSentThenRender,
}

/// Why a page was rendered, as the summary counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// `render = "always"`, for the crawl or the rule.
    Always,
    /// Auto mode learnt its rule needs a browser.
    Learnt,
    /// Auto mode found it lacking as sent.
    Lacking,
}

/// What auto mode knows of one rule.
#[derive(Debug, Default)]
struct Learning {
    /// Its pages lacking as sent, in a row.
    lacking: u32,
    /// Its pages go to the browser at once.
    needs_browser: bool,
    /// Its pages since one was checked as sent.
    since_check: u32,
}

/// The crawl's rendering tier: its mode, what auto mode learnt, and the browsers.
pub(super) struct Tier {
    mode: Render,
    learnt: Mutex<HashMap<Option<usize>, Learning>>,
    /// The agent a page's script sees when its identity sets none.
    #[cfg(feature = "render")]
    agent: String,
    #[cfg(feature = "render")]
    screenshots: Option<std::path::PathBuf>,
    #[cfg(feature = "render")]
    browsers: crate::wire::render::Browsers,
}

impl Tier {
    pub(super) fn new(config: &Config) -> Self {
        Tier {
            mode: config.render,
            learnt: Mutex::new(HashMap::new()),
            #[cfg(feature = "render")]
            agent: config.user_agent.clone(),
            #[cfg(feature = "render")]
            screenshots: config.screenshot_failures.clone(),
            #[cfg(feature = "render")]
            browsers: crate::wire::render::Browsers::new(config),
        }
    }

    /// How the page of a request with `rendering` is read.
    pub(super) fn choose(&self, rendering: &Rendering) -> Choice {
        match rendering.mode.unwrap_or(self.mode) {
            Render::Always => Choice::Render(Why::Always),
            Render::Auto => {
                let mut learnt = self.learnt.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let rule = learnt.entry(rendering.rule).or_default();
                if !rule.needs_browser {
                    return Choice::AsSentThenRender;
                }
                rule.since_check += 1;
                if rule.since_check >= RECHECK {
                    rule.since_check = 0;
                    Choice::AsSentThenRender
                } else {
                    Choice::Render(Why::Learnt)
                }
            }
            _ => Choice::AsSent,
        }
    }

    /// What a page of `rendering`'s rule read as sent showed: whether it `lacked` what the
    /// rule reads.
    pub(super) fn learn(&self, rendering: &Rendering, lacked: bool) {
        let mut learnt = self.learnt.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let rule = learnt.entry(rendering.rule).or_default();
        if lacked {
            rule.lacking += 1;
            if rule.lacking >= LEARN_AFTER && !rule.needs_browser {
                rule.needs_browser = true;
                tracing::info!(target: "spiderling", rule = ?rendering.rule, "pages of this rule lack their item or links as sent: rendered from now on");
            }
        } else {
            if rule.needs_browser {
                tracing::info!(target: "spiderling", rule = ?rendering.rule, "a page of this rule came whole as sent: read as sent again");
            }
            *rule = Learning::default();
        }
    }

    /// Close the browsers, at the end of the crawl.
    pub(super) async fn close(&self) {
        #[cfg(feature = "render")]
        self.browsers.close().await;
    }
}

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
        tracing::warn!(target: "spiderling", url = %request.url(), actions = rendered.actions, "the page's clicks or scrolls ran out of render_timeout (or of their 50) before they were done: read as it stands");
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
            tracing::warn!(target: "spiderling", path = %path.display(), %error, "the screenshot of a page whose item never appeared could not be written");
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

#[cfg(test)]
mod tests {
    use super::*;

    fn auto(rule: usize) -> Rendering {
        Rendering { mode: Some(Render::Auto), rule: Some(rule), ..Rendering::default() }
    }

    #[test]
    fn auto_mode_learns_a_rule_after_three_lacking_pages_and_checks_one_in_ten() {
        let tier = Tier::new(&Config::new("shop"));
        let (products, listings) = (auto(0), auto(1));
        for _ in 0..LEARN_AFTER {
            assert_eq!(tier.choose(&products), Choice::AsSentThenRender);
            tier.learn(&products, true);
        }
        // Learnt: to the browser at once, but for one page in ten read as sent first.
        let choices: Vec<Choice> = (0..20).map(|_| tier.choose(&products)).collect();
        let checks = choices.iter().filter(|choice| **choice == Choice::AsSentThenRender).count();
        assert_eq!(checks, 2, "{choices:?}");
        assert!(choices.iter().all(|c| matches!(c, Choice::AsSentThenRender | Choice::Render(Why::Learnt))));
        // Another rule learns nothing from it.
        assert_eq!(tier.choose(&listings), Choice::AsSentThenRender);
        // A check that finds the page whole sends the rule back to reading as sent.
        tier.learn(&products, false);
        assert_eq!(tier.choose(&products), Choice::AsSentThenRender);
        // Lacking pages not in a row teach nothing.
        for lacked in [true, true, false, true, true, false] {
            tier.learn(&products, lacked);
        }
        assert_eq!(tier.choose(&products), Choice::AsSentThenRender);
    }

    #[test]
    fn the_rule_mode_wins_over_the_crawls() {
        let tier = Tier::new(&Config::new("shop").render(Render::Always));
        assert_eq!(tier.choose(&Rendering::default()), Choice::Render(Why::Always));
        let never = Rendering { mode: Some(Render::Never), ..Rendering::default() };
        assert_eq!(tier.choose(&never), Choice::AsSent);
    }
}
