//! One process per SQLite file: an exclusive advisory lock on `<file>.lock`
//! held for as long as the process keeps the [`FileLock`]. The lock is the
//! kernel's (`flock`), so a process that dies — even by `kill -9` — lets it
//! go, and the next start takes it.

use std::{fs::File, path::PathBuf};

use crate::{Backend, DbError, pool::pool_url};

/// An exclusive lock on an SQLite file's `<file>.lock`, held until dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
    path: PathBuf,
}

impl FileLock {
    /// The lock file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

/// Takes the exclusive lock of the SQLite file `url` names (`<file>.lock`
/// beside it, created when missing, with its directory); `None` for
/// PostgreSQL and in-memory SQLite, which need none. Refused with
/// [`DbError::Locked`] while another process holds it.
pub fn lock_sqlite(url: &str) -> Result<Option<FileLock>, DbError> {
    let (backend, _) = pool_url(url)?;
    let Some(rest) = url.strip_prefix("sqlite:").filter(|_| backend == Backend::Sqlite) else {
        return Ok(None);
    };
    let file = rest.trim_start_matches("//").split('?').next().unwrap_or_default();
    if file.is_empty() || file.contains(":memory:") {
        return Ok(None);
    }
    let path = PathBuf::from(format!("{file}.lock"));
    let io = |source| DbError::Io { path: path.display().to_string(), source };
    // The database's directory may not exist yet: the pool makes it too.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    match lock.try_lock() {
        Ok(()) => Ok(Some(FileLock { _file: lock, path })),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(DbError::Locked { path: path.display().to_string() })
        }
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_file_is_refused_until_the_first_goes() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("a/runs.db").display());
        let first = lock_sqlite(&url).unwrap().expect("an SQLite file is locked");
        assert!(first.path().ends_with("runs.db.lock"));
        let err = lock_sqlite(&url).unwrap_err();
        assert!(matches!(err, DbError::Locked { .. }), "{err}");
        assert!(err.to_string().contains("runs.db.lock"), "{err}");
        drop(first);
        assert!(lock_sqlite(&url).unwrap().is_some(), "free again once dropped");
        let other = format!("sqlite://{}", dir.path().join("b.db").display());
        assert!(lock_sqlite(&other).unwrap().is_some(), "another file has its own lock");
    }

    #[test]
    fn postgres_and_memory_need_no_lock() {
        assert!(lock_sqlite("postgres://u@h/db").unwrap().is_none());
        assert!(lock_sqlite("sqlite::memory:").unwrap().is_none());
    }
}
