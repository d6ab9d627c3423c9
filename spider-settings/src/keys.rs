//! The one table of settings keys. Each row says what the key's value looks like, what it
//! does and its default, where it can be written, how a text value sets it on a
//! [`Config`] (for `--set` and the environment) and how its value is shown in the
//! settings a crawl prints as it starts. `#[derive(Spider)]` checks `#[spider(...)]`
//! against the same rows at compile time, and its documentation's table of keys, like
//! README's, is [`markdown`]'s: a key means the same everywhere.

use std::path::PathBuf;
use std::time::Duration;

use crate::{Config, DelayRange, RouteSpec};

/// The shape of a key's value. Exhaustive: the derive checks each one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Text,
    /// A list of strings (comma-separated at run time).
    TextList,
    /// A whole number of at least one.
    Positive,
    /// A whole number, zero allowed.
    Count,
    /// `true` or `false`.
    Bool,
    /// A duration such as `500ms`, `2s`, `1m`.
    Duration,
    /// A fixed duration (`500ms`) or a range of them (`1s..3s`).
    Delay,
    /// A profile name: `polite`, `general`, `bulk`.
    Profile,
    /// A CSS selector (compile time only).
    Selector,
    /// A type (compile time only).
    Type,
    /// The engine reading a derived spider's pages, `dom` or `stream`.
    Engine,
    /// A proxy route: `direct`, `env:VAR` or gateway URLs, pools by `,`, tiers by `>`.
    Proxy,
    /// A two-letter country code.
    Country,
    /// Per-host country rules, `*.de=de`.
    GeoRules,
    /// A gateway username template with `{user}`, `{geo}`, `{session}`.
    UserTemplate,
    /// A non-negative decimal number.
    Decimal,
    /// A calendar date, `YYYY-MM-DD`.
    Date,
    /// HTTP statuses, such as `[429, 503]` (comma-separated at run time).
    StatusList,
    /// A browser profile: `none`, `chrome`, `firefox` or `auto`.
    Impersonate,
    /// Where pages are rendered: `never`, `auto` or `always`.
    Render,
    /// Which hosts share a budget: `server`, `domain` or `host`.
    Politeness,
    /// A list of item pipeline stages (compile time only).
    Stages,
}

impl Kind {
    /// The shape in words, for the tables of keys.
    pub fn words(self) -> &'static str {
        match self {
            Kind::Text => "string",
            Kind::TextList => "list of strings",
            Kind::Positive => "whole number ≥ 1",
            Kind::Count => "whole number",
            Kind::Bool => "`true` / `false`",
            Kind::Duration => "duration, such as `\"30s\"`",
            Kind::Delay => "duration or range, such as `\"1s..3s\"`",
            Kind::Profile => "`\"polite\"`, `\"general\"` or `\"bulk\"`",
            Kind::Selector => "CSS selector, checked",
            Kind::Type => "a `#[derive(Item)]` type",
            Kind::Engine => "`\"dom\"` or `\"stream\"`",
            Kind::Proxy => "`\"direct\"`, `\"env:VAR\"` or gateway URLs",
            Kind::Country => "two-letter country code, checked",
            Kind::GeoRules => "list of `\"PATTERN=CC\"`",
            Kind::UserTemplate => "template with `{user}`, `{geo}`, `{session}`",
            Kind::Decimal => "number",
            Kind::Date => "`\"YYYY-MM-DD\"`, checked",
            Kind::StatusList => "list of HTTP statuses",
            Kind::Impersonate => "`\"none\"`, `\"chrome\"`, `\"firefox\"` or `\"auto\"`",
            Kind::Render => "`\"never\"`, `\"auto\"` or `\"always\"`",
            Kind::Politeness => "`\"server\"`, `\"domain\"` or `\"host\"`",
            Kind::Stages => "list of `Pipeline` values",
        }
    }
}

/// Where a key can be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// In `#[spider(...)]`, and at run time with `--set` or `SPIDERLING_KEY`.
    Everywhere,
    /// Only in `#[spider(...)]`: it is compiled into the spider.
    CompileTime,
    /// Only at run time: compiled in, it would act on every run.
    RunTime,
}

/// The part of a crawl a key configures: the settings a crawl prints show one line each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Where the crawl starts and how far it goes.
    Scope,
    /// Slots, rate, pauses, adaptive mode.
    Admission,
    /// Retries and their backoff.
    Retry,
    /// The request on the wire and its answer.
    Fetch,
    /// Who requests claim to be.
    Identity,
    /// How requests leave: proxies and their spend.
    Proxy,
    /// Which pages a browser renders, and the browsers.
    Render,
    /// How pages are read.
    Parse,
    /// Where the items and the crawl itself are kept.
    Store,
    /// How the crawl runs and is watched.
    Run,
}

impl Stage {
    /// The part's name in one word, for messages.
    pub fn word(self) -> &'static str {
        match self {
            Stage::Scope => "scope",
            Stage::Admission => "admission",
            Stage::Retry => "retry",
            Stage::Fetch => "fetch",
            Stage::Identity => "identity",
            Stage::Proxy => "proxy",
            Stage::Render => "render",
            Stage::Parse => "parse",
            Stage::Store => "store",
            Stage::Run => "run",
        }
    }
}

/// Sets a key on a config from its text at run time, or says why not.
type Set = fn(Config, &str) -> Result<Config, String>;
/// The value a config has for a key, as printed; `None` when there is nothing to say.
type Show = fn(&Config) -> Option<String>;

/// One key.
#[derive(Clone, Copy)]
pub struct Key {
    /// The name, as written in `#[spider(...)]`, `--set` and (uppercased, after
    /// `SPIDERLING_`) the environment.
    pub name: &'static str,
    /// The value's shape.
    pub kind: Kind,
    /// What it does.
    pub doc: &'static str,
    /// Its default, in words.
    pub default: &'static str,
    /// Where it can be written.
    pub surface: Where,
    /// The part of a crawl it configures.
    pub stage: Stage,
    set: Option<Set>,
    show: Show,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key").field("name", &self.name).field("kind", &self.kind).finish_non_exhaustive()
    }
}

impl Key {
    /// Whether it can be changed at run time.
    pub fn at_run_time(&self) -> bool {
        self.surface != Where::CompileTime
    }

    /// Whether `#[spider(...)]` may write it.
    pub fn at_compile_time(&self) -> bool {
        self.surface != Where::RunTime
    }

