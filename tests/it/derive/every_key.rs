use spiderling::prelude::*;
use spiderling::SpiderConfig;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1.title")]
    title: String,
}

struct Tidy;

#[async_trait]
impl Pipeline<Book> for Tidy {
    async fn process(&self, book: Book) -> Verdict<Book> {
        Verdict::Keep(Book { title: book.title.trim().to_owned() })
    }
}

#[derive(Spider, Default)]
#[spider(
    name = "books",
    start_urls = ["https://books.example/", "https://books.example/new"],
    allowed_domains = ["books.example"],
    sitemaps = false,
    sitemap_urls = ["https://books.example/sitemap.xml", "https://books.example/news.xml.gz"],
    sitemap_since = "2026-01-01",
    profile = "polite",
    concurrency = 5,
    per_host = 3,
    politeness = "domain",
    rpm = 600,
    delay = "1s..3s",
    retries = 4,
    timeout = "20s",
    max_depth = 5,
    max_pages = 500,
    max_items = 100,
    user_agent = "books-bot/1.0",
    headers = ["Accept-Language: en"],
    obey_robots = false,
    parse_threads = 2,
    output = "books.csv",
    warc = "books.warc.gz",
    warc_max_bytes = 500000000,
    store_patience = "2m",
    overwrite = false,
    dashboard = "127.0.0.1:9898",
    report = "books.html",
    proxy = "direct > env:EVERY_KEY_TEST_PROXY",
    geo = "US",
    geo_rules = ["*.de=de", "shop.example.fr=fr"],
    sticky = true,
    proxy_user_template = "{user}-zone-{geo}-sid-{session}",
    proxy_price_per_gb = 8.5,
    proxy_budget = 20,
    ca_cert = "/tmp/spiderling-ui-every-key-ca.pem",
    state = "books.state",
    state_sync = true,
    cache = ".spiderling/cache",
    cache_ttl = "24h",
    revalidate = true,
    start_list = "more-books.txt",
    retry_statuses = [429, 503],
    backoff = "1s..30s",
    max_redirects = 4,
    max_body_bytes = 1000000,
    stats = "books.stats.json",
    failures = "books.failures.jsonl",
    grace = "3s",
    handle_signals = false,
    follow = "a.next, h3 > a",
    item = Book,
    pipeline = [Tidy],
)]
struct Books;

#[derive(Spider, Default)]
#[spider(
    rps = 2,
    delay = "500ms",
    follow = "a",
    start_urls = ["https://books.example/"],
    sitemaps = true,
)]
struct LinksOnly;

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    adaptive = true,
    block_target = 0.05,
    block_markers = ["g-recaptcha"],
    cookies = false,
    user_agents = ["agent-a/1", "agent-b/2"],
    user_agents_file = "agents.txt",
    impersonate = "firefox",
    http2 = false,
    render = "auto",
    render_timeout = "20s",
    render_resources = true,
    browser_pages = 2,
    browser_recycle = 50,
    browser_rss = 1024,
    screenshot_failures = "shots",
    follow_hidden = true,
    extract = "stream",
    frontier = "redis://127.0.0.1:6379/0",
    crawl_id = "books-fleet",
    lease = "2m",
    partitions = 3,
    metrics = "127.0.0.1:9899",
    progress = false,
    follow = "a[href]",
)]
struct Watched;

