//! What the dispatcher listens to besides its tasks: stop signals, the start list, a
//! fleet's arrivals and, with the `render` feature, the browsers' requests.

use tokio::sync::{mpsc, Notify};

use crate::request::Request;

/// What the dispatcher listens to besides its tasks.
pub(in crate::engine) struct Inputs {
    /// Ctrl-C or SIGTERM.
    pub(in crate::engine) stop_rx: mpsc::UnboundedReceiver<()>,
    /// The start list's requests as they are read (`--start-urls`).
    pub(in crate::engine) start_list: Option<mpsc::Receiver<Request>>,
    /// The browsers' requests, asking for admission.
    #[cfg(feature = "render")]
    pub(in crate::engine) asks: mpsc::UnboundedReceiver<crate::engine::protocol::Ask>,
}

/// What the browsers tell the dispatcher: nothing without the `render` feature.
#[cfg(not(feature = "render"))]
pub(super) type Heard = std::convert::Infallible;

/// No browser asks anything without the `render` feature.
#[cfg(not(feature = "render"))]
pub(in crate::engine) struct Asking;

#[cfg(not(feature = "render"))]
impl Asking {
    pub(super) async fn next(&mut self) -> Heard {
        std::future::pending().await
    }
}

/// Requests arrived from a fleet's frontier; never, for a frontier of this process.
pub(super) async fn arrived(arrivals: Option<&Notify>) {
    match arrivals {
        Some(arrivals) => arrivals.notified().await,
        None => std::future::pending().await,
    }
}

/// The next start URL of the list; `None` once it is read to its end; never, without one.
pub(super) async fn next_start(list: Option<&mut mpsc::Receiver<Request>>) -> Option<Request> {
    match list {
        Some(list) => list.recv().await,
        None => std::future::pending().await,
    }
}
