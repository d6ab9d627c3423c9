//! `spiderling new` and `spiderling gen`: a crate of spiders, and one more spider in it.
//!
//! The files come from `templates/`, with `{name}` placeholders filled in. A new crate
//! depends on this checkout by path (and gets its Cargo.lock, so it builds offline with
//! the same versions), or on a git URL or a version when given.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use spiderling::url::Url;

#[derive(Debug, clap::Args)]
pub(crate) struct NewArgs {
    /// The crate's name, and its first spider's.
    name: String,
    /// The site the first spider starts from.
    #[arg(long, default_value = "https://example.com/")]
    url: String,
    /// The folder to create the crate in.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Depend on Spiderling from this git repository instead of this checkout.
    #[arg(long, conflicts_with = "version")]
    git: Option<String>,
    /// Depend on this version of Spiderling from crates.io instead of this checkout.
    #[arg(long)]
    version: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct GenArgs {
    /// The spider's name (a module of src/spiders/).
    name: String,
    /// The site it starts from.
    url: String,
    /// The crate to add it to.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
}

const MARKER: &str = "        // `spiderling gen NAME URL` adds its spiders above this line.";

/// The placeholders of one spider.
struct Names {
    crate_name: String,
    spider: String,
    camel: String,
    url: Url,
    /// Where the saved page of the spider's test is said to come from: a product page
    /// the suggested narrowing of the scraping rule (`/product/`) still takes.
    fixture_url: Url,
    host: String,
}

impl Names {
    fn fill(&self, template: &str) -> String {
        template
            .replace("{crate_ident}", &self.crate_name.replace('-', "_"))
            .replace("{crate}", &self.crate_name)
            .replace("{spider}", &self.spider)
            .replace("{Struct}", &self.camel)
            .replace("{fixture_url}", self.fixture_url.as_str())
            .replace("{url}", self.url.as_str())
            .replace("{host}", &self.host)
    }
}

fn names(crate_name: &str, spider: &str, url: &str) -> Result<Names, String> {
    let valid = |name: &str| {
        name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    };
    if !valid(crate_name) || !valid(spider) {
        return Err(format!(
            "{spider:?} is not a usable name; write lowercase letters, digits, `_` or `-`, starting with a \
                letter"
        ));
    }
    let url = Url::parse(url).map_err(|e| {
        format!("{url:?} is not an absolute URL ({e}); write one such as https://example.com/")
    })?;
    let host = url.host_str().ok_or_else(|| format!("{url} has no host"))?.to_owned();
    let fixture_url = url.join("/product/saved.html").map_err(|e| format!("{url}: {e}"))?;
    let spider = spider.replace('-', "_");
    let camel = spider
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| part[..1].to_ascii_uppercase() + &part[1..])
        .collect();
    Ok(Names { crate_name: crate_name.to_owned(), spider, camel, url, fixture_url, host })
}

/// Write the files of one spider: its module, its test and its saved page.
fn write_spider(root: &Path, names: &Names) -> std::io::Result<()> {
    fs::create_dir_all(root.join("tests/fixtures"))?;
    fs::write(
        root.join(format!("src/spiders/{}.rs", names.spider)),
        names.fill(include_str!("../templates/spider.rs.tmpl")),
    )?;
    fs::write(
        root.join(format!("tests/{}.rs", names.spider)),
        names.fill(include_str!("../templates/test.rs.tmpl")),
    )?;
    fs::write(
        root.join(format!("tests/fixtures/{}.html", names.spider)),
        names.fill(include_str!("../templates/fixture.html.tmpl")),
    )
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}

