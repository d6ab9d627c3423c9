//! A real redis-server: started on a free port, restarted with its data, killed without
//! it, gone when dropped.

#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, TcpStream};
use std::time::Instant;

use spider_sandbox::RedisServer;

fn refuses(port: u16) -> bool {
    TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err()
}

/// `count` keys `key:0..` with values `value:0..`, in one `MSET`.
fn load(redis: &RedisServer, count: usize) {
    let pairs: Vec<String> = (0..count).flat_map(|i| [format!("key:{i}"), format!("value:{i}")]).collect();
    let mut args = vec!["MSET"];
    args.extend(pairs.iter().map(String::as_str));
    assert_eq!(redis.command(&args).unwrap(), "+OK");
}

#[test]
fn a_server_starts_on_a_port_of_its_own_and_answers() {
    let one = RedisServer::start().unwrap();
    let two = RedisServer::start().unwrap();
    assert_ne!(one.port(), two.port());
    assert_eq!(one.url(), format!("redis://127.0.0.1:{}/0", one.port()));
    assert_eq!(one.command(&["PING"]).unwrap(), "+PONG");

    assert_eq!(one.command(&["SET", "k", "a b\r\nc é"]).unwrap(), "+OK");
    assert_eq!(one.command(&["GET", "k"]).unwrap(), "a b\r\nc é");
    assert_eq!(one.command(&["GET", "missing"]).unwrap(), "$-1");
    assert_eq!(one.command(&["DBSIZE"]).unwrap(), ":1");
    assert_eq!(two.command(&["DBSIZE"]).unwrap(), ":0", "servers share no data");
    assert!(one.command(&["NOSUCHCOMMAND"]).unwrap().starts_with("-ERR"));
}

#[test]
fn a_restart_keeps_the_data_and_the_port() {
    let mut redis = RedisServer::start().unwrap();
    let port = redis.port();
    load(&redis, 1_000);
    assert_eq!(redis.command(&["SET", "k", "v"]).unwrap(), "+OK");

    let started = Instant::now();
    redis.restart().unwrap();
    eprintln!("restart with 1,001 keys: {:?}", started.elapsed());

    assert_eq!(redis.port(), port);
    assert!(redis.dir().join("dump.rdb").exists());
    assert_eq!(redis.command(&["GET", "k"]).unwrap(), "v");
    assert_eq!(redis.command(&["GET", "key:999"]).unwrap(), "value:999");
    assert_eq!(redis.command(&["DBSIZE"]).unwrap(), ":1001");

    // And again: what was written after the first restart is saved by the second.
    assert_eq!(redis.command(&["SET", "later", "1"]).unwrap(), "+OK");
    redis.restart().unwrap();
    assert_eq!(redis.command(&["DBSIZE"]).unwrap(), ":1002");
}

#[test]
fn a_kill_saves_nothing_and_the_server_comes_back_empty() {
    let mut redis = RedisServer::start().unwrap();
    let port = redis.port();
    assert_eq!(redis.command(&["SET", "k", "v"]).unwrap(), "+OK");

    redis.kill();
    assert!(refuses(port));
    assert!(redis.command(&["PING"]).is_err());
    assert!(redis.restart().is_err(), "nothing to restart");

    redis.start_again().unwrap();
    assert_eq!(redis.port(), port);
    assert_eq!(redis.command(&["GET", "k"]).unwrap(), "$-1");
    assert_eq!(redis.command(&["DBSIZE"]).unwrap(), ":0");
}

#[test]
fn a_kill_after_a_restart_comes_back_with_what_the_restart_saved() {
    let mut redis = RedisServer::start().unwrap();
    assert_eq!(redis.command(&["SET", "saved", "1"]).unwrap(), "+OK");
    redis.restart().unwrap();
    assert_eq!(redis.command(&["SET", "unsaved", "1"]).unwrap(), "+OK");

    redis.kill();
    redis.start_again().unwrap();
    assert_eq!(redis.command(&["GET", "saved"]).unwrap(), "1");
    assert_eq!(redis.command(&["GET", "unsaved"]).unwrap(), "$-1");
}

#[test]
fn a_stopped_server_starts_again_and_a_running_one_does_not() {
    let mut redis = RedisServer::start().unwrap();
    assert!(redis.start_again().is_err(), "already running");
    assert_eq!(redis.command(&["PING"]).unwrap(), "+PONG", "still running");

    redis.stop();
    assert!(refuses(redis.port()));
    redis.stop(); // twice is harmless
    redis.start_again().unwrap();
    assert_eq!(redis.command(&["PING"]).unwrap(), "+PONG");
}

#[test]
fn dropping_the_server_stops_it_and_removes_its_directory() {
    let mut redis = RedisServer::start().unwrap();
    redis.restart().unwrap(); // so the directory holds a dump and a log
    let (port, dir) = (redis.port(), redis.dir().to_path_buf());
    assert!(dir.join("dump.rdb").exists());
    assert!(dir.join("redis.log").exists());

    drop(redis);
    assert!(refuses(port));
    assert!(!dir.exists());
}
