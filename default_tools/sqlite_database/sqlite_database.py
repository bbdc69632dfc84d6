"""sqlite_database: inspect, query and change SQLite databases stored in the workspace.

A folder library with a single file (``sqlite_database/sqlite_database.py``). It shows:

* read tools that cannot write: queries run on a connection opened with the
  ``file:...?mode=ro`` URI, so even a statement that slips past the keyword check is
  refused by SQLite itself;
* a write tool (``tool_execute_statement``) that asks the user first through the
  confirm handler, unless the autonomy level is ``"full_access"``;
* a module-level type alias (``SqlValue``) used in annotations, which the schema
  generator follows;
* the library's dynamic prompt ``tool_sqlite_database_prompt()`` (named after the
  file stem), listing the database files found in the workspace.

Database files are looked up in the current working directory (the workspace) and
can never be outside it. ``ATTACH`` and ``VACUUM INTO`` are refused because they
would open or create files anywhere on disk. Every statement runs with a time limit.
"""

import itertools
import math
import re
import sqlite3
import time
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Optional, Union

import lcp_files

TOOL_LIBRARY_NAME = "SQLite Database"
TOOL_LIBRARY_DESC = (
    "Query and inspect SQLite database files in the workspace (read-only), and run "
    "INSERT/UPDATE/DELETE/CREATE statements after the user confirms them."
)
TOOL_LIBRARY_ICON = "🗄️"
# Declared effects (SPEC §12): the read tools only read the workspace's databases;
# tool_execute_statement changes them.
TOOL_POLICY = {"read_only": True, "idempotent": True, "open_world": False, "grade": {"w": 1, "d": 0}}
TOOL_POLICIES = {
    "tool_execute_statement": {"read_only": False, "destructive": True, "idempotent": False, "grade": {"w": 1, "d": 3}},
}

# A value that can be bound to a "?" placeholder. Tools use this alias in their
# annotations; the schema generator resolves it to
# {"anyOf": [string, integer, number, boolean, null]}.
SqlValue = Union[str, int, float, bool, None]

AUTONOMY_LEVEL = "safe"  # "strict" | "safe" | "full_access", as the reference
_CONFIRM_HANDLER: Optional[Callable[..., Any]] = None
_ALWAYS_ALLOWED: set[str] = set()
_KNOWN_LEVELS = {"strict", "safe", "full_access"}

_DB_SUFFIXES = (".db", ".sqlite", ".sqlite3", ".db3")
_SQLITE_HEADER = b"SQLite format 3\x00"
_READ_ONLY_KEYWORDS = {"SELECT", "WITH", "PRAGMA", "EXPLAIN", "VALUES"}
_TRANSACTION_KEYWORDS = {"BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE", "VACUUM"}
_MAX_ROWS = 1000
_COUNT_CAP = 100_000
_TIME_LIMIT_SECONDS = 30.0
_MAX_CELL_CHARS = 2000
_MAX_BLOB_BYTES = 256
_MAX_TABLES = 500
# SQLite's own catalog table, under both its names (https://sqlite.org/schematab.html).
_SCHEMA_TABLES = ("sqlite_schema", "sqlite_master")
_SCHEMA_TABLE_SQL = "CREATE TABLE sqlite_schema(type text, name text, tbl_name text, rootpage integer, sql text)"
_BLOB_NOTE = (
    "BLOB values are shown as SQL hex literals X'…' (uppercase hex of the bytes, at most "
    f"{_MAX_BLOB_BYTES} bytes, longer ones end with their full size)."
)


# --------------------------------------------------------------------------- #
# Host hooks and confirmation                                                  #
# --------------------------------------------------------------------------- #


def init_tools_library(config: Optional[dict] = None) -> None:
    """Called once by the host when this module is first loaded.

    Args:
        config (dict, optional): Host configuration. Keys used: ``autonomy_level``
            (``"strict"``: every action asks, an "always" answer is not
            remembered; ``"safe"``, the default; ``"full_access"``: nothing asks) and ``confirm_handler``.
    """
    global AUTONOMY_LEVEL, _CONFIRM_HANDLER
    if not isinstance(config, dict):
        return
    level = str(config.get("autonomy_level", "safe") or "safe").strip().lower()
    AUTONOMY_LEVEL = level if level in _KNOWN_LEVELS else "safe"
    handler = config.get("confirm_handler")
    if handler is not None:
        _CONFIRM_HANDLER = handler


