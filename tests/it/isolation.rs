//! SPEC §8: tools run in supervised worker processes. Whatever a tool does to its
//! process is one failed call naming the cause; the next call works; time limits and
//! cancellation stop tools blocked in C; no process is left behind.
//! Fixture: `fixtures/isolation/` (`faults.py`: every way a tool can hurt its
//! process; `confirming.py`: a confirmation naming the worker).

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use lcp::discovery::registry::{Options, Registry, Sources};
use lcp::runtime::host_objects::Callbacks;
use lcp::runtime::{
    CallOptions, Cancel, ConfirmRequest, Confirmation, Isolation, Runtime, RuntimeConfig, ToolResult, WorkerSettings,
};
use serde_json::{Value, json};

use crate::mcp::RawServer;
#[cfg(feature = "external")]
use crate::mcp::session;
#[cfg(feature = "external")]
use crate::mcp::{HttpServer, MODES};
#[cfg(feature = "external")]
use crate::mcp::{assert_error, assert_ok, call};
use crate::support::*;

const FOLDER: &str = "fixtures/isolation";

fn lcp_call(tool: &str, args: &[&str]) -> Output {
    lcp_call_in(FOLDER, tool, args)
}

/// The one JSON result of a failed `lcp call`, whose error names every needle.
fn failed_call(tool: &str, args: &[&str], needles: &[&str]) -> Value {
    let output = lcp_call(tool, args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{tool}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let result: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|err| panic!("{tool}: not one JSON ({err}): {stdout}"));
    assert_eq!(result["ok"], false, "{tool}: {result}");
    let error = result["error"].as_str().unwrap_or_default();
    for needle in needles {
        assert!(error.contains(needle), "{tool}: `{needle}` is not in {error:?}");
    }
    result
}

fn registry() -> Registry {
    Registry::load(&Sources { folders: vec![root().join(FOLDER)], files: vec![] }, &Options::default())
}

fn workers(count: usize) -> Runtime {
    workers_writing_in(count, &[])
}

/// [`workers`] that may write in `writable` too (`[sandbox] writable`).
fn workers_writing_in(count: usize, writable: &[&Path]) -> Runtime {
    let mut settings = WorkerSettings::new(env!("CARGO_BIN_EXE_lcp"));
    settings.workers = count;
    let sandbox = lcp::runtime::SandboxSettings {
        writable: writable.iter().map(|dir| dir.to_path_buf()).collect(),
        ..Default::default()
    };
    let config =
        RuntimeConfig { venv: None, isolation: Isolation::Workers(settings), sandbox, ..RuntimeConfig::default() };
    Runtime::new(config).expect("a runtime with worker processes")
}

fn pid(runtime: &Runtime, registry: &Registry) -> u32 {
    let result = runtime.call(registry, "tool_pid", &json!({}), &CallOptions::default());
    assert!(result.ok(), "{result:?}");
    result.output.as_u64().unwrap() as u32
}

/// `call` with a cancel flag and the path of a marker file the tool creates when it
/// starts: the flag is raised once the marker is there (an event, not a delay).
fn cancelled_once_started<T>(name: &str, call: impl FnOnce(&str, CallOptions) -> T) -> T {
    let cancel = Cancel::default();
    let cancelling = cancel.clone();
    let started = temp_dir(name).join("started");
    let marker = started.clone();
    let canceller = std::thread::spawn(move || {
        assert!(wait_for_file(&marker), "the tool never started");
        cancelling.cancel();
    });
    let outcome = call(started.to_str().unwrap(), CallOptions { cancel: Some(cancel), ..CallOptions::default() });
    canceller.join().unwrap();
    outcome
}

