//! Locks that outlive a panic: a thread that panics while holding one (a bug, or a
//! host's confirm handler) must not make every later call fail. Each critical section
//! in lcp leaves its data whole between steps, so the data of a poisoned lock is used
//! as it is.

// Most of these serve the runtime (the `python` feature); discovery takes `lock` alone.
#![cfg_attr(not(feature = "python"), allow(dead_code, unused_imports))]

use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, poisoned or not.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Locks `lock` for reading, poisoned or not.
pub(crate) fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Locks `lock` for writing, poisoned or not.
pub(crate) fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `condvar`, getting `guard` back poisoned or not.
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `condvar` at most `limit`, getting `guard` back poisoned or not.
pub(crate) fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    limit: std::time::Duration,
) -> MutexGuard<'a, T> {
    match condvar.wait_timeout(guard, limit) {
        Ok((guard, _)) => guard,
        Err(poisoned) => poisoned.into_inner().0,
    }
}
