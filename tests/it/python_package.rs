//! SPEC §19: the Python package's own tier, `python/tests/run.sh` (the abi3 wheel built
//! with maturin, installed with no index into a fresh venv, its pytest tests run from
//! the install), as one test of the external tier, so that the README's test command
//! runs it too. The wheel is built in a target folder of its own, beside this one's,
//! with one job.

use std::process::Command;

use crate::support::{root, target_dir};

#[test]
fn the_python_packages_tests_pass_from_its_installed_wheel() {
    let output = Command::new("bash")
        .arg(root().join("python/tests/run.sh"))
        .current_dir(root())
        .env("CARGO_TARGET_DIR", target_dir().join("python-package").join("cargo"))
        // One job: the other tests of the tier run meanwhile.
        .env("CARGO_BUILD_JOBS", "1")
        .output()
        .expect("bash runs");
    let tail = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        text.chars().rev().take(6000).collect::<Vec<char>>().into_iter().rev().collect::<String>()
    };
    assert!(output.status.success(), "python/tests/run.sh failed:\n{}\n{}", tail(&output.stdout), tail(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(" passed"), "pytest ran no test: {stdout}");
}
