//! A real Redis Cluster: three masters with a replica each, a master killed and failed
//! over with its data, every node gone when dropped.

#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use spider_sandbox::RedisCluster;

fn refuses(port: u16) -> bool {
    TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err()
}

/// Every node's port, from a node's `CLUSTER NODES` (`<id> 127.0.0.1:<port>@<bus> ...`).
fn node_ports(cluster: &RedisCluster, ask: u16) -> Vec<u16> {
    let nodes = cluster.command(ask, &["CLUSTER", "NODES"]).unwrap();
    let mut ports: Vec<u16> = nodes
        .lines()
        .map(|line| {
            let address = line.split_whitespace().nth(1).unwrap();
            address.split('@').next().unwrap().rsplit(':').next().unwrap().parse().unwrap()
        })
        .collect();
    ports.sort_unstable();
    ports
}

/// The pid of the node on `port`, from `INFO server`.
fn pid(cluster: &RedisCluster, port: u16) -> u32 {
    let info = cluster.command(port, &["INFO", "server"]).unwrap();
    let line = info.lines().find_map(|l| l.strip_prefix("process_id:")).unwrap();
    line.trim().parse().unwrap()
}

#[test]
fn a_killed_master_is_failed_over_with_its_data() {
    let started = Instant::now();
    let mut cluster = RedisCluster::start(3, 1).unwrap();
    eprintln!("3 masters, 1 replica each, ready in {:?}", started.elapsed());

    let masters = cluster.masters().unwrap();
    assert_eq!(masters.len(), 3);
    let url = cluster.url();
    let seeds: Vec<&str> = url.strip_prefix("redis+cluster://").unwrap().split(',').collect();
    let mut seed_ports: Vec<u16> =
        seeds.iter().map(|s| s.strip_prefix("127.0.0.1:").unwrap().parse().unwrap()).collect();
    seed_ports.sort_unstable();
    assert_eq!(seed_ports, masters, "{url}");

    let key = "frontier:depth";
    let old = cluster.master_of(key).unwrap();
    assert!(masters.contains(&old));
    // On one connection: `WAIT` waits for that connection's last write.
    let replies = cluster.pipeline(old, &[&["SET", key, "42"], &["WAIT", "1", "1000"]]).unwrap();
    assert_eq!(replies, ["+OK", ":1"], "written and replicated");
    let other = *masters.iter().find(|&&p| p != old).unwrap();
    assert!(cluster.command(other, &["GET", key]).unwrap().starts_with("-MOVED"));

    cluster.kill(old);
    assert!(refuses(old));
    assert!(cluster.command(old, &["PING"]).is_err());
    let killed = Instant::now();
    let new = cluster.wait_for_failover(key, old, Duration::from_secs(20)).unwrap();
    eprintln!("failed over from {old} to {new} in {:?}", killed.elapsed());

    assert_ne!(new, old);
    assert_eq!(cluster.master_of(key).unwrap(), new);
    assert_eq!(cluster.command(new, &["GET", key]).unwrap(), "42");
    let now: Vec<u16> = cluster.masters().unwrap();
    assert_eq!(now.len(), 3);
    assert!(now.contains(&new) && !now.contains(&old), "{now:?}");
    assert_eq!(cluster.url(), url, "the seeds are the masters at start");
}

#[test]
fn dropping_the_cluster_kills_every_node() {
    let cluster = RedisCluster::start(3, 1).unwrap();
    let first = cluster.masters().unwrap()[0];
    let ports = node_ports(&cluster, first);
    assert_eq!(ports.len(), 6);
    let pids: Vec<u32> = ports.iter().map(|&port| pid(&cluster, port)).collect();
    assert!(pids.iter().all(|pid| Path::new(&format!("/proc/{pid}")).exists()));

    assert_eq!(cluster.command(0, &["PING"]).unwrap_err().kind(), std::io::ErrorKind::InvalidInput);

    drop(cluster);
    for (port, pid) in ports.iter().zip(&pids) {
        assert!(refuses(*port), "port {port} still answers");
        // Reaped, not a zombie: no process left with that pid.
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "pid {pid} is still there");
    }
}
