use std::io::Write as _;

use super::*;

const URLSET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc>https://shop.example/product/1?colour=red&amp;size=m</loc>
    <lastmod>2026-02-01</lastmod>
    <image:image><image:loc>https://cdn.example/1.jpg</image:loc></image:image>
  </url>
  <url><loc> https://shop.example/product/2 </loc><lastmod>2025-11-30T08:00:00+00:00</lastmod></url>
  <!-- a comment says nothing -->
  <url><loc>/product/3</loc></url>
  <url><lastmod>2026-01-05</lastmod></url>
  <url><loc><![CDATA[https://shop.example/product/4]]></loc><lastmod>yesterday</lastmod></url>
</urlset>
"#;

const INDEX: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://shop.example/sitemap-products.xml.gz</loc><lastmod>2020-01-01</lastmod></sitemap>
  <sitemap><loc>https://shop.example/sitemap-pages.xml</loc></sitemap>
</sitemapindex>
"#;

fn base() -> Url {
    Url::parse("https://shop.example/sitemap.xml").unwrap()
}

fn since(day: &str) -> Option<Since> {
    Some(Since::new(spider_settings::parse_date(day).unwrap()))
}

fn paths(urls: &[Url]) -> Vec<String> {
    urls.iter()
        .map(|url| format!("{}{}", url.path(), url.query().map(|q| format!("?{q}")).unwrap_or_default()))
        .collect()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// A `<urlset>` of `count` URLs.
fn urlset(count: usize) -> String {
    let mut xml = String::from("<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">");
    for i in 1..=count {
        xml.push_str(&format!("<url><loc>https://shop.example/p/{i}</loc></url>"));
    }
    xml + "</urlset>"
}

#[test]
fn a_urlset_gives_each_entry_loc_and_nothing_else() {
    let listing = read(URLSET.as_bytes(), &base(), None, Limits::PROTOCOL);
    assert_eq!(listing.problem, None);
    assert!(listing.sitemaps.is_empty());
    // The image's own <loc> and the entry without one give nothing; a relative <loc> is
    // resolved against the sitemap; entities and CDATA read as text.
    assert_eq!(
        paths(&listing.pages),
        ["/product/1?colour=red&size=m", "/product/2", "/product/3", "/product/4"]
    );
}

#[test]
fn lastmod_before_the_day_is_skipped_and_no_lastmod_is_kept() {
    let listing = read(URLSET.as_bytes(), &base(), since("2026-01-01"), Limits::PROTOCOL);
    assert_eq!(listing.problem, None);
    // 2 was modified in 2025; 3 has no date, and 4 one that does not read as a date.
    assert_eq!(paths(&listing.pages), ["/product/1?colour=red&size=m", "/product/3", "/product/4"]);
}

#[test]
fn an_index_gives_its_sitemaps_whatever_their_lastmod() {
    let listing = read(INDEX.as_bytes(), &base(), since("2026-01-01"), Limits::PROTOCOL);
    assert_eq!(listing.problem, None);
    assert!(listing.pages.is_empty());
    assert_eq!(paths(&listing.sitemaps), ["/sitemap-products.xml.gz", "/sitemap-pages.xml"]);
}

#[test]
fn gzip_is_told_by_its_magic_bytes() {
    let listing = read(&gzip(URLSET.as_bytes()), &base(), None, Limits::PROTOCOL);
    assert_eq!((listing.pages.len(), listing.problem), (4, None));
    let index = read(&gzip(INDEX.as_bytes()), &base(), None, Limits::PROTOCOL);
    assert_eq!((index.sitemaps.len(), index.problem), (2, None));
}

#[test]
fn a_prefixed_namespace_reads_the_same() {
    let xml = r#"<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
        <sm:url><sm:loc>https://shop.example/a</sm:loc></sm:url>
        <sm:url><loc>https://shop.example/not-in-the-namespace</loc></sm:url>
    </sm:urlset>"#;
    let listing = read(xml.as_bytes(), &base(), None, Limits::PROTOCOL);
    assert_eq!((paths(&listing.pages), listing.problem), (vec!["/a".to_owned()], None));
}

#[test]
fn the_first_urls_up_to_the_limit_are_taken() {
    let small = Limits { urls: 3, bytes: MAX_BYTES };
    let at_limit = read(urlset(3).as_bytes(), &base(), None, small);
    assert_eq!((at_limit.pages.len(), at_limit.problem), (3, None));
    let over = read(urlset(5).as_bytes(), &base(), None, small);
    assert_eq!(paths(&over.pages), ["/p/1", "/p/2", "/p/3"]);
    assert_eq!(over.problem, Some(Problem::TooManyUrls { limit: 3 }));
}

#[test]
fn the_protocol_allows_50_000_urls() {
    let listing = read(urlset(MAX_URLS + 1).as_bytes(), &base(), None, Limits::PROTOCOL);
    assert_eq!(listing.pages.len(), 50_000);
    assert_eq!(listing.pages.last().map(Url::path), Some("/p/50000"));
    let problem = listing.problem.unwrap();
    assert_eq!(problem.reason().as_str(), "sitemap over 50,000 URLs");
    assert!(problem.to_string().contains("the first 50000 were taken"), "{problem}");
}

#[test]
fn the_urls_within_the_byte_limit_are_taken_of_a_larger_file() {
    let xml = urlset(100);
    let exact = Limits { urls: MAX_URLS, bytes: xml.len() };
    assert_eq!(
        read(xml.as_bytes(), &base(), None, exact).problem,
        None,
        "a file of exactly the limit is whole"
    );
    // The limit falls inside the fifth entry: four are whole before it.
    let entry = "<url><loc>https://shop.example/p/1</loc></url>".len();
    let tight = Limits { urls: MAX_URLS, bytes: xml.find("<url>").unwrap() + 4 * entry + 10 };
    for body in [xml.as_bytes().to_vec(), gzip(xml.as_bytes())] {
        let listing = read(&body, &base(), None, tight);
        assert_eq!(paths(&listing.pages), ["/p/1", "/p/2", "/p/3", "/p/4"]);
        assert_eq!(listing.problem, Some(Problem::TooLarge { limit: tight.bytes }));
    }
}

#[test]
fn a_gzip_bomb_is_inflated_no_further_than_the_limit() {
    // 64 MB of spaces after the first entry: a few hundred kB gzipped.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(b"<urlset><url><loc>https://shop.example/a</loc></url>").unwrap();
    let spaces = vec![b' '; 1024 * 1024];
    for _ in 0..64 {
        encoder.write_all(&spaces).unwrap();
    }
    let bomb = encoder.finish().unwrap();
    assert!(bomb.len() < 1024 * 1024, "{}", bomb.len());
    let listing = read(&bomb, &base(), None, Limits::PROTOCOL);
    assert_eq!(paths(&listing.pages), ["/a"]);
    assert_eq!(listing.problem.map(|p| p.reason().as_str()), Some("sitemap over 50 MB"));
}

#[test]
fn malformed_xml_keeps_the_urls_before_the_mistake_and_says_where() {
    let xml = "<urlset><url><loc>https://shop.example/a</loc></url>\
               <url><loc>https://shop.example/b</loc></url>\
               <url><loc>https://shop.example/c</url></urlset>";
    let listing = read(xml.as_bytes(), &base(), None, Limits::PROTOCOL);
    assert_eq!(paths(&listing.pages), ["/a", "/b"]);
    let problem = listing.problem.unwrap();
    assert_eq!(problem.reason().as_str(), "sitemap malformed");
    let at = xml.find("</url></urlset>").unwrap();
    assert!(problem.to_string().contains(&format!("XML error at byte {at}")), "{problem}");

    let cut = read(&xml.as_bytes()[..60], &base(), None, Limits::PROTOCOL);
    assert_eq!(paths(&cut.pages), ["/a"]);
    assert_eq!(cut.problem.map(|p| p.reason().as_str()), Some("sitemap malformed"));

    let unknown = read(
        b"<urlset><url><loc>https://shop.example/&nbsp;</loc></url></urlset>",
        &base(),
        None,
        Limits::PROTOCOL,
    );
    assert!(unknown.problem.is_some_and(|p| p.to_string().contains("&nbsp;")));
}

#[test]
fn a_damaged_gzip_stream_is_malformed() {
    let mut damaged = gzip(URLSET.as_bytes());
    damaged.truncate(damaged.len() / 2);
    let listing = read(&damaged, &base(), None, Limits::PROTOCOL);
    let problem = listing.problem.unwrap();
    assert_eq!(problem.reason().as_str(), "sitemap malformed");
    assert!(problem.to_string().contains("gzip"), "{problem}");
}

#[test]
fn what_is_not_a_sitemap_says_what_it_is() {
    let cases: [(&[u8], &str); 4] = [
        (b"<!doctype html><html><body><a href=\"/a\">a</a></body></html>", "<html>"),
        (b"https://shop.example/a\nhttps://shop.example/b\n", "not XML"),
        (b"\xef\xbb\xbf  \n", "no XML element"),
        (b"", "no XML element"),
    ];
    for (body, says) in cases {
        let listing = read(body, &base(), None, Limits::PROTOCOL);
        assert!(listing.pages.is_empty());
        let problem = listing.problem.unwrap();
        assert_eq!(problem.reason().as_str(), "not a sitemap");
        assert!(problem.to_string().contains(says), "{problem}");
    }
}
