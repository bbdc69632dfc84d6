//! Section 12: `lcp audit` (SPEC §20) on the 2,000-library / 10,000-tool corpus: the
//! whole process of `lcp audit --format json` against `lcp check` of the same folder,
//! interleaved (target ≤ 2×); and `lcp export --format manifest`, which carries each
//! tool's capabilities, against the same check.

use std::path::Path;

use crate::corpus::Corpus;
use crate::measure::{Contender, interleaved, process};
use crate::table::{Table, ratio, verdict};

pub fn rows(table: &mut Table, lcp: &Path, corpus: &Corpus, quick: bool) {
    eprintln!("audit ...");
    let folder = corpus.root.to_str().expect("the corpus path is UTF-8");
    let reps = if quick { 3 } else { 11 };
    let run = |args: &'static [&'static str]| {
        move || {
            let mut all: Vec<&str> = args.to_vec();
            all.push(folder);
            process(lcp, &all)
        }
    };
    let measured = interleaved(vec![
        Contender::new("check", reps, run(&["check"])),
        Contender::new("audit", reps, run(&["audit", "--format", "json"])),
        Contender::new("manifest", reps, run(&["export", "--static", "--format", "manifest"])),
    ]);
    let (check, audit, manifest) = (&measured["check"], &measured["audit"], &measured["manifest"]);
    let audit_ratio = audit.median() / check.median();
    table.section(&format!("12. Audit, {} tools (whole process)", corpus.tools));
    table.time("lcp check", check, "1.00×", "");
    table.time(
        "lcp audit --format json",
        audit,
        &ratio(audit.median(), check.median()),
        &verdict(audit_ratio <= 2.0, "<= 2x check"),
    );
    table.time(
        "lcp export --format manifest (with capabilities)",
        manifest,
        &ratio(manifest.median(), check.median()),
        "",
    );
}
