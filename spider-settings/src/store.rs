//! Where items go, as `output` names it: items files, and stores named by URI (a table in
//! an SQLite file or in PostgreSQL, a bucket), each shown everywhere with its password
//! hidden; any of them may take the items of one type only (`?type=Book`).

use std::fmt;
use std::path::{Path, PathBuf};

/// An items file of `output`: `books.jsonl`, or `books.jsonl?type=Book` for the items of
/// one type only (the name of the struct an item serializes as, or an enum's variant).
///
/// # Examples
///
/// ```
/// use spider_settings::ItemsFile;
/// let file = ItemsFile::new("out/books.csv?type=Book");
/// assert_eq!((file.path.to_str(), file.item_type.as_deref()), (Some("out/books.csv"), Some("Book")));
/// assert_eq!(file.to_string(), "out/books.csv?type=Book");
/// assert_eq!(ItemsFile::new("books.jsonl").item_type, None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemsFile {
    /// Where the file is; its extension picks the format.
    pub path: PathBuf,
    /// The one type of items it takes, as written (checked by `Config::validate`); `None`:
    /// every item.
    pub item_type: Option<String>,
}

impl ItemsFile {
    /// The items file `text` names, `?type=NAME` after its path taking one type.
    pub fn new(text: impl Into<PathBuf>) -> ItemsFile {
        let text = text.into();
        match text.to_str().and_then(|text| text.rsplit_once("?type=")) {
            Some((path, item_type)) => {
                ItemsFile { path: PathBuf::from(path), item_type: Some(item_type.to_owned()) }
            }
            None => ItemsFile { path: text, item_type: None },
        }
    }

    /// Whether `path` is this file.
    pub fn is(&self, path: &Path) -> bool {
        self.path == path
    }
}

impl fmt::Display for ItemsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        match &self.item_type {
            Some(item_type) => write!(f, "?type={item_type}"),
            None => Ok(()),
        }
    }
}

/// Whether `name` can be an item's type in `?type=`: a Rust type's name.
pub(crate) fn is_item_type(name: &str) -> bool {
    is_identifier(name, false)
}

/// Where a store lives. Its `Debug` hides a PostgreSQL URL's password.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreKind {
    /// An SQLite file, created when missing.
    Sqlite(PathBuf),
    /// A PostgreSQL server: the connection URL (its password included) without the
    /// store's own parameters.
    Postgres(String),
    /// An S3-compatible bucket: objects of JSON Lines (gzipped by default) under a prefix.
    S3(S3Bucket),
}

/// A bucket and where in it a crawl's objects go, with how they are batched.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Bucket {
    /// The bucket's name.
    pub bucket: String,
    /// The objects' directory, without a trailing `/` (may be empty); it may hold
    /// `{spider}`, `{time}` and `{crawl}` (see [`S3Bucket::object`]).
    pub prefix: String,
    /// An object's name in [`S3Bucket::prefix`]: the URI's last segment when it holds
    /// `{batch}`, else `{crawl}-{batch}.jsonl.gz`. `{spider}` is the spider's name,
    /// `{time}` the crawl's start (`20261203T065646Z`, kept by a state file, so that a
    /// resumed crawl writes on under the same names), `{crawl}` that time and a random
    /// tag, and `{batch}` the checkpoints the object holds (`000000000001-000000000007`).
    /// It ends in `.jsonl.gz`, `.jsonl.zst` or `.jsonl`, its compression.
    pub object: String,
    /// `endpoint=URL`, for a server that is not AWS (MinIO, moto, R2); else the
    /// environment's `AWS_ENDPOINT_URL`, else AWS.
    pub endpoint: Option<String>,
    /// `region=R`; else the environment's, else `us-east-1`.
    pub region: Option<String>,
    /// The access key and secret from the URL's user and password; else the usual
    /// environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`).
    pub credentials: Option<(String, String)>,
    /// `credentials=instance`: without a key in the URL or the environment, ask the
    /// machine's instance metadata (EC2) or the container's role for one. Without it, a
    /// crawl with no key is refused at once rather than waiting on a metadata service that
    /// may not be there.
    pub instance_credentials: bool,
    /// `items=N`: an object holds up to this many items (default 10,000).
    pub items: u64,
    /// `bytes=N`: an object holds up to about this many bytes of JSON Lines before
    /// compression (default 100 MB); one item larger than that is an object alone.
    pub bytes: u64,
    /// `seconds=S`: items wait at most this long for their object (default 60).
    pub seconds: u64,
}

