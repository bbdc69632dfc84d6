//! The benchmark suite (issue 5): lcp against the tools people use instead, in one
//! run, on generated corpora; prints one table of medians, spreads and ratios.
//!
//! Run: `cargo bench --bench suite`; after `--`, `--quick` makes at most 3 repetitions
//! of everything and `--lcp-only` leaves the Python contenders out (both for work on
//! lcp itself, not for the record), `--runtime-only` runs sections 4 and 5 alone,
//! `--only 1,3,8` runs the sections listed (4 includes 5, 8 includes 8b and 8c; `8b`
//! alone is the gateway row), and
//! `--profile-load FOLDER` only loads a folder three times, and `--profile-index FOLDER`
//! builds its search index 200 times, for a profiler.
//! It generates `target/bench-corpus/` (see `corpus`), makes `target/bench-venv` with
//! the pinned lollms-client (see `python`), then measures, interleaving the
//! contenders of each section round by round:
//!
//! 1. cold discovery + schemas: the parse-only floor (read + `parse_module`, same
//!    threads, no schema work; defined here, not in `src/`), `Registry::load`, the
//!    `lcp check` process, a stdlib-`ast` extractor and `LCPBinding`;
//! 2. warm rescan (nothing changed, one file changed) against walking + `stat`-ing;
//! 3. export of the large corpus to each format, in-process and as whole `lcp export`
//!    processes against `lcp check` (time and peak RSS);
//! 4. per-call overhead of a trivial tool: `Runtime::call` (with the standard output
//!    claimed, as `lcp serve` runs tools, in a child process; and without) against a
//!    direct Python call and `LCPBinding.execute_tool`;
//! 5. the `tools/call` round trip through `lcp serve` (stdio, raw JSON-RPC client),
//!    also with the direct path off (`LCP_SLOW_PATHS=direct`), and its start-up time;
//! 6. peak memory of the registry against `LCPBinding`'s;
//! 7. isolation (worker processes), and 7b what the sandbox costs against none;
//! 8. `lcp serve` on the large corpus: the whole `tools/list` over HTTP, a dropped
//!    file to `list_changed`, and the CPU of an idle server;
//! 9. replicas behind nginx (throughput, one replica against two) and `tasks/get`
//!    through Redis;
//! 10. tool search: the index's build against discovery alone, a query, and the
//!     `search_tools` round trip through `lcp serve` (see `search`);
//! 11. Python hosts: `lcp_tools.LCPBinding` against lollms-client's (see `binding`).
//! 12. `lcp audit` and the manifest that carries capabilities, against `lcp check`
//!     (see `audit`).
//!
//! The table also goes to `target/bench-results.txt`. No assertion here is about time.

mod audit;
mod binding;
mod corpus;
mod measure;
mod python;
mod replicas;
mod search;
mod serve;
mod table;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use lcp::discovery::registry::{Descriptions, Options, Registry, Sources};
use lcp::export::{self, Format, Layout};
use lcp::runtime::{CallOptions, Isolation, Runtime, RuntimeConfig, WorkerSettings};
use serde_json::Value;

use corpus::Corpus;
use measure::{Contender, Samples, interleaved, process, seconds};
use python::Python;
use table::{Table, duration, ratio, verdict};

#[global_allocator]
static ALLOC: measure::CountingAlloc = measure::CountingAlloc;

/// The variable that turns fast paths off (`src/fast_paths.rs`).
const SLOW: &str = lcp::fast_paths::VARIABLE;

/// Stack of each floor thread: the same as the registry's readers.
const READER_STACK: usize = 256 * 1024 * 1024;

struct Setup {
    root: PathBuf,
    /// Cargo's target folder: the bench's venv, corpus, scratch and results live there.
    target: PathBuf,
    lcp: PathBuf,
    scripts: PathBuf,
    python: Python,
    scratch: PathBuf,
    quick: bool,
    /// `--lcp-only`: leave out the Python contenders (for quick work on lcp itself).
    lcp_only: bool,
    threads: usize,
}