def set_confirm_handler(handler: Optional[Callable[..., Any]]) -> None:
    """Store the host's confirmation callback: ``handler(content, label) -> (decision, reason)``."""
    global _CONFIRM_HANDLER
    _CONFIRM_HANDLER = handler


def _normalise_decision(answer: Any) -> tuple[str, str]:
    reason = ""
    if isinstance(answer, (tuple, list)):
        decision = answer[0] if answer else None
        reason = str(answer[1]) if len(answer) > 1 and answer[1] is not None else ""
    elif isinstance(answer, dict):
        decision = answer.get("decision")
        reason = str(answer.get("reason") or "")
    else:
        decision = answer
    if decision is True:
        return "allow", reason
    if decision is False or decision is None:
        return "reject", reason
    text = str(decision).strip().lower()
    if text in {"allow", "always"}:
        return text, reason
    if text in {"reject", "deny"}:
        return "reject", reason
    return "reject", reason or f"unexpected decision {decision!r}"


def _confirm(kind: str, content: str, label: str) -> Optional[str]:
    """Return None when the action may run, else the error text to return."""
    if AUTONOMY_LEVEL == "full_access" or (AUTONOMY_LEVEL != "strict" and kind in _ALWAYS_ALLOWED):
        return None
    if _CONFIRM_HANDLER is None:
        return (
            f"{label} refused: it needs the user's confirmation, but no confirmation handler "
            f"is registered and the autonomy level is '{AUTONOMY_LEVEL}'. Ask the user to run "
            "it or to grant full access."
        )
    try:
        decision, reason = _normalise_decision(_CONFIRM_HANDLER(content, label))
    except Exception as exc:
        return f"{label} refused: the confirmation handler failed ({type(exc).__name__}: {exc})."
    if decision == "always":
        if AUTONOMY_LEVEL != "strict":
            _ALWAYS_ALLOWED.add(kind)
        return None
    if decision == "allow":
        return None
    return f"{label} rejected by user: {reason or 'no reason given'}"


# --------------------------------------------------------------------------- #
# Helpers                                                                      #
# --------------------------------------------------------------------------- #


class _DatabaseError(Exception):
    """An expected failure whose message is returned to the model."""


def _fail(message: str) -> dict[str, Any]:
    return {"success": False, "error": message}


def _workspace() -> Path:
    return Path.cwd().resolve()


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _database_files(limit: int = 50) -> list[str]:
    """Database files directly in the workspace or one folder below, sorted."""
    root = _workspace()
    found: list[str] = []
    for pattern in ("*", "*/*"):
        for candidate in sorted(root.glob(pattern)):
            hidden = any(part.startswith(".") for part in candidate.relative_to(root).parts)
            if candidate.suffix.lower() in _DB_SUFFIXES and not hidden and candidate.is_file():
                try:
                    if _inside(candidate.resolve(), root):
                        found.append(candidate.relative_to(root).as_posix())
                except OSError:
                    continue
            if len(found) >= limit:
                return found
    return found


