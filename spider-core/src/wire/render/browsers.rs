//! The browsers a crawl renders in: each renders a bounded number of pages at once, is
//! replaced after `browser_recycle` pages or once its processes pass `browser_rss`, and is
//! replaced at once when it dies (crashed, killed) or stops answering, the page it was
//! rendering reported as worth another attempt.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chromiumoxide::browser::{Browser, BrowserConfig};
use futures_util::StreamExt;
use spider_settings::Config;
use tokio::sync::{Mutex, RwLock, Semaphore};

use super::job::{Job, RenderError, Rendered, Subrequests};
use super::{page, profile};

/// How often, in pages, a browser's memory is read.
const RSS_EVERY: usize = 10;
/// How long a browser has to answer a ping after a render failed, before it is taken for
/// hung and replaced.
const PING: Duration = Duration::from_secs(3);

/// The crawl's browsers, started when the first page needs one.
pub(crate) struct Browsers {
    launch: Launch,
    /// Renders at once: the browsers' pages.
    pages: Semaphore,
    live: Mutex<Vec<Arc<Live>>>,
    /// Browsers replaced because they died or hung.
    replaced: AtomicU64,
}

/// What a browser is started with, and how long it may live.
struct Launch {
    executable: Option<PathBuf>,
    per_browser: usize,
    recycle: usize,
    rss_bytes: u64,
    timeout: Duration,
    allow_heavy: bool,
    /// Whether the browser is started in its sandbox: so until a start in it fails, never
    /// for root, whom Chromium refuses one.
    sandbox: AtomicBool,
}

/// One running browser.
struct Live {
    number: u64,
    browser: RwLock<Option<Browser>>,
    pid: Option<u32>,
    dir: PathBuf,
    open: AtomicUsize,
    done: AtomicUsize,
    /// Its connection ended or it stopped answering.
    dead: Arc<AtomicBool>,
    /// Woken when its connection ends: the renders on it give up at once.
    died: Arc<tokio::sync::Notify>,
    /// Its browser contexts, one per identity.
    contexts: page::Contexts,
    /// Takes no new pages: replaced once its open ones are done.
    retiring: AtomicBool,
    /// The process that kills the browser should this one die: see [`reaper`].
    reaper: std::sync::Mutex<Option<std::process::Child>>,
}

impl Browsers {
    /// The pool `config` asks for: as many browsers as its concurrency needs at
    /// `browser_pages` each. Nothing starts until a page is rendered.
    pub(crate) fn new(config: &Config) -> Self {
        let per_browser = config.browser_pages.max(1);
        let browsers = config.concurrency.div_ceil(per_browser).max(1);
        let executable = std::env::var_os("CHROMIUM").map(PathBuf::from);
        Browsers {
            launch: Launch {
                executable,
                per_browser,
                recycle: config.browser_recycle.max(1),
                rss_bytes: config.browser_rss.saturating_mul(1024 * 1024),
                timeout: config.render_timeout,
                allow_heavy: config.render_resources,
                sandbox: AtomicBool::new(!rustix::process::geteuid().is_root()),
            },
            pages: Semaphore::new(per_browser * browsers),
            live: Mutex::new(Vec::new()),
            replaced: AtomicU64::new(0),
        }
    }