impl Setup {
    /// Repetitions: `fast` for in-process work, `slow` for Python processes.
    fn reps(&self, normal: usize) -> usize {
        if self.quick { normal.min(3) } else { normal }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // For profilers: `perf record .../suite-* --profile-load FOLDER` loads it three times.
    if let Some(i) = args.iter().position(|a| a == "--profile-load") {
        let sources = Sources { folders: vec![PathBuf::from(&args[i + 1])], files: Vec::new() };
        for _ in 0..3 {
            let registry = Registry::load(&sources, &Options::default());
            eprintln!("{} tools", registry.tools().count());
        }
        return;
    }
    // `--profile-index FOLDER`: loads it once, then builds its search index 200 times.
    if let Some(i) = args.iter().position(|a| a == "--profile-index") {
        let sources = Sources { folders: vec![PathBuf::from(&args[i + 1])], files: Vec::new() };
        let registry = Registry::load(&sources, &Options::default());
        for _ in 0..200 {
            std::hint::black_box(lcp::host::search::Index::build(&registry, &Descriptions::default()));
        }
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--child-memory") {
        return child_memory(Path::new(&args[i + 1]));
    }
    if let Some(i) = args.iter().position(|a| a == "--child-rss") {
        return measure::child_rss(&args[i + 1], &args[i + 2..]);
    }
    if let Some(i) = args.iter().position(|a| a == "--child-calls") {
        return child_calls(Path::new(&args[i + 1]), args[i + 2].parse().expect("a number of calls"));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let quick = args.iter().any(|a| a == "--quick");
    let runtime_only = args.iter().any(|a| a == "--runtime-only");
    // `--only 1,3`: those sections alone (4 runs 5 too, 8 runs 8b and 8c); figures from a
    // skipped section show as NaN.
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .map(|i| args.get(i + 1).map_or("", String::as_str).split(',').map(|n| n.trim().to_string()).collect());
    let wanted = |section: &str| {
        only.as_ref().is_none_or(|only| only.iter().any(|n| n == section || section.starts_with(n.as_str())))
    };
    // Cargo's target folder (`CARGO_TARGET_DIR` honoured): the one holding the binary's profile folder.
    let lcp = PathBuf::from(env!("CARGO_BIN_EXE_lcp"));
    let target = lcp.parent().and_then(Path::parent).expect("the binary is in <target>/<profile>/").to_path_buf();
    let base = target.join("bench-corpus");
    let trivial = base.join("trivial");
    fs::create_dir_all(&trivial).expect("trivial library folder is creatable");
    let python = if args.iter().any(|a| a == "--lcp-only") { python::none() } else { python::ensure(&root, &target) };
    let scratch = target.join("bench-scratch");
    fs::create_dir_all(&scratch).expect("scratch folder is creatable");
    let setup = Setup {
        lcp,
        scripts: root.join("benches/python"),
        python,
        scratch,
        quick,
        lcp_only: args.iter().any(|a| a == "--lcp-only"),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        root,
        target,
    };

    let mut table = Table::new();
    if runtime_only {
        header(&mut table, &setup, &[]);
        runtime_rows(&mut table, &setup, &trivial);
        isolation_rows(&mut table, &setup, &base.join("isolation"));
    } else {
        eprintln!("corpora in {} ...", base.display());
        let small = corpus::ensure(&base, corpus::SMALL);
        let large = corpus::ensure(&base, corpus::LARGE);
        let empty = base.join("empty");
        fs::create_dir_all(&empty).expect("empty corpus folder is creatable");
        header(&mut table, &setup, &[&small, &large]);
        let mut large_cold = BTreeMap::new();
        if wanted("1") {
            cold(&mut table, &setup, &small, "200 libraries / 1,000 tools", false);
            large_cold = cold(&mut table, &setup, &large, "2,000 libraries / 10,000 tools", true);
        }
        if wanted("2") {
            rescan(&mut table, &setup, &large);
        }
        if wanted("3") {
            exports(&mut table, &setup, &large, "2,000 libraries / 10,000 tools", &large_cold);
            let plain = corpus::ensure_plain(&base);
            exports(&mut table, &setup, &plain, "2,000 folders of 5 plain tools (no helpers)", &BTreeMap::new());
        }
        if wanted("4") {
            runtime_rows(&mut table, &setup, &trivial);
        }
        if wanted("7a") {
            isolation_rows(&mut table, &setup, &base.join("isolation"));
        }
        if wanted("7b") {
            sandbox_rows(&mut table, &setup, &base.join("sandbox"));
        }
        if wanted("6") {
            memory(&mut table, &setup, &large, &empty, &large_cold);
        }
        if wanted("8a") {
            serve::rows(&mut table, &setup.lcp, &large.root, large.tools, setup.quick);
        }
        if wanted("8b") {
            let fastmcp = (!setup.lcp_only).then(|| search::fastmcp_python(&setup.target));
            serve::forwarded_rows(
                &mut table,
                &setup.lcp,
                &setup.root,
                &setup.target.join("bench-scratch"),
                fastmcp.as_deref(),
                setup.quick,
            );
        }
        if wanted("8c") && !setup.lcp_only {
            serve::export_with_server_rows(
                &mut table,
                &setup.lcp,
                &setup.root,
                &setup.scratch,
                &setup.python.executable,
                &setup.scripts,
                setup.quick,
            );
        }
        if wanted("9") {
            replicas::rows(&mut table, &setup.lcp, &setup.scratch, setup.quick);
        }
        if wanted("10") {
            search::rows(&mut table, &setup.lcp, &base, setup.quick);
            if !setup.lcp_only {
                search::recall_rows(&mut table, &setup.lcp, &setup.root, &setup.target);
            }
        }
        if wanted("12") {
            audit::rows(&mut table, &setup.lcp, &large, setup.quick);
        }
        if wanted("11") && !setup.lcp_only {
            binding::rows(&mut table, &setup.root, &setup.target, setup.quick);
        }
    }

    let rendered = table.render();
    println!("{rendered}");
    let report = setup.target.join("bench-results.txt");
    if fs::write(&report, &rendered).is_ok() {
        eprintln!("table written to {}", report.display());
    }
}

fn header(table: &mut Table, setup: &Setup, corpora: &[&Corpus]) {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(&setup.root)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    table.text(format!(
        "lcp bench suite: lcp {} ({commit}), {} threads available ({cpu}), Python {}, lollms-client {}",
        env!("CARGO_PKG_VERSION"),
        setup.threads,
        setup.python.version,
        setup.python.lollms_client
    ));
    for c in corpora {
        table.text(format!(
            "corpus {}: {} files, {} tools, {:.1} MiB",
            c.root.display(),
            c.files,
            c.tools,
            c.bytes as f64 / (1024.0 * 1024.0)
        ));
    }
    table.text(
        "Each contender runs once to warm up (the OS file cache is warm for all), then in interleaved rounds; \
         times are wall-clock medians, spread is min-max, ratios are medians of this run.",
    );
    table.text(
        "In-process contenders (the floor, Registry::load, exports, the memory child) use the system allocator, \
         as a library user gets it; the lcp binary uses mimalloc.",
    );
}

fn sources(corpus: &Corpus) -> Sources {
    Sources { folders: vec![corpus.root.clone()], files: Vec::new() }
}

/// Section 1: cold discovery + schemas.
fn cold(table: &mut Table, setup: &Setup, corpus: &Corpus, title: &str, targets: bool) -> BTreeMap<String, Samples> {
    eprintln!("cold discovery, {title} ...");
    let sources = sources(corpus);
    let options = Options::default();
    let (files, _) = lcp::discovery::scan::discover(&sources.folders, &sources.files);
    let paths: Vec<PathBuf> = files.into_iter().map(|f| f.path).collect();
    let registry = Registry::load(&sources, &options);
    assert_eq!(registry.tools().count(), corpus.tools, "lcp finds every tool of the corpus");
    assert!(registry.diagnostics().is_empty(), "the corpus reads cleanly: {:?}", &registry.diagnostics()[..1]);
    drop(registry);
    let folder = corpus.root.to_str().expect("corpus path is UTF-8");
    let threads = setup.threads;
    let (fast, slow) = if targets { (setup.reps(15), setup.reps(5)) } else { (setup.reps(21), setup.reps(7)) };
    let out = setup.scratch.join("python-result.json");

    let mut contenders = vec![
        Contender::new("floor", fast, || seconds(|| assert_eq!(floor(&paths, threads), paths.len()))),
        Contender::new("floor-1", fast, || seconds(|| assert_eq!(floor(&paths, 1), paths.len()))),
        Contender::new("load", fast, || {
            let started = std::time::Instant::now();
            let registry = Registry::load(&sources, &options);
            let elapsed = started.elapsed().as_secs_f64();
            drop(registry);
            elapsed
        }),
        Contender::new("check", fast, || process(&setup.lcp, &["check", folder])),
        Contender::new("check-1", fast, || {
            process(Path::new("taskset"), &["-c", "0", path_str(&setup.lcp), "check", folder])
        }),
    ];
    if !setup.lcp_only {
        contenders.push(Contender::many(&["ast-whole", "ast-in"], slow, || {
            let whole = process(
                &setup.python.executable,
                &[path_str(&setup.scripts.join("ast_extractor.py")), folder, "--out", path_str(&out)],
            );
            let result = read_json(&out);
            assert_eq!(result["tools"].as_u64(), Some(corpus.tools as u64), "the ast extractor finds every tool");
            vec![whole, result["discover_s"].as_f64().unwrap_or(f64::NAN)]
        }));
        // Its RSS growth and peak RSS feed section 6.
        contenders.push(Contender::many(
            &["ref-whole", "ref-in", "ref-import", "ref-rss-growth", "ref-hwm", "ref-hwm-import"],
            slow,
            || {
                let whole = process(
                    &setup.python.executable,
                    &[path_str(&setup.scripts.join("lcpbinding.py")), folder, "--out", path_str(&out)],
                );
                let result = read_json(&out);
                assert_eq!(result["tools"].as_u64(), Some(corpus.tools as u64), "LCPBinding finds every tool");
                let number = |key: &str| result[key].as_f64().unwrap_or(f64::NAN);
                vec![
                    whole,
                    number("discover_s"),
                    number("import_s"),
                    (number("vmrss_after_kib") - number("vmrss_before_kib")) * 1024.0,
                    number("vmhwm_after_kib") * 1024.0,
                    number("vmhwm_before_kib") * 1024.0,
                ]
            },
        ));
    }
    let mut r = interleaved(contenders);
    for key in
        ["ast-whole", "ast-in", "ref-whole", "ref-in", "ref-import", "ref-rss-growth", "ref-hwm", "ref-hwm-import"]
    {
        r.entry(key.to_string()).or_default();
    }
    let m = |k: &str| r[k].median();

    table.section(&format!("1. Cold discovery + schemas, {title}"));
    table.time(
        &format!("floor: read + parse_module, {threads} threads (no schema work)"),
        &r["floor"],
        "1.00× (reference)",
        "",
    );
    table.time(
        "floor: read + parse_module, 1 thread",
        &r["floor-1"],
        &format!("{} threads are {} faster", threads, ratio(m("floor-1"), m("floor"))),
        "",
    );
    let load_vs_floor = m("load") / m("floor");
    table.time(
        "lcp Registry::load (library call)",
        &r["load"],
        &format!("{} floor", ratio(m("load"), m("floor"))),
        &if targets { verdict(load_vs_floor <= 1.5, "<= 1.5× floor") } else { String::new() },
    );
    table.time(
        "lcp check (whole process)",
        &r["check"],
        &format!("{} library call, {} floor", ratio(m("check"), m("load")), ratio(m("check"), m("floor"))),
        &if targets { verdict(m("check") <= 1.5 * m("floor"), "<= 1.5× floor") } else { String::new() },
    );
    table.time(
        "lcp check, 1 core (taskset -c 0)",
        &r["check-1"],
        &format!("{threads} cores are {} faster", ratio(m("check-1"), m("check"))),
        "",
    );
    table.time(
        "stdlib-ast extractor (whole process)",
        &r["ast-whole"],
        &format!("{} lcp check", ratio(m("ast-whole"), m("check"))),
        "",
    );
    table.time(
        "stdlib-ast extractor (in-process discovery)",
        &r["ast-in"],
        &format!("{} lcp library call", ratio(m("ast-in"), m("load"))),
        "",
    );
    let speedup = m("ref-whole") / m("check");
    table.time(
        "LCPBinding (whole process: python + import + discovery)",
        &r["ref-whole"],
        &format!("{} lcp check", ratio(m("ref-whole"), m("check"))),
        &if targets { verdict(speedup >= 100.0, ">= 100× lcp check") } else { String::new() },
    );
    table.time(
        "LCPBinding (in-process: construction only)",
        &r["ref-in"],
        &format!("{} lcp library call", ratio(m("ref-in"), m("load"))),
        "",
    );
    table.time("LCPBinding import only (python startup excluded)", &r["ref-import"], "", "");
    r
}

/// Reads and parses every file with `threads` threads, nothing else: the floor.
fn floor(paths: &[PathBuf], threads: usize) -> usize {
    let next = AtomicUsize::new(0);
    let parsed = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            std::thread::Builder::new()
                .stack_size(READER_STACK)
                .spawn_scoped(scope, || {
                    while let Some(path) = paths.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let bytes = fs::read(path).expect("corpus file is readable");
                        let text = std::str::from_utf8(&bytes).expect("corpus file is UTF-8");
                        if ruff_python_parser::parse_module(text).is_ok() {
                            parsed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
                .expect("floor thread starts");
        }
    });
    parsed.into_inner()
}

/// Walks the tree and `stat`s every entry (following links, as discovery does).
fn walk_stat(dir: &Path) -> usize {
    let mut entries = 0;
    for entry in fs::read_dir(dir).expect("corpus folder is readable") {
        let path = entry.expect("corpus entry is readable").path();
        let meta = fs::metadata(&path).expect("corpus entry can be stat-ed");
        entries += 1;
        if meta.is_dir() {
            entries += walk_stat(&path);
        }
    }
    entries
}

/// Section 2: warm rescan of the large corpus.
fn rescan(table: &mut Table, setup: &Setup, corpus: &Corpus) {
    eprintln!("warm rescan ...");
    let registry = RefCell::new(Registry::load(&sources(corpus), &Options::default()));
    let original = fs::read_to_string(&corpus.probe).expect("probe file is readable");
    let edited = format!(
        "{original}\n\ndef tool_bench_probe(count: int = 1) -> int:\n    \"\"\"Added by the bench.\n\n    Args:\n        count: How many.\n    \"\"\"\n    return count\n"
    );
    let reps = setup.reps(31);
    let contenders = vec![
        Contender::new("walk", reps, || seconds(|| assert!(walk_stat(&corpus.root) > corpus.files))),
        Contender::new("unchanged", reps, || {
            seconds(|| assert!(registry.borrow_mut().rescan().is_empty(), "nothing changed"))
        }),
        Contender::new("one", reps, || {
            fs::write(&corpus.probe, &edited).expect("probe file is writable");
            let t = seconds(|| assert_eq!(registry.borrow_mut().rescan().changed.len(), 1, "one file changed"));
            fs::write(&corpus.probe, &original).expect("probe file is writable");
            assert_eq!(registry.borrow_mut().rescan().changed.len(), 1, "the probe file is restored");
            t
        }),
    ];
    let r = interleaved(contenders);
    let m = |k: &str| r[k].median();
    assert_eq!(registry.borrow().tools().count(), corpus.tools, "the probe file is back as it was");

    table.section("2. Warm rescan, 2,000 libraries / 10,000 tools");
    table.time(
        &format!("walk the tree + stat every entry ({} entries)", walk_stat(&corpus.root)),
        &r["walk"],
        "1.00× (reference)",
        "",
    );
    table.time(
        "Registry::rescan, nothing changed",
        &r["unchanged"],
        &format!("{} walk+stat", ratio(m("unchanged"), m("walk"))),
        &verdict(m("unchanged") <= 2.0 * m("walk"), "<= 2× walk+stat"),
    );
    let extra = m("one") - m("unchanged");
    table.time(
        "Registry::rescan, one file changed",
        &r["one"],
        &format!("+{} over nothing changed", duration(extra)),
        &verdict(extra < 5e-3, "< 5 ms on top"),
    );
}

/// Section 3: export of the large corpus. In-process: [`export::write`] of the pretty
/// text (what `lcp export` prints) into a counting sink. Whole processes: `lcp export
/// --static` in each format against `lcp check` (time and peak RSS, each measured
/// by the bench's `--child-rss` process), and the `mcp` export against `LCPBinding`'s
/// discovery alone (section 1's in-process figure, python start-up and import left out).
fn exports(table: &mut Table, setup: &Setup, corpus: &Corpus, title: &str, cold: &BTreeMap<String, Samples>) {
    eprintln!("export ...");
    let registry = Registry::load(&sources(corpus), &Options::default());
    let formats = [
        ("openai", Format::Openai { strict: false }, false),
        ("openai --strict", Format::Openai { strict: false }, true),
        ("openai-responses", Format::OpenaiResponses { strict: false }, false),
        ("anthropic", Format::Anthropic, false),
        ("gemini", Format::Gemini, false),
        ("mcp", Format::Mcp { inline_refs: false }, false),
        ("manifest", Format::Manifest, false),
    ];
    let written = |format: Format, strict: bool| {
        let mut sink = Counting(0);
        let problems =
            export::write(&registry, &Descriptions::default(), format.strict(strict), Layout::Pretty, &mut sink)
                .expect("a sink takes all");
        (sink.0, problems.len())
    };
    let sizes: BTreeMap<&str, (usize, usize)> =
        formats.iter().map(|&(label, format, strict)| (label, written(format, strict))).collect();
    let reps = setup.reps(15);
    let folder = path_str(&corpus.root);
    let lcp = &setup.lcp;
    let mut contenders: Vec<Contender> = formats
        .iter()
        .map(|&(label, format, strict)| {
            Contender::new(label, reps, move || seconds(|| assert!(written(format, strict).0 > 0)))
        })
        .collect();
    let whole_with = |args: Vec<String>, env: &'static [(&'static str, &'static str)]| {
        move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (time, rss) = measure::process_rss_with(lcp, &args, env);
            vec![time, rss]
        }
    };
    let whole = |args: Vec<String>| whole_with(args, &[]);
    let check = ["check-process".to_string(), "check-rss".to_string()];
    contenders.push(Contender::many(&[&check[0], &check[1]], reps, whole(vec!["check".into(), folder.into()])));
    let process_labels: Vec<[String; 2]> =
        formats.iter().map(|(label, _, _)| [format!("{label}-process"), format!("{label}-rss")]).collect();
    for ((_, format, strict), labels) in formats.iter().zip(&process_labels) {
        let mut args = vec!["export".to_string(), "--static".into(), "--format".into(), format.to_string()];
        if *strict {
            args.push("--strict".into());
        }
        args.push(folder.into());
        contenders.push(Contender::many(&[&labels[0], &labels[1]], reps, whole(args)));
    }
    // The same MCP export with the splice off: the document built whole and printed.
    let general = ["mcp-general-process".to_string(), "mcp-general-rss".to_string()];
    let args = vec!["export".into(), "--static".into(), "--format".into(), "mcp".into(), folder.into()];
    contenders.push(Contender::many(&[&general[0], &general[1]], reps, whole_with(args, &[(SLOW, "splice")])));
    let r = interleaved(contenders);
    let m = |k: &str| r[k].median();

