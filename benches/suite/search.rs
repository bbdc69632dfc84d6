//! Section 10: tool search (SPEC §21) on a generated corpus of 400 libraries / 2,000
//! tools. In-process: discovery alone (`Registry::load`) against discovery and the
//! search index (`Index::build` of the registry loaded), interleaved, and one query's
//! time; over MCP: the `search_tools` round trip through `lcp serve --http` (on by
//! default at 2,000 tools, above the threshold of 200), against a `tools/list` round
//! trip of the same server (the list is then `search_tools` alone: the protocol's floor).
//! Quality: recall@1/5/10 of `lcp search` against plain BM25 and FastMCP 4.2.3's BM25
//! search transform on the Berkeley Function Calling Leaderboard's v4 catalog (PyPI
//! `bfcl-eval`; `benches/python/search_recall.py`), all three in the same run, on its
//! catalog and on the same with the other categories' functions as distractors.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use lcp::discovery::registry::{Descriptions, Options, Registry, Sources};
use lcp::host::search::Index;
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

/// `fastmcp==4.2.3` in `<target>/bench-fastmcp`, made once from the interpreter lcp embeds.
pub(crate) fn fastmcp_python(target: &Path) -> PathBuf {
    let venv = target.join("bench-fastmcp");
    let python = venv.join("bin/python");
    let stamp = venv.join("fastmcp.stamp");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(FASTMCP) || !python.exists() {
        let base = PathBuf::from(lcp::runtime::python_build().0);
        eprintln!("creating {} from {} (once) ...", venv.display(), base.display());
        let made = Command::new(&base).args(["-m", "venv", "--clear"]).arg(&venv).status();
        assert!(made.is_ok_and(|status| status.success()), "cannot make {}", venv.display());
        let installed = Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", FASTMCP])
            .status();
        assert!(installed.is_ok_and(|status| status.success()), "cannot install {FASTMCP}");
        std::fs::write(&stamp, FASTMCP).expect("the stamp is writable");
    }
    python
}

const FASTMCP: &str = "fastmcp==4.2.3";

/// Recall@1/5/10 of `lcp search`, plain BM25 and FastMCP's BM25 on BFCL v4, side by side:
/// its catalog, then the same with distractors (functions no question asks for).
pub fn recall_rows(table: &mut Table, lcp: &Path, root: &Path, target: &Path) {
    eprintln!("tool search recall (BFCL v4) ...");
    let python = fastmcp_python(target);
    let output = Command::new(&python)
        .arg(root.join("benches/python/search_recall.py"))
        .arg(lcp)
        .arg(target.join("bench-bfcl"))
        .output()
        .unwrap_or_else(|err| panic!("cannot run search_recall.py: {err}"));
    assert!(output.status.success(), "search_recall.py failed: {}", String::from_utf8_lossy(&output.stderr));
    let printed = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 2, "search_recall.py measures two catalogs: {printed}");
    for line in lines {
        let measured: Value = serde_json::from_str(line).expect("search_recall.py prints a JSON object a line");
        let catalog = match measured["catalog"].as_str() {
            Some("with-distractors") => "with the other categories' functions as distractors, ",
            _ => "",
        };
        table.section(&format!(
            "10b. tool search quality: BFCL v4, {catalog}{} tools, {} questions (recall@1 / @5 / @10, %)",
            measured["tools"], measured["queries"]
        ));
        let recall = |ranking: &str| {
            let at = |k: &str| measured[ranking][k].as_f64().unwrap_or(f64::NAN);
            (at("1"), at("5"), at("10"))
        };
        let (lcp1, lcp5, lcp10) = recall("lcp");
        let (bm1, bm5, bm10) = recall("bm25");
        let (fm1, fm5, fm10) = recall("fastmcp");
        table.text(format!("  plain BM25 (k1 1.2, b 0.75)            {bm1:5.1}  {bm5:5.1}  {bm10:5.1}"));
        table.text(format!("  FastMCP 4.2.3 BM25SearchTransform      {fm1:5.1}  {fm5:5.1}  {fm10:5.1}"));
        table.text(format!("  lcp search                             {lcp1:5.1}  {lcp5:5.1}  {lcp10:5.1}"));
        let margin = lcp5 - bm5.max(fm5);
        table.text(format!(
            "  recall@5: {margin:+.1} points over the better of the two; {}",
            verdict(margin >= 3.0, "≥ +3")
        ));
    }
}

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
