//! A site of fixed answers, each path with the `Content-Type` and bytes a test gives it:
//! for what the demo shop never serves, such as pages in legacy encodings, downloads and
//! answers without a `Content-Type`.

use std::collections::BTreeMap;

use bytes::Bytes;

/// Fixed answers by path; any other path is answered 404 (robots.txt too, unless given).
///
/// # Examples
///
/// ```
/// use spider_sandbox::{FixedSite, Sandbox};
///
/// let site = FixedSite::new()
///     .answer("/", Some("text/html"), r#"<a href="/setup.py">setup</a>"#)
///     .answer("/setup.py", Some("text/x-python"), "print('hello')")
///     .answer("/raw", None, b"\x00\x01".to_vec());
/// let sandbox = Sandbox::fixed(site)?;
/// assert!(sandbox.url().starts_with("http://127.0.0.1:"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct FixedSite {
    answers: BTreeMap<String, Fixed>,
}

/// One path's answer.
#[derive(Debug, Clone)]
pub(crate) struct Fixed {
    /// The `Content-Type` sent, or none at all.
    pub(crate) content_type: Option<String>,
    pub(crate) body: Bytes,
}

impl FixedSite {
    /// A site with no answers yet.
    pub fn new() -> Self {
        FixedSite::default()
    }

    /// Answer `path` (without its query) with 200, `body` and `content_type`, or no
    /// `Content-Type` header when `None`.
    #[must_use]
    pub fn answer(mut self, path: &str, content_type: Option<&str>, body: impl Into<Vec<u8>>) -> Self {
        let fixed = Fixed { content_type: content_type.map(str::to_owned), body: Bytes::from(body.into()) };
        self.answers.insert(path.to_owned(), fixed);
        self
    }

    /// The answer of `path`, if it has one.
    pub(crate) fn get(&self, path: &str) -> Option<&Fixed> {
        self.answers.get(path)
    }
}
