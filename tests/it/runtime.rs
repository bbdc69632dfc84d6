//! SPEC §5–§6 through the runtime API, in this process: one test per rule, on the
//! libraries of `fixtures/runtime/`, each doing one thing.
//!
//! The interpreter and its loaded modules belong to the process, so each library
//! here is used by one test only. No test in this process changes the working
//! directory (other tests read relative paths): workspaces are checked through `lcp
//! call` (`call.rs`) and through `host.py` run by a plain Python.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lcp::discovery::registry::{Options, Registry, Sources};
use lcp::runtime::catalog::{Catalog, CatalogError};
use lcp::runtime::{
    CallOptions, ConfirmRequest, Confirmation, Decision, Runtime, RuntimeConfig, RuntimeError, ToolResult,
};
use serde_json::{Value, json};

use crate::support::*;

fn config() -> RuntimeConfig {
    RuntimeConfig { venv: None, ..RuntimeConfig::default() }
}

fn runtime() -> Runtime {
    Runtime::new(config()).expect("the embedded Python starts")
}

/// A fixture of `fixtures/runtime/`, by absolute path.
fn folder(name: &str) -> PathBuf {
    root().join("fixtures/runtime").join(name)
}

fn registry(name: &str) -> Registry {
    Registry::load(&Sources { folders: vec![folder(name)], files: vec![] }, &Options::default())
}

fn call(runtime: &Runtime, registry: &Registry, tool: &str, args: Value) -> ToolResult {
    runtime.call(registry, tool, &args, &CallOptions::default())
}

/// The output of a call that must succeed.
fn output(result: ToolResult) -> Value {
    assert!(result.ok(), "the call failed: {result:#?}");
    result.output
}

fn error(result: &ToolResult) -> &str {
    assert!(!result.ok(), "the call succeeded: {result:#?}");
    result.error.as_deref().unwrap_or_default()
}

// ---------------------------------------------------------------- loading ---

#[test]
fn first_call_imports_the_file_under_a_private_module_name() {
    let (runtime, registry) = (runtime(), registry("interpreter"));
    let module = output(call(&runtime, &registry, "tool_module_name", json!({})));
    assert!(module["name"].as_str().unwrap().starts_with("_lcp_"), "{module}");
    assert_eq!(module["plain_name_imported"], false);
}

#[test]
fn library_folders_are_private_packages_so_same_named_helpers_never_collide() {
    let (runtime, registry) = (runtime(), registry("helpers"));
    assert_eq!(
        output(call(&runtime, &registry, "tool_alpha_helper", json!({}))),
        json!({"module_name": "alpha helper", "value": 1})
    );
    assert_eq!(
        output(call(&runtime, &registry, "tool_beta_helper", json!({}))),
        json!({"module_name": "beta helper", "value": 2})
    );
    assert_eq!(output(call(&runtime, &registry, "tool_beta_second", json!({}))), json!("beta helper"));
}

#[test]
fn interpreter_is_the_one_lcp_was_built_with() {
    let (runtime, registry) = (runtime(), registry("interpreter"));
    let (executable, version) = lcp::runtime::python_build();
    let info = output(call(&runtime, &registry, "tool_interpreter", json!({})));
    assert_eq!(info["executable"], executable);
    assert_eq!(info["version"], json!(version.split('.').map(|n| n.parse::<u32>().unwrap()).collect::<Vec<_>>()));
    let prefix = Path::new(executable).parent().and_then(Path::parent).unwrap();
    assert_eq!(info["prefix"], prefix.to_str().unwrap());
}

// ------------------------------------------------------------------ hooks ---

#[test]
fn a_venv_that_is_not_one_for_the_embedded_python_is_refused_by_name() {
    let folder = temp_dir("not-a-venv");
    let error = Runtime::new(RuntimeConfig { venv: Some(folder.clone()), ..config() }).err().expect("refused");
    assert!(matches!(&error, RuntimeError::Venv { path, .. } if path == &folder), "{error:?}");
    let expected = format!("{}: not a virtual environment for Python", folder.display());
    assert!(error.to_string().starts_with(&expected), "{error}");
}

#[test]
fn init_tools_library_gets_the_config_positionally_once_per_process() {
    let mut settings = config();
    settings.autonomy_level = lcp::runtime::Autonomy::Strict;
    settings.libraries.insert("positional".to_string(), json!({"api_key": "k"}).as_object().unwrap().clone());
    let (runtime, registry) = (Runtime::new(settings).unwrap(), registry("hooks"));
    let first = output(call(&runtime, &registry, "tool_positional_state", json!({})));
    let second = output(call(&runtime, &registry, "tool_positional_state", json!({})));
    let expected = json!({"received": [{"api_key": "k", "autonomy_level": "strict", "has_confirm_handler": false}]});
    assert_eq!(first, expected);
    assert_eq!(second, expected);
}

#[test]
fn init_tools_library_without_a_positional_parameter_is_called_with_no_arguments() {
    let (runtime, registry) = (runtime(), registry("hooks"));
    assert_eq!(output(call(&runtime, &registry, "tool_keyword_only_state", json!({}))), json!({"received": [null]}));
}

#[test]
fn init_tools_library_taking_star_args_gets_the_config() {
    let (runtime, registry) = (runtime(), registry("hooks"));
    let state = output(call(&runtime, &registry, "tool_varargs_state", json!({})));
    assert_eq!(state, json!({"received": [["autonomy_level", "confirm_handler", "user_interaction_handler"]]}));
}

