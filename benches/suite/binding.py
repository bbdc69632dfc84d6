"""Section 11's contender (benches/suite/binding.rs): constructs an LCPBinding on the
reference's 27 default libraries and asks for its chat tool specs, once, in a fresh
process; prints the seconds that took, then those of the constructor alone (imports
before the clock starts).

usage: python binding.py reference|lcp_tools FOLDER
"""

import sys
import time

which, folder = sys.argv[1], sys.argv[2]
if which == "reference":
    from lollms_client.tools_bindings.lcp import LCPBinding
else:
    from lcp_tools import LCPBinding

started = time.perf_counter()
binding = LCPBinding(tools_folders=folder)
constructed = time.perf_counter() - started
specs = binding.to_chat_tool_specs()
elapsed = time.perf_counter() - started
assert len(specs) > 60, len(specs)
if hasattr(binding, "close"):
    binding.close()
print(f"{elapsed:.6f} {constructed:.6f} {len(specs)}")
