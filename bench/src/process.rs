//! Services under measurement as child processes of the running `tessera`
//! executable: started on a port they bind themselves, found by the line
//! where they say where they listen, read from `/proc` (peak RSS, CPU
//! time), and killed when dropped.

use std::{
    io::BufRead,
    process::{Child, Command, Stdio},
    time::Duration,
};

use eyre::{Result, bail};

/// A child process, killed and reaped when dropped.
#[derive(Debug)]
pub struct Running(pub Child);

impl Running {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` (stdout piped) and returns it with the base URL of the
/// first `http://host:port` it prints (within 60 s). Every later line is
/// read and dropped, so the child never blocks on a full pipe.
pub fn spawn_listening(mut cmd: Command, what: &str) -> Result<(Running, String)> {
    let mut child = cmd.stdout(Stdio::piped()).spawn()?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let running = Running(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(at) = line.find("http://")
                && let Some(tx) = tx.take()
            {
                let addr: String = line[at + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                    .collect();
                let _ = tx.send(format!("http://{}", addr.trim_end_matches('.')));
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(api) => Ok((running, api)),
        Err(_) => bail!("the {what} did not say where it listens within 60 s"),
    }
}

/// The running executable, to start one of its own commands.
pub fn tessera() -> Result<Command> {
    Ok(Command::new(std::env::current_exe()?))
}

/// Peak resident memory of process `pid`, MiB (0 when unreadable).
pub fn peak_rss_mib(pid: u32) -> f64 {
    status_kib(pid, "VmHWM:").map_or(0.0, |kb| kb / 1024.0)
}

fn status_kib(pid: u32, field: &str) -> Option<f64> {
    std::fs::read_to_string(format!("/proc/{pid}/status")).ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
    })
}

/// CPU seconds (user + system) process `pid` has used, from
/// `/proc/<pid>/stat` at the kernel's 100 ticks a second (`USER_HZ`, fixed
/// at 100 on Linux whatever the kernel's own tick).
pub fn cpu_secs(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    // The command name may hold spaces; fields resume after its `)`.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After `)`: state is field 3 of the full line, utime 14 and stime 15.
    let tick = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_its_own_memory_and_cpu() {
        let me = std::process::id();
        assert!(peak_rss_mib(me) > 1.0);
        // Burn a little CPU so the counter moves off zero.
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        assert!(x != 1);
        assert!(cpu_secs(me) > 0.0);
        assert_eq!(peak_rss_mib(u32::MAX), 0.0);
        assert_eq!(cpu_secs(u32::MAX), 0.0);
    }
}
