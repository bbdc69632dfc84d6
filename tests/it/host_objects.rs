//! SPEC §9: the host objects a tool is given, bridged three ways. `lcp call` answers
//! from `--answers` or the terminal (these tests have none) and prints progress on
//! stderr; a Rust host answers with closures; `lcp serve` (in `mcp_host.rs`) with
//! the MCP client. Every case runs in a worker process and in-process.
//! Fixture: `fixtures/host_objects/`.

use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use lcp::discovery::registry::{Options, Registry, Sources};
use lcp::runtime::host_objects::{
    Answer, BatchHandler, Callbacks, HostAnswer, HostRequest, InteractionKind, RootsHandler, level,
};
use lcp::runtime::{CallOptions, Isolation, Runtime, RuntimeConfig, ToolResult, WorkerSettings};
use serde_json::{Value, json};

use crate::support::*;

const FOLDER: &str = "fixtures/host_objects";
/// Worker processes (the default), then in-process.
const PLACES: [&[&str]; 2] = [&[], &["--in-process"]];

/// `lcp call TOOL FOLDER ARGS...` with no standard input, so no terminal.
fn call(tool: &str, args: &[&str]) -> Output {
    lcp_call_in(FOLDER, tool, args)
}

fn result(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("stdout is not JSON ({err}); stderr: {}", String::from_utf8_lossy(&output.stderr)))
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

// ------------------------------------------------------------------ lcp call ---

