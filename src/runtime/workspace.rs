//! The process's working directory, leased to the calls running at one time.
//!
//! Calls for the same folder (or for none) run together; a call for another folder
//! waits until they are done. When the last call leaves, the directory the host had
//! is restored if a call changed it: by its workspace, or by a tool calling
//! `os.chdir` / `os.fchdir` (`host.py` reports those through [`before_chdir`]). A C
//! extension calling `chdir()` itself is not seen.
//!
//! Must never: hold its lock while a tool runs, or change the directory while a call
//! of another folder runs.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::sync;

#[derive(Default)]
struct State {
    /// The folder of the calls running now (`None`: the host's own directory).
    folder: Option<PathBuf>,
    users: usize,
    /// Calls waiting for another folder's calls to end.
    waiting: usize,
    /// The directory to go back to when the last call leaves, once one changed it.
    home: Option<PathBuf>,
}

/// Process-wide, as the working directory it leases is.
static STATE: Mutex<State> = Mutex::new(State { folder: None, users: 0, waiting: 0, home: None });
static CHANGED: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, State> {
    sync::lock(&STATE)
}

/// A call's share of the working directory; leaving is dropping it.
pub struct Lease(());

/// Waits until the working directory can be `folder` (the host's own when `None`),
/// moves there if needed, and counts the call in.
pub fn enter(folder: Option<&Path>) -> Result<Lease, String> {
    enter_or_fail(folder)
        .map_err(|err| format!("cannot use the workspace {}: {err}", folder.unwrap_or(Path::new(".")).display()))
}

fn enter_or_fail(folder: Option<&Path>) -> io::Result<Lease> {
    let mut state = lock();
    while state.users > 0 && state.folder.as_deref() != folder {
        state.waiting += 1;
        state = sync::wait(&CHANGED, state);
        state.waiting -= 1;
    }
    if state.users == 0
        && let Some(folder) = folder
    {
        let home = std::env::current_dir().ok();
        std::env::set_current_dir(folder)?;
        state.home = home;
        state.folder = Some(folder.to_path_buf());
    }
    state.users += 1;
    Ok(Lease(()))
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut state = lock();
        state.users -= 1;
        if state.users == 0 {
            if let Some(home) = state.home.take() {
                let _ = std::env::set_current_dir(home);
            }
            state.folder = None;
            if state.waiting > 0 {
                CHANGED.notify_all();
            }
        }
    }
}

/// Called before a tool changes the working directory: remembers the directory to
/// restore, unless a workspace already did.
pub fn before_chdir() {
    let mut state = lock();
    if state.users > 0 && state.home.is_none() {
        state.home = std::env::current_dir().ok();
    }
}
