//! Errors of a crawl.
//!
//! Library code returns [`Error`], whose variants say which stage failed and carry the URL
//! or path they concern. A spider's own `parse` returns [`Result`], boxed, so that `?` works
//! on any error type a user meets inside it.

pub(crate) mod cause;
pub(crate) mod extract;
pub(crate) mod reason;

use std::path::PathBuf;

use url::Url;

use crate::error::cause::Cause;
use crate::error::reason::Reason;

/// Any error a spider's `parse` may return; `?` converts into it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The result a spider's `parse` returns.
///
/// # Examples
///
/// ```
/// fn price(text: &str) -> spider_core::Result<f64> {
///     Ok(text.trim_start_matches('£').parse::<f64>()?)
/// }
/// assert_eq!(price("£12.50").unwrap(), 12.5);
/// ```
pub type Result<T = (), E = BoxError> = std::result::Result<T, E>;

impl Error {
    /// The error for a setting whose stage this build of spiderling leaves out, with how
    /// to build it in.
    pub(crate) fn left_out(what: &str, feature: &str) -> Error {
        let how = match feature {
            "render" => {
                "build with `--features render` (it drives the system's Chromium: `CHROMIUM` or `chromium` \
                    on the PATH)"
            }
            "impersonate" => "build with `--features impersonate` (it needs cmake and clang)",
            _ => "build spiderling with it (it is on by default)",
        };
        Error::Config(format!(
            "{what} needs spiderling's `{feature}` feature, which this build leaves out; {how}"
        ))
    }
}

impl From<spider_settings::ConfigError> for Error {
    fn from(error: spider_settings::ConfigError) -> Self {
        Error::Config(error.message().to_owned())
    }
}

