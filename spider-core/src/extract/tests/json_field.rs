//! `json_field.rs` read through pages made from saved HTML.

use crate::error::extract::ExtractError;
use crate::extract::fixture::PageFixture;
use crate::extract::json_field::*;

async fn read(
    body: &str,
    pointer: &'static str,
) -> (Result<Option<String>, ExtractError>, Result<Vec<String>, ExtractError>) {
    let page = PageFixture::new("https://shop.example/api/p/1", body)
        .content_type("application/json")
        .build()
        .unwrap();
    page.html(move |doc| {
        let json = JsonBody::read(doc);
        (json_first(&json, "f", pointer), json_all(&json, "f", pointer))
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn values_read_as_the_module_says() {
    let body = r#"{"name": " Tea ", "offers": [{"price": 4.5}, {"price": null}], "tags": ["green", null, "loose"], "a/b": {"~": true}}"#;
    assert_eq!(read(body, "/name").await.0.unwrap().as_deref(), Some("Tea"));
    assert_eq!(read(body, "/offers/0/price").await.0.unwrap().as_deref(), Some("4.5"));
    assert_eq!(read(body, "/offers/1/price").await.0.unwrap(), None, "null is no value");
    assert_eq!(read(body, "/missing").await.1.unwrap(), Vec::<String>::new());
    assert_eq!(read(body, "/tags").await.1.unwrap(), ["green", "loose"]);
    assert_eq!(read(body, "/a~1b/~0").await.0.unwrap().as_deref(), Some("true"), "escapes of RFC 6901");
    assert_eq!(read(body, "/offers/0").await.0.unwrap().as_deref(), Some(r#"{"price":4.5}"#));
}

#[tokio::test]
async fn a_page_that_is_not_json_is_an_error_of_the_field() {
    let error = read("<html>", "/name").await.0.unwrap_err();
    assert_eq!(
        error.to_string(),
        "field `f` (JSON `/name`): the page is not JSON: expected value at line 1 column 1"
    );
}
