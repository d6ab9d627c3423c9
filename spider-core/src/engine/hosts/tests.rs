use url::Url;

use super::*;

#[test]
fn the_registrable_domain_is_the_public_suffix_lists_with_scheme_and_port() {
    let domain = |key: &str| registrable_domain(key);
    assert_eq!(domain("https://a.example.co.uk:443").as_deref(), Some("https://example.co.uk:443"));
    assert_eq!(domain("https://b.example.co.uk:443").as_deref(), Some("https://example.co.uk:443"));
    assert_eq!(domain("http://a.shop.localhost:8080").as_deref(), Some("http://shop.localhost:8080"));
    assert_eq!(domain("http://127.0.0.1:8080").as_deref(), Some("http://127.0.0.1:8080"));
    assert_eq!(domain("https://user.github.io:443").as_deref(), Some("https://user.github.io:443"));
}

fn crawl(politeness: Politeness, per_host: usize) -> Hosts {
    Hosts::new(&Config::new("groups").per_host(per_host).politeness(politeness).obey_robots(false))
}

fn meet(hosts: &mut Hosts, key: &str, now: Instant) -> HostId {
    hosts.add(HostKey::from(key), now, None, "groups")
}

fn allowed_but_private(hosts: &mut Hosts, id: HostId, now: Instant) {
    let rules = RobotsRules::from_answer(200, b"User-agent: *\nDisallow: /private/\n", "groups");
    hosts.learn_robots(id, rules, now);
}

