//! Checks against real Python: pydantic as a runtime reference for the schemas,
//! the reference LCP implementation (`lollms-client`'s `LCPBinding`) for discovery,
//! and the official MCP types for the `mcp` export. Each runs in the pinned test
//! environment (`tests/python/requirements.txt`) and never skips.

use crate::support::*;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every fixture tool's exported schema and a pydantic validator built from the
/// imported function agree on accepting or rejecting generated payloads.
#[test]
fn conformance_with_pydantic_strict_validation() {
    let export = lcp(&["export", "--format", "manifest", "--static", "fixtures/conformance", "fixtures/rich"]);
    assert!(export.status.success(), "{}", text(&export.stderr));
    let output = python_script("conformance.py", &["-"], Some(&export.stdout));
    let report = text(&output.stdout);
    println!("{report}");
    assert!(output.status.success(), "conformance failed:\n{report}\n{}", text(&output.stderr));
    let summary = report.lines().find(|l| l.starts_with("conformance:")).expect("summary line");
    assert!(summary.ends_with(" 0 disagree"), "{summary}");
}

/// `lcp` finds the same tools with the same parameters and required sets as
/// `LCPBinding` on its own shipped libraries, apart from SPEC's deliberate differences.
#[test]
fn compatibility_with_the_reference_lcp_binding() {
    let dir = temp_dir("compat");
    let reference_path = dir.join("reference.json");
    let reference =
        python_script("compat_reference.py", &["reference", "--out", reference_path.to_str().unwrap()], None);
    assert!(reference.status.success(), "{}", text(&reference.stderr));
    let reference_json: serde_json::Value = serde_json::from_slice(&std::fs::read(&reference_path).unwrap()).unwrap();
    let folder = reference_json["folder"].as_str().unwrap();

    let export = lcp(&["export", "--format", "manifest", "--static", folder]);
    assert!(export.status.success(), "{}", text(&export.stderr));
    let manifest_path = dir.join("lcp.json");
    std::fs::write(&manifest_path, &export.stdout).unwrap();

    let compare = python_script(
        "compat_reference.py",
        &["compare", "--lcp", manifest_path.to_str().unwrap(), "--reference", reference_path.to_str().unwrap()],
        None,
    );
    let report = text(&compare.stdout);
    println!("{report}");
    assert!(compare.status.success(), "compatibility failed:\n{report}\n{}", text(&compare.stderr));
    let summary = report.lines().find(|l| l.starts_with("compat:")).expect("summary line");
    assert!(summary.ends_with(" 0 unexplained differences"), "{summary}");
    let reference_tools: usize = summary.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(reference_tools >= 100, "{summary}");
}

/// The `mcp` export is a valid `tools/list` result for the official MCP Python types.
#[test]
fn mcp_export_validates_against_the_official_mcp_types() {
    let export = lcp(&["export", "--format", "mcp", "--static", "fixtures/rich", "fixtures/types", "default_tools"]);
    assert!(export.status.success());
    let output = python_script("validate_mcp.py", &[], Some(&export.stdout));
    let report = text(&output.stdout);
    println!("{report}");
    assert!(output.status.success(), "{report}\n{}", text(&output.stderr));
    assert!(report.contains("mcp: 41 tools valid"), "{report}");
}
