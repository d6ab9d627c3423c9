//! Differential tests: wherever the streaming engine answers, it answers what the DOM
//! answers, on generated pages and selectors and on saved real pages.

use proptest::prelude::*;
use scraper::Selector;

use crate::extract::field::Reader;
use crate::extract::field::Source;
use crate::extract::page::Page;
use crate::extract::stream::{FieldRead, Found, Plan};

/// Both engines' values for every read, and the links of every rule; `None` for the
/// stream when the page does not stream.
type Answers = (Vec<Vec<String>>, Vec<Vec<String>>);

async fn both(
    page: Page,
    reads: &'static [FieldRead],
    rules: &'static [&'static str],
) -> (Answers, Option<Answers>) {
    let plan: &'static Plan = Box::leak(Box::new(Plan::new(reads, rules).expect("the selectors stream")));
    let text = page.text().into_owned();
    page.html(move |doc| {
        let answer = |reader: &dyn Fn(usize, &Selector, Source) -> Vec<String>,
                      links: &dyn Fn(usize, &Selector) -> Vec<String>| {
            let values = reads
                .iter()
                .enumerate()
                .map(|(i, read)| reader(i, &Selector::parse(read.css).unwrap(), read.source))
                .collect();
            let hrefs =
                rules.iter().enumerate().map(|(i, css)| links(i, &Selector::parse(css).unwrap())).collect();
            (values, hrefs)
        };
        let dom = answer(&|i, s, source| doc.all(i, s, source), &|_, s| {
            doc.links(s).into_iter().map(String::from).collect()
        });
        let streamed =
            plan.run(&text, true).map_err(|why| eprintln!("not streamed: {why}")).ok().map(|streamed| {
                let found = Found::new(plan, streamed, doc.facts());
                let firsts: Vec<Option<String>> = reads
                    .iter()
                    .enumerate()
                    .map(|(i, read)| found.first(i, &Selector::parse(read.css).unwrap(), read.source))
                    .collect();
                let doms: Vec<Option<String>> = reads
                    .iter()
                    .enumerate()
                    .map(|(i, read)| doc.first(i, &Selector::parse(read.css).unwrap(), read.source))
                    .collect();
                assert_eq!(firsts, doms, "first values");
                answer(&|i, s, source| found.all(i, s, source), &|i, _| {
                    found.links(i).into_iter().map(String::from).collect()
                })
            });
        (dom, streamed)
    })
    .await
    .unwrap()
}

fn leak<T>(value: Vec<T>) -> &'static [T] {
    Box::leak(value.into_boxed_slice())
}

fn text(css: &'static str) -> FieldRead {
    FieldRead { css, source: Source::Text }
}

fn attr(css: &'static str, name: &'static str) -> FieldRead {
    FieldRead { css, source: Source::Attr(name) }
}

fn run<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
}

#[test]
fn a_well_formed_page_streams_with_the_doms_answers() {
    let html = r#"<!doctype html><html><head><title>Shop &amp; co</title></head><body>
        <div class="product"><h1 class="title"> Atlas &notit; of&nbsp;maps </h1>
        <p class="price">&pound;12.50</p><pre>first line</pre><a class="next" href=" /page?a=1&amp;b=2 ">next</a>
        <ul><li><a href="/1">one</a></li><li><a href="/2">two</a><img src="x.png"></li></ul>
        <table><tbody><tr><td>cell</td></tr></tbody></table><textarea> &lt;typed&gt;</textarea><script>var a = "&amp;";</script></div></body></html>"#;
    let page = Page::fixture("https://shop.example/catalogue/", html).unwrap();
    let reads = leak(vec![
        text("h1.title"),
        text("p.price"),
        text("pre"),
        text("textarea"),
        text("div.product"),
        attr("a.next", "href"),
        attr("img", "src"),
        attr("div", "class"),
        text("title"),
    ]);
    let (dom, streamed) = run(both(page, reads, leak(vec!["ul a", "a.next, li > a"])));
    assert_eq!(streamed.as_ref(), Some(&dom), "the page streams, with the same answers");
    assert_eq!(dom.0[0], ["Atlas ¬it; of\u{a0}maps"]);
    assert_eq!(dom.0[2], ["first line"]);
}

