#!/usr/bin/env bash
# The Python package's tier (SPEC §19): builds the abi3 wheel with maturin, installs it
# with `pip install --no-index` into a fresh venv (with lollms-client 1.21.1, whose
# LCPBinding the differential tests compare against, and pytest), and runs the
# package's tests from that install. Everything lives under target/python-package/.
# PYTHON: the CPython (>= 3.10) to build and test with [default: python3].
# --install-only: stop once the venv holds the package (the bench's section 11 uses it).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=target/python-package
python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || { echo "run.sh: $python is older than 3.10" >&2; exit 2; }
if [ ! -x "$root/tools/bin/maturin" ]; then
    "$python" -m venv "$root/tools"
    "$root/tools/bin/pip" install --quiet "maturin>=1.5,<2"
fi
rm -rf "$root/wheels"
start=$(date +%s)
"$root/tools/bin/maturin" build --release --interpreter "$python" --out "$root/wheels"
echo "run.sh: wheel built in $(( $(date +%s) - start )) s: $(ls "$root/wheels")"
rm -rf "$root/venv"
"$python" -m venv "$root/venv"
"$root/venv/bin/pip" install --quiet "lollms-client==1.21.1" pytest
"$root/venv/bin/pip" install --quiet --no-index --find-links "$root/wheels" lcp-tools
if [ "${1:-}" = "--install-only" ]; then
    exit 0
fi
venv_python="$PWD/$root/venv/bin/python"
cd python/tests
exec "$venv_python" -m pytest -q -p no:cacheprovider "$@"
