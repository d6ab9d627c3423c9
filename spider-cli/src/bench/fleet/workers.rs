//! N worker processes started at once, waited for within a deadline, and what each
//! printed of its run; a worker that fails, or does not end in time, fails the run.
//!
//! Each worker's output goes to files rather than pipes: nobody reads a pipe while the
//! workers run, and a worker blocked on a full one would look like a slow crawl.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::super::measure::Run;

/// How often the parent looks for exited workers: small next to a run of seconds, so
/// the wall time is the workers', not the polling's.
const POLL: Duration = Duration::from_millis(2);

/// The worker processes of one run: `count` of them, their output in `dir`, all ended
/// `within` the run's deadline.
pub(super) struct Workers<'a> {
    pub(super) count: usize,
    pub(super) dir: &'a Path,
    pub(super) within: Duration,
}

/// What the workers of a run did.
pub(super) struct Finished {
    /// When the first worker was started.
    pub(super) started: Instant,
    /// From the first worker started to the last one exited.
    pub(super) wall: Duration,
    /// Each worker's run, in the order started.
    pub(super) runs: Vec<Run>,
}

impl Workers<'_> {
    /// Start every worker (`command(i)` is the `i`th's), then wait for all of them; the
    /// error says which worker failed and how, or that the run went past its deadline
    /// (then every worker left is killed).
    pub(super) fn run(&self, command: impl Fn(usize) -> Command) -> Result<Finished, String> {
        let started = Instant::now();
        let mut children = Vec::with_capacity(self.count);
        for i in 0..self.count {
            match self.spawn(i, command(i)) {
                Ok(child) => children.push(Some(child)),
                Err(error) => {
                    stop(&mut children);
                    return Err(error);
                }
            }
        }
        let deadline = started + self.within;
        let polls = self.within.as_millis() / POLL.as_millis() + 1;
        let mut statuses = vec![None; self.count];
        let mut last_exit = started;
        for _ in 0..polls {
            for (child, status) in children.iter_mut().zip(statuses.iter_mut()) {
                let Some(running) = child else { continue };
                match running.try_wait() {
                    Ok(Some(exit)) => {
                        *status = Some(exit);
                        *child = None;
                        last_exit = Instant::now();
                    }
                    Ok(None) => {}
                    Err(error) => {
                        stop(&mut children);
                        return Err(format!("cannot wait for a worker: {error}"));
                    }
                }
            }
            if children.iter().all(Option::is_none) || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(POLL);
        }
        if children.iter().any(Option::is_some) {
            stop(&mut children);
            return Err(format!("the workers had not all ended after {:?}; killed", self.within));
        }
        let runs = statuses
            .iter()
            .enumerate()
            .map(|(i, status)| match status {
                Some(status) if status.success() => self.run_of(i),
                Some(status) => Err(format!("worker {i} failed ({status}): {}", self.said(i))),
                None => Err(format!("worker {i} has no exit status")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Finished { started, wall: last_exit - started, runs })
    }

    fn spawn(&self, i: usize, mut command: Command) -> Result<Child, String> {
        let file = |ext: &str| {
            let path = self.dir.join(format!("worker-{}-{i}.{ext}", self.count));
            File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))
        };
        command
            .stdin(Stdio::null())
            .stdout(file("out")?)
            .stderr(file("err")?)
            .spawn()
            .map_err(|e| format!("cannot start worker {i}: {e}"))
    }

    /// The run worker `i` printed as its last line.
    fn run_of(&self, i: usize) -> Result<Run, String> {
        let path = self.dir.join(format!("worker-{}-{i}.out", self.count));
        let stdout = std::fs::read_to_string(&path).unwrap_or_default();
        let run = stdout.lines().last().and_then(|line| serde_json::from_str::<Run>(line).ok());
        run.ok_or_else(|| format!("worker {i} printed no run: {}", self.said(i)))
    }

    /// The end of what worker `i` wrote to stderr, for an error message.
    fn said(&self, i: usize) -> String {
        let path = self.dir.join(format!("worker-{}-{i}.err", self.count));
        let stderr = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<&str> = stderr.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }
}

/// Kill and reap every worker still running.
fn stop(children: &mut [Option<Child>]) {
    for child in children.iter_mut().filter_map(Option::take) {
        let mut child = child;
        // An error means it had exited already; `wait` reaps it either way.
        let _ = child.kill();
        let _ = child.wait();
    }
}