    /// Render `job` in one of the browsers, its requests answered by `subrequests`.
    pub(crate) async fn render(
        &self,
        job: &Job<'_>,
        subrequests: &dyn Subrequests,
    ) -> Result<Rendered, RenderError> {
        let _permit =
            self.pages.acquire().await.map_err(|_| RenderError::Launch("the browsers were closed".into()))?;
        let live = self.browser().await?;
        let rendered = {
            let browser = live.browser.read().await;
            match browser.as_ref() {
                // Bounded past the render's own deadline: a browser that stops answering
                // mid-render is found here.
                Some(browser) => {
                    let died = live.died.notified();
                    // The wait's `render_timeout`, the actions' own, and a margin.
                    let deadline = self.launch.timeout * 2 + Duration::from_secs(10);
                    let render = page::render(
                        browser,
                        &live.contexts,
                        job,
                        subrequests,
                        self.launch.allow_heavy,
                        self.launch.timeout,
                    );
                    tokio::select! {
                        rendered = tokio::time::timeout(deadline, render) => match rendered {
                            Ok(rendered) => rendered,
                            Err(_) => Err(RenderError::Browser("the browser stopped answering".into())),
                        },
                        () = died, if !live.dead.load(Ordering::Acquire) => {
                            Err(RenderError::Browser("the browser went away".into()))
                        }
                    }
                }
                None => Err(RenderError::Browser("the browser was closed".into())),
            }
        };
        if let Err(RenderError::Browser(_)) = &rendered {
            if !live.dead.load(Ordering::Acquire) && !self.answers(&live).await {
                live.dead.store(true, Ordering::Release);
            }
        }
        self.release(&live);
        rendered
    }

    /// Browsers replaced after dying or hanging since this was last asked.
    pub(crate) fn take_replaced(&self) -> u64 {
        self.replaced.swap(0, Ordering::Relaxed)
    }

    /// Close every browser, for the end of the crawl.
    pub(crate) async fn close(&self) {
        let live: Vec<Arc<Live>> = std::mem::take(&mut *self.live.lock().await);
        for browser in live {
            browser.close().await;
        }
    }

    /// A browser with a free page: a running one, or one started now in place of those
    /// dead or done.
    async fn browser(&self) -> Result<Arc<Live>, RenderError> {
        let mut live = self.live.lock().await;
        let mut gone = Vec::new();
        live.retain(|browser| {
            let dead = browser.dead.load(Ordering::Acquire);
            let done = browser.retiring.load(Ordering::Acquire) && browser.open.load(Ordering::Acquire) == 0;
            if dead || done {
                gone.push((browser.clone(), dead));
            }
            !(dead || done)
        });
        for (browser, dead) in gone {
            if dead {
                self.replaced.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(target: "spiderling", browser = browser.number, "a browser died or stopped \
                    answering: replaced");
            } else {
                tracing::debug!(
                    target: "spiderling",
                    browser = browser.number,
                    "a browser done with its pages or past its memory: replaced"
                );
            }
            browser.close().await;
        }
        let taking = live.iter().find(|browser| {
            !browser.retiring.load(Ordering::Acquire)
                && browser.open.load(Ordering::Acquire) < self.launch.per_browser
        });
        if let Some(browser) = taking {
            browser.open.fetch_add(1, Ordering::AcqRel);
            return Ok(browser.clone());
        }
        // The page permit says a page is free: on a retiring browser still finishing, whose
        // place a new one takes.
        let browser = Arc::new(self.start().await?);
        browser.open.fetch_add(1, Ordering::AcqRel);
        live.push(browser.clone());
        Ok(browser)
    }

    /// A page of `live` is done: retire it past its pages or its memory.
    fn release(&self, live: &Live) {
        live.open.fetch_sub(1, Ordering::AcqRel);
        let done = live.done.fetch_add(1, Ordering::AcqRel) + 1;
        let heavy = done.is_multiple_of(RSS_EVERY)
            && live.pid.and_then(process_tree_rss).is_some_and(|rss| rss > self.launch.rss_bytes);
        if done >= self.launch.recycle || heavy {
            live.retiring.store(true, Ordering::Release);
        }
    }

    /// Whether `live` still answers the protocol.
    async fn answers(&self, live: &Live) -> bool {
        let browser = live.browser.read().await;
        let Some(browser) = browser.as_ref() else { return false };
        matches!(tokio::time::timeout(PING, browser.version()).await, Ok(Ok(_)))
    }

