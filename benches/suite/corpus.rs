//! Benchmark corpora: tool folders that look like real tool libraries, generated
//! deterministically (a fixed-seed generator, no clock, no environment) into
//! `target/bench-corpus/<name>/`.
//!
//! A corpus has folder libraries `X/X.py` with two siblings (one inheriting the
//! folder's metadata, one with its own) and loose single-file libraries. Every file
//! defines the same number of tools with Google (mostly), NumPy or reST docstrings,
//! annotations (`Optional`, `Literal`, `list[...]`, `dict[...]`, unions, a same-file
//! `Enum` and `@dataclass`, `Path`), literal defaults, injected parameters, private
//! helpers with real bodies, constants and a `__main__` block. No tool is async and no
//! file defines a prompt provider, so `LCPBinding` finds exactly the same tools.
//! A corpus is rebuilt only when its stamp (the generator version and shape) differs.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Bump when the generated text changes.
const GENERATOR_VERSION: u32 = 2;

#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub name: &'static str,
    /// Folder libraries, each `X/X.py` plus two siblings.
    pub folders: usize,
    /// Loose `*.py` libraries at the top level.
    pub loose: usize,
    pub tools_per_file: usize,
}

impl Shape {
    pub fn files(&self) -> usize {
        self.folders * 3 + self.loose
    }

    pub fn tools(&self) -> usize {
        self.files() * self.tools_per_file
    }
}

/// 200 libraries / 1,000 tools.
pub const SMALL: Shape = Shape { name: "small", folders: 50, loose: 50, tools_per_file: 5 };
/// 2,000 libraries / 10,000 tools.
pub const LARGE: Shape = Shape { name: "large", folders: 500, loose: 500, tools_per_file: 5 };

pub struct Corpus {
    pub root: PathBuf,
    pub files: usize,
    pub tools: usize,
    pub bytes: u64,
    /// A file the warm-rescan benchmark changes (and restores).
    pub probe: PathBuf,
}

/// The corpus of `shape` under `base`, generated unless its stamp is current.
pub fn ensure(base: &Path, shape: Shape) -> Corpus {
    let root = generated(base, shape.name, &format!("{shape:?}"), |staging| generate(staging, shape));
    let bytes = walk_py(&root).iter().map(|p| fs::metadata(p).map_or(0, |m| m.len())).sum();
    Corpus {
        probe: root.join(folder_name(0)).join(format!("{}.py", folder_name(0))),
        root,
        files: shape.files(),
        tools: shape.tools(),
        bytes,
    }
}

/// 2,000 library folders of one file each, five plain tools a file: 1-5 parameters of
/// `str`, `int`, `float`, `bool`, `list[str]`, `dict[str, int]`, `Literal['a', 'b']` or
/// `Optional[list[int]]`, then `flag: Optional[int] = None`, with a Google docstring
/// and no helper: the shape of the usual generated catalog, beside [`LARGE`]'s
/// realistic libraries.
pub fn ensure_plain(base: &Path) -> Corpus {
    const FOLDERS: usize = 2_000;
    const TOOLS: usize = 5;
    let root = generated(base, "plain", &format!("plain {FOLDERS}x{TOOLS}"), |staging| {
        for i in 0..FOLDERS {
            let folder = staging.join(format!("lib_{i:04}"));
            fs::create_dir_all(&folder).expect("corpus folder is creatable");
            let text = plain_library(&mut Rng::new(0x9_1A1E + i as u64), i, TOOLS);
            fs::write(folder.join("tools.py"), text).expect("corpus file is writable");
        }
    });
    let bytes = walk_py(&root).iter().map(|p| fs::metadata(p).map_or(0, |m| m.len())).sum();
    Corpus { probe: root.join("lib_0000").join("tools.py"), root, files: FOLDERS, tools: FOLDERS * TOOLS, bytes }
}