    /// The largest whole number it takes, for the derive to refuse a larger one where
    /// the compiler's message would not name the key.
    pub fn most(&self) -> u64 {
        match self.name {
            "max_redirects" => u64::from(u8::MAX),
            _ => u64::from(u32::MAX),
        }
    }

    /// `config` with this key set from `text`, as `--set` does.
    pub(crate) fn set(&self, config: Config, text: &str) -> Option<Result<Config, String>> {
        self.set.map(|set| set(config, text))
    }

    /// The value `config` has, as printed, if it says something.
    pub(crate) fn show(&self, config: &Config) -> Option<String> {
        (self.show)(config)
    }

    /// A value given for this key, as an error may repeat it: credentials in URLs
    /// starred, headers not at all (their values are tokens).
    pub(crate) fn echo(&self, value: &str) -> String {
        match self.name {
            "headers" => "…".to_owned(),
            _ => format!("{:?}", crate::redact_spec(value)),
        }
    }
}

/// What the builder can set that no key does, and why.
pub const CODE_ONLY: &[(&str, &str)] = &[(
    "seed_cookie",
    "`Config::seed_cookie`: a cookie's value is a secret, so it is given in code (read from \
     where the program keeps secrets) or got by the `start` hook, not written in an \
     attribute or on a command line",
)];