#[test]
fn set_confirm_handler_runs_at_load_and_again_for_every_new_handler() {
    let (runtime, registry) = (runtime(), registry("hooks"));
    runtime.set_confirm_handler(|_| Confirmation::allow(""));
    let count = |runtime: &Runtime| {
        output(call(runtime, &registry, "tool_handler_hook_state", json!({})))["set_calls"].as_u64().unwrap()
    };
    let at_load = count(&runtime);
    assert!(at_load >= 1, "set_confirm_handler was not called at load");
    // Other tests of this process register handlers too: count at least one more each time.
    let problems = runtime.set_confirm_handler(|_| Confirmation::reject(""));
    assert!(problems.is_empty(), "{problems:?}");
    let after_second = count(&runtime);
    assert!(after_second > at_load);
    runtime.set_confirm_handler(|_| Confirmation::allow(""));
    assert!(count(&runtime) > after_second);
}

// ---------------------------------------------------------------- confirm ---

/// A runtime whose handler answers `answer` and records every request.
fn confirming(answer: Confirmation) -> (Runtime, Arc<Mutex<Vec<ConfirmRequest>>>) {
    let runtime = runtime();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    runtime.set_confirm_handler(move |request| {
        record.lock().unwrap().push(request.clone());
        answer.clone()
    });
    (runtime, seen)
}

#[test]
fn confirm_handler_allowing_gets_content_label_library_and_tool() {
    let (runtime, seen) = confirming(Confirmation::allow("fine by me"));
    let result = call(&runtime, &registry("confirm"), "tool_ask_pair", json!({"content": "rm notes.txt"}));
    assert_eq!(output(result), json!({"decision": "allow", "reason": "fine by me"}));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].library.as_str(), seen[0].tool.as_deref()), ("confirm", Some("tool_ask_pair")));
    assert_eq!((seen[0].content.as_str(), seen[0].label.as_str()), ("rm notes.txt", "Delete file"));
}

#[test]
fn confirm_handler_rejecting_gives_its_reason_to_the_tool() {
    let (runtime, _) = confirming(Confirmation::reject("not today"));
    let result = call(&runtime, &registry("confirm"), "tool_ask_pair", json!({"content": "rm -rf /"}));
    assert_eq!(output(result), json!({"decision": "reject", "reason": "not today"}));
}

#[test]
fn confirm_handler_always_is_passed_through() {
    let (runtime, _) = confirming(Confirmation { decision: Decision::Always, reason: String::new() });
    let result = call(&runtime, &registry("confirm"), "tool_ask_pair", json!({"content": "x"}));
    assert_eq!(output(result)["decision"], "always");
}

#[test]
fn confirm_handler_receives_an_extra_argument_and_a_single_dict() {
    let (runtime, seen) = confirming(Confirmation::allow("ok"));
    let registry = registry("confirm");
    output(call(&runtime, &registry, "tool_ask_extra", json!({"content": "notes.txt"})));
    output(call(&runtime, &registry, "tool_ask_dict", json!({"content": "make test"})));
    let seen = seen.lock().unwrap();
    assert_eq!((seen[0].content.as_str(), seen[0].label.as_str()), ("notes.txt", "Write file"));
    assert_eq!(seen[0].args, [json!("notes.txt"), json!("Write file"), json!({"bytes": 12})]);
    assert_eq!((seen[1].content.as_str(), seen[1].label.as_str()), ("make test", "Run command"));
    assert_eq!(seen[1].args, [json!({"content": "make test", "label": "Run command"})]);
}

#[test]
fn each_runtime_answers_the_confirmations_of_its_own_calls() {
    let registry = registry("confirm");
    let (yes, _) = confirming(Confirmation::allow("yes"));
    let (no, _) = confirming(Confirmation::reject("no"));
    let without = runtime();
    for _ in 0..3 {
        assert_eq!(output(call(&yes, &registry, "tool_ask_pair", json!({"content": "a"})))["reason"], "yes");
        assert_eq!(output(call(&no, &registry, "tool_ask_pair", json!({"content": "a"})))["reason"], "no");
        let refused = output(call(&without, &registry, "tool_ask_pair", json!({"content": "a"})));
        assert_eq!(refused, json!({"decision": "reject", "reason": "the host has no confirmation handler"}));
    }
}

// --------------------------------------------------------------- rejected ---

#[test]
fn a_library_whose_import_fails_reports_it_with_the_traceback_on_every_call() {
    let (runtime, registry) = (runtime(), registry("rejected"));
    for _ in 0..2 {
        let result = call(&runtime, &registry, "tool_bad_import", json!({}));
        assert!(error(&result).contains("RuntimeError: cannot import this library"), "{result:#?}");
        let traceback = result.traceback.unwrap();
        assert!(traceback.contains("bad_import.py") && traceback.contains("_explode"), "{traceback}");
    }
}

#[test]
fn a_library_whose_init_fails_is_rejected_and_others_keep_working() {
    let (runtime, registry) = (runtime(), registry("rejected"));
    for _ in 0..2 {
        let result = call(&runtime, &registry, "tool_bad_init", json!({}));
        // Init ran once: the same error comes back.
        assert!(error(&result).contains("ValueError: missing api key (init call 1)"), "{result:#?}");
        assert!(result.traceback.unwrap().contains("init_tools_library"));
    }
    assert_eq!(output(call(&runtime, &registry, "tool_healthy", json!({}))), "fine");
}

