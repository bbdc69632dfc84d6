//! SPEC §15: prompts, resources and completion from plain functions, through the
//! official Python client, the command line and the exports.

#[cfg(feature = "external")]
use serde_json::Value;
use serde_json::json;

#[cfg(feature = "external")]
use crate::mcp::MODES;
#[cfg(feature = "external")]
use crate::mcp::call;
#[cfg(feature = "external")]
use crate::mcp::{session, session_with};
use crate::support::*;

const NOTES: &str = "fixtures/members";

#[cfg(feature = "external")]
fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key].as_array().unwrap_or_else(|| panic!("no {key}: {list}")).iter().map(|e| e[field].to_string()).collect()
}

#[cfg(feature = "external")]
fn error_message(result: &Value) -> &str {
    result["error"]["message"].as_str().unwrap_or_else(|| panic!("not an error: {result}"))
}

#[cfg(feature = "external")]
#[test]
fn prompts_are_listed_with_their_arguments_and_run_with_typed_arguments() {
    let steps = json!([
        "prompts",
        {"prompt": "prompt_summarize", "arguments": {"topic": "lcp", "words": "20", "tone": "formal"}},
        {"prompt": "prompt_greeting", "arguments": {"name": "Ada"}},
        {"prompt": "prompt_broken"},
        {"prompt": "prompt_summarize", "arguments": {"topic": "rust"}},
        {"prompt": "prompt_nothing"},
        {"prompt": "tool_count_notes"},
    ]);
    for mode in MODES {
        let report = session(mode, "none", &[NOTES], steps.clone());
        let results = &report["results"];
        assert_eq!(
            names(&results[0], "prompts", "name"),
            [r#""prompt_summarize""#, r#""prompt_greeting""#, r#""prompt_broken""#]
        );
        let summarize = &results[0]["prompts"][0];
        assert_eq!(summarize["description"], "Asks for a summary of a note, with the note embedded.");
        assert_eq!(
            summarize["arguments"],
            json!([
                {"name": "topic", "description": "The note to summarize.", "required": true},
                {"name": "words", "description": "At most this many words.", "required": false},
                {"name": "tone", "description": "The tone of the summary.", "required": false},
            ]),
            "{mode}"
        );
        // The words argument came as the string "20" and reached the function as 20;
        // the tone as the `Tone` member its value names.
        let messages = &results[1]["messages"];
        assert_eq!(messages[0]["content"]["resource"]["uri"], "notes://lcp", "{mode}: {}", results[1]);
        assert_eq!(messages[0]["content"]["resource"]["text"], "# lcp\nTools from plain files.");
        assert_eq!(
            messages[1]["content"],
            json!({"type": "text", "text": "Summarize the note above in at most 20 words, in a formal tone."})
        );
        assert_eq!(messages[1]["role"], "user");
        assert_eq!(results[2]["description"], "A greeting for Ada");
        assert_eq!(
            results[2]["messages"],
            json!([{"role": "assistant", "content": {"type": "text", "text": "Hello Ada!"}}])
        );
        assert!(error_message(&results[3]).contains("RuntimeError: the prompt broke"), "{}", results[3]);
        assert!(error_message(&results[4]).contains("topic"), "{}", results[4]);
        assert_eq!(results[4]["error"]["code"], -32602, "invalid arguments are the caller's");
        assert!(error_message(&results[5]).contains("prompt_nothing"), "{}", results[5]);
        // A tool is never a prompt.
        assert!(error_message(&results[6]).contains("no prompt `tool_count_notes`"), "{}", results[6]);
    }
}

#[cfg(feature = "external")]
#[test]
fn resources_and_templates_are_listed_and_read_as_text_or_blob() {
    let steps = json!([
        "resources",
        "templates",
        {"read": "notes://lcp"},
        {"read": "notes://logo.png"},
        {"read": "lcp://notes/readme"},
        {"read": "notes://rust"},
        {"read": "notes://nothing/here"},
    ]);
    for mode in MODES {
        let report = session(mode, "none", &[NOTES], steps.clone());
        let results = &report["results"];
        assert_eq!(
            results[0]["resources"],
            json!([
                {"uri": "notes://logo.png", "name": "logo", "description": "The logo, as PNG bytes.", "mimeType": "image/png"},
                {"uri": "lcp://notes/readme", "name": "resource_readme", "description": "What the notes are."},
            ]),
            "{mode}"
        );
        assert_eq!(
            results[1]["resourceTemplates"],
            json!([{
                "uriTemplate": "notes://{topic}", "name": "resource_note", "title": "A note",
                "description": "A note, by topic.", "mimeType": "text/markdown",
            }])
        );
        assert_eq!(
            results[2]["contents"],
            json!([{"uri": "notes://lcp", "mimeType": "text/markdown", "text": "# lcp\nTools from plain files."}])
        );
        // b"\x89PNG\r\n\x1a\n" as base64.
        assert_eq!(
            results[3]["contents"],
            json!([{"uri": "notes://logo.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="}])
        );
        assert_eq!(results[4]["contents"][0]["text"], "Notes about lcp and MCP.");
        assert_eq!(results[4]["contents"][0]["mimeType"], "text/plain");
        assert!(error_message(&results[5]).contains("no note about 'rust'"), "{}", results[5]);
        assert_eq!(results[6]["error"]["code"], -32602, "{}", results[6]);
        assert!(error_message(&results[6]).contains("no resource `notes://nothing/here`"));
    }
}

#[cfg(feature = "external")]
#[test]
fn completion_offers_literal_and_enum_members_or_what_the_library_completes() {
    let complete =
        |target: &str, argument: &str, value: &str| json!({"complete": target, "argument": argument, "value": value});
    let steps = json!([
        complete("prompt_summarize", "topic", "m"),
        complete("prompt_summarize", "tone", "f"),
        complete("prompt_summarize", "tone", "FU"),
        complete("prompt_greeting", "name", "a"),
        complete("notes://{topic}", "topic", ""),
        complete("prompt_summarize", "colour", ""),
    ]);
    for mode in MODES {
        let report = session(mode, "none", &[NOTES], steps.clone());
        let values = |i: usize| report["results"][i]["values"].clone();
        assert_eq!(values(0), json!(["mcp"]), "{mode}: {}", report["results"][0]);
        assert_eq!(values(1), json!(["friendly", "formal", "funny"]));
        assert_eq!(values(2), json!(["funny"]));
        assert_eq!(values(3), json!(["Ada", "Alan"]));
        assert_eq!(values(4), json!([]), "a `str` parameter lists nothing");
        assert!(error_message(&report["results"][5]).contains("no argument `colour`"), "{}", report["results"][5]);
    }
}

#[cfg(feature = "external")]
#[test]
fn a_subscribed_resource_hears_when_its_file_changes() {
    let dir = temp_dir("members-subscribe");
    let file = dir.join("notes.py");
    std::fs::copy(root().join(NOTES).join("notes.py"), &file).unwrap();
    let changed = std::fs::read_to_string(&file).unwrap().replace("Tools from plain files.", "Tools, changed.");
    let serve = [dir.to_str().unwrap()];
    let steps = json!([
        {"subscribe": "notes://lcp"},
        {"subscribe": "notes://logo.png"},
        {"unsubscribe": "notes://logo.png"},
        // The watch starts a quarter second in.
        {"updated": "never://sent", "seconds": 0.5},
        {"write": file, "text": changed},
        {"updated": "notes://lcp", "seconds": 20},
        {"read": "notes://lcp"},
    ]);
    let report = session("legacy", "none", &serve, steps);
    let results = &report["results"];
    assert_eq!(report["capabilities"]["resources"], json!({"subscribe": true, "listChanged": true}));
    assert_eq!(results[5], json!({"updated": true}), "{report}");
    assert_eq!(results[6]["contents"][0]["text"], "# lcp\nTools, changed.");

    // The handshake-less protocol has no `resources/subscribe`: a `subscriptions/listen`
    // stream names the URIs instead.
    let report = session("auto", "none", &serve, json!([{"subscribe": "notes://lcp"}]));
    assert_eq!(report["results"][0]["error"]["code"], -32601, "{report}");
    let again = std::fs::read_to_string(&file).unwrap().replace("Tools, changed.", "Tools, changed again.");
    let steps = json!([
        {"updated": "never://sent", "seconds": 0.5},
        {"listen": "notes://lcp", "write": file, "text": again, "seconds": 20},
    ]);
    let report = session("auto", "none", &serve, steps);
    let events = report["results"][1]["events"].as_array().cloned().unwrap_or_default();
    assert!(events.iter().any(|event| event["uri"] == "notes://lcp"), "{report}");
}

#[cfg(feature = "external")]
#[test]
fn prompts_and_resources_go_through_profiles_and_policy() {
    let dir = temp_dir("members-profiles");
    let config = dir.join("lcp.toml");
    std::fs::write(
        &config,
        "[profiles.writer.tools]\nsummary = \"prompt_summarize\"\nlogo = \"resource_logo\"\n\n\
         [tool_policies.prompt_summarize]\ngrade = { w = 0, d = 0 }\n\
         [tool_policies.resource_logo]\ngrade = { w = 0, d = 0 }\n",
    )
    .unwrap();
    let serve = [NOTES, "--config", config.to_str().unwrap(), "--profile", "writer"];
    let steps = json!([
        "prompts",
        "resources",
        "templates",
        {"prompt": "summary", "arguments": {"topic": "mcp"}},
        {"prompt": "prompt_summarize", "arguments": {"topic": "mcp"}},
        {"prompt": "prompt_greeting", "arguments": {"name": "Ada"}},
        {"read": "notes://logo.png"},
        {"read": "notes://lcp"},
        "list",
    ]);
    for mode in MODES {
        let report = session(mode, "none", &serve, steps.clone());
        let results = &report["results"];
        assert_eq!(names(&results[0], "prompts", "name"), [r#""summary""#], "{mode}");
        assert_eq!(names(&results[1], "resources", "name"), [r#""logo""#]);
        assert_eq!(results[2]["resourceTemplates"], json!([]));
        assert!(results[3]["messages"][1]["content"]["text"].as_str().unwrap().contains("at most 50 words"));
        assert!(error_message(&results[4]).contains("is not a prompt of profile `writer`"), "{}", results[4]);
        assert!(error_message(&results[5]).contains("is not a prompt of profile `writer`"));
        assert_eq!(results[6]["contents"][0]["blob"], "iVBORw0KGgo=");
        assert_eq!(results[7]["error"]["code"], -32602, "a template the profile leaves out is no resource");
        assert_eq!(results[8]["tools"], json!([]));
    }

    // A policy that allows no writing grade refuses an undeclared prompt.
    std::fs::write(&config, "[policy]\nmax_grade = { w = 0, d = 0 }\n").unwrap();
    let serve = [NOTES, "--config", config.to_str().unwrap()];
    let report = session(
        "legacy",
        "none",
        &serve,
        json!(["prompts", {"prompt": "prompt_greeting", "arguments": {"name": "A"}}]),
    );
    assert_eq!(report["results"][0]["prompts"], json!([]), "{report}");
    assert!(report["results"][1]["error"]["message"].as_str().is_some(), "{report}");
}

#[test]
fn lcp_list_check_and_the_exports_show_prompts_and_resources() {
    let list = lcp(&["list", "--static", NOTES]);
    let shown = String::from_utf8_lossy(&list.stdout);
    for needle in [
        "PROMPT",
        "prompt_summarize",
        "topic, words?, tone?",
        "RESOURCE",
        "notes://{topic}",
        "text/markdown",
        "lcp://notes/readme",
    ] {
        assert!(shown.contains(needle), "`{needle}` is not in:\n{shown}");
    }
    assert!(!shown.contains("resource_bad_uri"), "a resource whose URI cannot serve it is left out:\n{shown}");

    let check = lcp(&["check", NOTES]);
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(said.contains("1 tool, 3 prompts, 3 resources, 1 error"), "{said}");
    assert!(
        said.contains(
            "notes.py:86:1: error: `resource_bad_uri` requires `name`, which its URI `notes://bad` does not hold"
        ),
        "{said}"
    );
    assert_eq!(check.status.code(), Some(1));
    let json_check = stdout_json(&lcp(&["check", "--format", "json", NOTES]));
    assert_eq!((json_check["prompts"].clone(), json_check["resources"].clone()), (json!(3), json!(3)));

    let mcp = stdout_json(&lcp(&["export", "--static", "--format", "mcp", NOTES]));
    assert_eq!(mcp["tools"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        mcp["prompts"][1],
        json!({"name": "prompt_greeting", "description": "A greeting from the assistant.", "arguments": [{"name": "name", "required": true, "description": "Who is greeted."}]})
    );
    assert_eq!(mcp["resources"].as_array().map(Vec::len), Some(2));
    assert_eq!(mcp["resourceTemplates"][0]["uriTemplate"], "notes://{topic}");
    let manifest = stdout_json(&lcp(&["export", "--static", "--format", "manifest", NOTES]));
    assert_eq!(manifest["libraries"][0]["prompts"], json!(["prompt_summarize", "prompt_greeting", "prompt_broken"]));
    assert_eq!(manifest["libraries"][0]["resources"], json!(["resource_note", "resource_logo", "resource_readme"]));
    assert_eq!(manifest["prompts"], mcp["prompts"]);
    // A file of prompts alone is a library too.
    let dir = temp_dir("members-prompts-only");
    std::fs::write(dir.join("prompts.py"), "def prompt_hello() -> str:\n    \"\"\"Hello.\"\"\"\n    return 'Hello'\n")
        .unwrap();
    let check = lcp(&["check", dir.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(said.contains("1 library, 0 tools, 1 prompt, 0 resources, 0 errors"), "{said}");
    // A folder without prompts or resources exports as before: no empty lists.
    let plain = stdout_json(&lcp(&["export", "--static", "--format", "mcp", "fixtures/mcp/results"]));
    assert!(plain.get("prompts").is_none() && plain.get("resources").is_none(), "{plain}");
}

#[cfg(feature = "external")]
#[test]
fn the_default_tools_serve_a_workspace_file_as_a_resource_and_a_review_prompt() {
    let workspace = temp_dir("members-workspace");
    std::fs::create_dir_all(workspace.join("src")).unwrap();
    std::fs::write(workspace.join("src/main.py"), "print('hello')\n").unwrap();
    std::fs::write(workspace.join("notes.md"), "# Notes\n").unwrap();
    std::fs::write(workspace.join(".secret"), "hidden\n").unwrap();
    std::fs::write(workspace.join("data.bin"), [0u8, 159, 146, 150]).unwrap();
    let serve = ["--workspace", workspace.to_str().unwrap()];
    let steps = json!([
        "templates",
        {"read": "workspace:///src/main.py"},
        {"read": "workspace:///data.bin"},
        {"read": "workspace:///../outside.txt"},
        {"complete": "workspace:///{+path}", "argument": "path", "value": "s"},
        {"complete": "prompt_review_file", "argument": "path", "value": ""},
        {"complete": "prompt_review_file", "argument": "focus", "value": "s"},
        {"prompt": "prompt_review_file", "arguments": {"path": "notes.md", "focus": "clarity"}},
        call("tool_list_files", json!({})),
    ]);
    for mode in MODES {
        let report = session_with(mode, &[], &serve, steps.clone());
        let results = &report["results"];
        assert_eq!(results[0]["resourceTemplates"][0]["uriTemplate"], "workspace:///{+path}", "{mode}: {report}");
        assert_eq!(
            results[1]["contents"],
            json!([{"uri": "workspace:///src/main.py", "mimeType": "text/x-python", "text": "print('hello')\n"}])
        );
        assert_eq!(results[2]["contents"][0]["blob"], "AJ+Slg==");
        assert!(error_message(&results[3]).contains("outside"), "{}", results[3]);
        assert_eq!(results[4]["values"], json!(["src/main.py"]));
        assert_eq!(
            results[5]["values"],
            json!(["data.bin", "notes.md", "src/main.py"]),
            "hidden files are not offered"
        );
        assert_eq!(results[6]["values"], json!(["security"]));
        let review = &results[7]["messages"];
        assert_eq!(
            review[0]["content"]["resource"],
            json!({"uri": "workspace:///notes.md", "mimeType": "text/markdown", "text": "# Notes\n"})
        );
        assert!(review[1]["content"]["text"].as_str().unwrap().contains("for clarity"), "{review}");
        assert_eq!(results[8]["isError"], false);
    }
}
