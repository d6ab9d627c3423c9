//! The HTTP cache: every answer kept in one SQLite file, so later runs answer from it
//! without the network, or ask the server only whether it changed.
//!
//! The dispatcher looks a request up before admission: a fresh answer needs no rate token,
//! no host slot and no politeness pause, since nothing is sent. The request's task rebuilds
//! the answer (or, revalidating, sends the request with `If-None-Match` /
//! `If-Modified-Since` and takes a 304 as the cached answer) and hands new answers back for
//! the dispatcher to store: only the dispatcher touches the file. Bodies are stored
//! deflated, or, when the crawl also writes a WARC archive, left in the archive: the
//! cache keeps where the payload's record lies and reads it back from there, so a body is
//! stored once. Blocked answers and failures are never stored, nor answers to a request
//! other than GET or HEAD: a POST (a login, a search, an order) is sent every run, as
//! HTTP caches do (RFC 9111 lets no later POST be answered from a stored one).

mod entry;
#[cfg(not(feature = "state"))]
mod off;
#[cfg(feature = "state")]
mod store;

#[cfg(not(feature = "state"))]
pub(crate) use off::HttpCache;
#[cfg(feature = "state")]
pub(crate) use store::HttpCache;

pub(crate) use entry::{CacheWrite, Cached, Entry};
