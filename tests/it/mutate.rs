//! The mutation engine of lcp's fuzzing: near-Python files made from the fixtures and
//! the built-in tools (deletions, duplications, splices, nesting, odd Unicode, huge
//! literals, long names, names that are not UTF-8) and tools generated from a small
//! grammar of annotations and defaults. A seeded PRNG makes every run repeatable.
//!
//! Shared, with no dependency, by the `fuzz` test module and by `examples/fuzz.rs`,
//! which includes this file by path.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// A file written next to every batch: whatever its neighbours hold, its tool is found.
pub const HEALTHY_FILE: &str = "000_healthy.py";
pub const HEALTHY_TOOL: &str = "tool_healthy_neighbour";
const HEALTHY: &str = "def tool_healthy_neighbour(n: int, label: str = \"x\") -> int:\n    \
                       \"\"\"Still exported, whatever its neighbours hold.\n\n    Args:\n        \
                       n: A number.\n        label: A label.\n    \"\"\"\n    return n\n";

/// xorshift64*: small, fast and good enough to choose mutations.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// The seed files: every `.py` under `fixtures/` and `default_tools/` up to 64 KiB, in
/// path order (the order of a directory listing is not repeatable).
pub fn seeds(root: &Path) -> Vec<Vec<u8>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "py") {
                out.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&root.join("fixtures"), &mut paths);
    walk(&root.join("default_tools"), &mut paths);
    paths.sort();
    paths.into_iter().filter_map(|p| std::fs::read(p).ok()).filter(|b| b.len() <= 64 * 1024).collect()
}

/// Writes `count` mutated files into `dir` (loose files, and now and then a library
/// folder `X/` with its `X.py`), plus [`HEALTHY_FILE`]. Returns the files written.
pub fn write_batch(dir: &Path, rng: &mut Rng, seeds: &[Vec<u8>], count: usize) -> Vec<PathBuf> {
    std::fs::write(dir.join(HEALTHY_FILE), HEALTHY).expect("the healthy file is writable");
    let mut written = Vec::new();
    for i in 0..count {
        let source = if rng.chance(40) { generated_tools(rng) } else { mutate(rng, seeds) };
        let name = file_name(rng, i);
        let path = if rng.chance(10) {
            let mut stem = name.clone().into_vec();
            stem.truncate(stem.len() - 3);
            let folder = dir.join(OsString::from_vec(stem));
            let _ = std::fs::create_dir_all(&folder);
            folder.join(&name)
        } else {
            dir.join(&name)
        };
        if std::fs::write(&path, &source).is_ok() {
            written.push(path);
        }
    }
    written
}

/// `m0007.py`, or now and then a name with bytes that are not UTF-8 or odd Unicode.
fn file_name(rng: &mut Rng, i: usize) -> OsString {
    let mut name = format!("m{i:04}").into_bytes();
    if rng.chance(8) {
        let odd: &[&[u8]] = &[b"\xff", b"\xfe\xfd", b"\xc3", "ﬁ".as_bytes(), "é".as_bytes(), b" %41"];
        name.extend_from_slice(rng.pick(odd));
    }
    name.extend_from_slice(b".py");
    OsString::from_vec(name)
}

/// Largest mutated file: big enough for huge literals and long lines, small enough
/// that a batch stays quick.
const MAX_FILE_BYTES: usize = 512 * 1024;

/// A seed with one to four mutations.
pub fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        mutate_once(rng, seeds, &mut bytes);
        bytes.truncate(MAX_FILE_BYTES);
    }
    bytes
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ":",
    ",",
    "=",
    "*",
    "**",
    "->",
    "|",
    "@",
    ".",
    "\\",
    "#",
    "'",
    "\"",
    "'''",
    "\"\"\"",
    "\n",
    "    ",
    "\t",
    "def tool_x(",
    "async def tool_y(",
    "class C(",
    "TypedDict",
    "BaseModel",
    "Enum",
    "@dataclass\n",
    "Literal[",
    "Literal[()]",
    "Optional[",
    "Union[",
    "Annotated[",
    "list[",
    "dict[str, ",
    "tuple[",
    "tuple[()]",
    "from typing import *\n",
    "from __future__ import annotations\n",
    "import typing as t\n",
    "from . import x\n",
    "TOOL_LIBRARY_NAME = ",
    "lambda: 0",
    "None",
    "True",
    "...",
    "Field(ge=1, description='d')",
    "type V = ",
    "def tool_x(x: int, x: str):\n    pass\n",
    "def tool_p(ﬁle: int, file: str):\n    pass\n",
    "**kwargs",
    "*args",
    "/, ",
    "*, ",
    "= None",
    "= (1, -2.5, b'x')",
    "if True:\n",
    "try:\n    pass\nexcept E:\n",
    "f'{x!r:>{w}}'",
    "t'{x}'",
    "match x:\n    case 1:\n        pass\n",
    "yield",
    "await ",
    "global x\n",
    "del x\n",
    "\r\n",
    "\r",
];