    table.section(&format!("3. Export, {title}"));
    table.text("  in-process: export::write of the pretty text into a counting sink");
    for (label, _, _) in formats {
        let (size, problems) = sizes[label];
        let note = format!(
            "{:.1} MiB of JSON{}",
            size as f64 / (1024.0 * 1024.0),
            if problems > 0 { format!(", {problems} tools left out") } else { String::new() }
        );
        table.time(&format!("export --format {label}"), &r[label], &note, "");
    }
    table.text("  whole process, stdout to /dev/null; peak RSS from wait4 (ru_maxrss)");
    table.time("lcp check", &r["check-process"], "1.00× (reference)", "");
    table.bytes("lcp check, peak RSS", &r["check-rss"], "1.00× (reference)", "");
    for ((label, _, _), [time, rss]) in formats.iter().zip(&process_labels) {
        table.time(
            &format!("lcp export --static --format {label}"),
            &r[time],
            &format!("{} lcp check", ratio(m(time), m("check-process"))),
            &verdict(m(time) <= 1.3 * m("check-process"), "<= 1.3× lcp check"),
        );
        table.bytes(
            "  peak RSS",
            &r[rss],
            &format!("{} lcp check", ratio(m(rss), m("check-rss"))),
            &verdict(m(rss) <= 1.5 * m("check-rss"), "<= 1.5× lcp check"),
        );
    }
    table.time(
        "lcp export --static --format mcp, splice off (LCP_SLOW_PATHS=splice)",
        &r["mcp-general-process"],
        &format!("{} the spliced export", ratio(m("mcp-general-process"), m("mcp-process"))),
        &verdict(m("mcp-general-process") >= 1.1 * m("mcp-process"), "splice gains >= 10%"),
    );
    // LCPBinding's discovery is measured in section 1, on that section's corpus only.
    let Some(binding) = cold.get("ref-in").map(Samples::median) else { return };
    table.time(
        "lcp export --static --format mcp against LCPBinding's discovery",
        &r["mcp-process"],
        &format!("{} faster than LCPBinding in-process ({})", ratio(binding, m("mcp-process")), duration(binding)),
        &verdict(binding >= 100.0 * m("mcp-process"), ">= 100× faster"),
    );
}