pub(crate) fn main() {
    // The route's variable and the certificate are read when the settings are checked.
    std::env::set_var("EVERY_KEY_TEST_PROXY", "http://acct:secret@gateway.example:7777");
    let tls = spider_sandbox::Sandbox::demo_tls(spider_sandbox::DemoSite::default()).unwrap();
    std::fs::write("/tmp/spiderling-ui-every-key-ca.pem", tls.certificate_pem().unwrap()).unwrap();
    let config = Books.config();
    assert!(config.validate().is_ok());
    let settings = config.to_string();
    assert!(
        settings.contains("concurrency = 5 · per_host = 3 · politeness = domain · rpm = 600"),
        "{settings}"
    );
    assert_eq!(config.politeness, spiderling::Politeness::Domain);
    assert!(settings.contains("max_pages = 500 · max_items = 100"), "{settings}");
    assert!(settings.contains("proxy = direct > env:EVERY_KEY_TEST_PROXY · geo = us"), "{settings}");
    assert!(settings.contains("geo_rules = *.de=de, shop.example.fr=fr · sticky = true"), "{settings}");
    assert!(settings.contains("proxy_price_per_gb = 8.5 · proxy_budget = 20"), "{settings}");
    assert!(settings.contains("dashboard = 127.0.0.1:9898 · report = books.html"), "{settings}");
    assert!(
        settings.contains(
            "output = books.csv · warc = books.warc.gz · warc_max_bytes = 500000000 · store_patience = 2m · \
                overwrite = false · state = books.state · state_sync = true"
        ),
        "{settings}"
    );
    assert!(
        settings.contains("cache = .spiderling/cache · cache_ttl = 24h · revalidate = true"),
        "{settings}"
    );
    assert!(
        settings.contains(
            "sitemaps = false · sitemap_urls = https://books.example/sitemap.xml, \
            https://books.example/news.xml.gz · sitemap_since = 2026-01-01"
        ),
        "{settings}"
    );
    assert!(settings.contains("start_list = more-books.txt"), "{settings}");
    assert!(settings.contains("retries = 4 · retry_statuses = 429, 503 · backoff = 1s..30s"), "{settings}");
    assert!(settings.contains("max_redirects = 4 · max_body_bytes = 1000000"), "{settings}");
    assert!(settings.contains("stats = books.stats.json · failures = books.failures.jsonl"), "{settings}");
    assert!(settings.contains("grace = 3s · handle_signals = false"), "{settings}");
    assert_eq!(Books.pipeline().len(), 1, "the stage after the item's own checks");
    let links_only = LinksOnly.config();
    assert!(links_only.validate().is_ok());
    assert!(links_only.to_string().contains("settings of links_only"));
    assert!(links_only.to_string().contains("sitemaps = true · sitemap_since = none"), "{links_only}");
    let watched = Watched.config();
    assert!(watched.validate().is_ok(), "{:?}", watched.validate());
    let settings = watched.to_string();
    assert!(settings.contains("adaptive = true · block_target = 0.05"), "{settings}");
    assert!(settings.contains("block_markers = g-recaptcha"), "{settings}");
    assert!(
        settings.contains("cookies = false · user_agents = 2 listed · user_agents_file = agents.txt"),
        "{settings}"
    );
    assert!(settings.contains("follow_hidden = true"), "{settings}");
    assert!(settings.contains("impersonate = firefox"), "{settings}");
    assert!(settings.contains("http2 = false"), "{settings}");
    assert!(
        settings.contains(
            "render = auto · render_timeout = 20s · render_resources = true · browser_pages = \
            2 · browser_recycle = 50 · browser_rss = 1024 · screenshot_failures = shots"
        ),
        "{settings}"
    );
    assert!(
        settings.contains(
            "frontier = redis://127.0.0.1:6379/0 · crawl_id = books-fleet · lease = 2m · partitions = 3"
        ),
        "{settings}"
    );
    assert!(settings.contains("metrics = 127.0.0.1:9899 · progress = false"), "{settings}");
    // Every key the attribute takes is written above (`fresh` is run time only).
    let this_file = include_str!("every_key.rs");
    for key in spider_settings::KEYS.iter().filter(|key| key.at_compile_time()) {
        assert!(
            this_file.contains(&format!("    {} = ", key.name)),
            "`{}` is not in a test spider",
            key.name
        );
    }
    fn crawls<S: Spider>(_: S) {}
    crawls(Books);
    crawls(LinksOnly);
    crawls(Watched);
}