/// Every key, in the order the docs list them and the settings are printed.
pub const KEYS: &[Key] = &[
    Key {
        name: "name",
        kind: Kind::Text,
        stage: Stage::Scope,
        doc: "the spider's name",
        default: "the struct's name in snake_case",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(Config { name: v.to_owned(), ..c })),
        show: |_| None,
    },
    Key {
        name: "start_urls",
        kind: Kind::TextList,
        stage: Stage::Scope,
        doc: "absolute http(s) URLs the crawl starts from, checked",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(Config { start_urls: list(v), ..c })),
        show: |c| listed(&c.start_urls.iter().map(|url| crate::redact_url(url)).collect::<Vec<_>>()),
    },
    Key {
        name: "start_list",
        kind: Kind::Text,
        stage: Stage::Scope,
        doc: "a file of start URLs, one a line (`-` for standard input), read while the crawl runs; \
            a line that is not a URL is logged and skipped",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.start_list(v))),
        show: |c| path(&c.start_list),
    },
    Key {
        name: "allowed_domains",
        kind: Kind::TextList,
        stage: Stage::Scope,
        doc: "domains (and their subdomains) the crawl stays in",
        default: "any domain",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(Config { allowed_domains: list(v), ..c })),
        show: |c| listed(&c.allowed_domains),
    },
    Key {
        name: "sitemaps",
        kind: Kind::Bool,
        stage: Stage::Scope,
        doc: "read the sitemaps the robots.txt of each start URL's host lists in `Sitemap:` lines",
        default: "`false`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.sitemaps(crate::parse_bool(v)?))),
        show: |c| sitemap_group(c).then(|| c.sitemaps.to_string()),
    },
    Key {
        name: "sitemap_urls",
        kind: Kind::TextList,
        stage: Stage::Scope,
        doc: "sitemaps (or sitemap indexes) read as the crawl starts, checked; their URLs are \
            followed like links",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(Config { sitemap_urls: list(v), ..c })),
        show: |c| {
            listed(&c.sitemap_urls.iter().map(|url| crate::redact_url(url)).collect::<Vec<_>>())
                .filter(|_| sitemap_group(c))
        },
    },
    Key {
        name: "sitemap_since",
        kind: Kind::Date,
        stage: Stage::Scope,
        doc: "skip sitemap URLs whose `<lastmod>` is before this day (UTC); those without one are kept",
        default: "none skipped",
        surface: Where::Everywhere,
        set: Some(|c, v| {
            if is_none(v) {
                return Ok(Config { sitemap_since: None, ..c });
            }
            crate::parse_date(v)?;
            Ok(c.sitemap_since(v))
        }),
        show: |c| sitemap_group(c).then(|| c.sitemap_since.map_or("none".to_owned(), |d| d.to_string())),
    },
    Key {
        name: "max_depth",
        kind: Kind::Count,
        stage: Stage::Scope,
        doc: "links followed from a start URL; `none` at run time lifts a limit compiled in",
        default: "no limit",
        surface: Where::Everywhere,
        set: Some(|c, v| {
            if is_none(v) {
                Ok(Config { max_depth: None, ..c })
            } else {
                Ok(c.max_depth(small(v, false)?))
            }
        }),
        show: |c| Some(c.max_depth.map_or("none".to_owned(), |d| d.to_string())),
    },
    Key {
        name: "max_pages",
        kind: Kind::Positive,
        stage: Stage::Scope,
        doc: "pages fetched, then the crawl stops admitting",
        default: "no limit",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.max_pages(crate::parse_count(v, true)?))),
        show: |c| c.max_pages.map(|n| n.to_string()),
    },
    Key {
        name: "max_items",
        kind: Kind::Positive,
        stage: Stage::Scope,
        doc: "items written, then the crawl stops admitting",
        default: "no limit",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.max_items(crate::parse_count(v, true)?))),
        show: |c| c.max_items.map(|n| n.to_string()),
    },
    Key {
        name: "profile",
        kind: Kind::Profile,
        stage: Stage::Admission,
        doc: "a preset of slots and pauses: `polite` (4 slots, 2–5 s), `general` (20, 1–3 s), `bulk` \
            (40, 0.5–1.5 s); the keys written beside it win; at run time, set its keys instead",
        default: "none",
        surface: Where::CompileTime,
        set: None,
        show: |_| None,
    },
    Key {
        name: "concurrency",
        kind: Kind::Positive,
        stage: Stage::Admission,
        doc: "requests in flight over all hosts",
        default: "16",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.concurrency(size(v, true)?))),
        show: |c| Some(c.concurrency.to_string()),
    },
    Key {
        name: "per_host",
        kind: Kind::Positive,
        stage: Stage::Admission,
        doc: "requests in flight to one host",
        default: "8",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.per_host(size(v, true)?))),
        show: |c| Some(c.per_host.to_string()),
    },
    Key {
        name: "politeness",
        kind: Kind::Politeness,
        stage: Stage::Admission,
        doc: "which hosts share one budget of `per_host` slots, 429 pauses and a limiter's pace: \
            `server`, the hosts of one registrable domain (`a.example.co.uk` and \
            `b.example.co.uk`) and those answering from one server address, which a server's \
            limit counts together; `domain`, the registrable domain's alone; `host`, each host \
            alone (many sites behind one CDN address, each limiting on its own)",
        default: "`\"server\"`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.politeness(crate::Politeness::parse(v)?))),
        show: |c| (c.politeness != crate::Politeness::Server).then(|| c.politeness.name().to_owned()),
    },
    Key {
        name: "rpm",
        kind: Kind::Positive,
        stage: Stage::Admission,
        doc: "hard ceiling of requests per minute over the whole crawl, retries and robots.txt \
            included (one of `rpm` and `rps`); `none` at run time lifts a ceiling compiled in",
        default: "none",
        surface: Where::Everywhere,
        set: Some(
            |c, v| if is_none(v) { Ok(Config { rate: None, ..c }) } else { Ok(c.rpm(small(v, true)?)) },
        ),
        show: |c| {
            Some(match c.rate {
                Some(rate) if rate.per() == Duration::from_secs(60) => {
                    rate.requests().map_or(0, |n| n.get()).to_string()
                }
                Some(_) => return None,
                None => "none".to_owned(),
            })
        },
    },
    Key {
        name: "rps",
        kind: Kind::Positive,
        stage: Stage::Admission,
        doc: "hard ceiling of requests per second",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.rps(small(v, true)?))),
        show: |c| {
            c.rate
                .filter(|rate| rate.per() == Duration::from_secs(1))
                .map(|rate| rate.requests().map_or(0, |n| n.get()).to_string())
        },
    },
    Key {
        name: "delay",
        kind: Kind::Delay,
        stage: Stage::Admission,
        doc: "pause each host slot takes between two requests, drawn from the range; `none` at run \
            time for no pause",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| {
            if is_none(v) {
                return Ok(Config { delay: DelayRange::ZERO, ..c });
            }
            let (min, max) = crate::parse_delay(v)?;
            Ok(c.delay_range(min, max))
        }),
        show: |c| Some(range(c.delay)),
    },
    Key {
        name: "adaptive",
        kind: Kind::Bool,
        stage: Stage::Admission,
        doc: "find each host's slots and rate from its block rate, with `concurrency` and `per_host` \
            as ceilings",
        default: "`false`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.adaptive(crate::parse_bool(v)?))),
        show: |c| c.adaptive.then(|| "true".to_owned()),
    },
    Key {
        name: "block_target",
        kind: Kind::Decimal,
        stage: Stage::Admission,
        doc: "the block rate adaptive mode keeps each host under, a fraction",
        default: "0.02",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.block_target(crate::parse_decimal(v)?))),
        show: |c| c.adaptive.then(|| c.block_target.to_string()),
    },
    Key {
        name: "retries",
        kind: Kind::Count,
        stage: Stage::Retry,
        doc: "attempts after the first, for the retry statuses and transport errors",
        default: "3",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.retries(small(v, false)?))),
        show: |c| Some(c.retries.to_string()),
    },
    Key {
        name: "retry_statuses",
        kind: Kind::StatusList,
        stage: Stage::Retry,
        doc: "statuses worth another attempt: 429 backs off its host, 403 is retried as a block, the \
            rest as transient trouble; any other status is given up at once",
        default: "403, 408, 429, 500, 502, 503, 504, 520–524",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.retry_statuses(crate::parse_statuses(v)?))),
        show: |c| (c.retry_statuses != crate::DEFAULT_RETRY_STATUSES).then(|| statuses(&c.retry_statuses)),
    },
    Key {
        name: "backoff",
        kind: Kind::Delay,
        stage: Stage::Retry,
        doc: "the shortest and longest wait before a retry: decorrelated jitter between them, a \
            `Retry-After` as a floor",
        default: "`\"500ms..60s\"`",
        surface: Where::Everywhere,
        set: Some(|c, v| {
            let (base, cap) = crate::parse_delay(v)?;
            Ok(c.backoff(base, cap))
        }),
        show: |c| {
            (c.backoff != defaults().backoff)
                .then(|| format!("{}..{}", duration(c.backoff.base), duration(c.backoff.cap)))
        },
    },
    Key {
        name: "timeout",
        kind: Kind::Duration,
        stage: Stage::Fetch,
        doc: "time for one attempt, connecting to the last byte of the body",
        default: "`\"30s\"`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.timeout(crate::parse_duration(v)?))),
        show: |c| Some(duration(c.timeout)),
    },
    Key {
        name: "impersonate",
        kind: Kind::Impersonate,
        stage: Stage::Fetch,
        doc: "look like a browser on the wire: its TLS ClientHello, HTTP/2 preface and header order, \
            and the headers it sends with its User-Agent (client hints, `sec-fetch-*`), one agent \
            an identity; `auto` sends plain until a host refuses that, then Chrome's, remembered per \
            host; needs the `impersonate` feature",
        default: "`\"none\"`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.impersonate(crate::Impersonate::parse(v)?))),
        show: |c| (c.impersonate != crate::Impersonate::None).then(|| c.impersonate.name().to_owned()),
    },
    Key {
        name: "http2",
        kind: Kind::Bool,
        stage: Stage::Fetch,
        doc: "offer HTTP/2 over TLS (ALPN `h2`, then `http/1.1`), many requests to a host on one \
            connection, each counted against `per_host`; `false` speaks HTTP/1.1 only on the crawl's \
            own client (a browser's wire offers HTTP/2 as the browser does)",
        default: "`true`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.http2(crate::parse_bool(v)?))),
        show: |c| (!c.http2).then(|| "false".to_owned()),
    },
    Key {
        name: "user_agent",
        kind: Kind::Text,
        stage: Stage::Fetch,
        doc: "the `User-Agent` header; its first word is the robots.txt token",
        default: "`spiderling/VERSION`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.user_agent(v))),
        show: |c| Some(c.user_agent.clone()),
    },
    Key {
        name: "headers",
        kind: Kind::TextList,
        stage: Stage::Fetch,
        doc: "headers sent with every request, as `\"Name: value\"`; values are never printed",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(Config { headers: crate::parse_headers(v)?, ..c })),
        show: |c| listed(&c.headers.iter().map(|(name, _)| format!("{name}: …")).collect::<Vec<_>>()),
    },
    Key {
        name: "obey_robots",
        kind: Kind::Bool,
        stage: Stage::Fetch,
        doc: "fetch each host's robots.txt first and obey it, Crawl-delay included",
        default: "`true`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.obey_robots(crate::parse_bool(v)?))),
        show: |c| Some(c.obey_robots.to_string()),
    },
    Key {
        name: "max_redirects",
        kind: Kind::Count,
        stage: Stage::Fetch,
        doc: "the longest chain of redirects followed",
        default: "10",
        surface: Where::Everywhere,
        set: Some(|c, v| {
            Ok(c.max_redirects(
                u8::try_from(crate::parse_count(v, false)?)
                    .map_err(|_| "at most 255 redirects".to_owned())?,
            ))
        }),
        show: |c| (c.max_redirects != defaults().max_redirects).then(|| c.max_redirects.to_string()),
    },
    Key {
        name: "max_body_bytes",
        kind: Kind::Positive,
        stage: Stage::Fetch,
        doc: "the largest body read, after decompression (so also the decompression cap); a larger \
            one fails its request",
        default: "8 MiB",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.max_body_bytes(size(v, true)?))),
        show: |c| (c.max_body_bytes != defaults().max_body_bytes).then(|| c.max_body_bytes.to_string()),
    },
    Key {
        name: "ca_cert",
        kind: Kind::Text,
        stage: Stage::Fetch,
        doc: "a PEM certificate file to trust besides the built-in roots; TLS verification stays on",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.ca_cert(v))),
        show: |c| path(&c.ca_cert),
    },
    Key {
        name: "block_markers",
        kind: Kind::TextList,
        stage: Stage::Fetch,
        doc: "text that marks an answer as a block even with 200, such as a captcha's `g-recaptcha`",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(Config { block_markers: list(v), ..c })),
        show: |c| listed(&c.block_markers),
    },
    Key {
        name: "cookies",
        kind: Kind::Bool,
        stage: Stage::Identity,
        doc: "keep the cookies sites set, one jar per identity, and send them back; a blocked \
            identity is retired with its jar",
        default: "`true`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.cookies(crate::parse_bool(v)?))),
        show: |c| Some(c.cookies.to_string()),
    },
    Key {
        name: "user_agents",
        kind: Kind::TextList,
        stage: Stage::Identity,
        doc: "user agents each identity draws one of and keeps, with the Accept headers its browser \
            sends; `headers` win; at run time separated by `|`, since agents hold commas",
        default: "none: `user_agent` for all",
        surface: Where::Everywhere,
        set: Some(|c, v| {
            Ok(Config {
                user_agents: v
                    .split('|')
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_owned)
                    .collect(),
                ..c
            })
        }),
        show: |c| (!c.user_agents.is_empty()).then(|| format!("{} listed", c.user_agents.len())),
    },
    Key {
        name: "user_agents_file",
        kind: Kind::Text,
        stage: Stage::Identity,
        doc: "a file of user agents, one a line (`#` comments), as `user_agents`",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.user_agents_file(v))),
        show: |c| path(&c.user_agents_file),
    },
    Key {
        name: "follow_hidden",
        kind: Kind::Bool,
        stage: Stage::Identity,
        doc: "follow links a person cannot see (`hidden`, inline `display: none`, `visibility: \
            hidden`, `aria-hidden` off-screen): honeypots",
        default: "`false`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.follow_hidden(crate::parse_bool(v)?))),
        show: |c| Some(c.follow_hidden.to_string()),
    },
    Key {
        name: "proxy",
        kind: Kind::Proxy,
        stage: Stage::Proxy,
        doc: "how requests leave: `direct`, `env:VAR` (gateway URLs held in VAR) or gateway URLs; \
            `,` makes a pool, `>` tiers from cheapest to dearest; credentials only at run time, \
            never in code",
        default: "direct",
        surface: Where::Everywhere,
        set: Some(|c, v| {
            crate::parse_proxy(v, false)?;
            Ok(c.proxy(v))
        }),
        show: |c| c.proxy.as_ref().map(|RouteSpec(spec)| crate::redact_spec(spec)),
    },
    Key {
        name: "geo",
        kind: Kind::Country,
        stage: Stage::Proxy,
        doc: "exit country of proxied requests, put in the gateway username",
        default: "the gateway's choice",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.geo(crate::parse_country(v)?))),
        show: |c| c.proxy.as_ref().and(c.geo.clone()),
    },
    Key {
        name: "geo_rules",
        kind: Kind::GeoRules,
        stage: Stage::Proxy,
        doc: "an exit country per host pattern, such as `\"*.de=de\"`; the first match wins over `geo`",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(Config { geo_rules: crate::parse_geo_rules(v)?, ..c })),
        show: |c| listed(&c.geo_rules.iter().map(|(p, cc)| format!("{p}={cc}")).collect::<Vec<_>>()),
    },
    Key {
        name: "sticky",
        kind: Kind::Bool,
        stage: Stage::Proxy,
        doc: "one exit, with its own cookie jar and agent, per host slot (one request at a time \
            each), or per logical task for a request given a session key (inherited by its \
            follow-ups); replaced when blocked; otherwise every request gets a new exit",
        default: "`false`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.sticky(crate::parse_bool(v)?))),
        show: |c| c.sticky.then(|| "true".to_owned()),
    },
    Key {
        name: "proxy_user_template",
        kind: Kind::UserTemplate,
        stage: Stage::Proxy,
        doc: "the gateway username; a part without a value is left out",
        default: "`{user}-country-{geo}-session-{session}`",
        surface: Where::Everywhere,
        set: Some(|c, v| {
            crate::check_user_template(v)?;
            Ok(c.proxy_user_template(v))
        }),
        show: |c| {
            (c.proxy_user_template != crate::DEFAULT_USER_TEMPLATE).then(|| c.proxy_user_template.clone())
        },
    },
    Key {
        name: "proxy_price_per_gb",
        kind: Kind::Decimal,
        stage: Stage::Proxy,
        doc: "price of a GB through the gateways, for the spend in the summary",
        default: "0",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.proxy_price_per_gb(crate::parse_decimal(v)?))),
        show: |c| (c.proxy_price_per_gb > 0.0).then(|| c.proxy_price_per_gb.to_string()),
    },
    Key {
        name: "proxy_budget",
        kind: Kind::Decimal,
        stage: Stage::Proxy,
        doc: "stop admitting once the proxy spend reaches this; what is in flight finishes, exit code 4",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.proxy_budget(crate::parse_decimal(v)?))),
        show: |c| c.proxy_budget.map(|b| b.to_string()),
    },
    Key {
        name: "parse_threads",
        kind: Kind::Positive,
        stage: Stage::Parse,
        doc: "threads of the HTML parse pool",
        default: "the number of CPUs",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.parse_threads(size(v, true)?))),
        show: |c| (c.parse_threads != defaults().parse_threads).then(|| c.parse_threads.to_string()),
    },
    Key {
        name: "render",
        kind: Kind::Render,
        stage: Stage::Render,
        doc: "render pages in headless Chromium before reading them: `auto` reads the answer as \
            sent first and renders only a page lacking the item's required fields or its rule's \
            links, learnt per rule; every request the browser makes goes through the crawl's \
            identity, route, robots.txt, `per_host` and rate ceiling; needs the `render` feature",
        default: "`\"never\"`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.render(crate::Render::parse(v)?))),
        show: |c| (c.render != crate::Render::Never).then(|| c.render.name().to_owned()),
    },
    Key {
        name: "render_timeout",
        kind: Kind::Duration,
        stage: Stage::Render,
        doc: "time for one page's render, navigation to last action; one that runs out is read \
            as it stands",
        default: "`\"15s\"`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.render_timeout(crate::parse_duration(v)?))),
        show: |c| (c.render != crate::Render::Never).then(|| duration(c.render_timeout)),
    },
    Key {
        name: "render_resources",
        kind: Kind::Bool,
        stage: Stage::Render,
        doc: "let the browser fetch images, fonts and media, refused and counted otherwise",
        default: "`false`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.render_resources(crate::parse_bool(v)?))),
        show: |c| c.render_resources.then(|| "true".to_owned()),
    },
    Key {
        name: "browser_pages",
        kind: Kind::Positive,
        stage: Stage::Render,
        doc: "pages one browser renders at once; the crawl starts a browser per this many slots \
            it renders in",
        default: "4",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.browser_pages(size(v, true)?))),
        show: |c| (c.render != crate::Render::Never).then(|| c.browser_pages.to_string()),
    },
    Key {
        name: "browser_recycle",
        kind: Kind::Positive,
        stage: Stage::Render,
        doc: "pages a browser renders before a fresh one replaces it",
        default: "200",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.browser_recycle(size(v, true)?))),
        show: |c| (c.render != crate::Render::Never).then(|| c.browser_recycle.to_string()),
    },
    Key {
        name: "browser_rss",
        kind: Kind::Positive,
        stage: Stage::Render,
        doc: "MiB of resident memory of a browser's processes past which it is replaced",
        default: "2048",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.browser_rss(crate::parse_count(v, true)?))),
        show: |c| (c.render != crate::Render::Never).then(|| c.browser_rss.to_string()),
    },
    Key {
        name: "screenshot_failures",
        kind: Kind::Text,
        stage: Stage::Render,
        doc: "a folder for a PNG of each rendered page whose item never appeared, \
            `HOST-FINGERPRINT.png`",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.screenshot_failures(v))),
        show: |c| path(&c.screenshot_failures),
    },
    Key {
        name: "extract",
        kind: Kind::Engine,
        stage: Stage::Parse,
        doc: "the engine reading a derived spider's pages: `stream` (one pass, no DOM) when every \
            selector streams, else `dom`; at run time only `dom` can be asked, to compare the two",
        default: "`stream` when every selector streams",
        surface: Where::Everywhere,
        set: Some(|c, v| match v.trim() {
            "dom" => Ok(c.dom_only(true)),
            "stream" => Err("the streaming engine is chosen \
                when the spider is built: `#[spider(extract = \"stream\")]`; at run time only `dom` can be \
                    asked"
                .to_owned()),
            _ => Err("expected `dom`".to_owned()),
        }),
        show: |c| c.dom_only.then(|| "dom".to_owned()),
    },
    Key {
        name: "follow",
        kind: Kind::Selector,
        stage: Stage::Parse,
        doc: "links to follow on every page; links to files that are not pages (archives, media, \
            documents, programs, stylesheets, scripts) are skipped",
        default: "none",
        surface: Where::CompileTime,
        set: None,
        show: |_| None,
    },
    Key {
        name: "item",
        kind: Kind::Type,
        stage: Stage::Parse,
        doc: "the item emitted when a page has one; with `follow`, the short form of one `rule(...)`; with \
            rules of several item types, the spider's item, an enum of them",
        default: "none",
        surface: Where::CompileTime,
        set: None,
        show: |_| None,
    },
    Key {
        name: "pipeline",
        kind: Kind::Stages,
        stage: Stage::Parse,
        doc: "stages every item goes through, in order, after its own checks (required text \
            fields not empty, `#[item(validate = f)]`): each a value whose type implements \
            `Pipeline`, such as `[Tidy, MinPrice(1.0)]`; the item's key (`#[item(key)]`) is read \
            after them, or before the first that turns the item into another type",
        default: "none",
        surface: Where::CompileTime,
        set: None,
        show: |_| None,
    },
    Key {
        name: "output",
        kind: Kind::Text,
        stage: Stage::Store,
        doc: "the items files (`.jsonl`, `.csv` or `.json` picks the format), tables and buckets \
            items go to (`sqlite://PATH?table=T`, `postgres://USER:PASSWORD@HOST/DB?table=T`, \
            `&key=FIELD` to upsert; `s3://BUCKET/PREFIX`), comma-separated (a list in the \
            attribute); `?type=NAME` after a file, `&type=NAME` in a URI, takes the items of \
            that type only; `none` at run time writes none (`./none` is a file of that name)",
        default: "none: items are counted, not written",
        surface: Where::Everywhere,
        set: Some(|c, v| {
            let c = Config { outputs: Vec::new(), stores: Vec::new(), ..c };
            if is_none(v) {
                return Ok(c);
            }
            Ok(list(v).into_iter().fold(c, Config::output))
        }),
        show: |c| {
            let stores = c
                .stores
                .iter()
                .map(|s| crate::StoreUri::parse(s).map_or_else(|_| crate::redact_url(s), |s| s.to_string()));
            let shown: Vec<String> = c.outputs.iter().map(ToString::to_string).chain(stores).collect();
            Some(if shown.is_empty() { "none".to_owned() } else { shown.join(", ") })
        },
    },
    Key {
        name: "warc",
        kind: Kind::Text,
        stage: Stage::Store,
        doc: "archive every page fetched in this WARC/1.1 file (`.warc.gz`, a gzip member per record), with \
            a CDXJ index beside it",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| if is_none(v) { Ok(Config { warc: None, ..c }) } else { Ok(c.warc(v)) }),
        show: |c| path(&c.warc),
    },
    Key {
        name: "warc_max_bytes",
        kind: Kind::Positive,
        stage: Stage::Store,
        doc: "with `warc`, the size past which the archive goes on in a new file (`crawl-00001.warc.gz`, \
            ...), between two pages",
        default: "1 GB",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.warc_max_bytes(crate::parse_count(v, true)?))),
        show: |c| {
            (c.warc.is_some() && c.warc_max_bytes != defaults().warc_max_bytes)
                .then(|| c.warc_max_bytes.to_string())
        },
    },
    Key {
        name: "store_patience",
        kind: Kind::Duration,
        stage: Stage::Store,
        doc:
            "how long a table items go to may stay down (its items held, its writes tried again) before the \
            crawl stops with exit code 5",
        default: "`\"5m\"`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.store_patience(crate::parse_duration(v)?))),
        show: |c| (c.store_patience != defaults().store_patience).then(|| duration(c.store_patience)),
    },
    Key {
        name: "overwrite",
        kind: Kind::Bool,
        stage: Stage::Store,
        doc: "write the output file anew (`-O`); `false` writes after what it holds (`-o`), as \
            JSON Lines or CSV only",
        default: "`true`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.overwrite(crate::parse_bool(v)?))),
        show: |c| (!c.overwrite).then(|| "false".to_owned()),
    },
    Key {
        name: "state",
        kind: Kind::Text,
        stage: Stage::Store,
        doc: "a state file (SQLite) that keeps the crawl across Ctrl-C, crashes and `kill -9`: the \
            same command goes on where it stopped, every item written once",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.state(v))),
        show: |c| path(&c.state),
    },
    Key {
        name: "state_sync",
        kind: Kind::Bool,
        stage: Stage::Store,
        doc: "with a state file, sync the files to the disk at each checkpoint, to survive a power \
            loss too",
        default: "`false`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.state_sync(crate::parse_bool(v)?))),
        show: |c| c.state_sync.then(|| "true".to_owned()),
    },
    Key {
        name: "fresh",
        kind: Kind::Bool,
        stage: Stage::Store,
        doc: "with a state file, discard what it holds and start over, as `--fresh` does",
        default: "`false`",
        surface: Where::RunTime,
        set: Some(|c, v| Ok(c.fresh(crate::parse_bool(v)?))),
        show: |c| c.fresh.then(|| "true".to_owned()),
    },
    Key {
        name: "force",
        kind: Kind::Bool,
        stage: Stage::Store,
        doc: "with `fresh`, discard a state file that is another spider's or not a state file at \
            all, as `--fresh --force` does",
        default: "`false`",
        surface: Where::RunTime,
        set: Some(|c, v| Ok(c.force(crate::parse_bool(v)?))),
        show: |c| c.force.then(|| "true".to_owned()),
    },
    Key {
        name: "frontier",
        kind: Kind::Text,
        stage: Stage::Store,
        doc: "a Redis URL (`redis://[:PASSWORD@]HOST:PORT/DB`, or `env:VAR` holding one): every \
            worker started with it shares one crawl, its queue and its limits",
        default: "none: the crawl lives in this process",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.frontier(v))),
        show: |c| {
            c.frontier.as_ref().map(|f| {
                crate::RedisAddress::parse(f).map_or_else(|_| crate::redact_url(f), |a| a.to_string())
            })
        },
    },
    Key {
        name: "crawl_id",
        kind: Kind::Text,
        stage: Stage::Store,
        doc: "with `frontier`, the name of the shared crawl workers join",
        default: "the spider's name",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.crawl_id(v))),
        show: |c| c.frontier.as_ref().map(|_| c.fleet_crawl().to_owned()),
    },
    Key {
        name: "lease",
        kind: Kind::Duration,
        stage: Stage::Store,
        doc: "with `frontier`, how long a worker that stops answering keeps its requests before \
            others take them",
        default: "`\"60s\"`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.lease(crate::parse_duration(v)?))),
        show: |c| c.frontier.as_ref().map(|_| duration(c.lease)),
    },
    Key {
        name: "partitions",
        kind: Kind::Count,
        stage: Stage::Store,
        doc: "with `frontier`, how many parts a new crawl's hosts are split into, each in a hash \
            slot of its own; 0 for one on a single Redis and one per master on a cluster",
        default: "0",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.partitions(size(v, false)?))),
        show: |c| c.frontier.as_ref().map(|_| c.partitions.to_string()),
    },
    Key {
        name: "cache",
        kind: Kind::Text,
        stage: Stage::Store,
        doc: "an HTTP cache file (SQLite): answers are kept, and later runs are answered from it \
            without the network",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.cache(v))),
        show: |c| path(&c.cache),
    },
    Key {
        name: "cache_ttl",
        kind: Kind::Duration,
        stage: Stage::Store,
        doc: "cached answers older than this are fetched again",
        default: "never expire",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.cache_ttl(crate::parse_duration(v)?))),
        show: |c| c.cache_ttl.map(duration),
    },
    Key {
        name: "revalidate",
        kind: Kind::Bool,
        stage: Stage::Store,
        doc: "ask with `If-None-Match` / `If-Modified-Since` before using a cached answer; a 304 is \
            parsed from the cache",
        default: "`false`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.revalidate(crate::parse_bool(v)?))),
        show: |c| c.revalidate.then(|| "true".to_owned()),
    },
    Key {
        name: "stats",
        kind: Kind::Text,
        stage: Stage::Store,
        doc: "the stats file, the summary as JSON",
        default: "beside the output, `books.jsonl` → `books.stats.json`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.stats(v))),
        show: |c| path(&c.stats),
    },
    Key {
        name: "failures",
        kind: Kind::Text,
        stage: Stage::Store,
        doc: "the failures file, one JSON line per request given up",
        default: "beside the output, `books.failures.jsonl`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.failures(v))),
        show: |c| path(&c.failures),
    },
    Key {
        name: "grace",
        kind: Kind::Duration,
        stage: Stage::Run,
        doc: "after Ctrl-C, how long requests in flight may take to finish before they are abandoned",
        default: "`\"10s\"`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.grace(crate::parse_duration(v)?))),
        show: |c| (c.grace != defaults().grace).then(|| duration(c.grace)),
    },
    Key {
        name: "handle_signals",
        kind: Kind::Bool,
        stage: Stage::Run,
        doc: "stop gracefully on Ctrl-C and SIGTERM; turn off when the program around the crawl \
            handles them",
        default: "`true`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.handle_signals(crate::parse_bool(v)?))),
        show: |c| (!c.handle_signals).then(|| "false".to_owned()),
    },
    Key {
        name: "metrics",
        kind: Kind::Text,
        stage: Stage::Run,
        doc: "serve the gauges in the Prometheus text format at this address, such as \
            `\"127.0.0.1:9898\"`",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.metrics(v))),
        show: |c| c.metrics.clone(),
    },
    Key {
        name: "dashboard",
        kind: Kind::Text,
        stage: Stage::Run,
        doc: "serve a live dashboard at this address (the same as `metrics` serves both); no \
            authentication, keep it on loopback",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.dashboard(v))),
        show: |c| c.dashboard.clone(),
    },
    Key {
        name: "report",
        kind: Kind::Text,
        stage: Stage::Run,
        doc: "write a self-contained HTML report of the crawl to this file when it ends",
        default: "none",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.report(v))),
        show: |c| path(&c.report),
    },
    Key {
        name: "progress",
        kind: Kind::Bool,
        stage: Stage::Run,
        doc: "a live status line on a terminal, else a log line every 5 s",
        default: "`true`",
        surface: Where::Everywhere,
        set: Some(|c, v| Ok(c.progress(crate::parse_bool(v)?))),
        show: |c| (!c.progress).then(|| "false".to_owned()),
    },
];

