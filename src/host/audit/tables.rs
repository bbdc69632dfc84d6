//! What a call into the standard library or a common package can do: the tables
//! `lcp audit` looks a dotted name up in (SPEC §20).
//!
//! A name is looked up by its longest listed prefix on dot boundaries
//! (`os.path.exists` before `os`). A module whose root is listed as known and whose
//! name matches no entry is pure; a root lcp knows nothing of is `unknown`, never
//! pure.

use super::Capability::{self, Dynamic, Env, FsRead, FsWrite, Native, Network, Subprocess};

/// What a listed name does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Nothing a capability names.
    Pure,
    /// These capabilities.
    Can(&'static [Capability]),
    /// Writes that delete (or truncate) what was there: `fs_write`, and a
    /// deletion for the `destructive` drift.
    Deletes,
    /// A file opened with a mode: read when the mode is a literal read mode.
    OpenMode,
}

use Entry::{Can, Deletes, OpenMode, Pure};

const NET: Entry = Can(&[Network]);
const READ: Entry = Can(&[FsRead]);
const WRITE: Entry = Can(&[FsWrite]);
const PROC: Entry = Can(&[Subprocess]);
const NATIVE: Entry = Can(&[Native]);
const ENV: Entry = Can(&[Env]);
const DYN: Entry = Can(&[Dynamic]);

