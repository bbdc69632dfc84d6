//! SPEC §6: a rescan re-reads only files whose size or modification time changed.

use std::sync::Arc;

use lcp::discovery::registry::{Options, Registry, Sources};

use crate::support::*;

fn tool_source(name: &str, doc: &str) -> String {
    format!("def {name}(a: int):\n    \"\"\"{doc}\"\"\"\n")
}

#[test]
fn rescan_with_nothing_changed_reads_nothing_and_keeps_every_library() {
    let dir = temp_dir("rescan-same");
    write(&dir.join("a.py"), tool_source("tool_a", "A."));
    write(&dir.join("b.py"), tool_source("tool_b", "B."));
    let mut registry = Registry::load(&Sources { folders: vec![dir], files: vec![] }, &Options::default());
    let before = registry.libraries().to_vec();
    assert!(registry.rescan().is_empty());
    assert!(before.iter().zip(registry.libraries()).all(|(a, b)| Arc::ptr_eq(a, b)));
}

#[test]
fn rescan_rereads_changed_files_only_and_reports_added_and_removed_ones() {
    let dir = temp_dir("rescan-changes");
    write(&dir.join("a.py"), tool_source("tool_a", "A."));
    write(&dir.join("b.py"), tool_source("tool_b", "B."));
    write(&dir.join("c.py"), tool_source("tool_c", "C."));
    let mut registry = Registry::load(&Sources { folders: vec![dir.clone()], files: vec![] }, &Options::default());
    let untouched = registry.libraries()[0].clone();

    write(&dir.join("b.py"), tool_source("tool_b", "B, longer now."));
    write(&dir.join("d.py"), tool_source("tool_d", "D."));
    std::fs::remove_file(dir.join("c.py")).unwrap();
    let changes = registry.rescan();

    assert_eq!(changes.changed, [dir.join("b.py")]);
    assert_eq!(changes.added, [dir.join("d.py")]);
    assert_eq!(changes.removed, [dir.join("c.py")]);
    assert_eq!(tool_names(&registry), ["tool_a", "tool_b", "tool_d"]);
    assert_eq!(registry.tool("tool_b").unwrap().1.description, "B, longer now.");
    assert!(Arc::ptr_eq(&untouched, &registry.libraries()[0]), "an unchanged file was read again");
}

#[test]
fn rescan_keeps_diagnostics_and_first_wins_across_files() {
    let dir = temp_dir("rescan-dup");
    write(&dir.join("a.py"), tool_source("tool_same", "First."));
    let mut registry = Registry::load(&Sources { folders: vec![dir.clone()], files: vec![] }, &Options::default());
    write(&dir.join("b.py"), tool_source("tool_same", "Second."));
    write(&dir.join("c.py"), "def tool_broken(:\n");
    registry.rescan();
    assert_eq!(tool_names(&registry), ["tool_same"]);
    assert_eq!(registry.tool("tool_same").unwrap().1.description, "First.");
    assert_eq!(diagnostics_with(&registry, &["b.py", "already defined"]).len(), 1);
    assert_eq!(diagnostics_with(&registry, &["c.py", "syntax error"]).len(), 1);
    // Unchanged on the next rescan: the same diagnostics, not duplicated.
    registry.rescan();
    assert_eq!(diagnostics_with(&registry, &["b.py", "already defined"]).len(), 1);
    assert_eq!(registry.diagnostics().len(), 2);
}

#[test]
fn changed_sources_are_read_on_the_next_rescan() {
    let first = temp_dir("sources-a");
    let second = temp_dir("sources-b");
    write(&first.join("a.py"), tool_source("tool_a", "A."));
    write(&second.join("b.py"), tool_source("tool_b", "B."));
    let mut registry = Registry::load(&Sources { folders: vec![first.clone()], files: vec![] }, &Options::default());
    let kept = registry.libraries()[0].clone();
    registry.set_sources(Sources { folders: vec![first.clone(), second.clone()], files: vec![] });
    assert_eq!(registry.sources().folders, [first.clone(), second.clone()]);
    let changes = registry.rescan();
    assert_eq!(changes.added, [second.join("b.py")]);
    assert_eq!(tool_names(&registry), ["tool_a", "tool_b"]);
    assert!(Arc::ptr_eq(&kept, &registry.libraries()[0]));
}

