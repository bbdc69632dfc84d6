//! lcp's one pool of threads: work items done on every core and taken in order. It is
//! how discovery reads its files ([`all`]), how [`crate::export::write_entries`] lowers
//! tools in parallel while writing them one after another, and how `lcp audit` reads
//! packages and follows tools ([`run`]).
//!
//! With [`run`], at most [`AHEAD`] items per thread are done before the taker has
//! taken them, so memory stays bounded whatever the number of items. Every thread has
//! a [`STACK`]: the work walks syntax trees, which valid code may nest deeply. Nothing
//! here knows about tools.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

use crate::sync;

/// How many items each thread may be ahead of the taker.
const AHEAD: usize = 4;

/// Stack of each thread (reserved, not used until needed): deep but valid code must
/// never overflow it.
const STACK: usize = 256 * 1024 * 1024;

/// Calls `take` with `work(0)`, `work(1)`, … `work(count - 1)` in that order, the
/// work spread over the available cores. The first error of `take` stops the work
/// and is returned; so is the error of starting a thread when none could start.
pub fn run<T: Send>(
    count: usize,
    work: impl Fn(usize) -> T + Sync,
    mut take: impl FnMut(T) -> io::Result<()>,
) -> io::Result<()> {
    let next = AtomicUsize::new(0);
    // How many items were taken; `usize::MAX` once the taker stopped.
    let taken = Mutex::new(0usize);
    let progressed = Condvar::new();
    let threads = threads(count);
    let lookahead = threads * AHEAD;
    std::thread::scope(|scope| {
        let (sender, results) = mpsc::channel::<(usize, T)>();
        on_threads(scope, threads, || {
            let sender = sender.clone();
            let (next, taken, progressed, work) = (&next, &taken, &progressed, &work);
            move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return;
                }
                {
                    let mut now = sync::lock(taken);
                    while *now != usize::MAX && i >= *now + lookahead {
                        now = sync::wait(progressed, now);
                    }
                    if *now == usize::MAX {
                        return;
                    }
                }
                if sender.send((i, work(i))).is_err() {
                    return;
                }
            }
        })?;
        drop(sender);
        let mut waiting = BTreeMap::new();
        let mut done = 0;
        let mut outcome = Ok(());
        for (i, item) in results.iter() {
            waiting.insert(i, item);
            while let Some(item) = waiting.remove(&done) {
                outcome = take(item);
                done += 1;
                if outcome.is_err() {
                    break;
                }
            }
            let mut now = sync::lock(&taken);
            *now = if outcome.is_err() { usize::MAX } else { done };
            progressed.notify_all();
            if outcome.is_err() || done == count {
                break;
            }
        }
        outcome
    })
}

/// `work(0)`, `work(1)`, … `work(count - 1)`, done on every core, in that order,
/// when every item is kept anyway: each thread keeps what it did, and nothing waits
/// for a taker. `Err` when no thread could start.
pub fn all<T: Send>(count: usize, work: impl Fn(usize) -> T + Sync) -> io::Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::with_capacity(count));
    std::thread::scope(|scope| {
        on_threads(scope, threads(count), || {
            let (next, done, work) = (&next, &done, &work);
            move || {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    mine.push((i, work(i)));
                }
                sync::lock(done).append(&mut mine);
            }
        })
    })?;
    let mut done = done.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    done.sort_unstable_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, item)| item).collect())
}

/// How many threads `count` items are done on: one per core, no more than items.
fn threads(count: usize) -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(count)
}

/// Starts `threads` threads of `scope`, each with a [`STACK`], running what `each`
/// makes. When some could not start, those that did do all the work; `Err` when none
/// could.
fn on_threads<'scope, F: FnOnce() + Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    threads: usize,
    mut each: impl FnMut() -> F,
) -> io::Result<()> {
    for started in 0..threads {
        match std::thread::Builder::new().stack_size(STACK).spawn_scoped(scope, each()) {
            Ok(_) => {}
            Err(_) if started > 0 => break,
            Err(err) => return Err(io::Error::other(format!("no thread could start: {err}"))),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_taken_in_order_whatever_order_they_are_done_in() {
        for count in [0, 1, 2, 7, 100] {
            let mut seen = Vec::new();
            // Early items take longest, so that later ones are done first.
            let work = |i: usize| {
                std::thread::sleep(std::time::Duration::from_micros(((count - i) % 5) as u64 * 100));
                i * 2
            };
            run(count, work, |item| {
                seen.push(item);
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, (0..count).map(|i| i * 2).collect::<Vec<_>>());
        }
    }

    #[test]
    fn all_keeps_every_item_in_order_and_each_thread_has_the_deep_stack() {
        /// Uses about `depth` KiB of stack.
        fn deep(depth: usize) -> usize {
            let frame = std::hint::black_box([1u8; 1024]);
            if depth == 0 { 0 } else { deep(depth - 1) + usize::from(frame[depth % 1024]) }
        }
        // 32 MiB: more than a spawned thread's default stack and the main thread's.
        let items = all(5, |i| (i, deep(32 * 1024))).unwrap();
        assert_eq!(items, (0..5).map(|i| (i, 32 * 1024)).collect::<Vec<_>>());
        assert!(all(0, |i| i).unwrap().is_empty());
    }

    #[test]
    fn an_error_of_the_taker_stops_the_work_and_is_returned() {
        let done = AtomicUsize::new(0);
        let mut taken = 0;
        let outcome = run(
            10_000,
            |i| {
                done.fetch_add(1, Ordering::Relaxed);
                i
            },
            |i| {
                taken += 1;
                if i == 3 { Err(io::Error::other("closed")) } else { Ok(()) }
            },
        );
        assert_eq!(outcome.unwrap_err().to_string(), "closed");
        assert_eq!(taken, 4);
        assert!(done.load(Ordering::Relaxed) < 10_000, "the work stopped early");
    }
}
