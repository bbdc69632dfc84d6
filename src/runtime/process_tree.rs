//! The processes a worker's tools started, found through `/proc` and ended (SPEC §17:
//! everything a tool starts ends with it).
//!
//! A worker is a child subreaper, so a descendant whose parent exits (a shell's
//! background job, a process that called `setsid`) is adopted by the worker instead
//! of leaving its tree: every process the tools started stays a descendant of the
//! worker, whatever session or process group it moved to. Must never: signal a
//! process that is not a descendant of the given one.

use std::collections::HashMap;

/// Makes this process adopt its orphaned descendants.
pub(crate) fn become_subreaper() {
    // SAFETY: a prctl on the calling process with plain integer arguments.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// Whether this process adopts its orphaned descendants.
pub(crate) fn is_subreaper() -> bool {
    let mut flag: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int through the pointer given.
    unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &raw mut flag, 0, 0, 0) == 0 && flag != 0 }
}

/// This process's children now (`/proc/self/task/*/children`).
pub(crate) fn children() -> Vec<libc::pid_t> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|children| children.split_whitespace().filter_map(|pid| pid.parse().ok()).collect::<Vec<_>>())
        .collect()
}

/// Ends (and reaps) every child of this subreaper that `keep` does not name, with
/// what is below it: the orphans a dead worker's tools left, adopted here.
pub(crate) fn end_adopted(keep: impl Fn(libc::pid_t) -> bool) {
    for child in children() {
        if keep(child) {
            continue;
        }
        end_descendants(child);
        // SAFETY: a signal to, then a wait for, a child of this process.
        unsafe {
            libc::kill(child, libc::SIGKILL);
            let mut status = 0;
            libc::waitpid(child, &raw mut status, 0);
        }
    }
}

/// Every descendant of `root` now, from one reading of `/proc`.
pub(crate) fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let mut children: HashMap<libc::pid_t, Vec<libc::pid_t>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<libc::pid_t>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let Some(parent) = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)) else {
            continue;
        };
        if let Ok(parent) = parent.parse() {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut pending = vec![root];
    while let Some(pid) = pending.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            found.push(child);
            pending.push(child);
        }
    }
    found
}

/// Kills every descendant of this process ([`end_descendants`] of itself).
pub(crate) fn end_own_descendants() {
    end_descendants(std::process::id() as libc::pid_t);
}

/// Kills every descendant of `root`, again until none is left (one forked meanwhile
/// is found on the next look), at most a few rounds.
pub(crate) fn end_descendants(root: libc::pid_t) {
    for _ in 0..8 {
        let found = descendants(root);
        if found.is_empty() {
            return;
        }
        for pid in found {
            // SAFETY: a signal to a process just found below `root`.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Reaps every child of this process that has ended, without waiting.
pub(crate) fn reap_ended_children() {
    loop {
        let mut status = 0;
        // SAFETY: waits for any child of ours, without blocking.
        if unsafe { libc::waitpid(-1, &raw mut status, libc::WNOHANG) } <= 0 {
            return;
        }
    }
}
