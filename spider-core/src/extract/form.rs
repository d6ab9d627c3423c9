//! An HTML form read from a page, to be filled in and sent, as a browser would: the
//! page's own fields (hidden ones, such as a CSRF token, included) with the caller's
//! values set over them.

use reqwest::Method;
use scraper::{ElementRef, Selector};
use url::Url;

use crate::error::Error;
use crate::extract::document::Document;
use crate::request::Request;

/// A form found on a page, with the fields a browser would send as the page stands.
///
/// What is read, after the HTML standard's form submission, simplified:
/// - the action, resolved against the page's URL (the page itself when there is none);
/// - the method: `post`, else GET (`dialog` is refused: it sends nothing);
/// - every named `<input>`, `<select>` and `<textarea>` inside the form that is not
///   `disabled`: checkboxes and radio buttons only when `checked` (value `on` when they
///   have none), a `<select>`'s selected options (its first when none is), a
///   `<textarea>`'s text; buttons, submit and image inputs, and file inputs are left out.
///
/// [`set`](Self::set) then gives fields the values to send, and
/// [`into_request`](Self::into_request) makes the request. From a spider's `parse`,
/// [`Cx::submit`](crate::Cx::submit) queues it; from the [`start`](crate::Spider::start)
/// hook, [`Start::fetch`](crate::Start::fetch) sends it.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), spider_core::Error> {
/// let page = spider_core::Page::fixture(
///     "https://books.example/catalogue/",
///     r#"<form class="search" action="search">
///          <input name="q"> <input type="checkbox" name="in_stock" checked>
///          <select name="sort"><option value="title">Title</option><option value="price" selected>Price</option></select>
///        </form>"#,
/// )?;
/// let search = page.form("form.search").await?.set("q", "tea");
/// assert_eq!(search.method(), reqwest::Method::GET);
/// let request = search.into_request()?;
/// assert_eq!(request.url().as_str(), "https://books.example/catalogue/search?q=tea&in_stock=on&sort=price");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    action: Url,
    method: Method,
    fields: Vec<(String, String)>,
}

impl Form {
    /// The form `selector` (written `css`) matches in `doc`.
    pub(crate) fn read(doc: &Document<'_>, selector: &Selector, css: &str) -> Result<Form, Error> {
        let refuse = |message: String| Error::Form {
            url: doc.url().clone(),
            selector: css.into(),
            message: message.into(),
        };
        let Some(form) = doc.select(selector).next() else {
            return Err(refuse("no element of the page matches it".to_owned()));
        };
        let tag = form.value().name();
        if tag != "form" {
            return Err(refuse(format!("it matches a <{tag}>, not a <form>")));
        }
        let attr = |name: &str| form.value().attr(name).map(|value| value.trim().to_ascii_lowercase());
        let method = match attr("method").as_deref() {
            Some("post") => Method::POST,
            Some("dialog") => return Err(refuse("its method is `dialog`, which sends nothing".to_owned())),
            _ => Method::GET,
        };
        if method == Method::POST {
            match attr("enctype").as_deref() {
                None | Some("" | "application/x-www-form-urlencoded") => {}
                Some(other) => {
                    return Err(refuse(format!(
                        "it sends its fields as `{other}`, which Spiderling does not; send them with \
                            Request::with_body"
                    )))
                }
            }
        }
        let action = match form.value().attr("action").map(str::trim) {
            None | Some("") => doc.url().clone(),
            Some(action) => {
                doc.url().join(action).map_err(|e| refuse(format!("its action {action:?} is no URL: {e}")))?
            }
        };
        let mut fields = Vec::new();
        for control in form.descendants().filter_map(ElementRef::wrap) {
            push_fields(control, &mut fields);
        }
        Ok(Form { action, method, fields })
    }