/// The dotted names with a capability (or a pure part of a module that has some).
const TABLE: &[(&str, Entry)] = &[
    // builtins
    ("builtins.open", OpenMode),
    ("builtins.eval", DYN),
    ("builtins.exec", DYN),
    ("builtins.compile", DYN),
    ("builtins.__import__", DYN),
    ("builtins.globals", DYN),
    ("builtins.locals", DYN),
    ("builtins.vars", DYN),
    ("builtins.breakpoint", DYN),
    // os
    ("os.environ", ENV),
    ("os.environb", ENV),
    ("os.getenv", ENV),
    ("os.getenvb", ENV),
    ("os.putenv", ENV),
    ("os.unsetenv", ENV),
    ("os.system", PROC),
    ("os.popen", PROC),
    ("os.fork", PROC),
    ("os.forkpty", PROC),
    ("os.kill", PROC),
    ("os.killpg", PROC),
    ("os.posix_spawn", PROC),
    ("os.posix_spawnp", PROC),
    ("os.execl", PROC),
    ("os.execle", PROC),
    ("os.execlp", PROC),
    ("os.execlpe", PROC),
    ("os.execv", PROC),
    ("os.execve", PROC),
    ("os.execvp", PROC),
    ("os.execvpe", PROC),
    ("os.spawnl", PROC),
    ("os.spawnle", PROC),
    ("os.spawnlp", PROC),
    ("os.spawnlpe", PROC),
    ("os.spawnv", PROC),
    ("os.spawnve", PROC),
    ("os.spawnvp", PROC),
    ("os.spawnvpe", PROC),
    ("os.pidfd_open", PROC),
    ("os.startfile", PROC),
    ("os.listdir", READ),
    ("os.scandir", READ),
    ("os.walk", READ),
    ("os.fwalk", READ),
    ("os.stat", READ),
    ("os.lstat", READ),
    ("os.access", READ),
    ("os.readlink", READ),
    ("os.path.exists", READ),
    ("os.path.lexists", READ),
    ("os.path.isfile", READ),
    ("os.path.isdir", READ),
    ("os.path.islink", READ),
    ("os.path.ismount", READ),
    ("os.path.getsize", READ),
    ("os.path.getmtime", READ),
    ("os.path.getatime", READ),
    ("os.path.getctime", READ),
    ("os.path.realpath", READ),
    ("os.path.samefile", READ),
    ("os.path.expanduser", ENV),
    ("os.path.expandvars", ENV),
    ("os.open", OpenMode),
    ("os.fdopen", OpenMode),
    ("os.remove", Deletes),
    ("os.unlink", Deletes),
    ("os.rmdir", Deletes),
    ("os.removedirs", Deletes),
    ("os.truncate", Deletes),
    ("os.ftruncate", Deletes),
    ("os.rename", WRITE),
    ("os.renames", WRITE),
    ("os.replace", WRITE),
    ("os.mkdir", WRITE),
    ("os.makedirs", WRITE),
    ("os.mkfifo", WRITE),
    ("os.mknod", WRITE),
    ("os.chmod", WRITE),
    ("os.lchmod", WRITE),
    ("os.fchmod", WRITE),
    ("os.chown", WRITE),
    ("os.lchown", WRITE),
    ("os.fchown", WRITE),
    ("os.utime", WRITE),
    ("os.link", WRITE),
    ("os.symlink", WRITE),
    ("os.setxattr", WRITE),
    ("os.removexattr", WRITE),
    ("os.write", WRITE),
    ("os.pwrite", WRITE),
    ("os.writev", WRITE),
    ("os.sendfile", WRITE),
    ("os.copy_file_range", WRITE),
    ("os.memfd_create", WRITE),
    ("os.chdir", READ),
    ("os.chroot", WRITE),
    ("io.open", OpenMode),
    ("io.FileIO", OpenMode),
    ("io.open_code", READ),
    ("codecs.open", OpenMode),
    ("gzip.open", OpenMode),
    ("gzip.GzipFile", OpenMode),
    ("bz2.open", OpenMode),
    ("bz2.BZ2File", OpenMode),
    ("lzma.open", OpenMode),
    ("lzma.LZMAFile", OpenMode),
    ("zipfile.ZipFile", OpenMode),
    ("zipfile.PyZipFile", OpenMode),
    ("zipfile.is_zipfile", READ),
    ("zipfile.Path", READ),
    ("tarfile.open", OpenMode),
    ("tarfile.TarFile", OpenMode),
    ("tarfile.is_tarfile", READ),
    ("shutil.which", READ),
    ("shutil.disk_usage", READ),
    ("shutil.copyfileobj", Pure),
    ("shutil.get_terminal_size", Pure),
    ("shutil.rmtree", Deletes),
    ("shutil.move", Deletes),
    ("shutil", WRITE),
    ("pathlib", Pure),
    ("tempfile.gettempdir", Pure),
    ("tempfile.gettempdirb", Pure),
    ("tempfile.gettempprefix", Pure),
    ("tempfile", WRITE),
    ("glob", READ),
    ("filecmp", READ),
    ("fileinput", READ),
    ("linecache", READ),
    ("mimetypes.read_mime_types", READ),
    ("mimetypes.init", READ),
    ("pkgutil", READ),
    ("importlib.import_module", DYN),
    ("importlib.reload", DYN),
    ("importlib.util", DYN),
    ("importlib.machinery", DYN),
    ("importlib.resources", READ),
    ("importlib.metadata", READ),
    ("runpy", DYN),
    ("code", DYN),
    ("codeop", DYN),
    ("pickle.load", DYN),
    ("pickle.loads", DYN),
    ("pickle.Unpickler", DYN),
    ("_pickle.load", DYN),
    ("_pickle.loads", DYN),
    ("marshal.load", DYN),
    ("marshal.loads", DYN),
    ("shelve", Can(&[FsWrite, Dynamic])),
    ("dbm", WRITE),
    ("sqlite3.connect", WRITE),
    ("logging.FileHandler", WRITE),
    ("logging.handlers", Can(&[FsWrite, Network])),
    ("logging.config", Can(&[FsRead, Dynamic])),
    // processes
    ("subprocess", PROC),
    ("pty", PROC),
    ("multiprocessing", PROC),
    ("concurrent.futures.ProcessPoolExecutor", PROC),
    ("asyncio.create_subprocess_exec", PROC),
    ("asyncio.create_subprocess_shell", PROC),
    ("asyncio.subprocess", PROC),
    ("webbrowser", PROC),
    ("platform.popen", PROC),
    // network
    ("socket", NET),
    ("ssl.wrap_socket", NET),
    ("ssl.SSLContext.wrap_socket", NET),
    ("ssl.get_server_certificate", NET),
    ("asyncio.open_connection", NET),
    ("asyncio.start_server", NET),
    ("asyncio.open_unix_connection", NET),
    ("asyncio.start_unix_server", NET),
    ("urllib.request", NET),
    ("urllib.robotparser", NET),
    ("http.client", NET),
    ("http.server", NET),
    ("http.cookiejar", Pure),
    ("socketserver", NET),
    ("smtplib", NET),
    ("ftplib", NET),
    ("poplib", NET),
    ("imaplib", NET),
    ("nntplib", NET),
    ("telnetlib", NET),
    ("xmlrpc.client", NET),
    ("xmlrpc.server", NET),
    ("wsgiref.simple_server", NET),
    // native code
    ("ctypes", NATIVE),
    ("_ctypes", NATIVE),
    ("mmap", NATIVE),
    ("cffi", NATIVE),
    // third-party: network
    ("requests.exceptions", Pure),
    ("requests.RequestException", Pure),
    ("requests.HTTPError", Pure),
    ("requests.ConnectionError", Pure),
    ("requests.Timeout", Pure),
    ("requests", NET),
    ("httpx", NET),
    ("aiohttp", NET),
    ("urllib3", NET),
    ("websockets", NET),
    ("websocket", NET),
    ("boto3", NET),
    ("botocore", NET),
    ("aiobotocore", NET),
    ("google.cloud", NET),
    ("googleapiclient", NET),
    ("azure", NET),
    ("openai", NET),
    ("anthropic", NET),
    ("grpc", NET),
    ("redis", NET),
    ("pymongo", NET),
    ("psycopg", NET),
    ("psycopg2", NET),
    ("pymysql", NET),
    ("mysql", NET),
    ("paramiko", NET),
    ("dns", NET),
    ("sqlalchemy.create_engine", Can(&[Network, FsWrite])),
    ("duckdb.connect", WRITE),
    // third-party: files and the rest
    ("pandas.read_sql", NET),
    ("pandas.read_sql_query", NET),
    ("pandas.read_sql_table", NET),
    ("pandas.read_clipboard", Pure),
    ("pandas.read_", READ),
    ("pandas.ExcelWriter", WRITE),
    ("pandas.HDFStore", WRITE),
    ("pandas", Pure),
    ("numpy.load", READ),
    ("numpy.loadtxt", READ),
    ("numpy.genfromtxt", READ),
    ("numpy.fromfile", READ),
    ("numpy.memmap", NATIVE),
    ("numpy.save", WRITE),
    ("numpy.savez", WRITE),
    ("numpy.savez_compressed", WRITE),
    ("numpy.savetxt", WRITE),
    ("numpy.ctypeslib", NATIVE),
    ("numpy", Pure),
    ("dotenv", Can(&[Env, FsRead])),
    ("yaml.load", DYN),
    ("yaml.load_all", DYN),
    ("yaml.unsafe_load", DYN),
    ("yaml.unsafe_load_all", DYN),
    ("yaml.full_load", DYN),
    ("yaml.full_load_all", DYN),
    ("yaml", Pure),
    ("dill.load", DYN),
    ("dill.loads", DYN),
    ("joblib.load", DYN),
    ("joblib.dump", WRITE),
    ("cloudpickle.load", DYN),
    ("cloudpickle.loads", DYN),
    ("git", PROC),
    ("sh", PROC),
    ("plumbum", PROC),
    ("pexpect", PROC),
    ("pydantic", Pure),
    ("typing_extensions", Pure),
    ("attr", Pure),
    ("attrs", Pure),
    ("dateutil", Pure),
    ("pytz", Pure),
    ("bs4", Pure),
    ("regex", Pure),
    // lcp's own module for tools (SPEC §17)
    ("lcp_files.write_atomically", WRITE),
    ("lcp_files.resolve", READ),
    ("lcp_files.open_file", READ),
    ("lcp_files.open_folder", READ),
    ("lcp_files.open_in", READ),
    ("lcp_files.status", READ),
    ("lcp_files", Pure),
];