// -------------------------------------------------------------- arguments ---

#[test]
fn invalid_arguments_list_every_problem_and_the_valid_names_and_run_nothing() {
    let runtime = runtime();
    // The library would fail to import: the error shows that nothing was run.
    let result = call(&runtime, &registry("rejected"), "tool_bad_import", json!({"verbose": true}));
    assert_eq!(
        error(&result),
        "invalid arguments for `tool_bad_import`:\n- unknown parameter `verbose`\nthe tool takes no parameters"
    );
    let result = call(&runtime, &registry("output"), "tool_print_text", json!({"txt": 1}));
    assert_eq!(
        error(&result),
        "invalid arguments for `tool_print_text`:\n- missing required parameter `text`\n- unknown parameter `txt`; did you mean `text`?\nvalid parameters: text (string, required)"
    );
    assert_eq!(result.stdout, "");
}

#[test]
fn python_applies_its_own_defaults() {
    let (runtime, registry) = (runtime(), registry("coercions"));
    let result = output(call(&runtime, &registry, "tool_defaults", json!({"label": "x"})));
    assert_eq!(result, json!({"count": 3, "label": "x", "when": "None"}));
}

#[test]
fn arguments_are_converted_to_the_annotated_types() {
    let (runtime, registry) = (runtime(), registry("coercions"));
    let args = json!({
        "color": "green",
        "level": 2,
        "point": {"x": 1, "y": 2.5},
        "box": {"width": 3, "corner": {"x": 0, "y": 0, "label": "green"}},
        "pair": {"left": 1, "right": "r"},
        "couple": [7, "seven"],
        "tags": ["b", "a"],
        "frozen": [1, 2],
        "when": "2024-05-06T07:08:09Z",
        "day": "2024-05-06",
        "at": "07:08",
        "span": "P1DT2H",
        "path": "notes/a.txt",
        "ident": "123e4567-e89b-12d3-a456-426614174000",
        "ratio": 2,
        "maybe": "red",
        "either": "text",
        "points": [{"x": 1, "y": 1}]
    });
    let shown = output(call(&runtime, &registry, "tool_convert", args));
    let kind = |name: &str| shown[name]["type"].as_str().unwrap().to_string();
    let repr = |name: &str| shown[name]["repr"].as_str().unwrap().to_string();
    assert_eq!(repr("color"), "<Color.GREEN: 'green'>");
    assert_eq!(repr("level"), "<Level.HIGH: 2>");
    assert_eq!(repr("point"), "Point(x=1.0, y=2.5, label=<Color.RED: 'red'>)");
    assert_eq!(repr("box"), "{'width': 3, 'corner': Point(x=0.0, y=0.0, label=<Color.GREEN: 'green'>)}");
    assert_eq!(repr("pair"), "Pair(left=1, right='r')");
    assert_eq!(repr("couple"), "(7, 'seven')");
    assert_eq!(kind("tags"), "set");
    assert!(repr("tags").contains("'a'") && repr("tags").contains("'b'"));
    assert_eq!(kind("frozen"), "frozenset");
    assert_eq!(repr("when"), "datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)");
    assert_eq!(repr("day"), "datetime.date(2024, 5, 6)");
    assert_eq!(repr("at"), "datetime.time(7, 8)");
    assert_eq!(repr("span"), "datetime.timedelta(days=1, seconds=7200)");
    assert_eq!(repr("path"), "PosixPath('notes/a.txt')");
    assert_eq!(repr("ident"), "UUID('123e4567-e89b-12d3-a456-426614174000')");
    assert_eq!(repr("ratio"), "2.0");
    assert_eq!(repr("maybe"), "<Color.RED: 'red'>");
    assert_eq!(repr("either"), "'text'");
    assert_eq!(repr("points"), "[Point(x=1.0, y=1.0, label=<Color.RED: 'red'>)]");
}

#[test]
fn positional_only_parameters_are_passed_by_position_and_extras_go_to_kwargs() {
    let (runtime, registry) = (runtime(), registry("coercions"));
    assert_eq!(output(call(&runtime, &registry, "tool_positional_only", json!({"a": 1, "c": 5}))), json!([1, 10, 5]));
    assert_eq!(
        output(call(&runtime, &registry, "tool_kwargs", json!({"name": "n", "x": [1]}))),
        json!({"name": "n", "extra": {"x": [1]}})
    );
}

// ------------------------------------------------------- types of SPEC §3 ---

#[test]
fn arguments_typed_by_a_sibling_module_decimal_and_ipaddress_arrive_converted_on_every_call() {
    let (runtime, registry) = (runtime(), registry("siblings"));
    let args = json!({
        "item": {"name": "cup", "size": "m"},
        "size": "s",
        "price": 19.99,
        "host": "192.0.2.1",
        "net": "2001:db8::/32",
        "since": "2024-05-06",
        "grade": "m"
    });
    // The first call loads the library through host.py; later ones could go directly,
    // and must not, since these arguments need converting.
    let (first, second) =
        (call(&runtime, &registry, "tool_convert", args.clone()), call(&runtime, &registry, "tool_convert", args));
    let shown = output(first);
    assert_eq!(shown, output(second));
    assert_eq!(shown["item"]["repr"], "Item(name='cup', size=<Size.M: 'm'>)");
    assert_eq!(shown["size"]["repr"], "<Size.S: 's'>");
    assert_eq!(shown["price"]["repr"], "Decimal('19.99')");
    assert_eq!(shown["host"]["repr"], "IPv4Address('192.0.2.1')");
    assert_eq!(shown["net"]["repr"], "IPv6Network('2001:db8::/32')");
    assert_eq!(shown["window"]["since"]["repr"], "datetime.date(2024, 5, 6)");
    assert_eq!(shown["window"]["grade"]["repr"], "<Size.M: 'm'>");
}

