//! Section 9: `lcp serve --http` replicas behind nginx, tasks in Redis (SPEC §16).
//! Throughput of `tools/call` with 32 concurrent session-less clients through nginx
//! to one replica against two, each client on its own keep-alive connection, the
//! rounds interleaved: a CPU-bound tool (a Python loop) on replicas of one worker each (a replica's
//! workers are its capacity, as a machine's cores are; this machine has too few cores
//! for replicas of more), and a trivial tool on replicas with every core's worker;
//! and `tasks/get` of a running task through the Redis store against the memory store. nginx and redis-server are Debian's (`apt-get install
//! nginx-light redis-server`); without them the section says so and measures nothing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::measure::{Samples, seconds};
use crate::serve::{Client, HttpServer, message};
use crate::table::{Table, ratio, verdict};

/// Concurrent clients of the throughput rows.
const CLIENTS: usize = 32;
/// The CPU-bound tool's loop: about 10 ms of Python.
const CRUNCH: u64 = 200_000;

const TOOLS: &str = "import time\n\n\
def tool_crunch(n: int) -> int:\n    \"\"\"Sums the squares below `n`, in Python.\"\"\"\n    \
total = 0\n    for i in range(n):\n        total += i * i\n    return total\n\n\
def tool_add(a: int, b: int) -> int:\n    \"\"\"Adds two numbers.\"\"\"\n    return a + b\n\n\
TOOL_POLICIES = {\"tool_slow\": {\"task\": \"optional\"}}\n\n\
def tool_slow(seconds: float = 600) -> str:\n    \"\"\"Runs long, as a task.\"\"\"\n    \
time.sleep(seconds)\n    return \"done\"\n";

/// A child stopped (SIGTERM, then waited for) when dropped.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        // SAFETY: a signal to our own child, which is not reaped yet.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

fn program(name: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/usr/bin"].iter().map(|dir| Path::new(dir).join(name)).find(|path| path.exists())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a port").port()
}

fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on port {port} after 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn redis(program: &Path, dir: &Path) -> (Stopped, String) {
    let port = free_port();
    let child = Command::new(program)
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server starts");
    wait_for_port(port);
    (Stopped(child), format!("redis://127.0.0.1:{port}"))
}

/// nginx in front of `upstreams`, configured as docs/serve.md shows; its `host:port`.
fn nginx(program: &Path, dir: &Path, upstreams: &[&str]) -> (Stopped, String) {
    let port = free_port();
    let servers: String = upstreams.iter().map(|upstream| format!("    server {upstream};\n")).collect();
    let d = dir.display();
    let config = format!(
        "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log error;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
         upstream lcp {{\n    hash $http_mcp_session_id consistent;\n{servers}    keepalive 64;\n  }}\n\
         server {{\n    listen 127.0.0.1:{port};\n    location /mcp {{\n      proxy_pass http://lcp;\n\
         proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n      proxy_set_header Host $http_host;\n\
         proxy_buffering off;\n      proxy_request_buffering off;\n      proxy_read_timeout 1h;\n    }}\n  }}\n}}\n"
    );
    let path = dir.join(format!("nginx-{port}.conf"));
    std::fs::write(&path, config).expect("nginx's config is writable");
    let child = Command::new(program)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts");
    wait_for_port(port);
    (Stopped(child), format!("127.0.0.1:{port}"))
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments, "_meta": meta()}})
}