const ODD: &[&[u8]] = &[
    b"\xff",
    b"\xfe\xff",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\0",
    b"\xef\xbb\xbf",
    "\u{200b}".as_bytes(),
    "\u{202e}".as_bytes(),
    "\u{feff}".as_bytes(),
    "ﬁ".as_bytes(),
    "é".as_bytes(),
    "e\u{301}".as_bytes(),
    "\u{10ffff}".as_bytes(),
    "𝔘".as_bytes(),
    "\u{2028}".as_bytes(),
    "\u{85}".as_bytes(),
    "\u{0}".as_bytes(),
    "Ω".as_bytes(),
    "ǅ".as_bytes(),
];

const NESTING: &[(&str, &str)] = &[
    ("[", "]"),
    ("(", ")"),
    ("{'a': ", "}"),
    ("list[", "]"),
    ("Optional[", "]"),
    ("tuple[int, ", "]"),
    ("Annotated[", ", 'd']"),
    ("'", "'"),
    ("not ", ""),
    ("-", ""),
    ("lambda: ", ""),
    ("f'{", "}'"),
];

fn mutate_once(rng: &mut Rng, seeds: &[Vec<u8>], bytes: &mut Vec<u8>) {
    let len = bytes.len();
    let at = rng.below(len + 1);
    match rng.below(12) {
        0 => {
            let end = (at + 1 + rng.below(64)).min(len);
            bytes.drain(at..end);
        }
        1 => {
            let end = (at + 1 + rng.below(256)).min(len);
            let copy = bytes[at..end].to_vec();
            let to = rng.below(len + 1);
            bytes.splice(to..to, copy);
        }
        2 => insert(bytes, at, rng.pick(TOKENS).as_bytes()),
        3 => {
            let other = &seeds[rng.below(seeds.len())];
            let start = rng.below(other.len());
            let end = (start + 1 + rng.below(400)).min(other.len());
            let slice = other[start..end].to_vec();
            insert(bytes, line_start(bytes, at), &slice);
        }
        4 => {
            let (open, close) = rng.pick(NESTING);
            let levels = rng.pick(&[2, 8, 40, 63, 130, 210, 1100]);
            let inner = rng.pick(&["int", "1", "x", "'s'", "C", "None"]).to_string();
            let nested = format!("{}{inner}{}", open.repeat(levels), close.repeat(levels));
            insert(bytes, at, nested.as_bytes());
        }
        5 => {
            let odd: &[u8] = rng.pick(ODD);
            insert(bytes, at, odd);
        }
        6 => {
            let n = rng.pick(&[20, 400, 5_000, 70_000]);
            let literal = match rng.below(5) {
                0 => "9".repeat(n),
                1 => format!("\"{}\"", "x".repeat(n)),
                2 => format!("0x{}", "f".repeat(n)),
                3 => "1e309".to_string(),
                _ => format!("[{}]", "1, ".repeat(n / 3)),
            };
            insert(bytes, at, literal.as_bytes());
        }
        7 => {
            let start = line_start(bytes, at);
            let end = bytes[start..].iter().position(|&b| b == b'\n').map_or(len, |p| start + p + 1);
            let line = bytes[start..end].to_vec();
            let times = 1 + rng.below(200);
            let repeated: Vec<u8> = line.iter().copied().cycle().take(line.len() * times).collect();
            bytes.splice(start..start, repeated);
        }
        8 => {
            let start = line_start(bytes, at);
            let spaces = " ".repeat(rng.pick(&[1, 3, 4, 8, 400]));
            let indent = if rng.chance(30) { "\t".to_string() } else { spaces };
            insert(bytes, start, indent.as_bytes());
        }
        9 => {
            let long = format!("tool_{}", "n".repeat(rng.pick(&[60, 65, 129, 65_600])));
            replace_first(bytes, b"tool_", long.as_bytes());
        }
        10 => bytes.truncate(at),
        _ => {
            let generated = generated_tools(rng);
            insert(bytes, line_start(bytes, at), &generated);
        }
    }
}

fn insert(bytes: &mut Vec<u8>, at: usize, what: &[u8]) {
    let at = at.min(bytes.len());
    bytes.splice(at..at, what.iter().copied());
}

fn line_start(bytes: &[u8], at: usize) -> usize {
    bytes[..at.min(bytes.len())].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1)
}

fn replace_first(bytes: &mut Vec<u8>, from: &[u8], to: &[u8]) {
    if let Some(at) = bytes.windows(from.len()).position(|w| w == from) {
        bytes.splice(at..at + from.len(), to.iter().copied());
    }
}