/// The defaults, which a key shown only when changed compares against.
fn defaults() -> Config {
    Config::new("")
}

/// Whether any sitemap key is set: then all three are shown.
fn sitemap_group(config: &Config) -> bool {
    config.sitemaps || !config.sitemap_urls.is_empty() || config.sitemap_since.is_some()
}

/// A comma-separated list, trimmed, without empty entries.
/// A list as `--set` writes it, comma-separated; `none` is the empty list, as `settings`
/// shows one.
fn list(text: &str) -> Vec<String> {
    if is_none(text) {
        return Vec::new();
    }
    text.split(',').map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned).collect()
}

fn size(text: &str, positive: bool) -> Result<usize, String> {
    usize::try_from(crate::parse_count(text, positive)?).map_err(|e| e.to_string())
}

fn small(text: &str, positive: bool) -> Result<u32, String> {
    u32::try_from(crate::parse_count(text, positive)?).map_err(|e| e.to_string())
}

/// Whether a run-time value is `none`, which clears what the key limits.
fn is_none(text: &str) -> bool {
    text.trim() == "none"
}

/// A list as printed, when it has items: an empty one is left out rather than printed
/// as a word its key would read back as an item.
fn listed<T: AsRef<str>>(items: &[T]) -> Option<String> {
    (!items.is_empty()).then(|| items.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", "))
}

