//! What a new user meets serving tools (`lcp serve`, `lcp list`, a config's warnings):
//! the answers MCP clients expect, listings that show what was just dropped in, the
//! parts of a grade that are known, and a library folder served as itself.

use crate::auth::{address_of, exchange, initialize, post_as};
use crate::mcp::HttpServer;

#[test]
fn a_session_ended_by_its_client_is_answered_200() {
    let server = HttpServer::start(&["fixtures/mcp/results"]);
    let (status, headers, _) = post_as(&[], &server.url, None, None, initialize());
    assert_eq!(status, 200);
    let session = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id"))
        .map(|(_, value)| value.clone())
        .expect("a session id");
    let address = address_of(&server.url);
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: {address}\r\nmcp-session-id: {session}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
    );
    let (status, _, body) = exchange(&address, &delete);
    assert_eq!(status, 200, "{body}");
    // Ended: a request of the session finds none.
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let (status, _, _) = post_as(&[("mcp-protocol-version", "2025-06-18")], &server.url, None, Some(&session), list);
    assert_eq!(status, 404);
}

/// A 2026-07-28 request (no session) to `url`; its JSON-RPC answer.
fn request(url: &str, method: &str) -> serde_json::Value {
    let message = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];
    let (status, _, answer) = post_as(&headers, url, None, None, message);
    assert_eq!(status, 200, "{method}: {answer}");
    answer
}

fn names(answer: &serde_json::Value, list: &str, key: &str) -> Vec<String> {
    let items = answer["result"][list].as_array().cloned().unwrap_or_default();
    items.iter().filter_map(|item| item[key].as_str().map(str::to_string)).collect()
}

#[test]
fn a_listing_right_after_a_file_is_dropped_shows_it() {
    let dir = crate::support::temp_dir("listing-after-drop");
    std::fs::write(dir.join("first.py"), "def tool_first() -> int:\n    \"\"\"One.\"\"\"\n    return 1\n").unwrap();
    let server = HttpServer::start(&[dir.to_str().unwrap()]);
    // Past the moment the folders are watched: the watcher, not a poll, sees changes.
    std::thread::sleep(std::time::Duration::from_millis(600));
    for round in 0..10 {
        let text = format!(
            "TOOL_RESOURCES = {{\"resource_note_{round}\": {{\"uri\": \"notes://{round}\"}}}}\n\n\
             def tool_dropped_{round}() -> int:\n    \"\"\"Dropped.\"\"\"\n    return {round}\n\n\
             def prompt_dropped_{round}() -> str:\n    \"\"\"Dropped.\"\"\"\n    return 'hi'\n\n\
             def resource_note_{round}() -> str:\n    \"\"\"Dropped.\"\"\"\n    return 'note'\n"
        );
        std::fs::write(dir.join(format!("dropped_{round}.py")), text).unwrap();
        let tools = names(&request(&server.url, "tools/list"), "tools", "name");
        assert!(tools.contains(&format!("tool_dropped_{round}")), "round {round}: {tools:?}");
        let prompts = names(&request(&server.url, "prompts/list"), "prompts", "name");
        assert!(prompts.contains(&format!("prompt_dropped_{round}")), "round {round}: {prompts:?}");
        let resources = names(&request(&server.url, "resources/list"), "resources", "uri");
        assert!(resources.contains(&format!("notes://{round}")), "round {round}: {resources:?}");
    }
}

#[test]
fn a_read_only_tool_without_a_grade_has_the_known_parts_of_its_grade() {
    let dir = crate::support::temp_dir("read-only-grade");
    std::fs::write(
        dir.join("reader.py"),
        "TOOL_POLICY = {\"read_only\": True}\n\n\
         def tool_peek(path: str) -> str:\n    \"\"\"Reads a file.\"\"\"\n    return path\n",
    )
    .unwrap();
    let folder = dir.to_str().unwrap();
    let listed = String::from_utf8(crate::support::lcp(&["list", "--static", folder]).stdout).unwrap();
    let row = listed.lines().find(|line| line.starts_with("tool_peek")).unwrap_or_default();
    assert!(row.contains(" d0") && !row.contains("d3"), "read-only means d0 is known: {listed}");
    let manifest =
        crate::support::stdout_json(&crate::support::lcp(&["export", "--format", "manifest", "--static", folder]));
    let policy = &manifest["tools"][0]["policy"];
    assert_eq!(policy["grade"], serde_json::json!({"w": 3, "d": 0}), "{policy}");
    // No grade is claimed as declared; MCP carries the hint that was.
    assert!(policy["declared"].get("grade").is_none(), "{policy}");
    let mcp = crate::support::stdout_json(&crate::support::lcp(&["export", "--format", "mcp", "--static", folder]));
    assert_eq!(mcp["tools"][0]["annotations"], serde_json::json!({"readOnlyHint": true}));
    // A host's ceiling of d0 lets it through.
    let config = dir.join("lcp.toml");
    std::fs::write(&config, "[policy]\nmax_grade = { w = 3, d = 0 }\n").unwrap();
    let config = config.to_str().unwrap();
    let listed =
        String::from_utf8(crate::support::lcp(&["list", "--static", folder, "--config", config]).stdout).unwrap();
    assert!(listed.lines().any(|line| line.starts_with("tool_peek")), "{listed}");
}

#[test]
fn a_library_folder_served_itself_is_that_one_library() {
    let dir = crate::support::temp_dir("library-folder-itself").join("mylib");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("models.py"),
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Point:\n    x: float\n    y: float\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("mylib.py"),
        "from .models import Point\n\n\ndef tool_norm(p: Point) -> float:\n    \"\"\"The point's distance from 0.\"\"\"\n    \
         return (p.x ** 2 + p.y ** 2) ** 0.5\n",
    )
    .unwrap();
    let folder = dir.to_str().unwrap();
    let schema = crate::support::stdout_json(&crate::support::lcp(&["export", "--format", "mcp", "--static", folder]));
    let tool = &schema["tools"][0];
    assert_eq!(tool["name"], "tool_norm", "{schema}");
    let point = serde_json::to_string(&tool["inputSchema"]).unwrap();
    assert!(point.contains("\"x\"") && point.contains("\"y\""), "the relative import resolves: {point}");
    let called = crate::support::lcp(&["call", "tool_norm", folder, "--args", r#"{"p": {"x": 3, "y": 4}}"#]);
    let said = String::from_utf8_lossy(&called.stdout).into_owned() + &String::from_utf8_lossy(&called.stderr);
    assert!(called.status.success() && said.contains("5.0"), "{said}");
    // As its parent folder serves it.
    let parent = dir.parent().unwrap().to_str().unwrap();
    let called = crate::support::lcp(&["call", "tool_norm", parent, "--args", r#"{"p": {"x": 3, "y": 4}}"#]);
    assert!(called.status.success(), "{}", String::from_utf8_lossy(&called.stderr));
}
