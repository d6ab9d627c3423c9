//! The cache without the `state` feature, which brings SQLite: none.

use spider_settings::Config;

use super::entry::{CacheWrite, Cached};
use crate::error::Error;
use crate::request::Request;
use crate::sinks::warc::{Archive, Stored};

/// Without the `state` feature there is no cache file: asking for one is refused, and no
/// value of this type exists.
pub(crate) enum HttpCache {}

impl HttpCache {
    pub(crate) fn open(config: &Config) -> Result<Option<Self>, Error> {
        match config.cache {
            Some(_) => Err(Error::left_out("cache", "state")),
            None => Ok(None),
        }
    }

    pub(crate) fn lookup(&self, _: &Request) -> Result<Option<Cached>, Error> {
        match *self {}
    }

    pub(crate) fn write(&mut self, _: CacheWrite, _: Option<&Stored>) -> Result<(), Error> {
        match *self {}
    }

    pub(crate) fn forget_beyond(&mut self, _: &std::path::Path, _: Archive) -> Result<(), Error> {
        match *self {}
    }

    pub(crate) fn commit(&mut self) -> Result<(), Error> {
        match *self {}
    }
}
