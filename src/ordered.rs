//! Work items done on every core and taken in order: how
//! [`crate::export::write_entries`] lowers tools in parallel while writing them one
//! after another, and how `lcp audit` reads packages and follows tools.
//!
//! At most [`AHEAD`] items per thread are done before the taker has taken them, so
//! memory stays bounded whatever the number of items. Nothing here knows about tools.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

use crate::sync;

/// How many items each thread may be ahead of the taker.
const AHEAD: usize = 4;

/// Calls `take` with `work(0)`, `work(1)`, … `work(count - 1)` in that order, the
/// work spread over the available cores. The first error of `take` stops the work
/// and is returned.
pub fn run<T: Send>(
    count: usize,
    work: impl Fn(usize) -> T + Sync,
    mut take: impl FnMut(T) -> io::Result<()>,
) -> io::Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(count);
    if threads <= 1 {
        return (0..count).try_for_each(|i| take(work(i)));
    }
    let next = AtomicUsize::new(0);
    // How many items were taken; `usize::MAX` once the taker stopped.
    let taken = Mutex::new(0usize);
    let progressed = Condvar::new();
    let lookahead = threads * AHEAD;
    std::thread::scope(|scope| {
        let (sender, results) = mpsc::channel::<(usize, T)>();
        for _ in 0..threads {
            let sender = sender.clone();
            let (next, taken, progressed, work) = (&next, &taken, &progressed, &work);
            scope.spawn(move || {
                loop {
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
            });
        }
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