/// What went wrong, and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A URL that does not parse (a start URL, a followed link, a redirect target).
    #[error("invalid URL {url:?}: {source}")]
    InvalidUrl {
        /// The text that failed to parse.
        url: String,
        /// Why it failed.
        #[source]
        source: url::ParseError,
    },
    /// A setting that cannot work; the message says which and what to write instead.
    #[error("configuration error: {0}")]
    Config(String),
    /// A CSS selector that does not parse.
    #[error("invalid CSS selector {selector:?}: {message}")]
    Selector {
        /// The selector as written.
        selector: String,
        /// The parser's complaint.
        message: String,
    },
    /// The request did not complete within the configured timeout.
    #[error("request to {url} timed out")]
    Timeout {
        /// The URL requested.
        url: Url,
    },
    /// Connecting, sending or reading failed. The message holds the transport's whole
    /// chain of causes in one line (down to, say, `Connection refused (os error 111)`), so
    /// a log line or the failures file says why without a walk through
    /// [`source`](std::error::Error::source).
    #[error("request to {url} failed: {}", crate::error::cause::chain(.source.as_ref()))]
    Http {
        /// The URL requested.
        url: Url,
        /// The transport's error: reqwest's, or with the `impersonate` feature wreq's.
        #[source]
        source: BoxError,
    },
    /// The (decompressed) body grew past `max_body_bytes`; reading stopped there.
    #[error("body of {url} exceeds the cap of {limit} bytes")]
    BodyTooLarge {
        /// The URL requested.
        url: Url,
        /// The cap in force.
        limit: usize,
    },
    /// A request body larger than [`MAX_REQUEST_BODY`](crate::MAX_REQUEST_BODY): the
    /// request is refused where it is made, before it reaches the frontier.
    #[error("the body for {url} is {size} bytes, over the cap of {limit} bytes for a request body")]
    RequestBodyTooLarge {
        /// The URL the request was for.
        url: Url,
        /// The body's size.
        size: usize,
        /// The cap.
        limit: usize,
    },
    /// An answer read with [`Page::json`](crate::Page::json) that is not JSON, or not
    /// of the type asked for.
    #[error("the answer from {url} is not the JSON asked for (line {line}, column {column}): {message}")]
    Json {
        /// The page.
        url: Url,
        /// Where the parser stopped, counted from 1.
        line: u32,
        /// The column on that line, counted from 1.
        column: u32,
        /// The parser's complaint, without its position.
        message: Box<str>,
    },
    /// A form that cannot be filled in (see [`Page::form`](crate::Page::form)): no element
    /// matches the selector, the element is no `<form>`, or it sends its fields in a way
    /// Spiderling does not (a file upload).
    #[error("form {selector:?} on {url}: {message}")]
    Form {
        /// The page.
        url: Url,
        /// The selector the form was looked up with.
        selector: Box<str>,
        /// What is wrong.
        message: Box<str>,
    },
    /// The spider's [`start`](crate::Spider::start) hook failed (a login refused, say);
    /// the crawl does not begin.
    #[error("the spider's start hook failed: {source}")]
    Start {
        /// The hook's error.
        #[source]
        source: BoxError,
    },
    /// A request the start hook asked for that the crawl may not send: outside
    /// `allowed_domains`, or disallowed by its host's robots.txt. It was not sent.
    #[error("the crawl may not fetch {url}: {why}")]
    NotAllowed {
        /// The request's URL (a redirect's hop, when it was one).
        url: Url,
        /// Which rule keeps it out, and how to change it.
        why: String,
    },
    /// A chain of redirects longer than `max_redirects`.
    #[error("too many redirects from {url} (limit {limit})")]
    TooManyRedirects {
        /// The URL of the last hop.
        url: Url,
        /// The limit in force.
        limit: u8,
    },
    /// A page's DOM took longer than the parse budget to build (a page of too many, or
    /// too deeply nested, elements); the page is counted as failed.
    #[error(
        "parsing {url} took longer than {budget:?}: a page of too many, or too deeply nested, elements \
        is not read"
    )]
    ParseTooLong {
        /// The page.
        url: Url,
        /// The budget: 5 s.
        budget: std::time::Duration,
    },
    /// A job on the parse pool panicked; the page is counted as failed.
    #[error("parse job for {url} panicked")]
    ParsePanicked {
        /// The page being parsed.
        url: Url,
    },
    /// A page had an item only in part.
    #[error("extracting an item from {url}: {source}")]
    Extract {
        /// The page.
        url: Url,
        /// Which field, which selector, and why.
        #[source]
        source: Box<extract::ExtractError>,
    },
    /// The browser could not render a page: it went away (crashed, killed, hung) or could
    /// not be started.
    #[error("rendering {url}: {problem}")]
    Render {
        /// The page.
        url: Url,
        /// What went wrong, in the browser's words where it gave some.
        problem: String,
    },
    /// The spider's `parse` returned an error.
    #[error("spider failed on {url}: {source}")]
    Spider {
        /// The page being parsed.
        url: Url,
        /// The spider's error.
        #[source]
        source: BoxError,
    },
    /// The engine found requests queued that no host could ever take (a bug: please
    /// report it); the crawl stopped with them unfinished.
    #[error("{pending} requests were left queued that no host could take")]
    Stalled {
        /// Requests left.
        pending: usize,
    },
    /// A proxy gateway refused our credentials (407): a configuration mistake that no
    /// retry mends, so the crawl stops.
    #[error(
        "proxy gateway {gateway} refused the credentials (407 Proxy Authentication Required); check the \
        user and password in the URL the `proxy` setting names"
    )]
    ProxyAuth {
        /// The gateway, credentials redacted.
        gateway: String,
    },
    /// Writing items or stats failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An answer in the HTTP cache that does not read back; delete the cache file.
    #[error("the cached answer for {url} is damaged ({problem}); delete the cache file to fetch it again")]
    Cache {
        /// The URL it answers.
        url: Url,
        /// What does not read back.
        problem: String,
    },
    /// The proxy gateway a request was routed through could not be reached: nothing was
    /// asked of the site. The gateway is shown with its credentials hidden.
    #[error("{} (gateway {gateway}): {source}", source.cause().behind_proxy())]
    ProxyUnreachable {
        /// The gateway, credentials hidden.
        gateway: String,
        /// The transport's error.
        source: Box<Error>,
    },
    /// A state file that cannot be used for this crawl: another spider's or another
    /// output's, another schema version, not a state file, truncated, or in use. Found
    /// before anything is fetched or any file is touched.
    #[error("state file {path}: {message}")]
    State {
        /// The state file.
        path: PathBuf,
        /// What is wrong, and what to do.
        message: String,
    },
    /// The cache file (`cache`, `--cache`) is not a Spiderling cache, or one of another
    /// version. Found before anything is fetched.
    #[error("cache file {path}: {message}")]
    CacheFile {
        /// The cache file.
        path: PathBuf,
        /// What is wrong, and what to do.
        message: String,
    },
    /// Reading or writing a state file or cache failed.
    #[error("{path}: {source}")]
    Store {
        /// The file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: BoxError,
    },
    /// The fleet's Redis cannot go on with the crawl (it lost the crawl's data).
    #[error("the fleet's Redis at {address}: {message}")]
    Fleet {
        /// The Redis URL, its password hidden.
        address: String,
        /// What happened, and what to do.
        message: String,
    },
    /// A table items go to refused them (a column missing, a value its column cannot
    /// hold) or stayed down past `store_patience`. With a state file, the items it lacks
    /// are kept there: the next run hands them to it first.
    #[error("output {store}: {message}")]
    Table {
        /// The table's URI, its password hidden.
        store: String,
        /// What happened, and what to do.
        message: String,
    },

    /// Serialising an item for the exporter failed.
    #[error("exporting an item to {path}: {message}")]
    Export {
        /// The output file.
        path: PathBuf,
        /// The serialiser's complaint.
        message: String,
    },
}