/// An `io::Write` that only counts what it is given.
struct Counting(usize);

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The trivial library of sections 4 and 5: one file, one tool that returns its argument.
const TRIVIAL: &str = "def tool_noop(x: int = 0) -> int:\n    \"\"\"Returns x.\n\n    Args:\n        x: A number.\n    \"\"\"\n    return x\n";

/// Sections 4 and 5: the per-call overhead of a trivial tool through `Runtime::call`
/// (against the same function called directly, by `timeit` in the same embedded
/// interpreter, and against `LCPBinding.execute_tool`), then the `tools/call` round
/// trip through `lcp serve` over stdio with a raw JSON-RPC client.
fn runtime_rows(table: &mut Table, setup: &Setup, folder: &Path) {
    eprintln!("per-call overhead ...");
    let file = folder.join("trivial.py");
    fs::write(&file, TRIVIAL).expect("trivial library is writable");
    let registry =
        Registry::load(&Sources { folders: vec![folder.to_path_buf()], files: Vec::new() }, &Options::default());
    assert_eq!(registry.tools().count(), 1, "the trivial library has one tool");
    let runtime = Runtime::new(RuntimeConfig { venv: None, ..RuntimeConfig::default() }).expect("Python starts");
    let args = serde_json::json!({"x": 1});
    let options = CallOptions::default();
    let first = runtime.call(&registry, "tool_noop", &args, &options);
    assert!(first.ok() && first.output == 1, "the trivial tool runs: {first:?}");
    // Calls per sample: per-call times are a batch's time divided by this.
    let calls = if setup.quick { 2_000 } else { 20_000 };
    let direct = format!(
        "__import__('timeit').timeit('f(x=1)', globals={{'f': next(m for m in list(__import__('sys').modules.values()) \
         if getattr(m, '__file__', None) == {:?}).tool_noop}}, number={calls}) / {calls}",
        path_str(&file)
    );
    let out = setup.scratch.join("execute-tool.json");
    let reps = setup.reps(11);
    let me = std::env::current_exe().expect("the bench knows its own path");
    let workers = worker_runtime(setup, None, false);
    let first = workers.call(&registry, "tool_noop", &args, &options);
    assert!(first.ok() && first.output == 1, "the trivial tool runs in a worker: {first:?}");
    let timed = CallOptions { timeout: Some(std::time::Duration::from_secs(60)), ..CallOptions::default() };
    let mut contenders = vec![
        Contender::new("call", reps, || {
            seconds(|| {
                for _ in 0..calls {
                    std::hint::black_box(runtime.call(&registry, "tool_noop", &args, &options));
                }
            }) / calls as f64
        }),
        Contender::new("worker", reps, || {
            seconds(|| {
                for _ in 0..calls {
                    std::hint::black_box(workers.call(&registry, "tool_noop", &args, &options));
                }
            }) / calls as f64
        }),
        Contender::new("worker-timeout", reps, || {
            seconds(|| {
                for _ in 0..calls {
                    std::hint::black_box(workers.call(&registry, "tool_noop", &args, &timed));
                }
            }) / calls as f64
        }),
        Contender::new("call-claimed", reps, || {
            let out = python::output(Command::new(&me).args(["--child-calls", path_str(folder), &calls.to_string()]));
            out.parse().expect("the calls child prints a number")
        }),
        Contender::new("direct", reps, || {
            runtime.eval(&direct).expect("timeit runs").parse().expect("timeit prints a number")
        }),
    ];
    if !setup.lcp_only {
        let script = setup.scripts.join("execute_tool_timing.py");
        let calls = calls.to_string();
        contenders.push(Contender::many(&["ref-call", "ref-direct"], reps, move || {
            let args = [path_str(&script), path_str(folder), "tool_noop", &calls, "--out", path_str(&out)];
            process(&setup.python.executable, &args);
            let result = read_json(&out);
            vec![result["execute_tool_s"].as_f64().unwrap_or(f64::NAN), result["direct_s"].as_f64().unwrap_or(f64::NAN)]
        }));
    }
    let mut r = interleaved(contenders);
    for key in ["ref-call", "ref-direct"] {
        r.entry(key.to_string()).or_default();
    }
    let m = |k: &str| r[k].median();
    let lcp_overhead = m("call") - m("direct");
    let claimed_overhead = m("call-claimed") - m("direct");
    let worker_overhead = m("worker") - m("direct");
    let ref_overhead = m("ref-call") - m("ref-direct");
    let against = |overhead: f64| {
        (
            format!("overhead {}: {} lower", duration(overhead), ratio(ref_overhead, overhead)),
            verdict(ref_overhead >= 20.0 * overhead, "overhead >= 20× lower than LCPBinding's"),
        )
    };
    table.section(&format!("4. Per-call overhead on a trivial tool (warm; {calls} calls per sample, time per call)"));
    let (note, target) = against(claimed_overhead);
    table.time("lcp Runtime::call, stdout claimed (as lcp serve / lcp call)", &r["call-claimed"], &note, &target);
    let (note, target) = against(lcp_overhead);
    table.time("lcp Runtime::call, fd 1 moved to the capture per call", &r["call"], &note, &target);
    table.time(
        "lcp Runtime::call in a worker process (the default isolation)",
        &r["worker"],
        &format!("overhead {}: {} lower", duration(worker_overhead), ratio(ref_overhead, worker_overhead)),
        &verdict(worker_overhead < ref_overhead, "overhead < LCPBinding's (in-process)"),
    );
    table.time(
        "  the same with a timeout (60 s)",
        &r["worker-timeout"],
        &ratio(m("worker-timeout"), m("worker")),
        &verdict(m("worker-timeout") <= 1.05 * m("worker"), "≤ the call without (within 5%)"),
    );
    table.time("direct Python call (timeit, same embedded interpreter)", &r["direct"], "1.00× (reference)", "");
    table.time(
        "LCPBinding.execute_tool (lollms-client, own python process)",
        &r["ref-call"],
        &format!("overhead {}", duration(ref_overhead)),
        "",
    );
    table.time("direct Python call (timeit, LCPBinding's process)", &r["ref-direct"], "", "");
    drop(runtime);
    drop(workers);

    eprintln!("lcp serve round trip ...");
    let trips = if setup.quick { 200 } else { 1_000 };
    let all = RefCell::new(Vec::new());
    let mut server = Server::start(&setup.lcp, folder, &[]);
    let mut in_process = Server::start(&setup.lcp, folder, &["--in-process"]);
    let mut slow = Server::started(&setup.lcp, folder, &[], &[("LCP_SLOW_PATHS", "direct")]).0;
    let mut id = 1;
    let first = seconds(|| server.call_noop(&mut id));
    in_process.call_noop(&mut id);
    slow.call_noop(&mut id);
    let contenders = vec![
        Contender::new("start", setup.reps(21), || {
            let (server, started) = Server::started(&setup.lcp, folder, &[], &[]);
            server.stop();
            started
        }),
        Contender::many(&["trips"], setup.reps(11), || {
            let mut batch: Vec<f64> = (0..trips).map(|_| seconds(|| server.call_noop(&mut id))).collect();
            all.borrow_mut().extend_from_slice(&batch);
            batch.sort_by(f64::total_cmp);
            vec![batch[batch.len() / 2]]
        }),
        Contender::many(&["trips-in-process"], setup.reps(11), || {
            let mut next = 1_000_000_000;
            let mut batch: Vec<f64> = (0..trips).map(|_| seconds(|| in_process.call_noop(&mut next))).collect();
            batch.sort_by(f64::total_cmp);
            vec![batch[batch.len() / 2]]
        }),
        Contender::many(&["trips-slow"], setup.reps(11), || {
            let mut next = 2_000_000_000;
            let mut batch: Vec<f64> = (0..trips).map(|_| seconds(|| slow.call_noop(&mut next))).collect();
            batch.sort_by(f64::total_cmp);
            vec![batch[batch.len() / 2]]
        }),
    ];
    let r = interleaved(contenders);
    server.stop();
    in_process.stop();
    slow.stop();
    let mut all = Samples(all.into_inner());
    // The warm-up batch is not part of the record.
    all.0.drain(..trips);
    let p99 = {
        let mut sorted = all.0.clone();
        sorted.sort_by(f64::total_cmp);
        sorted[(sorted.len() * 99 / 100).min(sorted.len() - 1)]
    };
    table.section("5. tools/call round trip through lcp serve (stdio, raw JSON-RPC, sequential)");
    table.time(
        "lcp serve tools/call (worker processes), each round trip",
        &all,
        &format!("p99 {}", duration(p99)),
        &verdict(all.median() < 200e-6, "median < 200 µs"),
    );
    table.time(&format!("  median of each batch of {trips}"), &r["trips"], "", "");
    table.time(
        "lcp serve --in-process tools/call, median of each batch",
        &r["trips-in-process"],
        &ratio(r["trips-in-process"].median(), r["trips"].median()),
        "",
    );
    table.time(
        "lcp serve tools/call with the direct path off (LCP_SLOW_PATHS=direct), median of each batch",
        &r["trips-slow"],
        &ratio(r["trips-slow"].median(), r["trips"].median()),
        &verdict(r["trips-slow"].median() > 1.1 * r["trips"].median(), "the direct path gains ≥ 10%"),
    );
    table.time("lcp serve start-up (spawn -> initialize response)", &r["start"], "", "");
    table.time("first tools/call (starts Python, imports the library)", &Samples(vec![first]), "", "");
}