def _resolve_database(database_name: str, *, create: bool = False) -> tuple[Path, bool]:
    """Find a database file in the workspace.

    Returns ``(path, exists)``. ``"shop"`` also finds ``shop.db``. With ``create``, a
    missing file is allowed (``.db`` is appended when the name has no suffix).
    """
    name = (database_name or "").strip()
    if not name:
        raise _DatabaseError("database_name is empty; give a file name such as 'data.db'.")
    if "\x00" in name:
        raise _DatabaseError("database_name contains a NUL character.")
    root = _workspace()

    def locate(text: str) -> Path:
        candidate = Path(text)
        if not candidate.is_absolute():
            candidate = root / candidate
        resolved = candidate.resolve()
        if not _inside(resolved, root):
            raise _DatabaseError(
                f"Access denied: '{database_name}' is outside the workspace; databases must be "
                "files inside the current workspace folder."
            )
        return resolved

    path = locate(name)
    if not path.exists() and not Path(name).suffix:
        with_suffix = locate(name + ".db")
        if with_suffix.exists() or create:
            path = with_suffix
    if path.exists():
        if not path.is_file():
            raise _DatabaseError(f"'{database_name}' is not a file.")
        with open(path, "rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
        if header and header != _SQLITE_HEADER:
            raise _DatabaseError(f"'{database_name}' is not a SQLite database file.")
        return path, True
    if create:
        return path, False
    available = _database_files()
    if available:
        hint = f" Databases in the workspace: {', '.join(available)}."
    else:
        hint = " The workspace has no .db/.sqlite files."
    raise _DatabaseError(f"Database '{database_name}' not found.{hint}")


def _display(path: Path) -> str:
    try:
        return path.relative_to(_workspace()).as_posix()
    except ValueError:
        return str(path)


# Pragmas that name files or folders outside the database, or load code.
_DENIED_PRAGMAS = {"temp_store_directory", "data_store_directory"}


def _deny_attach(action: int, name: Any = None, *_: Any) -> int:
    """SQLite authorizer: refuse ATTACH/DETACH (also used by VACUUM INTO) and the
    pragmas that point SQLite at other folders."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and isinstance(name, str) and name.lower() in _DENIED_PRAGMAS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _set_deadline(conn: sqlite3.Connection, seconds: float = _TIME_LIMIT_SECONDS) -> None:
    """Abort any statement still running after ``seconds`` ("interrupted" error)."""
    deadline = time.monotonic() + seconds
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)


def _open_read_only(database_name: str) -> tuple[Any, Optional[Path], Optional[dict[str, Any]]]:
    """Opens a workspace database for reading: ``(connection, path, None)``, or
    ``(None, None, failure)`` with the tool result that says why it cannot be opened."""
    try:
        path, _ = _resolve_database(database_name)
        return _connect_read_only(path), path, None
    except _DatabaseError as exc:
        return None, None, _fail(str(exc))
    except (sqlite3.Error, OSError) as exc:
        return None, None, _fail(f"Cannot open '{database_name}': {exc}")


class _Connection(sqlite3.Connection):
    """A connection to a database reached through the folder that holds it, opened
    beneath the workspace (``lcp_files``) and held open while the connection lives:
    SQLite names the file and its journals through ``/proc/self/fd/N``, so a folder
    swapped for a link later cannot move them elsewhere."""

    folder: Optional["lcp_files.Place"] = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.folder is not None:
                self.folder.close()
                self.folder = None


def _connect(path: Path, *, read_only: bool, timeout: float) -> sqlite3.Connection:
    """Connects to ``path`` (inside the workspace) through its folder's descriptor."""
    try:
        place = lcp_files.resolve(_display(path))
    except lcp_files.PathError as exc:
        raise _DatabaseError(str(exc)) from None
    if place.name is None:
        place.close()
        raise _DatabaseError(f"'{_display(path)}' is a folder, not a database file.")
    target = f"/proc/self/fd/{place.folder}/{place.name}"
    try:
        if read_only:
            uri = "file:" + urllib.parse.quote(target) + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=timeout, factory=_Connection)
        else:
            conn = sqlite3.connect(target, isolation_level=None, timeout=timeout, factory=_Connection)
    except BaseException:
        place.close()
        raise
    conn.folder = place
    conn.set_authorizer(_deny_attach)
    _set_deadline(conn)
    return conn


def _connect_read_only(path: Path) -> sqlite3.Connection:
    return _connect(path, read_only=True, timeout=5)


_LEADING_NOISE = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)


def _strip_leading_comments(sql: str) -> str:
    return sql[_LEADING_NOISE.match(sql).end():]


def _first_keyword(sql: str) -> str:
    match = re.match(r"[A-Za-z]+", _strip_leading_comments(sql))
    return match.group(0).upper() if match else ""