/// A table the crawl writes its items to: `sqlite://PATH?table=T` or
/// `postgres://USER:PASSWORD@HOST:PORT/DB?table=T`, with `&key=FIELD` to upsert by a field
/// instead of inserting, or `env:VAR` naming a variable that holds either.
///
/// # Examples
///
/// ```
/// use spider_settings::StoreUri;
/// let store = StoreUri::parse("postgres://crawler:hunter2@127.0.0.1:5432/shop?table=books&key=url").unwrap();
/// assert_eq!((store.table(), store.key()), ("books", Some("url")));
/// assert_eq!(store.to_string(), "postgres://***@127.0.0.1:5432/shop?table=books&key=url");
/// assert!(StoreUri::parse("sqlite://books.db").unwrap_err().contains("?table="));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUri {
    kind: StoreKind,
    table: String,
    key: Option<String>,
    item_type: Option<String>,
    shown: String,
}

/// Whether `text` names a store rather than an items file: `sqlite://`, `postgres://`,
/// `postgresql://`, `s3://`, or `env:VAR`.
pub fn is_store(text: &str) -> bool {
    ["sqlite://", "postgres://", "postgresql://", "s3://", "env:"]
        .iter()
        .any(|scheme| text.starts_with(scheme))
}

impl StoreUri {
    /// Parse a store's URI.
    ///
    /// # Errors
    ///
    /// A message saying what to write instead; it never holds the password.
    pub fn parse(text: &str) -> Result<StoreUri, String> {
        let text = text.trim();
        let uri = match text.strip_prefix("env:") {
            Some(var) => std::env::var(var).map_err(|_| {
                format!(
                    "output = {text}: the environment variable {var} is not set; set it to a store's \
                    URI, such as postgres://USER:PASSWORD@HOST/DB?table=items"
                )
            })?,
            None => text.to_owned(),
        };
        let shown = crate::redact_url(&uri);
        if uri.starts_with("s3://") {
            return s3(&uri, shown);
        }
        let (place, query) = uri.split_once('?').unwrap_or((&uri, ""));
        let (mut table, mut key, mut item_type, mut rest) = (None, None, None, Vec::new());
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("table", value)) => table = Some(value.to_owned()),
                Some(("key", value)) => key = Some(value.to_owned()),
                Some(("type", value)) => item_type = Some(item_type_of(value, &shown)?),
                _ => rest.push(pair),
            }
        }
        let Some(table) = table else {
            return Err(format!(
                "output = {shown} names no table; add ?table=NAME, such as {}?table=items",
                crate::redact_url(place)
            ));
        };
        if !is_identifier(&table, true) {
            return Err(format!(
                "output = {shown}: table `{table}` is not a plain name; write letters, digits and _ \
                    (schema.table in PostgreSQL)"
            ));
        }
        if let Some(key) = key.as_deref().filter(|key| !is_identifier(key, false)) {
            return Err(format!(
                "output = {shown}: key `{key}` is not a field's name; write letters, digits and _"
            ));
        }
        let kind = if let Some(path) = place.strip_prefix("sqlite://") {
            if path.is_empty() || !rest.is_empty() {
                return Err(format!(
                    "output = {shown}: write sqlite://PATH?table=NAME (a relative path, or \
                        sqlite:///ABSOLUTE), with key= and type= as the only other parameters"
                ));
            }
            if table.contains('.') {
                return Err(format!(
                    "output = {shown}: SQLite's table `{table}` has no schema; write a plain name"
                ));
            }
            StoreKind::Sqlite(PathBuf::from(path))
        } else if place.starts_with("postgres://") || place.starts_with("postgresql://") {
            let parsed = url::Url::parse(place).map_err(|e| {
                format!(
                    "output = {shown} is not a URL ({e}); write \
                    postgres://USER:PASSWORD@HOST:PORT/DB?table=NAME"
                )
            })?;
            if parsed.host_str().is_none_or(str::is_empty) {
                return Err(format!(
                    "output = {shown} names no host; write postgres://USER:PASSWORD@HOST:PORT/DB?table=NAME"
                ));
            }
            let connection =
                if rest.is_empty() { place.to_owned() } else { format!("{place}?{}", rest.join("&")) };
            StoreKind::Postgres(connection)
        } else {
            return Err(format!(
                "output = {shown} is no store this build knows; write sqlite://PATH?table=NAME or \
                    postgres://USER:PASSWORD@HOST/DB?table=NAME"
            ));
        };
        Ok(StoreUri { kind, table, key, item_type, shown })
    }

    /// Where the store is.
    pub fn kind(&self) -> &StoreKind {
        &self.kind
    }

    /// The table items go to, `schema.table` or a plain name; a bucket's prefix.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The field items are upserted by, if one was given.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The one type of items the store takes (`type=Book`); `None`: every item.
    pub fn item_type(&self) -> Option<&str> {
        self.item_type.as_deref()
    }
}