/// A duration as `--set` reads it back: whole hours, minutes, seconds or milliseconds.
fn duration(time: Duration) -> String {
    let ms = time.as_millis();
    match ms {
        0 => "0ms".to_owned(),
        _ if ms.is_multiple_of(3_600_000) => format!("{}h", ms / 3_600_000),
        _ if ms.is_multiple_of(60_000) => format!("{}m", ms / 60_000),
        _ if ms.is_multiple_of(1_000) => format!("{}s", ms / 1_000),
        _ => format!("{ms}ms"),
    }
}

fn path(path: &Option<PathBuf>) -> Option<String> {
    path.as_ref().map(|p| p.display().to_string())
}

fn range(delay: DelayRange) -> String {
    if delay == DelayRange::ZERO {
        "none".to_owned()
    } else if delay.min() == delay.max() {
        duration(delay.min())
    } else {
        format!("{}..{}", duration(delay.min()), duration(delay.max()))
    }
}

fn statuses(codes: &[u16]) -> String {
    codes.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
}

/// The key called `name`.
pub fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|key| key.name == name)
}

/// The closest known key to a misspelt one, when it is close enough to be a typo.
pub fn suggest(unknown: &str) -> Option<&'static str> {
    let names: Vec<&'static str> = KEYS.iter().map(|key| key.name).collect();
    closest(unknown, &names)
}