/// The folder `base/name`, made by `generate` in a staging folder unless its stamp
/// (the generator version and `shape`) is current.
fn generated(base: &Path, name: &str, shape: &str, generate: impl FnOnce(&Path)) -> PathBuf {
    let root = base.join(name);
    let stamp_path = base.join(format!("{name}.stamp"));
    let stamp = format!("v{GENERATOR_VERSION} {shape}\n");
    if fs::read_to_string(&stamp_path).ok().as_deref() != Some(stamp.as_str()) || !root.is_dir() {
        let _ = fs::remove_file(&stamp_path);
        let staging = base.join(format!("{name}.tmp"));
        let _ = fs::remove_dir_all(&staging);
        fs::create_dir_all(&staging).expect("corpus folder is creatable");
        generate(&staging);
        let _ = fs::remove_dir_all(&root);
        fs::rename(&staging, &root).expect("corpus folder can be renamed");
        fs::write(&stamp_path, stamp).expect("corpus stamp is writable");
    }
    root
}

fn plain_library(rng: &mut Rng, index: usize, tools: usize) -> String {
    const TYPES: &[&str] =
        &["str", "int", "float", "bool", "list[str]", "dict[str, int]", "Literal['a', 'b']", "Optional[list[int]]"];
    let mut out = String::from("from typing import Literal, Optional\n");
    for t in 0..tools {
        let count = rng.range(1, 5);
        let parameters: Vec<(String, &str)> =
            (0..count).map(|k| (format!("{}_{k}", rng.pick(WORDS)), rng.pick(TYPES))).collect();
        let signature: Vec<String> = parameters.iter().map(|(name, ty)| format!("{name}: {ty}")).collect();
        let _ = writeln!(out, "\n\ndef tool_{index}_{t}({}, flag: Optional[int] = None) -> str:", signature.join(", "));
        let _ = writeln!(out, "    \"\"\"{}\n\n    Args:", rng.sentence(8));
        for (name, _) in &parameters {
            let _ = writeln!(out, "        {name}: {}", rng.sentence(6));
        }
        let _ =
            writeln!(out, "        flag: An optional flag.\n\n    Returns:\n        {}\n    \"\"\"", rng.sentence(5));
        let _ = writeln!(out, "    return str({})", parameters[0].0);
    }
    out
}

fn walk_py(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk_py(&path));
        } else if path.extension().is_some_and(|e| e == "py") {
            out.push(path);
        }
    }
    out
}

fn folder_name(i: usize) -> String {
    format!("{}_{i:04}", TOPICS[i % TOPICS.len()])
}

fn generate(root: &Path, shape: Shape) {
    fs::create_dir_all(root).expect("corpus folder is creatable");
    let mut file_index = 0;
    let mut write = |path: PathBuf, stem: &str, metadata: bool| {
        let mut rng = Rng::new(0x5EED_0000 + file_index as u64);
        let text = library(&mut rng, stem, file_index, metadata, shape.tools_per_file);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("corpus folder is creatable");
        }
        fs::write(&path, text).expect("corpus file is writable");
        file_index += 1;
    };
    for i in 0..shape.folders {
        let name = folder_name(i);
        let dir = root.join(&name);
        write(dir.join(format!("{name}.py")), &name, true);
        // One sibling inherits the folder's name and description, one has its own.
        write(dir.join("helpers.py"), "helpers", false);
        write(dir.join("advanced.py"), "advanced", true);
    }
    for i in 0..shape.loose {
        let stem = format!("{}_util_{i:04}", TOPICS[(i * 7 + 3) % TOPICS.len()]);
        write(root.join(format!("{stem}.py")), &stem, true);
    }
}

/// SplitMix64: tiny, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn sentence(&mut self, words: usize) -> String {
        let mut out = String::new();
        for i in 0..words {
            let word = self.pick(WORDS);
            if i == 0 {
                let mut chars = word.chars();
                if let Some(first) = chars.next() {
                    out.extend(first.to_uppercase());
                    out.push_str(chars.as_str());
                }
            } else {
                out.push(' ');
                out.push_str(word);
            }
        }
        out.push('.');
        out
    }

    fn paragraph(&mut self, sentences: usize, indent: &str, width: usize) -> String {
        let text: Vec<String> = (0..sentences)
            .map(|_| {
                let words = self.range(6, 14);
                self.sentence(words)
            })
            .collect();
        wrap(&text.join(" "), indent, width)
    }
}