fn alive(pid: u32) -> bool {
    // A zombie is not alive: it ran to its end and waits to be reaped.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

#[test]
fn every_fault_a_tool_does_to_its_process_is_one_failed_call_naming_the_cause() {
    let exit = failed_call("tool_exit", &[], &["exited with status 3"]);
    assert_eq!(exit["stdout"], "before exit\n", "what it printed before dying is kept");
    let segfault = failed_call("tool_segfault", &[], &["SIGSEGV"]);
    assert_eq!(segfault["stdout"], "about to crash\n");
    failed_call("tool_abort", &[], &["SIGABRT"]);
    failed_call("tool_kill", &[], &["SIGKILL"]);
    failed_call("tool_fatal", &[], &["SIGABRT"]);
    failed_call("tool_allocate", &["--memory-limit", "256"], &["MemoryError", "memory", "256 MiB"]);
    failed_call("tool_close_streams", &[], &["closed its process's standard streams (fd 0, 1, 2)"]);
}

#[test]
fn in_process_a_tool_can_still_end_lcp_which_is_why_workers_are_the_default() {
    let output = lcp_call("tool_exit", &["--in-process"]);
    assert_eq!(output.status.code(), Some(3), "in-process, os._exit ends lcp itself");
    assert!(output.stdout.is_empty());
}

#[test]
fn a_timeout_ends_a_tool_blocked_in_c_holding_the_interpreter() {
    let result = failed_call(
        "tool_backtrack",
        &["--args", r#"{"length": 60}"#, "--timeout", "0.5"],
        &["timed out after 0.5 s", "lcp ended its worker process"],
    );
    assert_eq!(result["output"], Value::Null);
    failed_call("tool_sleep", &["--args", r#"{"seconds": 120}"#, "--timeout", "0.5"], &["timed out after 0.5 s"]);
}

#[test]
fn a_timeout_stops_pure_python_gently_without_ending_the_worker() {
    let (runtime, registry) = (workers(1), registry());
    let before = pid(&runtime, &registry);
    let options = CallOptions { timeout: Some(Duration::from_millis(300)), ..CallOptions::default() };
    let result = runtime.call(&registry, "tool_spin", &json!({}), &options);
    assert_eq!(result.error.as_deref(), Some("`tool_spin` timed out after 0.3 s and was stopped"), "{result:?}");
    assert_eq!(pid(&runtime, &registry), before, "the worker was not replaced");
}

#[test]
fn cancelling_a_call_blocked_in_c_ends_its_worker_and_the_next_call_gets_a_new_one() {
    let (runtime, registry) = (workers(1), registry());
    let before = pid(&runtime, &registry);
    // Cancelled once the tool is inside the backtracking, not after a guessed delay.
    let result = cancelled_once_started("cancel-blocked", |started, options| {
        runtime.call(&registry, "tool_backtrack", &json!({"length": 60, "started": started}), &options)
    });
    let error = result.error.as_deref().unwrap_or_default();
    assert!(error.contains("was cancelled") && error.contains("ended its worker process"), "{result:?}");
    assert!(!alive(before), "the worker running the cancelled call is gone");
    assert_ne!(pid(&runtime, &registry), before);
}

#[test]
fn a_worker_that_dies_while_the_user_is_asked_is_one_failed_call() {
    let (runtime, registry) = (workers(1), registry());
    runtime.set_confirm_handler(|request: &ConfirmRequest| {
        let worker: i32 = request.content.parse().expect("the tool names its process");
        // SAFETY: a signal to the worker process the tool runs in.
        unsafe { libc::kill(worker, libc::SIGKILL) };
        Confirmation::allow("the host said yes, too late")
    });
    let result = runtime.call(&registry, "tool_confirm_pid", &json!({}), &CallOptions::default());
    assert!(result.error.as_deref().unwrap_or_default().contains("SIGKILL"), "{result:?}");
    let answered = runtime.call(&registry, "tool_add", &json!({"a": 2}), &CallOptions::default());
    assert_eq!(answered.output, json!(4));
}

#[test]
fn a_confirmation_crosses_the_channel_with_the_calls_own_handler() {
    let (runtime, registry) = (workers(1), registry());
    runtime.set_confirm_handler(|_: &ConfirmRequest| Confirmation::reject("the runtime's handler"));
    let own: lcp::runtime::ConfirmHandler = Arc::new(|request: &ConfirmRequest| {
        assert_eq!(request.label, "pid");
        Confirmation::allow("the call's handler")
    });
    let options =
        CallOptions { callbacks: Callbacks { confirm: Some(own), ..Callbacks::default() }, ..CallOptions::default() };
    let result = runtime.call(&registry, "tool_confirm_pid", &json!({}), &options);
    assert_eq!(result.output, json!("allow"), "{result:?}");
    let result = runtime.call(&registry, "tool_confirm_pid", &json!({}), &CallOptions::default());
    assert_eq!(result.output, json!("reject"), "{result:?}");
}

#[test]
fn calls_for_different_workspaces_run_at_the_same_time_in_different_workers() {
    let scratch = temp_dir("isolation-workspaces");
    let shared = scratch.join("shared");
    // The two calls meet in a folder outside both workspaces, which they may write in.
    let (runtime, registry) = (Arc::new(workers_writing_in(2, &[&shared])), Arc::new(registry()));
    let (first, second) = (scratch.join("first"), scratch.join("second"));
    for dir in [&shared, &first, &second] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let meet = |workspace: &Path, me: &str, other: &str| {
        let (runtime, registry) = (Arc::clone(&runtime), Arc::clone(&registry));
        let args = json!({"shared": shared, "me": me, "other": other});
        let options = CallOptions { workspace: Some(workspace.to_path_buf()), ..CallOptions::default() };
        std::thread::spawn(move || runtime.call(&registry, "tool_rendezvous", &args, &options))
    };
    let a = meet(&first, "a", "b");
    let b = meet(&second, "b", "a");
    let (a, b): (ToolResult, ToolResult) = (a.join().unwrap(), b.join().unwrap());
    assert_eq!((a.output["met"].clone(), b.output["met"].clone()), (json!(true), json!(true)), "{a:?} {b:?}");
    assert_eq!(Path::new(a.output["cwd"].as_str().unwrap()), first.canonicalize().unwrap());
    assert_eq!(Path::new(b.output["cwd"].as_str().unwrap()), second.canonicalize().unwrap());
    assert_ne!(a.output["pid"], b.output["pid"]);
}

#[test]
fn a_changed_tool_file_is_imported_again_in_every_worker() {
    let scratch = temp_dir("isolation-rescan");
    let file = scratch.join("versioned.py");
    let write = |version: u32| {
        let code = format!(
            "import time\n\ndef tool_version(wait: float = 0.0) -> int:\n    \"\"\"The version.\"\"\"\n    time.sleep(wait)\n    return {version}\n"
        );
        std::fs::write(&file, code).unwrap();
    };
    write(1);
    let runtime = Arc::new(workers(2));
    let mut registry = Registry::load(&Sources { folders: vec![scratch.clone()], files: vec![] }, &Options::default());
    let both = |registry: &Registry| -> Vec<Value> {
        let registry = Arc::new(registry.clone());
        let calls: Vec<_> = (0..2)
            .map(|_| {
                let (runtime, registry) = (Arc::clone(&runtime), Arc::clone(&registry));
                std::thread::spawn(move || {
                    runtime.call(&registry, "tool_version", &json!({"wait": 0.5}), &CallOptions::default()).output
                })
            })
            .collect();
        calls.into_iter().map(|call| call.join().unwrap()).collect()
    };
    assert_eq!(both(&registry), [json!(1), json!(1)]);
    // A different size, so the rescan sees the change whatever the clock's grain.
    std::fs::write(&file, std::fs::read_to_string(&file).unwrap().replace("return 1", "return 22")).unwrap();
    let changes = runtime.rescan(&mut registry);
    assert_eq!(changes.changed.len(), 1);
    assert_eq!(both(&registry), [json!(22), json!(22)]);
}

#[test]
fn a_thread_that_ends_the_process_after_its_tool_returned_costs_at_most_the_call_running_then() {
    let (runtime, registry) = (workers(1), registry());
    let returned = runtime.call(&registry, "tool_exit_after_return", &json!({"delay": 1.0}), &CallOptions::default());
    assert_eq!(returned.output, json!("returned"));
    // Running when the thread ends the process: this call is the one that fails.
    let caught = runtime.call(&registry, "tool_sleep", &json!({"seconds": 10}), &CallOptions::default());
    assert!(caught.error.as_deref().unwrap_or_default().contains("exited with status 7"), "{caught:?}");
    let next = runtime.call(&registry, "tool_add", &json!({}), &CallOptions::default());
    assert_eq!(next.output, json!(3));
}

#[test]
fn dropping_the_runtime_ends_and_reaps_every_worker() {
    let (runtime, registry) = (workers(2), registry());
    let worker = pid(&runtime, &registry);
    assert!(alive(worker));
    drop(runtime);
    assert!(!alive(worker), "the worker was ended");
    assert!(children_of(std::process::id()).iter().all(|(child, _)| *child != worker), "and reaped");
}

#[cfg(feature = "external")]
#[test]
fn over_mcp_a_crashing_tool_is_an_error_result_and_the_session_goes_on() {
    let steps = json!([
        call("tool_exit", json!({})),
        call("tool_segfault", json!({})),
        call("tool_abort", json!({})),
        call("tool_kill", json!({})),
        call("tool_fatal", json!({})),
        call("tool_add", json!({"a": 40})),
    ]);
    let check = |results: &Value, how: &str| {
        for (index, cause) in ["exited with status 3", "SIGSEGV", "SIGABRT", "SIGKILL", "SIGABRT"].iter().enumerate() {
            assert_error(&results[index], &[cause]);
        }
        let printed = results[0]["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|block| block["text"] == "[the tool printed to stdout]\nbefore exit\n");
        assert!(printed, "{how}: what the tool printed before dying is kept: {}", results[0]);
        assert_ok(&results[5], json!({"result": 42}));
    };
    for mode in MODES {
        check(&session(mode, "none", &[FOLDER], steps.clone())["results"], mode);
    }
    let server = HttpServer::start(&[FOLDER]);
    for mode in MODES {
        check(&session(mode, "none", &["--url", &server.url], steps.clone())["results"], mode);
    }
}

#[cfg(feature = "external")]
#[test]
fn a_soak_of_concurrent_crashing_hanging_and_normal_calls_gets_one_answer_each_and_leaks_no_process() {
    let server = HttpServer::start(&[FOLDER, "--workers", "2", "--timeout", "1"]);
    let kinds = [
        call("tool_add", json!({"a": 1, "b": 1})),
        call("tool_exit", json!({})),
        call("tool_sleep", json!({"seconds": 30})),
        call("tool_segfault", json!({})),
        call("tool_backtrack", json!({"length": 60})),
        call("tool_add", json!({"a": 2, "b": 2})),
    ];
    let calls: Vec<Value> = (0..200).map(|index| kinds[index % kinds.len()].clone()).collect();
    let mut command = Command::new(test_python());
    command.arg(root().join("tests/python/mcp_client_soak.py")).arg(&server.url).current_dir(root());
    let output =
        output_within(&mut command, Value::Array(calls.clone()).to_string().as_bytes(), Duration::from_secs(600));
    assert!(output.status.success(), "the client failed: {}", String::from_utf8_lossy(&output.stderr));
    let results: Vec<Value> = serde_json::from_slice(&output.stdout).expect("one JSON list");
    assert_eq!(results.len(), calls.len());
    for (result, step) in results.iter().zip(&calls) {
        assert!(result.get("content").is_some(), "every call is answered with a result: {step} -> {result}");
        if step["call"] != "tool_add" {
            assert_eq!(result["isError"], true, "{step} -> {result}");
        }
    }
    // Crashes and timeouts never leave more workers than allowed, nor a zombie.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let children = loop {
        let children = children_of(server.child.id());
        let settled = children.len() <= 2 && children.iter().all(|(_, state)| *state != 'Z');
        if settled || std::time::Instant::now() > deadline {
            break children;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(children.len() <= 2, "{children:?}");
    assert!(children.iter().all(|(_, state)| *state != 'Z'), "{children:?}");
    // And the server still answers.
    let after = session("auto", "none", &["--url", &server.url], json!([call("tool_add", json!({"a": 5}))]));
    assert_ok(&after["results"][0], json!({"result": 7}));
}

#[cfg(feature = "external")]
#[test]
fn a_stopped_server_leaves_no_worker_behind() {
    let mut server = HttpServer::start(&[FOLDER, "--workers", "2"]);
    let report = session("auto", "none", &["--url", &server.url], json!([call("tool_pid", json!({}))]));
    let worker = report["results"][0]["structuredContent"]["result"].as_u64().expect("a pid") as u32;
    assert!(alive(worker));
    stop(&mut server.child);
    assert!(!alive(worker), "lcp serve ended its worker when it stopped");
}

#[test]
fn over_mcp_cancelling_a_call_blocked_in_c_ends_its_worker_and_the_server_goes_on() {
    let mut server = RawServer::start(&[FOLDER, "--workers", "1"]);
    server.initialize();
    let pid_of = |response: Value| {
        let pid = response["result"]["structuredContent"]["result"].as_u64();
        pid.unwrap_or_else(|| panic!("a pid: {response}")) as u32
    };
    server.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "tool_pid", "arguments": {}}}),
    );
    let before = pid_of(server.response(2));
    let started = temp_dir("mcp-cancel-blocked").join("started");
    server.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "tool_backtrack", "arguments": {"length": 60, "started": started.to_str().unwrap()}}}));
    assert!(wait_for_file(&started), "the tool never started");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}));
    // The call blocked in C is ended with its worker (a call sharing that worker
    // meanwhile would share its fate); then the next call gets a new worker.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while alive(before) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    server.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "tool_pid", "arguments": {}}}),
    );
    let after = pid_of(server.response(4));
    assert_ne!(after, before, "the next call runs in a new worker");
    assert!(!alive(before), "the worker blocked in C was ended");
    let stdout = server.finish();
    assert!(!stdout.contains("\"id\":3"), "the cancelled call was answered: {stdout}");
}