/// A `type=` parameter's value, checked.
fn item_type_of(value: &str, shown: &str) -> Result<String, String> {
    if is_item_type(value) {
        return Ok(value.to_owned());
    }
    Err(format!(
        "output = {shown}: type = {value} is not a type's name; write the name of the items' struct, \
        such as type=Book"
    ))
}

/// `s3://[KEY:SECRET@]BUCKET[/PREFIX][/OBJECT][?endpoint=URL&region=R&items=N&bytes=N&seconds=S&credentials=instance]`.
fn s3(uri: &str, shown: String) -> Result<StoreUri, String> {
    let how = "write s3://BUCKET/PREFIX, with ?endpoint=URL for a server that is not AWS";
    let parsed = url::Url::parse(uri).map_err(|e| format!("output = {shown} is not a URL ({e}); {how}"))?;
    let bucket = parsed
        .host_str()
        .filter(|b| !b.is_empty())
        .ok_or_else(|| format!("output = {shown} names no bucket; {how}"))?;
    let (prefix, object) = object_names(&decode(parsed.path()), &shown)?;
    let credentials = match (parsed.username(), parsed.password()) {
        ("", None) => None,
        (key, Some(secret)) if !key.is_empty() => Some((decode(key), decode(secret))),
        _ => {
            return Err(format!(
                "output = {shown}: give both the access key and the secret \
            (s3://KEY:SECRET@BUCKET/…), or neither"
            ))
        }
    };
    let mut bucket = S3Bucket {
        bucket: bucket.to_owned(),
        prefix,
        object,
        endpoint: None,
        region: None,
        credentials,
        instance_credentials: false,
        items: 10_000,
        bytes: 100_000_000,
        seconds: 60,
    };
    let mut item_type = None;
    for (name, value) in parsed.query_pairs() {
        let count =
            |what: &str| {
                value.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("output = {shown}: {what} = {value} is not a positive whole number")
                })
            };
        match &*name {
            "endpoint" => bucket.endpoint = Some(value.into_owned()),
            "region" => bucket.region = Some(value.into_owned()),
            "items" => bucket.items = count("items")?,
            "bytes" => bucket.bytes = count("bytes")?,
            "seconds" => bucket.seconds = count("seconds")?,
            "type" => item_type = Some(item_type_of(&value, &shown)?),
            "credentials" if value == "instance" => bucket.instance_credentials = true,
            "credentials" => {
                return Err(format!(
                    "output = {shown}: credentials = {value}: the one choice is \
                    credentials=instance (the machine's instance metadata); give a key as \
                        s3://KEY:SECRET@BUCKET/… or in AWS_ACCESS_KEY_ID"
                ))
            }
            other => {
                return Err(format!(
                    "output = {shown}: unknown parameter `{other}`; an S3 output takes \
                    endpoint, region, items, bytes, seconds, credentials and type"
                ))
            }
        }
    }
    let table = bucket.prefix.clone();
    Ok(StoreUri { kind: StoreKind::S3(bucket), table, key: None, item_type, shown })
}

/// The placeholders an object's path may hold; `{batch}` only in its last segment.
const PLACES: [&str; 4] = ["{spider}", "{time}", "{crawl}", "{batch}"];