def _split_statements(sql: str) -> list[str]:
    """Split SQL text into complete statements (semicolons in strings and triggers are handled)."""
    statements: list[str] = []
    parts = sql.split(";")
    buffer = ""
    for index, part in enumerate(parts):
        buffer += part
        if index < len(parts) - 1:
            buffer += ";"
            if not sqlite3.complete_statement(buffer):
                continue
        if _strip_leading_comments(buffer).strip(" \t\r\n;"):
            statements.append(buffer.strip())
        buffer = ""
    return statements


def _json_value(value: Any) -> Any:
    """Make one SQLite value JSON-friendly (bytes → X'HEX', inf → string, long text cut)."""
    if isinstance(value, bytes):
        text = "X'" + value[:_MAX_BLOB_BYTES].hex().upper() + "'"
        if len(value) > _MAX_BLOB_BYTES:
            text += f" … ({len(value)} bytes)"
        return text
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, str) and len(value) > _MAX_CELL_CHARS:
        return value[:_MAX_CELL_CHARS] + f" … [{len(value)} characters]"
    return value


def _json_rows(rows: list[tuple]) -> tuple[list[list[Any]], bool]:
    """Convert rows; also tell whether a BLOB was seen."""
    has_blob = any(isinstance(v, bytes) for row in rows for v in row)
    return [[_json_value(v) for v in row] for row in rows], has_blob


def _quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_error(exc: Exception) -> str:
    text = str(exc)
    if "interrupted" in text:
        return f"SQL error: the statement took longer than {_TIME_LIMIT_SECONDS:.0f} seconds and was stopped."
    if "not authorized" in text:
        return "SQL error: ATTACH, DETACH, VACUUM INTO and the temp_store_directory and data_store_directory pragmas are not allowed (they reach files outside the workspace)."
    return f"SQL error: {text}"


# --------------------------------------------------------------------------- #
# Library prompt (never a tool)                                                #
# --------------------------------------------------------------------------- #


def tool_sqlite_database_prompt() -> str:
    """Library context for the model: the database files in the workspace and their tables."""
    try:
        files = _database_files(limit=20)
    except OSError as exc:
        return f"SQLite databases: the workspace could not be read ({exc})."
    if not files:
        return (
            "SQLite databases: none in the workspace yet. tool_execute_statement creates a "
            "database file when it runs a CREATE TABLE on a new name (after user confirmation)."
        )
    described = []
    for name in files:
        try:
            conn = _connect_read_only(_workspace() / name)
            try:
                tables = [r[0] for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table','view') "
                    "AND name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 21"
                )]
            finally:
                conn.close()
            shown = ", ".join(tables[:20]) + (", …" if len(tables) > 20 else "")
            described.append(f"{name} (tables: {shown or 'none'})")
        except (sqlite3.Error, _DatabaseError):
            described.append(f"{name} (unreadable)")
    return (
        "SQLite databases in the workspace: " + "; ".join(described) + ". "
        "Use tool_execute_query for reads; tool_execute_statement changes data after user confirmation."
    )


# --------------------------------------------------------------------------- #
# Tools                                                                        #
# --------------------------------------------------------------------------- #