    async fn start(&self) -> Result<Live, RenderError> {
        // Numbered in the process, not the pool: two crawls of one process (a test binary)
        // never share a profile folder.
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let number = STARTED.fetch_add(1, Ordering::Relaxed) + 1;
        let dir = profile::folder(number);
        let _ = tokio::task::spawn_blocking(profile::sweep_once).await;
        let sandbox = self.launch.sandbox.load(Ordering::Acquire);
        if !sandbox && rustix::process::geteuid().is_root() {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                tracing::warn!(target: "spiderling", "running as root: Chromium refuses root a \
                sandbox, so it starts without one and the crawled pages' scripts run unsandboxed; run the \
                    crawl as another user to keep them in it")
            });
        }
        let launched = match Browser::launch(self.launch.config(&dir, sandbox)?).await {
            Err(error) if sandbox => {
                tracing::warn!(target: "spiderling", %error, "Chromium could not start in its sandbox (no \
                    user namespaces?): started without it, so the crawled pages' scripts run unsandboxed");
                self.launch.sandbox.store(false, Ordering::Release);
                Browser::launch(self.launch.config(&dir, false)?).await
            }
            launched => launched,
        };
        let (mut browser, mut handler) = match launched {
            Ok(launched) => launched,
            Err(error) => {
                let _ = tokio::task::spawn_blocking(move || profile::remove(&dir)).await;
                return Err(RenderError::Launch(format!("starting Chromium: {error}")));
            }
        };
        let pid = browser.get_mut_child().and_then(|child| child.as_mut_inner().id());
        let (dead, died) = (Arc::new(AtomicBool::new(false)), Arc::new(tokio::sync::Notify::new()));
        let (gone, wake) = (dead.clone(), died.clone());
        // The connection's end, or the process's: a killed browser's socket may close
        // without the handler's stream ending, so its process is looked at too.
        tokio::spawn(async move {
            let mut look = tokio::time::interval(Duration::from_millis(250));
            loop {
                tokio::select! {
                    event = handler.next() => match event {
                        None | Some(Err(chromiumoxide::error::CdpError::Ws(_))) => break,
                        Some(_) => {}
                    },
                    _ = look.tick() => if pid.is_some_and(|pid| !running(pid)) {
                        break;
                    },
                }
            }
            gone.store(true, Ordering::Release);
            wake.notify_waiters();
        });
        tracing::debug!(target: "spiderling", browser = number, ?pid, "browser started");
        let reaper = pid.and_then(|pid| reaper(pid, &dir));
        Ok(Live {
            number,
            browser: RwLock::new(Some(browser)),
            pid,
            dir,
            open: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            dead,
            died,
            contexts: page::Contexts::new(),
            retiring: AtomicBool::new(false),
            reaper: std::sync::Mutex::new(reaper),
        })
    }
}

impl Live {
    /// Stop the browser (its process is killed when dropped) and remove its profile.
    async fn close(&self) {
        // The reaper first, before the browser's pid can be another process's.
        let reaper = self.reaper.lock().ok().and_then(|mut reaper| reaper.take());
        if let Some(mut reaper) = reaper {
            let _ = reaper.kill();
            let _ = tokio::task::spawn_blocking(move || reaper.wait()).await;
        }
        let browser = self.browser.write().await.take();
        if let Some(mut browser) = browser {
            if !self.dead.load(Ordering::Acquire) {
                let _ = tokio::time::timeout(PING, browser.close()).await;
            }
            let _ = tokio::time::timeout(PING, browser.kill()).await;
            let _ = tokio::time::timeout(PING, browser.wait()).await;
        }
        let dir = self.dir.clone();
        let _ = tokio::task::spawn_blocking(move || profile::remove(&dir)).await;
    }
}

