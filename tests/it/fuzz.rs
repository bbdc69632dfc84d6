//! Mutation fuzzing, deterministic: a fixed seed, a bounded number of mutated files
//! (`mutate`), every command and format. Each batch of files sits next to a healthy
//! one: nothing may panic, JSON output must be JSON that readers take, and the healthy
//! tool must still be exported. The bulk runs in-process (the library), a sample
//! through the binary. `cargo run --release --example fuzz` is the long-running kind.

use std::path::Path;

use lcp::discovery::registry::{Descriptions, Options, Registry, Sources};
use lcp::export::{self, Format};
use serde_json::Value;

use crate::mutate::{self, HEALTHY_TOOL, Rng};
use crate::support::*;

const SEED: u64 = 0x1c9f_5eed_0000_0010;
const BATCHES: usize = 15;
const FILES_PER_BATCH: usize = 20;
/// One batch in this many also goes through the binary, command by command.
const BINARY_EVERY: usize = 5;

const FORMATS: [Format; 6] = Format::ALL;

#[test]
fn mutated_files_never_panic_and_never_hide_a_healthy_neighbour() {
    let seeds = mutate::seeds(root());
    assert!(seeds.len() > 50, "only {} seed files", seeds.len());
    let mut rng = Rng::new(SEED);
    for batch in 0..BATCHES {
        let dir = temp_dir(&format!("fuzz-{batch}"));
        let files = mutate::write_batch(&dir, &mut rng, &seeds, FILES_PER_BATCH);
        assert_eq!(files.len(), FILES_PER_BATCH, "{}", dir.display());
        in_process(&dir);
        if batch % BINARY_EVERY == 0 {
            with_binary(&dir);
        }
        // Kept when an assertion fails: the folder is the reproducer.
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Loading, the runtime's reading of each schema, `check --format json`'s diagnostics
/// and every export, through the library.
fn in_process(dir: &Path) {
    let registry = Registry::load(&Sources { folders: vec![dir.to_path_buf()], files: vec![] }, &Options::default());
    assert!(registry.tool(HEALTHY_TOOL).is_some(), "{}: {:#?}", dir.display(), registry.diagnostics());
    for (_, tool) in registry.tools() {
        assert!(tool.parameters.value().is_object(), "{}: {}", dir.display(), tool.name);
    }
    let diagnostics = serde_json::to_string(&registry.diagnostics()).expect("diagnostics serialize");
    reread(&diagnostics, dir, "diagnostics");
    for format in FORMATS {
        for strict in [false, true] {
            let (document, _) = export::export(&registry, &Descriptions::default(), format.strict(strict));
            let text = serde_json::to_string(&document).expect("an export serializes");
            let what = format!("{format} strict={strict}");
            reread(&text, dir, &what);
            assert!(text.contains(&format!("\"{HEALTHY_TOOL}\"")), "{}: {what} lost the healthy tool", dir.display());
        }
    }
}

/// JSON that a reader with serde_json's limits (128 levels) takes back.
fn reread(text: &str, dir: &Path, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|err| panic!("{}: {what} is not readable JSON: {err}", dir.display()))
}

/// Every command and format through the binary: exit codes 0, 1 or 2, never a panic,
/// JSON where JSON is promised, and the healthy tool in every listing.
fn with_binary(dir: &Path) {
    let folder = dir.to_str().unwrap();
    let mut runs: Vec<(Vec<String>, bool)> = vec![
        (vec!["check".into(), folder.into()], false),
        (vec!["check".into(), "--format".into(), "json".into(), folder.into()], true),
        (vec!["list".into(), "--static".into(), folder.into()], false),
    ];
    for format in FORMATS {
        // `--strict` is a usage error where the format has no strict mode.
        for strict in [false, true].into_iter().filter(|strict| !strict || format.has_strict_mode()) {
            let mut args =
                vec!["export".into(), "--static".into(), "--format".into(), format.to_string(), folder.into()];
            if strict {
                args.push("--strict".into());
            }
            runs.push((args, true));
        }
    }
    for (args, is_json) in runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = lcp(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            matches!(output.status.code(), Some(0..=2)) && !stderr.contains("panicked"),
            "{args:?}: {:?}\n{stderr}",
            output.status
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        if is_json {
            reread(&stdout, dir, &args.join(" "));
        }
        if args[0] != "check" {
            assert!(stdout.contains(HEALTHY_TOOL), "{args:?} lost the healthy tool");
        }
    }
}