/// A page that hides links streams, and its hidden links are left out as the DOM leaves
/// them out: the stream knows each link's hiders by the elements open around it. Before,
/// any such attribute anywhere (an icon's `aria-hidden`, a sprite's `display: none`) sent
/// the page to the DOM: 62 of the 130 shared real pages.
#[test]
fn hidden_links_are_left_out_by_the_stream_as_by_the_dom() {
    let html = r#"<!doctype html><html><body><a href="/seen">seen</a>
        <div style="display:none"><p><a href="/display">x</a></p></div>
        <span style="visibility: hidden"><a href="/visibility">x</a><a style="visibility: visible" href="/visible-again">x</a></span>
        <span style="VISIBILITY: collapse !important"><b><a href="/collapse">x</a></b></span>
        <a hidden href="/hidden-attribute">x</a>
        <div aria-hidden="true" style="position:absolute; left:-9999px"><a href="/off-screen">x</a></div>
        <div aria-hidden="true"><a href="/icon">icon twin</a></div>
        <svg style="display:none"><symbol id="i"></symbol></svg><a href="/after-sprite">after</a>
        <div hidden><img src="x.png"><a href="/after-img-in-hidden">x</a></div>
        <img hidden src="y.png"><a href="/after-hidden-img">x</a>
        <ul><li style="display:none">one<li><a href="/second-item">two</a></ul>
        <div style="display: block" style="display: none"><a href="/first-style-counts">x</a></div>
        <div style="font-family: &quot;Serif&quot;; display&#58;none"><a href="/encoded-style">x</a></div>
        <p style="font-family:&quot;Sans&quot;"><a href="/quoted-font">x</a></p>
        </body></html>"#;
    let page = Page::fixture("https://shop.example/", html).unwrap();
    let (dom, streamed) =
        run(both(page, leak(vec![text("a"), attr("a", "href")]), leak(vec!["a[href]", "div a"])));
    assert_eq!(streamed.as_ref(), Some(&dom), "the page streams, with the same answers");
    let visible = [
        "/seen",
        "/visible-again",
        "/icon",
        "/after-sprite",
        "/after-hidden-img",
        "/second-item",
        "/first-style-counts",
        "/quoted-font",
    ]
    .map(|path| format!("https://shop.example{path}"));
    assert_eq!(dom.1[0], visible);
    assert_eq!(dom.0[1].len(), 15, "the item's fields read hidden links too");
}

/// A script wrapped in a comment, as old pages and ad tags write them, ends at its first
/// `</script>` as in the tree, and the page streams; before, any `<!--` in a script sent
/// the page to the DOM (12 of the 130 shared real pages).
#[test]
fn a_script_with_a_comment_in_it_streams() {
    let html = "<div><script><!--\n document.write('x'); // --></script><a href=/after>after</a>\
                <script>var s = '<!--'; var t = '</scr' + 'ipt>';</script><p>text</p></div>";
    let page = Page::fixture("https://shop.example/", html).unwrap();
    let (dom, streamed) = run(both(page, leak(vec![text("script"), text("p")]), leak(vec!["a"])));
    assert_eq!(streamed.as_ref(), Some(&dom), "the page streams, with the same answers");
    assert_eq!(dom.1[0], ["https://shop.example/after"]);
}

/// An inline SVG's `<title>` and its links match as on the tree, where the tree keeps
/// their names as written; before, any match inside `<svg>` sent the page to the DOM (10
/// of the 130 shared real pages, mostly an icon's `<title>` met by a spider's `title`).
/// What the tree renames (`clipPath`, `viewBox`) is still the DOM's to answer.
#[test]
fn matches_inside_svg_stream_where_the_tree_keeps_the_names() {
    let html = r#"<div><svg viewBox="0 0 8 8"><title>Icon &amp; <tspan>more</tspan></title><style>.k &gt; b</style><a href="/in-svg" class="k">s</a><image href="logo.png"></image></svg>
        <h1>Title</h1><a href="/out">out</a></div>"#;
    let page = Page::fixture("https://shop.example/", html).unwrap();
    let reads = leak(vec![
        text("title"),
        text("h1"),
        attr("a.k", "href"),
        attr("[data-x]", "data-x"),
        text("svg style"),
    ]);
    let (dom, streamed) = run(both(page, reads, leak(vec!["a", "svg a[href]"])));
    assert_eq!(streamed.as_ref(), Some(&dom), "the page streams, with the same answers");
    assert_eq!(dom.0[0], ["Icon & more"]);
    assert_eq!(dom.0[4], [".k > b"]);
    assert_eq!(dom.1[1], ["https://shop.example/in-svg"]);
    for (html, read) in [
        ("<svg><linearGradient id=g></linearGradient></svg>", text("lineargradient")),
        ("<svg viewBox='0 0 1 1'></svg>", attr("[viewbox]", "viewbox")),
        ("<svg><a type=NEXT href=/x>x</a></svg>", attr("a[type=next]", "href")),
    ] {
        let page = Page::fixture("https://shop.example/", html).unwrap();
        let (_, streamed) = run(both(page, leak(vec![read]), leak(vec![])));
        assert!(streamed.is_none(), "{html} should be read from the DOM");
    }
}

