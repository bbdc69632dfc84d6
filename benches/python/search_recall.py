"""Recall of `lcp search` against plain BM25 and FastMCP's BM25 search transform, on a
public catalog: the Berkeley Function Calling Leaderboard's v4 data (PyPI `bfcl-eval`).

Usage: search_recall.py LCP WORKDIR

Each distinct function of the single-turn categories becomes a Python tool file entry
(`tool_<name>`, the description as its docstring, each parameter typed and described
under `Args:`); each question (its last user turn) is a query, answered at k when one
of the functions of its ground truth is among the first k tools. Two catalogs are
measured: those functions alone, and with the functions of the categories that have no
ground truth here (`DISTRACTORS`: questions no tool answers, and Java and JavaScript
functions) added, which no question asks for. Prints one JSON line per catalog:
`{"catalog", "tools", "queries", "lcp", "bm25", "fastmcp"}`, each ranking as
`{"1", "5", "10"}` percentages. Run with a Python that has `fastmcp==4.2.3` installed.
"""

import collections
import json
import keyword
import math
import re
import subprocess
import sys
import zipfile
from pathlib import Path

BFCL = "bfcl-eval==2026.3.23"
CATEGORIES = [
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
]
DISTRACTORS = ["irrelevance", "live_irrelevance", "live_relevance", "simple_java", "simple_javascript"]
TOOLS_PER_FILE = 40
TYPES = {"integer": "int", "float": "float", "number": "float", "string": "str", "boolean": "bool",
         "array": "list", "tuple": "list", "dict": "dict", "object": "dict"}


def tool_name(name):
    return "tool_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def parameter_name(name):
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not name or name[0].isdigit() or keyword.iskeyword(name):
        name = "p_" + name
    return name


def one_line(text):
    return " ".join(str(text).split()).replace('"""', "'''").replace("\\", "/")