/// The candidate closest to `unknown`, when it is close enough to be a typo.
pub fn closest<'a>(unknown: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|name| (strsim::damerau_levenshtein(unknown, name), *name))
        .filter(|(distance, name)| *distance <= 2.max(name.len() / 3))
        .min()
        .map(|(_, name)| name)
}

/// ` (did you mean "NAME"?)` for the one of `names` closest to `unknown`, when it is close
/// enough to be a typo; empty otherwise. What a setting that takes one of a few names says
/// of a value it does not know.
pub(crate) fn did_you_mean(unknown: &str, names: &[&str]) -> String {
    closest(unknown, names).map(|near| format!(" (did you mean \"{near}\"?)")).unwrap_or_default()
}

/// Every key, a line each: the value `config` holds (credentials hidden, as the printed
/// settings hide them), where it came from, its shape and its default; what `settings`
/// prints. `origin` names the layer that set a key at run time (an environment variable,
/// `--set`, a flag); any other value that differs from `defaults`' came from the spider
/// (its attribute, or its `profile`).
///
/// # Examples
///
/// ```
/// use spider_settings::Config;
/// let spider = Config::new("books").rpm(600).concurrency(16);
/// let config = spider.clone().set("concurrency", "4").unwrap();
/// let origin = |key: &str| (key == "concurrency").then(|| "--set".to_owned());
/// let table = spider_settings::explain(&config, &Config::new("books"), origin);
/// let line = |key: &str| table.lines().find(|line| line.starts_with(&format!("{key} "))).unwrap().to_owned();
/// assert!(line("concurrency").contains(" 4 ") && line("concurrency").contains("--set"));
/// assert!(line("rpm").contains(" 600 ") && line("rpm").contains("the spider"));
/// assert!(line("timeout").contains("default"));
/// ```
pub fn explain(config: &Config, defaults: &Config, origin: impl Fn(&str) -> Option<String>) -> String {
    let rows: Vec<[String; 5]> = KEYS
        .iter()
        .map(|key| {
            let value = key.show(config);
            let default = key.default.replace('`', "");
            // A key with nothing to show holds its default, whatever a key it shares a
            // value with (`rpm` and `rps`) says.
            let from = origin(key.name).unwrap_or_else(|| {
                let set = value.is_some() && value != key.show(defaults);
                if set { "the spider" } else { "default" }.to_owned()
            });
            let value = value.unwrap_or_else(|| default.clone());
            let kind = key.kind.words().replace('`', "");
            if key.name == "name" {
                return [
                    key.name.to_owned(),
                    config.name().to_owned(),
                    "the spider".to_owned(),
                    kind,
                    default,
                ];
            }
            [key.name.to_owned(), value, from, kind, default]
        })
        .collect();
    let width = |column: usize, most: usize| {
        rows.iter().map(|row| row[column].chars().count()).max().unwrap_or(0).clamp(column + 3, most)
    };
    let (name, value, from) = (width(0, 24), width(1, 40), width(2, 36));
    let mut table = format!("{:name$}  {:value$}  {:from$}  {}\n", "key", "value", "from", "kind · default");
    for [key, shown, origin, kind, default] in rows {
        table.push_str(&format!(
            "{key:name$}  {shown:value$}  {origin:from$}  {kind} · default \
            {default}\n"
        ));
    }
    table
}

