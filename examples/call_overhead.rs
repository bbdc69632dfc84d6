//! Measures what running a tool through lcp costs.
//!
//! - the interpreter's start (`Runtime::new`, first time in the process);
//! - the first call of a library (import + `init_tools_library`): a one-line library,
//!   and the built-in SQLite library;
//! - the per-call overhead of `Runtime::call` on a trivial tool against a direct call
//!   of the same Python function in the same interpreter (`timeit`), without and with
//!   a timeout (which runs the call on its own thread);
//! - the same calls in a worker process (SPEC §8), with and without a timeout.
//!
//! Run with `cargo build --release && cargo run --release --example call_overhead [CALLS]`
//! (the worker rows need the `lcp` binary beside the example's folder).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use lcp::discovery::registry::{Options, Registry, Sources};
use lcp::runtime::{CallOptions, Isolation, Runtime, RuntimeConfig, WorkerSettings};
use serde_json::json;

const TRIVIAL: &str = "def tool_noop(x: int = 0) -> int:\n    \"\"\"Returns x.\"\"\"\n    return x\n";

fn main() {
    let calls: u32 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let dir = std::env::temp_dir().join(format!("lcp-overhead-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("trivial.py");
    std::fs::write(&file, TRIVIAL).expect("trivial library");

    let started = Instant::now();
    let runtime = Runtime::new(RuntimeConfig { venv: None, ..RuntimeConfig::default() }).expect("python starts");
    println!("interpreter start (Runtime::new):        {:>9.2} ms", ms(started.elapsed()));

    let trivial = Registry::load(&Sources { folders: vec![], files: vec![file.clone()] }, &Options::default());
    let args = json!({"x": 1});
    let options = CallOptions::default();
    let started = Instant::now();
    assert!(runtime.call(&trivial, "tool_noop", &args, &options).ok());
    println!("first call, one-line library:            {:>9.2} ms", ms(started.elapsed()));

    let builtin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("default_tools");
    let defaults = Registry::load(&Sources { folders: vec![builtin], files: vec![] }, &Options::default());
    let query = json!({"database_name": "missing.db", "query": "SELECT 1"});
    let started = Instant::now();
    runtime.call(&defaults, "tool_execute_query", &query, &options);
    println!("first call, built-in SQLite library:     {:>9.2} ms", ms(started.elapsed()));

    for _ in 0..1000 {
        runtime.call(&trivial, "tool_noop", &args, &options);
    }
    let started = Instant::now();
    for _ in 0..calls {
        runtime.call(&trivial, "tool_noop", &args, &options);
    }
    let through_lcp = started.elapsed() / calls;

    let timed = CallOptions { timeout: Some(Duration::from_secs(30)), ..CallOptions::default() };
    let started = Instant::now();
    for _ in 0..calls / 10 {
        runtime.call(&trivial, "tool_noop", &args, &timed);
    }
    let with_timeout = started.elapsed() / (calls / 10);

    let path = file.to_string_lossy();
    let direct = format!(
        "__import__('timeit').timeit('f(x=1)', globals={{'f': next(m for m in list(__import__('sys').modules.values()) \
         if getattr(m, '__file__', None) == {path:?}).tool_noop}}, number={calls}) / {calls}"
    );
    let direct: f64 = runtime.eval(&direct).expect("timeit runs").parse().expect("a number");
    let direct = Duration::from_secs_f64(direct);

    println!("direct Python call (timeit):             {:>9.3} µs", us(direct));
    println!("Runtime::call, trivial tool:             {:>9.3} µs", us(through_lcp));
    println!("  overhead per call:                     {:>9.3} µs", us(through_lcp.saturating_sub(direct)));
    println!("Runtime::call with a timeout (thread):   {:>9.3} µs", us(with_timeout));

    let program =
        std::env::current_exe().expect("own path").parent().and_then(|dir| dir.parent()).map(|dir| dir.join("lcp"));
    let Some(program) = program.filter(|path| path.is_file()) else {
        println!("(no lcp binary beside the examples folder: worker rows skipped; run `cargo build --release` first)");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let isolation = Isolation::Workers(WorkerSettings::new(program));
    let workers = Runtime::new(RuntimeConfig { venv: None, isolation, ..RuntimeConfig::default() }).expect("workers");
    let started = Instant::now();
    assert!(workers.call(&trivial, "tool_noop", &args, &options).ok());
    println!("worker: start + first call:              {:>9.2} ms", ms(started.elapsed()));
    for _ in 0..1000 {
        workers.call(&trivial, "tool_noop", &args, &options);
    }
    let started = Instant::now();
    for _ in 0..calls {
        workers.call(&trivial, "tool_noop", &args, &options);
    }
    let in_worker = started.elapsed() / calls;
    let started = Instant::now();
    for _ in 0..calls {
        workers.call(&trivial, "tool_noop", &args, &timed);
    }
    let in_worker_timed = started.elapsed() / calls;
    println!("worker: Runtime::call, trivial tool:     {:>9.3} µs", us(in_worker));
    println!("worker:   overhead per call:             {:>9.3} µs", us(in_worker.saturating_sub(direct)));
    println!("worker: Runtime::call with a timeout:    {:>9.3} µs", us(in_worker_timed));
    let _ = std::fs::remove_dir_all(&dir);
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn us(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