/// A runtime whose tools run in worker processes of the `lcp` binary under test.
fn worker_runtime(setup: &Setup, workers: Option<usize>, standby: bool) -> Runtime {
    let mut settings = WorkerSettings::new(&setup.lcp);
    if let Some(workers) = workers {
        settings.workers = workers;
    }
    settings.standby = standby;
    let config = RuntimeConfig { venv: None, isolation: Isolation::Workers(settings), ..RuntimeConfig::default() };
    Runtime::new(config).expect("a runtime with worker processes")
}

/// The library of section 7.
const ISOLATION: &str = r#"import os
import time


def tool_noop(x: int = 0) -> int:
    """Returns x."""
    return x


def tool_crash() -> int:
    """Ends its process."""
    os._exit(3)


def tool_burn(turns: int = 1000000) -> int:
    """Pure-Python work: `turns` turns of a loop."""
    total = 0
    for turn in range(turns):
        total += turn & 7
    return total


def tool_sleep(seconds: float = 1.0) -> str:
    """Sleeps."""
    time.sleep(seconds)
    return "slept"
"#;

/// Section 7: what isolation costs and gives: from a crash to the next result, CPU-bound
/// tools on two cores, I/O-bound tools side by side; in-process for comparison.
fn isolation_rows(table: &mut Table, setup: &Setup, folder: &Path) {
    eprintln!("isolation ...");
    fs::create_dir_all(folder).expect("isolation library folder is creatable");
    fs::write(folder.join("isolation.py"), ISOLATION).expect("isolation library is writable");
    let registry =
        Registry::load(&Sources { folders: vec![folder.to_path_buf()], files: Vec::new() }, &Options::default());
    let options = CallOptions::default();
    let together = |runtime: &Runtime, tool: &str, args: Value, count: usize| -> f64 {
        seconds(|| {
            std::thread::scope(|scope| {
                let calls: Vec<_> =
                    (0..count).map(|_| scope.spawn(|| runtime.call(&registry, tool, &args, &options))).collect();
                for call in calls {
                    let result = call.join().expect("the call's thread ends");
                    assert!(result.ok(), "{tool} runs: {result:?}");
                }
            });
        })
    };
    let one = worker_runtime(setup, Some(1), false);
    // As `lcp serve` runs them: one idle worker stands by.
    let serving = worker_runtime(setup, Some(2), true);
    let two = worker_runtime(setup, Some(2), false);
    let cores = worker_runtime(setup, None, false);
    let in_process = Runtime::new(RuntimeConfig { venv: None, ..RuntimeConfig::default() }).expect("Python starts");
    // Every runtime has its workers up and the library loaded before measuring.
    for runtime in [&one, &serving, &two, &cores, &in_process] {
        together(runtime, "tool_sleep", serde_json::json!({"seconds": 0.3}), 8);
    }
    let noop = serde_json::json!({"x": 1});
    // A CPU-bound tool of about one second: its work measured alone, in a worker.
    let probe = 2_000_000u64;
    let took =
        seconds(|| assert!(two.call(&registry, "tool_burn", &serde_json::json!({"turns": probe}), &options).ok()));
    let turns = ((probe as f64) / took.max(1e-3)) as u64;
    let burn = serde_json::json!({"turns": turns});
    let reps = setup.reps(7);
    // A crash, then the time to the next call's result.
    let crash_then_next = |runtime: &Runtime| {
        let crashed = runtime.call(&registry, "tool_crash", &Value::Object(Default::default()), &options);
        assert!(!crashed.ok(), "the crash is a failed call");
        let took = seconds(|| assert!(runtime.call(&registry, "tool_noop", &noop, &options).ok()));
        // The worker replacing it starts now: not during the next row's work.
        std::thread::sleep(std::time::Duration::from_millis(500));
        took
    };
    let contenders = vec![
        Contender::new("crash-to-next", reps * 3, || crash_then_next(&serving)),
        Contender::new("crash-to-next-start", reps * 3, || crash_then_next(&one)),
        Contender::new("burn-alone", reps, || together(&two, "tool_burn", burn.clone(), 1)),
        Contender::new("burn-workers", reps, || together(&two, "tool_burn", burn.clone(), 2)),
        Contender::new("burn-in-process", reps, || together(&in_process, "tool_burn", burn.clone(), 2)),
        Contender::new("sleep-workers", reps, || {
            together(&cores, "tool_sleep", serde_json::json!({"seconds": 1.0}), 8)
        }),
        Contender::new("sleep-in-process", reps, || {
            together(&in_process, "tool_sleep", serde_json::json!({"seconds": 1.0}), 8)
        }),
    ];
    let r = interleaved(contenders);
    let m = |k: &str| r[k].median();
    table.section("7. Isolation (worker processes; in-process for comparison)");
    table.time(
        "from a crash to the next call's result (as lcp serve: --workers 2, one stands by)",
        &r["crash-to-next"],
        "",
        &verdict(m("crash-to-next") < 0.100, "< 100 ms (+ the library's import)"),
    );
    table.time(
        "  the same with --workers 1 (the next call waits for a new worker to start)",
        &r["crash-to-next-start"],
        "",
        "",
    );
    table.time(
        "a CPU-bound tool of about 1 s (pure Python), alone in a worker",
        &r["burn-alone"],
        "1.00× (reference)",
        "",
    );
    table.time(
        "two of them called together, --workers 2",
        &r["burn-workers"],
        &ratio(m("burn-workers"), m("burn-alone")),
        &verdict(m("burn-workers") < 1.3 * m("burn-alone"), "< 1.3× alone (< 1.3 s for 1 s tools)"),
    );
    table.time(
        "  the same in-process (one interpreter, one GIL)",
        &r["burn-in-process"],
        &ratio(m("burn-in-process"), m("burn-workers")),
        "",
    );
    table.time(
        &format!("eight tools sleeping 1 s called together, --workers {} (the cores)", setup.threads),
        &r["sleep-workers"],
        "",
        &verdict(m("sleep-workers") < 1.3, "about 1 s (< 1.3 s)"),
    );
    table.time("  the same in-process", &r["sleep-in-process"], &ratio(m("sleep-in-process"), m("sleep-workers")), "");
}