#[test]
fn pages_the_dom_would_nest_otherwise_do_not_stream() {
    for html in [
        "<ul><li><b>bold<li>two</ul>",
        "<p><b>bold<div>block</div></b></p>",
        "<div><p>quirks: the table stays in the paragraph<table><tr><td>x</td></tr></table></div>",
        "<table>moved text<tr><td>x</td></tr></table>",
        "<b><i>misnested</b></i>",
        "<div><p>x<button></p></button></div>",
        "<a href=/1>one<a href=/2>two</a></a>",
        "<div><br></br></div>",
        "<div><pre>\nfirst line dropped by the tree builder</pre></div>",
        "<div><script>a = '<!--<script>'</script>b = 1</script><a href=/after>x</a></div>",
        "<table><tr><td><form>one<td><form>two</table>",
        "<div><image src=x.png>an <image> outside SVG is an <img> to the tree</div>",
    ] {
        let page = Page::fixture("https://shop.example/", html).unwrap();
        let (_, streamed) =
            run(both(page, leak(vec![text("div"), text("li"), text("td")]), leak(vec!["a", "a[type=next]"])));
        assert!(streamed.is_none(), "{html} should be read from the DOM");
    }
}

#[test]
fn end_tags_a_page_leaves_out_are_implied_as_the_tree_builder_implies_them() {
    for html in [
        "<ul><li>one<li>two</ul>",
        "<ul><li><p>para<li>two</li></ul>",
        "<dl><dt>term<dd>one<dd>two<dt>next</dl>",
        "<div><select><option>a<option>b<optgroup><option>c</select></div>",
        "<div><select><optgroup><option>a<hr><option>b</select></div>",
        "<div><p>para<div>block</div></div>",
        "<div><p>para</div><p>next",
        "<div><h2><p>in a heading</h2></div>",
        "<div>never closed <a href=/1>one</a>",
        "<div><p>one<div>block</div></p></div>",
        "<div><p>a</p></p><span></p></span></div>",
        "<table><tbody><tr><td>a<td>b<tr><td>c</tbody></table>",
        "<table><tr><td>a<th>b</table><p>after",
        "<table><thead><tr><th>head<tbody><tr><td><b>bold<td>x</table>",
        "<div><table><tr><td><div>in a cell</td></tr></table></div>",
    ] {
        let page = Page::fixture("https://shop.example/", html).unwrap();
        let reads = leak(vec![
            text("div"),
            text("li"),
            text("p"),
            text("dd"),
            text("option"),
            text("div > p"),
            text("select > hr"),
            text("option > hr"),
            text("td"),
            text("tr"),
            text("td b"),
        ]);
        let (dom, streamed) = run(both(page, reads, leak(vec!["a"])));
        assert_eq!(streamed.as_ref(), Some(&dom), "{html}");
    }
}

#[test]
fn a_noscript_is_read_as_raw_text_as_the_dom_reads_it_with_scripting_on() {
    let html = r#"<html><head><noscript><link rel="stylesheet" href="/n.css"></noscript></head><body>
        <noscript><iframe src="https://tags.example/ns"></iframe><a href="/hidden-in-noscript">x</a> &amp;</noscript>
        <div><a href="/seen">seen</a></div></body></html>"#;
    let page = Page::fixture("https://shop.example/", html).unwrap();
    let reads = leak(vec![text("noscript"), attr("iframe", "src"), attr("link", "href")]);
    let (dom, streamed) = run(both(page, reads, leak(vec!["a[href]"])));
    assert_eq!(streamed.as_ref(), Some(&dom), "the page streams, with the DOM's answers");
    assert_eq!(dom.1, [vec!["https://shop.example/seen"]], "a link inside <noscript> is text, not a link");
    assert!(dom.0[1].is_empty() && dom.0[2].is_empty(), "{:?}", dom.0);
}

#[test]
fn attribute_values_compare_decoded_and_without_case_where_html_says_so() {
    let html = r#"<div><a type="Next" href="/n">n</a><a rel="NoFollow" href="/f">f</a>
        <a data-v="a&amp;b" href="/d">d</a><a data-v="A&amp;B" href="/e">e</a></div>"#;
    let page = Page::fixture("https://shop.example/", html).unwrap();
    let rules = leak(vec!["a[type=next]", "a[rel~=nofollow]", "a[data-v=\"a&b\"]"]);
    let (dom, streamed) = run(both(page, leak(vec![text("div")]), rules));
    assert_eq!(streamed.as_ref(), Some(&dom));
    assert_eq!(
        dom.1,
        [vec!["https://shop.example/n"], vec!["https://shop.example/f"], vec!["https://shop.example/d"]]
    );
}

