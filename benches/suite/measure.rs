//! Timing and memory primitives: interleaved repetitions with medians and spread,
//! whole-process timing, and a heap counter that the memory child switches on.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

/// Repeated measurements of one quantity.
#[derive(Debug, Clone, Default)]
pub struct Samples(pub Vec<f64>);

impl Samples {
    pub fn median(&self) -> f64 {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }

    pub fn min(&self) -> f64 {
        self.0.iter().copied().fold(f64::INFINITY, f64::min)
    }

    pub fn max(&self) -> f64 {
        self.0.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// One thing to measure: each run returns one value per label (seconds).
pub struct Contender<'a> {
    pub labels: Vec<String>,
    pub reps: usize,
    pub run: Box<dyn FnMut() -> Vec<f64> + 'a>,
}

impl<'a> Contender<'a> {
    pub fn new(label: &str, reps: usize, mut run: impl FnMut() -> f64 + 'a) -> Contender<'a> {
        Contender { labels: vec![label.to_string()], reps, run: Box::new(move || vec![run()]) }
    }

    pub fn many(labels: &[&str], reps: usize, run: impl FnMut() -> Vec<f64> + 'a) -> Contender<'a> {
        Contender { labels: labels.iter().map(|l| l.to_string()).collect(), reps, run: Box::new(run) }
    }
}

/// Runs every contender once to warm up, then in rounds (one run of each contender
/// per round, while it has repetitions left), so that noise on a shared machine
/// falls on all of them alike.
pub fn interleaved(mut contenders: Vec<Contender<'_>>) -> BTreeMap<String, Samples> {
    let mut results: BTreeMap<String, Samples> = BTreeMap::new();
    for contender in &mut contenders {
        eprint!("  warm-up: {} ...", contender.labels[0]);
        let started = Instant::now();
        (contender.run)();
        eprintln!(" {:.2} s", started.elapsed().as_secs_f64());
    }
    let rounds = contenders.iter().map(|c| c.reps).max().unwrap_or(0);
    for round in 0..rounds {
        eprint!("\r  round {}/{rounds}", round + 1);
        for contender in &mut contenders {
            if round >= contender.reps {
                continue;
            }
            let values = (contender.run)();
            for (label, value) in contender.labels.iter().zip(values) {
                results.entry(label.clone()).or_default().0.push(value);
            }
        }
    }
    eprintln!();
    results
}

pub fn seconds(f: impl FnOnce()) -> f64 {
    let started = Instant::now();
    f();
    started.elapsed().as_secs_f64()
}

/// Wall time of a whole process, stdout and stderr discarded; panics if it fails,
/// since a failed run would time nothing meaningful.
pub fn process(program: &Path, args: &[&str]) -> f64 {
    let started = Instant::now();
    let status = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", program.display()));
    let elapsed = started.elapsed().as_secs_f64();
    assert!(status.success(), "{} {args:?} failed: {status}", program.display());
    elapsed
}

/// Counts live heap bytes and their peak, only once [`start_counting`] was called
/// (the timing runs pay one relaxed load per allocation, nothing more).
pub struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the arguments it was given, so the
// `GlobalAlloc` contract holds as it does for `System`; the counters are only atomics.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract for `layout`.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() && COUNTING.load(Ordering::Relaxed) {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this allocator) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        if COUNTING.load(Ordering::Relaxed) {
            // Saturating: a block allocated before counting started may be freed after.
            let _ = LIVE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| Some(l.saturating_sub(layout.size())));
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller upholds the rest.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() && COUNTING.load(Ordering::Relaxed) {
            if new_size >= layout.size() {
                let live = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                let shrink = layout.size() - new_size;
                let _ = LIVE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| Some(l.saturating_sub(shrink)));
            }
        }
        new
    }
}

pub fn start_counting() {
    LIVE.store(0, Ordering::SeqCst);
    PEAK.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
}

/// (live bytes, peak live bytes) since [`start_counting`].
pub fn heap() -> (usize, usize) {
    (LIVE.load(Ordering::SeqCst), PEAK.load(Ordering::SeqCst))
}

/// A field of `/proc/self/status` in KiB (`VmHWM`, `VmRSS`).
pub fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()
}

/// Wall time and peak RSS of a whole process, measured by the bench's own small
/// `--child-rss` process, which spawns it and reads `ru_maxrss` from `wait4`. The
/// bench cannot spawn it itself: a child's `ru_maxrss` keeps the high-water mark of
/// the memory it shared with its parent before `exec`, here the whole loaded bench.
/// `env` is set for the process.
pub fn process_rss_with(program: &Path, args: &[&str], env: &[(&str, &str)]) -> (f64, f64) {
    let me = std::env::current_exe().expect("the bench knows its path");
    let output = Command::new(me)
        .envs(env.iter().copied())
        .arg("--child-rss")
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|err| panic!("cannot run the rss child: {err}"));
    assert!(output.status.success(), "{} {args:?} failed", program.display());
    let text = String::from_utf8_lossy(&output.stdout);
    let (seconds, bytes) = text.trim().split_once(' ').expect("the rss child prints two numbers");
    (seconds.parse().expect("seconds"), bytes.parse().expect("bytes"))
}

/// The `--child-rss` process: runs `program args` with stdout and stderr discarded
/// and prints its wall time in seconds and its peak RSS in bytes.
pub fn child_rss(program: &str, args: &[String]) {
    let started = Instant::now();
    #[expect(clippy::zombie_processes, reason = "reaped by wait4 below, which also gives its rusage")]
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {program}: {err}"));
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is valid; `wait4` fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let elapsed = started.elapsed().as_secs_f64();
    assert!(pid > 0 && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{program} {args:?} failed");
    // Linux reports `ru_maxrss` in KiB.
    println!("{elapsed} {}", usage.ru_maxrss as f64 * 1024.0);
}