/// The library of section 7b: the same tool with and without declarations.
const SANDBOXED: &str = r#"TOOL_POLICIES = {"tool_confined": {"read_only": True, "open_world": False}}


def tool_plain(x: int = 0) -> int:
    """Returns x; declares nothing."""
    return x


def tool_confined(x: int = 0) -> int:
    """Returns x; read-only, closed-world."""
    return x
"#;

/// Section 7b: what the sandbox costs (SPEC §18): a worker's start (a fresh runtime's
/// first call: the worker process, its sandbox, Python, the import) and a warm call,
/// with no sandbox at all (`WorkerSettings::sandboxed = false`), with the sandbox every
/// worker gets (namespaces, no capabilities, Landlock, for a tool that declares
/// nothing), and with the full one (`read_only` and `open_world: false` add seccomp and
/// an empty network namespace).
fn sandbox_rows(table: &mut Table, setup: &Setup, folder: &Path) {
    eprintln!("sandbox ...");
    fs::create_dir_all(folder).expect("sandbox library folder is creatable");
    fs::write(folder.join("sandboxed.py"), SANDBOXED).expect("sandbox library is writable");
    let registry =
        Registry::load(&Sources { folders: vec![folder.to_path_buf()], files: Vec::new() }, &Options::default());
    let options = CallOptions::default();
    let args = serde_json::json!({"x": 1});
    let call = |runtime: &Runtime, tool: &str| assert!(runtime.call(&registry, tool, &args, &options).ok(), "{tool}");
    let runtime = |sandboxed: bool| {
        let mut settings = WorkerSettings::new(&setup.lcp);
        settings.workers = 1;
        settings.sandboxed = sandboxed;
        let config = RuntimeConfig { venv: None, isolation: Isolation::Workers(settings), ..RuntimeConfig::default() };
        Runtime::new(config).expect("a runtime with worker processes")
    };
    let start = |tool: &str, sandboxed: bool| {
        let runtime = runtime(sandboxed);
        let took = seconds(|| call(&runtime, tool));
        runtime.shutdown();
        took
    };
    let (warm, unconfined) = (runtime(true), runtime(false));
    call(&warm, "tool_plain");
    call(&warm, "tool_confined");
    call(&unconfined, "tool_confined");
    let reps = setup.reps(9);
    let calls = if setup.quick { 200 } else { 2000 };
    let warm_calls = |runtime: &Runtime, tool: &str| {
        let each: Vec<f64> = (0..calls).map(|_| seconds(|| call(runtime, tool))).collect();
        Samples(each).median()
    };
    let r = interleaved(vec![
        Contender::new("start-none", reps, || start("tool_confined", false)),
        Contender::new("start-plain", reps, || start("tool_plain", true)),
        Contender::new("start-confined", reps, || start("tool_confined", true)),
        Contender::new("warm-none", reps, || warm_calls(&unconfined, "tool_confined")),
        Contender::new("warm-plain", reps, || warm_calls(&warm, "tool_plain")),
        Contender::new("warm-confined", reps, || warm_calls(&warm, "tool_confined")),
    ]);
    warm.shutdown();
    unconfined.shutdown();
    let m = |k: &str| r[k].median();
    table.section("7b. The sandbox (namespaces, capabilities, Landlock, seccomp)");
    table.time("a worker's start and first call, no sandbox at all", &r["start-none"], "", "");
    table.time(
        "  every worker's sandbox (tool declaring nothing)",
        &r["start-plain"],
        &ratio(m("start-plain"), m("start-none")),
        &verdict(m("start-plain") <= 1.5 * m("start-none"), "≤ 1.5×"),
    );
    table.time(
        "  the full sandbox (read_only and open_world: false)",
        &r["start-confined"],
        &ratio(m("start-confined"), m("start-none")),
        &verdict(m("start-confined") <= 1.5 * m("start-none"), "≤ 1.5×"),
    );
    table.time("a warm call (median of each run), no sandbox at all", &r["warm-none"], "", "");
    table.time(
        "  every worker's sandbox",
        &r["warm-plain"],
        &ratio(m("warm-plain"), m("warm-none")),
        &verdict(m("warm-plain") <= 1.05 * m("warm-none"), "≤ 1.05×"),
    );
    table.time(
        "  the full sandbox",
        &r["warm-confined"],
        &ratio(m("warm-confined"), m("warm-none")),
        &verdict(m("warm-confined") <= 1.05 * m("warm-none"), "≤ 1.05×"),
    );
}