#[test]
fn under_lcp_serve_a_worker_stands_by_and_the_call_after_a_crash_runs_in_it() {
    let mut server = RawServer::start(&[FOLDER, "--workers", "2"]);
    server.initialize();
    let pid_of = |result: Value| {
        let pid = result["structuredContent"]["result"].as_u64();
        pid.unwrap_or_else(|| panic!("a pid: {result}")) as u32
    };
    let first = pid_of(server.call(2, "tool_pid"));
    // Once the first worker has taken a call, a second one is started to stand by.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let standing_by = loop {
        let children = children_of(server.pid());
        let others: Vec<u32> = children.iter().map(|&(pid, _)| pid).filter(|&pid| pid != first).collect();
        if let [other] = others[..] {
            break other;
        }
        assert!(std::time::Instant::now() < deadline, "no worker stood by: {children:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(server.call(3, "tool_exit")["isError"], true);
    // Whichever of the two the crash ended, the next call ran in the other one: a
    // worker started before the crash, not one it had to wait for.
    let after = pid_of(server.call(4, "tool_pid"));
    assert!([first, standing_by].contains(&after), "{after} is neither {first} nor {standing_by}");
    assert_eq!(children_of(server.pid()).iter().filter(|&&(pid, _)| pid == after).count(), 1);
    server.finish();
}

/// Calls `tool_version` from `count` threads at once (each waits a little, so every
/// worker takes one); the versions and worker process ids they saw.
fn versions_at_once(runtime: &Runtime, registry: &Registry, count: usize) -> Vec<(String, u64)> {
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..count)
            .map(|_| {
                scope.spawn(|| {
                    let result = runtime.call(registry, "tool_version", &json!({"wait": 0.4}), &CallOptions::default());
                    assert!(result.ok(), "{result:?}");
                    (result.output["version"].as_str().unwrap().to_string(), result.output["pid"].as_u64().unwrap())
                })
            })
            .collect();
        calls.into_iter().map(|call| call.join().unwrap()).collect()
    })
}