#[test]
fn arguments_the_schema_of_a_new_type_refuses_never_reach_python() {
    let (runtime, registry) = (runtime(), registry("siblings"));
    let args = json!({"item": {"name": "cup", "size": "xl"}, "size": "s", "price": "12,5", "host": "192.0.2.256", "net": "x", "mood": 1});
    let text = error(&call(&runtime, &registry, "tool_convert", args)).to_string();
    for expected in ["`item.size`", "`price`", "`host`", "`net`", "unknown parameter `mood`"] {
        assert!(text.contains(expected), "{expected} missing from: {text}");
    }
}

#[test]
fn async_tools_are_awaited() {
    let (runtime, registry) = (runtime(), registry("async"));
    assert_eq!(output(call(&runtime, &registry, "tool_async_add", json!({"a": 2, "b": 3}))), 5);
    assert_eq!(output(call(&runtime, &registry, "tool_async_gather", json!({"count": 4}))), json!([0, 1, 4, 9]));
}

// ---------------------------------------------------------------- results ---

#[test]
fn tuples_become_arrays() {
    let (runtime, registry) = (runtime(), registry("returns"));
    assert_eq!(output(call(&runtime, &registry, "tool_tuple", json!({}))), json!([1, [2, "three"], {"k": [4]}]));
}

#[test]
fn values_json_cannot_carry_are_errors_naming_where_they_sit() {
    let (runtime, registry) = (runtime(), registry("returns"));
    // A set is an array, as pydantic dumps it.
    assert_eq!(output(call(&runtime, &registry, "tool_set", json!({}))), json!([1, 2]));
    let nan = call(&runtime, &registry, "tool_nan", json!({}));
    assert!(
        error(&nan).contains("`output[\"stats\"][1]` is nan") && error(&nan).contains("`output[\"max\"]` is inf"),
        "{nan:#?}"
    );
    let object = call(&runtime, &registry, "tool_object", json!({}));
    assert!(error(&object).contains("`output[\"rows\"][0][\"value\"]` is a values.Opaque object"), "{object:#?}");
}