/// The table of every key in Markdown, as the derive's documentation and README print it.
pub fn markdown() -> String {
    let mut table = String::from("| key | value | what it does | default |\n| --- | --- | --- | --- |\n");
    for key in KEYS {
        let only = match key.surface {
            Where::Everywhere => "",
            Where::CompileTime => " (in `#[spider(...)]` only)",
            Where::RunTime => " (at run time only)",
        };
        table.push_str(&format!(
            "| `{}` | {} | {}{only} | {} |\n",
            key.name,
            key.kind.words().replace('|', "\\|"),
            key.doc.replace('|', "\\|"),
            key.default.replace('|', "\\|")
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value of each shape that sets something other than the default.
    fn sample(key: &Key) -> &'static str {
        match (key.name, key.kind) {
            ("extract", _) => "dom",
            ("user_agents", _) => "a/1 | b/2",
            ("proxy", _) => "http://gw.example:8000",
            ("frontier", _) => "redis://127.0.0.1:6379/0",
            ("metrics" | "dashboard", _) => "127.0.0.1:9898",
            ("block_target", _) => "0.05",
            ("headers", _) => "X-A: 1, X-B: 2",
            (_, Kind::Text) => "value.txt",
            (_, Kind::TextList) => "a, b",
            (_, Kind::Positive | Kind::Count) => "7",
            (_, Kind::Bool) if key.default == "`true`" => "false",
            (_, Kind::Bool) => "true",
            (_, Kind::Duration) => "3s",
            (_, Kind::Delay) => "1s..2s",
            (_, Kind::Country) => "de",
            (_, Kind::GeoRules) => "*.de=de",
            (_, Kind::UserTemplate) => "{user}-{session}",
            (_, Kind::Decimal) => "2.5",
            (_, Kind::Date) => "2026-01-01",
            (_, Kind::StatusList) => "429, 503",
            (_, Kind::Impersonate) => "chrome",
            (_, Kind::Render) => "auto",
            (_, Kind::Politeness) => "host",
            (_, Kind::Profile | Kind::Selector | Kind::Type | Kind::Engine | Kind::Proxy | Kind::Stages) => {
                ""
            }
        }
    }

    /// What a key shows only beside: adaptive mode's target, a fleet's name and lease, a
    /// proxy's country, the rendering tier's bounds.
    fn beside(name: &str) -> Option<&'static str> {
        match name {
            "block_target" => Some("adaptive"),
            "crawl_id" | "lease" | "partitions" => Some("frontier"),
            "geo" => Some("proxy"),
            "render_timeout" | "browser_pages" | "browser_recycle" | "browser_rss" => Some("render"),
            "warc_max_bytes" => Some("warc"),
            _ => None,
        }
    }

    #[test]
    fn every_run_time_key_sets_its_value_and_the_printed_settings_show_it() {
        for key in KEYS.iter().filter(|key| key.at_run_time()) {
            let mut config = Config::new("shop");
            if let Some(other) = beside(key.name).and_then(find) {
                config = other
                    .set(config, sample(other))
                    .and_then(Result::ok)
                    .unwrap_or_else(|| panic!("{}", other.name));
            }
            let config = key.set(config, sample(key)).unwrap_or_else(|| panic!("{} sets", key.name));
            let config = config.unwrap_or_else(|e| panic!("{} = {:?}: {e}", key.name, sample(key)));
            let shown = config.to_string();
            if key.name != "name" {
                assert!(shown.contains(&format!("{} = ", key.name)), "{} is not shown:\n{shown}", key.name);
            }
        }
    }

    #[test]
    fn what_the_settings_print_reads_back_as_the_same_setting() {
        // Their values are not printed: agents are long, headers hold tokens.
        let unprinted = ["user_agents", "headers"];
        for key in KEYS.iter().filter(|key| key.at_run_time() && !unprinted.contains(&key.name)) {
            let mut base = Config::new("shop");
            if let Some(other) = beside(key.name).and_then(find) {
                base = other
                    .set(base, sample(other))
                    .and_then(Result::ok)
                    .unwrap_or_else(|| panic!("{}", other.name));
            }
            let sampled = key.set(base.clone(), sample(key)).and_then(Result::ok);
            for config in [Some(base.clone()), sampled].into_iter().flatten() {
                let Some(shown) = key.show(&config) else { continue };
                let again = key.set(base.clone(), &shown).and_then(Result::ok);
                let again = again.unwrap_or_else(|| panic!("{} = {shown} does not read back", key.name));
                assert_eq!(key.show(&again).as_deref(), Some(shown.as_str()), "{}", key.name);
                assert_eq!(again.to_string(), config.to_string(), "{} = {shown}", key.name);
            }
        }
        let slow = Config::new("shop").timeout(Duration::from_millis(1500)).lease(Duration::from_secs(7200));
        assert_eq!(find("timeout").and_then(|key| key.show(&slow)).as_deref(), Some("1500ms"));
        let lifted = find("max_depth").and_then(|key| key.set(Config::new("shop").max_depth(3), "none"));
        assert_eq!(lifted.and_then(Result::ok).map(|config| config.max_depth), Some(None));
    }

    #[test]
    fn keys_of_the_attribute_alone_are_refused_at_run_time_and_each_key_is_in_the_table_once() {
        for key in KEYS.iter().filter(|key| !key.at_run_time()) {
            assert!(key.set(Config::new("shop"), "x").is_none(), "{}", key.name);
        }
        let table = markdown();
        for key in KEYS {
            assert_eq!(table.matches(&format!("| `{}` |", key.name)).count(), 1, "{}", key.name);
        }
        assert_eq!(table.lines().count(), KEYS.len() + 2);
    }
}