    /// Send `value` as the field `name`: the first field of that name takes it and any
    /// others of the name are dropped, or the field is added at the end. Use it for what
    /// a person would type or pick; hidden fields are already there.
    #[must_use]
    pub fn set(mut self, name: &str, value: impl Into<String>) -> Self {
        let value = value.into();
        match self.fields.iter().position(|(field, _)| field == name) {
            Some(first) => {
                self.fields[first].1 = value;
                let mut index = 0;
                self.fields.retain(|(field, _)| {
                    index += 1;
                    index - 1 == first || field != name
                });
            }
            None => self.fields.push((name.to_owned(), value)),
        }
        self
    }

    /// Where the form sends its fields.
    pub fn action(&self) -> &Url {
        &self.action
    }

    /// GET or POST.
    pub fn method(&self) -> Method {
        self.method.clone()
    }

    /// The fields as they will be sent, in page order.
    pub fn fields(&self) -> &[(String, String)] {
        &self.fields
    }

    /// The request that submits the form: a POST of the fields, URL-encoded, to the
    /// action; or a GET of the action with the fields as its query, replacing the
    /// action's own query, as browsers do.
    ///
    /// # Errors
    ///
    /// [`Error::RequestBodyTooLarge`] when the fields pass
    /// [`MAX_REQUEST_BODY`](crate::MAX_REQUEST_BODY).
    pub fn into_request(self) -> Result<Request, Error> {
        let encoded =
            url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&self.fields).finish();
        if self.method == Method::POST {
            return Request::new(self.action)
                .with_method(Method::POST)
                .with_body("application/x-www-form-urlencoded", encoded);
        }
        let mut url = self.action;
        url.set_query((!encoded.is_empty()).then_some(encoded.as_str()));
        Ok(Request::new(url))
    }
}

/// The fields `control` sends, if it is a control that sends any.
fn push_fields(control: ElementRef<'_>, fields: &mut Vec<(String, String)>) {
    let element = control.value();
    let Some(name) = element.attr("name").filter(|name| !name.is_empty()) else { return };
    if element.attr("disabled").is_some() {
        return;
    }
    let name = name.to_owned();
    match element.name() {
        "input" => {
            let kind = element.attr("type").unwrap_or("text").trim().to_ascii_lowercase();
            let value = element.attr("value");
            match kind.as_str() {
                "submit" | "image" | "reset" | "button" | "file" => {}
                "checkbox" | "radio" if element.attr("checked").is_none() => {}
                "checkbox" | "radio" => fields.push((name, value.unwrap_or("on").to_owned())),
                _ => fields.push((name, value.unwrap_or("").to_owned())),
            }
        }
        "textarea" => fields.push((name, control.text().collect())),
        "select" => {
            let options: Vec<ElementRef<'_>> = control
                .descendants()
                .filter_map(ElementRef::wrap)
                .filter(|option| {
                    option.value().name() == "option" && option.value().attr("disabled").is_none()
                })
                .collect();
            let value = |option: &ElementRef<'_>| {
                option
                    .value()
                    .attr("value")
                    .map_or_else(|| option.text().collect::<String>().trim().to_owned(), str::to_owned)
            };
            let selected: Vec<&ElementRef<'_>> =
                options.iter().filter(|option| option.value().attr("selected").is_some()).collect();
            if selected.is_empty() {
                if let Some(first) = options.first().filter(|_| element.attr("multiple").is_none()) {
                    fields.push((name, value(first)));
                }
            } else {
                fields.extend(selected.into_iter().map(|option| (name.clone(), value(option))));
            }
        }
        _ => {}
    }
}

impl Document<'_> {
    /// The form `selector` matches, to fill in and send (see [`Page::form`](crate::Page::form));
    /// `css` is the selector's text, for the error.
    ///
    /// # Errors
    ///
    /// As for [`Page::form`](crate::Page::form).
    pub fn form(&self, selector: &Selector, css: &str) -> Result<Form, Error> {
        Form::read(self, selector, css)
    }
}