#[test]
fn a_dict_with_success_false_or_an_error_is_a_tool_reported_failure_with_its_output_kept() {
    let (runtime, registry) = (runtime(), registry("failures"));
    let failed = call(&runtime, &registry, "tool_report_failure", json!({}));
    assert_eq!(error(&failed), "the file is locked");
    assert_eq!(failed.output, json!({"success": false, "error": "the file is locked", "output": {"path": "a.txt"}}));
    let failed = call(&runtime, &registry, "tool_report_error", json!({}));
    assert_eq!(error(&failed), r#"{"code": 7}"#);
    assert_eq!(
        output(call(&runtime, &registry, "tool_report_success", json!({}))),
        json!({"success": true, "output": 42})
    );
}

#[test]
fn exceptions_become_error_results_with_the_full_traceback() {
    let (runtime, registry) = (runtime(), registry("failures"));
    let result = call(&runtime, &registry, "tool_raise", json!({"message": "no such row"}));
    assert_eq!(error(&result), "ValueError: no such row");
    let traceback = result.traceback.unwrap();
    assert!(traceback.starts_with("Traceback (most recent call last):"), "{traceback}");
    assert!(traceback.contains("failures.py") && traceback.contains("in tool_raise"), "{traceback}");
    assert!(!traceback.contains("<lcp host>"), "lcp's own frames are left out: {traceback}");
}

#[test]
fn system_exit_and_keyboard_interrupt_are_contained() {
    let (runtime, registry) = (runtime(), registry("failures"));
    let exit = call(&runtime, &registry, "tool_exit", json!({}));
    assert!(error(&exit).contains("SystemExit: 3"), "{exit:#?}");
    let interrupt = call(&runtime, &registry, "tool_interrupt", json!({}));
    assert_eq!(error(&interrupt), "KeyboardInterrupt");
    // The process is alive and the interpreter still works.
    assert_eq!(output(call(&runtime, &registry, "tool_report_success", json!({})))["output"], 42);
}

// ----------------------------------------------------------------- output ---

#[test]
fn what_a_tool_prints_is_captured_per_call_even_raw_writes_to_fd_1() {
    let (runtime, registry) = (runtime(), registry("output"));
    let result = call(&runtime, &registry, "tool_print_everywhere", json!({}));
    assert_eq!(output(result.clone()), "done");
    // Python-level output comes first; what reached fd 1 follows.
    assert!(result.stdout.starts_with("printed line\n"), "{result:#?}");
    for line in ["raw fd one", "child process line", "dunder stdout line"] {
        assert!(result.stdout.contains(line), "{line:?} missing: {result:#?}");
    }
    assert_eq!(result.stderr, "error line\n");
}

#[test]
fn what_a_tool_prints_is_kept_up_to_a_bound() {
    let (runtime, registry) = (runtime(), registry("output"));
    let result = call(&runtime, &registry, "tool_print_a_lot", json!({"lines": 200_000}));
    assert_eq!(output(result.clone()), 200_000);
    assert!(result.stdout.starts_with("line 000000\nline 000001\n"));
    // 12 characters a line, 1 000 000 kept.
    assert!(
        result.stdout.contains("\n[lcp: 1400000 more characters were printed and not kept]\n"),
        "{}",
        &result.stdout[result.stdout.len() - 200..]
    );
}

#[test]
fn a_tool_that_replaces_sys_stdout_does_not_keep_it() {
    let (runtime, registry) = (runtime(), registry("output"));
    output(call(&runtime, &registry, "tool_replace_stdout", json!({})));
    let result = call(&runtime, &registry, "tool_print_text", json!({"text": "still captured"}));
    assert!(result.stdout.starts_with("still captured\n"), "{result:#?}");
}

// --------------------------------------------------------------- timeouts ---

fn with_timeout(seconds: f64) -> CallOptions {
    CallOptions { timeout: Some(Duration::from_secs_f64(seconds)), ..CallOptions::default() }
}

#[test]
fn a_timeout_stops_a_tool_spinning_in_pure_python() {
    let (runtime, registry) = (runtime(), registry("timeouts"));
    let result = runtime.call(&registry, "tool_spin", &json!({}), &with_timeout(0.3));
    assert_eq!(error(&result), "`tool_spin` timed out after 0.3 s and was stopped");
    assert!(result.traceback.as_deref().unwrap_or_default().contains("in tool_spin"), "{result:#?}");
    let stubborn = runtime.call(&registry, "tool_spin_stubborn", &json!({}), &with_timeout(0.3));
    assert_eq!(error(&stubborn), "`tool_spin_stubborn` timed out after 0.3 s and was stopped");
    assert_eq!(output(runtime.call(&registry, "tool_quick", &json!({}), &with_timeout(30.0))), "quick");
}

#[test]
fn a_tool_that_fails_its_own_way_when_stopped_is_reported_as_it_happened() {
    let (runtime, registry) = (runtime(), registry("timeouts"));
    let result = runtime.call(&registry, "tool_spin_then_fail", &json!({}), &with_timeout(0.3));
    assert_eq!(
        error(&result),
        "`tool_spin_then_fail` timed out after 0.3 s; told to stop, it failed with an error of its own: \
         ValueError: an error of its own"
    );
}

// ------------------------------------------------------------ concurrency ---

#[test]
fn calls_from_several_threads_at_once_get_their_own_results_and_output() {
    let (runtime, registry) = (runtime(), registry("concurrency"));
    std::thread::scope(|scope| {
        for thread in 0..6 {
            let (runtime, registry) = (&runtime, &registry);
            scope.spawn(move || {
                for i in 0..20 {
                    let value = thread * 100 + i;
                    let pause = if i % 5 == 0 { 0.002 } else { 0.0 };
                    let result = call(runtime, registry, "tool_echo", json!({"value": value, "pause": pause}));
                    let echoes: Vec<&str> = result.stdout.lines().filter(|l| l.starts_with("echo ")).collect();
                    assert_eq!(echoes, [format!("echo {value}")], "{result:#?}");
                    assert_eq!(output(result), value);
                }
            });
        }
    });
}

#[test]
fn a_spinning_tool_does_not_block_calls_of_other_tools() {
    let (runtime, registry) = (runtime(), registry("concurrency"));
    std::thread::scope(|scope| {
        // The safety timeout only matters if the spinner blocked everyone else.
        let spinner =
            scope.spawn(|| runtime.call(&registry, "tool_spin_until_released", &json!({}), &with_timeout(120.0)));
        for value in 0..20 {
            assert_eq!(output(call(&runtime, &registry, "tool_echo", json!({"value": value}))), value);
        }
        assert_eq!(output(call(&runtime, &registry, "tool_release", json!({}))), "ok");
        assert_eq!(output(spinner.join().unwrap()), "released");
    });
}

// ----------------------------------------------------------- direct path ---

/// Calls a tool of `fixtures/runtime/direct` twice (the first call loads the library
/// through `host.py`, the second may go directly) and returns both results.
fn twice(runtime: &Runtime, registry: &Registry, tool: &str, args: Value) -> (ToolResult, ToolResult) {
    (call(runtime, registry, tool, args.clone()), call(runtime, registry, tool, args))
}

/// Asserts that two results agree in everything but their stdout. The test harness
/// writes its `test … ok` lines to fd 1 while other tests' calls run, and fd 1 is
/// lcp's capture then (see `Runtime`): what tools print is checked apart, where it
/// does not depend on fd 1.
fn assert_same_but_stdout(mut first: ToolResult, mut second: ToolResult, context: &str) {
    (first.stdout, second.stdout) = (String::new(), String::new());
    assert_eq!(first, second, "{context}");
}

#[test]
fn warm_calls_of_plain_tools_skip_host_py_and_others_never_do() {
    let (runtime, registry) = (runtime(), registry("direct"));
    let (first, second) = twice(&runtime, &registry, "tool_path", json!({}));
    // With `LCP_SLOW_PATHS=direct` (or `all`) every call takes host.py's path.
    let warm = if lcp::fast_paths::FastPath::Direct.on() { "direct" } else { "host.py" };
    assert_eq!((output(first), output(second)), (json!("host.py"), json!(warm)));
    let (first, second) = twice(&runtime, &registry, "tool_color", json!({"color": "red"}));
    assert_same_but_stdout(first, second.clone(), "tool_color");
    assert_eq!(output(second), "Color.RED");
    let (first, second) = twice(&runtime, &registry, "tool_async", json!({"x": 1}));
    assert_same_but_stdout(first, second.clone(), "tool_async");
    assert_eq!(output(second), 2);
}

#[test]
fn both_paths_give_the_same_result_for_the_same_call() {
    let (runtime, registry) = (runtime(), registry("direct"));
    let cases = [
        ("tool_numbers", json!({"whole": 3.0, "real": 2, "maybe": 4.0, "anything": 5.0})),
        ("tool_numbers", json!({"real": 1.5, "whole": -7, "maybe": null})),
        ("tool_numbers", json!({"whole": 18446744073709551615u64, "real": 9007199254740993i64})),
        ("tool_nested", json!({"items": ["a", "ü"], "table": {"k": [1, {"x": null}]}, "flag": true})),
        ("tool_extra", json!({"name": "n", "zeta": 1, "alpha": [2]})),
        ("tool_prints", json!({"text": "hello"})),
        ("tool_raises", json!({"message": "boom"})),
        ("tool_exits", json!({})),
        ("tool_reports_failure", json!({"error": "it broke"})),
        ("tool_reports_failure", json!({})),
        ("tool_not_json", json!({})),
        ("tool_int_keys", json!({})),
    ];
    for (tool, args) in cases {
        let (first, second) = twice(&runtime, &registry, tool, args.clone());
        assert_same_but_stdout(first, second, &format!("{tool} {args}"));
    }
    let (first, _) = twice(&runtime, &registry, "tool_numbers", json!({"whole": 3.0, "real": 2, "maybe": 4.0}));
    assert_eq!(
        output(first),
        json!({"whole": ["int", 3], "real": ["float", 2.0], "maybe": ["int", 4], "anything": ["NoneType", null]})
    );
    let (first, second) = twice(&runtime, &registry, "tool_prints", json!({"text": "hi"}));
    for printed in [first, second] {
        assert!(printed.stdout.starts_with("out: hi\n") && printed.stderr == "err: hi\n", "{printed:#?}");
    }
    // Bytes on fd 1 reach every call running at the time: other tests' calls too.
    let (first, second) = twice(&runtime, &registry, "tool_prints_raw", json!({"text": "hey"}));
    for result in [first, second] {
        assert!(result.stdout.contains("real hey\n") && result.stdout.contains("raw hey\n"), "{result:#?}");
    }
    let (_, raised) = twice(&runtime, &registry, "tool_raises", json!({"message": "boom"}));
    assert_eq!(error(&raised), "ValueError: boom");
    assert!(raised.traceback.as_deref().unwrap().contains("in tool_raises"), "{raised:#?}");
    let (_, failed) = twice(&runtime, &registry, "tool_not_json", json!({}));
    assert!(error(&failed).contains("`output[\"nan\"]` is nan"), "{failed:#?}");
}

#[test]
fn a_tool_name_the_module_rebinds_calls_the_new_function() {
    let (runtime, registry) = (runtime(), registry("direct"));
    let (first, second) = twice(&runtime, &registry, "tool_greet", json!({}));
    assert_eq!((output(first), output(second)), (json!("hello"), json!("hello")));
    assert_eq!(output(call(&runtime, &registry, "tool_swap_greet", json!({}))), "ok");
    let (first, second) = twice(&runtime, &registry, "tool_greet", json!({}));
    assert_eq!((output(first), output(second)), (json!("swapped"), json!("swapped")));
}

#[test]
fn a_direct_call_that_replaces_sys_stdout_does_not_keep_it() {
    let (runtime, registry) = (runtime(), registry("direct"));
    let (first, second) = twice(&runtime, &registry, "tool_swaps_stdout", json!({}));
    assert_eq!((output(first), output(second)), (json!("swapped"), json!("swapped")));
    let (_, printed) = twice(&runtime, &registry, "tool_prints", json!({"text": "after"}));
    assert!(printed.stdout.starts_with("out: after\n"), "{printed:#?}");
}

// -------------------------------------------------------------- providers ---

#[test]
fn prompt_providers_replace_descriptions_and_failures_keep_the_static_one() {
    let (runtime, registry) = (runtime(), registry("providers"));
    let (descriptions, diagnostics) = runtime.prompt_descriptions(&registry, &CallOptions::default());
    let description = |name: &str| descriptions.of(registry.tool(name).unwrap().1).to_string();
    let own = &registry.tool("tool_greet").unwrap().1.description;
    assert_eq!(own, "Greets someone (static description).", "the registry's tool keeps its own");
    assert!(
        description("tool_greet").starts_with("Greets someone (dynamic description"),
        "{}",
        description("tool_greet")
    );
    assert_eq!(description("tool_broken"), "Static description of the broken one.");
    assert_eq!(description("tool_wrong_type"), "Static description kept when the provider returns a number.");
    let messages: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert!(
        messages[0].contains("`tool_broken_prompt` failed")
            && messages[0].contains("RuntimeError: the provider failed")
    );
    assert!(
        messages[1].contains("`tool_wrong_type_prompt` failed") && messages[1].contains("returned int, not a string")
    );
    let (prompts, problems) = runtime.library_prompts(&registry, &CallOptions::default());
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].1, "Library context: three greeting tools.");
}