/// `lcp serve FOLDER` over stdio, driven by hand: one JSON-RPC message a line.
struct Server {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Server {
    /// Spawns the server and does the handshake; also returns the time from spawn to
    /// the `initialize` response.
    fn started(lcp: &Path, folder: &Path, flags: &[&str], env: &[(&str, &str)]) -> (Server, f64) {
        let started = std::time::Instant::now();
        let mut child = Command::new(lcp)
            .arg("serve")
            .arg(folder)
            .args(flags)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot run {} serve: {err}", lcp.display()));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut server = Server { child, stdin, stdout };
        let init = server.request(
            0,
            "initialize",
            serde_json::json!({
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "lcp-bench", "version": "1"},
            }),
        );
        let elapsed = started.elapsed().as_secs_f64();
        assert!(init.get("result").is_some(), "initialize answered: {init}");
        server.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (server, elapsed)
    }

    fn start(lcp: &Path, folder: &Path, flags: &[&str]) -> Server {
        Server::started(lcp, folder, flags, &[]).0
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("JSON-RPC message serializes");
        line.push(b'\n');
        self.stdin.write_all(&line).and_then(|()| self.stdin.flush()).expect("lcp serve reads its stdin");
    }

    /// Sends a request and waits for the response with its id (skipping notifications).
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).expect("lcp serve writes its stdout");
            assert!(read > 0, "lcp serve closed its stdout before answering {method}");
            let message: Value = serde_json::from_str(&line).expect("lcp serve writes JSON lines");
            if message.get("id").and_then(Value::as_u64) == Some(id) {
                return message;
            }
        }
    }

    fn call_noop(&mut self, id: &mut u64) {
        *id += 1;
        let response = self.request(*id, "tools/call", serde_json::json!({"name": "tool_noop", "arguments": {"x": 1}}));
        let result = &response["result"];
        assert!(result.is_object() && result["isError"] != true, "tools/call of the trivial tool succeeds: {response}");
    }

    /// Reads messages until a notification of `method` arrives.
    fn wait_for(&mut self, method: &str) {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).expect("lcp serve writes its stdout");
            assert!(read > 0, "lcp serve closed its stdout before sending {method}");
            let message: Value = serde_json::from_str(&line).expect("lcp serve writes JSON lines");
            if message.get("method").and_then(Value::as_str) == Some(method) {
                return;
            }
        }
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// Section 6: peak memory of discovery on the large corpus.
///
/// Every figure is read by the measured process itself: the heap by a counting
/// allocator (lcp) or tracemalloc (LCPBinding), RSS from `/proc/self/status`
/// (`ru_maxrss` is no use here: a spawned child inherits its parent's at `exec`).
/// LCPBinding's RSS figures come from its timing runs in section 1, its traced heap
/// from one more run under tracemalloc (slow, and the same every time).
fn memory(table: &mut Table, setup: &Setup, corpus: &Corpus, empty: &Path, cold: &BTreeMap<String, Samples>) {
    eprintln!("memory ...");
    let me = std::env::current_exe().expect("the bench knows its path");
    let mut s: BTreeMap<&str, Samples> = BTreeMap::new();
    let child = |folder: &Path| -> Value {
        let out = python::output(Command::new(&me).args(["--child-memory", path_str(folder)]));
        serde_json::from_str(&out).expect("memory child prints JSON")
    };
    for _ in 0..setup.reps(3) {
        let large = child(&corpus.root);
        let number = |key: &str| large[key].as_f64().unwrap_or(f64::NAN);
        s.entry("heap-peak").or_default().0.push(number("heap_peak"));
        s.entry("heap-live").or_default().0.push(number("heap_live"));
        s.entry("lcp-rss-growth")
            .or_default()
            .0
            .push((number("vmrss_after_kib") - number("vmrss_before_kib")) * 1024.0);
        s.entry("lcp-hwm").or_default().0.push(number("vmhwm_after_kib") * 1024.0);
        let none = child(empty);
        s.entry("lcp-hwm-empty").or_default().0.push(none["vmhwm_after_kib"].as_f64().unwrap_or(f64::NAN) * 1024.0);
    }
    if !setup.lcp_only {
        let out = setup.scratch.join("python-result.json");
        let script = setup.scripts.join("lcpbinding.py");
        let args = [path_str(&script), path_str(&corpus.root), "--out", path_str(&out), "--tracemalloc"];
        python::output(Command::new(&setup.python.executable).args(args));
        let traced = read_json(&out);
        s.entry("ref-traced-peak").or_default().0.push(traced["traced_peak_bytes"].as_f64().unwrap_or(f64::NAN));
        s.entry("ref-traced-live").or_default().0.push(traced["traced_current_bytes"].as_f64().unwrap_or(f64::NAN));
    }
    for key in ["ref-rss-growth", "ref-hwm", "ref-hwm-import"] {
        s.insert(key, cold.get(key).cloned().unwrap_or_default());
    }
    for key in ["ref-traced-peak", "ref-traced-live"] {
        s.entry(key).or_default();
    }
    let m = |k: &str| s[k].median();

    table.section("6. Peak memory, 2,000 libraries / 10,000 tools");
    table.text("  heap: bytes allocated and not freed; lcp: a counting global allocator around Registry::load (child");
    table.text("  process); LCPBinding: tracemalloc around its construction (import excluded)");
    table.bytes(
        "lcp registry heap, peak during Registry::load",
        &s["heap-peak"],
        &format!("{} LCPBinding traced peak", ratio(m("heap-peak"), m("ref-traced-peak"))),
        &verdict(m("heap-peak") < 0.5 * m("ref-traced-peak"), "< 0.5× LCPBinding heap peak"),
    );
    table.bytes(
        "lcp registry heap, retained after load",
        &s["heap-live"],
        &format!("{} LCPBinding retained", ratio(m("heap-live"), m("ref-traced-live"))),
        "",
    );
    table.bytes("LCPBinding traced heap, peak during construction", &s["ref-traced-peak"], "", "");
    table.bytes("LCPBinding traced heap, retained after construction", &s["ref-traced-live"], "", "");
    table.text("  RSS growth: VmRSS just after discovery minus just before, in the same process");
    table.bytes(
        "lcp, across Registry::load",
        &s["lcp-rss-growth"],
        &format!("{} LCPBinding", ratio(m("lcp-rss-growth"), m("ref-rss-growth"))),
        "",
    );
    table.bytes("LCPBinding, across its construction", &s["ref-rss-growth"], "", "");
    table.text("  process peak RSS (VmHWM) of a process that only discovers: the bench's memory child for lcp");
    table.bytes(
        "lcp: Registry::load in its own process",
        &s["lcp-hwm"],
        &format!("{} LCPBinding process", ratio(m("lcp-hwm"), m("ref-hwm"))),
        &verdict(m("lcp-hwm") < 0.5 * m("ref-hwm"), "< 0.5× LCPBinding process peak"),
    );
    table.bytes("lcp: the same process on an empty folder", &s["lcp-hwm-empty"], "", "");
    table.bytes("LCPBinding process (python + import + discovery)", &s["ref-hwm"], "", "");
    table.bytes("LCPBinding process after its import, before discovery", &s["ref-hwm-import"], "", "");
}