/// Modules lcp knows whose names not in [`TABLE`] are pure: the standard library's
/// (those with a capability keep it through the table) and the third-party roots the
/// table lists.
const KNOWN_ROOTS: &[&str] = &[
    "__future__",
    "abc",
    "argparse",
    "array",
    "ast",
    "asyncio",
    "atexit",
    "base64",
    "binascii",
    "bisect",
    "builtins",
    "bz2",
    "calendar",
    "cmath",
    "codecs",
    "collections",
    "colorsys",
    "concurrent",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email",
    "enum",
    "errno",
    "fnmatch",
    "fractions",
    "functools",
    "gc",
    "getpass",
    "gettext",
    "graphlib",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "locale",
    "logging",
    "lzma",
    "math",
    "mimetypes",
    "numbers",
    "operator",
    "os",
    "pathlib",
    "platform",
    "pprint",
    "queue",
    "quopri",
    "random",
    "re",
    "reprlib",
    "sched",
    "secrets",
    "select",
    "selectors",
    "signal",
    "shlex",
    "shutil",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "sys",
    "sysconfig",
    "tarfile",
    "textwrap",
    "threading",
    "time",
    "timeit",
    "token",
    "tokenize",
    "traceback",
    "types",
    "typing",
    "unicodedata",
    "urllib",
    "uuid",
    "warnings",
    "weakref",
    "xml",
    "zipfile",
    "zlib",
    "zoneinfo",
    "ssl",
    "importlib",
    "pickle",
    "marshal",
    "wsgiref",
    "sqlite3",
    "tomllib",
    "pydoc",
    "hashlib",
    "encodings",
    "unittest",
    "doctest",
    "getopt",
    "optparse",
    "html",
    "string",
    "cgi",
    "mailbox",
    "wave",
    "chunk",
    "audioop",
    "imghdr",
    "sndhdr",
    "tty",
    "termios",
    "curses",
    "readline",
    "rlcompleter",
    "faulthandler",
    "tracemalloc",
    "resource",
    "grp",
    "pwd",
    "crypt",
    "posixpath",
    "ntpath",
    "genericpath",
    "_thread",
    "numbers",
];