def tool_execute_query(
    database_name: str,
    query: str,
    max_rows: int = 50,
    parameters: Optional[list[SqlValue]] = None,
) -> dict[str, Any]:
    """Runs one read-only SQL query (SELECT, WITH, PRAGMA, EXPLAIN or VALUES) on a
    SQLite database file in the workspace and returns the column names and the first
    rows. Use it to answer questions from the data; call tool_list_tables or
    tool_describe_table first if you do not know the schema. It can never modify the
    database.

    Args:
        database_name (str): Database file relative to the workspace, e.g.
            "shop.db" ("shop" also finds "shop.db").
        query (str): A single read-only SQL statement, e.g.
            "SELECT name, total FROM orders WHERE total > ? ORDER BY total DESC".
        max_rows (int, optional): Maximum number of rows returned (1 to 1000); the
            total row count is still reported. Defaults to 50.
        parameters (list, optional): Values bound to the "?" placeholders of the
            query, in order. Defaults to None (no placeholders).

    Returns:
        dict: On success ``{"success": True, "output": {"columns", "rows",
        "row_count", "total_rows", "truncated", "note"?}}`` with ``rows`` as lists
        of values in column order (BLOBs as X'HEX' strings); on failure
        ``{"success": False, "error": str}``.

    Examples:
        {"database_name": "shop.db", "query": "SELECT 6 * 7 AS answer", "$files": {"shop.db": ""}}
        {"database_name": "shop.db", "query": "VALUES (?, ?)", "parameters": ["a", 1], "$files": {"shop.db": ""}}
    """
    statements = _split_statements(query or "")
    if not statements:
        return _fail("query is empty; give one SELECT statement.")
    if len(statements) > 1:
        return _fail(f"query contains {len(statements)} statements; run one statement per call.")
    keyword = _first_keyword(statements[0])
    if keyword not in _READ_ONLY_KEYWORDS:
        return _fail(
            f"tool_execute_query only runs read-only statements ({', '.join(sorted(_READ_ONLY_KEYWORDS))}); "
            f"'{keyword or statements[0][:20]}' changes data, so use tool_execute_statement instead."
        )
    limit = max(1, min(_MAX_ROWS, int(max_rows)))
    conn, path, failure = _open_read_only(database_name)
    if failure is not None:
        return failure

    try:
        cursor = conn.execute(statements[0], list(parameters or []))
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = cursor.fetchmany(limit)
        more = 0
        count_known = True
        if len(rows) == limit:
            try:
                more = sum(1 for _ in itertools.islice(cursor, _COUNT_CAP))
                count_known = more < _COUNT_CAP
            except sqlite3.Error:
                count_known = False
    except sqlite3.Error as exc:
        return _fail(_sql_error(exc))
    finally:
        conn.close()

    json_rows, has_blob = _json_rows(rows)
    total = len(rows) + more
    output: dict[str, Any] = {
        "columns": columns,
        "rows": json_rows,
        "row_count": len(rows),
        "total_rows": total if count_known else None,
        "truncated": more > 0 or not count_known,
    }
    notes = []
    if more or not count_known:
        counted = f"{total}" if count_known else f"more than {total}"
        notes.append(
            f"Showing the first {len(rows)} of {counted} rows; add WHERE/LIMIT/aggregates or "
            f"raise max_rows (at most {_MAX_ROWS})."
        )
    if has_blob:
        notes.append(_BLOB_NOTE)
    if notes:
        output["note"] = " ".join(notes)
    return {"success": True, "output": output}


def tool_list_tables(database_name: str) -> dict[str, Any]:
    """Lists the tables and views of a SQLite database file in the workspace with their
    column names and row counts. Use it first to discover what a database contains.

    Args:
        database_name (str): Database file relative to the workspace, e.g. "shop.db".

    Returns:
        dict: On success ``{"success": True, "output": {"database", "tables"}}``
        where each table is ``{"name", "type": "table" | "view", "columns",
        "rows"}`` (``rows`` is null for views or when counting took too long);
        on failure ``{"success": False, "error": str}``.

    Examples:
        {"database_name": "shop.db", "$files": {"shop.db": ""}}
    """
    conn, path, failure = _open_read_only(database_name)
    if failure is not None:
        return failure
    try:
        objects = conn.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        tables = []
        for name, kind in objects[:_MAX_TABLES]:
            columns = [r[0] for r in conn.execute("SELECT name FROM pragma_table_info(?)", (name,))]
            rows: Optional[int] = None
            if kind == "table":
                try:
                    rows = conn.execute(f"SELECT COUNT(*) FROM {_quote_identifier(name)}").fetchone()[0]
                except sqlite3.Error:
                    rows = None
            tables.append({"name": name, "type": kind, "columns": columns, "rows": rows})
    except sqlite3.Error as exc:
        return _fail(_sql_error(exc))
    finally:
        conn.close()
    output: dict[str, Any] = {"database": _display(path), "tables": tables}
    if len(objects) > _MAX_TABLES:
        output["note"] = f"Showing {_MAX_TABLES} of {len(objects)} tables and views."
    elif not tables:
        output["note"] = "The database has no tables or views."
    return {"success": True, "output": output}


