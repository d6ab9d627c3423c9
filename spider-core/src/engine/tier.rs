//! Which pages the engine renders in a browser (`render`): `never`, `always`, or `auto`,
//! which reads the answer as sent first and renders only a page that lacks what its rule
//! reads, learning per rule which pages need a browser and checking one in [`RECHECK`] of
//! those again as sent.

use std::collections::HashMap;
use std::sync::Mutex;

use spider_settings::{Config, Render};

use crate::request::rendering::Rendering;

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
    pub(super) agent: String,
    #[cfg(feature = "render")]
    pub(super) screenshots: Option<std::path::PathBuf>,
    #[cfg(feature = "render")]
    pub(super) browsers: crate::wire::render::Browsers,
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
                tracing::info!(target: "spiderling", rule = ?rendering.rule, "pages of this rule lack their \
                    item or links as sent: rendered from now on");
            }
        } else {
            if rule.needs_browser {
                tracing::info!(target: "spiderling", rule = ?rendering.rule, "a page of this rule came whole \
                    as sent: read as sent again");
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
