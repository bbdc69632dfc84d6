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
