//! Section 8: `lcp serve` on the large corpus. The whole `tools/list` through
//! `lcp serve --http`, timed by a raw HTTP/1.1 client on loopback (request written
//! to last byte read, one keep-alive connection, a `initialize` session); how long a
//! file dropped into a served folder takes to be announced by `list_changed` (stdio);
//! and the CPU an idle server uses, from `/proc/PID/stat`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::measure::{Samples, seconds};
use crate::table::{Table, duration, ratio, verdict};

/// `lcp serve --http 127.0.0.1:0 FOLDER`, with the address it bound.
pub(crate) struct HttpServer {
    child: Child,
    pub(crate) address: String,
}

impl HttpServer {
    fn start(lcp: &Path, folder: &Path) -> HttpServer {
        HttpServer::start_with(lcp, &[folder.as_os_str()])
    }

    /// `lcp serve --http 127.0.0.1:0 ARGS`.
    fn start_with(lcp: &Path, args: &[&std::ffi::OsStr]) -> HttpServer {
        HttpServer::start_in(lcp, args, &[])
    }

    /// `lcp serve --http 127.0.0.1:0 ARGS` with `env` added to its environment.
    pub(crate) fn start_in(lcp: &Path, args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> HttpServer {
        let mut command = Command::new(lcp);
        command.args(["serve", "--http", "127.0.0.1:0"]).args(args).envs(env.iter().copied());
        HttpServer::listening(command, "lcp: serving MCP at http://")
    }

    /// A server started by `command` on a port of its choosing, which it names on a line
    /// of its stderr after `announce` (`host:port`, then anything).
    fn listening(mut command: Command, announce: &str) -> HttpServer {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"));
        let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let mut line = String::new();
        let address = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).expect("the server writes stderr") > 0, "{command:?} ended");
            if let Some((_, said)) = line.split_once(announce) {
                let end =
                    said.find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == ':')).unwrap_or(said.len());
                break said[..end].to_string();
            }
        };
        // Drained, so that the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServer { child, address }
    }

    /// CPU time (user + system) the server process has used, in seconds, threads
    /// that ended included (`/proc/PID/stat`, in clock ticks of 10 ms).
    fn cpu(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).expect("/proc/PID/stat");
        // The fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat.rsplit_once(')').expect("a stat line").1.split_whitespace().collect();
        let ticks: f64 = fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
        // SAFETY: sysconf only reads a constant of the system.
        ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        // SAFETY: a signal to our own child, which is not reaped yet.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// One keep-alive connection speaking MCP's Streamable HTTP: session mode, or the
/// session-less protocol of 2026-07-28.
pub(crate) struct Client {
    stream: BufReader<TcpStream>,
    address: String,
    session: Option<String>,
    session_less: bool,
}

impl Client {
    /// A connection for session-less requests: no `initialize`, each request names its
    /// protocol version, method and name in headers (see [`Client::request`]).
    pub(crate) fn session_less(address: &str) -> Client {
        let stream = TcpStream::connect(address).expect("the server accepts");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        Client {
            stream: BufReader::with_capacity(1 << 20, stream),
            address: address.into(),
            session: None,
            session_less: true,
        }
    }

    fn connect(address: &str) -> Client {
        let stream = TcpStream::connect(address).expect("lcp serve --http accepts");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        let mut client = Client {
            stream: BufReader::with_capacity(1 << 20, stream),
            address: address.into(),
            session: None,
            session_less: false,
        };
        let init = client.request(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "lcp-bench", "version": "1"}},
        }));
        assert!(client.session.is_some(), "initialize opens a session");
        assert!(message(&init)["result"].is_object(), "initialize answered");
        client.request(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    /// POSTs `body` and returns the whole response body. Session-less, the body's
    /// `params._meta` should carry its protocol version; the headers are added here.
    pub(crate) fn request(&mut self, message: &Value) -> Vec<u8> {
        let body = serde_json::to_vec(message).expect("JSON");
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.address,
            body.len()
        );
        if let Some(session) = &self.session {
            head.push_str(&format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n"));
        }
        if self.session_less {
            let method = message["method"].as_str().unwrap_or_default();
            head.push_str(&format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n"));
            let params = &message["params"];
            if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
                head.push_str(&format!("Mcp-Name: {name}\r\n"));
            }
        }
        head.push_str("\r\n");
        let stream = self.stream.get_mut();
        stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body)).expect("request written");
        self.response()
    }

    fn response(&mut self) -> Vec<u8> {
        let (mut length, mut chunked) = (None, false);
        let mut line = String::new();
        self.stream.read_line(&mut line).expect("status line");
        assert!(line.starts_with("HTTP/1.1 2"), "lcp serve answers: {line}");
        loop {
            line.clear();
            self.stream.read_line(&mut line).expect("header line");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').expect("a header");
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = Some(value.trim().parse::<usize>().expect("a length")),
                "transfer-encoding" => chunked = value.trim().eq_ignore_ascii_case("chunked"),
                "mcp-session-id" => self.session = Some(value.trim().to_string()),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.stream.read_line(&mut line).expect("chunk size");
                let size = usize::from_str_radix(line.trim(), 16).expect("a chunk size");
                let start = body.len();
                body.resize(start + size + 2, 0);
                self.stream.read_exact(&mut body[start..]).expect("chunk");
                body.truncate(start + size);
                if size == 0 {
                    return body;
                }
            }
        }
        body.resize(length.unwrap_or(0), 0);
        self.stream.read_exact(&mut body).expect("body");
        body
    }
}

