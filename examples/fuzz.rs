//! Mutation fuzzing of the `lcp` binary, for as long as you like.
//!
//! Each batch is a folder of mutated files (the engine of the `fuzz` test module,
//! `tests/it/mutate.rs`) next to a healthy one, run through every command and format:
//! `check`, `check --format json`, `list --static`, `export --static --format F
//! [--strict]`. A run fails when lcp exits with a code other than 0, 1 or 2, panics,
//! takes longer than the time limit, prints JSON that does not parse where JSON is
//! promised, or loses the healthy tool. Each failing file is shrunk (lines, then
//! bytes, while the same failure persists) and written to the findings folder with a
//! note saying how to run it; one finding per distinct failure.
//!
//! `cargo run --release --example fuzz -- --minutes 10 [--seed N] [--batch FILES]
//! [--out DIR] [--limit SECS]` (defaults: 10 minutes, a seed from the clock, 40 files
//! a batch, `target/fuzz-findings`, 60 s). It builds `target/release/lcp` first.

#[path = "../tests/it/mutate.rs"]
mod mutate;

use std::collections::HashSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use mutate::{HEALTHY_FILE, HEALTHY_TOOL, Rng};

struct Settings {
    minutes: f64,
    seed: u64,
    batch: usize,
    out: PathBuf,
    limit: Duration,
}