#[test]
fn an_end_tag_the_tree_builder_ignores_before_the_body_is_no_element() {
    for html in [
        "<head><title>t</title></head></p><body><p>Real</p>",
        "</p><p>Real</p>",
        "<html></p><p>Real</p>",
        "<head></p><meta charset=utf-8></p></head><p>Real</p>",
        "<head><noscript>n</noscript></p></head></p><p>Real</p>",
    ] {
        let page = Page::fixture("https://shop.example/", html).unwrap();
        let (dom, streamed) = run(both(page, leak(vec![text("p")]), leak(vec![])));
        assert_eq!(dom.0[0], ["Real"], "{html}");
        assert_eq!(streamed.as_ref(), Some(&dom), "{html}");
    }
    // Once the body has begun, by a tag, by text or by a `<noscript>` after the head, a
    // stray `</p>` is an empty paragraph in the DOM too.
    for html in [
        "<div></div></p><p>Real</p>",
        "x</p><p>Real</p>",
        "<head></head><noscript></noscript></p><p>Real</p>",
    ] {
        let page = Page::fixture("https://shop.example/", html).unwrap();
        let (dom, streamed) = run(both(page, leak(vec![text("p")]), leak(vec![])));
        assert_eq!(dom.0[0], ["", "Real"], "{html}");
        assert_eq!(streamed.as_ref(), Some(&dom), "{html}");
    }
}

#[test]
fn a_raw_text_end_tag_with_attributes_ends_where_the_tokenizer_ends_it() {
    for element in
        ["script", "style", "title", "textarea", "iframe", "noembed", "noframes", "noscript", "xmp"]
    {
        for end in [
            format!("</{element} x=\">\"<a href=/ghost>\">"),
            format!("</{element} x='>'<a href=/ghost>'>"),
            format!("</{element}/ x=\">\"<a href=/ghost>\">"),
            format!("</{}\tx=\">\"<a href=/ghost>\" y>", element.to_uppercase()),
        ] {
            let html: &'static str =
                Box::leak(format!("<div><a href=/real>r</a><{element}>raw</a>{end}z").into_boxed_str());
            let page = Page::fixture("https://shop.example/", html).unwrap();
            let (dom, streamed) =
                run(both(page, leak(vec![text("div"), text(element)]), leak(vec!["a[href]"])));
            assert_eq!(dom.1, [vec!["https://shop.example/real"]], "{html}");
            assert_eq!(streamed.as_ref(), Some(&dom), "{html}");
        }
    }
}

/// End tags a page may hold where it should not, each an end tag the tree builder treats
/// in its own way in some insertion mode; some with attributes, which it drops.
const STRAY_ENDS: &[&str] = &[
    "</p>",
    "</P>",
    "</p x=1>",
    "</p x=\">\">",
    "</br>",
    "</div>",
    "</head>",
    "</body>",
    "</html>",
    "</span>",
    "</td>",
    "</th>",
    "</tr>",
    "</tbody>",
    "</table>",
    "</caption>",
    "</colgroup>",
    "</col>",
    "</select>",
    "</option>",
    "</optgroup>",
    "</li>",
    "</ul>",
    "</dd>",
    "</dl>",
    "</a>",
    "</b>",
    "</h1>",
    "</form>",
    "</button>",
    "</template>",
    "</script>",
    "</title>",
    "</style>",
    "</noscript>",
    "</svg>",
    "</math>",
    "</foo>",
    "</frameset>",
    "</hr>",
];

/// What a page opens before a stray end tag, so that the tag meets the tree builder in
/// each of its insertion modes in the body: a table, its parts, a caption, a column
/// group, a select, foreign content, a button's scope...
const CONTEXTS: &[&str] = &[
    "",
    "<div>",
    "<p>",
    "<p><b>",
    "<table>",
    "<table><tbody>",
    "<table><tr>",
    "<table><tr><td>",
    "<table><caption>",
    "<table><colgroup>",
    "<select>",
    "<select><option>",
    "<ul><li>",
    "<dl><dt>",
    "<svg>",
    "<math>",
    "<button>",
    "<p><button>",
    "<b>",
    "<a href=/c>",
    "<h1>",
    "<form>",
    "<div><span>",
];