/// Calls a second through `address` by `CLIENTS` clients over `for_secs`.
fn throughput(address: &str, request: &Value, expected: &Value, for_secs: f64) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (stop, done, address, request, expected) =
                (Arc::clone(&stop), Arc::clone(&done), address.to_string(), request.clone(), expected.clone());
            std::thread::spawn(move || {
                let mut client = Client::session_less(&address);
                while !stop.load(Ordering::Relaxed) {
                    let answer = message(&client.request(&request));
                    assert_eq!(answer["result"]["structuredContent"]["result"], expected, "{answer}");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    // Every client connected and warm before counting.
    std::thread::sleep(Duration::from_millis(300));
    let start = (Instant::now(), done.load(Ordering::Relaxed));
    std::thread::sleep(Duration::from_secs_f64(for_secs));
    let counted = done.load(Ordering::Relaxed) - start.1;
    let elapsed = start.0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    threads.into_iter().for_each(|thread| thread.join().expect("a client thread"));
    counted as f64 / elapsed
}

pub fn rows(table: &mut Table, lcp: &Path, scratch: &Path, quick: bool) {
    table.section("9. replicas behind nginx, tasks in Redis");
    let (Some(nginx_program), Some(redis_program)) = (program("nginx"), program("redis-server")) else {
        table.text("  not measured: needs nginx and redis-server (apt-get install nginx-light redis-server)");
        return;
    };
    eprintln!("replicas behind nginx ...");
    let dir = scratch.join("replicas");
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).expect("the replicas' folder is creatable");
    std::fs::write(tools.join("bench.py"), TOOLS).expect("the tools are writable");
    let (_redis, store) = redis(&redis_program, &dir);
    let env = [("LCP_STATE_KEY", "the key the replicas of the bench share"), ("LCP_TASK_STORE", store.as_str())];
    let tools_arg = [tools.as_os_str()];
    let one_worker = [tools.as_os_str(), "--workers".as_ref(), "1".as_ref()];
    let replica = |args: &[&std::ffi::OsStr]| HttpServer::start_in(lcp, args, &env);
    let (first, second) = (replica(&tools_arg), replica(&tools_arg));
    let (small_first, small_second) = (replica(&one_worker), replica(&one_worker));
    let (_one, via_one) = nginx(&nginx_program, &dir, &[&first.address]);
    let (_two, via_two) = nginx(&nginx_program, &dir, &[&first.address, &second.address]);
    let (_small_one, via_small_one) = nginx(&nginx_program, &dir, &[&small_first.address]);
    let (_small_two, via_small_two) = nginx(&nginx_program, &dir, &[&small_first.address, &small_second.address]);

    let (rounds, for_secs) = if quick { (2, 2.0) } else { (5, 5.0) };
    let crunch = call("tool_crunch", json!({"n": CRUNCH}));
    let crunched = json!((0..CRUNCH).map(|i| i * i).sum::<u64>());
    let add = call("tool_add", json!({"a": 1, "b": 2}));
    let (mut crunch_one, mut crunch_two, mut add_one, mut add_two) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        crunch_one.push(throughput(&via_small_one, &crunch, &crunched, for_secs));
        crunch_two.push(throughput(&via_small_two, &crunch, &crunched, for_secs));
        add_one.push(throughput(&via_one, &add, &json!(3), for_secs));
        add_two.push(throughput(&via_two, &add, &json!(3), for_secs));
    }
    let [crunch_one, crunch_two, add_one, add_two] = [crunch_one, crunch_two, add_one, add_two].map(Samples);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    table.rate(
        &format!("CPU-bound tools/call (200,000 Python steps), {CLIENTS} clients, nginx -> 1 replica of 1 worker"),
        &crunch_one,
        "",
        "",
    );
    table.rate(
        "the same, nginx -> 2 replicas of 1 worker (the workers are the limit)",
        &crunch_two,
        &format!("{} of 1 replica", ratio(crunch_two.median(), crunch_one.median())),
        &verdict(crunch_two.median() >= 1.8 * crunch_one.median(), ">= 1.8x one replica"),
    );
    table.rate(&format!("trivial tools/call, {CLIENTS} clients, nginx -> 1 replica"), &add_one, "", "");
    table.rate(
        &format!("the same, nginx -> 2 replicas (CPU-bound: both share this machine's {cores} cores)"),
        &add_two,
        &format!("{} of 1 replica", ratio(add_two.median(), add_one.median())),
        "",
    );

    // tasks/get of a running task, through Redis and through a memory store.
    let memory = HttpServer::start_in(lcp, &[tools.as_os_str()], &[]);
    let gets = if quick { 200 } else { 1000 };
    let timed = |address: &str| {
        let mut client = Client::session_less(address);
        let created = message(&client.request(&call("tool_slow", json!({"seconds": 600}))));
        let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_string();
        let get =
            json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": task, "_meta": meta()}});
        let check = |body: &[u8]| {
            let answer = message(body);
            assert_eq!(answer["result"]["status"], "working", "{answer}");
        };
        let samples = Samples((0..gets).map(|_| seconds(|| check(&client.request(&get)))).collect());
        let cancel =
            json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"taskId": task, "_meta": meta()}});
        client.request(&cancel);
        samples
    };
    let in_memory = timed(&memory.address);
    let through_redis = timed(&second.address);
    drop((small_first, small_second));
    table.time("tasks/get of a running task, memory store (loopback HTTP)", &in_memory, "", "");
    table.time(
        "tasks/get of a running task, Redis store (loopback HTTP, loopback Redis)",
        &through_redis,
        &format!("{} of the memory store", ratio(through_redis.median(), in_memory.median())),
        &verdict(through_redis.median() < 2e-3, "median < 2 ms"),
    );
}
