//! SPEC §14 and §15 together: an MCP server's prompts, resources, resource templates,
//! completion and resource subscriptions forwarded through `lcp serve` as its tools
//! are, under the same prefix and precedence rules, and what its prompts and tools
//! ask the client named after the server. The servers are server-everything and one
//! written with the official Python SDK; the client is the SDK's.

use serde_json::{Value, json};

use crate::mcp::{HttpServer, MODES, session_with};
use crate::sources::servers_config;
use crate::support::*;

/// server-everything over stdio as `[mcp_servers.everything]`, its processes marked.
fn everything(prefix: &str, mark: &str) -> String {
    format!(
        "[mcp_servers.everything]\ncommand = {:?}\nprefix = {prefix:?}\nenv = {{ LCP_TEST_MARK = {mark:?} }}\n",
        everything_server().display().to_string()
    )
}

/// An empty folder of tools, so that only the servers' members are served.
fn empty_folder(mark: &str) -> String {
    let folder = temp_dir(mark).join("tools");
    std::fs::create_dir_all(&folder).expect("the folder is made");
    folder.display().to_string()
}

fn names<'v>(listed: &'v Value, key: &str, field: &str) -> Vec<&'v str> {
    listed[key].as_array().into_iter().flatten().filter_map(|entry| entry[field].as_str()).collect()
}

#[test]
fn upstream_prompts_and_resources_are_listed_read_and_completed_through_the_gateway() {
    let mark = "members-everything";
    let config = servers_config(mark, &everything("ev_", mark));
    let gateway = HttpServer::start(&["--config", &config, &empty_folder(mark)]);
    let document = "demo://resource/static/document/architecture.md";
    let template = "demo://resource/dynamic/text/{resourceId}";
    let steps = json!([
        "prompts",
        "resources",
        "templates",
        {"prompt": "ev_args-prompt", "arguments": {"city": "Paris", "state": "Texas"}},
        {"read": document},
        {"read": "demo://resource/dynamic/text/7"},
        {"complete": "ev_completable-prompt", "argument": "department", "value": "Eng"},
        {"complete": template, "argument": "resourceId", "value": "3"},
        {"prompt": "args-prompt", "arguments": {"city": "Paris"}},
    ]);
    for mode in MODES {
        let report = session_with(mode, &[], &["--url", &gateway.url], steps.clone());
        let results = report["results"].as_array().unwrap();
        // Listed under the server's prefix (prompts) and the URIs it gave (resources).
        let prompts = names(&results[0], "prompts", "name");
        for prompt in ["ev_simple-prompt", "ev_args-prompt", "ev_completable-prompt", "ev_resource-prompt"] {
            assert!(prompts.contains(&prompt), "{mode}: {prompt} is not in {prompts:?}");
        }
        let args = results[0]["prompts"].as_array().unwrap().iter().find(|p| p["name"] == "ev_args-prompt").unwrap();
        assert_eq!(args["arguments"][0]["name"], "city", "{mode}: {args}");
        assert_eq!(args["arguments"][0]["required"], true, "{mode}: {args}");
        assert!(names(&results[1], "resources", "uri").contains(&document), "{mode}: {}", results[1]);
        assert!(names(&results[2], "resourceTemplates", "uriTemplate").contains(&template), "{mode}: {}", results[2]);
        // A prompt got with its arguments, as the server answered it.
        let text = &results[3]["messages"][0]["content"]["text"];
        assert_eq!(text, "What's weather in Paris, Texas?", "{mode}: {}", results[3]);
        // A resource and a template's resource read.
        assert_eq!(results[4]["contents"][0]["uri"], document, "{mode}: {}", results[4]);
        assert!(results[4]["contents"][0]["text"].as_str().is_some_and(|t| !t.is_empty()), "{mode}: {}", results[4]);
        let dynamic = results[5]["contents"][0]["text"].as_str().unwrap_or_default();
        assert!(dynamic.starts_with("Resource 7: "), "{mode}: {}", results[5]);
        // Completion of a prompt's argument and a template's variable, by the server.
        assert_eq!(results[6]["values"], json!(["Engineering"]), "{mode}: {}", results[6]);
        assert_eq!(results[7]["values"], json!(["3"]), "{mode}: {}", results[7]);
        // The server's own name without its prefix is no prompt of lcp's.
        assert!(results[8].get("error").is_some(), "{mode}: {}", results[8]);
    }
    drop(gateway);
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

/// An MCP server of the official Python SDK with the prompts `prompt_greet` and
/// `prompt_ask` (which asks its client a name) and the resource `notes://today`,
/// written to `folder`; as `[mcp_servers.NAME]`.
fn sdk_members_server(name: &str, folder: &std::path::Path, mark: &str) -> String {
    let script = folder.join("members_server.py");
    write(
        &script,
        "from pydantic import BaseModel\n\
         from mcp.server.mcpserver import Context, MCPServer\n\n\
         server = MCPServer('members')\n\n\
         class Name(BaseModel):\n    name: str\n\n\
         @server.prompt()\n\
         async def prompt_ask(topic: str, ctx: Context) -> str:\n    \"\"\"Asks who wants it.\"\"\"\n    \
         answer = await ctx.elicit(message=f'who wants {topic}?', schema=Name)\n    \
         return f'{topic} for {answer.data.name}' if answer.action == 'accept' else answer.action\n\n\
         @server.prompt()\n\
         def prompt_greet(name: str) -> str:\n    \"\"\"Greets from the server.\"\"\"\n    return f'server greets {name}'\n\n\
         @server.resource('notes://today')\n\
         def today() -> str:\n    \"\"\"Today's notes, from the server.\"\"\"\n    return 'server notes'\n\n\
         @server.tool()\n\
         async def add_prompt(ctx: Context) -> str:\n    \"\"\"Adds the prompt `prompt_added` and says the prompts changed.\"\"\"\n    \
         def prompt_added() -> str:\n        \"\"\"Added while running.\"\"\"\n        return 'added'\n    \
         server.prompt()(prompt_added)\n    \
         await ctx.session.send_prompt_list_changed()\n    \
         return 'added'\n\n\
         if __name__ == '__main__':\n    server.run()\n",
    );
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = [{:?}]\nenv = {{ LCP_TEST_MARK = {mark:?} }}\n",
        test_python().display().to_string(),
        script.display().to_string()
    )
}