fn private(url: &str) -> Url {
    Url::parse(url).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_host_quiet_and_at_rest_is_forgotten_and_met_again_with_its_robots_txt() {
    let now = Instant::now();
    let mut hosts = Hosts::new(&Config::new("groups").per_host(1).politeness(Politeness::Host));
    let a = meet(&mut hosts, "https://a.example:443", now);
    allowed_but_private(&mut hosts, a, now);
    let lane = hosts.take(a, None, now);
    hosts.release(a, lane, now + QUIET + QUIET / 2);
    hosts.note_quiet(a, now);
    assert!(hosts.forget_quiet(now + QUIET / 2, |_| false).is_empty(), "quiet for half of QUIET");
    assert!(hosts.forget_quiet(now + QUIET, |_| false).is_empty(), "its slot still rests");
    let forgotten = hosts.forget_quiet(now + 2 * QUIET, |_| false);
    assert_eq!(forgotten, [HostKey::from("https://a.example:443")]);
    assert_eq!(hosts.id_of("https://a.example:443"), None);
    assert_eq!(hosts.by_domain.len(), 0, "its group went with it");
    assert!(hosts.known_disallowed(&private("https://a.example/private/y")), "its robots.txt kept");
    // Met again, in the place it left, knowing its robots.txt: nothing to fetch first.
    let later = now + 3 * QUIET;
    let b = meet(&mut hosts, "https://b.example:443", later);
    let again = meet(&mut hosts, "https://a.example:443", later);
    assert_eq!(b, a, "the first host met takes the place left");
    assert_eq!(hosts.id_bound(), 2);
    assert!(hosts.robots_request(again).is_none());
    assert!(hosts.known_disallowed(&private("https://a.example/private/x")));
    assert!(!hosts.known_disallowed(&private("https://a.example/public")));
}

#[test]
fn a_host_is_kept_while_it_knows_what_a_host_met_anew_would_not() {
    let now = Instant::now();
    let mut hosts = Hosts::new(&Config::new("groups").per_host(1).politeness(Politeness::Domain));
    let blocked = meet(&mut hosts, "https://blocked.example:443", now);
    let limited = meet(&mut hosts, "https://a.limited.example:443", now);
    let sibling = meet(&mut hosts, "https://b.limited.example:443", now);
    let held = meet(&mut hosts, "https://held.example:443", now);
    let fetching = meet(&mut hosts, "https://fetching.example:443", now);
    for id in [blocked, limited, sibling, held] {
        allowed_but_private(&mut hosts, id, now);
    }
    assert!(hosts.robots_request(fetching).is_some());
    hosts[blocked].window.record(now, true);
    assert!(hosts.slow_down(limited, now), "a limiter refused its domain");
    for id in [blocked, limited, sibling, held, fetching] {
        hosts.note_quiet(id, now);
    }
    let forgotten = hosts.forget_quiet(now + QUIET, |id| id == held);
    assert!(forgotten.is_empty(), "{forgotten:?}");
    for id in [blocked, limited, sibling, held, fetching] {
        assert!(hosts.id_of(&hosts[id].key.clone()).is_some());
    }
    // Looked at again a QUIET later: the block has left the window (WINDOW), the
    // dispatcher let go of the one it held.
    let forgotten = hosts.forget_quiet(now + WINDOW + QUIET, |_| false);
    assert_eq!(forgotten.len(), 2, "{forgotten:?}");
    assert_eq!(hosts.id_of("https://blocked.example:443"), None);
    assert_eq!(hosts.id_of("https://held.example:443"), None);
    assert!(hosts.id_of("https://a.limited.example:443").is_some(), "its domain is paced");
}

#[test]
fn a_group_lasts_while_one_of_its_hosts_does() {
    let now = Instant::now();
    let mut hosts = Hosts::new(&Config::new("groups").per_host(1).politeness(Politeness::Domain));
    let a = meet(&mut hosts, "https://a.example.co.uk:443", now);
    let b = meet(&mut hosts, "https://b.example.co.uk:443", now);
    let group = hosts.group_of(a);
    for id in [a, b] {
        allowed_but_private(&mut hosts, id, now);
    }
    hosts.note_quiet(a, now);
    assert_eq!(hosts.forget_quiet(now + QUIET, |_| false).len(), 1);
    assert_eq!(hosts.group_of(b), group);
    assert_eq!(hosts.group(b).members().len(), 1);
    let c = meet(&mut hosts, "https://c.example.co.uk:443", now + QUIET);
    assert_eq!(hosts.group_of(c), group, "found by its domain");
    allowed_but_private(&mut hosts, c, now + QUIET);
    hosts.note_quiet(b, now + QUIET);
    hosts.note_quiet(c, now + QUIET);
    assert_eq!(hosts.forget_quiet(now + 2 * QUIET, |_| false).len(), 2);
    assert!(hosts.by_domain.is_empty());
    let other = meet(&mut hosts, "https://example.org:443", now + 2 * QUIET);
    assert_eq!(hosts.group_of(other), group, "the group's place is taken again");
    assert_eq!(hosts.groups_len(), 1);
}

#[test]
fn the_hosts_of_a_registrable_domain_share_its_slots_and_wake_when_one_frees() {
    let now = Instant::now();
    let mut hosts = crawl(Politeness::Domain, 2);
    let a = meet(&mut hosts, "https://a.example.co.uk:443", now);
    let b = meet(&mut hosts, "https://b.example.co.uk:443", now);
    let other = meet(&mut hosts, "https://example.org:443", now);
    let lane = hosts.take(a, None, now);
    hosts.take(b, None, now);
    assert_eq!(hosts.state(a, now), SlotState::Busy, "a has a slot left, the domain none");
    assert_eq!(hosts.state(b, now), SlotState::Busy);
    assert_eq!(hosts.state(other, now), SlotState::Free, "another domain is not held");
    while hosts.pop_ready().is_some() {}
    hosts.release(a, lane, now);
    let woken: Vec<HostId> = std::iter::from_fn(|| hosts.pop_ready()).collect();
    assert_eq!(woken, [a, b], "the hosts the domain held back are ready again");
    assert_eq!(hosts.state(b, now), SlotState::Free);
}

#[test]
fn a_host_held_back_by_its_groups_slots_is_not_taken_for_short_of_its_own() {
    let now = Instant::now();
    let mut hosts = crawl(Politeness::Domain, 2);
    let a = meet(&mut hosts, "https://a.example.co.uk:443", now);
    let b = meet(&mut hosts, "https://b.example.co.uk:443", now);
    hosts.take(a, None, now);
    hosts.take(a, None, now);
    assert_eq!(hosts.state(b, now), SlotState::Busy);
    assert!(!hosts[b].saturated, "b has both its slots free: the domain's ran out");
    assert!(hosts.group(b).saturated);
    assert_eq!(hosts.state(a, now), SlotState::Busy);
    assert!(hosts[a].saturated, "a used both of its own");
}

#[test]
fn each_host_alone_shares_nothing() {
    let now = Instant::now();
    let mut hosts = crawl(Politeness::Host, 1);
    let a = meet(&mut hosts, "https://a.example.co.uk:443", now);
    let b = meet(&mut hosts, "https://b.example.co.uk:443", now);
    hosts.take(a, None, now);
    assert_eq!(hosts.state(b, now), SlotState::Free);
}

#[test]
fn hosts_found_on_one_server_share_its_budget_and_a_limiters_pace() {
    let now = Instant::now();
    let server: SocketAddr = "127.0.0.1:8080".parse().unwrap_or_else(|e| panic!("{e}"));
    let mut hosts = crawl(Politeness::Server, 8);
    let a = meet(&mut hosts, "http://site-1.localhost:8080", now);
    let b = meet(&mut hosts, "http://site-2.localhost:8080", now);
    assert_ne!(hosts.group_of(a), hosts.group_of(b), "two registrable domains");
    hosts.learn_server(a, server);
    hosts.learn_server(b, server);
    assert_eq!(hosts.group_of(a), hosts.group_of(b), "one server");
    // A limiter's refusal at one paces both, from the controller's slow start.
    assert!(hosts.slow_down(a, now));
    assert!(!hosts.slow_down(b, now), "one controller for the two");
    hosts.take(a, None, now);
    let SlotState::PausedUntil(next) = hosts.state(b, now) else { panic!("b is paced too") };
    assert_eq!(next - now, Duration::from_millis(250), "4 requests a second between them");
    // Under `domain` the same answers join nothing.
    let mut apart = crawl(Politeness::Domain, 8);
    let (a, b) = (
        meet(&mut apart, "http://site-1.localhost:8080", now),
        meet(&mut apart, "http://site-2.localhost:8080", now),
    );
    apart.learn_server(a, server);
    apart.learn_server(b, server);
    assert_ne!(apart.group_of(a), apart.group_of(b));
}

#[test]
fn in_adaptive_mode_a_limiter_shared_by_hosts_paces_them_with_one_controller_and_a_lone_host_with_its_own() {
    let now = Instant::now();
    let server: SocketAddr = "127.0.0.1:8080".parse().unwrap_or_else(|e| panic!("{e}"));
    let config = Config::new("groups").per_host(8).politeness(Politeness::Server).obey_robots(false);
    let mut hosts = Hosts::new(&config.adaptive(true));
    let a = meet(&mut hosts, "http://site-1.localhost:8080", now);
    let b = meet(&mut hosts, "http://site-2.localhost:8080", now);
    let alone = meet(&mut hosts, "http://other.localhost:8081", now);
    assert!(hosts[a].controller.is_some() && hosts[b].controller.is_some(), "each its own at first");
    hosts.learn_server(a, server);
    hosts.learn_server(b, server);
    assert!(!hosts.slow_down(alone, now), "a host alone keeps its own controller");
    assert!(hosts[alone].controller.is_some());
    assert!(hosts.slow_down(a, now), "the server's limiter refused one of two");
    assert!(hosts[a].controller.is_none() && hosts[b].controller.is_none(), "the group's paces both");
    // One pace between the two: 4 requests a second, not 4 each.
    hosts.take(a, None, now);
    let SlotState::PausedUntil(next) = hosts.state(b, now) else { panic!("b is paced with a") };
    assert_eq!(next - now, Duration::from_millis(250));
    // A host met later on that server joins the pace, with no controller of its own.
    let c = meet(&mut hosts, "http://site-3.localhost:8080", now);
    hosts.learn_server(c, server);
    assert_eq!(hosts.group_of(c), hosts.group_of(a));
    assert!(hosts[c].controller.is_none());
}

#[test]
fn a_host_whose_robots_txt_is_known_goes_before_hosts_not_asked_yet() {
    let now = Instant::now();
    let mut hosts = Hosts::new(&Config::new("groups").per_host(1).politeness(Politeness::Host));
    let fresh: Vec<HostId> =
        (0..3).map(|n| meet(&mut hosts, &format!("https://h{n}.example:443"), now)).collect();
    for &id in &fresh {
        hosts.mark_ready(id);
    }
    // The first host's robots.txt came back: its pages go next, not behind the others'
    // robots.txt, its connection and its state held meanwhile.
    assert_eq!(hosts.pop_ready(), Some(fresh[0]));
    allowed_but_private(&mut hosts, fresh[0], now);
    hosts.mark_ready(fresh[0]);
    assert_eq!(hosts.pop_ready(), Some(fresh[0]));
    assert_eq!(hosts.pop_ready(), Some(fresh[1]));
    assert_eq!(hosts.pop_ready(), Some(fresh[2]));
    assert_eq!(hosts.pop_ready(), None);
}

#[test]
fn a_limiters_hosts_are_paced_from_half_of_what_it_let_through_over_its_last_second() {
    let then = Instant::now();
    let now = then + 2 * LIMITER_SECOND;
    let server: SocketAddr = "127.0.0.1:8080".parse().unwrap_or_else(|e| panic!("{e}"));
    let mut hosts = crawl(Politeness::Server, 8);
    let a = meet(&mut hosts, "http://site-1.localhost:8080", then);
    let b = meet(&mut hosts, "http://site-2.localhost:8080", then);
    hosts.learn_server(a, server);
    hosts.learn_server(b, server);
    for id in [a, b] {
        // Pages two seconds ago, ten in the limiter's last second, and its refusal.
        for _ in 0..10 {
            hosts[id].window.record(then, false);
        }
        for n in 0..10 {
            hosts[id].window.record(now - LIMITER_SECOND + Duration::from_millis(90 * n + 5), false);
        }
        hosts[id].window.record(now, true);
    }
    assert!(hosts.slow_down(a, now));
    let controller = hosts.group(a).controller.as_ref().unwrap_or_else(|| panic!("paced"));
    assert_eq!(controller.rps(), 10.0, "half the 20 a second let through");
}

#[test]
fn robots_txt_read_before_the_crawl_is_learnt_by_hosts_met_and_kept_for_those_not_met_yet() {
    let now = Instant::now();
    let mut hosts = Hosts::new(&Config::new("groups").per_host(1).politeness(Politeness::Host));
    let met = meet(&mut hosts, "https://a.example:443", now);
    let rules = |body: &[u8]| RobotsRules::from_answer(200, body, "groups");
    hosts.keep_robots(
        vec![
            (HostKey::from("https://a.example:443"), rules(b"User-agent: *\nDisallow: /a-private/\n")),
            (HostKey::from("https://b.example:443"), rules(b"User-agent: *\nDisallow: /b-private/\n")),
        ],
        now,
    );
    assert!(hosts.robots_request(met).is_none(), "known: nothing to fetch");
    assert!(hosts.known_disallowed(&private("https://a.example/a-private/1")));
    let later = meet(&mut hosts, "https://b.example:443", now);
    assert!(hosts.robots_request(later).is_none());
    assert!(hosts.known_disallowed(&private("https://b.example/b-private/1")));
    assert!(!hosts.known_disallowed(&private("https://b.example/public")));
}