/// A bucket URI's path as the objects' directory and an object's name: its last segment is
/// the name when it holds `{batch}`; else the whole path is the directory.
fn object_names(path: &str, shown: &str) -> Result<(String, String), String> {
    let path = path.trim_matches('/');
    let (prefix, object) = match path.rsplit_once('/') {
        Some((prefix, last)) if last.contains("{batch}") => (prefix, last),
        None if path.contains("{batch}") => ("", path),
        _ => (path, "{crawl}-{batch}.jsonl.gz"),
    };
    let mut rest = format!("{prefix}/{object}");
    for place in PLACES {
        rest = rest.replace(place, "");
    }
    if let Some(start) = rest.find('{') {
        let unknown: String = rest[start..].chars().take_while(|c| *c != '}').chain(Some('}')).collect();
        return Err(format!(
            "output = {shown}: `{unknown}` is not a name an object's path may hold; write {{spider}}, \
                {{time}}, {{crawl}} or {{batch}}"
        ));
    }
    if prefix.contains("{batch}") || object.matches("{batch}").count() != 1 {
        return Err(format!(
            "output = {shown}: write {{batch}} once, in the object's name (the last part of the path), such \
                as s3://BUCKET/items/{{spider}}/{{time}}-{{batch}}.jsonl.gz"
        ));
    }
    if !(prefix.contains("{time}")
        || prefix.contains("{crawl}")
        || object.contains("{time}")
        || object.contains("{crawl}"))
    {
        return Err(format!(
            "output = {shown}: an object's path needs {{time}} or {{crawl}}, so that one crawl's objects are \
                told from another's"
        ));
    }
    if ![".jsonl.gz", ".jsonl.zst", ".jsonl"].iter().any(|end| object.ends_with(end)) {
        return Err(format!(
            "output = {shown}: an object's name ends in .jsonl.gz, .jsonl.zst or .jsonl (its compression)"
        ));
    }
    Ok((prefix.to_owned(), object.to_owned()))
}

fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// A name safe to put between double quotes in SQL: ASCII letters, digits and `_`, not
/// starting with a digit; with `schema`, one `.` may join two such names.
fn is_identifier(text: &str, schema: bool) -> bool {
    let plain = |part: &str| {
        part.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    match text.split_once('.') {
        Some((a, b)) if schema => plain(a) && plain(b),
        Some(_) => false,
        None => plain(text),
    }
}

impl fmt::Debug for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreKind::Sqlite(path) => write!(f, "Sqlite({})", path.display()),
            StoreKind::Postgres(url) => write!(f, "Postgres({})", crate::redact_url(url)),
            StoreKind::S3(bucket) => write!(f, "S3({}/{})", bucket.bucket, bucket.prefix),
        }
    }
}