/// A process that kills the browser `pid` and removes its profile `dir` once this process
/// is gone, however it went: a crawl killed with SIGKILL runs no destructor, and a browser
/// left behind would run on, its profile filling the temporary folder. The reaper waits to
/// read from a pipe whose other end only this process holds; the kernel closes it when
/// this process ends, for any reason, and the read returns.
fn reaper(pid: u32, dir: &std::path::Path) -> Option<std::process::Child> {
    // The browser's other processes name the profile (`--user-data-dir=…`, the last line
    // or one followed by another once the arguments' NULs are newlines): they go too,
    // before its removal.
    const SCRIPT: &str = r#"read _; kill -9 "$1" 2>/dev/null
for p in /proc/[0-9]*; do
  case "$(tr '\0' '\n' < "$p/cmdline" 2>/dev/null)" in
    *"--user-data-dir=$2" | *"--user-data-dir=$2
"*) kill -9 "${p#/proc/}" 2>/dev/null ;;
  esac
done
rm -rf -- "$2""#;
    let spawned = std::process::Command::new("sh")
        .args(["-c", SCRIPT, "reaper"])
        .arg(pid.to_string())
        .arg(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        Ok(child) => Some(child),
        Err(error) => {
            tracing::warn!(target: "spiderling", %error, "no reaper for the browser: a crawl killed with \
                SIGKILL would leave it running");
            None
        }
    }
}

impl Launch {
    /// How a browser is started, with its profile in `dir`, in its sandbox or not.
    fn config(&self, dir: &std::path::Path, sandbox: bool) -> Result<BrowserConfig, RenderError> {
        let mut builder = BrowserConfig::builder()
            .user_data_dir(dir)
            .respect_https_errors()
            .launch_timeout(Duration::from_secs(30))
            .request_timeout(self.timeout + Duration::from_secs(5))
            // chromiumoxide writes each key as `--key`, and `--key=value` with a value.
            .args([
                "disable-gpu",
                "disable-dev-shm-usage",
                "disable-background-networking",
                "disable-component-update",
                "no-first-run",
                "disable-sync",
                "metrics-recording-only",
                "mute-audio",
            ])
            // Nothing the browser fetches on its own reaches the network: a request the
            // protocol does not pause (the browser's own, such as a page's icon) goes to a
            // proxy that is not there, loopback included.
            .args([("proxy-server", "http://127.0.0.1:9"), ("proxy-bypass-list", "<-loopback>")]);
        if let Some(executable) = &self.executable {
            builder = builder.chrome_executable(executable);
        }
        if !sandbox {
            // Root has no sandbox (Chromium refuses to start in one); the browser fetches
            // nothing itself, every request is answered by the crawl.
            builder = builder.no_sandbox();
        }
        builder.build().map_err(|problem| {
            RenderError::Launch(format!(
                "{problem}; set CHROMIUM to a Chromium or Chrome, or install `chromium`"
            ))
        })
    }
}

/// Whether process `pid` is running: neither gone nor a zombie waiting to be reaped.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// The memory of process `pid` and every process below it, in bytes, read from `/proc`:
/// a crawl's with its browsers, or a browser's with its renderers. Each process counts its
/// proportional share of the pages it shares (`Pss`), so a library every renderer maps is
/// counted once in all; a process whose share cannot be read counts its resident set.
/// `None` where there is no `/proc`.
///
/// # Examples
///
/// ```
/// let rss = spider_core::process_tree_rss(std::process::id()).unwrap_or(1);
/// assert!(rss > 0);
/// ```
pub fn process_tree_rss(pid: u32) -> Option<u64> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The parent is the second field after the command's closing parenthesis.
        let parent = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok());
        if let Some(parent) = parent {
            parents.push((child, parent));
        }
    }
    let mut tree = vec![pid];
    let mut grew = true;
    while grew {
        grew = false;
        for (child, parent) in &parents {
            if tree.contains(parent) && !tree.contains(child) {
                tree.push(*child);
                grew = true;
            }
        }
    }
    Some(tree.iter().filter_map(|pid| rss(*pid)).sum())
}

/// A process's memory in bytes: its `Pss`, else its `VmRSS`.
fn rss(pid: u32) -> Option<u64> {
    let kib = |file: &str, field: &str| -> Option<u64> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?;
        text.lines().find(|line| line.starts_with(field))?.split_whitespace().nth(1)?.parse().ok()
    };
    Some(kib("smaps_rollup", "Pss:").or_else(|| kib("status", "VmRSS:"))? * 1024)
}