#[test]
fn a_catalog_rescan_that_changes_a_file_is_seen_by_the_next_call_in_every_worker() {
    let dir = temp_dir("worker-rescan");
    let version = |text: &str| {
        let code = format!(
            "import os, time\n\nVERSION = {text:?}\n\n\ndef tool_version(wait: float = 0.0) -> dict:\n    \"\"\"The version.\"\"\"\n    time.sleep(wait)\n    return {{\"version\": VERSION, \"pid\": os.getpid()}}\n"
        );
        write(&dir.join("version.py"), code);
    };
    version("one");
    let runtime = workers(2);
    let mut catalog = lcp::runtime::catalog::Catalog::load(
        &runtime,
        Sources { folders: vec![dir.clone()], files: vec![] },
        Options::default(),
    );
    let before = versions_at_once(&runtime, catalog.registry(), 4);
    let pids: std::collections::BTreeSet<u64> = before.iter().map(|(_, pid)| *pid).collect();
    assert_eq!(pids.len(), 2, "both workers loaded the module: {before:?}");
    assert!(before.iter().all(|(v, _)| v == "one"), "{before:?}");

    version("second, longer");
    assert_eq!(catalog.rescan().changed, [dir.join("version.py")]);
    let after = versions_at_once(&runtime, catalog.registry(), 4);
    let pids_after: std::collections::BTreeSet<u64> = after.iter().map(|(_, pid)| *pid).collect();
    assert_eq!(pids_after, pids, "the same workers answered: {after:?}");
    assert!(after.iter().all(|(v, _)| v == "second, longer"), "every worker reads the new file: {after:?}");
}

