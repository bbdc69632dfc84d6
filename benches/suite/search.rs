//! Section 10: tool search (SPEC §21) on a generated corpus of 400 libraries / 2,000
//! tools. In-process: discovery alone (`Registry::load`) against discovery and the
//! search index (`Index::build` of the registry loaded), interleaved, and one query's
//! time; over MCP: the `search_tools` round trip through `lcp serve --http` (on by
//! default at 2,000 tools, above the threshold of 200), against a `tools/list` round
//! trip of the same server (the list is then `search_tools` alone: the protocol's floor).

use std::path::Path;
use std::time::Instant;

use lcp::registry::{Descriptions, Options, Registry, Sources};
use lcp::search::Index;
use serde_json::{Value, json};

use crate::corpus::{self, Shape};
use crate::measure::{Contender, Samples, interleaved, seconds};
use crate::serve::{Client, HttpServer, message};
use crate::table::{Table, duration, ratio, verdict};

/// 400 libraries / 2,000 tools.
const SEARCH: Shape = Shape { name: "search", folders: 100, loose: 100, tools_per_file: 5 };

/// Queries in the words of the generated corpus (its verbs and topics).
const QUERIES: [&str; 8] = [
    "search the maps for a place",
    "import finance records",
    "get recipes with an ingredient",
    "delete a music track",
    "check the latest news",
    "export news items to a file",
    "sync finance accounts",
    "summarize",
];

pub fn rows(table: &mut Table, lcp: &Path, base: &Path, quick: bool) {
    eprintln!("tool search ...");
    let corpus = corpus::ensure(base, SEARCH);
    let sources = Sources { folders: vec![corpus.root.clone()], files: Vec::new() };
    let options = Options::default();
    let registry = Registry::load(&sources, &options);
    assert_eq!(registry.tools().count(), corpus.tools, "lcp finds every tool of the corpus");
    let reps = if quick { 3 } else { 21 };
    let measured = interleaved(vec![
        Contender::new("load", reps, || {
            let started = Instant::now();
            let registry = Registry::load(&sources, &options);
            let elapsed = started.elapsed().as_secs_f64();
            drop(registry);
            elapsed
        }),
        Contender::many(&["load+index", "index"], reps, || {
            let started = Instant::now();
            let registry = Registry::load(&sources, &options);
            let loaded = started.elapsed().as_secs_f64();
            let index = Index::build(&registry, &Descriptions::default());
            let elapsed = started.elapsed().as_secs_f64();
            assert_eq!(index.len(), corpus.tools);
            drop((index, registry));
            vec![elapsed, elapsed - loaded]
        }),
    ]);
    let (load, both, index_only) = (&measured["load"], &measured["load+index"], &measured["index"]);

    let index = Index::build(&registry, &Descriptions::default());
    let rounds = if quick { 20 } else { 200 };
    let queries = Samples(
        (0..rounds)
            .map(|round| {
                let query = QUERIES[round % QUERIES.len()];
                seconds(|| assert!(index.search(query, 10).len() <= 10))
            })
            .collect(),
    );

    let server = HttpServer::start_in(lcp, &[corpus.root.as_os_str()], &[]);
    let mut client = Client::session_less(&server.address);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
    let search = |query: &str| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "search_tools", "arguments": {"query": query}, "_meta": meta}})
    };
    let listed = message(&client.request(&list));
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().into_iter().flatten().filter_map(|tool| tool["name"].as_str()).collect();
    assert_eq!(names, ["search_tools"], "at 2,000 tools tools/list is search_tools alone");
    let found = |body: &[u8]| {
        let answer = message(body);
        let tools = answer["result"]["structuredContent"]["tools"].as_array().map_or(0, Vec::len);
        assert!(tools > 0 && answer["result"]["isError"] == Value::Bool(false), "{answer}");
    };
    // The first search builds the index.
    let first = seconds(|| found(&client.request(&search(QUERIES[0]))));
    let calls = if quick { 100 } else { 1000 };
    let (mut searches, mut lists) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for call in 0..calls {
        let request = search(QUERIES[call % QUERIES.len()]);
        searches.push(seconds(|| found(&client.request(&request))));
        lists.push(seconds(|| assert!(!client.request(&list).is_empty())));
    }
    let (searches, lists) = (Samples(searches), Samples(lists));
    drop(client);
    drop(server);

    table.section("10. tool search, 400 libraries / 2,000 tools");
    table.time("discovery alone (Registry::load)", load, "", "");
    table.time(
        "discovery + search index (Registry::load, Index::build)",
        both,
        &format!("{} of discovery", ratio(both.median(), load.median())),
        &verdict(both.median() <= 1.1 * load.median(), "≤ 1.1× discovery"),
    );
    table.time("  of which the index (Index::build)", index_only, "", "");
    table.time("one query, 10 tools (Index::search)", &queries, "", "");
    table.time(
        "search_tools round trip over HTTP (session-less, loopback)",
        &searches,
        &format!(
            "{} of a tools/list round trip ({}); first search (builds the index) {}",
            ratio(searches.median(), lists.median()),
            duration(lists.median()),
            duration(first)
        ),
        &verdict(searches.median() < 10e-3, "p50 < 10 ms"),
    );
}
