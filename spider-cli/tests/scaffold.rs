//! `spiderling new` makes a crate that builds and passes its tests offline, and `gen`
//! adds a spider that `list` then shows — run as a new user would, with cargo.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn spiderling(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spiderling")).current_dir(dir).args(args).output().unwrap()
}

/// This workspace's target directory, so the new crate reuses what is compiled already.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().parent().unwrap().to_path_buf()
}

fn cargo(dir: &Path, args: &[&str]) -> Output {
    let (command, rest) = args.split_at(1);
    Command::new(env!("CARGO"))
        .current_dir(dir)
        .args(command)
        .arg("--offline")
        .args(rest)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn a_new_crate_tests_green_offline_and_gen_adds_a_listed_spider() {
    let dir = tempfile::tempdir().unwrap();
    let made = spiderling(dir.path(), &["new", "shop", "--url", "http://127.0.0.1:9/shop/"]);
    assert!(made.status.success(), "{}", text(&made));
    // A local site: the first crawl suggested is the quick one, with no politeness pause.
    assert!(
        text(&made).contains("then: cargo run -- crawl shop -o shop.jsonl --set delay=0ms"),
        "{}",
        text(&made)
    );
    let krate = dir.path().join("shop");
    // Built where this checkout's crates are compiled already.
    let checkout_target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target").canonicalize().unwrap();
    let config = std::fs::read_to_string(krate.join(".cargo/config.toml")).unwrap();
    assert!(
        config.contains(&format!("target-dir = {:?}", checkout_target.display().to_string())),
        "{config}"
    );

    // The first edit a user makes, narrowing the scraping rule to the site's products as
    // its comment suggests, keeps the saved page's test green.
    let module = krate.join("src/spiders/shop.rs");
    let code = std::fs::read_to_string(&module).unwrap();
    let narrowed = code
        .replace("rule(parse = ShopPage, follow)", r#"rule(allow = r"/product/", parse = ShopPage, follow)"#);
    assert_ne!(narrowed, code, "the rule to narrow is there");
    std::fs::write(&module, narrowed).unwrap();

    let tested = cargo(&krate, &["test"]);
    assert!(tested.status.success(), "{}", text(&tested));
    assert!(text(&tested).contains("test parse_reads_the_saved_page ... ok"), "{}", text(&tested));

    let help = cargo(&krate, &["run", "-q", "--", "--help"]);
    assert!(help.status.success(), "{}", text(&help));
    assert!(text(&help).contains("--set KEY=VALUE"), "{}", text(&help));

    // `settings NAME`: the polite profile's pause is the spider's, the rate `--set`'s.
    let settings = cargo(&krate, &["run", "-q", "--", "settings", "shop", "--set", "rps=2"]);
    assert!(settings.status.success(), "{}", text(&settings));
    let table = String::from_utf8_lossy(&settings.stdout);
    let delay =
        |line: &&str| line.starts_with("delay ") && line.contains("2s..5s") && line.contains("the spider");
    assert!(table.lines().any(|line| delay(&line)), "{table}");
    assert!(table.lines().any(|line| line.starts_with("rps ") && line.contains("--set")), "{table}");

    // `spiderling parse URL --spider NAME`: the crate's own parse of one live page.
    let site = spider_sandbox::Sandbox::demo(spider_sandbox::DemoSite::default()).unwrap();
    let product = format!("{}catalogue/book_1.html", site.url());
    let parsed = Command::new(env!("CARGO_BIN_EXE_spiderling"))
        .current_dir(&krate)
        .args(["parse", &product, "--spider", "shop", "--set", "allowed_domains=127.0.0.1"])
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_NET_OFFLINE", "true")
        .output()
        .unwrap();
    assert!(parsed.status.success(), "{}", text(&parsed));
    let printed = String::from_utf8_lossy(&parsed.stdout);
    assert!(printed.contains(&format!("200 {product} · ")), "{printed}");
    // The rule narrowed above to `/product/` does not take a book of the demo shop, and
    // `parse` says so: the reason the crawl would write no item for it.
    assert!(printed.contains("no rule takes this page") && printed.contains("items (0):"), "{printed}");
    assert_eq!(site.observed().pages().count(), 1, "the page alone");

    let added = spiderling(&krate, &["gen", "news", "http://127.0.0.1:9/news/"]);
    assert!(added.status.success(), "{}", text(&added));
    let listed = cargo(&krate, &["run", "-q", "--", "list"]);
    assert!(listed.status.success(), "{}", text(&listed));
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "shop\nnews\n");

    let again = spiderling(&krate, &["gen", "news", "http://127.0.0.1:9/news/"]);
    assert_eq!(again.status.code(), Some(1), "a second spider of the same name is refused");
    let remote = spiderling(dir.path(), &["new", "far", "--url", "https://shop.example/"]);
    assert!(text(&remote).contains("--set start_urls=http://127.0.0.1:8000/"), "{}", text(&remote));
    let bad = spiderling(dir.path(), &["new", "Bad Name"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}