/// hyper-util's words for a gateway's 407 to a CONNECT, and for any other refusal; the
/// proxy tests fail if a new version words them differently.
const TUNNEL_AUTH_REQUIRED: &str = "tunnel error: proxy authorization required";
const TUNNEL_REFUSED: &str = "tunnel error: unsuccessful";

impl Error {
    /// Whether the request ran out of time (worth retrying).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. })
    }

    /// Whether the failure was in the transport: connect, reset, timeout.
    pub fn is_transport(&self) -> bool {
        matches!(self, Error::Timeout { .. } | Error::Http { .. } | Error::ProxyUnreachable { .. })
    }

    /// The reason a transport error gives a request up for: its root cause, or that the
    /// proxy could not be reached for it.
    pub(crate) fn transport_reason(&self) -> Reason {
        match self {
            Error::ProxyUnreachable { source, .. } => Reason::ProxyUnreachable(source.cause()),
            _ => Reason::Transport(self.cause()),
        }
    }

    /// The root cause of a transport error, which failures are counted by; `Other` for
    /// anything that is not one.
    pub(crate) fn cause(&self) -> Cause {
        match self {
            Error::Timeout { .. } => Cause::TimedOut,
            Error::Http { source, .. } => Cause::of(source.as_ref()),
            Error::ProxyUnreachable { source, .. } => source.cause(),
            _ => Cause::Other,
        }
    }

    /// Whether the connection to the host, or to its gateway, could not be made; a gateway
    /// that answered a CONNECT with an error (its target was unreachable) was reached.
    pub(crate) fn is_connect(&self) -> bool {
        let Error::Http { source, .. } = self else { return false };
        let connect = source.downcast_ref::<reqwest::Error>().is_some_and(reqwest::Error::is_connect);
        #[cfg(feature = "impersonate")]
        let connect = connect || source.downcast_ref::<wreq::Error>().is_some_and(wreq::Error::is_connect);
        connect && !self.says(TUNNEL_REFUSED)
    }

    /// Whether a connection could not be opened for want of a file descriptor, this
    /// process's (`EMFILE`) or the system's (`ENFILE`): not the host's doing.
    pub(crate) fn is_out_of_files(&self) -> bool {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(error) = cause {
            let code = error.downcast_ref::<std::io::Error>().and_then(std::io::Error::raw_os_error);
            // A wrapper that keeps only the cause's text says it as the OS does.
            let said =
                || ["(os error 23)", "(os error 24)"].iter().any(|code| error.to_string().ends_with(code));
            if matches!(code, Some(23 | 24)) || said() {
                return true;
            }
            cause = error.source();
        }
        false
    }

    /// Whether a gateway refused the tunnel with 407.
    pub(crate) fn is_proxy_auth(&self) -> bool {
        self.says(TUNNEL_AUTH_REQUIRED)
    }

    /// Whether `text` is in this error or its causes: the transport reports how a CONNECT
    /// tunnel failed only as text.
    fn says(&self, text: &str) -> bool {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(error) = cause {
            if error.to_string().contains(text) {
                return true;
            }
            cause = error.source();
        }
        false
    }

    /// The process exit code for a crawl that ended with this error: 2 for a
    /// configuration error, 1 for anything else (see [`Summary::exit_code`](crate::Summary::exit_code)).
    pub fn exit_code(&self) -> std::process::ExitCode {
        std::process::ExitCode::from(match self {
            Error::Config(_)
            | Error::InvalidUrl { .. }
            | Error::Selector { .. }
            | Error::State { .. }
            | Error::CacheFile { .. }
            | Error::ProxyAuth { .. } => 2,
            Error::Table { .. } => 5,
            _ => 1,
        })
    }

    /// The URL this error concerns, when there is one.
    pub fn url(&self) -> Option<&Url> {
        match self {
            Error::Timeout { url }
            | Error::Http { url, .. }
            | Error::BodyTooLarge { url, .. }
            | Error::RequestBodyTooLarge { url, .. }
            | Error::Json { url, .. }
            | Error::Form { url, .. }
            | Error::TooManyRedirects { url, .. }
            | Error::NotAllowed { url, .. }
            | Error::ParsePanicked { url }
            | Error::ParseTooLong { url, .. }
            | Error::Extract { url, .. }
            | Error::Cache { url, .. }
            | Error::Render { url, .. }
            | Error::Spider { url, .. } => Some(url),
            Error::ProxyUnreachable { source, .. } => source.url(),
            _ => None,
        }
    }
}