fn main() -> ExitCode {
    let settings = match settings() {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("fuzz: {message}");
            return ExitCode::from(2);
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--release", "--bin", "lcp"])
        .current_dir(root)
        .status();
    if !built.is_ok_and(|status| status.success()) {
        eprintln!("fuzz: `cargo build --release --bin lcp` failed");
        return ExitCode::from(2);
    }
    let fuzzer = Fuzzer {
        lcp: root.join("target/release/lcp"),
        work: root.join("target/fuzz-work"),
        limit: settings.limit,
        runs: 0,
    };
    run(fuzzer, &settings, root)
}

fn settings() -> Result<Settings, String> {
    let clock = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    let mut settings = Settings {
        minutes: 10.0,
        seed: clock,
        batch: 40,
        out: Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-findings"),
        limit: Duration::from_secs(60),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = || format!("{flag} {value}: not a valid value");
        match flag.as_str() {
            "--minutes" => settings.minutes = value.parse().map_err(|_| bad())?,
            "--seed" => settings.seed = value.parse().map_err(|_| bad())?,
            "--batch" => settings.batch = value.parse().map_err(|_| bad())?,
            "--out" => settings.out = PathBuf::from(&value),
            "--limit" => {
                let secs = value.parse().map_err(|_| bad())?;
                settings.limit = Duration::try_from_secs_f64(secs).map_err(|_| bad())?;
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(settings)
}

fn run(mut fuzzer: Fuzzer, settings: &Settings, root: &Path) -> ExitCode {
    let seeds = mutate::seeds(root);
    let mut rng = Rng::new(settings.seed);
    let deadline = Instant::now() + Duration::from_secs_f64(settings.minutes * 60.0);
    let mut known: HashSet<String> = HashSet::new();
    let (mut batches, mut files, mut failures) = (0usize, 0usize, 0usize);
    let mut report = Instant::now();
    println!(
        "fuzz: seed {}, {} seed files, until {} minutes have passed",
        settings.seed,
        seeds.len(),
        settings.minutes
    );
    while Instant::now() < deadline {
        let dir = fuzzer.work.join("batch");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("the work folder is writable");
        let written = mutate::write_batch(&dir, &mut rng, &seeds, settings.batch);
        batches += 1;
        files += written.len();
        for command in COMMANDS {
            let Some(failure) = fuzzer.check(command, &dir) else { continue };
            failures += 1;
            let mut alone = false;
            for file in &written {
                let bytes = fs::read(file).unwrap_or_default();
                let Some(single) = fuzzer.try_alone(command, &dir, file, &bytes) else { continue };
                alone = true;
                if known.insert(single.signature.clone()) {
                    let shrunk = fuzzer.shrink(command, &dir, file, &single);
                    let saved = save(&settings.out, known.len(), command, &dir, &[(file, &shrunk)], &single);
                    println!("fuzz: NEW {} ({}): {}", single.signature, command.join(" "), saved.display());
                }
            }
            // Only the files together fail: the whole batch is the reproducer.
            if !alone && known.insert(failure.signature.clone()) {
                let all: Vec<(PathBuf, Vec<u8>)> =
                    written.iter().map(|f| (f.clone(), fs::read(f).unwrap_or_default())).collect();
                let all: Vec<(&PathBuf, &Vec<u8>)> = all.iter().map(|(f, b)| (f, b)).collect();
                let saved = save(&settings.out, known.len(), command, &dir, &all, &failure);
                println!("fuzz: NEW {} ({}, a whole batch): {}", failure.signature, command.join(" "), saved.display());
            }
        }
        if report.elapsed() > Duration::from_secs(60) {
            println!(
                "fuzz: {batches} batches, {files} files, {} runs, {failures} failing runs, {} findings",
                fuzzer.runs,
                known.len()
            );
            report = Instant::now();
        }
    }
    let _ = fs::remove_dir_all(&fuzzer.work);
    println!(
        "fuzz: done: {batches} batches, {files} files tried, {} runs of lcp, {failures} failing runs, {} distinct findings{}",
        fuzzer.runs,
        known.len(),
        if known.is_empty() { String::new() } else { format!(" in {}", settings.out.display()) }
    );
    if known.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// Every command and format; the folder is appended.
const COMMANDS: &[&[&str]] = &[
    &["check"],
    &["check", "--format", "json"],
    &["list", "--static"],
    &["export", "--static", "--format", "openai"],
    &["export", "--static", "--format", "openai", "--strict"],
    &["export", "--static", "--format", "openai-responses"],
    &["export", "--static", "--format", "openai-responses", "--strict"],
    &["export", "--static", "--format", "anthropic"],
    &["export", "--static", "--format", "gemini"],
    &["export", "--static", "--format", "mcp"],
    &["export", "--static", "--format", "manifest"],
];

/// What went wrong, and a signature telling one bug from another (the panic's place,
/// or the kind of failure).
#[derive(Clone)]
struct Failure {
    signature: String,
    detail: String,
}

struct Fuzzer {
    lcp: PathBuf,
    work: PathBuf,
    limit: Duration,
    runs: usize,
}

impl Fuzzer {
    /// Runs `command` on `dir`; `None` when every rule holds.
    fn check(&mut self, command: &[&str], dir: &Path) -> Option<Failure> {
        self.runs += 1;
        let out = self.work.join("stdout");
        let err = self.work.join("stderr");
        let mut child = Command::new(&self.lcp)
            .args(command)
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(File::create(&out).ok()?)
            .stderr(File::create(&err).ok()?)
            .spawn()
            .ok()?;
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if started.elapsed() > self.limit => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(_) => break None,
            }
        };
        let stdout = fs::read(&out).unwrap_or_default();
        let stderr = String::from_utf8_lossy(&fs::read(&err).unwrap_or_default()).into_owned();
        let fail = |signature: String| Some(Failure { signature, detail: stderr.chars().take(4000).collect() });
        let Some(status) = status else { return fail(format!("hang over {:?}", self.limit)) };
        if let Some(at) = stderr.lines().find(|l| l.contains("panicked at")) {
            return fail(format!("panic {}", at.trim()));
        }
        match status.code() {
            Some(0..=2) => {}
            Some(code) => return fail(format!("exit code {code}")),
            None => return fail(format!("killed: {status}")),
        }
        let is_json = command[0] == "export" || command.contains(&"json");
        if is_json && let Err(err) = serde_json::from_slice::<serde_json::Value>(&stdout) {
            let reason = err.to_string();
            let reason = reason.split(" at line").next().unwrap_or_default();
            return fail(format!("{} printed JSON that does not parse: {reason}", command.join(" ")));
        }
        if command[0] != "check" && !String::from_utf8_lossy(&stdout).contains(HEALTHY_TOOL) {
            return fail(format!("{} lost the healthy tool", command.join(" ")));
        }
        None
    }

    /// `file` (as `bytes`) alone next to the healthy file, in a folder laid out as in
    /// `batch`, through `command`.
    fn try_alone(&mut self, command: &[&str], batch: &Path, file: &Path, bytes: &[u8]) -> Option<Failure> {
        let alone = self.work.join("alone");
        let _ = fs::remove_dir_all(&alone);
        let relative = file.strip_prefix(batch).ok()?;
        let target = alone.join(relative);
        fs::create_dir_all(target.parent()?).ok()?;
        fs::write(&target, bytes).ok()?;
        fs::copy(batch.join(HEALTHY_FILE), alone.join(HEALTHY_FILE)).ok()?;
        self.check(command, &alone)
    }

    /// Deletes lines, then bytes, while the same failure persists. A hang is shrunk
    /// with fewer tries: each costs the time limit.
    fn shrink(&mut self, command: &[&str], batch: &Path, file: &Path, failure: &Failure) -> Vec<u8> {
        let mut bytes = fs::read(file).unwrap_or_default();
        let mut tries = if failure.signature.starts_with("hang") { 20 } else { 2000 };
        let mut still_fails = |this: &mut Fuzzer, candidate: &[u8]| {
            if tries == 0 {
                return false;
            }
            tries -= 1;
            this.try_alone(command, batch, file, candidate).is_some_and(|f| f.signature == failure.signature)
        };
        // Lines first (keeping their newlines), then bytes.
        for by_lines in [true, false] {
            let mut units = split(&bytes, by_lines);
            let mut chunk = units.len().div_ceil(2).max(1);
            loop {
                let mut i = 0;
                while i < units.len() {
                    let candidate: Vec<u8> =
                        units[..i].iter().chain(&units[(i + chunk).min(units.len())..]).flatten().copied().collect();
                    if still_fails(self, &candidate) {
                        units.drain(i..(i + chunk).min(units.len()));
                    } else {
                        i += chunk;
                    }
                }
                if chunk == 1 {
                    break;
                }
                chunk = chunk.div_ceil(2);
            }
            bytes = units.concat();
        }
        bytes
    }
}

fn split(bytes: &[u8], by_lines: bool) -> Vec<Vec<u8>> {
    if by_lines {
        bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
    } else {
        bytes.iter().map(|&b| vec![b]).collect()
    }
}

/// Writes the reproducer (its files with their names and layout, and the healthy
/// file) and a note; returns the note.
fn save(
    out: &Path,
    number: usize,
    command: &[&str],
    batch: &Path,
    files: &[(&PathBuf, &Vec<u8>)],
    failure: &Failure,
) -> PathBuf {
    let folder = out.join(format!("finding-{number:03}"));
    let _ = fs::remove_dir_all(&folder);
    let _ = fs::create_dir_all(&folder);
    let mut names = Vec::new();
    for (file, bytes) in files {
        let relative = file.strip_prefix(batch).unwrap_or(file);
        let target = folder.join(relative);
        let _ = fs::create_dir_all(target.parent().unwrap_or(&folder));
        let _ = fs::write(&target, bytes);
        names.push(lcp::path_json::encode(relative).into_owned());
    }
    let _ = fs::copy(batch.join(HEALTHY_FILE), folder.join(HEALTHY_FILE));
    let note = folder.join("NOTE.txt");
    let text = format!(
        "{}\n\nreproduce: lcp {} {}\nfiles (paths as JSON writes them, see lcp::path_json): {}\n\nstderr:\n{}\n",
        failure.signature,
        command.join(" "),
        folder.display(),
        names.join(", "),
        failure.detail
    );
    let _ = fs::write(&note, text);
    note
}
