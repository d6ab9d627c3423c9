//! Tables and buckets as output: items into a real PostgreSQL server, an SQLite file and an
//! S3-compatible server (moto) beside the JSON Lines file, every item in each exactly
//! once, through SIGKILLs of the crawler, a restart of the server, and a server down for
//! longer than the crawl will wait.

#![allow(clippy::unwrap_used)] // the helpers below are test code too

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use spider_sandbox::{DemoSite, MotoServer, PostgresServer, Sandbox};
use spiderling::{Crawler, Error};
use support::{expected_books, expected_listings, BookSpider, Listing, ShelfSpider};

const CHILD: &str = "TABLES_TEST_CHILD_ARGS";
const SHELF_CHILD: &str = "TABLES_TEST_SHELF_CHILD_ARGS";
const CONCURRENCY: usize = 4;

#[test]
#[ignore = "the child process of the kill tests, started by them"]
fn child_crawl() {
    support::run_child_crawl(CHILD, CONCURRENCY);
}

#[test]
#[ignore = "the child process of the kill test of typed outputs, started by it"]
fn shelf_child_crawl() {
    support::run_child_crawl_of(SHELF_CHILD, CONCURRENCY, ShelfSpider::new);
}

fn postgres() -> PostgresServer {
    PostgresServer::start().unwrap_or_else(|error| panic!("these tests need PostgreSQL: {error}"))
}

/// The titles in `table`, sorted, with how many rows it has.
fn pg_titles(pg: &PostgresServer, table: &str) -> (usize, BTreeSet<String>) {
    let rows = pg.query(&format!("SELECT title FROM {table}")).unwrap();
    let rows: Vec<String> = rows.lines().map(str::to_owned).filter(|l| !l.is_empty()).collect();
    (rows.len(), rows.into_iter().collect())
}

fn moto() -> MotoServer {
    let moto = MotoServer::start().unwrap_or_else(|error| panic!("these tests need moto: {error}"));
    moto.create_bucket("books").unwrap();
    moto
}

/// An object's JSON lines, read whole (a gzip or zstd stream that ends where it should,
/// by the key's extension).
fn object_text(moto: &MotoServer, key: &str) -> String {
    let body = moto.get("books", key).unwrap();
    let bytes = if key.ends_with(".zst") {
        zstd::stream::decode_all(&body[..]).unwrap_or_else(|error| panic!("{key} is not whole: {error}"))
    } else {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut text)
            .unwrap_or_else(|error| panic!("{key} is not whole: {error}"));
        text
    };
    String::from_utf8(bytes).unwrap()
}

/// The titles in every object under `prefix`, each object read whole, with the objects'
/// keys.
fn bucket_titles(moto: &MotoServer, prefix: &str) -> ((usize, BTreeSet<String>), Vec<String>) {
    let keys = moto.keys("books", prefix).unwrap();
    let mut titles = Vec::new();
    for key in &keys {
        let text = object_text(moto, key);
        for line in text.lines() {
            let item: serde_json::Value = serde_json::from_str(line).unwrap();
            titles.push(item["title"].as_str().unwrap().to_owned());
        }
    }
    ((titles.len(), titles.into_iter().collect()), keys)
}

fn sqlite_titles(path: &Path, table: &str) -> (usize, BTreeSet<String>) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut select = conn.prepare(&format!("SELECT title FROM {table}")).unwrap();
    let rows: Vec<String> = select.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect();
    (rows.len(), rows.into_iter().collect())
}

/// `found` (rows, distinct titles) holds each of the first `count` books once.
fn assert_once(found: (usize, BTreeSet<String>), count: usize, what: &str) {
    assert_eq!(found.0, count, "{what}: rows");
    assert!(found.1 == titles(count), "{what}: not the books expected: {} distinct", found.1.len());
}

fn titles(count: usize) -> BTreeSet<String> {
    expected_books(count).into_iter().map(|book| book.title).collect()
}

