//! Progress of a long bench on stderr: one line when a phase starts, one
//! when it ends (or fails), each with the phase's elapsed time and the
//! bench's, and a line now and then from a phase that waits long, so a
//! run is never silent for minutes.

use std::{
    future::Future,
    time::{Duration, Instant},
};

/// How often a long phase says where it is ([`Phase::tick`]).
pub const EVERY: Duration = Duration::from_secs(30);

/// The clock of a whole bench.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    started: Instant,
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress {
    /// A bench starting now.
    pub fn new() -> Self {
        Self { started: Instant::now() }
    }

    /// Runs `phase`, named `name`, between a start and an end line.
    pub async fn phase<T, E: std::fmt::Display>(
        &self,
        name: &str,
        phase: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        eprintln!("{}", self.line(name, "started", None));
        let at = Instant::now();
        let out = phase.await;
        let end = match &out {
            Ok(_) => "done".to_owned(),
            Err(e) => format!("failed: {e}"),
        };
        eprintln!("{}", self.line(name, &end, Some(at.elapsed())));
        out
    }

    /// A ticker for the phase named `name`, starting now.
    pub fn ticker(&self, name: &str) -> Phase {
        Phase { progress: *self, name: name.to_owned(), at: Instant::now(), said: Instant::now() }
    }

    /// `[total] name: what (in phase)`.
    fn line(&self, name: &str, what: &str, took: Option<Duration>) -> String {
        let total = self.started.elapsed().as_secs_f64();
        match took {
            Some(d) => format!("[{total:>7.1} s] {name}: {what} in {:.1} s", d.as_secs_f64()),
            None => format!("[{total:>7.1} s] {name}: {what}"),
        }
    }
}

/// A phase under way, saying where it is at most every [`EVERY`].
#[derive(Debug)]
pub struct Phase {
    progress: Progress,
    name: String,
    at: Instant,
    said: Instant,
}

impl Phase {
    /// Prints `what` (e.g. `12 of 60 lifecycles`) if [`EVERY`] has passed
    /// since the last line.
    pub fn tick(&mut self, what: impl FnOnce() -> String) {
        if self.said.elapsed() >= EVERY {
            self.said = Instant::now();
            let line = self.progress.line(&self.name, &what(), Some(self.at.elapsed()));
            eprintln!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_the_phase_and_both_clocks() {
        let p = Progress::new();
        let start = p.line("2 s blocks: direct baseline", "started", None);
        assert!(start.ends_with("] 2 s blocks: direct baseline: started"), "{start}");
        assert!(start.starts_with('['));
        let end = p.line("baseline", "done", Some(Duration::from_millis(1500)));
        assert!(end.ends_with("baseline: done in 1.5 s"), "{end}");
    }

    #[tokio::test]
    async fn a_phase_passes_its_result_through() {
        let p = Progress::new();
        let ok: Result<u8, String> = p.phase("one", async { Ok(7) }).await;
        assert_eq!(ok, Ok(7));
        let failed: Result<u8, String> = p.phase("two", async { Err("no chain".into()) }).await;
        assert_eq!(failed, Err("no chain".to_owned()));
    }
}
