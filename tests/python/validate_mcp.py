"""Validates an `lcp export --format mcp` document (stdin) with the official MCP types.

Each tool must be a valid `mcp.types.Tool`, the whole document a valid
`ListToolsResult`, and every input schema a valid JSON Schema (Draft 2020-12).
Prints `mcp: N tools valid` and exits 0, or lists every problem and exits 1.
"""
import json
import sys

import jsonschema
from mcp import types


def main() -> int:
    document = json.load(sys.stdin)
    problems = []
    for tool in document.get("tools", []):
        try:
            types.Tool.model_validate(tool, strict=True)
            jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        except Exception as error:  # every kind of failure is a problem to list
            problems.append(f"{tool.get('name')}: {error}")
    try:
        types.ListToolsResult.model_validate(document)
    except Exception as error:
        problems.append(f"ListToolsResult: {error}")
    if not document.get("tools"):
        problems.append("no tools")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"mcp: {len(document['tools'])} tools valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
