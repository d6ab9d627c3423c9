//! A derived item compiles each selector once per process, not once per page. Alone in
//! its binary, so no other test compiles selectors meanwhile.

use spiderling::prelude::*;

#[derive(Item)]
#[allow(dead_code)]
struct Pair {
    #[css("h1")]
    title: String,
    #[css("a", attr = "href")]
    links: Vec<Url>,
}

#[tokio::test]
async fn selectors_are_compiled_once_per_process() {
    let before = spiderling::__private::selectors_compiled();
    for i in 0..50 {
        let page = Page::fixture("https://books.example/", format!("<h1>Page {i}</h1><a href='/{i}'>x</a>"))
            .unwrap();
        assert!(page.extract::<Pair>().await.unwrap().is_some());
    }
    assert_eq!(spiderling::__private::selectors_compiled() - before, 2, "two selectors, compiled once each");
}