#[test]
fn stray_end_tags_in_every_insertion_mode_are_read_as_the_dom_reads_them() {
    let reads = leak(vec![
        text("p"),
        text("p.x"),
        text("div"),
        text("td"),
        text("li"),
        text("title"),
        text("option"),
        text("caption"),
        text("b"),
        text("span"),
        attr("a", "href"),
    ]);
    let rules = leak(vec!["a[href]"]);
    let mut pages = Vec::new();
    for stray in STRAY_ENDS {
        // Before html, before head, in head, after head, in body, after body, after after
        // body: the stray at each place of a page written in full, and of one that leaves
        // its html, head and body tags out.
        for at in 0..9 {
            let mut places = [""; 9];
            places[at] = stray;
            let [a, b, c, d, e, f, g, h, i] = places;
            pages.push(format!(
                "{a}<!doctype \
                    html>{b}<html>{c}<head>{d}<title>t</title><noscript>n</noscript>{e}</head>{f}<body>{g}<p \
                        class=x>in</p><a href=/after>after</a>{h}</body></html>{i}<p>late</p>"
            ));
            pages.push(format!("{a}<meta charset=utf-8>{b} {c}<title>t</title>{d}<div>x</div>{e}<p>y</p>"));
        }
        for context in CONTEXTS {
            pages.push(format!(
                "<!doctype html><body>{context}{stray}<p class=x>in</p><a href=/after>after</a>"
            ));
            pages.push(format!("{context}x{stray}<b>in</b><span>s</span><td>c</td>"));
        }
    }
    let (mut streamed_pages, total) = (0, pages.len());
    for html in pages {
        let page = Page::fixture("https://shop.example/", html.clone()).unwrap();
        let (dom, streamed) = run(both(page, reads, rules));
        if let Some(streamed) = streamed {
            assert_eq!(streamed, dom, "{html}");
            streamed_pages += 1;
        }
    }
    // The test means something only if many of its pages stream.
    assert!(streamed_pages * 4 > total, "{streamed_pages} of {total} pages streamed");
}

/// Pieces of a tag's attributes: values quoted either way holding a `>` or markup, bare
/// names, names starting with a quote, `<` or `=`, a lone `/`.
const ATTRIBUTE_PIECES: &[&str] = &[
    "x=\">\"",
    "x='>'",
    "x=\">\"<a href=/ghost>\"",
    "x='<a href=/ghost>'",
    "x",
    "x=y",
    "\"q",
    "'q'",
    "<a",
    "=e",
    "x=''",
    "/",
    "a=\"</script>\"",
    "y=>",
    "z='\"'",
    "href=/odd",
];

const SEPARATORS: &[&str] = &[" ", "\t", "\n", "/", "/ ", ""];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// End tags with attributes of every quoting, after the raw-text elements and the
    /// others, and start tags with the same attributes: where a tag ends is where the
    /// tokenizer ends it.
    #[test]
    fn tags_with_attributes_of_every_quoting_end_where_the_tokenizer_ends_them(
        element in proptest::sample::select(&[
            "script", "style", "title", "textarea", "iframe", "noembed", "noframes", "noscript",
            "xmp", "div", "span", "a", "p", "b",
        ][..]),
        upper in any::<bool>(),
        end in proptest::collection::vec(
            (proptest::sample::select(SEPARATORS), proptest::sample::select(ATTRIBUTE_PIECES)),
            0..4,
        ),
        start in proptest::collection::vec(
            (proptest::sample::select(SEPARATORS), proptest::sample::select(ATTRIBUTE_PIECES)),
            0..3,
        ),
        before_start in proptest::sample::select(SEPARATORS),
        close in proptest::sample::select(&[">", "/>", " >"][..]),
    ) {
        let name = if upper { element.to_uppercase() } else { element.to_owned() };
        let mut end_tag = format!("</{name}");
        for (separator, piece) in &end {
            end_tag.push_str(separator);
            end_tag.push_str(piece);
        }
        end_tag.push_str(close);
        let mut start_tag = format!("<{element}");
        for (separator, piece) in &start {
            start_tag.push_str(separator);
            start_tag.push_str(piece);
        }
        start_tag.push_str(before_start);
        start_tag.push('>');
        let html = format!(
            "<div><a href=/real>r</a>{start_tag}raw <b>x</b> &amp; <a href=/in>in</a>{end_tag}z<p \
                class=x>after</p>"
        );
        let reads = leak(vec![
            text("div"),
            text("p.x"),
            text(element),
            attr(element, "x"),
            attr(element, "href"),
            text("b"),
        ]);
        let page = Page::fixture("https://shop.example/", html.clone()).unwrap();
        let (dom, streamed) = run(both(page, reads, leak(vec!["a[href]"])));
        if let Some(streamed) = streamed {
            prop_assert_eq!(streamed, dom, "page {}", html);
        }
    }
}

