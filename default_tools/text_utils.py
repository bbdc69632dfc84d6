"""text_utils: small, pure text helpers (statistics, diff, case conversion).

A *loose* single-file library: it sits directly in the tools folder instead of in a
``X/X.py`` folder. It is the simplest shape a library can take:

* no hooks (no ``init_tools_library`` / ``set_confirm_handler``): its tools never touch
  files, the network or the shell, so there is nothing to configure or confirm;
* pure functions of their arguments, so they are easy to test;
* ``Literal[...]`` parameters become JSON Schema ``enum``s and ``Optional[...]``
  parameters become nullable, so the model sees exactly which values are valid.
"""

import difflib
import re
import unicodedata
from collections import Counter
from typing import Any, Literal, Optional

TOOL_LIBRARY_NAME = "Text Utilities"
TOOL_LIBRARY_DESC = "Count words and sentences, compare two texts line by line, and convert text between naming cases."
TOOL_LIBRARY_ICON = "🔤"
# Declared effects (SPEC §12): pure functions of their arguments.
TOOL_POLICY = {"read_only": True, "idempotent": True, "open_world": False, "grade": {"w": 0, "d": 0}}

_MAX_DIFF_CHARS = 20_000
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def tool_text_statistics(text: str, top_words: int = 10, case_sensitive: bool = False) -> dict[str, Any]:
    """Counts the characters, words, lines, sentences and paragraphs of a text and
    returns them with the most frequent words and an estimated reading time. Use it when
    asked how long a text is or which words it uses most.

    Args:
        text (str): The text to analyse.
        top_words (int, optional): How many of the most frequent words to return
            (0 to 100). Defaults to 10.
        case_sensitive (bool, optional): Count "The" and "the" as different words.
            Defaults to False.

    Returns:
        dict: ``{"success": True, "output": {"characters", "characters_no_spaces",
        "words", "unique_words", "lines", "sentences", "paragraphs",
        "average_word_length", "reading_time_minutes", "top_words"}}`` where
        ``top_words`` is a list of ``[word, count]`` pairs, most frequent first.
    """
    words = _WORD.findall(text)
    keys = words if case_sensitive else [w.lower() for w in words]
    counts = Counter(keys)
    limit = max(0, min(100, int(top_words)))
    sentences = [s for s in re.split(r"(?<=[.!?…])\s+", text.strip()) if _WORD.search(s)]
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    return {
        "success": True,
        "output": {
            "characters": len(text),
            "characters_no_spaces": sum(1 for c in text if not c.isspace()),
            "words": len(words),
            "unique_words": len(counts),
            "lines": len(text.splitlines()),
            "sentences": len(sentences),
            "paragraphs": len(paragraphs),
            "average_word_length": round(sum(len(w) for w in words) / len(words), 2) if words else 0.0,
            "reading_time_minutes": round(len(words) / 200, 1),
            "top_words": [[word, count] for word, count in counts.most_common(limit)],
        },
    }


def _normalise_line(line: str, ignore_case: bool, ignore_whitespace: bool) -> str:
    if ignore_whitespace:
        line = " ".join(line.split())
    if ignore_case:
        line = line.casefold()
    return line


def _range(start: int, length: int) -> str:
    """Hunk range in unified-diff notation (1-based; an empty range names the line before)."""
    if length == 1:
        return f"{start + 1}"
    if length == 0:
        return f"{start},0"
    return f"{start + 1},{length}"


