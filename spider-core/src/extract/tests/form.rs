//! `form.rs` read through pages made from saved HTML.

use reqwest::Method;

use crate::error::Error;
use crate::extract::form::*;
use crate::extract::page::Page;

async fn form(html: &str) -> Result<Form, Error> {
    Page::fixture("https://shop.example/account/", html).unwrap().form("form").await
}

#[tokio::test]
async fn disabled_unnamed_and_unchecked_controls_send_nothing() {
    let read = form(
        r#"<form method=POST><input name=a value=1><input value=unnamed><input name=b disabled value=2>
           <input type=radio name=r value=x><input type=radio name=r value=y checked>
           <input type=submit name=go value=Go><textarea name=t>hello</textarea>
           <select name=s multiple><option>one<option selected>two<option selected value=3>three</select></form>"#,
    )
    .await
    .unwrap();
    let expected = [("a", "1"), ("r", "y"), ("t", "hello"), ("s", "two"), ("s", "3")];
    let fields: Vec<(&str, &str)> = read.fields().iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(fields, expected);
    assert_eq!((read.method(), read.action().as_str()), (Method::POST, "https://shop.example/account/"));
    let set = read.set("s", "9").set("new", "n");
    assert_eq!(&set.fields()[3..], [("s".to_owned(), "9".to_owned()), ("new".to_owned(), "n".to_owned())]);
}

#[tokio::test]
async fn what_cannot_be_sent_is_a_clear_error() {
    let upload =
        form(r#"<form method=post enctype="multipart/form-data"><input type=file name=f></form>"#).await;
    assert!(upload.unwrap_err().to_string().contains("sends its fields as `multipart/form-data`"));
    let none = Page::fixture("https://shop.example/", "<p>no form</p>").unwrap().form("form#login").await;
    assert_eq!(
        none.unwrap_err().to_string(),
        "form \"form#login\" on https://shop.example/: no element of the page matches it"
    );
    let div = Page::fixture("https://shop.example/", "<div class=f></div>").unwrap().form(".f").await;
    assert!(div.unwrap_err().to_string().contains("it matches a <div>, not a <form>"));
}