#[test]
fn tools_are_found_by_name_after_a_rescan_moved_them() {
    let dir = temp_dir("rescan-lookup");
    write(&dir.join("a.py"), tool_source("tool_a", "A.") + &tool_source("tool_b", "B."));
    write(&dir.join("c.py"), tool_source("tool_c", "C."));
    let mut registry = Registry::load(&Sources { folders: vec![dir.clone()], files: vec![] }, &Options::default());
    assert_eq!(registry.tool("tool_b").unwrap().1.name, "tool_b");
    write(&dir.join("a.py"), tool_source("tool_b", "B, now first."));
    assert_eq!(registry.rescan().changed, [dir.join("a.py")]);
    assert!(registry.tool("tool_a").is_none());
    assert_eq!(registry.tool("tool_b").unwrap().1.description, "B, now first.");
    assert_eq!(registry.tool("tool_c").unwrap().0.stem, "c");
}

fn shop_folder(name: &str) -> std::path::PathBuf {
    let dir = temp_dir(name);
    write(&dir.join("shop/shop.py"), "from .models import Size\n\ndef tool_pick(size: Size):\n    \"\"\"Pick.\"\"\"\n");
    write(&dir.join("shop/models.py"), "import enum\n\nclass Size(str, enum.Enum):\n    S = 's'\n");
    write(&dir.join("shop/notes.py"), "def tool_note(text: str):\n    \"\"\"Note.\"\"\"\n");
    dir
}

fn size_enum(registry: &Registry) -> serde_json::Value {
    property(registry, "tool_pick", "size")["enum"].clone()
}

#[test]
fn a_change_of_a_sibling_module_updates_the_tools_that_use_it() {
    let dir = shop_folder("rescan-sibling");
    let mut registry = Registry::load(&Sources { folders: vec![dir.clone()], files: vec![] }, &Options::default());
    assert_eq!(size_enum(&registry), serde_json::json!(["s"]));

    write(&dir.join("shop/models.py"), "import enum\n\nclass Size(str, enum.Enum):\n    S = 's'\n    XL = 'xl'\n");
    let changes = registry.rescan();
    assert_eq!(size_enum(&registry), serde_json::json!(["s", "xl"]));
    // shop.py itself did not change, but what it contributes did.
    assert_eq!(changes.changed, [dir.join("shop/shop.py"), dir.join("shop/models.py")]);

    std::fs::remove_file(dir.join("shop/models.py")).unwrap();
    let changes = registry.rescan();
    assert_eq!(changes.removed, [dir.join("shop/models.py")]);
    assert_eq!(property(&registry, "tool_pick", "size"), &serde_json::json!({}));
    assert_eq!(diagnostics_with(&registry, &["shop.py", "unknown type `Size`"]).len(), 1);
}

#[test]
fn a_relative_import_added_to_a_file_resolves_against_its_unchanged_siblings() {
    let dir = temp_dir("rescan-new-import");
    write(&dir.join("shop/shop.py"), "def tool_pick(size: str):\n    \"\"\"Pick.\"\"\"\n");
    write(&dir.join("shop/models.py"), "import enum\n\nclass Size(str, enum.Enum):\n    S = 's'\n");
    let mut registry = Registry::load(&Sources { folders: vec![dir.clone()], files: vec![] }, &Options::default());
    write(&dir.join("shop/shop.py"), "from .models import Size\n\ndef tool_pick(size: Size):\n    \"\"\"Pick.\"\"\"\n");
    let changes = registry.rescan();
    assert_eq!(size_enum(&registry), serde_json::json!(["s"]));
    assert_eq!(changes.changed, [dir.join("shop/shop.py")], "models.py contributes the same as before");
}

#[test]
fn a_change_in_a_folder_without_relative_imports_reads_only_the_changed_file() {
    let dir = shop_folder("rescan-plain-sibling");
    let mut registry = Registry::load(&Sources { folders: vec![dir.clone()], files: vec![] }, &Options::default());
    write(&dir.join("shop/shop.py"), "def tool_pick(size: int):\n    \"\"\"Pick one.\"\"\"\n");
    registry.rescan();
    let notes = registry.libraries().iter().find(|l| l.stem == "notes").unwrap().clone();
    write(&dir.join("shop/models.py"), "SIZES = ['s', 'm', 'l']\n");
    let changes = registry.rescan();
    assert_eq!(changes.changed, [dir.join("shop/models.py")]);
    let still = registry.libraries().iter().find(|l| l.stem == "notes").unwrap();
    assert!(Arc::ptr_eq(&notes, still), "notes.py was read again");
}