#[test]
fn a_local_prompt_shadows_an_upstream_one_with_a_warning() {
    let mark = "members-shadowed";
    let dir = temp_dir(mark);
    let folder = dir.join("tools");
    std::fs::create_dir_all(&folder).expect("the folder is made");
    write(
        &folder.join("local.py"),
        "TOOL_RESOURCES = {\"resource_today\": {\"uri\": \"notes://today\"}}\n\n\
         def prompt_greet(name: str) -> str:\n    \"\"\"Greets from the file.\"\"\"\n    return f'file greets {name}'\n\n\
         def resource_today() -> str:\n    \"\"\"Today's notes, from the file.\"\"\"\n    return 'file notes'\n",
    );
    let config = servers_config(mark, &sdk_members_server("notes", &dir, mark));
    let folder = folder.display().to_string();
    // `lcp check` names both sources of the prompt and of the URI.
    let checked = lcp(&["check", "--config", &config, &folder]);
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(
        stderr.contains("prompt `prompt_greet` (mcp:notes source) is shadowed by `prompt_greet` of the file source at"),
        "{stderr}"
    );
    assert!(stderr.contains("local.py"), "{stderr}");
    assert!(
        stderr.contains("(mcp:notes source) has the URI `notes://today` of a resource of the file source"),
        "{stderr}"
    );
    // `lcp list` shows the file's, served as the file's.
    let listed = lcp(&["list", "--wide", "--config", &config, &folder]);
    let table = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(table.matches("prompt_greet").count(), 1, "{table}");
    let steps = json!([
        "prompts",
        {"prompt": "prompt_greet", "arguments": {"name": "Ada"}},
        {"read": "notes://today"},
    ]);
    let report = session_with("legacy", &[], &["--config", &config, &folder], steps);
    let results = report["results"].as_array().unwrap();
    // The file's `prompt_greet`, then the server's other prompt.
    assert_eq!(names(&results[0], "prompts", "name"), ["prompt_greet", "prompt_ask"], "{}", results[0]);
    assert_eq!(results[0]["prompts"][0]["description"], "Greets from the file.", "{}", results[0]);
    assert_eq!(results[1]["messages"][0]["content"]["text"], "file greets Ada", "{}", results[1]);
    assert_eq!(results[2]["contents"][0]["text"], "file notes", "{}", results[2]);

    // With a prefix, the server's prompt is served beside the file's, and runs there.
    let config = servers_config(
        &format!("{mark}-prefixed"),
        &format!("{}prefix = \"up_\"\n", sdk_members_server("notes", &dir, mark)),
    );
    let steps = json!([
        "prompts",
        {"prompt": "up_prompt_greet", "arguments": {"name": "Ada"}},
        {"prompt": "up_prompt_ask", "arguments": {"topic": "tea"}},
    ]);
    let client = ["--elicit", "accept", "--content", r#"[{"name": "Ada"}]"#];
    for mode in MODES {
        let report = session_with(mode, &client, &["--config", &config, &folder], steps.clone());
        let results = report["results"].as_array().unwrap();
        let prompts = names(&results[0], "prompts", "name");
        assert!(prompts.contains(&"prompt_greet") && prompts.contains(&"up_prompt_greet"), "{mode}: {prompts:?}");
        assert_eq!(results[1]["messages"][0]["content"]["text"], "server greets Ada", "{mode}: {}", results[1]);
        // What the server's prompt asks reaches the client, named after the server.
        let asked = report["elicitations"][0].as_str().unwrap_or_default();
        assert!(asked.starts_with("`up_prompt_ask` (MCP server `notes`) asks"), "{mode}: {asked}");
        assert_eq!(results[2]["messages"][0]["content"]["text"], "tea for Ada", "{mode}: {}", results[2]);
    }
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

#[test]
fn an_upstream_resource_update_reaches_a_subscribed_client() {
    let mark = "members-updated";
    let config = servers_config(mark, &everything("ev_", mark));
    let document = "demo://resource/static/document/architecture.md";
    let other = "demo://resource/static/document/features.md";
    let steps = json!([
        {"subscribe": document},
        // server-everything sends an update for each subscribed URI once this is on.
        {"call": "ev_toggle-subscriber-updates", "arguments": {}},
        {"updated": document, "seconds": 20},
        {"updated": other, "seconds": 1},
        {"unsubscribe": document},
    ]);
    let report = session_with("legacy", &[], &["--config", &config, &empty_folder(mark)], steps);
    let results = report["results"].as_array().unwrap();
    assert_eq!(results[0], json!({}), "{report}");
    assert_eq!(results[2], json!({"updated": true}), "{report}");
    assert_eq!(results[3], json!({"updated": false}), "an unsubscribed URI is not told of: {report}");
    assert_eq!(results[4], json!({}), "{report}");

    // The handshake-less protocol's `subscriptions/listen` stream hears it too (the
    // file written is no resource: only the server's update ends the wait).
    let scratch = temp_dir(mark).join("scratch.txt").display().to_string();
    let steps = json!([
        {"call": "ev_toggle-subscriber-updates", "arguments": {}},
        {"listen": document, "write": scratch, "text": "x", "seconds": 20},
    ]);
    let report = session_with("auto", &[], &["--config", &config, &empty_folder(mark)], steps);
    let events = report["results"][1]["events"].as_array().cloned().unwrap_or_default();
    assert!(events.iter().any(|event| event["uri"] == document), "{report}");
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

#[test]
fn an_upstream_elicitation_names_its_server() {
    let mark = "members-elicitation";
    let config = servers_config(mark, &everything("ev_", mark));
    let form = json!([{"name": "Ada", "email": "ada@example.com", "age": 36, "favoriteColor": "red"}]).to_string();
    let client = ["--elicit", "accept", "--content", form.as_str()];
    for mode in MODES {
        let steps = json!([{"call": "ev_trigger-elicitation-request", "arguments": {}}]);
        let report = session_with(mode, &client, &["--config", &config, &empty_folder(mark)], steps);
        let asked = report["elicitations"][0].as_str().unwrap_or_default();
        assert!(
            asked.starts_with("`ev_trigger-elicitation-request` (MCP server `everything`) asks"),
            "{mode}: {asked}"
        );
        assert!(report["results"][0].to_string().contains("ada@example.com"), "{mode}: {report}");
    }
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

#[test]
fn a_sampling_results_model_reaches_the_server_as_the_client_gave_it() {
    let mark = "members-sampling";
    let config = servers_config(mark, &everything("ev_", mark));
    let client = ["--sample", "hi from the model"];
    for mode in MODES {
        let steps = json!([{"call": "ev_trigger-sampling-request", "arguments": {"prompt": "say hi"}}]);
        let report = session_with(mode, &client, &["--config", &config, &empty_folder(mark)], steps);
        let said = crate::mcp::text(&report["results"][0]).to_string();
        // The test client's model is `test-model` (tests/python/mcp_client_session.py).
        assert!(said.contains("\"model\": \"test-model\""), "{mode}: {said}");
        assert!(said.contains("hi from the model"), "{mode}: {said}");
    }
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

#[test]
fn an_upstream_prompts_list_changed_has_the_server_listed_again() {
    let mark = "members-list-changed";
    let dir = temp_dir(mark);
    let config = servers_config(mark, &sdk_members_server("notes", &dir, mark));
    let steps = json!([
        "prompts",
        {"call": "add_prompt", "arguments": {}},
        // No resource is updated: a wait for the server's list to be read again.
        {"updated": "none://nothing", "seconds": 3},
        "prompts",
        {"prompt": "prompt_added", "arguments": {}},
    ]);
    let report = session_with("legacy", &[], &["--config", &config, &empty_folder(mark)], steps);
    let results = report["results"].as_array().unwrap();
    assert!(!names(&results[0], "prompts", "name").contains(&"prompt_added"), "{}", results[0]);
    assert!(names(&results[3], "prompts", "name").contains(&"prompt_added"), "{}", results[3]);
    assert_eq!(results[4]["messages"][0]["content"]["text"], "added", "{}", results[4]);
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

#[test]
fn an_upstream_prompt_and_resource_go_through_profiles() {
    let mark = "members-profiles";
    let document = "demo://resource/static/document/architecture.md";
    let tables = format!(
        "{}\n[profiles.writer.tools]\nweather = \"ev_args-prompt\"\ndoc = {document:?}\n",
        everything("ev_", mark)
    );
    let config = servers_config(mark, &tables);
    let steps = json!([
        "prompts",
        "resources",
        "templates",
        {"prompt": "weather", "arguments": {"city": "Oslo"}},
        {"prompt": "ev_simple-prompt", "arguments": {}},
        {"read": document},
        {"read": "demo://resource/static/document/features.md"},
    ]);
    let serve = ["--config", config.as_str(), "--profile", "writer", &empty_folder(mark)];
    let report = session_with("legacy", &[], &serve, steps);
    let results = report["results"].as_array().unwrap();
    assert_eq!(names(&results[0], "prompts", "name"), ["weather"], "{}", results[0]);
    assert_eq!(names(&results[1], "resources", "uri"), [document], "{}", results[1]);
    assert_eq!(results[2]["resourceTemplates"], json!([]), "{}", results[2]);
    assert_eq!(results[3]["messages"][0]["content"]["text"], "What's weather in Oslo?", "{}", results[3]);
    let refused = results[4]["error"]["message"].as_str().unwrap_or_default();
    assert!(refused.contains("is not a prompt of profile `writer`"), "{}", results[4]);
    assert_eq!(results[5]["contents"][0]["uri"], document, "{}", results[5]);
    assert_eq!(results[6]["error"]["code"], -32602, "a resource the profile leaves out: {}", results[6]);
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}