pub(crate) fn new(args: NewArgs) -> ExitCode {
    let names = match names(&args.name, &args.name, &args.url) {
        Ok(names) => names,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let root = args.dir.join(&args.name);
    if root.exists() {
        return fail(format!("{} already exists; pick another name or --dir", root.display()));
    }
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dependency = match (&args.git, &args.version) {
        (Some(git), _) => format!("{{ git = {git:?} }}"),
        (None, Some(version)) => format!("{version:?}"),
        (None, None) => match checkout.canonicalize() {
            Ok(path) => format!("{{ path = {:?} }}", path.display().to_string()),
            Err(error) => {
                return fail(format!(
                    "cannot find this checkout of Spiderling ({error}); use --git or --version"
                ))
            }
        },
    };
    let written = (|| -> std::io::Result<()> {
        fs::create_dir_all(root.join("src/spiders"))?;
        let manifest =
            names.fill(include_str!("../templates/Cargo.toml.tmpl")).replace("{dependency}", &dependency);
        fs::write(root.join("Cargo.toml"), manifest)?;
        fs::write(root.join("README.md"), names.fill(include_str!("../templates/README.md.tmpl")))?;
        fs::write(root.join(".gitignore"), "/target\n*.jsonl\n*.csv\n*.stats.json\n")?;
        fs::write(root.join("src/lib.rs"), names.fill(include_str!("../templates/lib.rs.tmpl")))?;
        fs::write(root.join("src/main.rs"), names.fill(include_str!("../templates/main.rs.tmpl")))?;
        fs::write(root.join("src/spiders/mod.rs"), names.fill(include_str!("../templates/mod.rs.tmpl")))?;
        write_spider(&root, &names)?;
        if args.git.is_none() && args.version.is_none() {
            // The same versions as this checkout: builds offline, and shares compiled crates.
            let lock = checkout.join("Cargo.lock");
            if lock.exists() {
                fs::copy(lock, root.join("Cargo.lock"))?;
            }
            // And the same target directory, where they are compiled already: a crate of
            // its own would build the whole tree again (20 minutes and more on two cores).
            if let Ok(target) = checkout
                .join("target")
                .canonicalize()
                .or_else(|_| checkout.canonicalize().map(|checkout| checkout.join("target")))
            {
                fs::create_dir_all(root.join(".cargo"))?;
                fs::write(root.join(".cargo/config.toml"), shared_target(&target))?;
            }
        }
        Ok(())
    })();
    if let Err(error) = written {
        return fail(format!("writing {}: {error}", root.display()));
    }
    spiderling::outln!("created {} with the spider `{}` for {}", root.display(), names.spider, names.url);
    spiderling::outln!("next: cd {} && cargo test", root.display());
    let spider = &names.spider;
    if matches!(names.host.as_str(), "127.0.0.1" | "localhost" | "[::1]") {
        // A local site (`spiderling sandbox`) needs no politeness pause: the first crawl
        // takes seconds instead of the polite profile's minutes.
        spiderling::outln!("then: cargo run -- crawl {spider} -o {spider}.jsonl --set delay=0ms");
    } else {
        spiderling::outln!(
            "then: cargo run -- crawl {spider} -o {spider}.jsonl   # polite: a pause between requests"
        );
        spiderling::outln!(
            "or, quick and offline, against the demo site: spiderling sandbox --port 8000 & cargo run -- \
             crawl {spider} -o {spider}.jsonl --set start_urls=http://127.0.0.1:8000/ --set \
             allowed_domains=127.0.0.1 --set delay=0ms"
        );
    }
    ExitCode::SUCCESS
}

/// The new crate's `.cargo/config.toml`: this checkout's target directory, shared.
fn shared_target(target: &Path) -> String {
    format!(
        "# Built in the target directory of the Spiderling checkout this crate depends on, where\n\
         # its dependencies are compiled already. Remove this to build in ./target instead.\n\
         [build]\n\
         target-dir = {:?}\n",
        target.display().to_string()
    )
}

pub(crate) fn generate(args: GenArgs) -> ExitCode {
    let manifest = match fs::read_to_string(args.dir.join("Cargo.toml")) {
        Ok(manifest) => manifest,
        Err(_) => {
            return fail(format!(
                "no Cargo.toml in {}; run gen inside a crate made by `spiderling new`",
                args.dir.display()
            ))
        }
    };
    let crate_name = manifest
        .lines()
        .find_map(|line| {
            line.strip_prefix("name = ")?.trim().strip_prefix('"')?.strip_suffix('"').map(str::to_owned)
        })
        .unwrap_or_default();
    let names = match names(&crate_name, &args.name, &args.url) {
        Ok(names) => names,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let (main_rs, mod_rs) = (args.dir.join("src/main.rs"), args.dir.join("src/spiders/mod.rs"));
    let (Ok(main), Ok(modules)) = (fs::read_to_string(&main_rs), fs::read_to_string(&mod_rs)) else {
        return fail(
            "src/main.rs or src/spiders/mod.rs is missing; run gen inside a crate made by `spiderling new`",
        );
    };
    if !main.contains(MARKER) {
        return fail(format!("src/main.rs has lost the line gen adds spiders above:\n{MARKER}"));
    }
    if args.dir.join(format!("src/spiders/{}.rs", names.spider)).exists() {
        return fail(format!("a spider called `{}` exists already", names.spider));
    }
    let registered = main
        .replace(MARKER, &format!("        .add::<spiders::{}::{}>()\n{MARKER}", names.spider, names.camel));
    let written = write_spider(&args.dir, &names)
        .and_then(|()| fs::write(&mod_rs, format!("{modules}pub mod {};\n", names.spider)))
        .and_then(|()| fs::write(&main_rs, registered));
    if let Err(error) = written {
        return fail(format!("writing the spider `{}`: {error}", names.spider));
    }
    spiderling::outln!(
        "added the spider `{}` for {} (src/spiders/{}.rs)",
        names.spider,
        names.url,
        names.spider
    );
    ExitCode::SUCCESS
}
