//! `handler: {command: [...]}`: one process per task, the request JSON on
//! its stdin (then closed), the answer JSON on its stdout, exit 0.
//!
//! Bounded: the whole run within the request's `timeout_ms`, then the
//! process is killed (and killed when the worker drops the call); stdout
//! read up to `max_answer_bytes` (beyond, the process is killed); stderr
//! kept up to [`STDERR_KEEP`] bytes for the worker's log, never published.
//! A non-zero exit is a failure (`handler failed: exit status 3`).
//!
//! A relative program or argument naming an existing file beside the card
//! (`agent.py`, `./bin/agent`) is resolved against the card file's
//! directory, and the process runs there, so a card and its agent travel
//! together. The worker's own key (`TESSERA_WORKER_KEY`) is not passed on.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::{Answering, Brain, Failure, HandlerRequest};

/// Most bytes of a handler's stderr kept for the log.
const STDERR_KEEP: usize = 4096;

/// The environment variable holding the worker's key, kept from handlers.
const WORKER_KEY: &str = "TESSERA_WORKER_KEY";

/// The operator's program.
#[derive(Debug, Clone)]
pub struct CommandBrain {
    argv: Vec<String>,
    dir: Option<PathBuf>,
}

impl CommandBrain {
    /// Runs `argv`, resolved against `card_dir` (the card file's
    /// directory), in that directory; in the worker's own when `None`.
    pub fn new(argv: Vec<String>, card_dir: Option<&Path>) -> Self {
        let dir = card_dir.map(|d| {
            let d = if d.as_os_str().is_empty() { Path::new(".") } else { d };
            d.canonicalize().unwrap_or_else(|_| d.to_path_buf())
        });
        let argv = argv.into_iter().map(|a| resolve(a, dir.as_deref())).collect();
        Self { argv, dir }
    }

    /// The program and its arguments, as resolved.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    async fn run(&self, request: &HandlerRequest, timeout: Duration) -> Result<Value, Failure> {
        let Some((program, args)) = self.argv.split_first() else {
            return Err(Failure::Failed("no program to run".into()));
        };
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_remove(WORKER_KEY)
            .kill_on_drop(true);
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        let mut child = command
            .spawn()
            .map_err(|e| Failure::Failed(format!("the command cannot start ({})", e.kind())))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Failure::Failed("the command's pipes are missing".into()));
        };
        let body = serde_json::to_vec(request).expect("a request serializes");
        let cap = request.limits.max_answer_bytes;
        let exchange = async {
            let (_, out, err) = tokio::try_join!(
                feed(stdin, body),
                read_capped(stdout, cap),
                keep_head(stderr, STDERR_KEEP)
            )?;
            let status = child
                .wait()
                .await
                .map_err(|e| Failure::Failed(format!("waiting for the command ({})", e.kind())))?;
            Ok::<_, Failure>((status, out, err))
        };
        let ran = tokio::time::timeout(timeout, exchange).await;
        let (status, out, err) = match ran {
            Ok(Ok(done)) => done,
            Ok(Err(failure)) => {
                let _ = child.kill().await;
                return Err(failure);
            }
            Err(_) => {
                let _ = child.kill().await;
                return Err(Failure::TimedOut(timeout));
            }
        };
        let stderr = crate::runtime::one_line(&String::from_utf8_lossy(&err));
        if !status.success() {
            tracing::warn!(%stderr, %status, "the command handler failed");
            return Err(Failure::Failed(match status.code() {
                Some(code) => format!("exit status {code}"),
                None => "killed by a signal".into(),
            }));
        }
        if !stderr.is_empty() {
            tracing::debug!(%stderr, "the command handler's stderr");
        }
        serde_json::from_slice(&out)
            .map_err(|e| Failure::OffSchema(format!("the answer is not JSON ({e})")))
    }
}

impl Brain for CommandBrain {
    fn answer<'a>(&'a self, request: &'a HandlerRequest) -> Answering<'a> {
        Box::pin(self.run(request, Duration::from_millis(request.limits.timeout_ms)))
    }

    fn describe(&self) -> String {
        let shown = self.argv.join(" ");
        match &self.dir {
            Some(dir) => format!("the command handler `{shown}` in {}", dir.display()),
            None => format!("the command handler `{shown}`"),
        }
    }
}

/// `arg` resolved against `dir` when it is a relative path naming a file there.
fn resolve(arg: String, dir: Option<&Path>) -> String {
    let Some(dir) = dir else { return arg };
    let path = Path::new(&arg);
    if arg.is_empty() || arg.starts_with('-') || !path.is_relative() {
        return arg;
    }
    let joined = dir.join(path);
    if joined.is_file() { joined.to_string_lossy().into_owned() } else { arg }
}

/// Writes the request and closes stdin; a handler that does not read it
/// (a closed pipe) is no failure of the worker's.
async fn feed(mut stdin: tokio::process::ChildStdin, body: Vec<u8>) -> Result<(), Failure> {
    let _ = stdin.write_all(&body).await;
    drop(stdin);
    Ok(())
}

/// Everything `from` gives, failing once it is over `cap` bytes.
async fn read_capped(mut from: impl AsyncRead + Unpin, cap: usize) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = from
            .read(&mut buf)
            .await
            .map_err(|e| Failure::Failed(format!("reading the answer ({})", e.kind())))?;
        if n == 0 {
            return Ok(out);
        }
        if out.len() + n > cap {
            return Err(Failure::OffSchema(format!("the answer is over {cap} bytes")));
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// The first `keep` bytes of `from`, read to its end (the rest dropped).
async fn keep_head(mut from: impl AsyncRead + Unpin, keep: usize) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return Ok(out),
            Ok(n) => {
                let room = keep.saturating_sub(out.len()).min(n);
                out.extend_from_slice(&buf[..room]);
            }
        }
    }
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