/// Valid Python (mostly): classes and tools whose annotations and defaults come from
/// a small grammar, sometimes nested far deeper than any real tool.
pub fn generated_tools(rng: &mut Rng) -> Vec<u8> {
    let mut out = String::from(
        "from typing import *\nfrom enum import Enum\nfrom dataclasses import dataclass\n\
         from pydantic import BaseModel, Field\nfrom typing_extensions import TypedDict, NotRequired\n\n",
    );
    let deep = rng.chance(15);
    for c in 0..rng.below(4) {
        match rng.below(4) {
            0 => {
                out.push_str(&format!("class C{c}(TypedDict):\n"));
                for f in 0..1 + rng.below(3) {
                    out.push_str(&format!("    f{f}: {}\n", annotation(rng, 0, deep)));
                }
            }
            1 => {
                out.push_str(&format!("@dataclass\nclass C{c}:\n"));
                for f in 0..1 + rng.below(3) {
                    out.push_str(&format!("    f{f}: {} = {}\n", annotation(rng, 0, deep), literal(rng, 0, deep)));
                }
            }
            2 => out.push_str(&format!("class C{c}(str, Enum):\n    A = 'a'\n    B = {}\n", literal(rng, 0, deep))),
            _ => {
                out.push_str(&format!("class C{c}(BaseModel):\n"));
                for f in 0..1 + rng.below(3) {
                    out.push_str(&format!(
                        "    f{f}: {} = Field(default={})\n",
                        annotation(rng, 0, deep),
                        literal(rng, 0, deep)
                    ));
                }
            }
        }
        out.push('\n');
    }
    if rng.chance(30) {
        out.push_str(&format!("Alias = {}\n\n", annotation(rng, 0, deep)));
    }
    for t in 0..1 + rng.below(3) {
        let mut parameters: Vec<(bool, String)> = (0..rng.below(5))
            .map(|p| match rng.below(3) {
                0 => (false, format!("p{p}: {}", annotation(rng, 0, deep))),
                1 => (true, format!("p{p}: {} = {}", annotation(rng, 0, deep), literal(rng, 0, deep))),
                _ => (true, format!("p{p}={}", literal(rng, 0, deep))),
            })
            .collect();
        // Parameters without defaults first, as Python requires (mostly).
        if !rng.chance(5) {
            parameters.sort_by_key(|(has_default, _)| *has_default);
        }
        let parameters: Vec<String> = parameters.into_iter().map(|(_, p)| p).collect();
        let asynchronous = if rng.chance(20) { "async " } else { "" };
        out.push_str(&format!(
            "{asynchronous}def tool_g{t}({}) -> {}:\n    \"\"\"Generated tool {t}.\n\n    Args:\n        p0: First.\n    \"\"\"\n\n",
            parameters.join(", "),
            annotation(rng, 0, deep)
        ));
    }
    out.into_bytes()
}

/// Nodes one generated annotation or literal may have: branching constructors would
/// otherwise grow exponentially with the depth.
const GENERATED_NODES: usize = 400;

fn annotation(rng: &mut Rng, depth: usize, deep: bool) -> String {
    annotation_within(rng, depth, deep, &mut GENERATED_NODES.clone())
}

fn annotation_within(rng: &mut Rng, depth: usize, deep: bool, nodes: &mut usize) -> String {
    let limit = if deep { 150 } else { 6 };
    *nodes = nodes.saturating_sub(1);
    if depth >= limit || *nodes == 0 || rng.chance(if deep { 2 } else { 35 }) {
        return rng
            .pick(&["int", "str", "float", "bool", "None", "Any", "C0", "C1", "C2", "Alias", "'C0'", "bytes"])
            .to_string();
    }
    let mut inner = |rng: &mut Rng| annotation_within(rng, depth + 1, deep, nodes);
    match rng.below(11) {
        0 => format!("list[{}]", inner(rng)),
        1 => format!("dict[str, {}]", inner(rng)),
        2 => format!("Optional[{}]", inner(rng)),
        3 => format!("Union[{}, {}]", inner(rng), inner(rng)),
        4 => format!("{} | {}", inner(rng), inner(rng)),
        5 => format!("tuple[{}, ...]", inner(rng)),
        6 => format!("tuple[{}, {}]", inner(rng), inner(rng)),
        7 => format!("Literal[{}]", rng.pick(&["'a', 1", "()", "None, True", "-1.5", "C0.A", "Literal['b']"])),
        8 => format!("Annotated[{}, Field(ge=0, description='d')]", inner(rng)),
        9 => format!("'{}'", inner(rng).replace('\'', "\"")),
        _ => format!("NotRequired[{}]", inner(rng)),
    }
}

fn literal(rng: &mut Rng, depth: usize, deep: bool) -> String {
    literal_within(rng, depth, deep, &mut GENERATED_NODES.clone())
}

fn literal_within(rng: &mut Rng, depth: usize, deep: bool, nodes: &mut usize) -> String {
    let limit = if deep { 150 } else { 4 };
    *nodes = nodes.saturating_sub(1);
    if depth >= limit || *nodes == 0 || rng.chance(if deep { 2 } else { 50 }) {
        return rng
            .pick(&[
                "1",
                "-2",
                "2.5",
                "'s'",
                "b'b'",
                "True",
                "None",
                "()",
                "C0.A",
                "1e400",
                "18446744073709551617",
                "-0.0",
            ])
            .to_string();
    }
    let mut inner = |rng: &mut Rng| literal_within(rng, depth + 1, deep, nodes);
    match rng.below(4) {
        0 => format!("[{}, {}]", inner(rng), inner(rng)),
        1 => format!("({},)", inner(rng)),
        2 => format!("{{'k': {}}}", inner(rng)),
        _ => format!("{{{}}}", inner(rng)),
    }
}