def tool_describe_table(database_name: str, table: str, sample_rows: int = 3) -> dict[str, Any]:
    """Describes one table or view of a SQLite database in the workspace: its columns
    (name, type, nullability, default, primary key), indexes, foreign keys, CREATE
    statement, row count and a few sample rows. Use it before writing a query or an
    INSERT so column names and types are right.

    Args:
        database_name (str): Database file relative to the workspace, e.g. "shop.db".
        table (str): Table or view name (case-insensitive), e.g. "orders";
            "sqlite_schema" describes the database's own catalog of tables.
        sample_rows (int, optional): Number of example rows to include (0 to 20).
            Defaults to 3.

    Returns:
        dict: On success ``{"success": True, "output": {"database", "name",
        "type", "columns", "indexes", "foreign_keys", "sql", "rows",
        "sample": {"columns", "rows"}}}``; on failure (unknown table, bad file)
        ``{"success": False, "error": str}``.

    Examples:
        {"database_name": "shop.db", "table": "sqlite_schema", "$files": {"shop.db": ""}}
    """
    conn, path, failure = _open_read_only(database_name)
    if failure is not None:
        return failure
    sample_limit = max(0, min(20, int(sample_rows)))
    try:
        found = conn.execute(
            "SELECT name, type, sql FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name = ? COLLATE NOCASE",
            (table,),
        ).fetchone()
        if found is None and table.strip().lower() in _SCHEMA_TABLES:
            # The catalog itself: queryable like any table, but not listed in itself.
            found = (table.strip().lower(), "table", _SCHEMA_TABLE_SQL)
        if found is None:
            names = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 100"
            )]
            return _fail(
                f"No table or view named '{table}' in '{database_name}'. "
                f"Available: {', '.join(names) if names else 'none'}."
            )
        name, kind, create_sql = found
        columns = [
            {
                "name": r[1],
                "type": r[2] or None,
                "not_null": bool(r[3]),
                "default": r[4],
                "primary_key": r[5],
                **({"hidden": r[6]} if r[6] else {}),
            }
            for r in conn.execute("SELECT * FROM pragma_table_xinfo(?)", (name,))
        ]
        indexes = []
        for _seq, index_name, unique, origin, partial in conn.execute(
            "SELECT seq, name, \"unique\", origin, partial FROM pragma_index_list(?)", (name,)
        ):
            index_columns = [
                r[0] for r in conn.execute("SELECT name FROM pragma_index_info(?) ORDER BY seqno", (index_name,))
            ]
            indexes.append({
                "name": index_name,
                "columns": index_columns,
                "unique": bool(unique),
                "origin": {"c": "CREATE INDEX", "u": "UNIQUE constraint", "pk": "PRIMARY KEY"}.get(origin, origin),
                "partial": bool(partial),
            })
        foreign_keys = [
            {"column": r[3], "references_table": r[2], "references_column": r[4], "on_update": r[5], "on_delete": r[6]}
            for r in conn.execute("SELECT * FROM pragma_foreign_key_list(?)", (name,))
        ]
        quoted = _quote_identifier(name)
        try:
            row_count: Optional[int] = conn.execute(f"SELECT COUNT(*) FROM {quoted}").fetchone()[0]
        except sqlite3.Error:
            row_count = None
        sample: dict[str, Any] = {"columns": [c["name"] for c in columns if not c.get("hidden")], "rows": []}
        if sample_limit:
            cursor = conn.execute(f"SELECT * FROM {quoted} LIMIT ?", (sample_limit,))
            sample["columns"] = [d[0] for d in cursor.description]
            sample["rows"], has_blob = _json_rows(cursor.fetchall())
            if has_blob:
                sample["note"] = _BLOB_NOTE
    except sqlite3.Error as exc:
        return _fail(_sql_error(exc))
    finally:
        conn.close()
    return {
        "success": True,
        "output": {
            "database": _display(path),
            "name": name,
            "type": kind,
            "columns": columns,
            "indexes": indexes,
            "foreign_keys": foreign_keys,
            "sql": create_sql,
            "rows": row_count,
            "sample": sample,
        },
    }