def load(workdir):
    """The functions and questions of `CATEGORIES`, and the functions of `DISTRACTORS`
    not among them."""
    wheels = sorted(workdir.glob("bfcl_eval-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(workdir), BFCL],
                       check=True)
        wheels = sorted(workdir.glob("bfcl_eval-*.whl"))
    wheel = zipfile.ZipFile(wheels[-1])
    functions, queries, distractors = {}, [], {}
    for category in CATEGORIES:
        questions = wheel.read(f"bfcl_eval/data/BFCL_v4_{category}.json").decode().splitlines()
        answers = wheel.read(f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json").decode().splitlines()
        gold_of = {entry["id"]: entry["ground_truth"] for entry in map(json.loads, answers)}
        for entry in map(json.loads, questions):
            for function in entry["function"]:
                functions.setdefault(tool_name(function["name"]), function)
            turns = [message for turn in entry["question"] for message in turn if message["role"] == "user"]
            gold = [tool_name(name) for call in gold_of[entry["id"]] for name in call]
            queries.append((one_line(turns[-1]["content"]), gold))
    for category in DISTRACTORS:
        for entry in map(json.loads, wheel.read(f"bfcl_eval/data/BFCL_v4_{category}.json").decode().splitlines()):
            for function in entry.get("function") or []:
                if tool_name(function["name"]) not in functions:
                    distractors.setdefault(tool_name(function["name"]), function)
    return functions, queries, distractors


def write_catalog(functions, folder):
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.py"):
        old.unlink()
    names = list(functions)
    for start in range(0, len(names), TOOLS_PER_FILE):
        chunk = []
        for name in names[start:start + TOOLS_PER_FILE]:
            function = functions[name]
            schema = function.get("parameters") or {}
            required = set(schema.get("required") or [])
            signature, documented, seen = [], [], set()
            properties = schema.get("properties") or {}
            for raw in sorted(properties, key=lambda p: p not in required):
                parameter = parameter_name(raw)
                if parameter in seen:
                    continue
                seen.add(parameter)
                info = properties[raw] if isinstance(properties[raw], dict) else {}
                python = TYPES.get(info.get("type"), "str")
                signature.append(f"{parameter}: {python}" if raw in required else f"{parameter}: {python} | None = None")
                documented.append(f"        {parameter}: {one_line(info.get('description', '')) or parameter}")
            description = one_line(function.get("description", "")) or name
            args = "\n\n    Args:\n" + "\n".join(documented) if documented else ""
            chunk.append(f'def {name}({", ".join(signature)}):\n    """{description}{args}\n    """\n    return None\n')
        (folder / f"lib{start // TOOLS_PER_FILE:03d}.py").write_text("\n\n".join(chunk))


def tokens(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def plain_bm25(functions, queries, k1=1.2, b=0.75):
    """Okapi BM25 over the lowercased words of name, description, parameter names and
    descriptions."""
    names = list(functions)
    docs = []
    for name in names:
        function = functions[name]
        parts = [name.replace("_", " "), function.get("description", "")]
        for parameter, info in ((function.get("parameters") or {}).get("properties") or {}).items():
            parts += [parameter, str(info.get("description", "")) if isinstance(info, dict) else ""]
        docs.append(collections.Counter(tokens(" ".join(parts))))
    lengths = [sum(doc.values()) for doc in docs]
    average = sum(lengths) / len(docs)
    frequency = collections.Counter(word for doc in docs for word in doc)
    answers = []
    for query, _ in queries:
        scores = collections.defaultdict(float)
        for word in set(tokens(query)):
            if word not in frequency:
                continue
            idf = math.log(1 + (len(docs) - frequency[word] + 0.5) / (frequency[word] + 0.5))
            for i, doc in enumerate(docs):
                if word in doc:
                    tf = doc[word]
                    scores[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / average))
        ranked = sorted(scores.items(), key=lambda item: (-item[1], names[item[0]]))[:10]
        answers.append([names[i] for i, _ in ranked])
    return answers


def fastmcp_bm25(functions, queries):
    """FastMCP's `BM25SearchTransform` index over the text it extracts from each tool."""
    from fastmcp.server.transforms.search.base import _extract_searchable_text
    from fastmcp.server.transforms.search.bm25 import _BM25Index
    from fastmcp.tools.base import Tool

    names = list(functions)
    tools = []
    for name in names:
        function = functions[name]
        schema = dict(function.get("parameters") or {})
        schema["type"] = "object"
        tools.append(Tool(name=name, description=function.get("description", ""), parameters=schema))
    index = _BM25Index()
    index.build([_extract_searchable_text(tool) for tool in tools])
    return [[names[i] for i in index.query(query, 10)] for query, _ in queries]


def recall(answers, queries):
    found = {1: 0, 5: 0, 10: 0}
    for answer, (_, gold) in zip(answers, queries):
        for k in found:
            if any(name in answer[:k] for name in gold):
                found[k] += 1
    return {str(k): round(100 * n / len(queries), 1) for k, n in found.items()}


def measure(lcp, workdir, name, functions, queries):
    """The three rankings' recall on the catalog of `functions`, as one JSON line."""
    catalog = workdir / name
    write_catalog(functions, catalog)
    asked = workdir / "queries.txt"
    asked.write_text("".join(query + "\n" for query, _ in queries))
    searched = subprocess.run([lcp, "search", "--queries", str(asked), "--limit", "10", str(catalog)],
                              capture_output=True, text=True, check=True)
    lines = searched.stdout.splitlines()
    assert len(lines) == len(queries), (len(lines), len(queries), searched.stderr[-2000:])
    answers = [[tool["name"] for tool in json.loads(line)["tools"]] for line in lines]
    print(json.dumps({
        "catalog": name,
        "tools": len(functions),
        "queries": len(queries),
        "lcp": recall(answers, queries),
        "bm25": recall(plain_bm25(functions, queries), queries),
        "fastmcp": recall(fastmcp_bm25(functions, queries), queries),
    }))


def main():
    lcp, workdir = sys.argv[1], Path(sys.argv[2])
    workdir.mkdir(parents=True, exist_ok=True)
    functions, queries, distractors = load(workdir)
    measure(lcp, workdir, "catalog", functions, queries)
    measure(lcp, workdir, "with-distractors", {**functions, **distractors}, queries)


if __name__ == "__main__":
    main()