// ------------------------------------------------------ host management ---

fn counter_library(dir: &Path) {
    write(
        &dir.join("counter.py"),
        "COUNT = 0\n\ndef tool_count() -> int:\n    \"\"\"Counts calls.\"\"\"\n    global COUNT\n    COUNT += 1\n    return COUNT\n",
    );
    version_file(dir, "one");
}

/// Each version has another length, so that a change is seen even within one tick
/// of the file system's clock.
fn version_file(dir: &Path, version: &str) {
    write(
        &dir.join("version.py"),
        format!("def tool_version() -> str:\n    \"\"\"The version.\"\"\"\n    return {version:?}\n"),
    );
}

#[test]
fn rescan_rereads_changed_files_and_keeps_modules_of_unchanged_files_loaded() {
    let dir = temp_dir("runtime-rescan");
    counter_library(&dir);
    let runtime = runtime();
    let mut catalog =
        Catalog::load(&runtime, Sources { folders: vec![dir.clone()], files: vec![] }, Options::default());
    assert_eq!(output(call(&runtime, catalog.registry(), "tool_count", json!({}))), 1);
    assert_eq!(output(call(&runtime, catalog.registry(), "tool_version", json!({}))), "one");

    version_file(&dir, "second");
    let changes = catalog.rescan();
    assert_eq!(changes.changed, [dir.join("version.py")]);
    assert_eq!(output(call(&runtime, catalog.registry(), "tool_version", json!({}))), "second");
    assert_eq!(
        output(call(&runtime, catalog.registry(), "tool_count", json!({}))),
        2,
        "the unchanged module was reloaded"
    );
}

