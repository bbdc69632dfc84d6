//! Section 11: Python hosts (SPEC §19). Constructing an `LCPBinding` on the
//! reference's 27 default libraries and asking for `to_chat_tool_specs()`: lcp_tools'
//! against lollms-client 1.21.1's, each in a fresh process of the package's venv
//! (`target/python-package/venv`, made by `python/tests/run.sh --install-only`),
//! imports before the clock starts (`binding.py`). lcp_tools' time includes a worker
//! process started and the prompt provider of `system_shell` run in it.

use std::path::Path;
use std::process::Command;

use crate::measure::{Contender, Samples, interleaved};
use crate::python::output;
use crate::table::{Table, ratio, verdict};

pub fn rows(table: &mut Table, root: &Path, target: &Path, quick: bool) {
    eprintln!("python hosts: LCPBinding ...");
    table.section("11. Python hosts: LCPBinding() + to_chat_tool_specs() on the reference's 27 default libraries");
    let venv = target.join("python-package/venv");
    let python = venv.join("bin/python");
    let installed = Command::new(&python)
        .args(["-c", "import lcp_tools, lollms_client"])
        .status()
        .is_ok_and(|status| status.success());
    if !installed {
        let built = Command::new(root.join("python/tests/run.sh")).arg("--install-only").status();
        if !built.is_ok_and(|status| status.success()) {
            table.text("  (skipped: python/tests/run.sh --install-only failed)");
            return;
        }
    }
    let folder = output(Command::new(&python).args([
        "-c",
        "import lollms_client, pathlib; \
         print(pathlib.Path(lollms_client.__file__).parent / 'tools_bindings/lcp/default_tools')",
    ]));
    let script = root.join("benches/suite/binding.py");
    // Seconds of the whole (constructor and specs), then of the constructor alone.
    let run = |which: &str| -> Vec<f64> {
        let printed = output(Command::new(&python).arg(&script).arg(which).arg(&folder).current_dir(target));
        printed.split_whitespace().take(2).map(|s| s.parse().expect("binding.py prints seconds")).collect()
    };
    let reps = if quick { 3 } else { 11 };
    let measured = interleaved(vec![
        Contender::many(&["reference", "reference constructor"], reps, || run("reference")),
        Contender::many(&["lcp_tools", "lcp_tools constructor"], reps, || run("lcp_tools")),
    ]);
    let (reference, ours): (&Samples, &Samples) = (&measured["reference"], &measured["lcp_tools"]);
    table.time("lollms-client 1.21.1: LCPBinding() + to_chat_tool_specs()", reference, "", "");
    let speedup = reference.median() / ours.median();
    table.time(
        "lcp_tools: LCPBinding() + to_chat_tool_specs()",
        ours,
        &ratio(reference.median(), ours.median()),
        &verdict(speedup >= 10.0, ">= 10x faster"),
    );
    let (reference, ours) = (&measured["reference constructor"], &measured["lcp_tools constructor"]);
    table.time("lollms-client 1.21.1: LCPBinding() alone", reference, "", "");
    table.time("lcp_tools: LCPBinding() alone (discovery)", ours, &ratio(reference.median(), ours.median()), "");
}
