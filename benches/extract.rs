//! A derived item read from a saved book page of about 15 KB (`fixtures/book.html`: a
//! category sidebar, the book, its description and a table, eight related books).
//!
//! - `parse_and_extract`: [`Page::extract`], what a derived spider pays per page: the hop to
//!   the parse pool and back, the HTML parse, the selectors;
//! - `parse`: the HTML parse alone, on the bench's thread;
//! - `extract`: the selectors and conversions alone, on a document already parsed (timed
//!   inside one parse-pool job);
//! - `item_stream` / `item_dom`: a derived spider with only `item = Book`, the item alone,
//!   read by each engine (the pool hop included);
//! - `spider_stream` / `spider_dom`: what a derived spider (`follow = "a[href]"`,
//!   `item = Book`) does per page, the item and the links, with the streaming engine
//!   it picks for these selectors and with `extract = "dom"`, one page at a time;
//! - `parse_bound/stream` / `parse_bound/dom`: the same, 64 pages at once on one parse
//!   thread, as a crawl whose parse is its bottleneck keeps the pool busy: items per
//!   second of each engine, the hop to the pool overlapped with the parse.
//!
//! ```text
//! cargo bench -p spiderling --bench extract
//! ```

// A bench may stop at a broken set-up: there is nothing to measure then.
#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use spiderling::prelude::*;
use spiderling::scraper::Html;
use spiderling::testing::parse_page;
use spiderling::url::Url;
use spiderling::{Item, Page};

const PAGE: &str = include_str!("fixtures/book.html");
const PAGE_URL: &str = "http://127.0.0.1:8000/catalogue/book_123.html";

/// One field of each kind: text, attribute, number, optional, repeated.
#[derive(Item, Serialize, Debug)]
struct Book {
    #[css("article.product_page h1.title")]
    title: String,
    #[css("article.product_page a.cover", attr = "href")]
    cover: Url,
    #[css("article.product_page span.stock")]
    stock: u32,
    #[css("article.product_page p.availability")]
    availability: Option<String>,
    #[css("article.product_page li.tag")]
    tags: Vec<String>,
}

#[derive(Spider, Default)]
#[spider(start_urls = ["http://127.0.0.1:8000/"], item = Book)]
struct ItemStreamed;

#[derive(Spider, Default)]
#[spider(start_urls = ["http://127.0.0.1:8000/"], item = Book, extract = "dom")]
struct ItemDom;

#[derive(Spider, Default)]
#[spider(start_urls = ["http://127.0.0.1:8000/"], follow = "a[href]", item = Book)]
struct Streamed;

#[derive(Spider, Default)]
#[spider(start_urls = ["http://127.0.0.1:8000/"], follow = "a[href]", item = Book, extract = "dom")]
struct Dom;

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let page = Page::fixture(PAGE_URL, PAGE).expect("the fixture page");

    let book = runtime.block_on(page.extract::<Book>()).expect("the book extracts").expect("a book page");
    assert_eq!(book.title, "The Cartographer's Daughter");
    assert_eq!(
        book.cover.as_str(),
        "http://127.0.0.1:8000/media/cache/fe/72/fe72f0532301ec28892ae79a629a293c.jpg"
    );
    assert_eq!((book.stock, book.tags.len()), (22, 4));
    assert_eq!(book.availability.as_deref(), Some("In stock (22 available)"));

    let mut group = c.benchmark_group("extract");
    group.bench_function("parse_and_extract", |b| {
        b.iter(|| runtime.block_on(page.extract::<Book>()).map(|book| book.is_some()));
    });

    group.bench_function("parse", |b| {
        b.iter(|| Html::parse_document(black_box(PAGE)));
    });

    group.bench_function("extract", |b| {
        b.iter_custom(|iters| {
            let job = page.html(move |doc| {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(doc.extract::<Book>().is_ok_and(|book| book.is_some()));
                }
                start.elapsed()
            });
            runtime.block_on(job).expect("the parse-pool job")
        });
    });

    for (name, items) in [
        (
            "item_stream",
            runtime.block_on(parse_page(&ItemStreamed, page.clone())).map(|(items, _)| items.len()),
        ),
        ("item_dom", runtime.block_on(parse_page(&ItemDom, page.clone())).map(|(items, _)| items.len())),
    ] {
        assert_eq!(items.expect("the item parses"), 1, "{name}: the book");
    }
    group.bench_function("item_stream", |b| {
        b.iter(|| runtime.block_on(parse_page(&ItemStreamed, page.clone())).map(|(items, _)| items.len()));
    });
    group.bench_function("item_dom", |b| {
        b.iter(|| runtime.block_on(parse_page(&ItemDom, page.clone())).map(|(items, _)| items.len()));
    });

    let streamed = runtime.block_on(parse_page(&Streamed, page.clone())).expect("the streamed parse");
    let dom = runtime.block_on(parse_page(&Dom, page.clone())).expect("the DOM parse");
    assert_eq!(streamed.1.len(), dom.1.len(), "the same links");
    assert_eq!(streamed.0.len(), 1, "the book");
    group.bench_function("spider_stream", |b| {
        b.iter(|| runtime.block_on(parse_page(&Streamed, page.clone())).map(|(items, _)| items.len()));
    });
    group.bench_function("spider_dom", |b| {
        b.iter(|| runtime.block_on(parse_page(&Dom, page.clone())).map(|(items, _)| items.len()));
    });

    group.finish();

    let mut group = c.benchmark_group("parse_bound");
    group.throughput(Throughput::Elements(IN_FLIGHT as u64));
    group.bench_function("stream", |b| b.iter(|| runtime.block_on(in_flight(&Streamed, &page))));
    group.bench_function("dom", |b| b.iter(|| runtime.block_on(in_flight(&Dom, &page))));
    group.finish();
}

/// Pages parsed at once in `parse_bound`: the bench crawl's concurrency.
const IN_FLIGHT: usize = 64;

/// [`IN_FLIGHT`] pages through `spider`'s `parse` at once, sharing the page's parse pool;
/// the items they gave.
async fn in_flight<S: Spider>(spider: &'static S, page: &Page) -> usize {
    let mut parses = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let page = page.clone();
        parses.spawn(async move { parse_page(spider, page).await.map(|(items, _)| items.len()) });
    }
    let mut items = 0;
    while let Some(parsed) = parses.join_next().await {
        items += parsed.expect("the parse task").expect("the page parses");
    }
    assert_eq!(items, IN_FLIGHT, "one book per page");
    items
}

criterion_group! {
    name = extract;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(extract);
