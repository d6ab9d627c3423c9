//! A page's main content as a reader's view shows it, for `#[page(markdown)]`,
//! `#[page(text)]` and the metadata fields: the article without navigation, banners and
//! footers, as Markdown (headings, lists, tables, code, links made absolute) and as text,
//! with the page's title, author, date, language, description and site name (from its
//! `<meta>`, OpenGraph and JSON-LD). `dom_smoothie`, a port of Mozilla's Readability,
//! reads it: the best of the candidates measured on the real pages (BENCHMARKS.md). It
//! parses the page once more, its own way, so it runs only when a field asks, once a page,
//! on the parse pool.

use url::Url;

/// What a reader's view of a page holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct MainContent {
    pub(crate) markdown: String,
    pub(crate) text: String,
    pub(crate) title: Option<String>,
    pub(crate) author: Option<String>,
    pub(crate) published: Option<String>,
    pub(crate) lang: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) site_name: Option<String>,
}

/// The main content of `html`, a page at `url`; `None` when the page has none a reader's
/// view would show (too little text, or nothing but a form).
pub(crate) fn read(html: &str, url: &Url) -> Option<MainContent> {
    let config = dom_smoothie::Config { text_mode: dom_smoothie::TextMode::Markdown, ..Default::default() };
    let mut readability = dom_smoothie::Readability::new(html, Some(url.as_str()), Some(config)).ok()?;
    let article = readability.parse().ok()?;
    let text = dom_query::Document::fragment(article.content.as_ref()).formatted_text();
    let given = |value: Option<String>| value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    Some(MainContent {
        markdown: without_inline_images(article.text_content.trim()),
        text: text.trim().to_owned(),
        title: given(Some(article.title)),
        author: given(article.byline),
        published: given(article.published_time),
        lang: given(article.lang),
        description: given(article.excerpt),
        site_name: given(article.site_name),
    })
}

/// `markdown` without its images whose data is inline (`![alt](data:…)`): a placeholder or
/// an icon as a few kilobytes of base 64, which a reader (or a model's context) has no
/// use for.
fn without_inline_images(markdown: &str) -> String {
    let mut kept = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(at) = rest.find("](data:") {
        let (before, from) = rest.split_at(at);
        let Some(image) = before.rfind("![") else {
            kept.push_str(&rest[..at + 2]);
            rest = &rest[at + 2..];
            continue;
        };
        kept.push_str(&before[..image]);
        rest = from.find(')').map_or("", |end| &from[end + 1..]);
    }
    kept.push_str(rest);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARTICLE: &str = r#"<!doctype html><html lang="en"><head><title>Tea and its ways</title>
        <meta name="author" content="Ann Example"><meta property="og:site_name" content="The Tea Times">
        <meta name="description" content="How tea is grown, picked and brewed.">
        <meta property="article:published_time" content="2026-11-30T08:00:00Z"></head>
        <body><nav><a href="/">Home</a> <a href="/shop">Shop</a> <form><input name="q"></form></nav>
        <article><h1>Tea and its ways</h1>
        <p>Tea is grown on hillsides where the rain comes often and the sun does not burn the leaves.
        The bushes are pruned to waist height so that pickers can reach the young shoots.</p>
        <h2>Picking</h2><ul><li>Two leaves and a bud</li><li>Early in the morning</li></ul>
        <p>Each picker fills a basket several times a day, and the leaves go to the factory within
        hours, where they wither on racks before they are rolled. See <a href="/brewing">brewing</a>.</p>
        <pre><code>steep(3 * MINUTES)</code></pre>
        <table><tr><th>Kind</th><th>Minutes</th></tr><tr><td>Green</td><td>2</td></tr></table>
        <p>Black tea is rolled and left to oxidise; green tea is heated first so that it stays green,
        and its taste stays close to the fresh leaf that was picked in the morning.</p></article>
        <footer>© The Tea Times · <a href="/privacy">Privacy</a> · We use cookies to measure visits.</footer>
        </body></html>"#;

    fn article() -> MainContent {
        let url = Url::parse("https://tea.example/ways/").unwrap_or_else(|e| panic!("{e}"));
        read(ARTICLE, &url).unwrap_or_else(|| panic!("the article is read"))
    }

    #[test]
    fn the_article_comes_as_markdown_without_the_navigation_or_the_footer() {
        let markdown = article().markdown;
        for kept in [
            "## Picking",
            "- Two leaves and a bud",
            "[brewing](https://tea.example/brewing)",
            "steep(3 * MINUTES)",
            "| Green | 2 |",
        ] {
            assert!(markdown.contains(kept), "{kept:?} in:\n{markdown}");
        }
        for left_out in ["Shop", "Privacy", "cookies"] {
            assert!(!markdown.contains(left_out), "{left_out:?} left out of:\n{markdown}");
        }
    }

    #[test]
    fn the_text_is_the_articles_and_the_metadata_the_pages() {
        let content = article();
        assert!(content.text.contains("Two leaves and a bud"), "{}", content.text);
        assert!(!content.text.contains("](") && !content.text.contains("Privacy"), "{}", content.text);
        assert_eq!(content.title.as_deref(), Some("Tea and its ways"));
        assert_eq!(content.author.as_deref(), Some("Ann Example"));
        assert_eq!(content.site_name.as_deref(), Some("The Tea Times"));
        assert_eq!(content.description.as_deref(), Some("How tea is grown, picked and brewed."));
        assert_eq!(content.published.as_deref(), Some("2026-11-30T08:00:00Z"));
        assert_eq!(content.lang.as_deref(), Some("en"));
    }

    #[test]
    fn an_image_whose_data_is_inline_is_left_out_and_others_kept() {
        let markdown =
            "Before ![dot](data:image/png;base64,iVBORw0KGgo=) after ![map](https://a.example/m.png).";
        assert_eq!(without_inline_images(markdown), "Before  after ![map](https://a.example/m.png).");
        assert_eq!(without_inline_images("[a link](data:text/plain,hi)"), "[a link](data:text/plain,hi)");
    }

    #[test]
    fn a_page_with_nothing_to_read_has_no_main_content() {
        let url = Url::parse("https://tea.example/search").unwrap_or_else(|e| panic!("{e}"));
        let read = read("<html><body><form><input name=q></form></body></html>", &url);
        assert!(read.as_ref().is_none_or(|content| content.markdown.is_empty()), "{read:?}");
    }
}