impl fmt::Display for StoreUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for StoreUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_store_parses_and_its_own_parameters_leave_the_connection() {
        let pg = StoreUri::parse("postgresql://a:b@db:5433/shop?sslmode=require&table=public.books").unwrap();
        assert_eq!(
            pg.kind(),
            &StoreKind::Postgres("postgresql://a:b@db:5433/shop?sslmode=require".to_owned())
        );
        assert_eq!((pg.table(), pg.key()), ("public.books", None));
        assert!(!format!("{pg} {pg:?}").contains(":b@"));
        let lite = StoreUri::parse("sqlite://out/books.db?table=books&key=url").unwrap();
        assert_eq!(lite.kind(), &StoreKind::Sqlite(PathBuf::from("out/books.db")));
        assert_eq!(
            StoreUri::parse("sqlite:///tmp/b.db?table=t").unwrap().kind(),
            &StoreKind::Sqlite("/tmp/b.db".into())
        );
    }

    #[test]
    fn a_bad_store_says_what_to_write() {
        let problem = |text: &str| StoreUri::parse(text).unwrap_err();
        assert!(problem("sqlite://b.db?table=a;drop").contains("not a plain name"));
        assert!(problem("sqlite://b.db?table=s.t").contains("no schema"));
        assert!(problem("postgres://u:secret@h/db?table=t&key=a b").contains("not a field's name"));
        assert!(!problem("postgres://u:secret@h/db").contains("secret"));
        assert!(problem("env:SPIDERLING_NO_SUCH_STORE").contains("is not set"));
        assert!(is_store("sqlite://x") && is_store("env:PG") && !is_store("books.jsonl"));
        assert!(problem("s3://bucket/p?colour=red").contains("unknown parameter `colour`"));
        assert!(problem("s3://bucket/p?items=0").contains("not a positive whole number"));
        assert!(!problem("s3://AKIA:topsecret@bucket/p?items=x").contains("topsecret"));
        assert!(problem("sqlite://b.db?table=t&type=Book!").contains("not a type's name"));
    }

    #[test]
    fn a_store_takes_the_items_of_one_type_when_it_says_so() {
        let typed = |text: &str| StoreUri::parse(text).unwrap().item_type().map(str::to_owned);
        assert_eq!(typed("sqlite://b.db?table=books&type=Book").as_deref(), Some("Book"));
        assert_eq!(
            typed("postgres://u:p@h/db?table=t&type=Review&sslmode=require").as_deref(),
            Some("Review")
        );
        assert_eq!(typed("s3://bucket/p?type=Book&items=5").as_deref(), Some("Book"));
        assert_eq!(typed("sqlite://b.db?table=books"), None);
        let pg = StoreUri::parse("postgres://u:p@h/db?table=t&type=Review").unwrap();
        assert!(matches!(pg.kind(), StoreKind::Postgres(url) if !url.contains("type=")), "not the server's");
    }

    #[test]
    fn a_bucket_takes_its_credentials_endpoint_and_batches_from_the_uri() {
        let store =
            StoreUri::parse("s3://AKIA:se%2Fcret@books/crawls/shop/?endpoint=http://127.0.0.1:9000&items=50")
                .unwrap();
        let StoreKind::S3(bucket) = store.kind() else { panic!("{store:?}") };
        assert_eq!((bucket.bucket.as_str(), bucket.prefix.as_str()), ("books", "crawls/shop"));
        assert_eq!(bucket.credentials, Some(("AKIA".to_owned(), "se/cret".to_owned())));
        assert_eq!(
            (bucket.endpoint.as_deref(), bucket.items, bucket.bytes, bucket.seconds),
            (Some("http://127.0.0.1:9000"), 50, 100_000_000, 60)
        );
        let sized = StoreUri::parse("s3://books/p?bytes=65536").unwrap();
        assert!(
            matches!(sized.kind(), StoreKind::S3(bucket) if bucket.bytes == 65_536 && bucket.items == 10_000)
        );
        assert_eq!(store.to_string(), "s3://***@books/crawls/shop/?endpoint=http://127.0.0.1:9000&items=50");
    }

    #[test]
    fn a_bucket_uri_names_its_objects_with_a_template() {
        let bucket = |text: &str| match StoreUri::parse(text).map(|uri| uri.kind().clone()) {
            Ok(StoreKind::S3(bucket)) => Ok((bucket.prefix, bucket.object)),
            other => Err(format!("{other:?}")),
        };
        assert_eq!(
            bucket("s3://b/items/{spider}/{time}-{batch}.jsonl.zst"),
            Ok(("items/{spider}".to_owned(), "{time}-{batch}.jsonl.zst".to_owned()))
        );
        assert_eq!(
            bucket("s3://b/{crawl}-{batch}.jsonl"),
            Ok((String::new(), "{crawl}-{batch}.jsonl".to_owned()))
        );
        // A path without {batch} is the directory, and the name is the crawl's and its batch.
        assert_eq!(
            bucket("s3://b/{spider}/"),
            Ok(("{spider}".to_owned(), "{crawl}-{batch}.jsonl.gz".to_owned()))
        );

        let problem = |text: &str| StoreUri::parse(text).unwrap_err();
        assert!(problem("s3://b/{spider}/{batch}.jsonl.gz").contains("needs {time} or {crawl}"));
        assert!(problem("s3://b/{batch}/{time}-{batch}.jsonl.gz").contains("write {batch} once"));
        assert!(problem("s3://b/{day}/{time}-{batch}.jsonl.gz").contains("`{day}` is not a name"));
        assert!(problem("s3://b/{time}-{batch}.csv").contains("ends in .jsonl.gz, .jsonl.zst or .jsonl"));
        assert!(problem("s3://b/p?credentials=env").contains("credentials=instance"));
        let instance = StoreUri::parse("s3://b/p?credentials=instance").unwrap();
        assert!(matches!(instance.kind(), StoreKind::S3(bucket) if bucket.instance_credentials));
    }
}
