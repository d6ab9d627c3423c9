//! Exit identities: loopback source addresses, one per client connection or per session.
//!
//! Linux routes all of `127.0.0.0/8` to the loopback interface, so binding the upstream
//! socket to `127.0.1.N` before connecting makes the target see `127.0.1.N` as its peer —
//! the same signal a real site gets from a rotating gateway's exit IP.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// The first exit; `127.0.0.1` itself stays the direct, un-proxied identity.
const FIRST: Ipv4Addr = Ipv4Addr::new(127, 0, 1, 1);
/// Exits available before the sequence wraps: up to `127.255.255.254`.
const SPAN: u32 = 0x7fff_fffe - 0x7f00_0101 + 1;

/// Hands out exit addresses in order (`127.0.1.1`, `127.0.1.2`, …), the same sequence in
/// every gateway, so a failing test names the same addresses each run.
#[derive(Debug, Default)]
pub(crate) struct Exits {
    issued: AtomicU32,
    /// Sticky sessions: (country, session id) to its exit, for the gateway's life.
    sessions: Mutex<HashMap<(Option<String>, String), IpAddr>>,
}

impl Exits {
    /// An exit no one has had yet.
    pub(crate) fn fresh(&self) -> IpAddr {
        let n = self.issued.fetch_add(1, Ordering::Relaxed) % SPAN;
        IpAddr::V4(Ipv4Addr::from(u32::from(FIRST) + n))
    }

    /// The exit of a sticky session, issued on its first use.
    pub(crate) fn pinned(&self, country: Option<&str>, session: &str) -> IpAddr {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        *sessions.entry((country.map(str::to_owned), session.to_owned())).or_insert_with(|| self.fresh())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_exits_are_sequential_loopback_addresses() {
        let exits = Exits::default();
        assert_eq!(exits.fresh(), IpAddr::V4(Ipv4Addr::new(127, 0, 1, 1)));
        assert_eq!(exits.fresh(), IpAddr::V4(Ipv4Addr::new(127, 0, 1, 2)));
        exits.issued.store(SPAN - 1, Ordering::Relaxed);
        assert_eq!(exits.fresh(), IpAddr::V4(Ipv4Addr::new(127, 255, 255, 254)));
        assert_eq!(exits.fresh(), IpAddr::V4(FIRST), "wraps within 127/8");
    }

    #[test]
    fn a_session_keeps_its_exit_per_country() {
        let exits = Exits::default();
        let a = exits.pinned(None, "a");
        assert_eq!(exits.pinned(None, "a"), a);
        assert_ne!(exits.pinned(Some("de"), "a"), a);
        assert_ne!(exits.pinned(None, "b"), a);
    }
}