/// What `dotted` (a name as the module that defines it spells it: `os.path.exists`,
/// `requests.get`) does: the entry of its longest listed prefix; `Pure` for another
/// name of a known module; `None` for a module lcp has no table for.
pub(crate) fn lookup(dotted: &str) -> Option<Entry> {
    let root = dotted.split('.').next().unwrap_or(dotted);
    let mut best: Option<(usize, Entry)> = None;
    for &(name, entry) in by_root().get(root).map_or(&[][..], Vec::as_slice) {
        let matches = if let Some(prefix) = name.strip_suffix('_') {
            // `pandas.read_`: every `pandas.read_*`.
            dotted.starts_with(prefix) && dotted.len() > name.len() - 1 && dotted[prefix.len()..].starts_with('_')
        } else {
            dotted == name || (dotted.starts_with(name) && dotted.as_bytes().get(name.len()) == Some(&b'.'))
        };
        if matches && best.is_none_or(|(len, _)| name.len() > len) {
            best = Some((name.len(), entry));
        }
    }
    if let Some((_, entry)) = best {
        return Some(entry);
    }
    KNOWN_ROOTS.contains(&root).then_some(Pure)
}

/// [`TABLE`]'s entries by the module their name starts with (`os` for
/// `os.path.exists`), made once: a name is only ever compared with its module's.
fn by_root() -> &'static crate::discovery::registry::FastMap<&'static str, Vec<(&'static str, Entry)>> {
    static BY_ROOT: std::sync::OnceLock<crate::discovery::registry::FastMap<&str, Vec<(&str, Entry)>>> =
        std::sync::OnceLock::new();
    BY_ROOT.get_or_init(|| {
        let mut by_root: crate::discovery::registry::FastMap<&str, Vec<(&str, Entry)>> = Default::default();
        for &(name, entry) in TABLE {
            let root = name.split('.').next().unwrap_or(name);
            by_root.entry(root).or_default().push((name, entry));
        }
        by_root
    })
}

/// What a method of this name does on a receiver whose type is not known, for the
/// names only one kind of object has (`Path.write_text`, `DataFrame.to_csv`); `None`
/// for the others, which are not guessed at.
pub(crate) fn method(name: &str) -> Option<Entry> {
    Some(match name {
        "write_text" | "write_bytes" | "touch" | "mkdir" | "symlink_to" | "hardlink_to" | "link_to" | "lchmod"
        | "extractall" | "to_csv" | "to_parquet" | "to_excel" | "to_pickle" | "to_feather" | "to_hdf" | "to_stata"
        | "to_orc" | "savefig" => WRITE,
        "unlink" | "rmdir" => Deletes,
        "read_text" | "read_bytes" | "iterdir" | "rglob" | "is_file" | "is_dir" | "is_symlink" | "samefile"
        | "expanduser" => READ,
        "urlopen" => NET,
        _ => return None,
    })
}

/// What a method of a `pathlib.Path` does (the receiver known to be a path).
pub(crate) fn path_method(name: &str) -> Option<Entry> {
    Some(match name {
        "write_text" | "write_bytes" | "touch" | "mkdir" | "symlink_to" | "hardlink_to" | "chmod" | "lchmod"
        | "rename" | "replace" => WRITE,
        "unlink" | "rmdir" => Deletes,
        "read_text" | "read_bytes" | "iterdir" | "glob" | "rglob" | "walk" | "exists" | "is_file" | "is_dir"
        | "is_symlink" | "is_mount" | "stat" | "lstat" | "resolve" | "samefile" | "owner" | "group" | "readlink"
        | "absolute" => READ,
        "expanduser" | "home" => ENV,
        "open" => OpenMode,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_listed_prefix_decides() {
        assert_eq!(lookup("os.path.exists"), Some(READ));
        assert_eq!(lookup("os.path.join"), Some(Pure));
        assert_eq!(lookup("shutil.rmtree"), Some(Deletes));
        assert_eq!(lookup("shutil.copytree"), Some(WRITE));
        assert_eq!(lookup("requests.get"), Some(NET));
        assert_eq!(lookup("requests.exceptions.HTTPError"), Some(Pure));
        assert_eq!(lookup("pandas.read_csv"), Some(READ));
        assert_eq!(lookup("pandas.DataFrame"), Some(Pure));
        assert_eq!(lookup("subprocessx.run"), None);
        assert_eq!(lookup("git.Repo"), Some(PROC), "GitPython runs git");
    }

    #[test]
    fn a_package_without_a_table_is_not_taken_as_pure() {
        assert_eq!(lookup("yamlish.load"), None);
        assert_eq!(lookup("somevendor.client.fetch"), None);
        assert_eq!(lookup("json.loads"), Some(Pure));
    }
}