#[test]
fn runtime_rescan_of_a_plain_registry_drops_the_modules_of_changed_files() {
    let dir = temp_dir("runtime-rescan-plain");
    counter_library(&dir);
    let runtime = runtime();
    let mut registry = Registry::load(&Sources { folders: vec![dir.clone()], files: vec![] }, &Options::default());
    assert_eq!(output(call(&runtime, &registry, "tool_version", json!({}))), "one");
    version_file(&dir, "two, longer");
    assert_eq!(runtime.rescan(&mut registry).changed, [dir.join("version.py")]);
    assert_eq!(output(call(&runtime, &registry, "tool_version", json!({}))), "two, longer");
}

#[test]
fn mount_tool_library_adds_a_library_by_name_or_path() {
    let runtime = runtime();
    let mut catalog =
        Catalog::load(&runtime, Sources { folders: vec![folder("rejected")], files: vec![] }, Options::default());
    let names = catalog.mount_tool_library("text_utils").unwrap();
    assert!(names.contains(&"tool_text_statistics".to_string()), "{names:?}");
    assert_eq!(catalog.mount_tool_library("text_utils").unwrap(), names, "mounting again changes nothing");
    let stats = output(call(&runtime, catalog.registry(), "tool_text_statistics", json!({"text": "a b a"})));
    assert_eq!(stats["success"], true, "{stats}");

    // A library folder by path: its siblings still import through the folder's package.
    let beta = catalog.mount_tool_library(folder("helpers/beta").to_str().unwrap()).unwrap();
    assert_eq!(beta, ["tool_beta_helper", "tool_beta_second"]);
    assert_eq!(output(call(&runtime, catalog.registry(), "tool_beta_second", json!({}))), "beta helper");

    let unknown = catalog.mount_tool_library("no_such_library").unwrap_err().to_string();
    assert!(
        unknown.contains("no library `no_such_library` among the built-in tools") && unknown.contains("shell"),
        "{unknown}"
    );
}

const DYNAMIC: &str = "def tool_dyn_add(a: int, b: int = 1) -> int:\n    \"\"\"Adds.\"\"\"\n    return a + b\n";

#[test]
fn register_tool_from_code_is_refused_unless_the_host_enables_it() {
    let runtime = runtime();
    let mut catalog =
        Catalog::load(&runtime, Sources { folders: vec![folder("rejected")], files: vec![] }, Options::default());
    let refused = catalog.register_tool_from_code("tool_dyn_", DYNAMIC).unwrap_err();
    assert_eq!(refused, CatalogError::DynamicToolsDisabled);
    let refused = refused.to_string();
    assert!(refused.contains("disabled"), "{refused}");
    assert!(catalog.registry().tool("tool_dyn_add").is_none());
}

#[test]
fn register_tool_from_code_adds_tools_that_validate_and_run() {
    let runtime = runtime();
    let mut catalog =
        Catalog::load(&runtime, Sources { folders: vec![folder("rejected")], files: vec![] }, Options::default());
    catalog.allow_dynamic_tools(true);
    assert_eq!(catalog.register_tool_from_code("tool_dyn_", DYNAMIC).unwrap(), ["tool_dyn_add"]);
    assert_eq!(output(call(&runtime, catalog.registry(), "tool_dyn_add", json!({"a": 2}))), 3);
    assert!(
        error(&call(&runtime, catalog.registry(), "tool_dyn_add", json!({"a": "two"}))).contains("expected integer")
    );

    let outside = catalog
        .register_tool_from_code("tool_dyn_", "def tool_other() -> int:\n    return 1\n")
        .unwrap_err()
        .to_string();
    assert!(outside.contains("does not start with the prefix"), "{outside}");
    let again = catalog.register_tool_from_code("tool_dyn_", DYNAMIC).unwrap_err().to_string();
    assert!(again.contains("already a tool"), "{again}");
    let broken = catalog.register_tool_from_code("tool_dyn_", "def tool_dyn_x(:\n").unwrap_err().to_string();
    assert!(broken.contains("cannot be read"), "{broken}");
}

