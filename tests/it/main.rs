//! The facade's integration tests, one binary: each module was a test file of its own,
//! and one binary links once instead of thirty-odd times and runs their tests side by side.
//! The tests that install a process-wide log subscriber, set environment variables,
//! signal their own process, load every core or bound the process's memory stay in
//! binaries of their own (`tests/*.rs`).

#[path = "../support/mod.rs"]
mod support;

mod blocks;
mod broad;
mod cache;
mod crawl;
mod dashboard;
mod derive;
mod encodings;
mod example;
mod fleet;
mod forms;
mod grafana;
mod identities;
mod non_html;
mod outputs;
mod parse_budget;
mod parse_pool;
mod pipelines;
mod probe;
mod rate_limits;
mod readme;
mod real_pages;
mod render;
mod retry;
mod robots_scope;
mod rules;
mod selector_once;
mod session_limits;
mod shutdown;
mod sitemap;
mod spider_binary;
mod state;
mod terminal;
mod transport_errors;
mod warc;
mod wire;