fn wrap(text: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            let _ = writeln!(out, "{indent}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

const TOPICS: &[&str] = &[
    "weather",
    "calendar",
    "invoices",
    "github",
    "notes",
    "translate",
    "images",
    "pdf",
    "email",
    "search",
    "crm",
    "metrics",
    "tickets",
    "storage",
    "maps",
    "finance",
    "recipes",
    "music",
    "news",
    "shipping",
];

const WORDS: &[&str] = &[
    "the",
    "tool",
    "returns",
    "a",
    "list",
    "of",
    "records",
    "from",
    "remote",
    "service",
    "with",
    "each",
    "entry",
    "matching",
    "query",
    "and",
    "filters",
    "when",
    "given",
    "otherwise",
    "all",
    "items",
    "are",
    "sorted",
    "by",
    "date",
    "name",
    "size",
    "cached",
    "results",
    "expire",
    "after",
    "minutes",
    "use",
    "it",
    "to",
    "find",
    "update",
    "local",
    "files",
    "in",
    "workspace",
    "summary",
    "text",
    "values",
    "limit",
    "page",
    "user",
    "account",
    "report",
];

const VERBS: &[&str] = &[
    "get",
    "list",
    "search",
    "create",
    "update",
    "delete",
    "export",
    "import",
    "summarize",
    "convert",
    "check",
    "sync",
];

/// One tool library file.
fn library(rng: &mut Rng, stem: &str, index: usize, metadata: bool, tools: usize) -> String {
    let mut out = String::with_capacity(12 * 1024);
    let _ = writeln!(out, "\"\"\"{stem}: {}\n", rng.sentence(8).trim_end_matches('.'));
    out.push_str(&rng.paragraph(4, "", 88));
    out.push_str("\nThe tools return ``{\"success\": bool, \"output\" | \"error\": ...}`` dictionaries.\n\"\"\"\n\n");

    out.push_str("import json\nimport logging\nimport os\nimport re\nimport time\n");
    let enum_class = rng.chance(60);
    let dataclass = rng.chance(50);
    if dataclass {
        out.push_str("from dataclasses import dataclass, field\n");
    }
    if enum_class {
        out.push_str("from enum import Enum\n");
    }
    out.push_str("from pathlib import Path\nfrom typing import Any, Dict, List, Literal, Optional, Union\n\n");

    if metadata {
        let _ = writeln!(out, "TOOL_LIBRARY_NAME = \"{}\"", capitalise(&stem.replace('_', " ")));
        let _ = writeln!(out, "TOOL_LIBRARY_DESC = \"{}\"", rng.sentence(12));
        out.push_str("TOOL_LIBRARY_ICON = \"🧰\"\n\n");
    }
    let _ = writeln!(out, "_LOG = logging.getLogger(__name__)");
    let _ = writeln!(out, "_DEFAULT_TIMEOUT = {}", rng.range(5, 120));
    let _ = writeln!(out, "_MAX_RESULTS = {}", rng.range(10, 500));
    let _ = writeln!(out, "_PATTERN = re.compile(r\"[A-Za-z_][A-Za-z0-9_]*\")");
    out.push_str("_CACHE: Dict[str, Any] = {}\n\n\n");

    if enum_class {
        out.push_str("class Mode(str, Enum):\n    \"\"\"How thorough a lookup is.\"\"\"\n\n");
        out.push_str("    FAST = \"fast\"\n    BALANCED = \"balanced\"\n    THOROUGH = \"thorough\"\n\n\n");
    }
    if dataclass {
        out.push_str("@dataclass\nclass Record:\n    \"\"\"One record of the service.\"\"\"\n\n");
        out.push_str("    id: str\n    title: str\n    score: float = 0.0\n");
        out.push_str("    tags: List[str] = field(default_factory=list)\n\n");
        out.push_str("    def to_dict(self) -> Dict[str, Any]:\n");
        out.push_str("        return {\"id\": self.id, \"title\": self.title, \"score\": self.score, \"tags\": list(self.tags)}\n\n\n");
    }

    for h in 0..rng.range(2, 3) {
        helper(rng, &mut out, h);
    }
    if rng.chance(30) {
        out.push_str("def init_tools_library(config: Optional[Dict[str, Any]] = None) -> None:\n");
        out.push_str("    \"\"\"Reads the library's settings from the host.\"\"\"\n");
        out.push_str("    _CACHE.clear()\n    if config:\n        _CACHE.update({k: v for k, v in config.items() if not k.startswith(\"_\")})\n\n\n");
    }

    for t in 0..tools {
        let verb = VERBS[(index + t * 5) % VERBS.len()];
        let name = format!("tool_{verb}_{}_{index}_{t}", TOPICS[(index + t) % TOPICS.len()]);
        tool(rng, &mut out, &name, enum_class, dataclass);
    }

    out.push_str("if __name__ == \"__main__\":\n");
    out.push_str("    logging.basicConfig(level=logging.INFO)\n");
    out.push_str("    print(json.dumps({\"library\": __name__, \"ok\": True}, indent=2))\n");
    out
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

fn helper(rng: &mut Rng, out: &mut String, h: usize) {
    let _ = writeln!(out, "def _helper_{h}(value: Any, limit: int = {}) -> List[str]:", rng.range(1, 50));
    let _ = writeln!(out, "    \"\"\"{}\"\"\"", rng.sentence(9));
    out.push_str("    found: List[str] = []\n");
    let statements = rng.range(3, 6);
    body(rng, out, statements);
    out.push_str("    return found[:limit]\n\n\n");
}

#[derive(Clone, Copy)]
struct Param {
    signature: &'static str,
    name: &'static str,
    doc_type: &'static str,
}

const PARAMS: &[Param] = &[
    Param { signature: "query: str", name: "query", doc_type: "str" },
    Param { signature: "limit: int = 20", name: "limit", doc_type: "int, optional" },
    Param { signature: "threshold: float = 0.5", name: "threshold", doc_type: "float, optional" },
    Param { signature: "include_archived: bool = False", name: "include_archived", doc_type: "bool, optional" },
    Param { signature: "tags: Optional[List[str]] = None", name: "tags", doc_type: "list of str, optional" },
    Param { signature: "labels: list[str] | None = None", name: "labels", doc_type: "list of str, optional" },
    Param {
        signature: "order: Literal[\"asc\", \"desc\"] = \"desc\"",
        name: "order",
        doc_type: "{'asc', 'desc'}, optional",
    },
    Param {
        signature: "fmt: Literal[\"json\", \"csv\", \"markdown\"] = \"json\"",
        name: "fmt",
        doc_type: "str, optional",
    },
    Param { signature: "options: Optional[Dict[str, Any]] = None", name: "options", doc_type: "dict, optional" },
    Param { signature: "path: Path", name: "path", doc_type: "Path" },
    Param { signature: "ids: list[int]", name: "ids", doc_type: "list of int" },
    Param { signature: "value: Union[int, str] = 0", name: "value", doc_type: "int or str, optional" },
    Param { signature: "page_size=50", name: "page_size", doc_type: "int, optional" },
    Param { signature: "title: str = \"Untitled\"", name: "title", doc_type: "str, optional" },
    Param { signature: "weights: dict[str, float] | None = None", name: "weights", doc_type: "dict, optional" },
];

const MODE_PARAM: Param = Param { signature: "mode: Mode = Mode.BALANCED", name: "mode", doc_type: "Mode, optional" };
const RECORD_PARAM: Param = Param { signature: "records: list[Record]", name: "records", doc_type: "list of Record" };

fn tool(rng: &mut Rng, out: &mut String, name: &str, enum_class: bool, dataclass: bool) {
    let mut params: Vec<Param> = Vec::new();
    let mut pool: Vec<Param> = PARAMS.to_vec();
    if enum_class && rng.chance(50) {
        pool.push(MODE_PARAM);
    }
    if dataclass && rng.chance(50) {
        pool.push(RECORD_PARAM);
    }
    for _ in 0..rng.range(1, 6) {
        let p = pool.remove(rng.below(pool.len()));
        params.push(p);
    }
    // Parameters without a default come first, as Python requires.
    params.sort_by_key(|p| p.signature.contains('='));
    let mut signature: Vec<&str> = params.iter().map(|p| p.signature).collect();
    let injected = rng.chance(25);
    if injected {
        signature.push("discussion_instance=None");
    }
    let line = format!("def {name}({}) -> Dict[str, Any]:", signature.join(", "));
    if line.len() <= 100 {
        let _ = writeln!(out, "{line}");
    } else {
        let _ = writeln!(out, "def {name}(");
        for s in &signature {
            let _ = writeln!(out, "    {s},");
        }
        out.push_str(") -> Dict[str, Any]:\n");
    }

    let style = rng.below(10);
    let words = rng.range(7, 12);
    let _ = writeln!(out, "    \"\"\"{}", rng.sentence(words));
    out.push('\n');
    let sentences = rng.range(1, 3);
    out.push_str(&rng.paragraph(sentences, "    ", 88));
    out.push('\n');
    match style {
        0 => {
            out.push_str("    Parameters\n    ----------\n");
            for p in &params {
                let _ = writeln!(out, "    {} : {}", p.name, p.doc_type);
                out.push_str(&rng.paragraph(1, "        ", 88));
            }
            out.push_str("\n    Returns\n    -------\n    dict\n        The result envelope.\n");
        }
        1 => {
            for p in &params {
                let words = rng.range(5, 10);
                let _ = writeln!(out, "    :param {}: {}", p.name, rng.sentence(words));
                let _ = writeln!(out, "    :type {}: {}", p.name, p.doc_type);
            }
            out.push_str("    :returns: The result envelope.\n");
        }
        _ => {
            out.push_str("    Args:\n");
            for p in &params {
                let text = rng.paragraph(1, "", 70);
                let mut lines = text.lines();
                let _ = writeln!(out, "        {} ({}): {}", p.name, p.doc_type, lines.next().unwrap_or(""));
                for more in lines {
                    let _ = writeln!(out, "            {more}");
                }
            }
            out.push_str("\n    Returns:\n        dict: ``{\"success\": True, \"output\": ...}`` or an error.\n");
        }
    }
    out.push_str("    \"\"\"\n");
    out.push_str("    found: List[str] = []\n    started = time.monotonic()\n");
    let statements = rng.range(4, 9);
    body(rng, out, statements);
    out.push_str("    elapsed = round(time.monotonic() - started, 3)\n");
    out.push_str("    return {\"success\": True, \"output\": found, \"elapsed\": elapsed}\n\n\n");
}

/// Plausible statements for a function body, indented one level.
fn body(rng: &mut Rng, out: &mut String, statements: usize) {
    const BLOCKS: &[&str] = &[
        "    for i, item in enumerate(_CACHE.get(\"items\", [])):\n        if i >= _MAX_RESULTS:\n            break\n        found.append(f\"{i}: {item}\")\n",
        "    try:\n        data = json.loads(_CACHE.get(\"raw\", \"{}\"))\n    except ValueError as exc:\n        _LOG.warning(\"bad cache entry: %s\", exc)\n        return {\"success\": False, \"error\": str(exc)}\n",
        "    values = [x * 2 for x in range(_MAX_RESULTS) if x % 3 == 0]\n    found.extend(str(v) for v in values[:10])\n",
        "    root = Path(os.environ.get(\"WORKSPACE\", \".\")).resolve()\n    if not root.exists():\n        return {\"success\": False, \"error\": f\"{root} does not exist\"}\n",
        "    names = sorted({m.group(0) for m in _PATTERN.finditer(json.dumps(_CACHE))})\n    found.extend(names)\n",
        "    total = sum(len(str(v)) for v in _CACHE.values())\n    if total > 1_000_000:\n        _CACHE.clear()\n",
        "    with open(os.devnull, \"w\", encoding=\"utf-8\") as sink:\n        sink.write(\"\\n\".join(found))\n",
        "    mapping = {key: value for key, value in _CACHE.items() if isinstance(value, (int, float))}\n    ranked = sorted(mapping.items(), key=lambda kv: (-kv[1], kv[0]))\n    found.extend(k for k, _ in ranked[:5])\n",
        "    deadline = time.monotonic() + _DEFAULT_TIMEOUT\n    while time.monotonic() < deadline and len(found) < 3:\n        found.append(\"retry\")\n",
        "    if len(found) > _MAX_RESULTS:\n        found = found[:_MAX_RESULTS]\n    elif not found:\n        _LOG.info(\"nothing found\")\n    else:\n        found.reverse()\n",
    ];
    for _ in 0..statements {
        out.push_str(BLOCKS[rng.below(BLOCKS.len())]);
    }
}