def tool_execute_statement(
    database_name: str,
    statement: str,
    parameters: Optional[list[SqlValue]] = None,
) -> dict[str, Any]:
    """Executes SQL that changes a SQLite database in the workspace (CREATE, INSERT,
    UPDATE, DELETE, ALTER, DROP...) after the user confirms it, and returns how many
    rows changed. Several statements separated by semicolons run in one transaction that
    is rolled back entirely if one fails. A missing database file is created. Use
    tool_execute_query for reads.

    Args:
        database_name (str): Database file relative to the workspace, e.g.
            "shop.db". A name without a suffix gets ".db" when the file is created.
        statement (str): The SQL to run: one statement with "?" placeholders, or
            several statements separated by semicolons (then without parameters).
        parameters (list, optional): Values bound to the "?" placeholders of a
            single statement, in order. Defaults to None.

    Returns:
        dict: On success ``{"success": True, "output": {"database",
        "statements_executed", "rows_changed", "last_insert_rowid",
        "created_database", "columns"?, "rows"?}}`` (``columns``/``rows`` come
        from a RETURNING clause); on failure or rejection by the user
        ``{"success": False, "error": str}``.

    Examples:
        {"database_name": "shop.db", "statement": "CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)"}
    """
    statements = _split_statements(statement or "")
    if not statements:
        return _fail("statement is empty; give the SQL to execute.")
    if parameters and len(statements) > 1:
        return _fail("parameters can only be used with a single statement; split the SQL into separate calls.")
    try:
        path, exists = _resolve_database(database_name, create=True)
    except _DatabaseError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"Cannot open '{database_name}': {exc}")

    rel = _display(path)
    shown = f"Database: {rel}" + ("" if exists else " (new file will be created)") + "\n\n" + statement.strip()
    if parameters:
        shown += f"\n\nParameters: {parameters!r}"
    refusal = _confirm("sql_write", shown, "Execute SQL statement")
    if refusal:
        return _fail(refusal)

    manages_transaction = any(_first_keyword(s) in _TRANSACTION_KEYWORDS for s in statements)
    try:
        conn = _connect(path, read_only=False, timeout=10)
    except _DatabaseError as exc:
        return _fail(str(exc))
    except sqlite3.Error as exc:
        return _fail(f"Cannot open '{database_name}': {exc}")
    current = 0
    try:
        before = conn.total_changes
        if not manages_transaction:
            conn.execute("BEGIN")
        columns: list[str] = []
        returned: list[tuple] = []
        last_rowid = None
        for current, sql in enumerate(statements, 1):
            cursor = conn.execute(sql, list(parameters or []))
            if cursor.description:
                columns = [d[0] for d in cursor.description]
                returned = cursor.fetchmany(_MAX_ROWS)
                for _ in cursor:  # finish the statement so every RETURNING row is applied
                    pass
            if cursor.lastrowid:
                last_rowid = cursor.lastrowid
        if conn.in_transaction and not manages_transaction:
            conn.execute("COMMIT")
        changed = conn.total_changes - before
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.rollback()
        where = f" (statement {current} of {len(statements)}; nothing was applied)" if len(statements) > 1 else ""
        conn.close()
        if not exists and path.exists() and path.stat().st_size == 0:
            path.unlink()  # do not leave an empty database behind
        return _fail(_sql_error(exc) + where)
    conn.close()

    output: dict[str, Any] = {
        "database": rel,
        "statements_executed": len(statements),
        "rows_changed": changed,
        "last_insert_rowid": last_rowid,
        "created_database": not exists,
    }
    if columns:
        json_rows, has_blob = _json_rows(returned)
        output["columns"] = columns
        output["rows"] = json_rows
        if has_blob:
            output["note"] = _BLOB_NOTE
    return {"success": True, "output": output}