#[test]
fn unregister_tools_by_prefix_forgets_dynamic_tools_and_hides_file_tools() {
    let runtime = runtime();
    let mut catalog =
        Catalog::load(&runtime, Sources { folders: vec![folder("rejected")], files: vec![] }, Options::default());
    catalog.allow_dynamic_tools(true);
    catalog.register_tool_from_code("tool_gone_", "def tool_gone_one() -> int:\n    return 1\n").unwrap();
    assert_eq!(catalog.unregister_tools_by_prefix("tool_gone_"), ["tool_gone_one"]);
    assert!(error(&call(&runtime, catalog.registry(), "tool_gone_one", json!({}))).contains("unknown tool"));

    assert_eq!(catalog.unregister_tools_by_prefix("tool_healthy"), ["tool_healthy"]);
    catalog.rescan();
    assert!(catalog.registry().tool("tool_healthy").is_none(), "hidden tools stay hidden across rescans");
    assert!(catalog.registry().tool("tool_bad_init").is_some());
}

// --------------------------------------------------- host.py on its own ---

/// `host.py` serves the same requests in a plain Python process (the worker-process
/// design depends on it): confirmations through the handler it is given, failures as
/// results. The working directory is Rust's to lease and restore (`workspace.rs`).
#[test]
fn host_py_runs_outside_the_embedding_process() {
    let script = r#"
import json, os, sys
sys.path.insert(0, "src/runtime/host")
import host
def answer(request):
    # The host protocol: serde's JSON of a FromTool in, of a ToTool out.
    asked = json.loads(request)["sent"]["Request"]["Confirm"]
    return json.dumps({"Answer": {"Confirm": {"decision": "allow", "reason": "standalone " + asked["tool"]}}})
host.install(answer)
def call(function, file, args=None):
    request = {"call_id": 1, "kind": "tool", "file": os.path.abspath(file), "package": None, "library": "x",
               "function": function, "args": args or {}, "config": None,
               "autonomy_level": "safe", "host": {"confirm": True}, "injected": []}
    return json.loads(host.call(json.dumps(request)))
results = {
    "confirm": call("tool_ask_pair", "fixtures/runtime/confirm/confirm.py", {"content": "x"}),
    "failed": call("tool_wander_and_fail", "fixtures/runtime/workspace/workspace.py"),
}
sys.__stdout__.write(json.dumps(results))
"#;
    let output = std::process::Command::new(base_python())
        .args(["-c", script])
        .current_dir(root())
        .output()
        .expect("python runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let results: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(results["failed"]["error"], "RuntimeError: lost");
    assert_eq!(results["confirm"]["output"], json!({"decision": "allow", "reason": "standalone tool_ask_pair"}));
}

/// Each check twice: the first call of a tool takes `host.py`'s path, the next the
/// direct one (SPEC §5, both call paths give the same result).
fn both_paths(runtime: &Runtime, registry: &Registry, tool: &str, args: &str, expected: Value) {
    let args: Value = serde_json::from_str(args).expect("the arguments are JSON");
    for path in ["host.py", "direct"] {
        let result = call(runtime, registry, tool, args.clone());
        assert!(result.ok(), "{path}: {result:?}");
        assert_eq!(result.output, expected, "{path}");
        assert_eq!(serde_json::to_string(&result.output).unwrap(), expected.to_string(), "{path}: the digits");
    }
}

#[test]
fn big_integers_arrive_exact_for_int_and_any_parameters_on_both_paths() {
    let (runtime, registry) = (runtime(), registry("bigints"));
    let exact = |text: &str| json!({"type": "int", "text": text});
    both_paths(&runtime, &registry, "tool_echo_int", r#"{"n": 18446744073709551617}"#, exact("18446744073709551617"));
    let huge = "100000000000000000000000000000000000001";
    both_paths(&runtime, &registry, "tool_echo_int", &format!(r#"{{"n": {huge}}}"#), exact(huge));
    both_paths(
        &runtime,
        &registry,
        "tool_echo_any",
        r#"{"value": 18446744073709551617}"#,
        exact("18446744073709551617"),
    );
    both_paths(&runtime, &registry, "tool_echo_any", r#"{"value": 7}"#, exact("7"));
}

#[test]
fn big_integers_a_tool_returns_stay_exact_on_both_paths() {
    let (runtime, registry) = (runtime(), registry("bigints"));
    let expected: Value = serde_json::from_str("1180591620717411303425").unwrap();
    both_paths(&runtime, &registry, "tool_power", "{}", expected);
    let below: Value = serde_json::from_str("340282366920938463463374607431768211455").unwrap();
    both_paths(&runtime, &registry, "tool_power", r#"{"exponent": 128, "plus": -1}"#, below);
}

#[test]
fn a_tool_in_a_file_whose_path_is_not_utf8_runs_on_both_paths() {
    use std::os::unix::ffi::OsStrExt;
    let dir = temp_dir("runtime-non-utf8");
    let file = dir.join(std::ffi::OsStr::from_bytes(b"t\xff.py"));
    std::fs::write(&file, "def tool_twice(x: int = 1) -> int:\n    \"\"\"Doubles.\"\"\"\n    return 2 * x\n").unwrap();
    let registry = Registry::load(&Sources { folders: vec![], files: vec![file] }, &Options::default());
    let runtime = runtime();
    for path in ["host.py", "direct"] {
        assert_eq!(output(call(&runtime, &registry, "tool_twice", json!({"x": 21}))), json!(42), "{path}");
    }
}
