//! Many replicas of one service (SPEC §16): `lcp serve --http` replicas sharing a state
//! key and a Redis task store, behind nginx on loopback ports, the way a deployment
//! runs them. nginx and redis-server are Debian's, started and stopped by the tests.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::auth::{address_of, post_as};
use crate::mcp::HttpServer;
use crate::mcp_host::{CONFORMANCE, TASK_SCENARIOS, requirements_pass_at, scenarios_pass_at};
use crate::support::{debian_program, listening_on_free_port, processes_marked, stop, temp_dir};

/// A `redis-server` on a loopback port, keeping nothing on disk; stopped when dropped.
pub(crate) struct Redis {
    child: Child,
    pub(crate) url: String,
}

impl Redis {
    pub(crate) fn start() -> Redis {
        let program = debian_program("redis-server");
        let dir = temp_dir("redis");
        let (child, port) = listening_on_free_port("redis-server", |port| {
            Command::new(&program)
                .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server starts")
        });
        Redis { child, url: format!("redis://127.0.0.1:{port}") }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// nginx on a loopback port in front of `upstreams` (`host:port`): round robin for the
/// session-less requests of 2026-07-28, a session's requests kept on one replica by
/// their `Mcp-Session-Id`; the configuration README's deployment section shows.
pub(crate) struct Balancer {
    child: Child,
    pub(crate) url: String,
}

impl Balancer {
    pub(crate) fn start(upstreams: &[&str]) -> Balancer {
        let program = debian_program("nginx");
        let dir = temp_dir("nginx");
        let servers: String = upstreams.iter().map(|upstream| format!("    server {upstream};\n")).collect();
        let dir_name = dir.display();
        let (child, port) = listening_on_free_port("nginx", |port| {
            let config = format!(
                "daemon off;\nmaster_process off;\npid {dir_name}/nginx.pid;\nerror_log {dir_name}/error.log warn;\n\
                 events {{ worker_connections 1024; }}\n\
                 http {{\n  access_log off;\n  client_body_temp_path {dir_name}/body;\n  proxy_temp_path {dir_name}/proxy;\n\
                 {}\n  server {{\n    listen 127.0.0.1:{port};\n    location /mcp {{\n{}    }}\n  }}\n}}\n",
                UPSTREAM.replace("SERVERS\n", &servers),
                LOCATION,
            );
            let path = dir.join("nginx.conf");
            std::fs::write(&path, config).unwrap();
            Command::new(&program)
                .arg("-p")
                .arg(&dir)
                .arg("-c")
                .arg(&path)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("nginx starts")
        });
        Balancer { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// The `upstream` block of the nginx configuration in docs/serve.md (`SERVERS` stands for the
/// replicas' `server` lines).
const UPSTREAM: &str = "upstream lcp {\n    hash $http_mcp_session_id consistent;\nSERVERS\n    keepalive 64;\n  }";

/// The proxying of the nginx configuration in docs/serve.md: HTTP/1.1 kept alive to the replicas,
/// nothing buffered (an SSE stream must reach the client as it is written).
const LOCATION: &str = "      proxy_pass http://lcp;\n      proxy_http_version 1.1;\n      \
     proxy_set_header Connection \"\";\n      proxy_set_header Host $http_host;\n      \
     proxy_buffering off;\n      proxy_request_buffering off;\n      proxy_read_timeout 1h;\n";

/// Two replicas of the conformance fixture sharing a state key and `store`, each
/// marked `mark` (to count what is left of them).
fn replicas(store: &str, mark: &str) -> [HttpServer; 2] {
    let env = [("LCP_STATE_KEY", "the key every replica of the service shares"), ("LCP_TASK_STORE", store)];
    let env = [env[0], env[1], ("LCP_TEST_MARK", mark)];
    [
        HttpServer::start_with("127.0.0.1:0", &CONFORMANCE, &env),
        HttpServer::start_with("127.0.0.1:0", &CONFORMANCE, &env),
    ]
}

/// A session-less 2026-07-28 request from a client that takes tasks and elicitation.
fn send(url: &str, id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let name = params["name"].as_str().or(params["taskId"].as_str()).map(str::to_string);
    let mut headers = vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];
    if let Some(name) = &name {
        headers.push(("mcp-name", name));
    }
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let (status, _, answer) = post_as(&headers, url, None, None, message);
    assert_eq!(status, 200, "{method} to {url}: {answer}");
    answer
}

/// `tasks/get` at `url` until the task has ended (bounded by `limit`).
fn settled(url: &str, task: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let got = send(url, 90, "tasks/get", json!({"taskId": task}))["result"].clone();
        let ended = ["completed", "failed", "cancelled"].iter().any(|status| got["status"] == *status);
        if ended || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_latest_conformance_suite_passes_through_nginx_in_front_of_two_replicas() {
    let redis = Redis::start();
    let [first, second] = replicas(&redis.url, "replicas-conformance");
    let balancer = Balancer::start(&[&address_of(&first.url), &address_of(&second.url)]);
    requirements_pass_at(
        &balancer.url,
        "2026-07-28",
        &["server-stateless", "input-required-result-multi-round", "input-required-result-multiple-input-requests"],
    );
    scenarios_pass_at(&balancer.url, &TASK_SCENARIOS);
}

#[test]
fn a_task_created_on_one_replica_is_answered_for_by_the_other() {
    let redis = Redis::start();
    let [first, second] = replicas(&redis.url, "replicas-task");
    let created =
        send(&first.url, 1, "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "a.txt"}}));
    let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_string();

    // The other replica sees it, asking what the tool asked.
    let deadline = Instant::now() + Duration::from_secs(30);
    let asked = loop {
        let got = send(&second.url, 2, "tasks/get", json!({"taskId": task}))["result"].clone();
        if got["status"] == "input_required" || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(asked["status"], "input_required", "{asked}");
    let key = asked["inputRequests"].as_object().and_then(|requests| requests.keys().next().cloned()).expect("a key");

    // The answer goes to the other replica too; the first, which runs the task, gets it.
    let answer = json!({key: {"action": "accept", "content": {"confirm": true}}});
    let updated = send(&second.url, 3, "tasks/update", json!({"taskId": task, "inputResponses": answer}));
    assert!(updated.get("error").is_none(), "{updated}");
    let done = settled(&second.url, &task, Duration::from_secs(30));
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["result"]["content"][0]["text"].as_str().unwrap_or_default().contains("deleted a.txt"), "{done}");

    // Without the shared store a replica knows only its own tasks.
    let alone = HttpServer::start(&CONFORMANCE);
    let unknown = send(&alone.url, 4, "tasks/get", json!({"taskId": task}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[test]
fn the_rounds_of_one_call_may_land_on_different_replicas_over_http() {
    let redis = Redis::start();
    let [first, second] = replicas(&redis.url, "replicas-rounds");
    let call = |url: &str, id: u64, extra: Value| {
        let mut params = json!({"name": "test_input_required_result_multi_round", "arguments": {}});
        for (key, value) in extra.as_object().into_iter().flatten() {
            params[key] = value.clone();
        }
        send(url, id, "tools/call", params)["result"].clone()
    };
    let round1 = call(&first.url, 1, json!({}));
    assert!(round1["inputRequests"]["step1"].is_object(), "{round1}");
    let step1 = json!({"step1": {"action": "accept", "content": {"name": "Ada"}}});
    let round2 = call(&second.url, 2, json!({"requestState": round1["requestState"], "inputResponses": step1}));
    assert!(round2["inputRequests"]["step2"].is_object(), "{round2}");
    let step2 = json!({"step2": {"action": "accept", "content": {"color": "blue"}}});
    let done = call(&first.url, 3, json!({"requestState": round2["requestState"], "inputResponses": step2}));
    assert_eq!(done["content"][0]["text"], "Ada likes blue", "{done}");
}

#[test]
fn a_killed_replica_leaves_the_other_answering_and_its_tasks_failed_with_the_reason() {
    let mark = "replicas-killed";
    let redis = Redis::start();
    let [first, second] = replicas(&redis.url, mark);
    let balancer = Balancer::start(&[&address_of(&first.url), &address_of(&second.url)]);
    let created =
        send(&first.url, 1, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 600, "label": "x"}}));
    let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_string();
    assert_eq!(send(&balancer.url, 2, "tasks/get", json!({"taskId": task}))["result"]["status"], "working");

    // SAFETY: a signal to a child this test started and has not waited for (its drop does).
    unsafe { libc::kill(first.child.id() as libc::pid_t, libc::SIGKILL) };
    for id in 10..20 {
        let answer = send(&balancer.url, id, "tools/call", json!({"name": "greet", "arguments": {"name": "Ada"}}));
        assert_eq!(answer["result"]["content"][0]["text"], "Hello, Ada!", "call {id} through nginx: {answer}");
    }
    let failed = settled(&balancer.url, &task, Duration::from_secs(40));
    assert_eq!(failed["status"], "failed", "{failed}");
    let said = failed.to_string();
    assert!(said.contains("replica that ran this task stopped"), "{said}");

    drop(balancer);
    drop(second);
    drop(redis);
    assert_eq!(processes_marked(mark), Vec::<String>::new(), "processes of the replicas left running");
}

/// The notifications a `subscriptions/listen` stream at `url` naming `tasks` is sent
/// (its acknowledgement first), read until `enough` holds for one or `limit` passes.
fn task_notifications(url: &str, tasks: &[&str], limit: Duration, enough: impl Fn(&Value) -> bool) -> Vec<Value> {
    use std::io::{Read, Write};
    let address = address_of(url);
    let body = json!({"jsonrpc": "2.0", "id": 70, "method": "subscriptions/listen", "params": {
        "notifications": {"taskIds": tasks},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: subscriptions/listen\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(&address).expect("the balancer or replica accepts connections");
    stream.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let deadline = Instant::now() + limit;
    let mut received = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(_) => {}
        }
        let told = notifications_in(&received);
        if told.iter().any(&enough) || Instant::now() > deadline {
            return told;
        }
    }
    notifications_in(&received)
}

/// The notifications in a response read so far (its body chunked or not).
fn notifications_in(response: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(response);
    let Some((head, mut rest)) = text.split_once("\r\n\r\n") else { return Vec::new() };
    let mut body = String::new();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        while let Some((size, after)) = rest.split_once("\r\n") {
            let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
            if size == 0 || after.len() < size {
                break;
            }
            body.push_str(&after[..size]);
            rest = after[size..].strip_prefix("\r\n").unwrap_or(&after[size..]);
        }
    } else {
        body.push_str(rest);
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .filter(|message| message["method"].as_str().is_some_and(|method| method.starts_with("notifications/")))
        .collect()
}

#[test]
fn a_tasks_status_notifications_reach_its_client_whichever_replica_runs_it() {
    let redis = Redis::start();
    let [first, second] = replicas(&redis.url, "replicas-notifications");
    let balancer = Balancer::start(&[&address_of(&first.url), &address_of(&second.url)]);
    let create = |url: &str, label: &str| {
        let arguments = json!({"seconds": 1.5, "label": label});
        let created = send(url, 1, "tools/call", json!({"name": "slow_compute", "arguments": arguments}));
        created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_string()
    };
    // Run on one replica, listened for on the other (both ways), and through nginx,
    // whose round robin sends the call and the stream where it likes.
    let runs = [
        (first.url.clone(), second.url.clone()),
        (second.url.clone(), first.url.clone()),
        (balancer.url.clone(), balancer.url.clone()),
        (balancer.url.clone(), balancer.url.clone()),
    ];
    for (at, (runs_on, listened_on)) in runs.iter().enumerate() {
        let task = create(runs_on, &format!("run {at}"));
        let completed = |told: &Value| told["params"]["taskId"] == task && told["params"]["status"] == "completed";
        let told = task_notifications(listened_on, &[&task], Duration::from_secs(30), completed);
        let last = told
            .iter()
            .find(|told| completed(told))
            .unwrap_or_else(|| panic!("run {at}: no `completed` for {task} on the stream at {listened_on}: {told:?}"));
        let params = &last["params"];
        assert_eq!(params["result"]["content"][0]["text"], format!("computed run {at} in 1.5s"), "{last}");
        // The acknowledgement comes first and says which tasks the stream is told of.
        assert_eq!(told[0]["method"], "notifications/subscriptions/acknowledged", "{told:?}");
        assert_eq!(told[0]["params"]["notifications"]["taskIds"], json!([task]), "{told:?}");
        assert!(last["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].is_number(), "{last}");
        // The stream was open while the task ran: it heard the change, not only a state.
        assert!(told.iter().any(|told| told["params"]["status"] == "working"), "run {at}: {told:?}");
    }

    // A stream names only its own tasks: another task's changes are not sent on it.
    let mine = create(&first.url, "mine");
    let other = create(&second.url, "other");
    let told = task_notifications(&second.url, &[&mine], Duration::from_secs(30), |told| {
        told["params"]["taskId"] == mine && told["params"]["status"] == "completed"
    });
    let tasks: Vec<&Value> = told.iter().filter(|told| told["method"] == "notifications/tasks").collect();
    assert!(!tasks.is_empty() && tasks.iter().all(|told| told["params"]["taskId"] == mine), "{other}: {told:?}");

    // A task id that is no task of the caller's is not honoured, and nothing is told of it.
    let told = task_notifications(&first.url, &["task-nobody-made"], Duration::from_secs(1), |_| false);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["params"]["notifications"]["taskIds"], json!([]), "{told:?}");
}
