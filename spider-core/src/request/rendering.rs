//! How a request's page is rendered in the browser, when it is: what the spider asks of
//! the render, request by request.

use spider_settings::Render;

/// What a page's render waits for and does before it is read, and where the page is
/// rendered. A derived spider's come from the rule that reached the request
/// (`rule(..., render = "always", wait_for = ".price", click = "button.more", scroll)`)
/// and the selectors of its item's required fields.
///
/// # Examples
///
/// ```
/// use spider_core::{Render, Rendering};
///
/// let listing = Rendering { mode: Some(Render::Always), click: Some("button.more"), ..Rendering::default() };
/// assert!(listing.wait_for.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendering {
    /// Where the page is rendered; `None` for the crawl's `render` setting.
    pub mode: Option<Render>,
    /// Selectors that must all match before the page is read (the item's required fields
    /// and the rule's `wait_for`); with none, the page is read once its network is quiet.
    pub wait_for: Vec<&'static str>,
    /// Scroll to the bottom until no new links come.
    pub scroll: bool,
    /// Click the element this selector finds until it is gone (a "load more" button).
    pub click: Option<&'static str>,
    /// The rule that reached the request, by number: auto mode learns per rule which
    /// pages need a browser.
    pub rule: Option<usize>,
}