fn site(books: usize, latency: Duration) -> Sandbox {
    Sandbox::demo(DemoSite { books, per_page: 10, latency, ..DemoSite::default() }).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_crawl_writes_a_file_an_sqlite_table_and_a_postgres_table_each_item_once() {
    let pg = postgres();
    let site = site(120, Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let lite = dir.path().join("books.db");
    let config = support::quick_config(&site)
        .output(dir.path().join("books.jsonl"))
        .output(format!("sqlite://{}?table=books", lite.display()))
        .output(format!("{}?table=books", pg.url()));
    let logs = support::capture_logs();
    let summary = Crawler::with_config(BookSpider::new(config.clone()), config).run().await.unwrap();
    assert_eq!(summary.counts.items, 120);
    let file: BTreeSet<String> =
        support::read_jsonl(&dir.path().join("books.jsonl")).into_iter().map(|b| b.title).collect();
    assert_eq!(file, titles(120));
    assert_once(sqlite_titles(&lite, "books"), 120, "sqlite");
    assert_once(pg_titles(&pg, "books"), 120, "postgres");
    // The table was made from the items' fields, in their order, with their types.
    let columns = pg
        .query(
            "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM \
            information_schema.columns WHERE table_name = 'books'",
        )
        .unwrap();
    assert_eq!(columns, "title text, price text, availability text");
    let log = logs.text();
    assert!(!log.contains("secret"), "the password is never logged: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_gets_whole_objects_of_a_batch_each_named_by_the_template_and_every_item_once() {
    let moto = moto();
    let site = site(130, Duration::ZERO);
    let config = support::quick_config(&site).output(format!(
        "s3://AKIAEXAMPLE:topsecret@books/crawls/{{spider}}/{{crawl}}-{{batch}}.jsonl.zst?endpoint={}&items=25",
        moto.endpoint()
    ));
    let logs = support::capture_logs();
    let summary = Crawler::with_config(BookSpider::new(config.clone()), config).run().await.unwrap();
    assert_eq!(summary.counts.items, 130);
    let (found, keys) = bucket_titles(&moto, "crawls/books/");
    assert_once(found, 130, "bucket");
    // Batches of up to 25 items: at least six zstd objects, named by the chunks they hold.
    assert!(keys.len() >= 6, "{keys:?}");
    assert!(
        keys.iter().all(|key| key.starts_with("crawls/books/") && key.ends_with(".jsonl.zst")),
        "{keys:?}"
    );
    assert!(!logs.text().contains("topsecret"), "the secret key is never logged");
}

/// A bucket without a key anywhere is refused before the first request, rather than
/// waiting on a metadata service for credentials.
#[test]
fn a_bucket_without_credentials_is_refused_at_once() {
    let moto = moto();
    let site = site(10, Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let outputs = [format!("s3://books/nokey?endpoint={}", moto.endpoint())];
    let args = support::child_args(dir.path(), &site, &outputs, &[]);
    let mut command = support::child_command(module_path!(), "child_crawl", CHILD, &args);
    for var in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ] {
        command.env_remove(var);
    }
    let started = std::time::Instant::now();
    let run = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    assert!(
        stderr.contains("no credentials for the bucket") && stderr.contains("credentials=instance"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(60), "refused at once: {:?}", started.elapsed());
    assert_eq!(site.received(), 0, "nothing fetched for items that could go nowhere");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_batched_by_bytes_keeps_each_object_near_its_size() {
    let moto = moto();
    let site = site(120, Duration::ZERO);
    let config = support::quick_config(&site).output(format!(
        "s3://AKIAEXAMPLE:topsecret@books/by-size?endpoint={}&bytes=1000&seconds=3600",
        moto.endpoint()
    ));
    let summary = Crawler::with_config(BookSpider::new(config.clone()), config).run().await.unwrap();
    assert_eq!(summary.counts.items, 120);
    let (found, keys) = bucket_titles(&moto, "by-size/");
    assert_once(found, 120, "bucket");
    // About 100 bytes of JSON a book: 1,000 bytes an object is a dozen objects, where
    // 10,000 items an object would be one.
    assert!(keys.len() >= 8, "{keys:?}");
    for key in &keys {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(&moto.get("books", key).unwrap()[..]),
            &mut text,
        )
        .unwrap();
        // A page's chunk is never split: one may take an object past its size by one chunk.
        assert!(text.len() < 1000 + 1000, "{key}: {} bytes", text.len());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_upserts_so_a_second_crawl_leaves_one_row_per_book() {
    let pg = postgres();
    let site = site(40, Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let lite = dir.path().join("books.db");
    let mut fetched = Vec::new();
    for _ in 0..2 {
        let config = support::quick_config(&site)
            .output(format!("sqlite://{}?table=books&key=title", lite.display()))
            .output(format!("{}?table=books&key=title", pg.url()));
        let summary = Crawler::with_config(BookSpider::new(config.clone()), config).run().await.unwrap();
        assert_eq!(summary.counts.items, 40);
        fetched.push(site.observed().pages().count());
    }
    assert_eq!(fetched[1], 2 * fetched[0], "both crawls fetched every page");
    assert_once(pg_titles(&pg, "books"), 40, "postgres");
    assert_once(sqlite_titles(&lite, "books"), 40, "sqlite");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_without_a_column_for_a_field_stops_the_crawl_and_says_which() {
    let pg = postgres();
    pg.query("CREATE TABLE books (title text, price text)").unwrap();
    let site = site(20, Duration::ZERO);
    let config = support::quick_config(&site).output(format!("{}?table=books", pg.url()));
    let error = Crawler::with_config(BookSpider::new(config.clone()), config).run().await.unwrap_err();
    assert!(matches!(error, Error::Table { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("no column for the items' field `availability`"), "{message}");
    assert!(!message.contains("secret"), "{message}");
    assert_eq!(error.exit_code(), std::process::ExitCode::from(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarted_mid_crawl_loses_nothing() {
    let mut pg = postgres();
    let site = site(150, Duration::from_millis(20));
    let dir = tempfile::tempdir().unwrap();
    let config = support::quick_config(&site)
        .concurrency(2)
        .per_host(2)
        .state(dir.path().join("books.state"))
        .output(format!("{}?table=books", pg.url()));
    let logs = support::capture_logs();
    let crawler = Crawler::with_config(BookSpider::new(config.clone()), config);
    let live = crawler.live();
    let crawl = tokio::spawn(crawler.run());
    let deadline = Instant::now() + Duration::from_secs(60);
    while site.received() < 30 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let at_stop = site.received();
    tokio::task::block_in_place(|| pg.stop()).unwrap();
    // The crawl goes on while the server is down.
    while site.received() < at_stop + 30 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(site.received() >= at_stop + 30, "the crawl went on without its table");
    // The gauge counts the items waiting for the table (it is published once a second).
    while live.borrow().items_held == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(live.borrow().items_held > 0, "items_held counts what the table lacks");
    tokio::task::block_in_place(|| pg.start_again()).unwrap();
    let summary = crawl.await.unwrap().unwrap();
    assert_eq!(summary.counts.items, 150);
    assert_once(pg_titles(&pg, "books"), 150, "postgres");
    let log = logs.text();
    assert!(log.contains("holding its items, trying again"), "{log}");
    assert!(log.contains("the table takes items again"), "{log}");
    assert!(!log.contains("secret"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_down_past_its_patience_stops_the_crawl_and_the_next_run_delivers_what_it_held() {
    let mut pg = postgres();
    let url = pg.url();
    tokio::task::block_in_place(|| pg.stop()).unwrap();
    let site = site(30, Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let config = support::quick_config(&site)
        .state(dir.path().join("books.state"))
        .store_patience(Duration::from_secs(2))
        .output(format!("{url}?table=books"));
    let error =
        Crawler::with_config(BookSpider::new(config.clone()), config.clone()).run().await.unwrap_err();
    assert!(matches!(error, Error::Table { .. }), "{error:?}");
    assert!(error.to_string().contains("kept in the state file"), "{error}");
    let fetched = site.observed().pages().count();
    tokio::task::block_in_place(|| pg.start_again()).unwrap();
    let summary = Crawler::with_config(BookSpider::new(config.clone()), config).run().await.unwrap();
    assert_eq!(site.observed().pages().count(), fetched, "the second run fetched nothing again");
    assert_once(pg_titles(&pg, "books"), 30, "postgres");
    let _ = summary;
}

/// The crawl in a child process with a state file, SIGKILLed at seeded random moments
/// and resumed, with a PostgreSQL and an SQLite table as output.
#[test]
fn killed_again_and_again_every_item_is_in_each_table_once() {
    let pg = postgres();
    let moto = moto();
    let site = site(200, Duration::from_millis(10));
    let dir = tempfile::tempdir().unwrap();
    let lite = dir.path().join("books.db");
    let outputs = [
        format!("{}?table=books", pg.url()),
        format!("sqlite://{}?table=books", lite.display()),
        format!("s3://test:test@books/killed/{{spider}}/{{time}}-{{batch}}.jsonl.gz?endpoint={}&items=15&seconds=1", moto.endpoint()),
        dir.path().join("books.jsonl").display().to_string(),
    ];
    let args = support::child_args(dir.path(), &site, &outputs, &[]);
    // Some pages into each run, a different number each time.
    let (kills, last) =
        support::kill_and_resume(module_path!(), "child_crawl", CHILD, &args, &site, 5, |round| {
            5 + (round * 7) % 25
        });
    assert!(kills >= 3, "only {kills} kills landed before the crawl ended");
    assert!(last.status.success(), "the last run finishes: {}", String::from_utf8_lossy(&last.stderr));
    assert_once(pg_titles(&pg, "books"), 200, "postgres after the kills");
    assert_once(sqlite_titles(&lite, "books"), 200, "sqlite after the kills");
    let (found, keys) = bucket_titles(&moto, "killed/books/");
    assert_once(found, 200, "bucket after the kills");
    // Every run wrote under the first one's start: the state file kept the crawl's {time}.
    let times: BTreeSet<&str> =
        keys.iter().filter_map(|key| key.strip_prefix("killed/books/")?.split('-').next()).collect();
    assert_eq!(times.len(), 1, "{keys:?}");
    let file = support::read_jsonl(&dir.path().join("books.jsonl"));
    assert_eq!(file.len(), 200);
}

/// Items of two types, each to the outputs of its type, through a state file's SIGKILLs:
/// a file and a table of each type and a bucket of listings, every item once in each.
#[test]
fn killed_again_and_again_each_type_is_in_its_outputs_once() {
    let pg = postgres();
    let moto = moto();
    let (books, per_page) = (150, 10);
    let site = Sandbox::demo(DemoSite {
        books,
        per_page,
        latency: Duration::from_millis(10),
        ..DemoSite::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lite = dir.path().join("shop.db");
    let outputs = [
        format!("{}?table=listings&type=Listing", pg.url()),
        format!("sqlite://{}?table=books&type=Book", lite.display()),
        format!(
            "s3://test:test@books/shelves/{{time}}-{{batch}}.jsonl.gz?endpoint={}&type=Listing&seconds=1",
            moto.endpoint()
        ),
        format!("{}?type=Book", dir.path().join("books.jsonl").display()),
        format!("{}?type=Listing", dir.path().join("listings.csv").display()),
    ];
    let args = support::child_args(dir.path(), &site, &outputs, &[]);
    let (kills, last) = support::kill_and_resume(
        module_path!(),
        "shelf_child_crawl",
        SHELF_CHILD,
        &args,
        &site,
        5,
        |round| 4 + (round * 11) % 30,
    );
    assert!(kills >= 3, "only {kills} kills landed before the crawl ended");
    assert!(last.status.success(), "the last run finishes: {}", String::from_utf8_lossy(&last.stderr));

    let listings = expected_listings(books, per_page);
    let pages: Vec<usize> = listings.iter().map(|listing| listing.page).collect();
    let mut in_pg: Vec<usize> =
        pg.query("SELECT page FROM listings").unwrap().lines().map(|line| line.parse().unwrap()).collect();
    in_pg.sort_unstable();
    assert_eq!(in_pg, pages, "postgres: every listing once");
    assert_once(sqlite_titles(&lite, "books"), books, "sqlite: every book once");
    let mut in_bucket: Vec<usize> = Vec::new();
    for key in moto.keys("books", "shelves/").unwrap() {
        for line in object_text(&moto, &key).lines() {
            let listing: Listing = serde_json::from_str(line).unwrap();
            in_bucket.push(listing.page);
        }
    }
    in_bucket.sort_unstable();
    assert_eq!(in_bucket, pages, "bucket: every listing once, whole objects only");
    assert_eq!(support::read_jsonl(&dir.path().join("books.jsonl")), expected_books(books), "books file");
    let mut csv = csv::Reader::from_path(dir.path().join("listings.csv")).unwrap();
    let mut from_csv: Vec<Listing> = csv.deserialize().map(Result::unwrap).collect();
    from_csv.sort();
    assert_eq!(from_csv, listings, "listings file: one header, every listing once");
}

/// A crawl of `site` into the table `url` names, given 3 s of patience for a table that is
/// down.
async fn crawl_into(site: &Sandbox, url: String) -> Result<spiderling::Summary, Error> {
    let config = support::quick_config(site).store_patience(Duration::from_secs(3)).output(url);
    Crawler::with_config(BookSpider::new(config.clone()), config).run().await
}

/// A cluster with `ssl = on` and a certificate of its own CA, for `localhost` only, as a
/// stock Debian cluster, RDS or Cloud SQL have one: each `sslmode` as libpq reads it. By
/// default (`prefer`) and with `require` the crawl connects over TLS without checking the
/// certificate; `verify-ca` checks it against `sslrootcert`; `verify-full` the name too.
/// Before, every mode but `disable` checked it against the web's roots and waited out
/// `store_patience` for a server it would never take, and `verify-ca`, `verify-full` and
/// `sslrootcert` were refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_tls_takes_each_sslmode_as_libpq_does() {
    let pg =
        PostgresServer::start_tls().unwrap_or_else(|error| panic!("these tests need PostgreSQL: {error}"));
    let ca = pg.ca_file().unwrap().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let other_ca = dir.path().join("other-ca.pem");
    let stranger = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(&other_ca, stranger.cert.pem()).unwrap();
    let localhost = pg.url().replace("127.0.0.1", "localhost");
    let site = site(20, Duration::ZERO);
    let crawl = |url: String| crawl_into(&site, url);
    let taken = [
        ("prefer", format!("{}?table=books_prefer", pg.url())),
        ("require", format!("{}?table=books_require&sslmode=require", pg.url())),
        ("disable", format!("{}?table=books_disable&sslmode=disable", pg.url())),
        ("verify_ca", format!("{}?table=books_verify_ca&sslmode=verify-ca&sslrootcert={ca}", pg.url())),
        ("verify_full", format!("{localhost}?table=books_verify_full&sslmode=verify-full&sslrootcert={ca}")),
    ];
    for (mode, url) in taken {
        let summary = crawl(url).await.unwrap_or_else(|error| panic!("{mode}: {error}"));
        assert_eq!(summary.counts.items, 20, "{mode}");
        assert_once(pg_titles(&pg, &format!("books_{mode}")), 20, mode);
    }
    let refused = [
        (format!("{}?table=t&sslmode=verify-full&sslrootcert={ca}", pg.url()), "certificate was refused"),
        (
            format!("{}?table=t&sslmode=verify-ca&sslrootcert={}", pg.url(), other_ca.display()),
            "certificate was refused",
        ),
    ];
    for (url, said) in refused {
        let started = Instant::now();
        let error = crawl(url.clone()).await.unwrap_err();
        assert!(matches!(error, Error::Table { .. }), "{url}: {error:?}");
        assert!(error.to_string().contains(said), "{url}: {error}");
        assert!(started.elapsed() < Duration::from_secs(3), "{url}: at once, not after store_patience");
    }
    let mistaken = [
        (format!("{}?table=t&sslmode=bogus", pg.url()), "sslmode=bogus is not one libpq knows"),
        (format!("{}?table=t&sslmode=require&sslrootcert=system", pg.url()), "only sslmode=verify-full"),
        (
            format!(
                "{}?table=t&sslmode=verify-ca&sslrootcert={}",
                pg.url(),
                dir.path().join("none.pem").display()
            ),
            "none.pem",
        ),
    ];
    for (url, said) in mistaken {
        let error = crawl(url.clone()).await.unwrap_err();
        assert!(matches!(error, Error::Config(_)), "{url}: {error:?}");
        assert!(error.to_string().contains(said), "{url}: {error}");
        assert!(!error.to_string().contains("secret"), "{error}");
    }
}

/// A cluster whose `pg_hba.conf` takes TCP clients by their certificate alone (`cert`),
/// as managed PostgreSQL offers and many operators require. Before, `sslcert` and `sslkey`
/// were not read: no client certificate was ever sent, and the crawl could not connect.
/// Now the certificate is sent in every mode that uses TLS; without one the server's
/// refusal stops the crawl, and a certificate or key named and missing is a setting error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_takes_a_client_certificate_from_sslcert_and_sslkey() {
    let pg = PostgresServer::start_tls_with_client_certificates()
        .unwrap_or_else(|error| panic!("these tests need PostgreSQL: {error}"));
    let ca = pg.ca_file().unwrap().display().to_string();
    let (cert, key) = pg.client_files().unwrap();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let localhost = pg.url().replace("127.0.0.1", "localhost");
    let site = site(20, Duration::ZERO);
    let crawl = |url: String| crawl_into(&site, url);
    let taken = [
        ("prefer", format!("{}?table=books_prefer&sslcert={cert}&sslkey={key}", pg.url())),
        (
            "verify_full",
            format!("{localhost}?table=books_verify_full&sslmode=verify-full&sslrootcert={ca}&sslcert={cert}&sslkey={key}"),
        ),
    ];
    for (mode, url) in taken {
        let summary = crawl(url).await.unwrap_or_else(|error| panic!("{mode}: {error}"));
        assert_eq!(summary.counts.items, 20, "{mode}");
        assert_once(pg_titles(&pg, &format!("books_{mode}")), 20, mode);
    }
    let error = crawl(format!("{}?table=t&sslmode=require", pg.url())).await.unwrap_err();
    assert!(error.to_string().contains("certificate"), "without one the server refuses: {error}");
    let missing = format!("{}?table=t&sslcert={cert}.gone&sslkey={key}", pg.url());
    let error = crawl(missing.clone()).await.unwrap_err();
    assert!(matches!(error, Error::Config(_)) && error.to_string().contains(".gone"), "{missing}: {error:?}");
    let no_key = format!("{}?table=t&sslcert={cert}&sslkey={key}.gone", pg.url());
    let error = crawl(no_key.clone()).await.unwrap_err();
    assert!(matches!(error, Error::Config(_)) && error.to_string().contains("sslkey"), "{no_key}: {error:?}");
    assert_eq!(pg.query("SELECT count(*) FROM pg_tables WHERE tablename = 't'").unwrap(), "0");
}

/// A server that takes the connection and never answers is a table down: the crawl stops
/// within `store_patience` and the operation's deadline, saying so, instead of hanging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_server_that_never_answers_stops_the_crawl_within_its_patience() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    // Every connection is taken and held open, and nothing is ever said on it.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming().flatten() {
            held.push(stream);
        }
    });
    let site = site(10, Duration::ZERO);
    let config = support::quick_config(&site)
        .store_patience(Duration::from_secs(2))
        .output(format!("postgres://spider:secret@127.0.0.1:{port}/postgres?table=books"));
    let started = Instant::now();
    let crawl = Crawler::with_config(BookSpider::new(config.clone()), config).run();
    let error = tokio::time::timeout(Duration::from_secs(60), crawl)
        .await
        .expect("the crawl hung on a server that never answers")
        .unwrap_err();
    assert!(matches!(error, Error::Table { .. }), "{error:?}");
    assert!(error.to_string().contains("no answer within 2s"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    assert_eq!(error.exit_code(), std::process::ExitCode::from(5));
}