/// Every way a call ends is one `Outcome`, said where it is known: in Python
/// (returned, reported, raised, a value JSON cannot carry, out of memory), after it
/// (a value its annotation refuses), before any code runs
/// (refused), or by the supervisor (time limit, cancellation, memory, a death).
#[test]
fn every_way_a_call_ends_is_one_outcome_whatever_runs_it() {
    use lcp::runtime::Outcome;
    let dir = temp_dir("outcomes");
    let code = "def tool_value() -> int:\n    \"\"\"Returns.\"\"\"\n    return 1\n\n\
        def tool_reports() -> dict:\n    \"\"\"Reports a failure.\"\"\"\n    return {\"success\": False, \"error\": \"no data\"}\n\n\
        def tool_raises() -> int:\n    \"\"\"Raises.\"\"\"\n    raise ValueError(\"bad\")\n\n\
        def tool_breaks_its_annotation() -> int:\n    \"\"\"Returns text.\"\"\"\n    return \"text\"\n\n\
        def tool_returns_a_set() -> list:\n    \"\"\"Returns what JSON cannot carry.\"\"\"\n    return [float(\"nan\")]\n\n\
        def tool_out_of_memory() -> int:\n    \"\"\"Runs out of memory.\"\"\"\n    raise MemoryError()\n\n\
        def tool_waits(started: str) -> int:\n    \"\"\"Says it started, then waits in Python code.\"\"\"\n    import time\n    open(started, \"w\").close()\n    while True:\n        time.sleep(0.01)\n";
    write(&dir.join("ends.py"), code);
    let ends = Registry::load(&Sources { folders: vec![dir], files: vec![] }, &Options::default());
    let faults = registry();
    let mut settings = WorkerSettings::new(env!("CARGO_BIN_EXE_lcp"));
    settings.workers = 2;
    settings.memory_limit_mib = Some(256);
    let limited =
        Runtime::new(RuntimeConfig { venv: None, isolation: Isolation::Workers(settings), ..RuntimeConfig::default() })
            .unwrap();
    let in_process = Runtime::new(RuntimeConfig { venv: None, ..RuntimeConfig::default() }).unwrap();
    let plain = CallOptions::default();
    let short = CallOptions { timeout: Some(Duration::from_millis(300)), ..CallOptions::default() };
    for runtime in [&limited, &in_process] {
        let outcome = |registry: &Registry, tool: &str, args: Value, options: &CallOptions| {
            runtime.call(registry, tool, &args, options).outcome
        };
        assert_eq!(outcome(&ends, "tool_value", json!({}), &plain), Outcome::Returned);
        assert_eq!(outcome(&ends, "tool_reports", json!({}), &plain), Outcome::Reported);
        assert_eq!(outcome(&ends, "tool_raises", json!({}), &plain), Outcome::Raised);
        assert_eq!(outcome(&ends, "tool_breaks_its_annotation", json!({}), &plain), Outcome::Invalid);
        assert_eq!(outcome(&ends, "tool_returns_a_set", json!({}), &plain), Outcome::Invalid);
        assert_eq!(outcome(&ends, "tool_out_of_memory", json!({}), &plain), Outcome::OutOfMemory);
        assert_eq!(outcome(&ends, "tool_value", json!({"extra": 1}), &plain), Outcome::Refused);
        assert_eq!(outcome(&ends, "tool_missing", json!({}), &plain), Outcome::Refused);
        assert_eq!(outcome(&faults, "tool_spin", json!({}), &short), Outcome::TimedOut);
        // Cancelled while it runs, in a worker and in this process alike.
        let result = cancelled_once_started("outcome-waits", |started, options| {
            runtime.call(&ends, "tool_waits", &json!({"started": started}), &options)
        });
        assert_eq!(result.outcome, Outcome::Cancelled, "{result:?}");
        assert!(result.error.as_deref().unwrap_or_default().contains("`tool_waits` was cancelled"), "{result:?}");
    }
    let outcome = |tool: &str, args: Value, options: &CallOptions| limited.call(&faults, tool, &args, options).outcome;
    assert_eq!(outcome("tool_allocate", json!({"mib": 4096}), &plain), Outcome::OutOfMemory);
    assert_eq!(outcome("tool_segfault", json!({}), &plain), Outcome::Died);
    let cancelled = cancelled_once_started("outcome-cancel", |started, options| {
        outcome("tool_backtrack", json!({"length": 60, "started": started}), &options)
    });
    assert_eq!(cancelled, Outcome::Cancelled);
}

#[test]
fn lcp_serve_ends_a_worker_still_starting_when_it_ends() {
    use std::io::{BufRead, Write};
    let mark = "serve-ends-a-starting-worker";
    let mut child = Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["serve", FOLDER])
        .current_dir(root())
        .env("LCP_TEST_MARK", mark)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("lcp serve starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    let mut output = std::io::BufReader::new(child.stdout.take().expect("stdout is piped"));
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    writeln!(input, "{initialize}").expect("the request is written");
    let mut line = String::new();
    output.read_line(&mut line).expect("initialize is answered");
    // A moment after it began, lcp serve starts a worker ahead of the first call; the
    // session ends while that worker is still starting Python.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !marked_now(mark).iter().any(|process| process.contains("__worker")) {
        assert!(std::time::Instant::now() < deadline, "no worker was started ahead of the first call");
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(input);
    let status = child.wait().expect("lcp serve ends");
    assert!(status.success(), "{status}");
    assert_eq!(marked_now(mark), Vec::<String>::new(), "a worker outlived lcp serve");
}
