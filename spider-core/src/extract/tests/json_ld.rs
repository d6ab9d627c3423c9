//! `json_ld.rs` read through pages made from saved HTML.

use crate::extract::fixture::PageFixture;
use crate::extract::json_ld::*;

fn json_ld(html: &str) -> JsonLd {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let page = PageFixture::new("https://shop.example/p", html).build().unwrap();
    runtime.block_on(page.html(|doc| JsonLd::read(doc.html().root_element()))).unwrap()
}

fn script(json: &str) -> String {
    format!(r#"<script type="application/ld+json">{json}</script>"#)
}

#[test]
fn a_path_through_objects_and_arrays() {
    let ld = json_ld(&script(
        r#"{"@type":"Product","name":" Atlas ","offers":[{"price":12.5,"seller":{"name":"A"}},{"price":9}],"image":["a.jpg","b.jpg"],"isNew":true}"#,
    ));
    assert_eq!(ld.first("name", None), Ok(Some("Atlas".to_owned())));
    assert_eq!(ld.first("offers.price", None), Ok(Some("12.5".to_owned())));
    assert_eq!(ld.first("offers.seller", None), Ok(Some(r#"{"name":"A"}"#.to_owned())));
    assert_eq!(ld.first("image", None), Ok(Some("a.jpg".to_owned())));
    assert_eq!(ld.all("image", None), Ok(vec!["a.jpg".to_owned(), "b.jpg".to_owned()]));
    assert_eq!(ld.all("name", None), Ok(vec!["Atlas".to_owned()]));
    assert_eq!(ld.first("isNew", None), Ok(Some("true".to_owned())));
    assert_eq!(ld.first("offers.currency", None), Ok(None));
    assert_eq!(ld.first("name.first", None), Ok(None));
}

#[test]
fn graphs_arrays_and_types_choose_the_object() {
    let html = [
        script(r#"{"@type":"BreadcrumbList","name":"Home › Maps"}"#),
        script(r#"[{"@type":"Organization","name":"Shop"},{"@type":["Thing","schema:Product"],"name":"Atlas"}]"#),
        script(r#"{"@context":"https://schema.org","@graph":[{"@type":"https://schema.org/Book","name":"Atlas, the book","price":null}]}"#),
    ]
    .concat();
    let ld = json_ld(&html);
    assert_eq!(ld.first("name", None), Ok(Some("Home › Maps".to_owned())));
    assert_eq!(ld.first("name", Some("Product")), Ok(Some("Atlas".to_owned())));
    assert_eq!(ld.first("name", Some("Book")), Ok(Some("Atlas, the book".to_owned())));
    assert_eq!(ld.first("price", Some("Book")), Ok(None), "null is nothing");
    assert_eq!(ld.first("name", Some("Person")), Ok(None));
}

#[test]
fn an_invalid_block_answers_only_when_no_valid_block_has_the_path() {
    let ld = json_ld(&[script(r#"{"name": "Atlas",}"#), script(r#"{"sku": "A-1"}"#)].concat());
    assert_eq!(ld.first("sku", None), Ok(Some("A-1".to_owned())));
    let error = ld.first("name", None).unwrap_err();
    assert!(error.starts_with("block 1 of the page: trailing comma at line 1"), "{error}");
    assert_eq!(ld.all("name", None).unwrap_err(), error);
    assert_eq!(json_ld("<p>no JSON-LD</p>").first("name", None), Ok(None));
}