/// The JSON-RPC message of a response body: JSON, or the `data:` of its SSE event.
pub(crate) fn message(body: &[u8]) -> Value {
    let text = std::str::from_utf8(body).expect("UTF-8 body");
    // An SSE stream may open with a priming event, whose data is empty.
    let data = text.lines().filter_map(|line| line.strip_prefix("data:")).find(|data| !data.trim().is_empty());
    let data = data.unwrap_or(text);
    serde_json::from_str(data).expect("a JSON-RPC message")
}

pub fn rows(table: &mut Table, lcp: &Path, folder: &Path, tools: usize, quick: bool) {
    eprintln!("lcp serve ...");
    // The whole list: tool search, on by default above 200 tools (SPEC §21), off.
    let config = folder.with_extension("list-all.toml");
    std::fs::write(&config, "[mcp]\ntool_search = false\n").expect("the bench's config is writable");
    let server = HttpServer::start_with(lcp, &["--config".as_ref(), config.as_os_str(), folder.as_os_str()]);
    let mut client = Client::connect(&server.address);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let first = Instant::now();
    let body = client.request(&list);
    let first = first.elapsed().as_secs_f64();
    let listed = message(&body);
    assert_eq!(listed["result"]["tools"].as_array().map(Vec::len), Some(tools), "tools/list lists every tool");
    let size = body.len();
    // The same server with the splice off (the list answered as rmcp's own tools), in
    // the same rounds.
    let args = ["--config".as_ref(), config.as_os_str(), folder.as_os_str()];
    let general = HttpServer::start_in(lcp, &args, &[(lcp::fast_paths::VARIABLE, "splice")]);
    let mut general_client = Client::connect(&general.address);
    let general_size = general_client.request(&list).len();
    assert!(general_size.abs_diff(size) < 64, "the list with the splice off is the same list");
    let lists = if quick { 20 } else { 100 };
    let (mut spliced, mut built) = (Vec::with_capacity(lists), Vec::with_capacity(lists));
    for _ in 0..lists {
        // The SSE event id differs from list to list, the list does not.
        spliced
            .push(seconds(|| assert!(client.request(&list).len().abs_diff(size) < 64, "every list is the whole list")));
        built.push(seconds(|| assert!(general_client.request(&list).len().abs_diff(size) < 64, "the whole list")));
    }
    let (times, built) = (Samples(spliced), Samples(built));
    drop((client, general_client, general));

    // Idle: nothing asked, nothing changing.
    std::thread::sleep(Duration::from_secs(1));
    // Ticks are 10 ms: over 30 s, one tick is 0.033% of a core.
    let idle_for = if quick { 10.0 } else { 30.0 };
    let before = server.cpu();
    std::thread::sleep(Duration::from_secs_f64(idle_for));
    let idle = (server.cpu() - before) / idle_for;
    drop(server);

    let drops = if quick { 3 } else { 10 };
    let announced = Samples((0..drops).map(|_| drop_to_list_changed(lcp, folder)).collect());

    table.section("8. lcp serve, 2,000 libraries / 10,000 tools");
    table.time(
        &format!("tools/list over HTTP, whole list ({:.1} MiB), loopback client", size as f64 / (1024.0 * 1024.0)),
        &times,
        &format!("first list (builds it) {}", duration(first)),
        &verdict(times.median() < 25e-3, "median < 25 ms"),
    );
    table.time(
        "  the same, splice off (LCP_SLOW_PATHS=splice: rmcp's own tools)",
        &built,
        &format!("{} the spliced list", ratio(built.median(), times.median())),
        &verdict(built.median() >= 1.1 * times.median(), "splice gains >= 10%"),
    );
    table.time(
        "file dropped into the served folder -> list_changed (stdio)",
        &announced,
        "",
        &verdict(announced.max() < 1.0, "every one < 1 s"),
    );
    table.text(format!(
        "  idle lcp serve --http over {idle_for:.0} s, after the lists: {:.3}% of a core ({} CPU a second; 10 ms ticks)",
        idle * 100.0,
        duration(idle)
    ));
    table.time(
        "idle lcp serve, CPU per second of wall time",
        &Samples(vec![idle]),
        &format!("{} of the 0.1% target", ratio(idle, 1e-3)),
        &verdict(idle < 1e-3, "< 0.1% of a core"),
    );
}

