//! Checks against real Python: pydantic as a runtime reference for the schemas,
//! the reference LCP implementation (`lollms-client`'s `LCPBinding`) for discovery,
//! and the official MCP types for the `mcp` export. Each runs in the pinned test
//! environment (`tests/python/requirements.txt`) and never skips.

#[cfg(feature = "external")]
use crate::support::*;

#[cfg(feature = "external")]
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(feature = "external")]
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

#[cfg(feature = "external")]
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

#[cfg(feature = "external")]
/// The `mcp` export is a valid `tools/list` result for the official MCP Python types.
#[test]
fn mcp_export_validates_against_the_official_mcp_types() {
    let folders = ["fixtures/rich", "fixtures/types", "default_tools"];
    let export = lcp(&[&["export", "--format", "mcp", "--static"][..], &folders].concat());
    assert!(export.status.success());
    // Every tool the folders hold is in the export: none was left out to pass.
    let found = stdout_json(&lcp(&[&["check", "--format", "json"][..], &folders].concat()))["tools"].clone();
    assert_eq!(stdout_json(&export)["tools"].as_array().unwrap().len(), found.as_u64().unwrap() as usize);
    let output = python_script("validate_mcp.py", &[], Some(&export.stdout));
    let report = text(&output.stdout);
    println!("{report}");
    assert!(output.status.success(), "{report}\n{}", text(&output.stderr));
    assert!(report.contains(&format!("mcp: {found} tools valid")), "{report}");
}

