//! What the gateways carried and what it cost, and the budget that stops admission.
//!
//! Bytes are counted from what crosses HTTP: the request line and headers, the response
//! status line, headers and body as read. That is close to what a provider bills for
//! plain HTTP; TLS handshakes of tunnels and compressed bodies (counted as inflated) make
//! the two differ, so a budget should leave some room.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

#[derive(Debug, Default)]
struct Traffic {
    requests: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
    benched: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct Spend {
    per_gateway: Vec<Traffic>,
    price_per_gb: f64,
    budget: Option<f64>,
}

/// One gateway's share of the traffic, in the stats.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct GatewayTraffic {
    /// The gateway, credentials redacted.
    pub gateway: String,
    /// Requests it answered (those that could not reach it are not counted).
    pub requests: u64,
    /// Bytes sent to it, counted as they cross HTTP (see [`ProxySpend`]).
    pub bytes_sent: u64,
    /// Bytes received from it, bodies counted as decompressed.
    pub bytes_received: u64,
    /// Times it was benched for failing to connect.
    pub benched: u64,
}

/// The proxy part of the stats.
///
/// Bytes are counted from what crosses HTTP: request and response heads, and bodies as
/// decompressed. That is close to a provider's bill for plain, uncompressed HTTP; gzip
/// makes it an overestimate, TLS handshakes in tunnels an underestimate.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ProxySpend {
    /// Traffic per gateway.
    pub gateways: Vec<GatewayTraffic>,
    /// Bytes through every gateway, both ways.
    pub bytes: u64,
    /// `bytes` at `proxy_price_per_gb`, in the price's currency; a GB is 10⁹ bytes.
    pub spend: f64,
    /// The `proxy_budget`, if any.
    pub budget: Option<f64>,
}

impl Spend {
    pub(crate) fn new(gateways: usize, price_per_gb: f64, budget: Option<f64>) -> Self {
        Spend { per_gateway: (0..gateways).map(|_| Traffic::default()).collect(), price_per_gb, budget }
    }

    pub(crate) fn record(&self, gateway: usize, sent: u64, received: u64) {
        if let Some(traffic) = self.per_gateway.get(gateway) {
            traffic.requests.fetch_add(1, Relaxed);
            traffic.sent.fetch_add(sent, Relaxed);
            traffic.received.fetch_add(received, Relaxed);
        }
    }

    pub(crate) fn benched(&self, gateway: usize) {
        if let Some(traffic) = self.per_gateway.get(gateway) {
            traffic.benched.fetch_add(1, Relaxed);
        }
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.per_gateway.iter().map(|t| t.sent.load(Relaxed) + t.received.load(Relaxed)).sum()
    }

    fn spend(&self) -> f64 {
        self.cost(self.bytes())
    }

    fn cost(&self, bytes: u64) -> f64 {
        bytes as f64 / 1e9 * self.price_per_gb
    }

    /// Whether the spend has reached the budget: of this crawl's bytes, or of the bytes
    /// `fleet` answers for them.
    pub(crate) fn budget_reached(&self, fleet: impl FnOnce(u64) -> Option<u64>) -> bool {
        let Some(budget) = self.budget else { return false };
        let own = self.bytes();
        self.cost(fleet(own).unwrap_or(own)) >= budget
    }

    pub(crate) fn summary(&self, names: impl Iterator<Item = String>) -> ProxySpend {
        let gateways = names
            .zip(&self.per_gateway)
            .map(|(gateway, t)| GatewayTraffic {
                gateway,
                requests: t.requests.load(Relaxed),
                bytes_sent: t.sent.load(Relaxed),
                bytes_received: t.received.load(Relaxed),
                benched: t.benched.load(Relaxed),
            })
            .collect();
        ProxySpend { gateways, bytes: self.bytes(), spend: self.spend(), budget: self.budget }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spend_is_bytes_at_the_price_and_the_budget_stops_at_it() {
        let spend = Spend::new(2, 10.0, Some(0.001));
        spend.record(0, 40_000, 40_000);
        assert!(!spend.budget_reached(|_| None));
        assert!(spend.budget_reached(|own| Some(own + 20_000)), "a fleet's bytes count");
        spend.record(1, 0, 20_000);
        assert!(spend.budget_reached(|_| None));
        let summary = spend.summary(["a".to_owned(), "b".to_owned()].into_iter());
        assert_eq!(summary.bytes, 100_000);
        assert!((summary.spend - 0.001).abs() < 1e-12);
        assert_eq!(summary.gateways[1].requests, 1);
    }
}