/// A `tools/call` forwarded by `lcp serve` to an MCP server it gathers tools from
/// (SPEC §14), against the same call made to that server directly: both servers are
/// `lcp serve --http` on loopback, the upstream over `fixtures/mcp/results`, the
/// gateway with it as `[mcp_servers.inner]` and no tools of its own; and FastMCP 4.2.3's
/// proxy (`create_proxy`, what `FastMCP.as_proxy` became) of the same upstream, one
/// call in ten (it takes tens of milliseconds), when `fastmcp` (its venv's Python) is given.
pub fn forwarded_rows(table: &mut Table, lcp: &Path, root: &Path, scratch: &Path, fastmcp: Option<&Path>, quick: bool) {
    eprintln!("lcp serve as a gateway ...");
    let upstream = HttpServer::start(lcp, &root.join("fixtures/mcp/results"));
    let config = scratch.join("gateway.toml");
    let empty = scratch.join("gateway-tools");
    std::fs::create_dir_all(&empty).expect("the gateway's tool folder is creatable");
    let table_text = format!(
        "[mcp_servers.inner]\ntransport = \"http\"\nurl = \"http://{}/mcp\"\nprefix = \"inner_\"\n",
        upstream.address
    );
    std::fs::write(&config, table_text).expect("the gateway's config is writable");
    let gateway_args = ["--config".as_ref(), config.as_os_str(), empty.as_os_str()];
    let gateway = HttpServer::start_with(lcp, &gateway_args);
    let proxy = fastmcp.map(|python| {
        let mut command = Command::new(python);
        command.args(["-c", FASTMCP_PROXY, &format!("http://{}/mcp", upstream.address)]);
        HttpServer::listening(command, "Uvicorn running on http://")
    });
    let mut proxy_client = proxy.as_ref().map(|proxy| Client::connect(&proxy.address));
    let calls = if quick { 200 } else { 2000 };
    let call = |tool: &str| json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {"a": 1, "b": 2}}});
    let (direct_call, forwarded_call) = (call("tool_add"), call("inner_tool_add"));
    let check = |body: &[u8]| {
        let answer = message(body);
        assert_eq!(answer["result"]["structuredContent"], json!({"result": 3}), "{answer}");
    };
    let (mut direct_client, mut forwarded_client) =
        (Client::connect(&upstream.address), Client::connect(&gateway.address));
    // Warm: the upstream's first call starts Python and imports the library.
    check(&direct_client.request(&direct_call));
    check(&forwarded_client.request(&forwarded_call));
    if let Some(client) = proxy_client.as_mut() {
        check(&client.request(&direct_call));
    }
    // Taken in turns, so that all see the machine as it is at the time.
    let (mut direct, mut forwarded, mut proxied) = (Vec::with_capacity(calls), Vec::with_capacity(calls), Vec::new());
    for round in 0..calls {
        direct.push(seconds(|| check(&direct_client.request(&direct_call))));
        forwarded.push(seconds(|| check(&forwarded_client.request(&forwarded_call))));
        if let Some(client) = proxy_client.as_mut().filter(|_| round % 10 == 0) {
            proxied.push(seconds(|| check(&client.request(&direct_call))));
        }
    }
    let (direct, forwarded, proxied) = (Samples(direct), Samples(forwarded), Samples(proxied));
    drop((gateway, proxy));
    drop(upstream);
    let overhead = forwarded.median() - direct.median();
    table.section("8b. lcp serve as a gateway: a forwarded tools/call");
    table.time("tools/call of the upstream server directly (HTTP, loopback)", &direct, "", "");
    table.time(
        "the same call through lcp serve forwarding it (HTTP to HTTP)",
        &forwarded,
        &format!("overhead {} ({} of direct)", duration(overhead), ratio(forwarded.median(), direct.median())),
        &verdict(overhead < 200e-6, "overhead median < 200 µs"),
    );
    if !proxied.0.is_empty() {
        let proxy_overhead = proxied.median() - direct.median();
        table.time(
            "the same call through FastMCP 4.2.3's proxy (create_proxy, HTTP to HTTP)",
            &proxied,
            &format!("overhead {} (lcp's: {:.2}% of it)", duration(proxy_overhead), 100.0 * overhead / proxy_overhead),
            &verdict(overhead <= proxy_overhead / 5.0, "lcp's overhead ≤ 1/5 of FastMCP's"),
        );
    }
}