#[cfg(feature = "external")]
/// What lcp's validation checks before a call (formats, patterns, lengths, JSON
/// text) accepts and refuses the same values as pydantic, value by value, for the
/// types whose schemas carry such checks.
#[test]
fn validation_before_a_call_agrees_with_pydantic_on_formats() {
    use lcp::discovery::registry::{Options, Registry, Sources};
    use lcp::runtime::{CallOptions, Runtime, RuntimeConfig};
    use serde_json::{Value, json};

    let emails = json!([
        "a@example.com",
        "A.B-c+d@sub.example.co.uk",
        "a@b",
        "nope",
        "a@localhost",
        "a@b.test",
        "a@b.invalid",
        "a@x.local",
        "a@x.onion",
        "a@b.arpa",
        " a@example.com ",
        "a.@example.com",
        ".a@example.com",
        "a..b@example.com",
        "a b@example.com",
        "\"a b\"@example.com",
        "@example.com",
        "a@",
        "a@@example.com",
        "a@example..com",
        "a@-example.com",
        "a@example-.com",
        "a@example.com.",
        "a@example.c0m",
        "a@example.123",
        "a@[192.0.2.1]",
        "ü@example.com",
        "a@bücher.example",
        "a@ex_ample.com",
        "a@ab--cd.example",
        "a@xn--bcher-kva.example",
        "John Doe <john@example.com>",
        "\"Doe, John\" <john@example.com>",
        "<john@example.com>",
        "John <john@example.com",
        "John john@example.com",
        "a@example.com\n",
        "Jo(hn <john@example.com>",
        format!("{}@example.com", "x".repeat(64)),
        format!("a@{}.com", "b".repeat(63)),
        format!("a@{}.com", "b".repeat(64)),
        format!("{}@example.com", "x".repeat(250)),
        "a@EXAMPLE.COM",
        "a#b!c@example.com",
        "a@example.com>"
    ]);
    let urls = json!([
        "https://example.com",
        "http://x",
        "HTTP://EXAMPLE.COM/a",
        "ftp://example.com/f",
        "file:///tmp/a.txt",
        "file://host/x",
        "file:/x",
        "file:",
        "mailto:a@example.com",
        "urn:isbn:0451450523",
        "a:b",
        "foo://",
        "example.com",
        "",
        " https://example.com",
        "https://example.com ",
        "http:/example.com",
        "http:example.com",
        "https://exa mple.com",
        "https://example.com/a b",
        "https://example.com/a%20b",
        "https://example.com/%zz",
        "https://example.com/a\\b",
        "https://example.com#a b",
        "https://user:pw@example.com",
        "https://example.com:8080/",
        "https://example.com:99999",
        "https://[::1]:80/",
        "https://[1:2]/",
        "https://1.2.3.256/",
        "https://bücher.example/",
        "https://example.com/é",
        "https://example.com/?q=<>",
        "http://",
        "https://",
        "1a:b",
        "ü:x",
        "javascript:alert(1)",
        "data:text/plain,hi",
        format!("https://example.com/{}", "a".repeat(2070)),
        format!("https://example.com/{}", "a".repeat(2060))
    ]);
    let ipv4 = json!([
        "192.0.2.1",
        "0.0.0.0",
        "255.255.255.255",
        "256.0.0.1",
        "01.2.3.4",
        "1.2.3",
        "1.2.3.4.5",
        " 1.2.3.4",
        "1.2.3.4/32",
        "::1",
        "1.2.3.04",
        "a.b.c.d",
        ""
    ]);
    let ipv6 = json!([
        "::1",
        "::",
        "2001:db8::1",
        "2001:DB8::1",
        "1:2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7:8:9",
        "1::2::3",
        "2001:db8:::1",
        "::ffff:192.0.2.1",
        "1:2:3:4:5:6:1.2.3.4",
        "::1.2.3.04",
        "fe80::1%eth0",
        "fe80::1%",
        "12345::1",
        "[::1]",
        "192.0.2.1",
        "1:2:3:4:5:6:7::",
        "::2:3:4:5:6:7:8",
        ":1::2",
        ""
    ]);
    let any_ip = json!(["192.0.2.1", "::1", "x", "1.2.3.256", "fe80::1%1"]);
    let networks =
        json!(["192.0.2.0/24", "192.0.2.1", "0.0.0.0/0", "192.0.2.0/255.255.255.0", "10.0.0.0/33", "x", "1.2.3.04/8"]);
    let interfaces = json!(["::1/128", "2001:db8::1/64", "::1", "::1/129", "x", "2001:db8::/32"]);
    let decimals = json!([
        "1.5", "-1", "+1", "1e3", "1E-3", ".5", "5.", "00012", "1.2.3", "", "-", ".", "NaN", "Infinity", "0x10", "1 ",
        1, 2.5, -3
    ]);
    let json_text = json!(["[1, 2]", "[]", " [1] ", "[1.5]", "[\"1\"]", "{}", "not json", "", "[1,"]);
    let cases: Vec<(&str, &str, &Value)> = vec![
        ("tool_email", "EmailStr", &emails),
        ("tool_name_email", "NameEmail", &emails),
        ("tool_any_url", "AnyUrl", &urls),
        ("tool_http_url", "HttpUrl", &urls),
        ("tool_any_http_url", "AnyHttpUrl", &urls),
        ("tool_file_url", "FileUrl", &urls),
        ("tool_ipv4", "IPv4Address", &ipv4),
        ("tool_ipv6", "IPv6Address", &ipv6),
        ("tool_ip_any", "IPvAnyAddress", &any_ip),
        ("tool_ipv4_network", "IPv4Network", &networks),
        ("tool_ipv6_interface", "IPv6Interface", &interfaces),
        ("tool_decimal", "Decimal", &decimals),
        ("tool_json", "Json[list[int]]", &json_text),
    ];
    let request: serde_json::Map<String, Value> =
        cases.iter().map(|(_, kind, values)| (kind.to_string(), (*values).clone())).collect();
    let output = python_script("formats_reference.py", &[], Some(Value::Object(request).to_string().as_bytes()));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let verdicts: Value = serde_json::from_slice(&output.stdout).unwrap();

    let folder = root().join("fixtures/runtime/formats");
    let registry = Registry::load(&Sources { folders: vec![folder], files: vec![] }, &Options::default());
    let runtime = Runtime::new(RuntimeConfig { venv: None, ..RuntimeConfig::default() }).unwrap();
    let mut disagreements = Vec::new();
    let mut compared = 0;
    for (tool, kind, values) in &cases {
        for (value, pydantic) in values.as_array().unwrap().iter().zip(verdicts[kind].as_array().unwrap()) {
            let result = runtime.call(&registry, tool, &json!({ "value": value }), &CallOptions::default());
            let refused = !result.ok() && result.error.as_deref().unwrap_or_default().starts_with("invalid arguments");
            compared += 1;
            if pydantic.as_bool() != Some(!refused) {
                let lcp = if refused { result.error.unwrap_or_default() } else { "accepted".to_string() };
                disagreements.push(format!("{kind} {value}: pydantic accepts: {pydantic}; lcp: {lcp}"));
            }
        }
    }
    assert!(compared > 200, "{compared}");
    assert!(
        disagreements.is_empty(),
        "{} of {compared} values disagree:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}