#[test]
fn lcp_call_answers_user_interactions_from_answers_given_in_advance() {
    for place in PLACES {
        let listed = result(&call("tool_ask", &[&["--answers", r#"["blue"]"#], place].concat()));
        assert_eq!(listed["output"], json!({"answer": "blue"}), "{place:?}");
        let by_title = call("tool_ask", &[&["--answers", r#"{"Question": "by title"}"#], place].concat());
        assert_eq!(result(&by_title)["output"], json!({"answer": "by title"}), "{place:?}");
        let form = call("tool_form", &[&["--answers", r#"{"Profile": {"name": "Bob", "age": 3}}"#], place].concat());
        assert_eq!(result(&form)["output"], json!({"answer": {"name": "Bob", "age": 3}}), "{place:?}");
        let declined = call("tool_ask", &[&["--answers", "[null]"], place].concat());
        assert_eq!(result(&declined)["output"], json!({"answer": null}), "{place:?}");
    }
}

#[test]
fn lcp_call_without_a_terminal_declines_and_says_so() {
    for place in PLACES {
        let output = call("tool_ask", place);
        assert_eq!(result(&output)["output"], json!({"answer": null}), "{place:?}");
        let said = stderr(&output);
        assert!(said.contains("no terminal") && said.contains("--answers"), "{said}");
    }
}

#[test]
fn libraries_get_the_user_interaction_handler_through_the_hook_and_the_config() {
    for place in PLACES {
        let args = [&["--args", r#"{"prompt": "p"}"#, "--answers", r#"["one", "two"]"#], place].concat();
        let output = result(&call("tool_hooked_ask", &args));
        assert_eq!(output["output"], json!({"hooked": "one", "configured": "two"}), "{place:?}");
    }
}

#[test]
fn lcp_call_has_no_model_and_generate_text_says_so() {
    for place in PLACES {
        let output = result(&call("tool_generate", &[&["--args", r#"{"prompt": "hi"}"#], place].concat()));
        assert_eq!(output["ok"], false);
        let error = output["error"].as_str().unwrap();
        assert!(error.contains("has no model") && error.contains("sampling"), "{error}");
    }
}

#[test]
fn become_task_does_nothing_where_calls_are_no_tasks() {
    let dir = temp_dir("become-task");
    write(
        &dir.join("long.py"),
        "TOOL_POLICY = {\"task\": \"optional\"}\n\n\
         def tool_long(tool_context=None) -> str:\n    \"\"\"Long work.\"\"\"\n    \
         return f\"task: {tool_context.become_task('working on it')}\"\n",
    );
    for place in PLACES {
        let output = lcp_call_in(dir.to_str().unwrap(), "tool_long", place);
        assert_eq!(result(&output)["output"], "task: False", "{place:?}: {}", stderr(&output));
    }
}

#[test]
fn lcp_call_prints_progress_on_stderr_and_gives_tool_context_the_workspace() {
    let workspace = temp_dir("host-progress");
    let workspace_text = workspace.canonicalize().unwrap().to_string_lossy().into_owned();
    for place in PLACES {
        let output = call("tool_progress", &[&["--workspace", &workspace_text], place].concat());
        let result = result(&output);
        assert_eq!(result["output"]["delivered"], json!([true, true, true]), "{place:?}");
        assert_eq!(result["output"]["workspace_path"], workspace_text.as_str());
        assert_eq!(result["output"]["workspace_root"], workspace_text.as_str());
        assert_eq!(result["output"]["working_dir"], workspace_text.as_str());
        assert_eq!(result["output"]["other"], "fallback");
        assert!(stderr(&output).contains("tool_progress: step 2 (2/3)"), "{}", stderr(&output));
    }
}

#[test]
fn lcp_call_puts_log_records_at_info_and_above_in_the_results_stderr() {
    for place in PLACES {
        let result = result(&call("tool_log", place));
        assert_eq!(result["output"], "hello");
        assert_eq!(
            result["stderr"],
            "INFO:fixture.logs:info: hello\nWARNING:fixture.logs:warning: hello\nERROR:root:root error: hello\n",
            "{place:?}"
        );
    }
}

#[test]
fn host_objects_reach_a_tool_that_takes_kwargs() {
    for place in PLACES {
        let result = result(&call("tool_kwargs", place));
        assert_eq!(result["output"], json!(["lollms_client_instance", "tool_context", "user_interaction_handler"]));
    }
}

#[test]
fn the_reference_autonomy_levels_are_accepted() {
    for level in ["strict", "safe", "full_access"] {
        let output = call("tool_kwargs", &["--autonomy", level]);
        assert_eq!(output.status.code(), Some(0), "{level}: {}", stderr(&output));
    }
    assert_eq!(call("tool_kwargs", &["--autonomy", "ask"]).status.code(), Some(2));
}

// --------------------------------------------------------- Rust host closures ---

fn registry() -> Registry {
    Registry::load(&Sources { folders: vec![root().join(FOLDER)], files: vec![] }, &Options::default())
}

fn runtimes() -> Vec<Runtime> {
    let workers = Isolation::Workers(WorkerSettings::new(env!("CARGO_BIN_EXE_lcp")));
    [workers, Isolation::InProcess]
        .into_iter()
        .map(|isolation| Runtime::new(RuntimeConfig { venv: None, isolation, ..RuntimeConfig::default() }).unwrap())
        .collect()
}

fn ok(result: ToolResult) -> Value {
    assert!(result.ok(), "the call failed: {result:?}");
    result.output
}

#[test]
fn a_rust_host_answers_the_user_model_progress_and_logs_with_closures() {
    let registry = registry();
    for runtime in runtimes() {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&asked);
        runtime.set_user_interaction_handler(move |interaction| {
            seen.lock().unwrap().push((interaction.kind, interaction.title.clone(), interaction.options.clone()));
            match interaction.kind {
                InteractionKind::Form => Answer::Given(json!({"name": "Rust"})),
                _ => Answer::Given(json!("from Rust")),
            }
        });
        runtime.set_model(
            |generation| {
                Ok(format!("{} | {:?} | {:?}", generation.prompt, generation.system_prompt, generation.n_predict))
            },
            true,
        );
        let progress = Arc::new(Mutex::new(Vec::new()));
        let heard = Arc::clone(&progress);
        runtime.set_progress_handler(move |p| heard.lock().unwrap().push((p.text.clone(), p.progress, p.total)));
        let logs = Arc::new(Mutex::new(Vec::new()));
        let heard = Arc::clone(&logs);
        runtime.set_log_handler(move |record| heard.lock().unwrap().push((record.level, record.logger.clone())));

        let options = CallOptions::default();
        let select = json!({"kind": "select", "title": "Region", "options": ["eu", "us"]});
        assert_eq!(ok(runtime.call(&registry, "tool_ask", &select, &options)), json!({"answer": "from Rust"}));
        assert_eq!(ok(runtime.call(&registry, "tool_form", &json!({}), &options)), json!({"answer": {"name": "Rust"}}));
        assert_eq!(
            asked.lock().unwrap().clone(),
            [
                (InteractionKind::Select, "Region".to_string(), vec!["eu".to_string(), "us".to_string()]),
                (InteractionKind::Form, "Profile".to_string(), vec![])
            ]
        );
        let generated = ok(runtime.call(&registry, "tool_generate", &json!({"prompt": "hi"}), &options));
        assert_eq!(generated, json!({"text": "hi | Some(\"Be brief.\") | Some(50)", "vision": true}));
        let through_context = ok(runtime.call(&registry, "tool_context_model", &json!({"prompt": "ctx"}), &options));
        assert_eq!(through_context["text"], "ctx | None | None");
        ok(runtime.call(&registry, "tool_progress", &json!({"steps": 2}), &options));
        assert_eq!(
            progress.lock().unwrap().clone(),
            [("step 1".to_string(), Some(1.0), Some(2.0)), ("step 2".to_string(), Some(2.0), Some(2.0))]
        );
        let debug = CallOptions { log_level: Some(level::DEBUG), ..CallOptions::default() };
        let logged = runtime.call(&registry, "tool_log", &json!({}), &debug);
        assert_eq!(logged.stderr, "", "records went to the handler, not stderr");
        assert_eq!(
            logs.lock().unwrap().clone(),
            [
                (level::DEBUG, "fixture.logs".to_string()),
                (level::INFO, "fixture.logs".to_string()),
                (level::WARNING, "fixture.logs".to_string()),
                (level::ERROR, "root".to_string())
            ]
        );
    }
}

#[test]
fn a_calls_own_callbacks_win_and_a_host_without_them_gives_clear_errors() {
    let registry = registry();
    for runtime in runtimes() {
        let failed = runtime.call(&registry, "tool_ask", &json!({}), &CallOptions::default());
        assert!(!failed.ok());
        assert!(failed.error.as_deref().unwrap().contains("no user interaction handler"), "{failed:?}");
        let failed = runtime.call(&registry, "tool_generate", &json!({"prompt": "x"}), &CallOptions::default());
        assert!(failed.error.as_deref().unwrap().contains("no model"), "{failed:?}");
        let unheard = ok(runtime.call(&registry, "tool_progress", &json!({"steps": 1}), &CallOptions::default()));
        assert_eq!(unheard["delivered"], json!([false]));

        runtime.set_user_interaction_handler(|_| Answer::Given(json!("runtime's")));
        let declines = Callbacks { interact: Some(Arc::new(|_| Answer::Declined)), ..Callbacks::default() };
        let own = CallOptions { callbacks: declines, ..CallOptions::default() };
        assert_eq!(ok(runtime.call(&registry, "tool_ask", &json!({}), &own)), json!({"answer": null}));
        let runtimes = ok(runtime.call(&registry, "tool_ask", &json!({}), &CallOptions::default()));
        assert_eq!(runtimes, json!({"answer": "runtime's"}));
    }
}

#[test]
fn a_call_whose_only_callback_is_roots_or_a_batch_is_answered_by_it() {
    let registry = registry();
    for runtime in runtimes() {
        let roots: RootsHandler = Arc::new(|_| Ok(vec![json!({"uri": "file:///only"})]));
        let own = CallOptions {
            callbacks: Callbacks { roots: Some(roots), ..Callbacks::default() },
            ..CallOptions::default()
        };
        assert_eq!(ok(runtime.call(&registry, "tool_roots", &json!({}), &own)), json!([{"uri": "file:///only"}]));
        let batch: BatchHandler = Arc::new(|requests| {
            let answer = |request: &HostRequest| match request {
                HostRequest::Interact(_) => HostAnswer::Interact(Answer::Given(json!("from the batch"))),
                HostRequest::Generate(_) => HostAnswer::Generate(Ok("batched".to_string().into())),
                HostRequest::Roots(_) => HostAnswer::Roots(Ok(vec![json!({"uri": "file:///batched"})])),
                other => panic!("not asked: {other:?}"),
            };
            requests.iter().map(|(name, request)| (name.clone(), answer(request))).collect()
        });
        let own = CallOptions {
            callbacks: Callbacks { batch: Some(batch), ..Callbacks::default() },
            ..CallOptions::default()
        };
        let asked = ok(runtime.call(&registry, "tool_ask_many", &json!({}), &own));
        assert_eq!(asked, json!({"who": "from the batch", "line": "batched", "where": [{"uri": "file:///batched"}]}));
    }
}

// ------------------------------------------- the built-in `interaction` library ---

const BUILT_IN: &str = "default_tools/interaction";
/// A 1×1 PNG, as base64 and as bytes.
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const PIXEL_BYTES: &[u8] = b"\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\x0d\x49\x44\x41\x54\x78\xda\x63\xfc\xcf\xc0\x50\x0f\x00\x04\x85\x01\x80\x84\xa9\x8c\x21\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";

fn built_in(tool: &str, workspace: &std::path::Path, args: Value, answers: &str) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["call", tool, BUILT_IN, "--workspace", workspace.to_str().unwrap(), "--answers", answers])
        .args(["--args", &args.to_string()])
        .current_dir(root())
        .stdin(Stdio::null())
        .env_remove("VIRTUAL_ENV")
        .output()
        .expect("lcp runs");
    result(&output)
}

#[test]
fn the_built_in_interaction_tools_ask_the_user_through_lcp_call() {
    let workspace = temp_dir("interaction-call");
    let choice = json!({"question": "Which database?", "choices": ["staging", "production"]});
    let answered = built_in("tool_ask_user", &workspace, choice.clone(), r#"["production"]"#);
    assert_eq!(answered["output"]["output"], json!({"answered": true, "answer": "production"}));
    let declined = built_in("tool_ask_user", &workspace, choice, "[null]");
    assert_eq!(declined["output"]["output"]["answered"], false, "{declined}");
    let bad = built_in("tool_ask_user", &workspace, json!({"question": "?", "choices": ["a", "a"]}), "[]");
    assert_eq!(bad["ok"], false, "{bad}");

    let form = json!({"title": "New customer", "fields": [{"name": "company"}, {"name": "seats", "type": "integer"}]});
    let filled =
        built_in("tool_ask_user_form", &workspace, form, r#"{"New customer": {"company": "Acme", "seats": 4}}"#);
    assert_eq!(filled["output"]["output"]["answers"], json!({"company": "Acme", "seats": 4}), "{filled}");

    // The secret goes to the env file, never into the result.
    std::fs::write(workspace.join(".env"), "OTHER=1\nAPI_KEY=old\n").unwrap();
    let secret = json!({"name": "API_KEY", "purpose": "the weather service"});
    let stored = built_in("tool_store_secret", &workspace, secret.clone(), r#"["s3cr\"t"]"#);
    assert_eq!(
        stored["output"]["output"],
        json!({"name": "API_KEY", "env_file": ".env", "replaced": true, "characters": 6})
    );
    assert!(!stored.to_string().contains("s3cr"), "{stored}");
    assert_eq!(std::fs::read_to_string(workspace.join(".env")).unwrap(), "OTHER=1\nAPI_KEY=\"s3cr\\\"t\"\n");
    let refused = built_in("tool_store_secret", &workspace, secret, "[null]");
    assert!(refused["error"].as_str().unwrap().contains("declined"), "{refused}");
    let outside =
        built_in("tool_store_secret", &workspace, json!({"name": "K", "purpose": "p", "env_file": "../x.env"}), "[]");
    assert!(outside["error"].as_str().unwrap().contains("not a file inside the workspace"), "{outside}");
}

#[test]
fn the_built_in_interaction_tools_use_a_rust_hosts_model_and_hear_progress() {
    let registry =
        Registry::load(&Sources { folders: vec![root().join(BUILT_IN)], files: vec![] }, &Options::default());
    let workspace = temp_dir("interaction-rust");
    // Three paragraphs of 7000 characters: three parts.
    let long = ["a", "b", "c"].map(|letter| letter.repeat(7000)).join("\n\n");
    std::fs::write(workspace.join("long.txt"), &long).unwrap();
    std::fs::write(workspace.join("pixel.png"), PIXEL_BYTES).unwrap();
    for runtime in runtimes() {
        let prompts = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&prompts);
        runtime.set_model(
            move |generation| {
                seen.lock().unwrap().push((generation.prompt.clone(), generation.images.clone()));
                Ok(format!("summary {}", seen.lock().unwrap().len()))
            },
            true,
        );
        let progress = Arc::new(Mutex::new(Vec::new()));
        let heard = Arc::clone(&progress);
        runtime.set_progress_handler(move |p| heard.lock().unwrap().push((p.progress, p.total)));
        let options = CallOptions { workspace: Some(workspace.clone()), ..CallOptions::default() };

        let summary = ok(runtime.call(
            &registry,
            "tool_summarize_file",
            &json!({"path": "long.txt", "focus": "endings"}),
            &options,
        ));
        assert_eq!(
            summary["output"],
            json!({"path": "long.txt", "characters": long.len(), "parts": 3, "summary": "summary 4"})
        );
        let asked = prompts.lock().unwrap().clone();
        assert_eq!(asked.len(), 4, "three parts, then the combination");
        assert!(
            asked[0].0.contains("(part 1 of 3)") && asked[0].0.contains("Concentrate on endings."),
            "{}",
            asked[0].0
        );
        assert!(asked[3].0.contains("Part 3: summary 3"), "{}", asked[3].0);
        assert_eq!(
            progress.lock().unwrap().clone(),
            (1..=4).map(|i| (Some(f64::from(i)), Some(4.0))).collect::<Vec<_>>()
        );
        let escape = runtime.call(&registry, "tool_summarize_file", &json!({"path": "../long.txt"}), &options);
        assert!(escape.error.unwrap().contains("leads outside the workspace"));

        prompts.lock().unwrap().clear();
        let described = ok(runtime.call(&registry, "tool_describe_image", &json!({"image": "pixel.png"}), &options));
        assert_eq!(described["output"]["answer"], "summary 1");
        assert_eq!(described["output"]["mime_type"], "image/png");
        assert_eq!(prompts.lock().unwrap()[0].1, [PIXEL.to_string()], "the image went to the model");
        // A model that cannot see gets no image: the result carries it instead.
        runtime.set_model(|_| Ok("unused".to_string()), false);
        let attached = ok(runtime.call(&registry, "tool_describe_image", &json!({"image": "pixel.png"}), &options));
        assert_eq!(attached["images"], json!([format!("data:image/png;base64,{PIXEL}")]));
        assert_eq!(attached["output"]["answer"], Value::Null);
    }
}

#[cfg(feature = "external")]
/// `lcp call` with a terminal: waits for `prompt`, types `typed`.
fn at_a_terminal(tool: &str, args: Value, prompt: &str, typed: &str) -> (String, Value) {
    let output = Command::new(test_python())
        .arg(root().join("tests/python/terminal_session.py"))
        .args([prompt, typed, "--", env!("CARGO_BIN_EXE_lcp"), "call", tool, FOLDER, "--args", &args.to_string()])
        .current_dir(root())
        .env_remove("VIRTUAL_ENV")
        .output()
        .expect("python runs");
    let session: Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{err}: {}", stderr(&output)));
    let result: Value = serde_json::from_str(session["stdout"].as_str().unwrap()).unwrap();
    (session["terminal"].as_str().unwrap().to_string(), result)
}

#[cfg(feature = "external")]
#[test]
fn lcp_call_reads_a_secret_at_the_terminal_without_echo() {
    let (terminal, result) =
        at_a_terminal("tool_ask", json!({"kind": "secret", "prompt": "API key?"}), "(not shown): ", "hunter2");
    assert_eq!(result["output"], json!({"answer": "hunter2"}));
    assert!(terminal.contains("API key? (not shown): ") && !terminal.contains("hunter2"), "{terminal:?}");
    // Text is echoed as it is typed.
    let (terminal, result) = at_a_terminal("tool_ask", json!({"kind": "text", "prompt": "Name?"}), "Name?: ", "Ada");
    assert_eq!(result["output"], json!({"answer": "Ada"}));
    assert!(terminal.contains("Ada"), "{terminal:?}");
}

// ------------------------------------------------- autonomy levels (SPEC §9) ---

#[test]
fn the_built_in_tools_follow_the_reference_autonomy_levels() {
    use lcp::runtime::{Confirmation, Decision};
    let registry = Registry::load(
        &Sources { folders: vec![root().join("default_tools/workspace_files")], files: vec![] },
        &Options::default(),
    );
    // Two writes, the user answering "always" each time it is asked.
    for (level, asked) in [("strict", 2), ("safe", 1), ("full_access", 0)] {
        let runtime = Runtime::new(RuntimeConfig {
            autonomy_level: level.parse().unwrap(),
            isolation: Isolation::Workers(WorkerSettings::new(env!("CARGO_BIN_EXE_lcp"))),
            ..RuntimeConfig::default()
        })
        .unwrap();
        let count = Arc::new(Mutex::new(0));
        let counted = Arc::clone(&count);
        let _ = runtime.set_confirm_handler(move |_| {
            *counted.lock().unwrap() += 1;
            Confirmation { decision: Decision::Always, reason: "go on".to_string() }
        });
        let workspace = temp_dir(&format!("autonomy-{level}"));
        let options = CallOptions { workspace: Some(workspace.clone()), ..CallOptions::default() };
        for name in ["a.txt", "b.txt"] {
            let args = json!({"path": name, "content": "x"});
            ok(runtime.call(&registry, "tool_write_file", &args, &options));
        }
        assert_eq!(*count.lock().unwrap(), asked, "{level}");
        assert!(workspace.join("b.txt").exists());
    }
}