/// FastMCP's proxy of the server at `sys.argv[1]`, over HTTP on a port of its choosing.
const FASTMCP_PROXY: &str = "import sys\n\
from fastmcp.server import create_proxy\n\
create_proxy(sys.argv[1]).run(transport='http', host='127.0.0.1', port=0, show_banner=False, log_level='INFO')\n";

/// `lcp export` with one stdio MCP server configured (SPEC §14), against `lcp export`
/// without it and against that server's own start-and-list as the official Python
/// client measures it: the server is `lcp serve` over `fixtures/mcp/results`, the
/// export's folder is empty, so the difference is the server's share.
pub fn export_with_server_rows(
    table: &mut Table,
    lcp: &Path,
    root: &Path,
    scratch: &Path,
    python: &Path,
    scripts: &Path,
    quick: bool,
) {
    eprintln!("lcp export with an MCP server ...");
    let runs = if quick { 10 } else { 40 };
    let upstream = root.join("fixtures/mcp/results");
    let empty = scratch.join("export-server-tools");
    std::fs::create_dir_all(&empty).expect("the export's tool folder is creatable");
    let config = scratch.join("export-server.toml");
    let table_text = format!(
        "[mcp_servers.inner]\ncommand = {:?}\nargs = [\"serve\", {:?}]\n",
        lcp.display().to_string(),
        upstream.display().to_string()
    );
    std::fs::write(&config, table_text).expect("the export's config is writable");
    let export = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(lcp)
            .args(["export", "--format", "mcp"])
            .args(args)
            .arg(&empty)
            .stdin(Stdio::null())
            .output()
            .expect("lcp export runs");
        assert!(out.status.success(), "lcp export: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let listed = export(&["--config".as_ref(), config.as_os_str()]);
    assert!(String::from_utf8_lossy(&listed).contains("\"tool_add\""), "the server's tools are exported");
    let alone = Samples((0..runs).map(|_| seconds(|| drop(export(&[])))).collect());
    let with =
        Samples((0..runs).map(|_| seconds(|| drop(export(&["--config".as_ref(), config.as_os_str()])))).collect());
    let out = Command::new(python)
        .arg(scripts.join("start_and_list.py"))
        .arg(runs.to_string())
        .arg(lcp)
        .args(["serve".as_ref(), upstream.as_os_str()])
        .output()
        .expect("the Python client runs");
    assert!(out.status.success(), "start_and_list.py: {}", String::from_utf8_lossy(&out.stderr));
    let client =
        Samples(String::from_utf8_lossy(&out.stdout).lines().map(|l| l.trim().parse().expect("seconds")).collect());
    let over = with.median() - alone.median();
    table.section("8c. lcp export with one stdio MCP server (lcp serve) configured");
    table.time("lcp export --format mcp, an empty folder, no server", &alone, "", "");
    table.time("the server's start-and-list, official Python client (mcp)", &client, "", "");
    table.time(
        "lcp export --format mcp with the server configured",
        &with,
        &format!(
            "over the export alone {} ({} of the client's start-and-list)",
            duration(over),
            ratio(over, client.median())
        ),
        &verdict(over <= client.median() * 1.1, "over <= start-and-list + 10%"),
    );
}

/// Starts `lcp serve FOLDER` over stdio, drops a tool file into the folder and
/// returns the time until `notifications/tools/list_changed` arrives; the file is
/// then removed and its removal waited for too.
fn drop_to_list_changed(lcp: &Path, folder: &Path) -> f64 {
    let mut server = crate::Server::start(lcp, folder, &[]);
    // The watcher is set up once the server answers; its first rescan may announce nothing.
    std::thread::sleep(Duration::from_millis(300));
    let file = folder.join("zz_bench_dropped.py");
    let text = "def tool_bench_dropped(x: int = 0) -> int:\n    \"\"\"Returns x.\n\n    Args:\n        x: A number.\n    \"\"\"\n    return x\n";
    let started = Instant::now();
    std::fs::write(&file, text).expect("the dropped file is writable");
    server.wait_for("notifications/tools/list_changed");
    let announced = started.elapsed().as_secs_f64();
    std::fs::remove_file(&file).expect("the dropped file is removable");
    server.wait_for("notifications/tools/list_changed");
    server.stop();
    announced
}