/// A generated element tree, written out as HTML.
#[derive(Debug, Clone)]
enum Node {
    Element {
        tag: &'static str,
        /// Each attribute's name, value, and how it is written: 0 in double quotes, 1 in
        /// single quotes, 2 unquoted where the value allows, 3 as a bare name.
        attributes: Vec<(&'static str, &'static str, u8)>,
        children: Vec<Node>,
        closed: bool,
    },
    Text(&'static str),
    Comment,
}

const TAGS: &[&str] = &[
    "div", "span", "p", "a", "ul", "li", "b", "h1", "h3", "pre", "section", "em", "table", "tr", "td",
    "tbody", "img", "br", "textarea", "script", "select", "option", "svg", "DIV", "A", "Li", "title",
    "noscript",
];
const VOID: &[&str] = &["img", "br"];
const TEXTS: &[&str] = &[
    "plain",
    " spaced  out ",
    "a &amp; b",
    "&lt;tag&gt;",
    "&copy 2024",
    "&notit;",
    "&#128;&#x41;",
    "line\r\nbreak",
    "\n",
    "&amp",
    "x&y",
    "  ",
    "é ü",
];
const CLASSES: &[&str] = &["x", "y", "x y", "item", " x "];
const HREFS: &[&str] =
    &["/a", "b?c=1&amp;d=2", " /t ", "&notit;", "http://other.example/z", "", "%zz", "/p&copy=1"];

fn node(depth: u32) -> BoxedStrategy<Node> {
    let leaf = prop_oneof![
        4 => proptest::sample::select(TEXTS).prop_map(Node::Text),
        1 => Just(Node::Comment),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    let attribute = (
        prop_oneof![
            proptest::sample::select(CLASSES).prop_map(|v| ("class", v)),
            proptest::sample::select(&["main", "x", "y"][..]).prop_map(|v| ("id", v)),
            proptest::sample::select(HREFS).prop_map(|v| ("href", v)),
            proptest::sample::select(&["1", "2", "a&amp;b", "a-b", "A&amp;B"][..])
                .prop_map(|v| ("data-v", v)),
            proptest::sample::select(&["Next", "next", "nofollow x"][..]).prop_map(|v| ("REL", v)),
            Just(("Class", "x")),
        ],
        0..4u8,
    )
        .prop_map(|((name, value), written)| (name, value, written));
    let element = (
        proptest::sample::select(TAGS),
        proptest::collection::vec(attribute, 0..3),
        proptest::collection::vec(node(depth - 1), 0..4),
        proptest::bool::weighted(0.95),
    )
        .prop_map(|(tag, attributes, children, closed)| Node::Element {
            tag,
            attributes,
            children,
            closed,
        });
    prop_oneof![1 => leaf, 2 => element].boxed()
}

fn write(node: &Node, out: &mut String) {
    match node {
        Node::Text(text) => out.push_str(text),
        Node::Comment => out.push_str("<!-- c -->"),
        Node::Element { tag, attributes, children, closed } => {
            out.push('<');
            out.push_str(tag);
            for (name, value, written) in attributes {
                let unquoted = !value.is_empty() && !value.contains([' ', '"', '\'', '=', '<', '>', '`']);
                match written {
                    3 => out.push_str(&format!(" {name}")),
                    2 if unquoted => out.push_str(&format!(" {name}={value}")),
                    1 => out.push_str(&format!(" {name}='{value}'")),
                    _ => out.push_str(&format!(" {name}=\"{value}\"")),
                }
            }
            out.push('>');
            if VOID.contains(&tag.to_ascii_lowercase().as_str()) {
                return;
            }
            for child in children {
                write(child, out);
            }
            if *closed {
                out.push_str(&format!("</{tag}>"));
            }
        }
    }
}

fn compound() -> impl Strategy<Value = String> {
    (
        proptest::option::of(proptest::sample::select(
            &["div", "p", "a", "li", "span", "h1", "td", "*", "option", "pre"][..],
        )),
        proptest::option::of(proptest::sample::select(
            &[
                ".x",
                ".y",
                "#main",
                "[href]",
                "[class~=x]",
                "[href^='/']",
                "[data-v=\"a&b\"]",
                "[href*=c]",
                "[data-v]",
                "[data-v|=a]",
                "[class$=y]",
                "[rel=next]",
                "[rel~=NOFOLLOW]",
                "[data-v*=B]",
            ][..],
        )),
    )
        .prop_filter_map("a compound selector has something", |(tag, extra)| match (tag, extra) {
            (None | Some("*"), None) => None,
            (tag, extra) => Some(format!("{}{}", tag.unwrap_or(""), extra.unwrap_or(""))),
        })
}

fn selector() -> impl Strategy<Value = String> {
    (
        compound(),
        proptest::option::of((proptest::sample::select(&[" ", " > "][..]), compound())),
        proptest::option::of(compound()),
    )
        .prop_map(|(first, then, alternative)| {
            let mut css = first;
            if let Some((combinator, next)) = then {
                css = format!("{css}{combinator}{next}");
            }
            if let Some(other) = alternative {
                css = format!("{css}, {other}");
            }
            css
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn where_the_stream_answers_it_answers_as_the_dom(
        body in proptest::collection::vec(node(3), 1..6),
        selectors in proptest::collection::vec(selector(), 1..4),
        wrapped in any::<bool>(),
    ) {
        let mut html = String::new();
        for node in &body {
            write(node, &mut html);
        }
        if wrapped {
            html = format!("<!DOCTYPE html><html><head><title>t</title></head><body>{html}</body></html>");
        }
        let mut reads = Vec::new();
        for css in &selectors {
            let css: &'static str = Box::leak(css.clone().into_boxed_str());
            reads.extend([text(css), attr(css, "href"), attr(css, "class"), attr(css, "data-v")]);
        }
        let rules = leak(reads.iter().map(|read| read.css).collect());
        let page = Page::fixture("https://shop.example/list/", html.clone()).unwrap();
        let (dom, streamed) = run(both(page, leak(reads), rules));
        if let Some(streamed) = streamed {
            prop_assert_eq!(streamed, dom, "page {}", html);
        }
    }

    /// Tables written with their end tags left out anywhere the tree builder implies them.
    #[test]
    fn tables_with_end_tags_left_out_are_read_as_the_dom_reads_them(
        rows in proptest::collection::vec(
            (proptest::collection::vec((any::<bool>(), 0..4usize, any::<bool>()), 1..4), any::<bool>()),
            1..4,
        ),
        (body, close_body, close_table, doctype) in
            (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
    ) {
        const CONTENT: [&str; 4] = ["text", "<b>bold", "<div>block</div>", "<p>para"];
        let mut html = String::from(if doctype { "<!doctype html><div>" } else { "<div>" });
        html.push_str(if body { "<table><tbody>" } else { "<table>" });
        for (cells, close_row) in &rows {
            html.push_str("<tr>");
            for &(header, content, close_cell) in cells {
                let tag = if header { "th" } else { "td" };
                html.push_str(&format!("<{tag}>{}", CONTENT[content]));
                if close_cell {
                    html.push_str(&format!("</{tag}>"));
                }
            }
            if *close_row {
                html.push_str("</tr>");
            }
        }
        if body && close_body {
            html.push_str("</tbody>");
        }
        if close_table {
            html.push_str("</table>");
        }
        html.push_str("<p>after</p></div>");
        let reads = leak(vec![text("td"), text("th"), text("tr"), text("td b"), text("tr > td"), text("div > \
            p"), text("table p")]);
        let page = Page::fixture("https://shop.example/", html.clone()).unwrap();
        let (dom, streamed) = run(both(page, reads, leak(vec![])));
        if let Some(streamed) = streamed {
            prop_assert_eq!(streamed, dom, "page {}", html);
        }
    }

    /// Markup of any shape, broken included: the scan never panics, and where it answers
    /// it answers as the DOM.
    #[test]
    fn any_markup_is_read_as_the_dom_reads_it_or_left_to_the_dom(
        pieces in proptest::collection::vec(proptest::sample::select(PIECES), 0..80),
    ) {
        let html: String = pieces.concat();
        let reads =
            leak(vec![text("div"), attr("a", "href"), text("p.x"), attr("*[id]", "id"), text("title")]);
        let page = Page::fixture("https://shop.example/", html.clone()).unwrap();
        let (dom, streamed) = run(both(page, reads, leak(vec!["a[href]", "div > a"])));
        if let Some(streamed) = streamed {
            prop_assert_eq!(streamed, dom, "page {:?}", html);
        }
    }
}

/// The pieces `any_markup_is_read_as_the_dom_reads_it_or_left_to_the_dom` writes pages
/// of: tags cut anywhere, quotes, references, comments, raw text, non-ASCII.
const PIECES: &[&str] = &[
    "<",
    ">",
    "/",
    "</",
    "<div",
    "<div>",
    "</div>",
    "<p class=x>",
    "</p>",
    "<a",
    " href=",
    "\"/a\"",
    "'b'",
    "c&amp;d",
    " id=k",
    "=",
    "\"",
    "'",
    " ",
    "\n",
    "\r\n",
    "text",
    "é",
    "日本",
    "&lt;",
    "&",
    "<!--",
    "-->",
    "<!doctype html>",
    "<script>",
    "</script>",
    "<title>",
    "</title>",
    "<br/>",
    "<img src=i>",
    "<svg>",
    "</svg>",
    "<table>",
    "<tr>",
    "<td>",
    "</td>",
    "<!",
    "<?x>",
    "\t",
    "<A HREF=/u>",
    "</A>",
];

/// Saved pages: the bench's book page and the demo shop's home, listing and book pages
/// as the sandbox serves them to `spiderling bench` (15 KB each).
const SAVED: &[(&str, &str)] = &[
    ("/catalogue/book_123.html", include_str!("../../../../benches/fixtures/book.html")),
    ("/", include_str!("../../../tests/pages/demo_home.html")),
    ("/catalogue/page-1.html", include_str!("../../../tests/pages/demo_listing.html")),
    ("/catalogue/book_1.html", include_str!("../../../tests/pages/demo_book.html")),
];

#[test]
fn saved_pages_stream_with_the_doms_answers() {
    for (path, html) in SAVED {
        let page = Page::fixture(&format!("http://127.0.0.1:8000{path}"), *html).unwrap();
        let reads = leak(vec![
            text("h1.title"),
            text("p.price"),
            text("p.availability"),
            text("article.product_page li.tag"),
            attr("article.product_page a.cover", "href"),
            text("table td"),
            attr("link", "href"),
            text("title"),
        ]);
        let rules = leak(vec!["a[href]", "h3 > a", "li.next > a, a.next", "ul a"]);
        let (dom, streamed) = run(both(page, reads, rules));
        assert_eq!(streamed.as_ref(), Some(&dom), "{path}");
    }
}

#[test]
fn a_table_without_tbody_streams_unless_a_selector_could_see_the_implied_one() {
    let html = "<table><tr><td>a</td></tr><tr><td>b</td></tr></table>";
    let streams = |css: &'static str| {
        let page = Page::fixture("https://shop.example/", html).unwrap();
        let (dom, streamed) = run(both(page, leak(vec![text(css)]), leak(vec![])));
        if let Some(streamed) = &streamed {
            assert_eq!(streamed, &dom, "{css}");
        }
        streamed.is_some()
    };
    assert!(streams("table td"));
    assert!(streams("tr > td"));
    assert!(!streams("table > tr"), "the DOM has a tbody between them");
    assert!(!streams("tbody td"));
    assert!(!streams("table > .x"));
}

#[test]
fn json_ld_blocks_stream_with_the_doms_answers_and_complaints() {
    let html = "<html><head><script type=\"application/ld+json\">\n  {\"@type\": \"Product\", \"sku\": \
        \"A-1\",\n \"offers\": {\"price\": 12.5}}\n</script><script type=\"application/ld+json\">\n{ \
            broken,\n}</script></head><body><h1>x</h1></body></html>";
    let page = Page::fixture("https://shop.example/", html).unwrap();
    let text = page.text().into_owned();
    let reads = leak(vec![FieldRead { css: crate::extract::json_ld::SCRIPTS_CSS, source: Source::Text }]);
    let plan: &'static Plan = Box::leak(Box::new(Plan::new(reads, &[]).unwrap()));
    let (dom, streamed) = run(page.html(move |doc| {
        let ask = |json_ld: crate::extract::json_ld::JsonLd| {
            (json_ld.first("offers.price", Some("Product")), json_ld.first("name", None))
        };
        let found = Found::new(plan, plan.run(&text, true).unwrap(), doc.facts());
        (ask(Reader::json_ld(doc, 0)), ask(Reader::json_ld(&found, 0)))
    }))
    .unwrap();
    assert_eq!(dom.0, Ok(Some("12.5".to_owned())));
    assert!(dom.1.as_ref().is_err_and(|complaint| complaint.contains("block 2")), "{:?}", dom.1);
    assert_eq!(streamed, dom);
}

#[test]
fn pages_in_legacy_encodings_stream_with_the_doms_answers() {
    // windows-1251 declared only by a <meta>, and Shift_JIS by the Content-Type.
    let (cyrillic, _, _) = encoding_rs::WINDOWS_1251.encode(
        "<h1 class=\"t\">Привет &amp; мир</h1><a \
            href=\"/книга\">книга</a>",
    );
    let mut russian = b"<!doctype html><html><head><meta charset=\"windows-1251\"></head><body>".to_vec();
    russian.extend_from_slice(&cyrillic);
    let (japanese, _, _) =
        encoding_rs::SHIFT_JIS.encode("<h1 class=\"t\">こんにちは</h1><a href=\"/本\">本</a>");
    for (body, content_type) in
        [(russian, "text/html"), (japanese.into_owned(), "text/html; charset=shift_jis")]
    {
        let page = crate::extract::fixture::PageFixture::new("https://shop.example/", body)
            .content_type(content_type)
            .build()
            .unwrap();
        let (dom, streamed) = run(both(page, leak(vec![text("h1.t")]), leak(vec!["a[href]"])));
        assert_eq!(streamed.as_ref(), Some(&dom));
        assert!(!dom.0[0][0].contains('\u{FFFD}'), "{:?}", dom.0[0]);
    }
}