/// The calls child: the per-call time of `Runtime::call` on `tool_noop` of `folder`,
/// in a process whose standard output is claimed (as `lcp serve` and `lcp call` run
/// tools), printed as seconds on that standard output.
fn child_calls(folder: &Path, calls: u32) {
    let runtime = Runtime::new(RuntimeConfig { venv: None, ..RuntimeConfig::default() }).expect("Python starts");
    let mut stdout = Runtime::claim_stdout().expect("the standard output can be claimed");
    let registry =
        Registry::load(&Sources { folders: vec![folder.to_path_buf()], files: Vec::new() }, &Options::default());
    let (args, options) = (serde_json::json!({"x": 1}), CallOptions::default());
    let run = || {
        seconds(|| {
            for _ in 0..calls {
                std::hint::black_box(runtime.call(&registry, "tool_noop", &args, &options));
            }
        }) / f64::from(calls)
    };
    run();
    writeln!(stdout, "{}", run()).expect("the claimed standard output is writable");
}

/// The memory child: counts the heap around one `Registry::load` and prints JSON.
fn child_memory(folder: &Path) {
    let sources = Sources { folders: vec![folder.to_path_buf()], files: Vec::new() };
    let options = Options::default();
    let rss_before = measure::proc_status_kib("VmRSS");
    measure::start_counting();
    let registry = Registry::load(&sources, &options);
    let (live, peak) = measure::heap();
    let rss_after = measure::proc_status_kib("VmRSS");
    let hwm_after = measure::proc_status_kib("VmHWM");
    let tools = registry.tools().count();
    println!(
        "{}",
        serde_json::json!({
            "heap_live": live, "heap_peak": peak, "tools": tools,
            "vmrss_before_kib": rss_before, "vmrss_after_kib": rss_after, "vmhwm_after_kib": hwm_after,
        })
    );
    drop(registry);
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("bench paths are UTF-8")
}
