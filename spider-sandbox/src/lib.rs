//! Local target sites for Spiderling's examples, tests and benchmarks.
//!
//! Each [`Sandbox`] serves on `127.0.0.1` from a thread of its own (so a test may pause
//! or load its own runtime without touching the server) and records what it received:
//! every request with its arrival time, the most requests in flight at once, the
//! connections accepted. Tests assert on that record, not on the crawler's counters.
//!
//! The demo site is a book shop with a fixed [`catalogue`]; its layout is documented on
//! [`DemoSite`]. Its pages carry an `ETag` and a `Last-Modified` date and answer
//! conditional requests with `304 Not Modified`, so a cache's revalidation can be tested.
//! The hostile site ([`HostileSite`]) rate-limits, bans, fails, stalls, resets
//! connections and serves bad bodies. Either can be served over HTTPS with a
//! self-signed certificate ([`Sandbox::demo_tls`]). A [`FixedSite`] serves the bytes a
//! test gives each path, with the `Content-Type` it gives (or none): pages in legacy
//! encodings, downloads, answers that are not HTML.
//!
//! The [`MembersSite`] is a shop behind a login form with a hidden CSRF token, with a
//! members-only area and a paged JSON API; every site records each request's method and
//! body ([`Hit::body`]).
//!
//! The cookie shop ([`ShopSite`]) knows its visitors by a cookie set on the first page
//! and by their address: a consent wall without the cookie, honeypot links that ban
//! whoever follows one, and a checkout that needs the same cookie from the same address;
//! with a [`SessionLimit`], a captcha for each cookie and address past so many requests
//! in a window (the session-limited site).
//!
//! A [`MockGateway`] is a rotating proxy in front of them: authenticated by username
//! and password, a new exit identity (a loopback source address) per client connection
//! or one per sticky session, and never a connection off the machine. Sites see the
//! exit as the client ([`Hit::peer`]).
//!
//! The client-rendered shop ([`RenderedSite`]) sends empty shells a script fills in from
//! a JSON API (links, a "load more" button, products written after a delay), beside pages
//! served whole, for the rendering tier.
//!
//! A [`RedisServer`] is a real `redis-server` on a free port, for tests of code that
//! keeps its state in Redis; it can be restarted with its data, or killed without it.
//! A [`RedisCluster`] is a real Redis Cluster of them, whose masters can be killed to
//! watch a replica take over.

mod authority;
mod catalogue;
mod conditional;
mod demo;
mod fingerprint;
mod fixed;
mod gateway;
mod haproxy;
mod hostile;
mod members;
mod moto;
mod nginx;
mod postgres;
mod program;
mod raw;
mod record;
mod redis;
mod rendered;
mod server;
mod shop;
mod tls;
mod wire;

pub use catalogue::{catalogue, Book};
pub use demo::DemoSite;
pub use fingerprint::FingerprintSite;
pub use fixed::FixedSite;
pub use gateway::{GatewayConfig, GatewayLog, MockGateway, Proxied};
pub use haproxy::{HaproxyLimit, HaproxyServer};
pub use hostile::{HostileSite, IdentityLimit};
pub use members::MembersSite;
pub use moto::MotoServer;
pub use nginx::{Logged, NginxLimit, NginxServer, NginxSite};
pub use postgres::PostgresServer;
pub use raw::RawSite;
pub use record::{Hit, Observed};
pub use redis::{RedisCluster, RedisServer};
pub use rendered::RenderedSite;
pub use server::Sandbox;
pub use shop::{SessionLimit, ShopSite, ShopTally, CAPTCHA_MARKER, CONSENT_MARKER};
pub use wire::{is_grease, ClientHello, H2Preface, Wire};
