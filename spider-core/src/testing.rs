//! Helpers for testing a spider without a server.

use crate::error::Result;
use crate::page::Page;
use crate::request::Request;
use crate::spider::{Cx, Spider};

/// Run `spider`'s `parse` on one page (see [`Page::fixture`]) and return the items it
/// emitted and the requests it would follow.
///
/// # Errors
///
/// The error `parse` returned.
///
/// # Examples
///
/// ```no_run
/// # async fn demo<S: spider_core::Spider>(spider: S) -> spider_core::Result {
/// let page = spider_core::Page::fixture("https://books.example/", "<h1>Saved page</h1>")?;
/// let (items, follows) = spider_core::testing::parse_page(&spider, page).await?;
/// # Ok(()) }
/// ```
pub async fn parse_page<S: Spider>(spider: &S, page: Page) -> Result<(Vec<S::Item>, Vec<Request>)> {
    let mut cx = Cx::for_request(page.request());
    spider.parse(page, &mut cx).await?;
    Ok((cx.items, cx.follows))
}