def tool_diff_texts(
    original: str,
    modified: str,
    style: Literal["unified", "ndiff", "summary"] = "unified",
    context_lines: int = 3,
    ignore_case: bool = False,
    ignore_whitespace: bool = False,
    original_label: Optional[str] = None,
    modified_label: Optional[str] = None,
) -> dict[str, Any]:
    """Compares two texts line by line and returns the differences as a diff, with the
    number of added and removed lines and a similarity ratio. Use it to show what
    changed between two versions of a text, code snippet or document.

    Args:
        original (str): The earlier version of the text.
        modified (str): The later version of the text.
        style (str, optional): Output format: "unified" (git-style hunks with
            context), "ndiff" (every line, prefixed with "  ", "- " or "+ ") or
            "summary" (counts only, no diff text). Defaults to "unified".
        context_lines (int, optional): Unchanged lines shown around each change in
            the unified style (0 to 20). Defaults to 3.
        ignore_case (bool, optional): Treat lines that differ only in letter case
            as equal. Defaults to False.
        ignore_whitespace (bool, optional): Treat lines that differ only in spaces
            and tabs as equal. Defaults to False.
        original_label (str, optional): Name shown for the original text in the
            unified header. Defaults to None ("original").
        modified_label (str, optional): Name shown for the modified text in the
            unified header. Defaults to None ("modified").

    Returns:
        dict: ``{"success": True, "output": {"identical", "similarity",
        "lines_added", "lines_removed", "diff", "truncated", "note"?}}``;
        ``similarity`` goes from 0.0 (nothing in common) to 1.0 (same lines) and
        ``diff`` is empty for the summary style or identical texts.
    """
    if style not in ("unified", "ndiff", "summary"):
        return {"success": False, "error": f"Unknown style {style!r}; use 'unified', 'ndiff' or 'summary'."}
    a = original.splitlines()
    b = modified.splitlines()
    matcher = difflib.SequenceMatcher(
        None,
        [_normalise_line(line, ignore_case, ignore_whitespace) for line in a],
        [_normalise_line(line, ignore_case, ignore_whitespace) for line in b],
        autojunk=False,
    )
    added = removed = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1

    lines: list[str] = []
    if style == "unified" and (added or removed):
        context = max(0, min(20, int(context_lines)))
        lines += [f"--- {original_label or 'original'}", f"+++ {modified_label or 'modified'}"]
        for group in matcher.get_grouped_opcodes(context):
            first, last = group[0], group[-1]
            lines.append(f"@@ -{_range(first[1], last[2] - first[1])} +{_range(first[3], last[4] - first[3])} @@")
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    lines += [" " + line for line in a[i1:i2]]
                    continue
                lines += ["-" + line for line in a[i1:i2]]
                lines += ["+" + line for line in b[j1:j2]]
    elif style == "ndiff":
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                lines += ["  " + line for line in a[i1:i2]]
            else:
                lines += ["- " + line for line in a[i1:i2]]
                lines += ["+ " + line for line in b[j1:j2]]

    diff = "\n".join(lines)
    output: dict[str, Any] = {
        "identical": not added and not removed,
        "similarity": round(matcher.ratio(), 3) if (a or b) else 1.0,
        "lines_added": added,
        "lines_removed": removed,
        "diff": diff[:_MAX_DIFF_CHARS],
        "truncated": len(diff) > _MAX_DIFF_CHARS,
    }
    if len(diff) > _MAX_DIFF_CHARS:
        output["note"] = f"The diff is {len(diff)} characters; only the first {_MAX_DIFF_CHARS} are shown."
    return {"success": True, "output": output}


def _split_words(text: str) -> list[str]:
    """Split identifiers and phrases into words: "parseHTTPResponse_v2" → parse, HTTP, Response, v2."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return re.findall(r"[^\W_]+", spaced)


def tool_change_case(
    text: str,
    style: Literal["lower", "upper", "title", "sentence", "snake", "kebab", "camel", "pascal", "constant", "slug"],
) -> dict[str, Any]:
    """Converts text to another letter case or naming convention (snake_case, camelCase,
    kebab-case, URL slug...) and returns the converted text. Use it to turn a phrase
    into an identifier or file name, or to normalise capitalisation.

    Args:
        text (str): The text or identifier to convert, e.g. "Monthly sales report"
            or "parseHTTPResponse".
        style (str): Target style: "lower", "upper", "title" (Each Word
            Capitalised), "sentence" (first letter of each sentence capitalised),
            "snake" (snake_case), "kebab" (kebab-case), "camel" (camelCase),
            "pascal" (PascalCase), "constant" (UPPER_SNAKE_CASE) or "slug"
            (lowercase ASCII words joined by hyphens, for URLs and file names).

    Returns:
        dict: ``{"success": True, "output": str}`` with the converted text, or
        ``{"success": False, "error": str}`` for an unknown style.
    """
    if style == "lower":
        result = text.lower()
    elif style == "upper":
        result = text.upper()
    elif style == "title":
        result = re.sub(r"\S+", lambda m: m.group(0)[:1].upper() + m.group(0)[1:].lower(), text)
    elif style == "sentence":
        lowered = text.lower()
        result = re.sub(r"(^\s*|[.!?…]\s+)(\w)", lambda m: m.group(1) + m.group(2).upper(), lowered)
    elif style in ("snake", "kebab", "constant"):
        words = [w.lower() for w in _split_words(text)]
        result = ("-" if style == "kebab" else "_").join(words)
        if style == "constant":
            result = result.upper()
    elif style in ("camel", "pascal"):
        words = _split_words(text)
        result = "".join(w[:1].upper() + w[1:].lower() for w in words)
        if style == "camel" and result:
            result = words[0].lower() + result[len(words[0]):]
    elif style == "slug":
        ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
        result = "-".join(w.lower() for w in _split_words(ascii_text))
    else:
        return {"success": False, "error": f"Unknown style {style!r}."}
    return {"success": True, "output": result}
