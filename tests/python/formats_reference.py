"""pydantic's verdict on values for the types whose formats lcp checks in Rust.

Reads ``{"TypeName": [value, ...], ...}`` (JSON) on stdin; prints the same keys
with a list of booleans (accepted or not), each value validated as JSON with
``strict=True``, as the conformance test does. Type names are pydantic's or the
standard library's.
"""

import decimal
import ipaddress
import json
import sys

import pydantic

NAMES = {
    **{name: getattr(pydantic, name) for name in ("EmailStr", "NameEmail", "AnyUrl", "HttpUrl", "AnyHttpUrl",
                                                  "FileUrl", "IPvAnyAddress")},
    **{name: getattr(ipaddress, name) for name in ("IPv4Address", "IPv6Address", "IPv4Network", "IPv6Interface")},
    "Decimal": decimal.Decimal,
    "Json[list[int]]": pydantic.Json[list[int]],
}


def accepts(adapter, value):
    try:
        adapter.validate_json(json.dumps(value), strict=True)
        return True
    except pydantic.ValidationError:
        return False


def main():
    cases = json.load(sys.stdin)
    verdicts = {}
    for name, values in cases.items():
        adapter = pydantic.TypeAdapter(NAMES[name])
        verdicts[name] = [accepts(adapter, value) for value in values]
    json.dump(verdicts, sys.stdout)


if __name__ == "__main__":
    main()
